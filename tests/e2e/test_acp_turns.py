"""`milk-lsp acp` driven by the ACP SDK's own client (Python `ClientSideConnection`): the
lifecycle, a streamed local turn, tool calls with diffs and permission questions, client
buffers, modes and commands, cancel, and bad input."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from acp import RequestError
from acp.schema import EmbeddedResourceContentBlock, ResourceContentBlock, TextResourceContents

from tests.e2e.acp_harness import RecordingClient, start_agent
from tests.e2e.conftest import Env
from tests.fakes.openai_server import FakeOpenAIServer

pytestmark = pytest.mark.e2e


async def test_initialize_new_session_and_a_streamed_local_turn(
    env: Env, openai: FakeOpenAIServer
) -> None:
    async with start_agent(env) as agent:
        caps = agent.init.agent_capabilities
        assert agent.init.protocol_version == 1
        assert caps.load_session is True
        assert caps.prompt_capabilities.embedded_context is True
        assert caps.prompt_capabilities.image is False
        assert caps.session_capabilities.list is not None
        assert agent.init.auth_methods == []

        new = await agent.conn.new_session(cwd=str(env.workspace), mcp_servers=[])
        assert new.modes.current_mode_id == "auto"
        assert [m.id for m in new.modes.available_modes] == ["auto", "local", "claude", "advise"]
        commands = await agent.client.wait_for(
            lambda u: u.session_update == "available_commands_update"
        )
        assert [c.name for c in commands.available_commands] == [
            "escalate",
            "local",
            "advise",
            "context",
            "undo",
        ]

        reply = "The greeting function returns hello. " * 3
        openai.enqueue({"text": reply, "chunk_chars": 5})
        # (small talk: a question about the code answered without a tool call would get
        # milk's look-first nudge; tests/test_local_watch.py covers that)
        result = await agent.say(new.session_id, "tell me something nice")
        assert result.stop_reason == "end_turn"
        assert result.field_meta["milk"]["agent"] == "local"
        chunks = agent.client.of_kind("agent_message_chunk", new.session_id)
        assert len(chunks) > 3  # streamed, not one block
        assert agent.client.text(new.session_id, agent="local") == reply
        assert all(c.field_meta["milk"]["kind"] == "text" for c in chunks)
        seqs = [c.field_meta["milk"]["seq"] for c in chunks]
        assert seqs == sorted(seqs)
        # the window of a model server milk does not run is not known: no "used of 0"
        assert agent.client.of_kind("usage_update", new.session_id) == []
        assert result.usage is not None and result.usage.output_tokens > 0
        # the turn opens with the answer, not a thought echoing the prompt as the goal
        assert agent.client.of_kind("agent_thought_chunk", new.session_id) == []
        # the model got the user's message
        assert "tell me something nice" in openai.requests[-1]["messages"][-1]["content"]


EDIT = {
    "name": "edit_file",
    "arguments": {"path": "hello.py", "old_text": "'hello'", "new_text": "'hi'"},
}
DISK = "def greet():\n    return 'hello'\n"
UNSAVED = "def greet():\n    return 'hello'  # typed in the editor, not saved\n"


def call_updates(client: RecordingClient, session_id: str) -> list:
    return [
        u
        for u in client.of_kind("tool_call", session_id)
        + client.of_kind("tool_call_update", session_id)
    ]


async def test_an_edit_shows_its_diff_asks_and_goes_through_the_editor_buffer(
    env: Env, openai: FakeOpenAIServer
) -> None:
    client = RecordingClient(permission_answers=["allow_once"])
    target = str(env.workspace / "hello.py")
    client.buffers[target] = UNSAVED
    async with start_agent(env, client) as agent:
        sid = await agent.new_session(env.workspace)
        openai.enqueue({"tool_calls": [EDIT]}, {"text": "Renamed the greeting."})
        result = await agent.say(sid, "say hi instead")
        assert result.stop_reason == "end_turn"

        [start] = client.of_kind("tool_call", sid)
        assert (start.title, start.kind, start.status) == ("Edit hello.py", "edit", "pending")
        assert start.locations[0].path == target
        [diff] = [c for c in start.content if c.type == "diff"]
        assert (diff.path, diff.old_text, diff.new_text) == (target, "'hello'", "'hi'")
        assert start.raw_input == EDIT["arguments"]

        [asked] = client.permission_requests
        assert [(o["optionId"], o["name"], o["kind"]) for o in asked["options"]] == [
            ("allow_once", "Allow once", "allow_once"),
            ("allow_session", "Allow for this session", "allow_always"),
            ("deny", "Deny", "reject_once"),
        ]
        call = asked["toolCall"]
        assert call["toolCallId"] == start.tool_call_id
        assert any(c["type"] == "diff" and c["newText"] == "'hi'" for c in call["content"])
        assert any(
            c["type"] == "content" and "Edit hello.py" in c["content"]["text"]
            for c in call["content"]
        )

        # read through the client before the question, written back through it after
        assert client.reads == [target]
        assert client.writes == [(target, UNSAVED.replace("'hello'", "'hi'"))]
        assert (env.workspace / "hello.py").read_text() == DISK  # the disk is the editor's job
        last = call_updates(client, sid)[-1]
        assert last.raw_output["isError"] is False
        assert "in the editor" in last.raw_output["output"]
        statuses = [u.status for u in client.of_kind("tool_call_update", sid) if u.status]
        assert statuses == ["in_progress", "completed"]  # allowed, then done: never back
        assert client.text(sid) == "Renamed the greeting."


async def test_a_denied_edit_changes_nothing(env: Env, openai: FakeOpenAIServer) -> None:
    client = RecordingClient(permission_answers=["deny"])
    async with start_agent(env, client) as agent:
        sid = await agent.new_session(env.workspace)
        openai.enqueue({"tool_calls": [EDIT]}, {"text": "Left it as it is."})
        result = await agent.say(sid, "say hi instead")
        assert result.stop_reason == "end_turn"
        assert len(client.permission_requests) == 1
        assert client.writes == []
        assert (env.workspace / "hello.py").read_text() == DISK
        final = [u for u in client.of_kind("tool_call_update", sid) if u.status]
        assert final[-1].status == "failed"
        assert final[-1].field_meta["milk"]["status"] == "denied"
        tool_message = openai.requests[-1]["messages"][-1]
        assert tool_message["role"] == "tool" and "denied" in tool_message["content"].lower()


async def test_cancel_while_the_question_is_open(env: Env, openai: FakeOpenAIServer) -> None:
    client = RecordingClient(permission_answers=["hang"])
    async with start_agent(env, client) as agent:
        sid = await agent.new_session(env.workspace)
        openai.enqueue({"tool_calls": [EDIT]}, {"text": "should not be asked for"})
        turn = asyncio.create_task(agent.say(sid, "say hi instead"))
        await asyncio.wait_for(client.question_open.wait(), 20)
        await agent.conn.cancel(session_id=sid)
        # the next prompt, sent at once, waits for the cancelled turn instead of failing
        openai.enqueue({"text": "still here"})
        following = asyncio.create_task(agent.say(sid, "hello?"))
        result = await asyncio.wait_for(turn, 20)
        assert result.stop_reason == "cancelled"
        assert (await asyncio.wait_for(following, 20)).stop_reason == "end_turn"
        client.release.set()  # the client answers `cancelled`, as ACP asks, after the fact
        assert (env.workspace / "hello.py").read_text() == DISK
        assert client.writes == []
        assert len(openai.requests) == 2  # the edit's follow-up never reached the model
        assert openai.requests[1]["messages"][-1]["content"].endswith("\n\nhello?")
        denied = [
            u
            for u in client.of_kind("tool_call_update", sid)
            if u.status and u.field_meta["milk"].get("status") == "denied"
        ]
        assert denied


async def test_without_client_file_system_the_edit_goes_to_disk(
    env: Env, openai: FakeOpenAIServer
) -> None:
    client = RecordingClient(permission_answers=["allow_once"])
    async with start_agent(env, client, fs=False) as agent:
        sid = await agent.new_session(env.workspace)
        openai.enqueue({"tool_calls": [EDIT]}, {"text": "done"})
        assert (await agent.say(sid, "say hi")).stop_reason == "end_turn"
        assert client.reads == [] and client.writes == []
        assert (env.workspace / "hello.py").read_text() == DISK.replace("'hello'", "'hi'")


async def test_an_edit_the_client_saves_is_not_called_unsaved(
    env: Env, openai: FakeOpenAIServer
) -> None:
    client = RecordingClient(permission_answers=["allow_once"], save_writes=True)
    target = env.workspace / "hello.py"
    client.buffers[str(target)] = DISK
    async with start_agent(env, client) as agent:
        sid = await agent.new_session(env.workspace)
        openai.enqueue({"tool_calls": [EDIT]}, {"text": "Renamed the greeting."})
        assert (await agent.say(sid, "say hi instead")).stop_reason == "end_turn"
        assert client.writes == [(str(target), DISK.replace("'hello'", "'hi'"))]
        assert target.read_text() == DISK.replace("'hello'", "'hi'")
        [output] = [u.raw_output["output"] for u in call_updates(client, sid) if u.raw_output]
        # the client wrote it to disk: not "not saved yet"
        assert output == "Edited hello.py: lines 2-2."
        # and the turn's change is on disk, so /undo puts the file back
        before = len(client.updates)
        await agent.say(sid, "/undo")
        assert "Undone: `hello.py`" in _shown_text(agent, before)
        assert target.read_text() == DISK


async def test_an_edit_the_editor_refuses_fails_the_turn_with_an_error_naming_it(
    env: Env, openai: FakeOpenAIServer
) -> None:
    """A refused write is a failed edit, which (with no Claude to hand over to) fails the
    turn: the prompt's answer is a JSON-RPC error carrying milk's reason and the turn id."""
    client = RecordingClient(permission_answers=["allow_once"], refuse_writes=True)
    target = str(env.workspace / "hello.py")
    client.buffers[target] = UNSAVED
    async with start_agent(env, client) as agent:
        sid = await agent.new_session(env.workspace)
        openai.enqueue({"tool_calls": [EDIT]}, {"text": "could not"})
        with pytest.raises(RequestError) as failed:
            await agent.say(sid, "say hi")
        assert failed.value.code == -32603
        assert "rejected the edit of hello.py: the buffer is read-only" in str(failed.value)
        assert failed.value.data["reason"] == "local_failed"
        assert failed.value.data["turnId"]
        assert (env.workspace / "hello.py").read_text() == DISK
        final = [u for u in client.of_kind("tool_call_update", sid) if u.status]
        assert final[-1].status == "failed"


async def test_read_file_of_any_file_reads_the_editor_buffer_through_the_client(
    env: Env, openai: FakeOpenAIServer
) -> None:
    """A file the prompt never mentioned: the local agent's read_file asks the client
    (fs/read_text_file) and gets the unsaved text, not the disk."""
    client = RecordingClient()
    (env.workspace / "notes.md").write_text("on disk\n")
    notes = str(env.workspace / "notes.md")
    client.buffers[notes] = "TODO: unsaved note\n"
    async with start_agent(env, client) as agent:
        sid = await agent.new_session(env.workspace)
        openai.enqueue(
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.md"}}]},
            {"text": "seen"},
        )
        result = await agent.say(sid, "read my notes")
        assert result.stop_reason == "end_turn"
        assert notes in client.reads
        tool_message = openai.requests[1]["messages"][-1]
        assert tool_message["role"] == "tool"
        assert "TODO: unsaved note" in tool_message["content"]
        assert "on disk" not in tool_message["content"]


async def test_mentioned_files_reach_the_model_with_the_editor_text(
    env: Env, openai: FakeOpenAIServer
) -> None:
    client = RecordingClient()
    (env.workspace / "notes.md").write_text("on disk\n")
    notes, hello = str(env.workspace / "notes.md"), str(env.workspace / "hello.py")
    client.buffers[notes] = "TODO: unsaved note\n"
    async with start_agent(env, client) as agent:
        sid = await agent.new_session(env.workspace)
        openai.enqueue(
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "hello.py"}}]},
            {"text": "seen"},
        )
        embedded = EmbeddedResourceContentBlock(
            type="resource",
            resource=TextResourceContents(uri=Path(hello).as_uri(), text=UNSAVED),
        )
        link = ResourceContentBlock(type="resource_link", name="notes.md", uri=Path(notes).as_uri())
        result = await agent.say(sid, "compare", embedded, link)
        assert result.stop_reason == "end_turn"
        sent = openai.requests[0]["messages"][-1]["content"]
        assert "compare @hello.py @notes.md" in sent
        assert "typed in the editor, not saved" in sent  # the embedded text
        assert "TODO: unsaved note" in sent and "on disk" not in sent  # read through the client
        assert client.reads == [notes]
        # the local agent's read_file sees the embedded (editor) text, not the disk
        tool_message = openai.requests[1]["messages"][-1]
        assert tool_message["role"] == "tool" and "not saved" in tool_message["content"]
        [user] = [
            u
            for u in (await _replayed(agent, env, sid))
            if u.session_update == "user_message_chunk"
        ]
        assert user.content.text == "compare @hello.py @notes.md"  # what the user typed


async def _replayed(agent, env: Env, sid: str) -> list:
    before = len(agent.client.updates)
    await agent.conn.load_session(cwd=str(env.workspace), session_id=sid, mcp_servers=[])
    return [u for s, u in agent.client.updates[before:] if s == sid]


async def test_modes_route_turns_and_set_mode_checks_the_mode(
    env: Env, openai: FakeOpenAIServer
) -> None:
    async with start_agent(env) as agent:
        sid = await agent.new_session(env.workspace)
        openai.enqueue({"text": "auto answer"}, {"text": "local answer"})
        await agent.say(sid, "one")
        assert "escalate_to_claude" in _tool_names(openai.requests[-1])
        await agent.conn.set_session_mode(session_id=sid, mode_id="local")
        await agent.say(sid, "two")
        assert "escalate_to_claude" not in _tool_names(openai.requests[-1])
        with pytest.raises(RequestError) as bad:
            await agent.conn.set_session_mode(session_id=sid, mode_id="turbo")
        assert bad.value.code == -32602 and "modeId" in str(bad.value)


def _tool_names(request: dict) -> list[str]:
    return [tool["function"]["name"] for tool in request.get("tools", [])]


async def test_commands_context_new_and_local(env: Env, openai: FakeOpenAIServer) -> None:
    async with start_agent(env) as agent:
        sid = await agent.new_session(env.workspace)
        openai.enqueue({"tool_calls": [{"name": "read_file", "arguments": {"path": "hello.py"}}]})
        openai.enqueue({"text": "had a look"})
        await agent.say(sid, "look at hello.py")

        preview = await agent.conn.ext_method("milk/context", {"sessionId": sid})
        before = len(agent.client.updates)
        result = await agent.say(sid, "/context")
        assert result.stop_reason == "end_turn"
        shown = "".join(
            u.content.text
            for _, u in agent.client.updates[before:]
            if u.session_update == "agent_message_chunk"
        )
        assert preview["contextFile"] in shown and "What Claude would receive" in shown
        assert len(openai.requests) == 2  # no turn ran (after the read and the answer)

        result = await agent.say(sid, "/local")
        assert result.stop_reason == "end_turn"
        [mode] = agent.client.of_kind("current_mode_update", sid)
        assert mode.current_mode_id == "local"

        # `/new` does not re-point this chat at another session: it says where one comes from
        before = len(agent.client.updates)
        result = await agent.say(sid, "/new second thread")
        assert result.stop_reason == "end_turn"
        assert "start a new chat" in _shown_text(agent, before) and sid in _shown_text(
            agent, before
        )
        openai.enqueue({"text": "same session"})
        await agent.say(sid, "and one more")
        listed = await agent.conn.list_sessions(cwd=str(env.workspace))
        assert [s.session_id for s in listed.sessions] == [sid]
        # the chat reloads with everything said in it
        said = [
            u for u in await _replayed(agent, env, sid) if u.session_update == "user_message_chunk"
        ]
        assert [u.content.text for u in said] == ["look at hello.py", "and one more"]


async def test_cancel_mid_stream_stops_the_model_request(
    env: Env, openai: FakeOpenAIServer
) -> None:
    async with start_agent(env) as agent:
        sid = await agent.new_session(env.workspace)
        openai.enqueue({"text": "partial answer that never ends", "stall": 30, "stall_after": 3})
        turn = asyncio.create_task(agent.say(sid, "long question"))
        await agent.client.wait_for(lambda u: u.session_update == "agent_message_chunk")
        with pytest.raises(RequestError) as busy:
            await agent.say(sid, "and another thing")
        assert busy.value.code == -32603 and busy.value.data["reason"] == "session_busy"
        await agent.conn.cancel(session_id=sid)
        result = await asyncio.wait_for(turn, 10)
        assert result.stop_reason == "cancelled"
        assert openai.wait_for_disconnects(1)  # the stream to the model was closed
        replayed = await _replayed(agent, env, sid)
        statuses = {u.field_meta["milk"]["status"] for u in replayed}
        assert statuses == {"cancelled"}  # stored, marked cancelled
        assert any(u.session_update == "agent_message_chunk" for u in replayed)  # text kept


async def test_extensions_status_and_context(env: Env, openai: FakeOpenAIServer) -> None:
    async with start_agent(env) as agent:
        status = await agent.conn.ext_method("milk/status", {})
        assert status["local"]["reachable"] is True
        assert status["storage"] == str(env.storage / "sessions.sqlite3")
        assert status["claude"]["found"] is False
        assert status["settingsProblems"] == []
        with pytest.raises(RequestError) as missing:
            await agent.conn.ext_method("milk/context", {})
        assert missing.value.code == -32602 and "sessionId" in str(missing.value)
        with pytest.raises(RequestError) as unknown:
            await agent.conn.ext_method("milk/context", {"sessionId": "nope"})
        assert unknown.value.code == -32602 and unknown.value.data["reason"] == "session_not_found"
        with pytest.raises(RequestError) as other:
            await agent.conn.ext_method("milk/nothing", {})
        assert other.value.code == -32601


async def test_the_end_of_the_input_ends_the_running_turn_and_the_agent(
    env: Env, openai: FakeOpenAIServer
) -> None:
    async with start_agent(env) as agent:
        sid = await agent.new_session(env.workspace)
        openai.enqueue({"text": "a long answer", "stall": 30, "stall_after": 2})
        turn = asyncio.create_task(agent.say(sid, "take your time"))
        await agent.client.wait_for(lambda u: u.session_update == "agent_message_chunk")
        assert agent.process.stdin is not None
        agent.process.stdin.close()  # the editor went away
        assert await asyncio.wait_for(agent.process.wait(), 15) == 0
        assert openai.wait_for_disconnects(1)
        turn.cancel()
    async with start_agent(env) as again:
        replayed = await _replayed(again, env, sid)
        assert {u.field_meta["milk"]["status"] for u in replayed} == {"cancelled"}


def _shown_text(agent, since: int) -> str:
    return "".join(
        u.content.text
        for _, u in agent.client.updates[since:]
        if u.session_update == "agent_message_chunk"
    )


async def test_undo_command_and_turn_extensions(env: Env, openai: FakeOpenAIServer) -> None:
    client = RecordingClient(permission_answers=["allow_once"])
    async with start_agent(env, client, fs=False) as agent:
        sid = await agent.new_session(env.workspace)
        before = len(agent.client.updates)
        assert (await agent.say(sid, "/undo")).stop_reason == "end_turn"
        assert "Nothing to undo" in _shown_text(agent, before)
        openai.enqueue({"tool_calls": [EDIT]}, {"text": "done"})
        result = await agent.say(sid, "say hi")
        turn_id = result.field_meta["milk"]["turnId"]
        hello = env.workspace / "hello.py"
        assert hello.read_text() == DISK.replace("'hello'", "'hi'")
        listed = await agent.conn.ext_method(
            "milk/turn/changes", {"sessionId": sid, "turnId": turn_id}
        )
        assert listed["changes"][0]["uri"] == hello.as_uri()
        assert listed["changes"][0]["before"] == DISK
        # changed since: /undo says so and how to force it; /undo force puts it back
        hello.write_text("mine\n")
        before = len(agent.client.updates)
        await agent.say(sid, "/undo")
        assert "Not undone" in _shown_text(agent, before) and "/undo force" in _shown_text(
            agent, before
        )
        assert hello.read_text() == "mine\n"
        before = len(agent.client.updates)
        await agent.say(sid, "/undo force")
        assert "Undone: `hello.py`" in _shown_text(agent, before)
        assert hello.read_text() == DISK
        undone = await agent.conn.ext_method(
            "milk/turn/undo", {"sessionId": sid, "turnId": turn_id}
        )
        assert undone == {"restored": []}
        with pytest.raises(RequestError) as bad:
            await agent.conn.ext_method("milk/turn/undo", {"sessionId": sid})
        assert "turnId" in str(bad.value)
