"""A local turn through milk-lsp against the same request sent straight to the model server.

Starts the scripted OpenAI-compatible server (`tests.fakes.openai_server`, its own process on
127.0.0.1) paced like a small real model: each reply is 60 content chunks, every event
delayed by the same 10-20 ms (drawn per pair of runs). Then:

* milk-lsp: the real server (`python -m milk_lsp` over stdio, driven by pygls'
  `LanguageClient` as an editor would, with `milk/update` notifications and work-done
  progress), one session, `milk/chat` with `route: "local"` timed from sending the request
  to its result (the reply streamed back as `milk/update`s, the turn stored);
* direct: the exact chat-completions body milk-lsp sent for a turn (taken from the fake's
  recorded requests), POSTed with httpx (`stream: true`, one kept-alive client like
  milk-lsp's), read and parsed to `data: [DONE]`.

N runs of each, interleaved (the order alternating), medians and their ratio
(target <= 1.2x). Also the server's start-up time (spawn to the initialize result) and the
first turn after start-up.

    .venv/bin/python bench/local_turn.py [--runs 15] [--starts 3]

(about 45 s: each turn streams for ~1 s by design).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._harness import (
    REPO,
    FakeProcess,
    MilkLsp,
    Scratch,
    cpu_per_turn,
    expect,
    paired_ratio,
    process_cpu,
    spread_ms,
    stream_chat,
)

CHUNKS = 60
CHUNK_CHARS = 4
REPLY = ("The parser reads each line, splits on the first '=' and strips both sides. " * 4)[
    : CHUNKS * CHUNK_CHARS
]


def paced(delay: float) -> dict[str, Any]:
    return {"text": REPLY, "chunk_chars": CHUNK_CHARS, "delay": delay}


def _import_seconds() -> float:
    """Seconds to import the server module in a fresh interpreter (most of the start-up)."""
    code = "import time; t = time.perf_counter(); import milk_lsp.lsp.server; "
    code += "print(time.perf_counter() - t)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    return float(out.stdout.strip())


def _bare_python_seconds() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - started


async def direct(http: httpx.AsyncClient, url: str, body: dict[str, Any]) -> float:
    elapsed, text, _ = await stream_chat(http, url, body)
    expect(text == REPLY, "direct stream incomplete")
    return elapsed


SERVER_CPU: list[float] = []
"""milk-lsp server CPU seconds (user + sys) of each timed turn."""


async def milk_turn(milk: MilkLsp, session_id: str, i: int) -> float:
    cpu, _ = process_cpu(milk.pid)
    started = time.perf_counter()
    result = await milk.request(
        "milk/chat",
        {"sessionId": session_id, "text": f"question {i} about the parser", "route": "local"},
    )
    elapsed = time.perf_counter() - started
    SERVER_CPU.append(process_cpu(milk.pid)[0] - cpu)
    expect(result["stopReason"] == "end_turn" and result["text"] == REPLY, result)
    return elapsed


async def run(args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    load = os.getloadavg()[0]
    scratch = Scratch("milk-bench-local-")
    model = FakeProcess("tests.fakes.openai_server")
    milk: MilkLsp | None = None
    try:
        settings = {
            "local": {"baseUrl": model.url, "model": "fake-model", "requestTimeoutSeconds": 30},
            "storageDir": str(scratch.storage),
        }
        starts = []
        imports = [_import_seconds() for _ in range(args.starts)]
        bare = [_bare_python_seconds() for _ in range(args.starts)]
        for _ in range(args.starts - 1):
            probe = MilkLsp(scratch, settings)
            starts.append(await probe.start())
            await probe.stop()
        milk = MilkLsp(scratch, settings)
        starts.append(await milk.start())
        session = await milk.request(
            "milk/session/new", {"workspaceFolder": scratch.workspace.as_uri()}
        )
        session_id = session["sessionId"]

        model.script([paced(0.015)])
        first_turn = await milk_turn(milk, session_id, 0)

        async with httpx.AsyncClient(timeout=30, trust_env=False) as http:
            last_body = model.call("GET", "/_requests")[-1]
            model.script([paced(0.015)])
            await direct(http, model.url, last_body)  # open the kept-alive connection
            ours: list[float] = []
            theirs: list[float] = []
            for i in range(1, args.runs + 1):
                delay = rng.uniform(0.010, 0.020)
                model.call("DELETE", "/_requests")
                if i % 2:
                    model.script([paced(delay), paced(delay)])
                    ours.append(await milk_turn(milk, session_id, i))
                    last_body = model.call("GET", "/_requests")[-1]
                    theirs.append(await direct(http, model.url, last_body))
                else:
                    model.script([paced(delay), paced(delay)])
                    theirs.append(await direct(http, model.url, last_body))
                    ours.append(await milk_turn(milk, session_id, i))
                    last_body = model.call("GET", "/_requests")[-1]

        print(f"load average {load:.1f} -> {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        print(
            f"reply: {CHUNKS} chunks of {CHUNK_CHARS} chars, every SSE event delayed "
            f"10-20 ms (same delay for both runs of a pair); {args.runs} runs each, interleaved"
        )
        print(
            f"server start-up (spawn -> initialize result), median of {len(starts)}: "
            f"{statistics.median(starts) * 1000:.0f} ms "
            f"(each: {', '.join(f'{s * 1000:.0f}' for s in starts)} ms)"
        )
        print(
            f"  of which: a bare interpreter start {statistics.median(bare) * 1000:.0f} ms, "
            f"importing milk_lsp.lsp.server {statistics.median(imports) * 1000:.0f} ms (medians)"
        )
        print(f"first milk/chat after start-up: {first_turn * 1000:.0f} ms")
        print(f"direct to the model server (httpx, streamed to [DONE]): {spread_ms(theirs)}")
        print(f"through milk-lsp (milk/chat request -> result):          {spread_ms(ours)}")
        print(
            f"{paired_ratio('milk-lsp / direct', ours, theirs, 1.2, decimals=1)}; "
            f"{milk.updates} milk/update notifications received in all"
        )
        print(cpu_per_turn("milk-lsp server", SERVER_CPU[-args.runs :]))
    finally:
        try:
            if milk is not None:
                await milk.stop()
        finally:
            model.close()
            scratch.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="timed turns of each kind")
    parser.add_argument("--starts", type=int, default=3, help="server start-ups timed")
    parser.add_argument("--seed", type=int, default=7)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
