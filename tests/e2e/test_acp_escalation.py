"""`milk-lsp acp` escalating to the REAL Claude Code CLI (the SDK's bundled binary) on the
Messages-API stand-in: `/escalate` hands Claude the same appended context as an LSP
escalation, the mode follows the session to Claude and back, Claude's permission questions
and milk's hand-off question are `session/request_permission`s."""

from __future__ import annotations

import pytest
from acp import RequestError

from tests.e2e.acp_harness import RecordingClient, start_agent
from tests.e2e.conftest import Env, Harness, request
from tests.e2e.test_escalation import (
    TOUCH,
    no_leftovers,
)
from tests.fakes.anthropic_api import FakeAnthropicAPI, appended_system_text, user_text
from tests.fakes.openai_server import FakeOpenAIServer

pytestmark = [pytest.mark.e2e, pytest.mark.claude]

CLAUDE_REPLY = "Claude renamed the greeting and checked the callers."


def modes(client: RecordingClient, sid: str) -> list[str]:
    return [u.current_mode_id for u in client.of_kind("current_mode_update", sid)]


async def test_escalate_sends_the_lsp_context_and_the_mode_follows_the_session(
    claude_env: Env, api: FakeAnthropicAPI, openai: FakeOpenAIServer, harness: Harness
) -> None:
    env = claude_env
    lsp = await harness.start()
    info = await request(lsp, "milk/session/new", {"workspaceFolder": env.workspace.as_uri()})
    sid = info["sessionId"]
    openai.enqueue({"text": "the local model had a look"})
    await request(lsp, "milk/chat", {"sessionId": sid, "text": "look at hello.py"})
    lsp_preview = await request(lsp, "milk/context", {"sessionId": sid})
    await harness.stop(lsp)

    async with start_agent(env) as agent:
        await agent.conn.load_session(cwd=str(env.workspace), session_id=sid, mcp_servers=[])
        preview = await agent.conn.ext_method("milk/context", {"sessionId": sid})
        assert preview == lsp_preview  # the same preview through either front door
        assert preview["mode"] == "first"

        api.enqueue({"text": CLAUDE_REPLY, "chunk_chars": 10})
        result = await agent.say(sid, "/escalate fix the greeting")
        assert result.stop_reason == "end_turn"
        assert result.field_meta["milk"]["agent"] == "claude"
        assert result.field_meta["milk"]["escalated"] == {"by": "user", "reason": "user asked"}
        assert result.field_meta["milk"]["costUsd"] > 0
        sent = api.main_requests()[-1]
        assert appended_system_text(sent) == preview["contextFile"]
        assert user_text(sent) == "fix the greeting"
        assert agent.client.text(sid, agent="claude") == CLAUDE_REPLY
        assert modes(agent.client, sid) == ["claude"]  # the session is with Claude now
        # Claude's context window is not known to milk: no usage_update to mislead a meter
        assert agent.client.of_kind("usage_update", sid) == []
        await no_leftovers(env)

        # choosing `auto` does not take the session back: the mode shows `claude` again
        await agent.conn.set_session_mode(session_id=sid, mode_id="auto")
        await agent.client.wait_for(
            lambda u: (
                u.session_update == "current_mode_update" and len(modes(agent.client, sid)) == 2
            )
        )
        assert modes(agent.client, sid) == ["claude", "claude"]

        openai.enqueue({"text": "local again"})
        result = await agent.say(sid, "/local what now?")
        assert result.field_meta["milk"]["agent"] == "local"
        assert modes(agent.client, sid) == ["claude", "claude", "auto"]  # taken back
        assert "what now?" in openai.requests[-1]["messages"][-1]["content"]


