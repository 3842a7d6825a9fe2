"""End to end: milk's code actions (offered only where they fit, each running its command),
and escalation from a plain LSP editor to the real Claude Code CLI on the API stand-in."""

from __future__ import annotations

from typing import Any

import pytest
from lsprotocol import types

from milk_lsp.agents.claude.cli import bundled_cli_path
from milk_lsp.lsp.standard.transcript import split_document
from tests.e2e.conftest import Env
from tests.e2e.standard_editor import Editor, Editors, capabilities
from tests.fakes.anthropic_api import FakeAnthropicAPI, user_text
from tests.fakes.openai_server import FakeOpenAIServer

pytestmark = pytest.mark.e2e

SELECTION = types.Range(
    start=types.Position(line=1, character=4), end=types.Position(line=1, character=18)
)
CURSOR = types.Range(
    start=types.Position(line=0, character=2), end=types.Position(line=0, character=2)
)
DIAGNOSTIC = types.Diagnostic(
    range=types.Range(
        start=types.Position(line=1, character=11), end=types.Position(line=1, character=18)
    ),
    message="greet should return a greeting with a name",
    source="lint-o-matic",
    code="G001",
    severity=types.DiagnosticSeverity.Warning,
)


async def actions(
    editor: Editor,
    uri: str,
    range_: types.Range,
    diagnostics: list[types.Diagnostic] | None = None,
    only: list[str] | None = None,
) -> list[Any]:
    result = await editor.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=range_,
            context=types.CodeActionContext(diagnostics=diagnostics or [], only=only),
        )
    )
    return list(result or [])


def titles(found: list[Any]) -> list[str]:
    return [action.title for action in found]


async def run(editor: Editor, action: types.CodeAction) -> dict[str, Any]:
    assert action.command is not None and action.edit is None  # a command, never an edit
    started = await editor.command(action.command.command, *(action.command.arguments or []))
    await editor.turn_ended(started["turnId"])
    return started


async def test_actions_are_offered_only_where_they_fit(
    editors: Editors, env: Env, openai: FakeOpenAIServer
) -> None:
    editor = await editors.start()
    hello = env.workspace / "hello.py"
    editor.open(hello)
    uri = hello.as_uri()
    assert titles(await actions(editor, uri, SELECTION)) == [
        "milk: Ask about this selection",
        "milk: Hand this to Claude",
    ]
    # at the cursor, the whole file, as a source action (VS Code shows no light bulb for it)
    assert titles(await actions(editor, uri, CURSOR)) == ["milk: Hand this file to Claude"]
    found = await actions(editor, uri, CURSOR, [DIAGNOSTIC])
    assert titles(found) == [
        "milk: Explain this diagnostic",
        "milk: Fix this diagnostic",
        "milk: Hand this file to Claude",
    ]
    assert [a.kind for a in found] == ["quickfix.milk", "quickfix.milk", "source.milk"]
    other = types.Diagnostic(range=DIAGNOSTIC.range, message="unused variable")
    assert titles(await actions(editor, uri, CURSOR, [DIAGNOSTIC, other]))[2:4] == [
        "milk: Explain this diagnostic: unused variable",
        "milk: Fix this diagnostic: unused variable",
    ]
    assert titles(await actions(editor, uri, SELECTION, [DIAGNOSTIC], only=["quickfix"])) == [
        "milk: Explain this diagnostic",
        "milk: Fix this diagnostic",
    ]
    assert (
        await actions(editor, uri, SELECTION, [DIAGNOSTIC], only=["source.organizeImports"]) == []
    )
    assert await actions(editor, "untitled:Untitled-1", SELECTION) == []
    notes = env.workspace / "transcripts" / "notes.md"  # a file of the user's, not milk's
    notes.parent.mkdir()
    notes.write_text("# notes\n\ndef greet(): pass\n")
    editor.open(notes)
    assert titles(await actions(editor, notes.as_uri(), SELECTION)) == [
        "milk: Ask about this selection",
        "milk: Hand this to Claude",
    ]
    assert openai.requests == []  # cheap: no model call until one is chosen
    # the transcript: "Send" only in the question area, and only with a question there
    opened = await editor.command("milk.openTranscript")
    transcript = opened["uri"]
    await editor.until(lambda: transcript in editor.buffers)
    lines = editor.buffers[transcript].text.split("\n")
    below = types.Position(line=len(lines) - 1, character=0)
    in_area = types.Range(start=below, end=below)
    top = types.Range(
        start=types.Position(line=0, character=0), end=types.Position(line=0, character=3)
    )
    assert await actions(editor, transcript, in_area) == []  # nothing typed yet
    editor.type_at(transcript, len(editor.buffers[transcript].text), "why is the sky blue?")
    [send] = await actions(editor, transcript, in_area)
    assert (send.title, send.kind) == ("milk: Send", "source.milk")
    assert await actions(editor, transcript, top) == []  # not above the marker
    openai.enqueue({"text": "Rayleigh scattering."})
    await run(editor, send)
    assert openai.requests[0]["messages"][-1]["content"] == "why is the sky blue?"
    await editor.until(lambda: "Rayleigh" in editor.buffers[transcript].text)
    assert split_document(editor.buffers[transcript].text)[1] == ""  # type: ignore[index]


