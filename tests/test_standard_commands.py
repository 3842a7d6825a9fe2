"""The `milk.*` commands' arguments as users type them, and which code actions are offered."""

from __future__ import annotations

from typing import Any

import pytest

from milk_lsp import wire
from milk_lsp.lsp.standard import commands as cmds
from milk_lsp.lsp.standard.questions import (
    QUESTION_MAX_CHARS,
    answer_words,
    permission_question,
)

URI = "file:///ws/a.py"
RANGE = {"start": {"line": 1, "character": 0}, "end": {"line": 2, "character": 4}}
EMPTY = {"start": {"line": 1, "character": 3}, "end": {"line": 1, "character": 3}}
DIAG = {"range": RANGE, "message": "undefined name 'x'", "source": "pyflakes", "code": "F821"}


def rng(raw: dict[str, Any]) -> wire.Range:
    return wire.Range.model_validate(raw)


def test_every_command_is_listed_once() -> None:
    assert len(set(cmds.COMMANDS)) == len(cmds.COMMANDS) == 16
    assert all(name.startswith("milk.") for name in cmds.COMMANDS)


def test_ask_arguments() -> None:
    assert cmds.parse_ask([]) == cmds.Question()
    assert cmds.parse_ask(["why?"]).text == "why?"
    asked = cmds.parse_ask([{"text": "why?", "uri": URI, "range": RANGE}])
    assert asked.text == "why?" and asked.uri == URI
    [item] = asked.context
    assert item.uri == URI and item.range == rng(RANGE) and item.text is None
    assert cmds.parse_ask([{"text": "why?"}]).context == ()
    # the route is honoured (issue 20 item 15: it was silently ignored)
    assert cmds.parse_ask([{"text": "why?", "route": "local"}]).route == "local"
    assert cmds.parse_ask([{"text": "why?"}]).route is None


@pytest.mark.parametrize(
    ("parse", "arguments", "message"),
    [
        pytest.param(
            cmds.parse_ask, [5], r"arguments\[0\]: expected the question", id="ask-number"
        ),
        pytest.param(
            cmds.parse_ask, ["  "], r"arguments\[0\]: the question is empty", id="ask-blank"
        ),
        pytest.param(cmds.parse_ask, ["a", "b"], "arguments: expected at most 1", id="ask-two"),
        pytest.param(
            cmds.parse_ask, [{"text": 3}], r"arguments\[0\].text: expected", id="ask-text"
        ),
        pytest.param(
            cmds.parse_ask,
            [{"text": "x", "range": RANGE}],
            r"arguments\[0\].uri: required with a range",
            id="ask-range-without-uri",
        ),
        pytest.param(
            cmds.parse_ask,
            [{"text": "x", "uri": URI, "range": {"start": {"line": -1, "character": 0}}}],
            r"arguments\[0\].range.start.line: Input should be greater than or equal to 0",
            id="ask-bad-range",
        ),
        pytest.param(
            cmds.parse_ask,
            [{"text": "x", "uri": URI, "range": "line 3"}],
            r"arguments\[0\].range: Input should be a valid dictionary",
            id="ask-range-string",
        ),
        pytest.param(
            cmds.parse_ask,
            [{"text": "x", "uri": URI, "range": {**RANGE, "end": {"line": 0, "character": 0}}}],
            r"arguments\[0\].range: the end comes before the start",
            id="ask-range-backwards",
        ),
        pytest.param(
            cmds.parse_ask,
            [{"text": "x\x00"}],
            r"arguments\[0\].text: contains a NUL",
            id="ask-nul",
        ),
        pytest.param(
            cmds.parse_ask,
            [{"text": "\ud800"}],
            r"arguments\[0\].text: contains",
            id="ask-surrogate",
        ),
        pytest.param(
            cmds.parse_ask,
            [{"text": "x", "route": "elsewhere"}],
            r"arguments\[0\].route: expected one of auto, local, claude",
            id="ask-bad-route",
        ),
        pytest.param(
            cmds.parse_ask,
            [{"text": "x", "agent": "local"}],
            r"arguments\[0\].agent: not an argument of milk.ask",
            id="ask-unknown-key",
        ),
        pytest.param(
            cmds.parse_send, ["text"], r"arguments\[0\]: expected \{uri\}", id="send-text"
        ),
        pytest.param(cmds.parse_send, [{}], r"arguments\[0\].uri: required", id="send-no-uri"),
        pytest.param(cmds.parse_no_arguments, [1], "arguments: expected no arguments", id="none"),
        pytest.param(
            lambda a: cmds.parse_optional_text(a, "text"),
            [{"a": 1}],
            r"arguments\[0\] \(text\): expected a string",
            id="escalate-object",
        ),
        pytest.param(
            cmds.parse_session_id,
            ["x" * 300],
            r"arguments\[0\] \(sessionId\): longer",
            id="id-long",
        ),
        pytest.param(cmds.parse_undo, [7], r"arguments\[0\]: expected a turn id", id="undo-number"),
        pytest.param(
            cmds.parse_undo,
            [{"force": "yes"}],
            r"arguments\[0\].force: expected true",
            id="undo-force",
        ),
        pytest.param(
            cmds.parse_undo,
            [{"turnId": 3}],
            r"arguments\[0\].turnId: expected a string",
            id="undo-id",
        ),
        pytest.param(
            cmds.parse_selection, [], "arguments: expected one object", id="selection-none"
        ),
        pytest.param(
            cmds.parse_selection, [{"range": RANGE}], r"arguments\[0\].uri: required", id="sel-uri"
        ),
        pytest.param(
            cmds.parse_selection,
            [{"uri": URI, "range": RANGE, "text": 5}],
            r"arguments\[0\].text: expected the selected text",
            id="selection-text",
        ),
        pytest.param(
            cmds.parse_diagnostic,
            [{"uri": URI}],
            r"arguments\[0\].diagnostic: expected an LSP Diagnostic",
            id="diagnostic-missing",
        ),
        pytest.param(
            cmds.parse_diagnostic,
            [{"uri": URI, "diagnostic": {"range": RANGE, "message": ""}}],
            r"arguments\[0\].diagnostic.message: expected a non-empty string",
            id="diagnostic-message",
        ),
        pytest.param(
            cmds.parse_diagnostic,
            [{"uri": URI, "diagnostic": {"message": "m"}}],
            r"arguments\[0\].diagnostic.range: required",
            id="diagnostic-range",
        ),
        pytest.param(
            cmds.parse_diagnostic,
            [{"uri": URI, "diagnostic": {**DIAG, "severity": "high"}}],
            r"arguments\[0\].diagnostic.severity: expected a number",
            id="diagnostic-severity",
        ),
        pytest.param(
            cmds.parse_diagnostic,
            [{"uri": "x" * 5000, "diagnostic": DIAG}],
            r"arguments\[0\].uri: String should have at most 4096 characters",
            id="diagnostic-uri",
        ),
    ],
)
def test_bad_arguments_are_named(parse: Any, arguments: list[Any], message: str) -> None:
    with pytest.raises(cmds.ArgumentError, match=message):
        parse(arguments)


