"""The embedded model's process: llama.cpp's OpenAI-compatible server through `xllamacpp`.

Started by `milk_lsp.local_model.embedded.EmbeddedServer` as a child of milk-lsp, never by hand::

    python -m milk_lsp.local_model.serve MODEL.gguf --alias NAME --threads N --ctx N --n-predict N
        [--slot-dir DIR]

Binds 127.0.0.1 on a port the OS chooses, uses the GGUF's own chat template with tool
calling on (`use_jinja`, llama-server's ``--jinja``), then prints exactly one line
``READY http://127.0.0.1:PORT <load seconds>`` on stdout. A load failure prints
``FAILED <why>`` and exits 1. It serves until it is killed or its standard input closes:
milk-lsp holds the pipe, so this process never outlives it (the parent-death signal and the
run token of `milk_lsp.system.orphans` cover the cases a pipe does not).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, NoReturn


def _say(line: str) -> None:
    """One line to milk-lsp, which reads stdout line by line."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def params_for(
    model: str, alias: str, *, threads: int, ctx: int, n_predict: int, slot_dir: str = ""
) -> Any:
    """xllamacpp's server parameters: 127.0.0.1 on an OS-chosen port, one slot, the GGUF's
    own chat template with tool calling on, slots saved to and restored from `slot_dir`
    (`prompt_cache`). Raises `ImportError` without xllamacpp."""
    import xllamacpp  # type: ignore[import-untyped,import-not-found,unused-ignore]

    params = xllamacpp.CommonParams()
    params.model.path = model
    params.model_alias = {alias}
    params.hostnames = ["127.0.0.1"]
    params.port = 0
    params.n_ctx = ctx
    params.n_parallel = 1
    params.n_predict = n_predict
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.use_jinja = True
    params.ui = False
    if slot_dir:  # llama.cpp joins it to a file name as it is: the separator is ours
        params.slot_save_path = str(Path(slot_dir)) + os.sep
    return params


def serve(params: Any) -> NoReturn:
    """Load the model, print `READY <url> <seconds>` (or `FAILED <why>` and exit 1), then
    serve until killed or until standard input closes."""
    import xllamacpp  # type: ignore[import-untyped,import-not-found,unused-ignore]

    def exit_when_orphaned() -> None:
        sys.stdin.buffer.read()  # EOF: the parent closed the pipe or died
        os._exit(0)

    threading.Thread(target=exit_when_orphaned, daemon=True).start()
    started = time.monotonic()
    try:
        server = xllamacpp.Server(params)  # returns once the model is loaded and bound
    except Exception as exc:
        _say(f"FAILED {exc}")
        sys.exit(1)
    _say(f"READY {server.listening_address} {time.monotonic() - started:.2f}")
    while True:
        time.sleep(3600)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m milk_lsp.local_model.serve")
    parser.add_argument("model")
    parser.add_argument("--alias", required=True)
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--ctx", type=int, required=True)
    parser.add_argument("--n-predict", type=int, required=True, help="reply cap (tokens)")
    parser.add_argument("--slot-dir", default="", help="where slots are saved and restored")
    args = parser.parse_args()
    try:
        params = params_for(
            args.model,
            args.alias,
            threads=args.threads,
            ctx=args.ctx,
            n_predict=args.n_predict,
            slot_dir=args.slot_dir,
        )
    except ImportError as exc:
        _say(f"FAILED xllamacpp cannot be imported: {exc}")
        sys.exit(1)
    serve(params)


if __name__ == "__main__":
    main()
