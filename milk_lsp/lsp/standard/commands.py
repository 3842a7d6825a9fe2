"""The standard-LSP door's contract: command names, their arguments as a user types
them, and which code actions a request gets.

Arguments are JSON values typed in an editor's command line (Helix `:lsp-workspace-command`,
eglot `eglot-execute-command`, Neovim `vim.lsp.buf.execute_command`), so they are checked
here by hand, each problem named by its argument (`arguments[0].range.start.line: …`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from milk_lsp import wire
from milk_lsp.text import cut, one_line
from milk_lsp.workspace.paths import shown_uri

ASK = "milk.ask"
SEND = "milk.send"
ESCALATE = "milk.escalate"
ASK_LOCAL = "milk.askLocal"
ADVISE = "milk.advise"
CANCEL = "milk.cancel"
NEW_SESSION = "milk.newSession"
SWITCH_SESSION = "milk.switchSession"
SHOW_CONTEXT = "milk.showContext"
STATUS = "milk.status"
UNDO = "milk.undo"
OPEN_TRANSCRIPT = "milk.openTranscript"
ASK_SELECTION = "milk.askSelection"
EXPLAIN_DIAGNOSTIC = "milk.explainDiagnostic"
FIX_DIAGNOSTIC = "milk.fixDiagnostic"
HAND_TO_CLAUDE = "milk.handToClaude"

COMMANDS = (
    ASK,
    SEND,
    ESCALATE,
    ASK_LOCAL,
    ADVISE,
    CANCEL,
    NEW_SESSION,
    SWITCH_SESSION,
    SHOW_CONTEXT,
    STATUS,
    UNDO,
    OPEN_TRANSCRIPT,
    ASK_SELECTION,
    EXPLAIN_DIAGNOSTIC,
    FIX_DIAGNOSTIC,
    HAND_TO_CLAUDE,
)
"""Every command, as `executeCommandProvider.commands` lists them."""

KIND_QUICKFIX = "quickfix.milk"
KIND_REFACTOR = "refactor.milk"
KIND_SOURCE = "source.milk"
CODE_ACTION_KINDS = (KIND_QUICKFIX, KIND_REFACTOR, KIND_SOURCE)

SELECTION_QUESTION = "Explain this code."
"""The question of "Ask about this selection" when the question area is empty."""
HAND_OFF_QUESTION = "Please look at this code and help me with it."
DIAGNOSTIC_LINES_AROUND = 3
"""Lines of the file attached above and below a diagnostic's range."""
TITLE_MESSAGE_CHARS = 50


class ArgumentError(ValueError):
    """A command's arguments are wrong; the message names the argument (-32602)."""


# ---- parsed arguments ---------------------------------------------------------------------


@dataclass(frozen=True)
class Question:
    """A question to ask: its text (None: the question area), with what it is about."""

    text: str | None = None
    context: tuple[wire.ContextItem, ...] = ()
    uri: str | None = None
    """The document it concerns (its workspace folder picks the session), or the
    transcript whose question area holds the text."""
    route: wire.Route | None = None
    """`milk/chat`'s route (None: `auto`); `local` takes a session back from Claude."""


@dataclass(frozen=True)
class Diagnostic:
    range: wire.Range
    message: str
    source: str | None = None
    code: str | None = None
    severity: int | None = None


@dataclass(frozen=True)
class UndoArgs:
    turn_id: str | None = None
    force: bool = False


ROUTES = ("auto", "local", "claude", "advise")
_ASK_KEYS = ("text", "uri", "range", "route")


