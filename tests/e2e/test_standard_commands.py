"""End to end: the `milk.*` commands of `workspace/executeCommand`, as an editor without
milk's plugin sends them, against the real server and the scripted model server."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from milk_lsp.lsp.standard.commands import COMMANDS
from tests.e2e.conftest import Env, request
from tests.e2e.standard_editor import Editor, Editors, capabilities
from tests.fakes.openai_server import FakeOpenAIServer

pytestmark = pytest.mark.e2e


def read_with_mode(path: Path) -> tuple[str, int]:
    return path.read_text(), stat.S_IMODE(path.stat().st_mode)


async def finished(editor: Editor, started: dict[str, Any]) -> dict[str, Any]:
    return await editor.turn_ended(started["turnId"])


async def test_the_commands_and_code_action_kinds_are_announced(editors: Editors) -> None:
    editor = await editors.start()
    assert editor.init_result is not None
    server = editor.init_result.capabilities
    assert list(server.execute_command_provider.commands) == list(COMMANDS)
    assert set(server.code_action_provider.code_action_kinds) == {
        "quickfix.milk",
        "refactor.milk",
        "source.milk",
    }
    assert server.text_document_sync.open_close is True


async def test_ask_answers_at_once_and_the_turn_streams_on(
    editors: Editors, env: Env, openai: FakeOpenAIServer
) -> None:
    editor = await editors.start()
    openai.enqueue({"text": "A slow answer, " * 10, "chunk_chars": 5, "delay": 0.05})
    started = await editor.command("milk.ask", "tell me slowly")
    assert set(started) == {"sessionId", "turnId"}
    kinds = [u["kind"] for u in editor.updates if u["turnId"] == started["turnId"]]
    assert kinds[0] == "turn_started" and "turn_ended" not in kinds  # still running
    ended = await finished(editor, started)
    assert ended["stopReason"] == "end_turn"
    # milk/update notifications went out as for milk/chat; progress said what it did
    assert any(u["kind"] == "text" for u in editor.updates)
    assert "answering…" in editor.progress_messages()
    got = await request(editor, "milk/session/get", {"sessionId": started["sessionId"]})
    assert got["turns"][0]["text"] == "tell me slowly"


async def test_ask_with_a_range_attaches_the_selection(
    editors: Editors, env: Env, openai: FakeOpenAIServer
) -> None:
    editor = await editors.start()
    openai.enqueue({"text": "It returns hello."})
    hello = (env.workspace / "hello.py").as_uri()
    selection = {"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 18}}
    started = await editor.command(
        "milk.ask", {"text": "what does this return?", "uri": hello, "range": selection}
    )
    await finished(editor, started)
    sent = openai.requests[0]["messages"][-1]["content"]
    assert sent.startswith("what does this return?\n\nAttached hello.py (lines 2-2):\n")
    assert "return 'hello'" in sent and "def greet" not in sent


async def test_cancel_stops_the_running_turn(
    editors: Editors, env: Env, openai: FakeOpenAIServer
) -> None:
    editor = await editors.start()
    assert await editor.command("milk.cancel") == {"cancelled": False}
    openai.enqueue({"text": "never finished", "stall": 30})
    started = await editor.command("milk.ask", "take your time")
    with pytest.raises(JsonRpcException, match="still running a turn") as busy:
        await editor.command("milk.ask", "and this too")
    assert busy.value.code == -32803
    assert await editor.command("milk.cancel") == {"cancelled": True}
    ended = await finished(editor, started)
    assert ended["stopReason"] == "cancelled"
    assert openai.wait_for_disconnects(1)
    assert not [m for m in editor.messages if m.type == types.MessageType.Error]


async def test_new_and_switch_session(editors: Editors, env: Env, openai: FakeOpenAIServer) -> None:
    editor = await editors.start()
    first = await editor.command("milk.ask", "in the first session")
    await finished(editor, first)
    info = await editor.command("milk.newSession", "Second one")
    assert info["title"] == "Second one" and info["sessionId"] != first["sessionId"]
    shown = [d for d in editor.shown_documents if d.take_focus][-1]  # not a reveal of turn 1
    assert shown.uri.endswith(f"/{info['sessionId']}.md")
    second = await editor.command("milk.ask", "in the second")
    assert second["sessionId"] == info["sessionId"]
    await finished(editor, second)
    switched = await editor.command("milk.switchSession", first["sessionId"])
    assert switched["sessionId"] == first["sessionId"]
    again = await editor.command("milk.ask", "back in the first")
    assert again["sessionId"] == first["sessionId"]
    await finished(editor, again)
    # without an id, milk asks which, with the titles
    editor.message_answers.append(None)
    assert await editor.command("milk.switchSession") is None
    titles = [a.title for a in editor.message_requests[-1].actions or []]
    assert titles[0].startswith("in the first session") and titles[0].endswith("(current)")
    assert titles[1].startswith("Second one")
    editor.message_answers.append(titles[1])
    chosen = await editor.command("milk.switchSession")
    assert chosen["sessionId"] == info["sessionId"]
    with pytest.raises(JsonRpcException, match="no session with id") as unknown:
        await editor.command("milk.switchSession", "no-such-session")
    assert unknown.value.code == -32803


async def test_show_context_opens_a_read_only_preview(
    editors: Editors, env: Env, openai: FakeOpenAIServer
) -> None:
    editor = await editors.start()
    started = await editor.command("milk.ask", "remember this")
    await finished(editor, started)
    preview = await editor.command("milk.showContext")
    assert preview["mode"] == "first" and "remember this" in preview["contextFile"]
    path = Path(preview["uri"].removeprefix("file://"))
    assert [d for d in editor.shown_documents if d.take_focus][-1].uri == preview["uri"]
    text, mode = read_with_mode(path)
    assert text.startswith("# What Claude would get now") and "remember this" in text
    assert mode == 0o444
    assert not str(path).startswith(str(env.workspace))


async def test_status_is_shown_and_returned(editors: Editors, env: Env, openai) -> None:
    editor = await editors.start()
    status = await editor.command("milk.status")
    assert status["local"]["baseUrl"] == openai.base_url and status["local"]["reachable"]
    [shown] = [m for m in editor.messages if "milk-lsp" in m.message]
    assert f"local model server reachable at {openai.base_url}" in shown.message
    assert "claude" in shown.message
    assert shown.type == types.MessageType.Warning  # Claude Code is missing here: a problem


@pytest.mark.parametrize(
    ("command", "arguments", "named"),
    [
        ("milk.ask", [5], "arguments[0]: expected the question"),
        ("milk.ask", [{"text": ""}], "arguments[0].text: the question is empty"),
        (
            "milk.ask",
            [{"text": "x", "uri": "file:///a.py", "range": {"start": {}}}],
            "arguments[0].range.start.line",
        ),
        ("milk.send", ["text"], "arguments[0]: expected {uri}"),
        ("milk.escalate", [{"text": "x"}], "arguments[0] (text): expected a string"),
        ("milk.cancel", ["now"], "arguments: expected no arguments"),
        ("milk.newSession", [7], "arguments[0] (title): expected a string"),
        ("milk.switchSession", [["a"]], "arguments[0] (sessionId): expected a string"),
        ("milk.showContext", [1], "arguments: expected no arguments"),
        ("milk.status", [1, 2], "arguments: expected no arguments"),
        ("milk.undo", [{"force": "yes"}], "arguments[0].force: expected true or false"),
        ("milk.openTranscript", ["x"], "arguments: expected no arguments"),
        ("milk.askSelection", [], "arguments: expected one object"),
        ("milk.explainDiagnostic", [{"uri": "file:///a.py"}], "arguments[0].diagnostic"),
        (
            "milk.fixDiagnostic",
            [{"uri": "file:///a.py", "diagnostic": {"message": "m"}}],
            "arguments[0].diagnostic.range: required",
        ),
        ("milk.handToClaude", [{"range": {}}], "arguments[0].uri: required"),
        ("milk.nope", [], "'milk.nope' is not defined"),
    ],
)
async def test_bad_arguments_answer_invalid_params_naming_the_argument(
    editors: Editors, openai, command: str, arguments: list[Any], named: str
) -> None:
    editor = await editors.start()
    with pytest.raises(JsonRpcException) as error:
        await editor.command(command, *arguments)
    assert error.value.code == -32602
    assert named in str(error.value)
    assert openai.requests == []  # nothing ran


async def test_a_failed_turn_tells_the_user_what_to_do(editors: Editors, env: Env) -> None:
    env.settings["local"]["baseUrl"] = "http://127.0.0.1:9/v1"  # nothing listens there
    env.settings["local"]["handOff"] = "off"
    editor = await editors.start()
    started = await editor.command("milk.ask", "hello?")
    ended = await finished(editor, started)
    assert ended["stopReason"] == "error"
    await editor.until(lambda: any(m.type == types.MessageType.Error for m in editor.messages))
    [shown] = [m for m in editor.messages if m.type == types.MessageType.Error]
    assert shown.message.startswith("milk: the turn failed: no local model reachable at")
    assert "start Ollama/llama-server or set" in shown.message  # what to do
    uri = editor.shown_documents[0].uri
    await editor.until(lambda: "**Failed:**" in editor.buffers[uri].text)
    assert "start Ollama/llama-server or set" in editor.buffers[uri].text


async def test_progress_carries_the_streamed_status(
    editors: Editors, env: Env, openai: FakeOpenAIServer
) -> None:
    editor = await editors.start()
    openai.enqueue(
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "hello.py"}}]},
        {"text": "It greets. " * 300, "chunk_chars": 1, "delay": 0.0005, "stall": 0.5},
    )
    started = await editor.command("milk.ask", "what does greet do?")
    await finished(editor, started)

    def ended() -> bool:  # the end follows `turn_ended`
        return any(
            isinstance(r, types.WorkDoneProgressEnd)
            for reports in editor.progress_reports.values()
            for r in reports
        )

    await editor.until(ended)
    [reports] = [r for r in editor.progress_reports.values() if r]
    assert isinstance(reports[0], types.WorkDoneProgressBegin)
    assert reports[0].title == "milk: local"
    assert isinstance(reports[-1], types.WorkDoneProgressEnd)
    messages = editor.progress_messages()
    assert messages.index("reading hello.py") < messages.index("answering…")
    assert len(messages) < 20  # 3,300 text deltas, a handful of reports


async def test_settings_come_from_initialization_options_and_workspace_configuration(
    editors: Editors, env: Env, openai: FakeOpenAIServer
) -> None:
    wrong = {**env.settings, "local": {**env.settings["local"], "baseUrl": "http://127.0.0.1:9/v1"}}
    # workspace/configuration wins over initializationOptions
    editor = await editors.start(
        settings=wrong, workspace_config={"local": {"baseUrl": openai.base_url}}
    )
    status = await editor.command("milk.status")
    assert status["local"]["baseUrl"] == openai.base_url
    started = await editor.command("milk.ask", "hi")
    assert (await finished(editor, started))["stopReason"] == "end_turn"
    await editors.stop(editor)
    # a client without workspace/configuration: initializationOptions are the settings
    editor = await editors.start(capabilities(configuration=False), settings=wrong)
    status = await editor.command("milk.status")
    assert status["local"]["baseUrl"] == "http://127.0.0.1:9/v1"
    assert status["storage"] == str(env.storage / "sessions.sqlite3")


async def test_undo_puts_the_last_turns_changes_back(
    editors: Editors, env: Env, openai: FakeOpenAIServer
) -> None:
    editor = await editors.start()
    with pytest.raises(JsonRpcException, match="no session here"):
        await editor.command("milk.undo")
    editor.message_answers.append("Allow once")  # the edit's permission question
    hello = env.workspace / "hello.py"
    before = hello.read_text()
    edit = {"path": "hello.py", "old_text": "'hello'", "new_text": "'bonjour'"}
    openai.enqueue({"tool_calls": [{"name": "edit_file", "arguments": edit}]}, {"text": "Done."})
    started = await editor.command("milk.ask", "say bonjour instead")
    await finished(editor, started)
    assert "bonjour" in hello.read_text()
    assert "hello.py" in editor.message_requests[0].message  # the question shows the edit
    undone = await editor.command("milk.undo")
    assert undone == {"restored": [hello.as_uri()], "turnId": started["turnId"]}
    assert hello.read_text() == before
    with pytest.raises(JsonRpcException, match="no turn of the current session changed"):
        await editor.command("milk.undo")  # nothing left to undo
    assert await editor.command("milk.undo", started["turnId"]) == {
        "restored": [],
        "turnId": started["turnId"],
    }
    uri = editor.shown_documents[0].uri
    await editor.until(lambda: f"Undid turn `{started['turnId']}`" in editor.buffers[uri].text)


async def test_undoing_an_edit_of_an_open_buffer_says_to_reload_it(
    editors: Editors, env: Env, openai: FakeOpenAIServer
) -> None:
    """Issue 31 (plain Neovim, eglot): the edit went to the open buffer through
    workspace/applyEdit, and the undo puts the buffer back to the file's text; standard LSP
    cannot mark a buffer unmodified, so the message says to reload it."""
    editor = await editors.start()
    hello = env.workspace / "hello.py"
    editor.open(hello)
    editor.message_answers.append("Allow once")
    edit = {"path": "hello.py", "old_text": "'hello'", "new_text": "'bonjour'"}
    openai.enqueue({"tool_calls": [{"name": "edit_file", "arguments": edit}]}, {"text": "Done."})
    started = await editor.command("milk.ask", "say bonjour instead")
    await finished(editor, started)
    assert "bonjour" in editor.buffers[hello.as_uri()].text
    await editor.command("milk.undo")
    await editor.until(lambda: "bonjour" not in editor.buffers[hello.as_uri()].text)
    said = [m.message for m in editor.messages if m.message.startswith("milk: undid")]
    assert said == [
        "milk: undid the turn's changes (1 file restored). hello.py: the editor's text is the"
        " file's again but may still be marked modified; reload it from disk (Neovim :edit,"
        " Emacs revert-buffer)"
    ]
