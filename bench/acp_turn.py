"""A local turn through `milk-lsp acp` against the same request sent straight to the model server.

The ACP twin of `bench/local_turn.py`, with the same pacing: the scripted OpenAI-compatible
server (`tests.fakes.openai_server`, its own process on 127.0.0.1) answers with 60 content
chunks, every event delayed by the same 10-20 ms (drawn per pair of runs). Then:

* milk over ACP: the real agent (`python -m milk_lsp acp` over stdio, driven by the ACP
  SDK's own client, `acp.spawn_agent_process`, recording every `session/update` as an
  editor would), one session in mode `local`, `session/prompt` timed from sending the
  request to its response (the reply streamed back as `agent_message_chunk`s, the turn
  stored);
* direct: the exact chat-completions body milk sent for a turn (taken from the fake's
  recorded requests), POSTed with httpx (`stream: true`, one kept-alive client), read and
  parsed to `data: [DONE]`.

N runs of each, interleaved (the order alternating), medians and their ratio
(target <= 1.2x). Also the agent's start-up (spawn to the initialize result) and the first
turn after it.

    .venv/bin/python bench/acp_turn.py [--runs 15] [--starts 3]

(about 45 s: each turn streams for ~1 s by design).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import httpx
from acp import PROTOCOL_VERSION, spawn_agent_process
from acp.schema import ClientCapabilities, FileSystemCapabilities, Implementation, TextContentBlock

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._harness import (
    REPO,
    FakeProcess,
    Scratch,
    cpu_per_turn,
    expect,
    paired_ratio,
    process_cpu,
    spread_ms,
)
from bench.local_turn import CHUNK_CHARS, CHUNKS, REPLY, direct, paced


class Editor:
    """The client half: collects the session's updates (the SDK's `Client` interface)."""

    def __init__(self) -> None:
        self.updates = 0
        self.text: list[str] = []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates += 1
        if update.session_update == "agent_message_chunk":
            self.text.append(update.content.text)

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the benchmark's turns ask nothing")


class AcpAgent:
    def __init__(self, scratch: Scratch) -> None:
        self.scratch = scratch
        self.editor = Editor()
        self._stack = AsyncExitStack()
        self.conn: Any = None
        self.pid = 0

    async def start(self) -> float:
        """Spawn and initialize; returns seconds from spawn to the initialize result."""
        stderr = self._stack.enter_context((self.scratch.root / "logs" / "acp.err").open("ab"))
        started = time.perf_counter()
        self.conn, process = await self._stack.enter_async_context(
            spawn_agent_process(
                self.editor,
                sys.executable,
                "-m",
                "milk_lsp",
                "acp",
                env=self.scratch.server_env(),
                cwd=REPO,
                transport_kwargs={"stderr": stderr},
            )
        )
        self.pid = process.pid
        await self.conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(
                fs=FileSystemCapabilities(read_text_file=True, write_text_file=True)
            ),
            client_info=Implementation(name="milk-bench", version="0"),
        )
        return time.perf_counter() - started

    async def stop(self) -> None:
        await self._stack.aclose()


SERVER_CPU: list[float] = []


async def acp_turn(agent: AcpAgent, session_id: str, i: int) -> float:
    agent.editor.text.clear()
    cpu, _ = process_cpu(agent.pid)
    started = time.perf_counter()
    result = await agent.conn.prompt(
        session_id=session_id,
        prompt=[TextContentBlock(type="text", text=f"question {i} about the parser")],
    )
    elapsed = time.perf_counter() - started
    SERVER_CPU.append(process_cpu(agent.pid)[0] - cpu)
    shown = "".join(agent.editor.text)
    expect(result.stop_reason == "end_turn" and shown == REPLY, (result, shown))
    return elapsed


def write_settings(scratch: Scratch, model_url: str) -> None:
    config = scratch.root / "config" / "milk" / "config.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    settings = {
        "local": {"baseUrl": model_url, "model": "fake-model", "requestTimeoutSeconds": 30},
        "storageDir": str(scratch.storage),
    }
    config.write_text(json.dumps(settings))


async def run(args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    load = os.getloadavg()[0]
    scratch = Scratch("milk-bench-acp-")
    model = FakeProcess("tests.fakes.openai_server")
    agent: AcpAgent | None = None
    try:
        write_settings(scratch, model.url)
        starts = []
        for _ in range(args.starts - 1):
            probe = AcpAgent(scratch)
            starts.append(await probe.start())
            await probe.stop()
        agent = AcpAgent(scratch)
        starts.append(await agent.start())
        session = await agent.conn.new_session(cwd=str(scratch.workspace), mcp_servers=[])
        session_id = session.session_id
        await agent.conn.set_session_mode(session_id=session_id, mode_id="local")

        model.script([paced(0.015)])
        first_turn = await acp_turn(agent, session_id, 0)

        async with httpx.AsyncClient(timeout=30, trust_env=False) as http:
            last_body = model.call("GET", "/_requests")[-1]
            model.script([paced(0.015)])
            await direct(http, model.url, last_body)  # open the kept-alive connection
            ours: list[float] = []
            theirs: list[float] = []
            for i in range(1, args.runs + 1):
                delay = rng.uniform(0.010, 0.020)
                model.call("DELETE", "/_requests")
                model.script([paced(delay), paced(delay)])
                if i % 2:
                    ours.append(await acp_turn(agent, session_id, i))
                    last_body = model.call("GET", "/_requests")[-1]
                    theirs.append(await direct(http, model.url, last_body))
                else:
                    theirs.append(await direct(http, model.url, last_body))
                    ours.append(await acp_turn(agent, session_id, i))
                    last_body = model.call("GET", "/_requests")[-1]

        print(f"load average {load:.1f} -> {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        print(
            f"reply: {CHUNKS} chunks of {CHUNK_CHARS} chars, every SSE event delayed "
            f"10-20 ms (same delay for both runs of a pair); {args.runs} runs each, interleaved"
        )
        print(
            f"ACP agent start-up (spawn -> initialize result), median of {len(starts)}: "
            f"{statistics.median(starts) * 1000:.0f} ms "
            f"(each: {', '.join(f'{s * 1000:.0f}' for s in starts)} ms)"
        )
        print(f"first session/prompt after start-up: {first_turn * 1000:.0f} ms")
        print(f"direct to the model server (httpx, streamed to [DONE]): {spread_ms(theirs)}")
        print(f"through milk-lsp acp (session/prompt -> response):     {spread_ms(ours)}")
        print(
            f"{paired_ratio('milk-lsp acp / direct', ours, theirs, 1.2, decimals=1)}; "
            f"{agent.editor.updates} session/update notifications received in all"
        )
        print(cpu_per_turn("milk-lsp acp", SERVER_CPU[-args.runs :]))
    finally:
        try:
            if agent is not None:
                await agent.stop()
        finally:
            model.close()
            scratch.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="timed turns of each kind")
    parser.add_argument("--starts", type=int, default=3, help="agent start-ups timed")
    parser.add_argument("--seed", type=int, default=7)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
