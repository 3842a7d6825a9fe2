"""End to end, a plain LSP editor (no milk plugin) against the real server: the way back
from Claude (issue 20 item 15), the transcript following its newest text (item 16), and
permission questions: one short line in the editor, the diff and the answer in the
transcript (items 17 and 18)."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types

from milk_lsp.agents.claude.cli import bundled_cli_path
from milk_lsp.lsp.standard.transcript import MARKER, split_document
from tests.e2e.conftest import Env
from tests.e2e.standard_editor import Editor, Editors
from tests.fakes.anthropic_api import FakeAnthropicAPI, user_text
from tests.fakes.openai_server import FakeOpenAIServer

pytestmark = pytest.mark.e2e


async def ask(editor: Editor, command: str, *arguments: object) -> dict:
    started = await editor.command(command, *arguments)
    await editor.turn_ended(started["turnId"])
    return started


def agent_of(editor: Editor, turn_id: str) -> str:
    [started] = [
        u for u in editor.updates if u["turnId"] == turn_id and u["kind"] == "turn_started"
    ]
    return str(started["agent"])


def transcript(editor: Editor, env: Env, session_id: str) -> str:
    uri = (env.storage / "transcripts" / f"{session_id}.md").as_uri()
    return editor.buffers[uri].text if uri in editor.buffers else ""


async def status_line(editor: Editor) -> tuple[dict, str]:
    before = len(editor.messages)
    answer = await editor.command("milk.status")
    await editor.until(lambda: len(editor.messages) > before)
    return answer, editor.messages[-1].message


@pytest.mark.claude
@pytest.mark.skipif(bundled_cli_path() is None, reason="claude-agent-sdk's bundled CLI is missing")
async def test_after_escalate_ask_local_and_route_local_take_the_session_back(
    editors: Editors, claude_env: Env, api: FakeAnthropicAPI, openai: FakeOpenAIServer
) -> None:
    env = claude_env
    env.settings["route"] = "auto"  # the `editors` fixture's default is `local`
    env.settings["local"]["handOff"] = "off"
    editor = await editors.start()
    openai.enqueue({"text": "local looked."})
    first = await ask(editor, "milk.ask", "look at greet")
    session = first["sessionId"]
    api.enqueue({"text": "Claude took over."})
    await ask(editor, "milk.escalate", "take it from here")
    # status says where the next message goes, and the way back
    answer, said = await status_line(editor)
    assert answer["session"]["nextRoute"]["agent"] == "claude"
    assert f"next message of session {session}: Claude" in said
    assert "milk.askLocal" in said
    await editor.until(
        lambda: "Your next message goes to **Claude**" in transcript(editor, env, session)
    )
    assert "run `milk.askLocal`" in transcript(editor, env, session)
    # auto stays with Claude...
    api.enqueue({"text": "Still Claude."})
    again = await ask(editor, "milk.ask", "and now?")
    assert agent_of(editor, again["turnId"]) == "claude"
    # ...until milk.askLocal: that turn and the later auto ones go to the local model
    openai.enqueue({"text": "Local again."}, {"text": "Local after that."})
    back = await ask(editor, "milk.askLocal", "back to you")
    assert agent_of(editor, back["turnId"]) == "local"
    assert openai.requests[-1]["messages"][-1]["content"].endswith("back to you")
    later = await ask(editor, "milk.ask", "and then?")
    assert agent_of(editor, later["turnId"]) == "local"
    answer, said = await status_line(editor)
    assert answer["session"]["nextRoute"]["agent"] == "local"
    assert f"next message of session {session}: local model" in said
    await editor.until(
        lambda: "Your next message goes to the **local model**" in transcript(editor, env, session)
    )
    # milk.ask's route argument is honoured, not ignored
    api.enqueue({"text": "Claude once more."})
    await ask(editor, "milk.escalate", "once more")
    openai.enqueue({"text": "Routed local."})
    routed = await ask(editor, "milk.ask", {"text": "locally please", "route": "local"})
    assert agent_of(editor, routed["turnId"]) == "local"
    assert user_text(api.main_requests()[-1]).endswith("once more")  # Claude got nothing more


async def test_the_open_transcript_is_revealed_at_its_newest_text(
    editors: Editors, env: Env, openai: FakeOpenAIServer
) -> None:
    editor = await editors.start()
    opened = await editor.command("milk.openTranscript")
    uri = opened["uri"]
    await editor.until(lambda: uri in editor.buffers)
    focused = len(editor.shown_documents)
    answer = "A long answer that streams for a few seconds. " * 8
    openai.enqueue({"text": answer, "chunk_chars": 8, "delay": 0.05})
    started = await ask(editor, "milk.ask", "tell me at length")
    await editor.until(lambda: "*Done.*" in editor.buffers[uri].text)
    text = editor.buffers[uri].text
    last = (split_document(text) or ("", ""))[0].rstrip("\n").count("\n")
    await editor.until(
        lambda: (
            bool(editor.shown_documents[focused:])
            and editor.shown_documents[-1].selection is not None
            and editor.shown_documents[-1].selection.start.line == last
        )
    )
    reveals = editor.shown_documents[focused:]
    assert all(shown.uri == uri and shown.take_focus is False for shown in reveals)
    assert len(reveals) >= 2  # while it streamed, and at its end
    assert len(reveals) <= 8  # at most about one a second
    assert text.splitlines()[last].startswith("*Done.*")
    # while the user has a question typed in the question area, the cursor is theirs
    editor.type_at(uri, len(editor.buffers[uri].text), "my next question")
    before = len(editor.shown_documents)
    openai.enqueue({"text": "Another answer, streaming. " * 6, "chunk_chars": 8, "delay": 0.05})
    await editor.command("milk.ask", "more")
    await editor.until(lambda: editor.buffers[uri].text.count("*Done.*") == 2)
    await asyncio.sleep(1.5)
    assert editor.shown_documents[before:] == []
    assert editor.buffers[uri].text.endswith(MARKER + "\nmy next question")
    assert started["sessionId"] == opened["sessionId"]


async def test_a_permission_question_is_one_line_and_the_transcript_has_the_diff_and_answer(
    editors: Editors, env: Env, openai: FakeOpenAIServer
) -> None:
    editor = await editors.start()
    editor.message_answers.extend(["Allow once", "Deny"])
    edit = {"path": "hello.py", "old_text": "'hello'", "new_text": "'bonjour'"}
    openai.enqueue(
        {"tool_calls": [{"name": "edit_file", "arguments": edit}]},
        {"tool_calls": [{"name": "run_command", "arguments": {"command": "touch x.txt"}}]},
        {"text": "Done."},
    )
    started = await ask(editor, "milk.ask", "say bonjour")
    [edit_question, run_question] = editor.message_requests
    assert edit_question.message.startswith("--- a/hello.py\n+++ b/hello.py\n")
    assert "+    return 'bonjour'\n" in edit_question.message
    assert edit_question.message.endswith(
        "\n\nThe local model asks to edit hello.py (+1 -1) with edit_file."
    )
    assert run_question.message == "The local model asks to run `touch x.txt`."
    assert edit_question.type == types.MessageType.Warning
    uri = editor.shown_documents[0].uri
    await editor.until(lambda: "*Done.*" in editor.buffers[uri].text)
    text = editor.buffers[uri].text
    asked = text.index("> **Permission asked:** The local model asks to edit hello.py (+1 -1)")
    diff = text.index("```diff\n--- a/hello.py\n+++ b/hello.py\n", asked)
    allowed = text.index("> You answered: Allow once.", diff)
    run = text.index("> **Permission asked:** The local model asks to run `touch x.txt`.")
    denied = text.index("> You answered: Deny.", run)
    assert allowed < run < denied
    assert "-    return 'hello'\n+    return 'bonjour'" in text
    assert "Waiting for your permission" not in text
    assert "*Denied.*" not in text  # the answer says it once
    assert not (env.workspace / "x.txt").exists()
    assert started["turnId"] in text
