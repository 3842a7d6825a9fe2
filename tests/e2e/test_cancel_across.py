"""End to end: `milk/cancel` in one editor window stops a turn run by another window's server
(two real server processes on one session store)."""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.e2e.conftest import Env, Harness, request

pytestmark = pytest.mark.e2e


async def test_cancel_reaches_a_turn_in_another_server(harness: Harness, env: Env, openai) -> None:
    first = await harness.start()
    second = await harness.start()
    info = await request(first, "milk/session/new", {"workspaceFolder": env.workspace.as_uri()})
    session_id = info["sessionId"]
    assert await request(second, "milk/cancel", {"sessionId": session_id}) == {"cancelled": False}
    openai.enqueue({"stall": 30})
    chat = asyncio.ensure_future(
        request(first, "milk/chat", {"sessionId": session_id, "text": "a"})
    )
    await first.wait_for_update(lambda u: u["kind"] == "turn_started")
    for _ in range(100):  # the model request is open: the turn is stalled in the stream
        if openai.open_streams:
            break
        await asyncio.sleep(0.05)
    assert openai.open_streams

    started = time.monotonic()
    answer = await request(second, "milk/cancel", {"sessionId": session_id})
    waited = time.monotonic() - started
    assert answer == {"cancelled": True}
    assert waited < 3.0  # polled twice a second, well before the 5 s read timeout
    # The first window's turn was cancelled and ended (it let go of the session first).
    result = await asyncio.wait_for(chat, 5)
    assert result["stopReason"] == "cancelled"
    ended = [u for u in first.turn_updates(result["turnId"]) if u["kind"] == "turn_ended"]
    assert [u["stopReason"] for u in ended] == ["cancelled"]
    assert openai.wait_for_disconnects(1, timeout=5)

    # The session is free: the second window runs the next turn at once.
    openai.set_script([{"text": "from the second window"}])
    after = await request(second, "milk/chat", {"sessionId": session_id, "text": "b"})
    assert after["stopReason"] == "end_turn"
    assert after["text"] == "from the second window"
    got = await request(second, "milk/session/get", {"sessionId": session_id})
    assert [(t["text"], t["status"]) for t in got["turns"]] == [
        ("a", "cancelled"),
        ("b", "ok"),
        ("from the second window", "ok"),
    ]
    # Nothing runs any more, in either window.
    assert await request(first, "milk/cancel", {"sessionId": session_id}) == {"cancelled": False}
    assert await request(second, "milk/cancel", {"sessionId": session_id}) == {"cancelled": False}
