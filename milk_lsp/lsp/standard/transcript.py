"""The transcript document: one session's chat as readable Markdown, built from its updates.

The document is an append-only *body* (a header, then every turn: the question, the answers
as they stream, tool calls with their literal input and output in fenced blocks,
escalations, changed files, errors and usage in plain words) followed by the *question
area*: a marker line, below which the user types the next question. Only the body is milk's;
the question area is the user's. Each turn starts with an HTML comment naming its id, so a
transcript read back from disk tells which stored turns it already shows.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from milk_lsp.guided.citations import is_sources_block, markdown_sources
from milk_lsp.lsp.standard.questions import answer_words, is_own_question, permission_question
from milk_lsp.sessions.model import Role, TurnRecord
from milk_lsp.text import fenced, one_line
from milk_lsp.wire import PART_BREAK
from milk_lsp.workspace.edit_preview import wire_edit_diff
from milk_lsp.workspace.paths import shown_uri

QUESTION_KIND = "milk.permissionQuestion"
"""A door-internal update (never on the wire): a permission question, asked or answered."""
NEXT_ROUTE_KIND = "milk.nextRoute"
"""A door-internal update: where the session's next message goes, once it changed."""

MARKER = '<!-- milk: type your question below this line, then run "milk: Send" -->'
"""The line that starts the question area (the last such line in the document counts)."""
QUESTION_TAIL = "\n\n" + MARKER + "\n"
"""What separates the body from the question: the question is everything after it."""
TOOL_OUTPUT_CHARS = 2000
"""Tool output shown per call; the live stream carries at most this much (`turn.py`)."""
FENCE_LINE_CHARS = 200
"""What is kept of a line while it streams: enough to tell a fence line (a longer line of
nothing but backticks is not worth the quadratic cost of keeping every line whole)."""
TURN_COMMENT = re.compile(r"^<!-- turn ([^ ]+) -->$", re.MULTILINE)
_FENCE_LINE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_AGENT_HEADINGS = {"local": "Local model", "claude": "Claude"}
_MODES = {
    "first": "a new Claude conversation",
    "fresh": "a fresh Claude conversation",
    "resume": "the same Claude conversation",
    "returning": "back to the earlier Claude conversation",
    "brief": "one small request without tools",
}
_STATUS_WORDS = {"ok": "*Done.*", "cancelled": "*Cancelled.*", "error": "**Failed** (or cut off)."}
"""How a stored turn ended (records keep no more than their status)."""
_ENDINGS = {
    "end_turn": "Done",
    "cancelled": "Cancelled",
    "max_turns": "Stopped: too many steps",
}


def join_document(body: str, question: str) -> str:
    return body + QUESTION_TAIL + question


def split_document(text: str) -> tuple[str, str] | None:
    """(body, question) of a transcript's text, split at its last marker line; None when
    the marker is gone. Line endings are taken as `\\n` (a client may send `\\r\\n`)."""
    text = text.replace("\r\n", "\n")
    at = text.rfind("\n" + MARKER)
    while at >= 0:
        end = at + 1 + len(MARKER)
        if end == len(text) or text[end] == "\n":
            body = text[:at]
            if body.endswith("\n"):  # the blank line of QUESTION_TAIL
                body = body[:-1]
            return body, text[end + 1 :]
        at = text.rfind("\n" + MARKER, 0, at)
    return None


def question_line(body: str) -> int:
    """The 0-based line where the question area starts (below the marker)."""
    return body.count("\n") + QUESTION_TAIL.count("\n")


def cursor_line(body: str, question: str) -> int:
    """Where to put the cursor when the transcript is shown: the question area, or the
    marker line while the area is empty (the line after a final newline is not one an
    editor such as Neovim lets the cursor go to)."""
    line = question_line(body)
    return line if question else line - 1


def rendered_turns(body: str) -> set[str]:
    """The turn ids a transcript body already shows."""
    return set(TURN_COMMENT.findall(body))


