"""End to end: the transcript document of a plain LSP editor (no milk plugin), kept by the
real server through `window/showDocument`, `workspace/applyEdit` and the file on disk."""

from __future__ import annotations

import asyncio
import itertools
import os
import stat
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from milk_lsp.lsp.standard.transcript import MARKER, split_document
from tests.e2e.conftest import Env, request
from tests.e2e.standard_editor import Editor, Editors, capabilities, transcript_files
from tests.fakes.openai_server import FakeOpenAIServer

pytestmark = pytest.mark.e2e


async def ask(editor: Editor, *arguments: object) -> dict:
    started = await editor.command("milk.ask", *arguments)
    await editor.turn_ended(started["turnId"])
    return started


def read(path: Path) -> str:
    return path.read_text()


def append(path: Path, text: str) -> None:
    path.write_text(path.read_text() + text)


def streamed(editor: Editor, turn_id: str) -> str:
    """The answer's text as the turn streamed it (the model may have been nudged once: its
    second reply is part of the answer)."""
    return "".join(
        u["delta"] for u in editor.updates if u["turnId"] == turn_id and u["kind"] == "text"
    )


def transcript_uri(env: Env, session_id: str) -> str:
    return (env.storage / "transcripts" / f"{session_id}.md").as_uri()


async def settled(editor: Editor, uri: str, wanted: str, seconds: float = 20.0) -> str:
    """The buffer once it holds `wanted` (the edits are batched: they arrive a bit later)."""
    await editor.until(lambda: wanted in editor.buffers[uri].text, seconds)
    return editor.buffers[uri].text


async def test_ask_opens_the_transcript_and_streams_into_it(
    editors: Editors, env: Env, openai: FakeOpenAIServer
) -> None:
    editor = await editors.start()
    answer = "Hello from the local model, slowly, so that it streams into the document."
    openai.enqueue({"text": answer, "chunk_chars": 2, "delay": 0.05})
    started = await editor.command("milk.ask", "say hello, slowly")
    uri = transcript_uri(env, started["sessionId"])
    # shown (without taking the focus) as soon as the turn began, then streamed into
    [shown] = editor.shown_documents
    assert (shown.uri, shown.take_focus) == (uri, False)
    await editor.turn_ended(started["turnId"])
    text = await settled(editor, uri, "*Done.*")
    body, question = split_document(text) or ("", "")
    assert question == ""
    assert f"<!-- turn {started['turnId']} -->\n## You · " in body
    assert f"say hello, slowly\n\n### Local model\n\n{answer}" in body
    assert editor.edit_log and not any(record.whole for record in editor.edit_log)
    # every batch appended at the end of the body, in order
    assert text.endswith(MARKER + "\n")
    # the editor's buffer is unsaved; the file on disk catches up when it is closed
    editor.close(uri)
    path = env.storage / "transcripts" / f"{started['sessionId']}.md"
    await editor.until(lambda: path.read_text() == text)


async def test_ten_thousand_deltas_arrive_whole_in_order_at_most_ten_edits_a_second(
    editors: Editors, env: Env, openai: FakeOpenAIServer
) -> None:
    editor = await editors.start()
    opened = await editor.command("milk.openTranscript")
    uri = opened["uri"]
    await editor.until(lambda: uri in editor.buffers)
    words = "".join(f"word {i}, " if i % 8 else f"line {i}.\n" for i in range(2000))
    reply = words[:10_000]
    openai.enqueue({"text": reply, "chunk_chars": 1})
    started = await editor.command("milk.ask", "count")
    await editor.turn_ended(started["turnId"])
    deltas = [u for u in editor.updates if u["kind"] == "text"]
    answer = streamed(editor, started["turnId"])
    # the first characters ("l", "li") may come as one delta: the local agent holds a reply
    # while it could still be a call written as the tool's name (`list_directory {...}`)
    assert len(deltas) >= 9_990 and answer.startswith(reply)
    text = await settled(editor, uri, "*Done.*")
    assert f"### Local model\n\n{answer}\n\n*Done.*" in text
    inserts = [r for r in editor.edit_log if r.uri == uri]
    assert not any(r.whole for r in inserts)
    times = [r.at for r in inserts]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert len(inserts) >= 3
    assert min(gaps) >= 0.08, gaps  # ≤ 10 edits per second (0.1 s apart, minus jitter)
    for start in times:
        assert sum(1 for t in times if start <= t < start + 1.0) <= 10