def parse_ask(arguments: list[Any]) -> Question:
    """`milk.ask` / `milk.askLocal`: `[]`, `[text]` or `[{text, uri?, range?, route?}]`.
    A key milk does not know is refused, never ignored (a route that went unread would send
    the question somewhere the user did not ask for)."""
    _at_most(arguments, 1)
    if not arguments:
        return Question()
    raw = arguments[0]
    if isinstance(raw, str):
        return Question(text=_question_text(raw, "arguments[0]"))
    if not isinstance(raw, dict):
        raise ArgumentError(
            "arguments[0]: expected the question as a string, or {text, uri?, range?, route?}"
        )
    unknown = [key for key in raw if key not in _ASK_KEYS]
    if unknown:
        raise ArgumentError(
            f"arguments[0].{unknown[0]}: not an argument of milk.ask (it takes "
            f"{', '.join(_ASK_KEYS)})"
        )
    route = raw.get("route")
    if route is not None and route not in ROUTES:
        raise ArgumentError(f"arguments[0].route: expected one of {', '.join(ROUTES)}")
    text = _question_text(raw.get("text"), "arguments[0].text")
    uri = _optional_uri(raw, "arguments[0]")
    range_ = _optional_range(raw, "arguments[0]")
    if range_ is not None and uri is None:
        raise ArgumentError("arguments[0].uri: required with a range")
    context = (wire.ContextItem(uri=uri, range=range_),) if uri is not None else ()
    return Question(text=text, context=context, uri=uri, route=route)


def parse_send(arguments: list[Any]) -> Question:
    """`milk.send`: `[]`, or `[{uri}]` naming a transcript document (its code action)."""
    _at_most(arguments, 1)
    if not arguments:
        return Question()
    raw = arguments[0]
    if not isinstance(raw, dict):
        raise ArgumentError("arguments[0]: expected {uri} of a transcript document, or nothing")
    uri = _optional_uri(raw, "arguments[0]")
    if uri is None:
        raise ArgumentError("arguments[0].uri: required")
    return Question(uri=uri)


def parse_optional_text(arguments: list[Any], name: str) -> str | None:
    """`[]` or `[text]` (the text of `milk.escalate`, the title of `milk.newSession`)."""
    _at_most(arguments, 1)
    if not arguments or arguments[0] is None:
        return None
    raw = arguments[0]
    if not isinstance(raw, str):
        raise ArgumentError(f"arguments[0] ({name}): expected a string")
    _usable(raw, f"arguments[0] ({name})")
    return raw if raw.strip() else None


def parse_no_arguments(arguments: list[Any]) -> None:
    _at_most(arguments, 0)


def parse_session_id(arguments: list[Any]) -> str | None:
    """`milk.switchSession`: `[]` (milk asks which) or `[sessionId]`."""
    text = parse_optional_text(arguments, "sessionId")
    if text is not None and len(text) > wire.MAX_ID_CHARS:
        raise ArgumentError(f"arguments[0] (sessionId): longer than {wire.MAX_ID_CHARS}")
    return text


def parse_undo(arguments: list[Any]) -> UndoArgs:
    """`milk.undo`: `[]` (the last turn with changes), `[turnId]` or `[{turnId, force?}]`."""
    _at_most(arguments, 1)
    if not arguments or arguments[0] is None:
        return UndoArgs()
    raw = arguments[0]
    if isinstance(raw, str):
        return UndoArgs(turn_id=_turn_id(raw, "arguments[0] (turnId)"))
    if not isinstance(raw, dict):
        raise ArgumentError("arguments[0]: expected a turn id, or {turnId, force?}")
    force = raw.get("force", False)
    if not isinstance(force, bool):
        raise ArgumentError("arguments[0].force: expected true or false")
    turn = raw.get("turnId")
    if turn is not None and not isinstance(turn, str):
        raise ArgumentError("arguments[0].turnId: expected a string")
    turn_id = None if turn is None else _turn_id(turn, "arguments[0].turnId")
    return UndoArgs(turn_id=turn_id, force=force)


def parse_selection(arguments: list[Any]) -> Question:
    """`milk.askSelection` / `milk.handToClaude`: `[{uri, range, text?, question?}]`;
    `text` is the selected text, `question` what to ask about it."""
    raw = _one_object(arguments, "{uri, range, text?, question?}")
    uri = _optional_uri(raw, "arguments[0]")
    if uri is None:
        raise ArgumentError("arguments[0].uri: required")
    range_ = _optional_range(raw, "arguments[0]")
    selected = raw.get("text")
    if selected is not None and not isinstance(selected, str):
        raise ArgumentError("arguments[0].text: expected the selected text as a string")
    if isinstance(selected, str):
        _usable(selected, "arguments[0].text")
    question = raw.get("question")
    if question is not None:
        question = _question_text(question, "arguments[0].question")
    item = wire.ContextItem(uri=uri, range=range_, text=selected)
    return Question(text=question, context=(item,), uri=uri)