def header(title: str, session_id: str, workspace: str) -> str:
    name = one_line(title) or "new session"
    return (
        f"# milk: {name}\n\n"
        f"Session `{session_id}` in `{workspace}`. milk writes this file as the chat goes on; "
        "type your next question at the end, below the marker line, and run the command "
        '"milk: Send" (or `milk.send`).\n'
    )


def chars_words(count: int) -> str:
    """2500 → "2.5k-char"."""
    if count < 1000:
        return f"{count}-char"
    return f"{count / 1000:.1f}".rstrip("0").rstrip(".") + "k-char"


def clock(moment: datetime) -> str:
    return moment.astimezone().strftime("%Y-%m-%d %H:%M")


class _Fences:
    """Tracks whether streamed answer text left a code fence open (so the next block
    milk appends is not swallowed by it)."""

    def __init__(self) -> None:
        self._line = ""
        self.open: str | None = None

    def feed(self, text: str) -> None:
        if "\n" not in text:  # the common case, one streamed token
            if len(self._line) < FENCE_LINE_CHARS:
                self._line += text
            return
        lines = (self._line + text).split("\n")
        self._line = lines.pop()[:FENCE_LINE_CHARS]
        for line in lines:
            self._see(line)

    def _see(self, line: str) -> None:
        match = _FENCE_LINE.match(line)
        if match is None:
            return
        run = match.group(1)
        if self.open is None:
            self.open = run
        elif run[0] == self.open[0] and len(run) >= len(self.open) and not line.strip(run[0] + " "):
            self.open = None

    def close(self) -> str:
        """The text that ends an open fence ("" when none is open); resets the tracker."""
        opened, self._line, self.open = self.open, "", None
        return "" if opened is None else f"\n{opened}\n"


@dataclass
class _Call:
    name: str
    agent: str
    input: dict[str, Any]
    status: str
    shown: bool = False
    answered: bool = False
    """The user's answer to its permission question is shown (a denial needs no second line)."""


@dataclass
class _Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None


@dataclass
class _TurnState:
    agent: str | None = None
    calls: dict[str, _Call] = field(default_factory=dict)
    usage: dict[str, _Usage] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    plan: list[tuple[str, str | None]] = field(default_factory=list)
    """An advisor turn's steps as last shown: (status, agent)."""


_WHO = {"local": "the local model", "claude": "Claude"}


