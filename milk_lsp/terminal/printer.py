"""What `milk-lsp chat` shows: `milk/update`s as they stream, and permission questions.

The conversation (answer text, tool calls, the question and its diff) goes to stdout; the
client's own words about it (`milk: …`) go to stderr, so a script can keep the one apart
from the other. A failed turn's message is kept back here and said once, with its reason,
when the turn's result arrives (the server sends it twice: as an `error` notice and in the
result).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, TextIO

from milk_lsp.lsp.standard.questions import permission_question
from milk_lsp.terminal.style import Style, colour_wanted
from milk_lsp.text import plural
from milk_lsp.workspace.edit_preview import wire_edit_diff
from milk_lsp.workspace.paths import shown_uri

_MARK = {"local": "local", "claude": "Claude"}
_STOP_WORDS = {"end_turn": "done", "cancelled": "cancelled", "error": "failed"}
_STOP_ROLES = {"error": "failed"}
_STANDARD_KEYS = {"allow_once": "o", "allow_session": "s", "deny": "d"}
_OWN_QUESTIONS = ("hand_off_to_claude", "claude_budget")
"""milk's own questions, asked in words (no tool, no diff)."""


class ChatPrinter:
    """Renders `milk/update` notifications on the terminal as they arrive."""

    def __init__(self, out: TextIO | None = None, err: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.style = Style(colour_wanted(self.out))
        self.err_style = Style(colour_wanted(self.err))
        self.workspace: Path | None = None
        """Paths inside it are shown relative to it."""
        self.chosen_by: str | None = None
        """How the user chose the running turn's route (`/local`, `--route claude`): shown
        instead of the server's reason, which would say "user asked"."""
        self.quiet_info = False
        """Leave out the server's info messages (`window/showMessage`) while an answer the
        client prints itself says the same (an undo names its files)."""
        self._agent: str | None = None
        self._mid_line = False
        self._calls_shown: set[object] = set()
        self._plan_shown: list[tuple[str, object]] = []

    # -- writing -------------------------------------------------------------------------

    def _write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()
        if text:
            self._mid_line = not text.endswith("\n")

    def _line(self, text: str, role: str = "") -> None:
        self.end_line()
        self._write(self.style(role, text) + "\n")

    def end_line(self) -> None:
        """Finish a streamed line, so that what follows starts on its own."""
        if self._mid_line:
            self._write("\n")

    def say(self, text: str, role: str = "note") -> None:
        """One line of the client's own on stderr, `milk: ` in front."""
        self.end_line()
        self.err.write(self.err_style(role, f"milk: {text}") + "\n")
        self.err.flush()

    def show(self, text: str) -> None:
        """Lines of the conversation that are not streamed (a preview, the help)."""
        self._line(text)

    def show_message(self, message: str, info: bool) -> None:
        """The server's `window/showMessage`."""
        if info and self.quiet_info:
            return
        self.say(message.removeprefix("milk: "), "note" if info else "warning")

    # -- updates -------------------------------------------------------------------------

    def on_update(self, update: dict[str, Any]) -> None:
        if update.get("elsewhere"):
            # another door's turn (the server relays them): not printed over the line the
            # user is typing
            return
        kind = update.get("kind")
        agent = update.get("agent")
        if kind == "turn_started":
            self._calls_shown.clear()
            self._plan_shown = []
            self._line(f"── {_MARK.get(str(agent), agent)} ({self._why(update)})", "agent")
            self._agent = agent
        elif kind == "text":
            if agent != self._agent:
                self._line(f"── {_MARK.get(str(agent), agent)}", "agent")
                self._agent = agent
            self._write(str(update.get("delta", "")))
        elif kind == "tool_call":
            status, call_id = update.get("status"), update.get("toolCallId")
            # milk's own reads arrive completed, never running: shown once all the same; a
            # call running again after its permission question is not shown twice
            first = status == "completed" and call_id not in self._calls_shown
            again = (call_id, status) in self._calls_shown
            if (status in ("running", "denied", "failed") and not again) or first:
                self._calls_shown.update((call_id, (call_id, status)))
                summary = json.dumps(update.get("input"), ensure_ascii=False)[:120]
                self._line(f"  ⚙ {update.get('name')} {summary} [{status}]", "tool")
        elif kind == "tool_result":
            output = str(update.get("output", "")).strip().splitlines()
            first = output[0][:100] if output else ""
            mark = "✗" if update.get("isError") else "→"
            self._line(f"    {mark} {first}{' …' if len(output) > 1 else ''}", "result")
        elif kind == "escalated":
            self._line(
                f"⇧ escalated to Claude by {update.get('by')}: {update.get('reason')} "
                f"(mode {update.get('mode')}, {update.get('contextChars')} chars of context)",
                "escalated",
            )
        elif kind == "need":
            self._line(f"◎ goal: {update.get('currentNeed')}", "goal")
        elif kind == "notice":
            severity = str(update.get("severity"))
            if severity != "error":  # the failure: said once, with the result's reason
                self._line(f"[{severity}] {update.get('message')}", severity)
        elif kind == "changes":
            self._changes(update)
        elif kind == "plan":
            self._plan(update)
        elif kind == "turn_ended":
            stop = str(update.get("stopReason"))
            self._line(f"── {_STOP_WORDS.get(stop, stop)}", _STOP_ROLES.get(stop, "status"))

    def _plan(self, update: dict[str, Any]) -> None:
        """An advisor turn's checklist when it comes, then a line per step as it starts
        and ends, saying who does it."""
        steps = [step for step in update.get("steps") or [] if isinstance(step, dict)]
        if not self._plan_shown:
            self._line(f"☐ Claude's plan, {plural(len(steps), 'step')}:", "agent")
            for number, step in enumerate(steps, 1):
                self._line(f"   {number}. {step.get('content', '')}", "status")
            self._plan_shown = [("pending", None) for _ in steps]
        for number, step in enumerate(steps[: len(self._plan_shown)], 1):
            now = (str(step.get("status")), "milk" if step.get("byMilk") else step.get("agent"))
            if now == self._plan_shown[number - 1]:
                continue
            self._plan_shown[number - 1] = now
            who = {"claude": "Claude", "milk": "milk itself"}.get(str(now[1]), "the local model")
            words = {
                "in_progress": (f"▸ step {number}: {who}", "status"),
                "completed": (f"☑ step {number} done by {who}", "changes"),
                "failed": (f"☒ step {number} failed ({who})", "failed"),
            }.get(now[0])
            if words is not None:
                self._line(*words)

    def _changes(self, update: dict[str, Any]) -> None:
        changed = [
            f"{shown_uri(str(c.get('uri', '')), self.workspace)} "
            f"(+{c.get('added')} -{c.get('removed')})"
            for c in update.get("changes") or []
            if isinstance(c, dict)
        ]
        self._line(f"✎ {plural(len(changed), 'file')} changed: {', '.join(changed)}", "changes")

    def _why(self, update: dict[str, Any]) -> str:
        """Why the turn went to its agent: the option the user gave, else the server's
        reason (a route the user chose is theirs, not a choice made for them)."""
        route = update.get("route")
        if route in ("local", "claude", "advise"):
            return self.chosen_by or f"--route {route}"
        return str(update.get("reason"))

    # -- questions -----------------------------------------------------------------------

    def question(self, params: dict[str, Any]) -> tuple[str, dict[str, str]]:
        """A permission question (or milk's hand-off question) with the server's own
        labels: an edit's diff first, then who asks for what, then the choices; and which
        key picks which option."""
        options = [o for o in params.get("options") or [] if isinstance(o, dict)]
        keys: dict[str, str] = {}
        for number, option in enumerate(options, 1):
            option_id = str(option.get("optionId"))
            keys[_STANDARD_KEYS.get(option_id, str(number))] = option_id
            keys[str(number)] = option_id
        choices = "  ".join(
            f"[{_STANDARD_KEYS.get(str(o.get('optionId')), str(n))}] {o.get('label')}"
            for n, o in enumerate(options, 1)
        )
        if params.get("tool") in _OWN_QUESTIONS:
            text = str(params.get("description"))
        else:
            diffs = [
                self.style.diff(wire_edit_diff(edit, self.workspace))
                for edit in params.get("edits") or []
                if isinstance(edit, dict)
            ]
            text = "\n".join([*diffs, permission_question(params, self.workspace)])
        return f"{text}\n  {choices}", keys

    def denied_unasked(self, params: dict[str, Any]) -> None:
        """No terminal to ask on: the question is shown all the same (so the log of the
        run says what was refused), and denied."""
        text, _ = self.question(params)
        self._line(text.rsplit("\n", 1)[0])
        self.say(f"denied {params.get('tool')} (no terminal to ask on)", "warning")
