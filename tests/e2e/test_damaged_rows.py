"""End to end: damaged rows in a real database do not take the sessions down.

The values are written with raw SQL into the server's own database file (another tool, a
hand edit or an old bug could leave them), then the real server is asked for the list, the
session and a new turn on it.
"""

from __future__ import annotations

import sqlite3

import pytest

from tests.e2e.conftest import Env, MilkClient, request
from tests.fakes.openai_server import FakeOpenAIServer

pytestmark = pytest.mark.e2e


def _write(env: Env, *statements: tuple[str, tuple[object, ...]]) -> None:
    with sqlite3.connect(env.storage / "sessions.sqlite3", isolation_level=None) as raw:
        for sql, args in statements:
            raw.execute(sql, args)


async def test_damaged_rows_are_shown_and_marked(
    client: MilkClient, env: Env, openai: FakeOpenAIServer
) -> None:
    read = {"name": "read_file", "arguments": {"path": "hello.py"}}
    openai.enqueue({"tool_calls": [read]}, {"text": "greet returns hello."})
    damaged = await request(client, "milk/chat", {"text": "what does greet return?"})
    assert damaged["stopReason"] == "end_turn", damaged
    session_id = damaged["sessionId"]
    healthy = await request(client, "milk/session/new", {"title": "healthy"})
    openai.enqueue({"text": "fine"})
    await request(client, "milk/chat", {"sessionId": healthy["sessionId"], "text": "hi"})

    _write(
        env,
        (
            "UPDATE sessions SET state = 'bogus', created_at = 'yesterday' WHERE id = ?",
            (session_id,),
        ),
        (
            "UPDATE records SET tool_calls = 'not json' WHERE session_id = ? AND role = 'assistant'",
            (session_id,),
        ),
        (
            "UPDATE records SET created_at = 'yesterday' WHERE session_id = ? AND role = 'user'",
            (healthy["sessionId"],),
        ),
        (  # a row that cannot be shown at all: no id
            "INSERT INTO sessions (id, workspace, created_at, updated_at) VALUES (NULL, ?, 'x', 'x')",
            (str(env.workspace),),
        ),
    )

    listed = await request(client, "milk/session/list", {})
    by_id = {s["sessionId"]: s for s in listed["sessions"]}
    assert set(by_id) == {session_id, healthy["sessionId"]}
    shown = by_id[session_id]
    assert shown["state"] == "routing"
    assert shown["damaged"] == ["state", "createdAt"]
    assert shown["createdAt"] == shown["updatedAt"]
    assert "damaged" not in by_id[healthy["sessionId"]]

    got = await request(client, "milk/session/get", {"sessionId": session_id})
    assert got["session"]["damaged"] == ["state", "createdAt"]
    answer = got["turns"][1]
    assert answer["role"] == "assistant" and answer["text"] == "greet returns hello."
    assert "toolCalls" not in answer and answer["damaged"] == ["toolCalls"]
    assert "damaged" not in got["turns"][0]
    other = await request(client, "milk/session/get", {"sessionId": healthy["sessionId"]})
    user = other["turns"][0]
    assert (user["text"], user["createdAt"], user["damaged"]) == (
        "hi",
        "1970-01-01T00:00:00Z",
        ["createdAt"],
    )

    openai.enqueue({"text": "still here"})
    result = await request(client, "milk/chat", {"sessionId": session_id, "text": "and now?"})
    assert result["stopReason"] == "end_turn", result
    updates = client.turn_updates(result["turnId"])
    notices = [u for u in updates if u["kind"] == "notice"]
    assert [n["severity"] for n in notices] == ["warning"]
    assert "(state, createdAt)" in notices[0]["message"]
    assert updates[-1]["kind"] == "turn_ended"
    # the history the model got kept the damaged record's text
    sent = openai.requests[-1]["messages"]
    assert any(m["role"] == "assistant" and m["content"] == "greet returns hello." for m in sent)

    repaired = await request(client, "milk/session/get", {"sessionId": session_id})
    assert "damaged" not in repaired["session"]
    assert repaired["session"]["state"] == "routing"
    assert repaired["session"]["turnCount"] == 2
    assert [t["text"] for t in repaired["turns"]][-2:] == ["and now?", "still here"]