def test_undo_and_selection_and_diagnostic_arguments() -> None:
    assert cmds.parse_undo([]) == cmds.UndoArgs()
    assert cmds.parse_undo(["t1"]) == cmds.UndoArgs("t1")
    assert cmds.parse_undo([{"turnId": "t1", "force": True}]) == cmds.UndoArgs("t1", True)
    assert cmds.parse_undo([{"force": True}]) == cmds.UndoArgs(None, True)
    selection = cmds.parse_selection([{"uri": URI, "range": RANGE, "text": "x = 1"}])
    assert selection.text is None and selection.context[0].text == "x = 1"
    asked = cmds.parse_selection([{"uri": URI, "question": "is this right?"}])
    assert asked.text == "is this right?" and asked.context[0].range is None
    uri, diagnostic = cmds.parse_diagnostic([{"uri": URI, "diagnostic": {**DIAG, "code": 7}}])
    assert (uri, diagnostic.code, diagnostic.source) == (URI, "7", "pyflakes")
    assert cmds.parse_optional_text(["  "], "title") is None


def test_diagnostic_questions_carry_message_place_source_and_code() -> None:
    _, diagnostic = cmds.parse_diagnostic([{"uri": URI, "diagnostic": {**DIAG, "severity": 1}}])
    explain = cmds.diagnostic_question(False, diagnostic, "a.py")
    assert explain.startswith(
        "The error from pyflakes (F821) at a.py line 2, column 1 says:\n\nundefined name 'x'\n\n"
    )
    assert explain.endswith("Do not change any file.")
    assert cmds.diagnostic_question(True, diagnostic, "a.py").endswith("problem goes away.")
    item = cmds.diagnostic_context(URI, diagnostic)
    assert item.range is not None
    assert (item.range.start.line, item.range.end.line) == (0, 6)
    item = cmds.diagnostic_context(URI, diagnostic, line_count=4)
    assert item.range is not None and item.range.end.line == 4
    assert cmds.file_label(URI, "/ws") == "a.py"
    assert cmds.file_label("file:///other/b.py", "/ws") == "/other/b.py"


