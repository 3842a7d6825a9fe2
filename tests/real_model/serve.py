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
from pathlib import Path

from milk_lsp.local_model.serve import params_for, serve


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("model", type=Path)
    parser.add_argument("--alias", required=True)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--ctx", type=int, default=8192)
    parser.add_argument("--n-predict", type=int, default=256, help="server-side reply cap")
    parser.add_argument("--chat-template-file", type=Path)
    parser.add_argument(
        "--slots", type=int, default=1, help="slots, each with --ctx tokens and its own cache"
    )
    args = parser.parse_args()

    # the product's own serving code, plus what the tests pin: greedy, seeded sampling and
    # an optional template override (the Qwen [tool_call] fix)
    params = params_for(
        str(args.model), args.alias, threads=args.threads, ctx=args.ctx, n_predict=args.n_predict
    )
    params.n_parallel = args.slots
    params.n_ctx = args.ctx * args.slots  # llama.cpp splits n_ctx between the slots
    params.sampling.temp = 0.0
    params.sampling.top_k = 1
    params.sampling.seed = 1
    if args.chat_template_file is not None:
        params.chat_template = args.chat_template_file.read_text(encoding="utf-8")
    serve(params)


if __name__ == "__main__":
    main()