async def test_a_client_without_show_document_or_apply_edit_gets_the_file(
    editors: Editors, env: Env, openai: FakeOpenAIServer
) -> None:
    editor = await editors.start(capabilities(show_document=False, apply_edit=False))
    openai.enqueue(
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "hello.py"}}]},
        {"text": "It greets."},
    )
    started = await ask(editor, "what does hello.py do?")
    path = env.storage / "transcripts" / f"{started['sessionId']}.md"
    await editor.until(lambda: path.exists() and "*Done.*" in path.read_text())
    text = path.read_text()
    assert editor.shown_documents == []
    assert editor.edit_log == []
    assert '**Tool call: read_file**\n\n```json\n{\n  "path": "hello.py"\n}\n```' in text
    assert "Result:\n\n```\n" in text and "return 'hello'" in text
    assert "It greets." in text
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    # even with the document "open" in such a client, the file is what milk writes
    editor.open(path)
    openai.enqueue({"text": "Second answer."})
    await ask(editor, "again")
    await editor.until(lambda: "Second answer." in path.read_text())
    assert editor.edit_log == []
    # asked to open it, milk says where it is
    result = await editor.command("milk.openTranscript")
    assert result["uri"] == path.as_uri()
    assert any(str(path) in m.message for m in editor.messages)
    # a deleted session takes its transcript with it
    await request(editor, "milk/session/delete", {"sessionId": started["sessionId"]})
    assert not path.exists()


async def test_a_user_edit_in_the_body_is_resynchronised_keeping_the_question(
    editors: Editors, env: Env, openai: FakeOpenAIServer
) -> None:
    editor = await editors.start()
    openai.enqueue({"text": "First answer."})
    started = await ask(editor, "first")
    uri = transcript_uri(env, started["sessionId"])
    text = await settled(editor, uri, "*Done.*")
    # the user deletes a word in the body and starts a question below the marker
    at = text.index("First answer.")
    editor.type_at(uri, at, "", remove=len("First "))
    editor.type_at(uri, len(editor.buffers[uri].text), "my half-typed question")
    openai.enqueue({"text": "Second answer."})
    second = await editor.command("milk.ask", "second")
    await editor.turn_ended(second["turnId"])
    text = await settled(editor, uri, "Second answer.")
    await editor.until(lambda: editor.buffers[uri].text.count("*Done.*") == 2)
    text = editor.buffers[uri].text
    assert any(record.whole for record in editor.edit_log)
    body, question = split_document(text) or ("", "")
    assert "First answer." in body  # milk's text is back
    assert question == "my half-typed question"  # and the user's words kept
    assert body.index("First answer.") < body.index("Second answer.")


async def test_a_client_that_reports_its_edits_late_gets_no_duplicates(
    editors: Editors, env: Env, openai: FakeOpenAIServer
) -> None:
    editor = await editors.start()
    editor.echo_delay = 0.3  # answers applyEdit at once, sends didChange 0.3 s later
    reply = "".join(f"line {i}\n" for i in range(200))
    openai.enqueue({"text": reply, "chunk_chars": 5, "delay": 0.002})
    started = await ask(editor, "lines please")
    uri = transcript_uri(env, started["sessionId"])
    text = await settled(editor, uri, "*Done.*")
    assert text.count("line 199\n") == 1
    assert f"### Local model\n\n{streamed(editor, started['turnId'])}" in text
    assert not any(record.whole for record in editor.edit_log)


async def test_refused_edits_fall_back_to_the_file(
    editors: Editors, env: Env, openai: FakeOpenAIServer
) -> None:
    editor = await editors.start()
    opened = await editor.command("milk.openTranscript")
    path = Path(opened["uri"].removeprefix("file://"))
    await editor.until(lambda: opened["uri"] in editor.buffers)
    editor.refuse_edits = True
    openai.enqueue({"text": "Written on disk.", "chunk_chars": 4, "delay": 0.05})
    await ask(editor, "go")
    await editor.until(lambda: "Written on disk." in path.read_text())
    assert any("refused edits" in m.message for m in editor.log_messages)


async def test_question_area_and_send(editors: Editors, env: Env, openai: FakeOpenAIServer) -> None:
    editor = await editors.start()
    opened = await editor.command("milk.openTranscript")
    uri = opened["uri"]
    assert editor.shown_documents[0].take_focus is True
    await editor.until(lambda: uri in editor.buffers)
    # with an empty question area, there is nothing to send
    with pytest.raises(JsonRpcException, match=r"question area .* is empty"):
        await editor.command("milk.send")
    # the cursor is put on the (empty) question area's marker line: a line that exists
    line = editor.shown_documents[0].selection.start.line
    assert editor.buffers[uri].text.split("\n")[line] == MARKER
    editor.type_at(uri, len(editor.buffers[uri].text), "How do you say hello in French?\n")
    openai.enqueue({"text": "Bonjour."})
    before = len(openai.requests)
    started = await editor.command("milk.send")
    await editor.turn_ended(started["turnId"])
    text = await settled(editor, uri, "*Done.*")
    assert openai.requests[before]["messages"][-1]["content"] == "How do you say hello in French?"
    body, question = split_document(text) or ("", "")
    assert question == ""  # taken, and cleared
    assert "## You" in body and "How do you say hello in French?\n\n### Local model" in body
    # a closed transcript: the question typed into the file on disk is sent too
    editor.close(uri)
    path = Path(uri.removeprefix("file://"))
    await editor.until(lambda: "Bonjour" in path.read_text())
    append(path, "And in French?")
    openai.enqueue({"text": "Il renvoie 'hello'."})
    editor.open_on_show = False
    before = len(openai.requests)
    started = await editor.command("milk.ask")
    await editor.turn_ended(started["turnId"])
    assert openai.requests[before]["messages"][-1]["content"].endswith("\n\nAnd in French?")
    await editor.until(lambda: "Il renvoie" in path.read_text())
    split = split_document(read(path))
    assert split is not None and split[1] == ""  # taken from the file, and cleared there