def parse_diagnostic(arguments: list[Any]) -> tuple[str, Diagnostic]:
    """`milk.explainDiagnostic` / `milk.fixDiagnostic`: `[{uri, diagnostic}]`."""
    raw = _one_object(arguments, "{uri, diagnostic}")
    uri = _optional_uri(raw, "arguments[0]")
    if uri is None:
        raise ArgumentError("arguments[0].uri: required")
    diag = raw.get("diagnostic")
    if not isinstance(diag, dict):
        raise ArgumentError("arguments[0].diagnostic: expected an LSP Diagnostic object")
    where = "arguments[0].diagnostic"
    range_ = _optional_range(diag, where)
    if range_ is None:
        raise ArgumentError(f"{where}.range: required")
    message = diag.get("message")
    if not isinstance(message, str) or not message.strip():
        raise ArgumentError(f"{where}.message: expected a non-empty string")
    _usable(message, f"{where}.message")
    source = diag.get("source")
    if source is not None and not isinstance(source, str):
        raise ArgumentError(f"{where}.source: expected a string")
    code = diag.get("code")
    if code is not None and not isinstance(code, str | int):
        raise ArgumentError(f"{where}.code: expected a string or a number")
    severity = diag.get("severity")
    if severity is not None and (not isinstance(severity, int) or isinstance(severity, bool)):
        raise ArgumentError(f"{where}.severity: expected a number 1-4")
    return uri, Diagnostic(range_, message, source, None if code is None else str(code), severity)


# ---- what the agent is asked ---------------------------------------------------------------

_SEVERITIES = {1: "error", 2: "warning", 3: "information", 4: "hint"}


def diagnostic_question(fix: bool, diagnostic: Diagnostic, file_label: str) -> str:
    """The request for a diagnostic: its message, place, source and code, in words."""
    start = diagnostic.range.start
    what = _SEVERITIES.get(diagnostic.severity or 0, "diagnostic")
    origin = f" from {diagnostic.source}" if diagnostic.source else ""
    code = f" ({diagnostic.code})" if diagnostic.code else ""
    said = (
        f"The {what}{origin}{code} at {file_label} line {start.line + 1}, column "
        f"{start.character + 1} says:\n\n{diagnostic.message.strip()}\n\n"
    )
    if fix:
        return said + "Fix it: change the file so that this problem goes away."
    return said + "Explain what it means and what causes it here. Do not change any file."


def diagnostic_context(
    uri: str, diagnostic: Diagnostic, line_count: int | None = None
) -> wire.ContextItem:
    """The lines around a diagnostic (within the document's `line_count` when known),
    attached to its question."""
    start = max(0, diagnostic.range.start.line - DIAGNOSTIC_LINES_AROUND)
    end = diagnostic.range.end.line + DIAGNOSTIC_LINES_AROUND + 1
    if line_count is not None:
        end = max(min(end, line_count), diagnostic.range.end.line + 1)
    lines = {"start": {"line": start, "character": 0}, "end": {"line": end, "character": 0}}
    return wire.ContextItem.model_validate({"uri": uri, "range": lines})


# ---- code actions -----------------------------------------------------------------------


@dataclass(frozen=True)
class Action:
    """One code action: a title, its kind and the command it runs (no edits)."""

    title: str
    kind: str
    command: str
    arguments: list[Any]


def code_actions(
    uri: str,
    range_: wire.Range,
    diagnostics: list[dict[str, Any]],
    only: list[str] | None,
    selected_text: str | None,
) -> list[Action]:
    """The actions for a range of an ordinary document (see `transcript_actions`)."""
    actions: list[Action] = []
    selection: dict[str, Any] = {"uri": uri, "range": range_.to_wire()}
    if not _empty(range_):
        asked = {**selection, "text": selected_text} if selected_text else selection
        actions.append(
            Action("milk: Ask about this selection", KIND_REFACTOR, ASK_SELECTION, [asked])
        )
    several = len(diagnostics) > 1
    for diagnostic in diagnostics:
        message = one_line(str(diagnostic.get("message", "")))
        suffix = f": {cut(message, TITLE_MESSAGE_CHARS)}" if several else ""
        about = [{"uri": uri, "diagnostic": diagnostic}]
        explain = f"milk: Explain this diagnostic{suffix}"
        actions.append(Action(explain, KIND_QUICKFIX, EXPLAIN_DIAGNOSTIC, about))
        fix = f"milk: Fix this diagnostic{suffix}"
        actions.append(Action(fix, KIND_QUICKFIX, FIX_DIAGNOSTIC, about))
    if _empty(range_):  # the whole file: a source action (no light bulb at every cursor)
        actions.append(
            Action("milk: Hand this file to Claude", KIND_SOURCE, HAND_TO_CLAUDE, [{"uri": uri}])
        )
    else:
        actions.append(
            Action("milk: Hand this to Claude", KIND_REFACTOR, HAND_TO_CLAUDE, [selection])
        )
    return [action for action in actions if _wanted(action.kind, only)]


