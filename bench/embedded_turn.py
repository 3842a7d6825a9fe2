"""The embedded engine: the first local turn split into model load and answer, then a later
turn through milk-lsp against the same request sent straight to the engine.

The model is a pinned real GGUF of the real-model tier (`tests.real_model.fetch`, cached in
``~/.cache/milk-lsp-models``): SmolLM2-135M-Instruct (default) or Qwen2.5-Coder-0.5B
(``--model qwen0.5b``), run by milk itself (``local.provider`` embedded, ``local.modelPath``),
with ``local.threads`` 2 and ``local.maxReplyTokens`` as given (the engine's reply cap, so a
reply that rambles has the same length either way). milk-lsp is the real server over stdio
(`bench._harness.MilkLsp`, driven as an editor drives it).

* **First turn** (``--starts`` times, a fresh milk-lsp each): `milk/chat` timed from the
  request to its result. The load is ``loadSeconds`` of `milk/status` afterwards (llama.cpp's
  process started, the model loaded, ``GET /health`` 200), the answer the rest (routing, the
  store, the model's reply with a cold prompt cache).
* **Later turns** (``--runs`` pairs, interleaved, the order alternating, on one milk-lsp whose
  engine runs): milk: `milk/chat` in a new session each time (so every request is the same)
  from request to result; direct: the exact chat-completions body milk-lsp sends for such a
  turn, POSTed with httpx to the engine's ``/v1/chat/completions`` (`milk/status`'s
  ``baseUrl``) and read to ``data: [DONE]``. The body is captured once from the same turn
  against the scripted server (`tests.fakes.openai_server`; milk's body does not depend on the
  server but for ``model``, set to the engine's alias), and each pair is checked to have the
  same prompt size (milk's ``usage.inputTokens`` + ``cacheReadTokens`` = the direct
  ``prompt_tokens``: one model call, same prompt). Medians and their ratio (target <= 1.2x,
  as bench/local_turn.py).

    .venv/bin/python bench/embedded_turn.py [--model smollm2|qwen0.5b] [--runs 12] [--starts 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._harness import (
    FakeProcess,
    MilkLsp,
    Scratch,
    expect,
    paired_ratio,
    spread_ms,
    stream_chat,
)
from tests.real_model import fetch

MODELS = {"smollm2": fetch.SMOLLM2_135M, "qwen0.5b": fetch.QWEN_CODER_0_5B}
QUESTION = "Write a long poem about the sea."
"""Answered in one model call (no tool, nothing to nudge about) that runs to the reply cap,
so both sides of a pair stream the same number of tokens."""


def embedded_settings(scratch: Scratch, gguf: Path, max_tokens: int) -> dict[str, Any]:
    return {
        "local": {
            "provider": "embedded",
            "modelPath": str(gguf),
            "threads": 2,
            "contextSize": 4096,
            "maxReplyTokens": max_tokens,
            "requestTimeoutSeconds": 300,
        },
        "route": "local",
        "storageDir": str(scratch.storage),
    }


async def new_session(milk: MilkLsp, scratch: Scratch) -> str:
    session = await milk.request(
        "milk/session/new", {"workspaceFolder": scratch.workspace.as_uri()}
    )
    return str(session["sessionId"])


async def milk_turn(milk: MilkLsp, scratch: Scratch) -> tuple[float, dict[str, Any]]:
    session_id = await new_session(milk, scratch)
    started = time.perf_counter()
    result = await milk.request("milk/chat", {"sessionId": session_id, "text": QUESTION})
    elapsed = time.perf_counter() - started
    expect(result["stopReason"] == "end_turn" and result["text"].strip(), result)
    return elapsed, result


async def direct(http: httpx.AsyncClient, url: str, body: dict[str, Any]) -> tuple[float, dict]:
    elapsed, text, usage = await stream_chat(http, url, body)
    expect(text.strip() and usage, "direct stream incomplete")
    return elapsed, usage


async def captured_body(scratch: Scratch) -> dict[str, Any]:
    """The chat-completions body milk-lsp sends for the turn, taken from the scripted server."""
    fake = FakeProcess("tests.fakes.openai_server")
    milk = MilkLsp(
        scratch,
        {
            "local": {"baseUrl": fake.url, "model": "fake-model"},
            "route": "local",
            "storageDir": str(scratch.storage),
        },
    )
    try:
        await milk.start()
        await milk_turn(milk, scratch)
        bodies = fake.call("GET", "/_requests")
        expect(len(bodies) == 1, f"milk made {len(bodies)} model calls for the turn")
        return dict(bodies[0])
    finally:
        await milk.stop()
        fake.close()


async def status(milk: MilkLsp) -> dict[str, Any]:
    return dict((await milk.request("milk/status", {}))["local"])


async def run(args: argparse.Namespace) -> None:
    spec = MODELS[args.model]
    fetch.ensure_xllamacpp()
    gguf = fetch.fetch_model(spec)
    load = os.getloadavg()[0]
    scratch = Scratch("milk-bench-embedded-")
    settings = embedded_settings(scratch, gguf, args.max_tokens)
    milk: MilkLsp | None = None
    try:
        body = await captured_body(scratch)
        loads: list[float] = []
        answers: list[float] = []
        for start in range(args.starts):
            milk = MilkLsp(scratch, settings)
            await milk.start()
            total, _ = await milk_turn(milk, scratch)
            local = await status(milk)
            expect(local["loadState"] == "running", local)
            loads.append(float(local["loadSeconds"]))
            answers.append(total - loads[-1])
            if start < args.starts - 1:
                await milk.stop()
                milk = None
        assert milk is not None
        local = await status(milk)
        body["model"] = local["model"]
        ours: list[float] = []
        theirs: list[float] = []
        replies: list[tuple[int, int]] = []
        async with httpx.AsyncClient(timeout=300, trust_env=False) as http:
            await direct(http, local["baseUrl"], body)  # open the kept-alive connection
            for i in range(args.runs):
                order = ("milk", "direct") if i % 2 == 0 else ("direct", "milk")
                for who in order:
                    if who == "milk":
                        seconds, result = await milk_turn(milk, scratch)
                        ours.append(seconds)
                        milk_usage = result.get("usage") or {}
                    else:
                        seconds, usage = await direct(http, local["baseUrl"], body)
                        theirs.append(seconds)
                        direct_usage = usage
                # milk counts the prompt tokens served from llama.cpp's cache apart
                prompt = milk_usage.get("inputTokens", 0) + milk_usage.get("cacheReadTokens", 0)
                expect(
                    prompt == direct_usage.get("prompt_tokens"),
                    f"different prompts: milk {milk_usage}, direct {direct_usage}",
                )
                replies.append(
                    (int(milk_usage.get("outputTokens", 0)), int(direct_usage["completion_tokens"]))
                )

        print(f"load average {load:.1f} -> {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        print(
            f"model: {spec.name} ({spec.size / 1e6:.0f} MB GGUF) on milk's embedded engine "
            f"(xllamacpp), 2 threads, ctx 4096, reply cap {args.max_tokens} tokens; "
            f"prompt {direct_usage['prompt_tokens']} tokens ({QUESTION!r} in a new session)"
        )
        print(
            f"first local turn after start-up, {args.starts} fresh servers (load + answer, s): "
            + ", ".join(f"{a:.2f} + {b:.2f}" for a, b in zip(loads, answers, strict=True))
        )
        firsts = [a + b for a, b in zip(loads, answers, strict=True)]
        print(f"  whole turn (milk/chat -> result): {spread_ms(firsts)}")
        print(f"  model load (loadSeconds):         {spread_ms(loads)}")
        print(f"  answer (the rest):                {spread_ms(answers)}")
        print(f"later turns, {args.runs} of each, interleaved:")
        print(f"  direct to the engine (httpx, streamed to [DONE]): {spread_ms(theirs)}")
        print(f"  through milk-lsp (milk/chat request -> result):   {spread_ms(ours)}")
        print(
            "  reply tokens (median) milk "
            f"{statistics.median(r[0] for r in replies):.0f}, direct "
            f"{statistics.median(r[1] for r in replies):.0f}; pairs of equal length "
            f"{sum(1 for m, d in replies if m == d)} of {len(replies)}"
        )
        print(f"  {paired_ratio('milk-lsp / direct', ours, theirs, 1.2, decimals=1)}")
    finally:
        if milk is not None:
            await milk.stop()
        scratch.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=sorted(MODELS), default="smollm2")
    parser.add_argument("--runs", type=int, default=12, help="timed later turns of each kind")
    parser.add_argument("--starts", type=int, default=3, help="first turns (fresh servers)")
    parser.add_argument("--max-tokens", type=int, default=64, help="local.maxReplyTokens")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