async def test_history_is_rendered_when_the_transcript_is_made_later(
    editors: Editors, env: Env, openai: FakeOpenAIServer
) -> None:
    editor = await editors.start()
    openai.enqueue(
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "hello.py"}}]},
        {"text": "greet says hello."},
    )
    result = await request(editor, "milk/chat", {"text": "what does greet say?"})
    await editors.stop(editor)
    for path in transcript_files(env):  # a session from before transcripts existed
        path.unlink()
    editor = await editors.start()
    opened = await editor.command("milk.openTranscript")
    assert opened["sessionId"] == result["sessionId"]  # the newest session is current
    text = await settled(editor, opened["uri"], "*Done.*")
    assert f"<!-- turn {result['turnId']} -->" in text
    assert "what does greet say?" in text
    assert "**Tool call: read_file**" in text and "return 'hello'" in text
    assert "greet says hello." in text
    # a turn another client ran meanwhile (milk/chat) catches up in the same document
    openai.enqueue({"text": "plugin answer"})
    chat = await request(editor, "milk/chat", {"sessionId": result["sessionId"], "text": "more"})
    text = await settled(editor, opened["uri"], "plugin answer")
    assert text.count(f"<!-- turn {chat['turnId']} -->") == 1


async def test_tool_output_with_backticks_gets_a_longer_fence(
    editors: Editors, env: Env, openai: FakeOpenAIServer
) -> None:
    (env.workspace / "README.md").write_text("Run:\n\n````sh\nmake\n````\n")
    editor = await editors.start(capabilities(show_document=False))
    openai.enqueue(
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "README.md"}}]},
        {"text": "It says to run make.\n```\nunclosed fence in the answer"},
    )
    started = await ask(editor, "read the readme")
    path = env.storage / "transcripts" / f"{started['sessionId']}.md"
    await editor.until(lambda: path.exists() and "*Done.*" in path.read_text())
    text = path.read_text()
    assert "Result:\n\n`````\n" in text  # five: longer than the file's four
    # the answer's unclosed fence is closed before milk's own line
    assert "unclosed fence in the answer\n```\n\n*Done.*" in text


async def test_transcripts_live_outside_the_workspace(
    editors: Editors, env: Env, openai: FakeOpenAIServer
) -> None:
    editor = await editors.start()
    await ask(editor, "hi")
    assert transcript_files(env)
    assert not [p for p in env.workspace.rglob("*.md")]
    assert all(not str(p).startswith(str(env.workspace)) for p in transcript_files(env))
    assert os.access(transcript_files(env)[0], os.R_OK)


async def test_milk_chat_turns_keep_the_current_session_and_its_transcript(
    editors: Editors, env: Env, openai: FakeOpenAIServer
) -> None:
    editor = await editors.start()
    other = await request(editor, "milk/session/new", {"title": "plugin session"})
    openai.enqueue({"text": "from the plugin"}, {"text": "from a command"})
    await request(editor, "milk/chat", {"sessionId": other["sessionId"], "text": "plugin"})
    started = await ask(editor, "command")
    assert started["sessionId"] == other["sessionId"]  # the last one milk/chat used
    await asyncio.sleep(0)


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-32"])
async def test_positions_in_the_negotiated_encoding(
    editors: Editors, env: Env, openai: FakeOpenAIServer, encoding: str
) -> None:
    editor = await editors.start(capabilities(encodings=[encoding]))
    assert editor.encoding == encoding
    opened = await editor.command("milk.openTranscript")
    uri = opened["uri"]
    await editor.until(lambda: uri in editor.buffers)
    editor.type_at(uri, len(editor.buffers[uri].text), "Ça va? 😀 ")
    openai.enqueue({"text": "Très bien 😀 — et toi? 👍🏽", "chunk_chars": 3})
    started = await editor.command("milk.send")
    await editor.turn_ended(started["turnId"])
    text = await settled(editor, uri, "*Done.*")
    body, question = split_document(text) or ("", "")
    assert question == ""
    assert f"Ça va? 😀\n\n### Local model\n\n{streamed(editor, started['turnId'])}" in body
    assert not any(record.whole for record in editor.edit_log)