def transcript_actions(
    uri: str, range_: wire.Range, marker_line: int | None, question: str, only: list[str] | None
) -> list[Action]:
    """In a transcript document, only "milk: Send", and only in a question area with text."""
    if marker_line is None or range_.start.line < marker_line or not question.strip():
        return []
    action = Action("milk: Send", KIND_SOURCE, SEND, [{"uri": uri}])
    return [action] if _wanted(action.kind, only) else []


def _wanted(kind: str, only: list[str] | None) -> bool:
    """LSP's `only` filter: a kind matches itself and its sub-kinds (`quickfix` ⊇ ours)."""
    if not only:
        return True
    return any(kind == want or kind.startswith(want + ".") for want in only)


def _empty(range_: wire.Range) -> bool:
    return range_.start == range_.end


def file_label(uri: str, workspace: str | None) -> str:
    """A document as the agent is told about it: relative to the workspace when inside."""
    return shown_uri(uri, workspace or None)


# ---- checks ---------------------------------------------------------------------------------


def _at_most(arguments: list[Any], count: int) -> None:
    if len(arguments) > count:
        allowed = "no arguments" if count == 0 else f"at most {count} argument"
        raise ArgumentError(f"arguments: expected {allowed}, got {len(arguments)}")


def _one_object(arguments: list[Any], shape: str) -> dict[str, Any]:
    if len(arguments) != 1 or not isinstance(arguments[0], dict):
        raise ArgumentError(f"arguments: expected one object {shape}")
    return arguments[0]


def _question_text(raw: Any, name: str) -> str:
    if not isinstance(raw, str):
        raise ArgumentError(f"{name}: expected the question as a string")
    if not raw.strip():
        raise ArgumentError(f"{name}: the question is empty")
    _usable(raw, name)
    return raw


def _usable(text: str, name: str) -> None:
    try:
        wire.parse(wire.ContextItem, {"uri": "", "text": text})
    except wire.ParamsError:
        raise ArgumentError(f"{name}: contains a NUL or a lone surrogate") from None
    if "\x00" in text:
        raise ArgumentError(f"{name}: contains a NUL character")


def _turn_id(raw: str, name: str) -> str:
    if not raw or len(raw) > wire.MAX_ID_CHARS or "\x00" in raw:
        raise ArgumentError(f"{name}: expected a turn id")
    return raw


def _optional_uri(raw: dict[str, Any], where: str) -> str | None:
    uri = raw.get("uri")
    if uri is None:
        return None
    if not isinstance(uri, str) or not uri:
        raise ArgumentError(f"{where}.uri: expected a file URI string")
    try:
        item = wire.parse(wire.ContextItem, {"uri": uri})
    except wire.ParamsError as exc:
        raise ArgumentError(_named(where, exc)) from None
    return item.uri


def _optional_range(raw: dict[str, Any], where: str) -> wire.Range | None:
    value = raw.get("range")
    if value is None:
        return None
    try:
        parsed = wire.parse(wire.Range, value)
    except wire.ParamsError as exc:
        raise ArgumentError(_named(f"{where}.range", exc)) from None
    start, end = parsed.start, parsed.end
    if (end.line, end.character) < (start.line, start.character):
        raise ArgumentError(f"{where}.range: the end comes before the start")
    return parsed


def _named(where: str, exc: wire.ParamsError) -> str:
    """`wire.parse`'s message with its field names put under `where`."""
    detail = str(exc).removeprefix("invalid params: ")
    if detail.startswith("params: "):
        return f"{where}: {detail.removeprefix('params: ')}"
    return f"{where}.{detail}"