def titles(actions: list[cmds.Action]) -> list[str]:
    return [action.title for action in actions]


def test_code_actions_on_a_selection_at_the_cursor_and_on_diagnostics() -> None:
    selected = cmds.code_actions(URI, rng(RANGE), [], None, "x = 1")
    assert titles(selected) == ["milk: Ask about this selection", "milk: Hand this to Claude"]
    assert selected[0].command == cmds.ASK_SELECTION
    assert selected[0].arguments == [{"uri": URI, "range": RANGE, "text": "x = 1"}]
    assert selected[1].arguments == [{"uri": URI, "range": RANGE}]
    cursor = cmds.code_actions(URI, rng(EMPTY), [], None, None)
    assert titles(cursor) == ["milk: Hand this file to Claude"]
    assert cursor[0].kind == cmds.KIND_SOURCE  # no light bulb at every cursor
    assert cursor[0].arguments == [{"uri": URI}]  # the whole file
    one = cmds.code_actions(URI, rng(EMPTY), [DIAG], None, None)
    assert titles(one) == [
        "milk: Explain this diagnostic",
        "milk: Fix this diagnostic",
        "milk: Hand this file to Claude",
    ]
    assert one[0].arguments == [{"uri": URI, "diagnostic": DIAG}]
    two = cmds.code_actions(
        URI, rng(EMPTY), [DIAG, {**DIAG, "message": "unused import"}], None, None
    )
    assert titles(two)[:4] == [
        "milk: Explain this diagnostic: undefined name 'x'",
        "milk: Fix this diagnostic: undefined name 'x'",
        "milk: Explain this diagnostic: unused import",
        "milk: Fix this diagnostic: unused import",
    ]


@pytest.mark.parametrize(
    ("only", "expected"),
    [
        (["quickfix"], ["milk: Explain this diagnostic", "milk: Fix this diagnostic"]),
        (["refactor"], ["milk: Ask about this selection", "milk: Hand this to Claude"]),
        (["refactor.milk"], ["milk: Ask about this selection", "milk: Hand this to Claude"]),
        (["source"], []),
        (["quickfix.other"], []),
    ],
)
def test_the_only_filter(only: list[str], expected: list[str]) -> None:
    assert titles(cmds.code_actions(URI, rng(RANGE), [DIAG], only, None)) == expected


def test_send_only_in_a_question_area_with_text() -> None:
    below = rng({"start": {"line": 9, "character": 0}, "end": {"line": 9, "character": 0}})
    above = rng({"start": {"line": 3, "character": 0}, "end": {"line": 3, "character": 0}})
    [send] = cmds.transcript_actions(URI, below, 8, "a question", None)
    assert (send.title, send.command, send.arguments) == ("milk: Send", cmds.SEND, [{"uri": URI}])
    assert cmds.transcript_actions(URI, above, 8, "a question", None) == []
    assert cmds.transcript_actions(URI, below, 8, "  \n", None) == []
    assert cmds.transcript_actions(URI, below, None, "q", None) == []
    assert cmds.transcript_actions(URI, below, 8, "q", ["quickfix"]) == []


# ---- the permission question in one line (issue 20 item 18) --------------------------------


def _question(**extra: Any) -> dict[str, Any]:
    return {"agent": "local", "tool": "edit_file", "input": {}, "options": ["deny"], **extra}


def test_a_permission_question_says_who_and_what_first_in_one_short_line() -> None:
    workspace = "/w"
    edit = {"uri": "file:///w/src/calc.py", "before": "a\nb\n", "after": "a\nB\n"}
    line = permission_question(_question(edits=[edit]), workspace)
    assert line == "The local model asks to edit src/calc.py (+1 -1) with edit_file."
    created = {"uri": "file:///w/new.txt", "after": "x\n"}
    assert permission_question(_question(edits=[created]), workspace).startswith(
        "The local model asks to create new.txt (+1 -0)"
    )
    command = _question(agent="claude", tool="Bash", input={"command": "make test\n  -j2"})
    assert permission_question(command, workspace) == "Claude asks to run `make test -j2`."
    long = permission_question(_question(tool="WebFetch", input={"url": "x" * 500}), workspace)
    assert long.startswith("The local model asks to use WebFetch: {") and "\n" not in long
    assert len(long) <= QUESTION_MAX_CHARS
    own = {"labels": {"allow_once": "Hand to Claude"}, "description": "Hand to Claude?\nWhy."}
    assert permission_question(own, workspace) == "Hand to Claude? Why."
    assert answer_words(own, "allow_once") == "You answered: Hand to Claude."
    assert answer_words(_question(), "allow_session") == "You answered: Allow for this session."
