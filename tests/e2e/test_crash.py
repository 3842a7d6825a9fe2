"""End to end: `kill -9` of the server mid-turn loses no finished turn and leaves no half turn."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from tests.e2e.conftest import Env, Harness, request

pytestmark = pytest.mark.e2e


async def test_kill_9_mid_turn(harness: Harness, env: Env, openai) -> None:
    client = await harness.start()
    openai.enqueue({"text": "finished answer"})
    done = await request(client, "milk/chat", {"text": "first"})
    assert done["stopReason"] == "end_turn"
    openai.enqueue({"text": "never finished " * 100, "chunk_chars": 3, "delay": 0.05})
    chat = asyncio.ensure_future(
        request(client, "milk/chat", {"sessionId": done["sessionId"], "text": "second"})
    )
    await client.wait_for_update(lambda u: u["kind"] == "text" and u["turnId"] != done["turnId"])
    server = client._server
    assert server is not None
    os.kill(server.pid, signal.SIGKILL)
    await asyncio.wait_for(server.wait(), 10)
    chat.cancel()
    harness.clients.remove(client)
    await client.stop()

    client = await harness.start()
    got = await request(client, "milk/session/get", {"sessionId": done["sessionId"]})
    turns = got["turns"]
    assert [(t["role"], t["text"], t["status"]) for t in turns[:2]] == [
        ("user", "first", "ok"),
        ("assistant", "finished answer", "ok"),
    ]
    # the interrupted turn: its message is readable, never marked ok, and has no half answer
    assert [(t["role"], t["text"], t["status"]) for t in turns[2:]] == [("user", "second", "error")]
    assert got["bricks"]["lastLocalSummary"].startswith("User: first\n")
    openai.enqueue({"text": "after the crash"})
    result = await request(client, "milk/chat", {"sessionId": done["sessionId"], "text": "third"})
    assert result["stopReason"] == "end_turn"
