"""Runs a command and hands its output on in batches, as a busy editor reads a pipe.

    python batched_pipe.py SECONDS COMMAND [ARG...]

Standard input goes to the command as it comes. The command's standard output is collected and
written out in one piece every SECONDS, so messages the server wrote close together reach the
client in one read. Emacs 28's jsonrpc.el stops at the answer to its synchronous request
within such a read and leaves the rest unread until more output arrives: the test of milk's
`$/milk/nudge` (test_eglot.el run with MILK_TEST_BATCHED set).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time


def pump_input(child: subprocess.Popen[bytes]) -> None:
    assert child.stdin is not None
    while chunk := os.read(0, 65536):
        child.stdin.write(chunk)
        child.stdin.flush()
    child.stdin.close()


def main() -> int:
    period = float(sys.argv[1])
    child = subprocess.Popen(sys.argv[2:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdout is not None
    threading.Thread(target=pump_input, args=(child,), daemon=True).start()
    held = bytearray()
    lock = threading.Lock()
    done = threading.Event()

    def collect() -> None:
        assert child.stdout is not None
        while chunk := os.read(child.stdout.fileno(), 65536):
            with lock:
                held.extend(chunk)
        done.set()

    threading.Thread(target=collect, daemon=True).start()
    while True:
        finished = done.wait(period)
        with lock:
            batch, held[:] = bytes(held), b""
        if batch:
            sys.stdout.buffer.write(batch)
            sys.stdout.buffer.flush()
        if finished:
            return child.wait()


if __name__ == "__main__":
    sys.exit(main())
