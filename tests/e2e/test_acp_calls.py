"""Tool calls as an ACP client sees them, driven by the ACP SDK's client (issue 20, items
25 and 26): a call starts `pending`, never goes back, and one a cancel stopped is closed
`failed` (milk's `cancelled` in `_meta`) both live and when the session is loaded again."""

from __future__ import annotations

import asyncio

import pytest

from tests.e2e.acp_harness import RecordingClient, start_agent
from tests.e2e.conftest import Env
from tests.fakes.openai_server import FakeOpenAIServer

pytestmark = pytest.mark.e2e

SLEEP = {"name": "run_command", "arguments": {"command": "sleep 30"}}
RANK = {"pending": 0, "in_progress": 1, "completed": 2, "failed": 2}


def statuses(client: RecordingClient, sid: str, call_id: str) -> list[str]:
    return [
        u.status
        for s, u in client.updates
        if s == sid
        and u.session_update in ("tool_call", "tool_call_update")
        and u.tool_call_id == call_id
        and u.status
    ]


async def test_a_cancelled_running_call_is_closed_live_and_on_replay(
    env: Env, openai: FakeOpenAIServer
) -> None:
    client = RecordingClient(permission_answers=["allow_once"])
    async with start_agent(env, client) as agent:
        sid = await agent.new_session(env.workspace)
        openai.enqueue({"tool_calls": [SLEEP]}, {"text": "never asked for"})
        turn = asyncio.create_task(agent.say(sid, "wait a while"))
        running = await client.wait_for(
            lambda u: u.session_update == "tool_call_update" and u.status == "in_progress"
        )
        call_id = running.tool_call_id
        [start] = [u for u in client.of_kind("tool_call", sid) if u.tool_call_id == call_id]
        assert start.status == "pending"  # asked before it ran: it started pending
        assert client.permission_requests[0]["toolCall"]["status"] == "pending"
        await agent.conn.cancel(session_id=sid)
        assert (await asyncio.wait_for(turn, 20)).stop_reason == "cancelled"
        # closed before the prompt's answer, and the statuses only went forward
        assert statuses(client, sid, call_id) == ["pending", "in_progress", "failed"]
        closed = [
            u
            for u in client.of_kind("tool_call_update", sid)
            if u.tool_call_id == call_id and u.status == "failed"
        ]
        assert [u.field_meta["milk"]["status"] for u in closed] == ["cancelled"]

        before = len(client.updates)
        await agent.conn.load_session(cwd=str(env.workspace), session_id=sid, mcp_servers=[])
        [replayed] = [
            u for s, u in client.updates[before:] if s == sid and u.session_update == "tool_call"
        ]
        assert replayed.tool_call_id == call_id
        assert replayed.status == "failed"
        assert replayed.field_meta["milk"]["toolStatus"] == "cancelled"
        assert replayed.field_meta["milk"]["status"] == "cancelled"  # the turn's status


async def test_calls_without_a_question_go_from_pending_to_done(
    env: Env, openai: FakeOpenAIServer
) -> None:
    client = RecordingClient()
    async with start_agent(env, client) as agent:
        sid = await agent.new_session(env.workspace)
        read = {"name": "read_file", "arguments": {"path": "hello.py"}}
        openai.enqueue({"tool_calls": [read]}, {"text": "greet() returns hello."})
        assert (await agent.say(sid, "what does greet return?")).stop_reason == "end_turn"
        [start] = client.of_kind("tool_call", sid)
        assert (start.title, start.status) == ("Read hello.py", "pending")
        assert statuses(client, sid, start.tool_call_id) == ["pending", "completed"]
        assert client.permission_requests == []