class TranscriptRenderer:
    """Renders one session's `milk/update`s (in order) as Markdown appended to its body.

    `tail` is the end of the body so far, so each block starts on a fresh paragraph.
    """

    def __init__(
        self,
        tail: str = "",
        workspace: str | None = None,
        now: Callable[[], datetime] = lambda: datetime.now().astimezone(),
    ) -> None:
        self._tail = tail[-2:]
        self._workspace = Path(workspace) if workspace else None
        self._now = now
        self._fences = _Fences()
        self._turn = _TurnState()
        self._in_text = False
        """The last thing emitted was the agent's text (it goes on without a break)."""

    # ---- output helpers -----------------------------------------------------------------

    def _emit(self, out: list[str], text: str) -> None:
        if text:
            out.append(text)
            self._tail = (self._tail + text)[-2:]

    def _block(self, out: list[str], text: str) -> None:
        """A paragraph of milk's own: closes an open fence, then starts after a blank line."""
        self._emit(out, self._fences.close())
        self._paragraph(out)
        self._emit(out, text)
        self._in_text = False

    def _paragraph(self, out: list[str]) -> None:
        if self._tail and not self._tail.endswith("\n\n"):
            self._emit(out, "\n" if self._tail.endswith("\n") else "\n\n")

    # ---- updates --------------------------------------------------------------------------

    def render(self, update: dict[str, Any], question: str | None = None) -> str:
        """The Markdown one update adds; `question` is the user's text for `turn_started`."""
        out: list[str] = []
        kind = update.get("kind")
        if kind != "turn_ended" and kind != "notice" and self._turn.errors:
            self._errors(out)
        if kind == "turn_started":
            self._turn = _TurnState()
            self._block(out, f"<!-- turn {update.get('turnId')} -->\n")
            self._emit(out, f"## You · {clock(self._now())}\n\n")
            self._emit(out, (question or "(the question is not available)").rstrip() + "\n")
        elif kind == "text":
            self._text(out, str(update.get("agent")), str(update.get("delta", "")))
        elif kind == "tool_call":
            self._tool_call(out, update)
        elif kind == "tool_result":
            self._tool_result(out, update)
        elif kind == "escalated":
            self._escalated(out, update)
        elif kind == "usage":
            usage = self._turn.usage.setdefault(str(update.get("agent")), _Usage())
            usage.input_tokens += int(update.get("inputTokens") or 0)
            usage.output_tokens += int(update.get("outputTokens") or 0)
            if update.get("costUsd") is not None:
                usage.cost_usd = (usage.cost_usd or 0.0) + float(update["costUsd"])
        elif kind == "notice":
            self._notice(out, str(update.get("severity")), str(update.get("message", "")))
        elif kind == "changes":
            self._changes(out, update.get("changes"))
        elif kind == "plan":
            self._plan(out, update.get("steps"))
        elif kind == "citations":
            self._emit(out, markdown_sources(update))
        elif kind == "turn_ended":
            self._ended(out, str(update.get("stopReason")))
        elif kind == QUESTION_KIND:
            self._question(out, update)
        elif kind == NEXT_ROUTE_KIND:
            self._next_route(out, update)
        return "".join(out)

    def note(self, text: str) -> str:
        """A line of milk's own outside turns (an undo, say)."""
        out: list[str] = []
        self._block(out, f"> {text}\n")
        return "".join(out)

    def _heading(self, out: list[str], agent: str) -> None:
        if self._turn.agent != agent:
            self._turn.agent = agent
            self._block(out, f"### {_AGENT_HEADINGS.get(agent, agent)}\n\n")

    def _text(self, out: list[str], agent: str, delta: str) -> None:
        if not delta or (delta == PART_BREAK and self._turn.agent != agent):
            return  # between two agents' parts the heading is the break
        if is_sources_block(delta):
            return  # the `citations` update that follows writes it with links
        self._heading(out, agent)
        if not self._in_text:  # the answer goes on after a block of milk's own
            self._paragraph(out)
            self._in_text = True
        self._fences.feed(delta)
        self._emit(out, delta)

    def _show_call(self, out: list[str], call: _Call) -> None:
        if call.shown:
            return
        call.shown = True
        self._heading(out, call.agent)
        shown = json.dumps(call.input, ensure_ascii=False, indent=2) if call.input else "{}"
        self._block(out, f"**Tool call: {call.name}**\n\n" + fenced(shown, "json"))

    def _tool_call(self, out: list[str], update: dict[str, Any]) -> None:
        call_id = str(update.get("toolCallId"))
        raw_input = update.get("input")
        tool_input = raw_input if isinstance(raw_input, dict) else {}
        status = str(update.get("status"))
        call = self._turn.calls.get(call_id)
        if call is None:
            call = _Call(str(update.get("name")), str(update.get("agent")), tool_input, status)
            self._turn.calls[call_id] = call
        else:
            call.input = tool_input or call.input
            call.status = status
        if tool_input or status != "pending":  # Claude's first sight of a call has no input
            self._show_call(out, call)
        if status == "denied" and not call.answered:
            self._block(out, "*Denied.*\n")

    def _question(self, out: list[str], update: dict[str, Any]) -> None:
        """A permission question when it is asked (with the diff of an edit), and what the
        user answered (`answer` set)."""
        raw = update.get("params")
        params: dict[str, Any] = raw if isinstance(raw, dict) else {}
        answer = update.get("answer")
        call = self._turn.calls.get(str(params.get("toolCallId")))
        if isinstance(answer, str):
            if call is not None:
                call.answered = True
            self._block(out, f"> {answer_words(params, answer)}\n")
            return
        if call is not None:
            self._show_call(out, call)
        who = "milk asks" if is_own_question(params) else "Permission asked"
        text = f"> **{who}:** {permission_question(params, self._workspace)}\n"
        edits = [e for e in params.get("edits") or [] if isinstance(e, dict)]
        diffs = "\n".join(wire_edit_diff(edit, self._workspace) for edit in edits)
        self._block(out, text + ("\n" + fenced(diffs, "diff") if diffs else ""))

    def _next_route(self, out: list[str], update: dict[str, Any]) -> None:
        agent = update.get("agent")
        reason = one_line(str(update.get("reason", "")))
        if agent == "claude":
            back = "; to go back to the local model, run `milk.askLocal`"
            self._block(out, f"> Your next message goes to **Claude** ({reason}{back}).\n")
        else:
            self._block(out, f"> Your next message goes to the **local model** ({reason}).\n")

    def _tool_result(self, out: list[str], update: dict[str, Any]) -> None:
        call_id = str(update.get("toolCallId"))
        call = self._turn.calls.get(call_id)
        if call is None:
            call = _Call("tool", str(update.get("agent")), {}, "completed")
            self._turn.calls[call_id] = call
        self._show_call(out, call)
        output = str(update.get("output", ""))
        label = "Error" if update.get("isError") else "Result"
        cut = (
            f" (the first {TOOL_OUTPUT_CHARS:,} characters)"
            if len(output) >= TOOL_OUTPUT_CHARS
            else ""
        )
        self._block(out, f"{label}{cut}:\n\n" + fenced(output or "(no output)"))

    def _escalated(self, out: list[str], update: dict[str, Any]) -> None:
        by = update.get("by")
        reason = one_line(str(update.get("reason", "")))
        why = {
            "user": "you asked",
            "agent": f"the local model asked: {reason}",
            "fallback": f"the local model did not manage ({reason})",
        }.get(str(by), reason)
        size = chars_words(int(update.get("contextChars") or 0))
        mode = _MODES.get(str(update.get("mode")), "Claude")
        self._turn.agent = None  # Claude's answer gets its own heading
        self._block(out, f"> **Sent to Claude** with a {size} summary, {why}. ({mode})\n")

    def _notice(self, out: list[str], severity: str, message: str) -> None:
        if severity == "error":  # said with the turn's end, unless more follows first
            self._turn.errors.append(message)
            return
        label = "Warning: " if severity == "warning" else "Note: "
        self._block(out, f"> {label}{message}\n")

    def _errors(self, out: list[str]) -> None:
        for message in self._turn.errors:
            self._block(out, f"> **Error:** {message}\n")
        self._turn.errors.clear()

    def _changes(self, out: list[str], changes: Any) -> None:
        if not isinstance(changes, list) or not changes:
            return
        items = []
        for change in changes:
            if not isinstance(change, dict):
                continue
            name = self._file_name(str(change.get("uri", "")))
            kind = change.get("kind")
            counts = f"+{change.get('added', 0)} -{change.get('removed', 0)}"
            what = {"created": "new, ", "deleted": "deleted, "}.get(str(kind), "")
            items.append(f"`{name}` ({what}{counts})")
        self._block(
            out,
            f"**Changed files:** {', '.join(items)}. To undo them, run the command `milk.undo`.\n",
        )

    def _plan(self, out: list[str], steps: Any) -> None:
        """An advisor turn's checklist when it first comes, then a line per step that ends
        or that Claude takes over (the document only grows)."""
        if not isinstance(steps, list):
            return
        rows = [step for step in steps if isinstance(step, dict)]
        seen = self._turn.plan
        if not seen:
            items = "".join(
                f"- [ ] {n}. {step.get('content', '')}\n" for n, step in enumerate(rows, 1)
            )
            self._block(out, f"**Claude's plan** (the local model does the steps):\n\n{items}")
            seen.extend(("pending", None) for _ in rows)
        for n, step in enumerate(rows[: len(seen)], 1):
            status, agent = str(step.get("status")), step.get("agent")
            if (status, agent) == seen[n - 1]:
                continue
            seen[n - 1] = (status, agent)
            who = "milk itself" if step.get("byMilk") else _WHO.get(str(agent), "milk")
            if status == "completed":
                self._block(out, f"- [x] Step {n} done by {who}.\n")
            elif status == "failed":
                self._block(out, f"- [ ] Step {n} failed ({who}).\n")
            elif status == "in_progress" and agent == "claude":
                self._block(out, f"- Step {n}: the local model could not do it; Claude does.\n")

    def _file_name(self, uri: str) -> str:
        return shown_uri(uri, self._workspace)

    def _ended(self, out: list[str], stop: str) -> None:
        for call in self._turn.calls.values():  # a call never shown still was made
            if not call.shown:
                self._show_call(out, call)
        if stop == "error":
            errors = " ".join(self._turn.errors) or "see the notes above."
            self._turn.errors.clear()
            line = f"**Failed:** {errors}"
        else:
            line = f"*{_ENDINGS.get(stop, stop)}.*"
        usage = usage_words(self._turn.usage)
        self._block(out, f"{line}{' ' + usage if usage else ''}\n")
        self._turn = _TurnState()

    # ---- stored turns -------------------------------------------------------------------

    def render_records(self, records: Iterable[TurnRecord]) -> str:
        """Stored turns (oldest first) as the transcript shows them: for sessions that began
        before their transcript, or turns another milk process ran."""
        out: list[str] = []
        turn_id: str | None = None
        status = "ok"
        for record in records:
            if record.turn_id != turn_id:
                if turn_id is not None:
                    self._block(out, _STATUS_WORDS.get(status, status) + "\n")
                turn_id, status = record.turn_id, record.status.value
                self._turn = _TurnState()
                self._block(out, f"<!-- turn {record.turn_id} -->\n")
            if record.role is Role.USER:
                when = clock(record.created_at)
                self._emit(out, f"## You · {when}\n\n{record.text.rstrip()}\n")
                continue
            self._record_answer(out, record)
        if turn_id is not None:
            self._block(out, _STATUS_WORDS.get(status, status) + "\n")
        self._turn = _TurnState()
        return "".join(out)

    def _record_answer(self, out: list[str], record: TurnRecord) -> None:
        agent = record.agent.value
        self._text(out, agent, record.text)
        self._heading(out, agent)
        for call in record.tool_calls:
            shown = _Call(call.name, agent, dict(call.input), call.status or "completed")
            self._show_call(out, shown)
            if call.status == "denied":
                self._block(out, "*Denied.*\n")
            elif call.output is not None:
                label = "Error" if call.is_error else "Result"
                output = call.output[:TOOL_OUTPUT_CHARS]
                self._block(out, f"{label}:\n\n" + fenced(output or "(no output)"))


def usage_words(usage: dict[str, _Usage]) -> str:
    """ "(local model: 1,234 tokens in, 56 out; Claude: …, $0.0123)" or ""."""
    parts = []
    for agent, totals in usage.items():
        if not (totals.input_tokens or totals.output_tokens or totals.cost_usd):
            continue
        words = f"{totals.input_tokens:,} tokens in, {totals.output_tokens:,} out"
        if totals.cost_usd:
            words += f", ${totals.cost_usd:.4f}"
        parts.append(f"{_AGENT_HEADINGS.get(agent, agent).lower()}: {words}")
    return f"({'; '.join(parts)})" if parts else ""


def transcript_path(storage_file: Path, session_id: str) -> Path:
    """Where a session's transcript lives: next to milk's database, never in the repository."""
    return storage_file.parent / "transcripts" / f"{_safe_name(session_id)}.md"


def session_of_path(path: Path) -> str | None:
    """The session id a transcript file is named after."""
    if path.suffix != ".md" or path.parent.name != "transcripts":
        return None
    return path.stem or None


def _safe_name(session_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", session_id)
