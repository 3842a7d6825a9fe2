"""End to end: local turns through the real server against the scripted model server."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.e2e.conftest import Env, Harness, MilkClient, request
from tests.fakes.openai_server import FakeOpenAIServer

pytestmark = pytest.mark.e2e


async def new_session(client: MilkClient, env: Env) -> str:
    info = await request(
        client, "milk/session/new", {"workspaceFolder": env.workspace.as_uri(), "title": "t"}
    )
    return info["sessionId"]


async def nonce_of(client: MilkClient, session_id: str) -> str:
    preview = await request(client, "milk/context", {"sessionId": session_id})
    match = re.search(r"milk:need:([a-z0-9]+)", preview["contextFile"])
    assert match, preview["contextFile"]
    return match.group(1)


def assert_turn_shape(client: MilkClient, turn_id: str) -> list[dict]:
    updates = client.turn_updates(turn_id)
    assert [u["seq"] for u in updates] == list(range(1, len(updates) + 1))
    kinds = [u["kind"] for u in updates]
    assert kinds[0] == "turn_started"
    assert kinds[-1] == "turn_ended"
    assert kinds.count("turn_started") == 1
    assert kinds.count("turn_ended") == 1
    return updates


async def test_plain_turn_streams_and_is_stored(client: MilkClient, env: Env, openai) -> None:
    openai.enqueue({"text": "Hello from the local model.", "chunk_chars": 4})
    result = await request(client, "milk/chat", {"text": "hi there"})
    assert result["stopReason"] == "end_turn"
    assert result["agent"] == "local"
    assert result["text"] == "Hello from the local model."
    updates = assert_turn_shape(client, result["turnId"])
    deltas = [u["delta"] for u in updates if u["kind"] == "text"]
    assert len(deltas) > 1
    assert "".join(deltas) == result["text"]
    assert updates[0]["agent"] == "local"
    assert updates[0]["reason"] == "default"
    assert any(u["kind"] == "usage" for u in updates)
    # the model got the system prompt, and the user's text followed by the session notes
    # (the tag instructions with the nonce: never in the cached system prompt)
    sent = openai.requests[-1]["messages"]
    assert sent[0]["role"] == "system" and "milk:need:" not in sent[0]["content"]
    assert sent[-1]["role"] == "user"
    # no tag instructions by default (small models echo them): the request as typed, and
    # milk took the goal from it
    assert sent[-1]["content"] == "hi there"
    assert [u["currentNeed"] for u in updates if u["kind"] == "need"] == ["hi there"]
    # work-done progress: begin and end for the turn
    kinds = [type(p).__name__ for reports in client.progress_reports.values() for p in reports]
    assert "WorkDoneProgressBegin" in kinds and "WorkDoneProgressEnd" in kinds
    got = await request(client, "milk/session/get", {"sessionId": result["sessionId"]})
    assert [(t["role"], t["text"], t["status"]) for t in got["turns"]] == [
        ("user", "hi there", "ok"),
        ("assistant", "Hello from the local model.", "ok"),
    ]
    assert got["session"]["turnCount"] == 1
    assert got["bricks"]["lastLocalSummary"] == (
        "User: hi there\nAssistant (local): Hello from the local model.\n"
    )


async def test_multi_round_tools_collapse_and_cut_in_bricks(
    client: MilkClient, env: Env, openai: FakeOpenAIServer
) -> None:
    (env.workspace / "big.txt").write_text("x" * 900)
    read = {"name": "read_file", "arguments": {"path": "hello.py"}}
    openai.enqueue(
        {"tool_calls": [read]},
        {"tool_calls": [read], "style": "ollama"},
        {"tool_calls": [read], "style": "repeat_names"},
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "big.txt"}}]},
        {"text": "`greet` returns `'hello'`."},
    )
    # route local: the same call three times is not cut short (on auto it is a hand-off)
    result = await request(
        client, "milk/chat", {"text": "what does greet return?", "route": "local"}
    )
    assert result["stopReason"] == "end_turn", result
    updates = assert_turn_shape(client, result["turnId"])
    results = [u for u in updates if u["kind"] == "tool_result"]
    assert len(results) == 4
    assert "return 'hello'" in results[0]["output"]
    calls = [u for u in updates if u["kind"] == "tool_call" and u["status"] == "completed"]
    assert {c["toolCallId"] for c in calls} == {r["toolCallId"] for r in results}
    got = await request(client, "milk/session/get", {"sessionId": result["sessionId"]})
    assistant = got["turns"][-1]
    assert len(assistant["toolCalls"]) == 4
    brick = got["bricks"]["lastLocalSummary"]
    assert brick.count("[Tool: read_file]") == 2
    assert "  [2 more read_file calls collapsed]\n" in brick
    assert "\n... (truncated)" in brick
    # the answer, then the sources milk checked (the code it quotes, found in hello.py)
    assert "Assistant (local): `greet` returns `'hello'`.\n" in brick, brick[-200:]
    assert brick.endswith("Sources (checked by milk):\n- hello.py:2\n"), brick[-200:]


async def test_need_tag_split_across_chunks(harness: Harness, env: Env, openai) -> None:
    env.settings["local"]["memoryTags"] = True  # the model writes the goal itself
    client = await harness.start()
    session_id = await new_session(client, env)
    nonce = await nonce_of(client, session_id)
    text = f"On it.<milk:need:{nonce}>make greet polite</milk:need:{nonce}> Done."
    for size in (1, 3, 7):
        openai.enqueue({"text": text, "chunk_chars": size})
        result = await request(client, "milk/chat", {"sessionId": session_id, "text": "go"})
        assert result["text"] == "On it. Done."
        updates = client.turn_updates(result["turnId"])
        assert "".join(u["delta"] for u in updates if u["kind"] == "text") == "On it. Done."
    needs = [u for u in client.updates if u["kind"] == "need"]
    assert [n["currentNeed"] for n in needs] == ["make greet polite"]  # last value wins, once
    got = await request(client, "milk/session/get", {"sessionId": session_id})
    assert got["bricks"]["currentNeed"] == "make greet polite"
    assert got["session"]["currentNeed"] == "make greet polite"
    assert all("milk:need" not in t["text"] for t in got["turns"])
    # a tag with another nonce is left alone
    openai.enqueue({"text": "<milk:need:zzzzzz>other</milk:need:zzzzzz>"})
    result = await request(client, "milk/chat", {"sessionId": session_id, "text": "go"})
    assert result["text"] == "<milk:need:zzzzzz>other</milk:need:zzzzzz>"


async def test_percept_tags_are_remembered_per_workspace(
    client: MilkClient, env: Env, openai
) -> None:
    session_id = await new_session(client, env)
    nonce = await nonce_of(client, session_id)
    fact = f"<milk:percept:{nonce}>The user prefers tabs.</milk:percept:{nonce}>"
    openai.enqueue({"text": f"Noted.{fact}"}, {"text": f"Again.{fact}"})
    await request(client, "milk/chat", {"sessionId": session_id, "text": "I like tabs"})
    await request(client, "milk/chat", {"sessionId": session_id, "text": "tabs!"})
    preview = await request(client, "milk/context", {"sessionId": session_id})
    assert preview["contextFile"].count("- The user prefers tabs.") == 1
    other = await new_session(client, env)
    preview = await request(client, "milk/context", {"sessionId": other})
    assert "The user prefers tabs." in preview["contextFile"]


@pytest.mark.parametrize("answer", ["allow_once", "deny"])
async def test_command_permission_round_trip(
    client: MilkClient, env: Env, openai, answer: str
) -> None:
    client.permission_answers.append(answer)
    openai.enqueue(
        {"tool_calls": [{"name": "run_command", "arguments": {"command": "echo milk-ran"}}]},
        {"text": "finished"},
    )
    result = await request(client, "milk/chat", {"text": "run it"})
    assert result["stopReason"] == "end_turn"
    [asked] = client.permission_requests
    assert asked["tool"] == "run_command"
    assert asked["agent"] == "local"
    assert [o["optionId"] for o in asked["options"]] == ["allow_once", "allow_session", "deny"]
    updates = client.turn_updates(result["turnId"])
    calls = [u for u in updates if u["kind"] == "tool_call"]
    assert asked["toolCallId"] == calls[0]["toolCallId"]
    outputs = [u["output"] for u in updates if u["kind"] == "tool_result"]
    if answer == "allow_once":
        assert "milk-ran" in outputs[0]
    else:
        assert calls[-1]["status"] == "denied"
        assert "milk-ran" not in outputs[0]
        tool_message = openai.requests[-1]["messages"][-1]
        assert tool_message["role"] == "tool" and "denied" in tool_message["content"]


async def test_allow_for_session_is_not_asked_again(client: MilkClient, env: Env, openai) -> None:
    client.permission_answers.append("allow_session")
    cmd = {"tool_calls": [{"name": "run_command", "arguments": {"command": "echo one"}}]}
    openai.enqueue(cmd, {"text": "a"}, cmd, {"text": "b"})
    first = await request(client, "milk/chat", {"text": "run"})
    await request(client, "milk/chat", {"sessionId": first["sessionId"], "text": "again"})
    assert len(client.permission_requests) == 1


async def test_show_message_request_fallback(harness: Harness, env: Env, openai) -> None:
    client = await harness.start(milk_permission=False)
    client.message_answers.append("Allow once")
    openai.enqueue(
        {"tool_calls": [{"name": "run_command", "arguments": {"command": "echo fallback"}}]},
        {"text": "ok"},
    )
    result = await request(client, "milk/chat", {"text": "run"})
    [asked] = client.message_requests
    assert [a.title for a in asked.actions] == ["Allow once", "Allow for this session", "Deny"]
    assert asked.type == types.MessageType.Warning
    outputs = [
        u["output"] for u in client.turn_updates(result["turnId"]) if u["kind"] == "tool_result"
    ]
    assert "fallback" in outputs[0]
    # dismissed (null) means deny
    openai.enqueue(
        {"tool_calls": [{"name": "run_command", "arguments": {"command": "echo no"}}]},
        {"text": "ok"},
    )
    result = await request(client, "milk/chat", {"text": "run"})
    statuses = [
        u.get("status") for u in client.turn_updates(result["turnId"]) if u["kind"] == "tool_call"
    ]
    assert "denied" in statuses


@pytest.mark.parametrize("applied", [True, False])
async def test_edit_of_open_file_goes_through_apply_edit(
    client: MilkClient, env: Env, openai, applied: bool
) -> None:
    client.apply_edits = applied
    uri = (env.workspace / "hello.py").as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri,
                language_id="python",
                version=1,
                text="def greet():\n    return 'hello (unsaved)'\n",
            )
        )
    )
    client.permission_answers.append("allow_once")
    openai.enqueue(
        {
            "tool_calls": [
                {
                    "name": "edit_file",
                    "arguments": {
                        "path": "hello.py",
                        "old_text": "hello (unsaved)",
                        "new_text": "hi",
                    },
                }
            ]
        },
        {"text": "edited"},
    )
    result = await request(client, "milk/chat", {"text": "edit"})
    # a refused edit the model then claims as done is no quiet success: failed_edit
    assert result["stopReason"] == ("end_turn" if applied else "error"), result
    if not applied:
        assert result["error"]["data"]["signal"] == "failed_edit"
    [edit] = client.applied_edits
    [change] = edit.edit.changes[uri]
    assert change.new_text == "def greet():\n    return 'hi'\n"
    # the file on disk is never touched: the editor holds the (unsaved) change, or refused it
    assert (env.workspace / "hello.py").read_text() == "def greet():\n    return 'hello'\n"
    [outcome] = [u for u in client.turn_updates(result["turnId"]) if u["kind"] == "tool_result"]
    assert outcome["isError"] is (not applied)
    if not applied:
        assert "read-only" in outcome["output"]


async def test_restart_finds_the_session_and_bricks(harness: Harness, env: Env, openai) -> None:
    client = await harness.start()
    openai.enqueue({"text": "first answer"})
    first = await request(client, "milk/chat", {"text": "first question"})
    before = await request(client, "milk/session/get", {"sessionId": first["sessionId"]})
    await harness.stop(client)
    client = await harness.start()
    listed = await request(client, "milk/session/list", {})
    assert [s["sessionId"] for s in listed["sessions"]] == [first["sessionId"]]
    after = await request(client, "milk/session/get", {"sessionId": first["sessionId"]})
    assert after["turns"] == before["turns"]
    assert after["bricks"] == before["bricks"]
    # with no sessionId, chat continues the most recent session of the folder
    openai.enqueue({"text": "second answer"})
    second = await request(client, "milk/chat", {"text": "second question"})
    assert second["sessionId"] == first["sessionId"]
    history = openai.requests[-1]["messages"]
    assert {"role": "user", "content": "first question"} in history
    assert {"role": "assistant", "content": "first answer"} in history


FAILURES = [
    pytest.param({"status": 500, "body": "boom"}, "local_failed", "500", id="http-500"),
    pytest.param({"stall": 30}, "local_failed", "read timeout", id="stall"),
    pytest.param({"text": "partial answer here", "cut_after": 3}, "local_failed", "", id="dropped"),
    pytest.param({"malformed": True}, "local_failed", "malformed", id="malformed-sse"),
]


@pytest.mark.parametrize(("script", "reason", "needle"), FAILURES)
async def test_model_server_failures_end_the_turn(
    harness: Harness, env: Env, openai, script, reason, needle
) -> None:
    settings = {**env.settings, "local": {**env.settings["local"], "requestTimeoutSeconds": 1}}
    client = await harness.start(settings=settings)
    openai.enqueue(script)
    result = await request(client, "milk/chat", {"text": "hello"})
    assert result["stopReason"] == "error"
    assert result["error"]["reason"] == reason
    assert needle.lower() in result["error"]["message"].lower()
    updates = assert_turn_shape(client, result["turnId"])
    notices = [u for u in updates if u["kind"] == "notice" and u["severity"] == "error"]
    assert notices and notices[-1]["message"] == result["error"]["message"]
    assert updates[-1]["stopReason"] == "error"
    # the session is intact and the next turn works
    openai.enqueue({"text": "fine again"})
    after = await request(client, "milk/chat", {"sessionId": result["sessionId"], "text": "retry"})
    assert after["stopReason"] == "end_turn"
    got = await request(client, "milk/session/get", {"sessionId": result["sessionId"]})
    assert [t["status"] for t in got["turns"]][-2:] == ["ok", "ok"]
    assert got["turns"][0]["status"] == "error"


async def test_refused_connection_is_local_unreachable(harness: Harness, env: Env) -> None:
    settings = {**env.settings, "local": {"baseUrl": "http://127.0.0.1:9/v1", "model": "m"}}
    client = await harness.start(settings=settings)
    result = await request(client, "milk/chat", {"text": "hello"})
    assert result["stopReason"] == "error"
    assert result["error"]["reason"] == "local_unreachable"
    assert "127.0.0.1:9" in result["error"]["message"]
    status = await request(client, "milk/status", {})
    assert status["local"]["reachable"] is False and status["local"]["error"]


async def test_cancel_stops_the_stream(client: MilkClient, env: Env, openai) -> None:
    openai.enqueue({"text": "slow " * 200, "chunk_chars": 5, "delay": 0.05})
    session_id = await new_session(client, env)
    chat = asyncio.ensure_future(
        request(client, "milk/chat", {"sessionId": session_id, "text": "go"})
    )
    await client.wait_for_update(lambda u: u["kind"] == "text")
    busy = await asyncio.gather(
        request(client, "milk/chat", {"sessionId": session_id, "text": "again"}),
        return_exceptions=True,
    )
    assert isinstance(busy[0], JsonRpcException)
    assert busy[0].data == {"reason": "session_busy"}
    assert await request(client, "milk/cancel", {"sessionId": session_id}) == {"cancelled": True}
    result = await chat
    assert result["stopReason"] == "cancelled"
    assert result["text"]  # the partial text is kept
    updates = assert_turn_shape(client, result["turnId"])
    assert updates[-1]["stopReason"] == "cancelled"
    assert openai.wait_for_disconnects(1, timeout=5)
    assert await request(client, "milk/cancel", {"sessionId": session_id}) == {"cancelled": False}
    got = await request(client, "milk/session/get", {"sessionId": session_id})
    assert [t["status"] for t in got["turns"]] == ["cancelled", "cancelled"]


async def test_cancel_request_answers_request_cancelled(
    client: MilkClient, env: Env, openai
) -> None:
    openai.enqueue({"stall": 30})
    session_id = await new_session(client, env)
    chat = asyncio.ensure_future(
        request(client, "milk/chat", {"sessionId": session_id, "text": "go"}, msg_id=4242)
    )
    await client.wait_for_update(lambda u: u["kind"] == "turn_started")
    for _ in range(100):  # the model request is open before we cancel it
        if openai.open_streams:
            break
        await asyncio.sleep(0.05)
    client.cancel_request(types.CancelParams(id=4242))
    with pytest.raises(JsonRpcException) as caught:
        await chat
    assert caught.value.code == -32800
    ended = [u for u in client.updates if u["kind"] == "turn_ended"]
    assert ended and ended[-1]["stopReason"] == "cancelled"
    assert openai.wait_for_disconnects(1, timeout=5)
    openai.enqueue({"text": "next"})
    result = await request(client, "milk/chat", {"sessionId": session_id, "text": "again"})
    assert result["stopReason"] == "end_turn"


async def test_unknown_session_is_an_error(client: MilkClient) -> None:
    with pytest.raises(JsonRpcException) as caught:
        await request(client, "milk/chat", {"sessionId": "nope", "text": "hi"})
    assert caught.value.code == -32803
    assert caught.value.data == {"reason": "session_not_found"}


BAD_PARAMS = [
    ("milk/session/new", {"title": 5}, "title"),
    ("milk/session/list", {"workspaceFolder": 3}, "workspaceFolder"),
    ("milk/session/get", {"sessionId": "x", "limit": "many"}, "limit"),
    ("milk/session/get", {}, "sessionId"),
    ("milk/session/delete", {"sessionId": 7}, "sessionId"),
    ("milk/chat", {"route": "local"}, "text"),
    ("milk/chat", {"text": "hi", "route": "sideways"}, "route"),
    ("milk/chat", {"text": "hi", "context": [{"range": {}}]}, "context.0.uri"),
    ("milk/escalate", {"text": "hi"}, "sessionId"),
    ("milk/cancel", {}, "sessionId"),
    ("milk/context", {"sessionId": None}, "sessionId"),
    ("milk/chat", [1, 2], "params"),
]


async def test_malformed_params_name_the_field(client: MilkClient, openai) -> None:
    for method, params, field in BAD_PARAMS:
        with pytest.raises(JsonRpcException) as caught:
            await request(client, method, params)
        assert caught.value.code == -32602, (method, params)
        assert field in str(caught.value), (method, str(caught.value))
    openai.enqueue({"text": "still serving"})
    result = await request(client, "milk/chat", {"text": "hi"})
    assert result["text"] == "still serving"


async def test_invalid_setting_is_reported_and_default_kept(
    harness: Harness, env: Env, openai
) -> None:
    settings = {
        **env.settings,
        "local": {**env.settings["local"], "maxToolRounds": "lots"},
        "bogus": 1,
    }
    client = await harness.start(settings=settings)
    await asyncio.sleep(0.2)
    shown = [m.message for m in client.messages]
    assert any("local.maxToolRounds" in m for m in shown), shown
    logged = [m.message for m in client.log_messages]
    assert any("bogus" in m for m in logged), logged
    openai.enqueue({"text": "works"})
    result = await request(client, "milk/chat", {"text": "hi"})
    assert result["stopReason"] == "end_turn"


async def test_workspace_configuration_overrides_initialization_options(
    harness: Harness, env: Env, openai
) -> None:
    with FakeOpenAIServer() as other:
        other.enqueue({"text": "from the other server"})
        client = await harness.start(workspace_config={"local": {"baseUrl": other.base_url}})
        await asyncio.sleep(0.3)
        result = await request(client, "milk/chat", {"text": "hi"})
        assert result["text"] == "from the other server"
        # didChangeConfiguration pulls again
        client.set_configuration({"local": {"baseUrl": openai.base_url}}, section="milk")
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
        await asyncio.sleep(0.3)
        openai.enqueue({"text": "back to the first"})
        result = await request(client, "milk/chat", {"text": "hi"})
        assert result["text"] == "back to the first"


async def test_sessions_new_list_delete(client: MilkClient, env: Env) -> None:
    a = await new_session(client, env)
    b = await new_session(client, env)
    listed = await request(client, "milk/session/list", {"workspaceFolder": env.workspace.as_uri()})
    assert {s["sessionId"] for s in listed["sessions"]} == {a, b}
    assert {s["workspaceFolder"] for s in listed["sessions"]} == {env.workspace.resolve().as_uri()}
    assert await request(client, "milk/session/delete", {"sessionId": a}) is None
    listed = await request(client, "milk/session/list", {})
    assert [s["sessionId"] for s in listed["sessions"]] == [b]
    with pytest.raises(JsonRpcException) as caught:
        await request(client, "milk/session/get", {"sessionId": a})
    assert caught.value.data == {"reason": "session_not_found"}
    with pytest.raises(JsonRpcException) as caught:
        await request(client, "milk/session/new", {"workspaceFolder": "file:///no/such/dir"})
    assert caught.value.data == {"reason": "workspace_unknown"}


async def test_initialize_advertises_protocol_version(harness: Harness) -> None:
    client = await harness.start()
    assert client.init_result is not None
    assert client.init_result.capabilities.experimental == {"milk": {"protocolVersion": 1}}
    status = await request(client, "milk/status", {})
    assert status["version"]
    assert status["storage"].endswith("sessions.sqlite3")
    assert status["claude"]["found"] is False
    assert "claude.path" in status["claude"]["error"]


async def test_cancel_before_progress_is_accepted(client: MilkClient, env: Env, openai) -> None:
    """A cancel that lands while the server still waits for the progress token."""
    client.progress_create_delay = 1.0
    openai.enqueue({"stall": 30})
    session_id = await new_session(client, env)
    chat = asyncio.ensure_future(
        request(client, "milk/chat", {"sessionId": session_id, "text": "go"})
    )
    await client.wait_for_update(lambda u: u["kind"] == "turn_started")
    assert await request(client, "milk/cancel", {"sessionId": session_id}) == {"cancelled": True}
    result = await chat
    assert result["stopReason"] == "cancelled"
    assert_turn_shape(client, result["turnId"])
    await asyncio.sleep(1.5)  # the late answer to the progress request arrives
    assert [m.message for m in client.messages] == []
    assert openai.pending() == 1  # the model was never asked
    openai.set_script([{"text": "next"}])
    client.progress_create_delay = 0.0
    result = await request(client, "milk/chat", {"sessionId": session_id, "text": "again"})
    assert result["stopReason"] == "end_turn"


async def test_cancel_while_a_local_permission_question_is_open(
    client: MilkClient, env: Env, openai
) -> None:
    client.permission_answers.append("hang")
    openai.enqueue(
        {"tool_calls": [{"name": "run_command", "arguments": {"command": "touch never.txt"}}]},
        {"text": "should not be asked"},
    )
    session_id = await new_session(client, env)
    chat = asyncio.ensure_future(
        request(client, "milk/chat", {"sessionId": session_id, "text": "go"})
    )
    await client.wait_for_update(lambda u: u["kind"] == "tool_call" and u["status"] == "pending")
    assert await request(client, "milk/cancel", {"sessionId": session_id}) == {"cancelled": True}
    result = await chat
    assert result["stopReason"] == "cancelled"
    statuses = [
        u["status"] for u in client.turn_updates(result["turnId"]) if u["kind"] == "tool_call"
    ]
    assert statuses[-1] == "denied"
    assert "pending" in statuses
    assert not (env.workspace / "never.txt").exists()
    assert len(openai.requests) == 1  # the model was not asked again


async def test_two_servers_on_one_session(harness: Harness, env: Env, openai) -> None:
    """Two editor windows on one folder: a session runs one turn at a time across processes."""
    first = await harness.start()
    second = await harness.start()
    session_id = await new_session(first, env)
    openai.enqueue({"stall": 30})
    chat = asyncio.ensure_future(
        request(first, "milk/chat", {"sessionId": session_id, "text": "a"})
    )
    await first.wait_for_update(lambda u: u["kind"] == "turn_started")
    with pytest.raises(JsonRpcException) as caught:
        await request(second, "milk/chat", {"sessionId": session_id, "text": "b"})
    assert caught.value.data == {"reason": "session_busy"}
    assert "another milk-lsp process" in str(caught.value)
    await request(first, "milk/cancel", {"sessionId": session_id})
    assert (await chat)["stopReason"] == "cancelled"
    openai.set_script([{"text": "from the second window"}])
    result = await request(second, "milk/chat", {"sessionId": session_id, "text": "b"})
    assert result["text"] == "from the second window"
    got = await request(first, "milk/session/get", {"sessionId": session_id})
    assert [t["text"] for t in got["turns"]] == ["a", "b", "from the second window"]


async def test_the_cacheable_prefix_is_the_same_bytes_across_sessions_and_turns(
    client: MilkClient, env: Env, openai, tmp_path: Path
) -> None:
    """System prompt and tool specs are identical for every session of every workspace, and
    a later turn's request starts with the earlier one's history: the model server's prefix
    cache holds, for a new workspace's first turn too."""
    openai.enqueue({"text": "one"}, {"text": "two"}, {"text": "three"}, {"text": "four"})
    first = await request(client, "milk/session/new", {"workspaceFolder": env.workspace.as_uri()})
    second = await request(client, "milk/session/new", {"workspaceFolder": env.workspace.as_uri()})
    await request(client, "milk/chat", {"sessionId": first["sessionId"], "text": "hi"})
    await request(client, "milk/chat", {"sessionId": first["sessionId"], "text": "and then?"})
    await request(client, "milk/chat", {"sessionId": second["sessionId"], "text": "hi"})
    other = tmp_path / "other-workspace"
    other.mkdir()
    await request(client, "milk/chat", {"workspaceFolder": other.as_uri(), "text": "hi"})
    a1, a2, b1, c1 = openai.requests[-4:]

    def prefix(body: dict[str, Any]) -> str:
        return json.dumps([body["messages"][0], body["tools"]])

    assert prefix(a1) == prefix(a2) == prefix(b1) == prefix(c1)
    assert str(env.workspace) not in json.dumps(a1) and str(other) not in json.dumps(c1)
    assert a2["messages"][-1]["content"] == (
        "(milk notes, not from the user: the current goal is: hi)\n\nand then?"
    )
    # turn two re-sends turn one's user text (without its notes) and answer as history
    assert a2["messages"][1:3] == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "one"},
    ]
    assert a1["messages"][1]["content"] == "hi"