async def test_ask_about_a_selection(editors: Editors, env: Env, openai: FakeOpenAIServer) -> None:
    editor = await editors.start()
    hello = env.workspace / "hello.py"
    editor.open(hello)
    [ask, _] = await actions(editor, hello.as_uri(), SELECTION)
    assert ask.command.arguments[0]["text"] == "return 'hello'"
    openai.enqueue({"text": "It returns the string hello."})
    await run(editor, ask)
    sent = openai.requests[0]["messages"][-1]["content"]
    assert sent.startswith("Explain this code.\n\nAttached hello.py (lines 2-2):\n")
    assert "return 'hello'" in sent
    # with a question typed in the transcript's question area, that is the question
    uri = editor.shown_documents[0].uri
    await editor.until(lambda: "It returns the string" in editor.buffers[uri].text)
    # the transcript says what the question was about (the model got the text itself)
    assert "Explain this code.\n\n> about `hello.py`, line 2\n" in editor.buffers[uri].text
    editor.type_at(uri, len(editor.buffers[uri].text), "Is this polite enough?")
    openai.enqueue({"text": "Quite."})
    before = len(openai.requests)
    await run(editor, ask)
    sent = openai.requests[before]["messages"][-1]["content"]
    assert "Is this polite enough?\n\nAttached hello.py (lines 2-2):\n" in sent
    await editor.until(lambda: "Quite." in editor.buffers[uri].text)
    assert split_document(editor.buffers[uri].text)[1] == ""  # type: ignore[index]


@pytest.mark.parametrize("fix", [False, True])
async def test_explain_and_fix_a_diagnostic(
    editors: Editors, env: Env, openai: FakeOpenAIServer, fix: bool
) -> None:
    editor = await editors.start()
    hello = env.workspace / "hello.py"
    editor.open(hello)
    explain, fix_it, _ = await actions(editor, hello.as_uri(), CURSOR, [DIAGNOSTIC])
    openai.enqueue({"text": "About that warning."})
    await run(editor, fix_it if fix else explain)
    sent = openai.requests[0]["messages"][-1]["content"]
    assert sent.startswith(
        "The warning from lint-o-matic (G001) at hello.py line 2, column 12 says:\n\n"
        "greet should return a greeting with a name\n\n"
    )
    wanted = "Fix it: change the file" if fix else "Do not change any file."
    assert wanted in sent
    assert "Attached hello.py (lines 1-2):\n```\ndef greet():\n    return 'hello'\n" in sent


async def test_a_client_without_code_action_literals_gets_commands(
    editors: Editors, env: Env, openai: FakeOpenAIServer
) -> None:
    editor = await editors.start(capabilities(code_action_literals=False))
    found = await actions(editor, (env.workspace / "hello.py").as_uri(), CURSOR)
    assert [type(item) for item in found] == [types.Command]
    assert (found[0].title, found[0].command) == (
        "milk: Hand this file to Claude",
        "milk.handToClaude",
    )


# ---- Claude ---------------------------------------------------------------------------------


@pytest.mark.claude
@pytest.mark.skipif(bundled_cli_path() is None, reason="claude-agent-sdk's bundled CLI is missing")
async def test_escalate_and_hand_to_claude_from_a_plain_editor(
    editors: Editors, claude_env: Env, api: FakeAnthropicAPI, openai: FakeOpenAIServer
) -> None:
    env = claude_env
    editor = await editors.start()
    openai.enqueue({"text": "local looked."})
    first = await editor.command("milk.ask", "look at greet")
    await editor.turn_ended(first["turnId"])
    api.enqueue({"text": "Claude took over.", "chunk_chars": 4})
    escalated = await editor.command("milk.escalate", "please take it from here")
    assert escalated["sessionId"] == first["sessionId"]
    ended = await editor.turn_ended(escalated["turnId"])
    assert ended["stopReason"] == "end_turn" and ended["agent"] == "claude"
    assert user_text(api.main_requests()[-1]) == "please take it from here"
    # progress says the turn went to Claude (the throttled "sent to Claude (…)" status may be
    # replaced by "answering…" when Claude answers within its interval: latest wins)
    assert "escalating to Claude" in editor.progress_messages()
    uri = editor.shown_documents[0].uri
    await editor.until(lambda: "Claude took over." in editor.buffers[uri].text)
    text = editor.buffers[uri].text
    assert "> **Sent to Claude** with a" in text and "you asked" in text
    assert "### Claude\n\nClaude took over." in text
    # hand a selection to Claude with a code action
    hello = env.workspace / "hello.py"
    editor.open(hello)
    [_, hand] = await actions(editor, hello.as_uri(), SELECTION)
    api.enqueue({"text": "Claude read the selection."})
    started = await run(editor, hand)
    asked = user_text(api.main_requests()[-1])
    assert asked.startswith("Please look at this code and help me with it.\n\nAttached hello.py")
    assert "return 'hello'" in asked
    got = [u for u in editor.updates if u["turnId"] == started["turnId"]]
    assert got[0]["agent"] == "claude"
