"""Serve a GGUF with xllamacpp (llama.cpp's OpenAI-compatible server) on 127.0.0.1.

Run as a subprocess by the `real_model` fixtures::

    python tests/real_model/serve.py MODEL.gguf --alias NAME [--threads 2] [--ctx 8192]
        [--n-predict 256] [--chat-template-file FILE]

Binds a free port (port 0, chosen by the OS), prints exactly one line
``READY http://127.0.0.1:PORT <load seconds>`` on stdout, then serves until it is killed or
its standard input closes (so it never outlives the test run that started it).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("model", type=Path)
    parser.add_argument("--alias", required=True)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--ctx", type=int, default=8192)
    parser.add_argument("--n-predict", type=int, default=256, help="server-side reply cap")
    parser.add_argument("--chat-template-file", type=Path)
    args = parser.parse_args()

    import xllamacpp  # the pinned engine, installed by tests/real_model/fetch.py

    params = xllamacpp.CommonParams()
    params.model.path = str(args.model)
    params.model_alias = {args.alias}
    params.hostnames = ["127.0.0.1"]
    params.port = 0
    params.n_ctx = args.ctx
    params.n_parallel = 1
    params.n_predict = args.n_predict
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.sampling.temp = 0.0
    params.sampling.top_k = 1
    params.sampling.seed = 1
    params.use_jinja = True
    params.ui = False
    if args.chat_template_file is not None:
        params.chat_template = args.chat_template_file.read_text(encoding="utf-8")

    started = time.monotonic()
    server = xllamacpp.Server(params)  # returns once the model is loaded and the port bound
    print(f"READY {server.listening_address} {time.monotonic() - started:.2f}", flush=True)

    def exit_when_orphaned() -> None:
        sys.stdin.buffer.read()  # EOF: the parent closed the pipe or died
        os._exit(0)

    threading.Thread(target=exit_when_orphaned, daemon=True).start()
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
