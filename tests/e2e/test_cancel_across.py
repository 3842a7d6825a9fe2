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


async def test_another_window_sees_a_turn_live_and_cancels_it(
    harness: Harness, env: Env, openai
) -> None:
    """A turn run by one server process streams, live, to the client of another on the same
    folder (`elsewhere: true`, the user's message and the door with `turn_started`), and
    that client's `milk/cancel` stops it; its own updates are never relayed back to it."""
    runner = await harness.start()
    watcher = await harness.start()
    info = await request(runner, "milk/session/new", {"workspaceFolder": env.workspace.as_uri()})
    session_id = info["sessionId"]
    # the first reply streams slowly and then stalls: the turn is watched while it runs
    openai.enqueue(
        {"text": "Reading the parser first, then", "delay": 0.2, "stall": 30, "stall_after": 6}
    )
    chat = asyncio.ensure_future(
        request(runner, "milk/chat", {"sessionId": session_id, "text": "Was macht parse()?"})
    )
    started = await watcher.wait_for_update(lambda u: u["kind"] == "turn_started", 10)
    assert started["elsewhere"] is True
    assert started["sessionId"] == session_id
    assert started["userText"] == "Was macht parse()?"
    assert started["door"] == "lsp"  # the harness's client is a plain LSP editor
    text = await watcher.wait_for_update(lambda u: u["kind"] == "text", 10)
    assert text["elsewhere"] is True and text["delta"]
    assert not chat.done()  # seen while the turn runs, not after it

    answer = await request(watcher, "milk/cancel", {"sessionId": session_id})
    assert answer == {"cancelled": True}
    result = await asyncio.wait_for(chat, 5)
    assert result["stopReason"] == "cancelled"
    ended = await watcher.wait_for_update(lambda u: u["kind"] == "turn_ended", 5)
    assert ended["stopReason"] == "cancelled" and ended["elsewhere"] is True
    # the watcher saw the runner's updates in order, each once; the runner saw none twice
    seen = watcher.turn_updates(result["turnId"])
    assert [u["seq"] for u in seen] == list(range(1, len(seen) + 1))
    assert [u["kind"] for u in seen] == [u["kind"] for u in runner.turn_updates(result["turnId"])]
    assert not any(u.get("elsewhere") for u in runner.updates)


async def test_a_window_opened_mid_turn_sees_the_turn_from_its_start(
    harness: Harness, env: Env, openai
) -> None:
    runner = await harness.start()
    info = await request(runner, "milk/session/new", {"workspaceFolder": env.workspace.as_uri()})
    openai.enqueue({"text": "Looking", "stall": 30, "stall_after": 2})
    chat = asyncio.ensure_future(
        request(runner, "milk/chat", {"sessionId": info["sessionId"], "text": "¿Dónde está main?"})
    )
    await runner.wait_for_update(lambda u: u["kind"] == "text")
    late = await harness.start()  # opened while the turn runs
    started = await late.wait_for_update(lambda u: u["kind"] == "turn_started", 10)
    assert started["userText"] == "¿Dónde está main?" and started["seq"] == 1
    assert await request(late, "milk/cancel", {"sessionId": info["sessionId"]}) == {
        "cancelled": True
    }
    assert (await asyncio.wait_for(chat, 5))["stopReason"] == "cancelled"
