"""A permission question in words, for clients that show only a line of text.

`window/showMessageRequest` (eglot shows it in the minibuffer, where a long message is cut
from the start) and the terminal get one short sentence that starts with who asks and for
what: "The local model asks to edit calc.py (+1 -1) with edit_file." The change itself
goes where there is room: the transcript shows the diff (`transcript.py`), the terminal
prints it below the question, and `window/showMessageRequest` carries it before the
sentence (`question_with_diff`). Pure: no pygls.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from milk_lsp import wire
from milk_lsp.text import cut, one_line, short_json
from milk_lsp.workspace.edit_preview import line_counts, wire_edit_diff
from milk_lsp.workspace.paths import shown_uri

QUESTION_MAX_CHARS = 160
"""The sentence is cut here (the minibuffer shows about one line)."""
SHOWN_INPUT_CHARS = 80


def asker(params: dict[str, Any]) -> str:
    return "Claude" if params.get("agent") == "claude" else "The local model"


def is_own_question(params: dict[str, Any]) -> bool:
    """A question of milk's own (the hand-off question): its words are its description."""
    return bool(params.get("labels") and params.get("description"))


def permission_question(params: dict[str, Any], workspace: str | Path | None) -> str:
    """The question in one short sentence: the asker, the action, the file or command."""
    if is_own_question(params):
        return cut(one_line(str(params["description"])), QUESTION_MAX_CHARS)
    return cut(f"{asker(params)} asks to {action(params, workspace)}.", QUESTION_MAX_CHARS)


def question_with_diff(params: dict[str, Any], workspace: str | Path | None) -> str:
    """The `window/showMessageRequest` message: for an edit, the unified diff of each file
    first and the sentence last, so the change is in view when the choices open (Neovim
    shows the whole message) and the question is what a one-line area keeps (eglot's
    minibuffer cuts a long message from the start)."""
    sentence = permission_question(params, workspace)
    edits = [e for e in params.get("edits") or [] if isinstance(e, dict)]
    if not edits or is_own_question(params):
        return sentence
    diffs = "\n".join(wire_edit_diff(edit, workspace) for edit in edits)
    return f"{diffs}\n\n{sentence}"


def action(params: dict[str, Any], workspace: str | Path | None) -> str:
    """ "edit calc.py (+1 -1) with edit_file", "run `make test`", "use WebFetch: {…}"."""
    tool = str(params.get("tool") or "a tool")
    edits = [e for e in params.get("edits") or [] if isinstance(e, dict)]
    if edits:
        files = ", ".join(_edit_words(edit, workspace) for edit in edits)
        return f"{_verb(edits)} {files} with {tool}"
    tool_input = params.get("input")
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    if isinstance(command, str):
        return f"run `{cut(one_line(command), SHOWN_INPUT_CHARS)}`"
    shown = cut(short_json(tool_input or {}), SHOWN_INPUT_CHARS)
    return f"use {tool}: {shown}"


def _verb(edits: list[dict[str, Any]]) -> str:
    if all(edit.get("before") is None for edit in edits):
        return "create"
    if all(edit.get("after") is None for edit in edits):
        return "delete"
    return "edit"


def _edit_words(edit: dict[str, Any], workspace: str | Path | None) -> str:
    before, after = edit.get("before"), edit.get("after")
    added, removed = line_counts(
        before if isinstance(before, str) else None, after if isinstance(after, str) else None
    )
    return f"{shown_uri(str(edit.get('uri', '')), workspace)} (+{added} -{removed})"


def answer_words(params: dict[str, Any], option_id: str | None) -> str:
    """What the user answered, as the transcript records it."""
    labels = params.get("labels") if isinstance(params.get("labels"), dict) else {}
    if option_id is None:
        return "No answer: treated as deny."
    label = (labels or {}).get(option_id) or wire.PERMISSION_LABELS.get(option_id, option_id)
    return f"You answered: {label}."