@pytest.mark.parametrize("answer", ["allow_once", "deny"])
async def test_claude_asks_through_session_request_permission(
    claude_env: Env, api: FakeAnthropicAPI, answer: str
) -> None:
    env = claude_env
    client = RecordingClient(permission_answers=[answer])
    async with start_agent(env, client) as agent:
        sid = await agent.new_session(env.workspace)
        await agent.conn.set_session_mode(session_id=sid, mode_id="claude")
        api.enqueue({"tool_use": TOUCH}, {"text": "done with the tool"})
        result = await agent.say(sid, "touch the marker")
        assert result.stop_reason == "end_turn"
        [asked] = client.permission_requests
        call = asked["toolCall"]
        assert (call["title"], call["kind"]) == ("Create marker", "execute")
        assert call["rawInput"]["command"] == "touch marker.txt"
        assert [o["kind"] for o in asked["options"]] == [
            "allow_once",
            "allow_always",
            "reject_once",
        ]
        # Claude's call starts pending, gets its title once its input is known, and its
        # status never goes back (the question comes while it is pending)
        [start] = client.of_kind("tool_call", sid)
        assert start.status == "pending" and "``" not in start.title
        shown = [start.status] + [
            u.status for u in client.of_kind("tool_call_update", sid) if u.status
        ]
        expected = ["pending", "in_progress", "completed"] if answer == "allow_once" else None
        assert shown == (expected or ["pending", "failed"])
        titled = [u.title for u in client.of_kind("tool_call_update", sid) if u.title]
        assert titled[-1] == "Create marker"
        final = [u for u in client.of_kind("tool_call_update", sid) if u.status][-1]
        if answer == "allow_once":
            assert (env.workspace / "marker.txt").exists()
            assert final.status == "completed"
        else:
            assert not (env.workspace / "marker.txt").exists()
            assert final.field_meta["milk"]["status"] == "denied"
        await no_leftovers(env)


async def test_a_todo_write_the_cli_refuses_makes_no_plan(
    claude_env: Env, api: FakeAnthropicAPI
) -> None:
    env = claude_env
    client = RecordingClient(permission_answers=["allow_once"])
    async with start_agent(env, client) as agent:
        sid = await agent.new_session(env.workspace)
        await agent.conn.set_session_mode(session_id=sid, mode_id="claude")
        todos = {"todos": [{"content": "rename", "status": "pending", "activeForm": "renaming"}]}
        api.enqueue({"tool_use": {"name": "TodoWrite", "input": todos}}, {"text": "no plan"})
        result = await agent.say(sid, "plan it")
        assert result.stop_reason == "end_turn"
        [call] = client.of_kind("tool_call", sid)
        assert call.title == "Update the plan"
        outputs = [u.raw_output for u in client.of_kind("tool_call_update", sid) if u.raw_output]
        assert outputs and outputs[-1]["isError"] is True  # the bundled CLI has no TodoWrite
        assert client.of_kind("plan", sid) == []
        await no_leftovers(env)


@pytest.mark.parametrize("answer", ["allow_once", "deny"])
async def test_the_hand_off_question_uses_its_own_option_names(
    claude_env: Env, api: FakeAnthropicAPI, openai: FakeOpenAIServer, answer: str
) -> None:
    env = claude_env
    client = RecordingClient(permission_answers=[answer])
    async with start_agent(env, client) as agent:
        sid = await agent.new_session(env.workspace)
        openai.enqueue({"status": 500, "body": "the server crashed"})
        api.enqueue({"text": "Claude did it."})
        if answer == "deny":
            with pytest.raises(RequestError) as kept:
                await agent.say(sid, "rename greet")
            assert kept.value.data["reason"] == "local_failed"
            assert "answered HTTP 500: the server crashed" in str(kept.value)
        else:
            result = await agent.say(sid, "rename greet")
            assert result.field_meta["milk"]["escalated"]["by"] == "fallback"
            assert "Claude takes over**: the local model could not finish (the local model at" in (
                client.text(sid)
            )
            assert client.text(sid, agent="claude") == "Claude did it."
        [asked] = client.permission_requests
        assert asked["toolCall"]["title"] == "Hand this turn to Claude?"
        assert asked["toolCall"]["kind"] == "switch_mode"
        assert [(o["optionId"], o["name"], o["kind"]) for o in asked["options"]] == [
            ("allow_once", "Hand to Claude", "allow_once"),
            ("deny", "Don't hand off", "reject_once"),  # no local answer to keep
        ]
        [announced] = [
            u for u in client.of_kind("tool_call", sid) if u.tool_call_id.startswith("handoff-")
        ]
        assert announced.status == "pending"
        [closed] = [
            u
            for u in client.of_kind("tool_call_update", sid)
            if u.tool_call_id == announced.tool_call_id
        ]
        assert closed.status == "completed"
        await no_leftovers(env)
