"""One store, two front doors: a session started over LSP is listed and loaded (replayed)
over ACP, goes on there, and the LSP server then sees the ACP turn."""

from __future__ import annotations

import pytest
from acp import RequestError

from tests.e2e.acp_harness import start_agent
from tests.e2e.conftest import Env, Harness, request
from tests.fakes.openai_server import FakeOpenAIServer

pytestmark = pytest.mark.e2e

READ = {"name": "read_file", "arguments": {"path": "hello.py"}}


async def test_a_session_started_over_lsp_loads_over_acp_and_back(
    env: Env, openai: FakeOpenAIServer, harness: Harness
) -> None:
    lsp = await harness.start()
    info = await request(lsp, "milk/session/new", {"workspaceFolder": env.workspace.as_uri()})
    sid = info["sessionId"]
    openai.enqueue({"tool_calls": [READ]}, {"text": "greet() returns hello."})
    first = await request(lsp, "milk/chat", {"sessionId": sid, "text": "what does greet return?"})
    assert first["stopReason"] == "end_turn"
    await harness.stop(lsp)

    async with start_agent(env) as agent:
        listed = await agent.conn.list_sessions(cwd=str(env.workspace))
        [listed_one] = listed.sessions
        assert (listed_one.session_id, listed_one.cwd) == (sid, str(env.workspace))
        assert listed_one.title == "what does greet return?"
        assert listed_one.updated_at.endswith("Z")

        loaded = await agent.conn.load_session(
            cwd=str(env.workspace), session_id=sid, mcp_servers=[]
        )
        assert loaded.modes.current_mode_id == "auto"
        replay = [u for s, u in agent.client.updates if s == sid]
        kinds = [u.session_update for u in replay]
        assert kinds == ["user_message_chunk", "tool_call", "agent_message_chunk"]
        user, call, answer = replay
        assert user.content.text == "what does greet return?"
        assert (call.title, call.kind, call.status) == ("Read hello.py", "read", "completed")
        assert call.raw_input == {"path": "hello.py"}
        assert "return 'hello'" in call.raw_output["output"]
        assert answer.content.text == "greet() returns hello."
        assert answer.field_meta["milk"]["agent"] == "local"
        # the commands come after the load's answer
        await agent.client.wait_for(lambda u: u.session_update == "available_commands_update")

        openai.enqueue({"text": "and it takes no arguments"})
        result = await agent.say(sid, "thanks! and then?")
        assert result.stop_reason == "end_turn"
        # history reached the model: the LSP turn is in the ACP turn's request
        sent = [m.get("content") for m in openai.requests[-1]["messages"]]
        assert "greet() returns hello." in sent

    lsp = await harness.start()
    detail = await request(lsp, "milk/session/get", {"sessionId": sid})
    texts = [t["text"] for t in detail["turns"]]
    assert texts == [
        "what does greet return?",
        "greet() returns hello.",
        "thanks! and then?",
        "and it takes no arguments",
    ]
    assert detail["session"]["turnCount"] == 2


async def test_load_refuses_another_folder_naming_both(env: Env, openai: FakeOpenAIServer) -> None:
    other = env.root / "other"
    other.mkdir()
    async with start_agent(env) as agent:
        sid = await agent.new_session(env.workspace)
        openai.enqueue({"text": "hello"})
        await agent.say(sid, "hi")
        before = len(agent.client.updates)
        with pytest.raises(RequestError) as refused:
            await agent.conn.load_session(cwd=str(other), session_id=sid, mcp_servers=[])
        assert refused.value.code == -32602
        assert refused.value.data == {
            "reason": "workspace_mismatch",
            "field": "cwd",
            "cwd": str(other),
            "workspaceFolder": str(env.workspace),
        }
        assert str(env.workspace) in str(refused.value) and str(other) in str(refused.value)
        assert agent.client.updates[before:] == []  # nothing replayed
        # the same folder by another path (a symlink to it) is the same folder
        link = env.root / "link"
        link.symlink_to(env.workspace)
        loaded = await agent.conn.load_session(cwd=str(link), session_id=sid, mcp_servers=[])
        assert loaded.modes is not None


async def test_list_pages_and_filters_by_folder(env: Env, openai: FakeOpenAIServer) -> None:
    other = env.root / "other"
    other.mkdir()
    async with start_agent(env) as agent:
        mine = await agent.new_session(env.workspace)
        theirs = await agent.new_session(other)
        everything = await agent.conn.list_sessions()
        assert {s.session_id for s in everything.sessions} == {mine, theirs}
        assert everything.next_cursor is None
        only_mine = await agent.conn.list_sessions(cwd=str(env.workspace))
        assert [s.session_id for s in only_mine.sessions] == [mine]
