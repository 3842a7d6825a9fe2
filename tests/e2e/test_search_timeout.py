"""End to end: a regex from the model that backtracks for ever neither stalls the server nor
the turn. The real server runs the scripted model's `search_text` call; meanwhile
`milk/status` still answers at once, and the tool result says the pattern took too long."""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.e2e.conftest import Env, MilkClient, request
from tests.fakes.openai_server import FakeOpenAIServer

pytestmark = pytest.mark.e2e


async def test_catastrophic_regex_is_cut_off_while_the_server_keeps_answering(
    client: MilkClient, env: Env, openai: FakeOpenAIServer
) -> None:
    (env.workspace / "slow.txt").write_text("a" * 30 + "b\n")
    pattern = "(a|a)+$"  # 2**30 ways to fail on this line
    search = {"pattern": pattern, "regex": True, "path": "slow.txt"}
    openai.enqueue({"tool_calls": [{"name": "search_text", "arguments": search}]}, {"text": "ok"})
    chat = asyncio.ensure_future(request(client, "milk/chat", {"text": "find it"}))
    await client.wait_for_update(
        lambda u: (
            u["kind"] == "tool_call" and u["name"] == "search_text" and u["status"] == "running"
        )
    )
    search_started = time.monotonic()
    result_seen = asyncio.ensure_future(
        client.wait_for_update(lambda u: u["kind"] == "tool_result", seconds=40)
    )
    status_seconds = []
    while not result_seen.done():
        asked = time.monotonic()
        status = await asyncio.wait_for(request(client, "milk/status", {}), 5)
        status_seconds.append(time.monotonic() - asked)
        assert {"local", "claude"} <= set(status)
        await asyncio.wait([result_seen], timeout=0.25)
    outcome = result_seen.result()
    cut_off_after = time.monotonic() - search_started
    result = await asyncio.wait_for(chat, 30)
    assert result["stopReason"] == "end_turn", result
    assert outcome["turnId"] == result["turnId"]
    assert outcome["isError"] is True
    assert outcome["output"] == (
        f"search_text stopped: the pattern {pattern!r} took too long to match (over 5 s, at"
        " slow.txt line 1). Use a simpler pattern or a literal search (regex=false)."
    )
    assert len(status_seconds) >= 10, status_seconds  # asked all along the search
    assert max(status_seconds) < 1.0, status_seconds
    # `regex` counts its timeout in CPU time: on a busy machine the clock runs further.
    assert 4.5 < cut_off_after < 30, cut_off_after
    print(
        f"search cut off after {cut_off_after:.2f} s; milk/status answered"
        f" {len(status_seconds)} times, slowest {max(status_seconds):.3f} s"
    )
