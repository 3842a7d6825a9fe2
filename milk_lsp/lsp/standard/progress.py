"""A running turn's status in a few words ("reading main.py", "answering…", "sent to
Claude"), for `$/progress` reports, and the throttle that keeps them few."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from milk_lsp.lsp.standard.transcript import chars_words
from milk_lsp.text import cut, one_line

STATUS_INTERVAL_SECONDS = 0.25
"""At most four status reports a second per turn; the latest is sent when the pause ends."""
SHOWN_CHARS = 40

_PATH_TOOLS = {
    "read_file": "reading",
    "Read": "reading",
    "list_directory": "listing",
    "LS": "listing",
    "edit_file": "editing",
    "Edit": "editing",
    "MultiEdit": "editing",
    "NotebookEdit": "editing",
    "write_file": "writing",
    "Write": "writing",
}
_PATH_KEYS = ("path", "file_path", "notebook_path")
_PATTERN_TOOLS = {"search_text": "searching for", "Grep": "searching for", "Glob": "looking for"}


def status_words(update: dict[str, Any]) -> str | None:
    """What the turn is doing after this update, or None when the update says nothing new."""
    kind = update.get("kind")
    if kind == "turn_started":
        return "Claude: starting…" if update.get("agent") == "claude" else "thinking…"
    if kind == "thinking":
        return "thinking…"
    if kind == "text":
        return "answering…"
    if kind == "escalated":
        return f"sent to Claude ({chars_words(int(update.get('contextChars') or 0))} summary)"
    if kind == "tool_call":
        return _tool_words(update)
    return None


def _tool_words(update: dict[str, Any]) -> str | None:
    """A call with its input that is `pending` waits for the user's answer (both agents'
    calls go back to pending while their permission question is open)."""
    words = _call_words(update)
    if words is not None and update.get("status") == "pending":
        return f"waiting for your permission: {words}"
    return words


def _call_words(update: dict[str, Any]) -> str | None:
    name = str(update.get("name", "tool"))
    status = update.get("status")
    raw = update.get("input")
    tool_input: dict[str, Any] = raw if isinstance(raw, dict) else {}
    if status == "denied":
        return f"{name} denied"
    if status == "failed":
        return f"{name} failed"
    if status not in ("pending", "running") or not tool_input:
        return None
    if name in _PATH_TOOLS:
        path = next((tool_input[k] for k in _PATH_KEYS if isinstance(tool_input.get(k), str)), "")
        return f"{_PATH_TOOLS[name]} {_short_path(path)}".rstrip()
    if name in _PATTERN_TOOLS:
        pattern = tool_input.get("pattern") or tool_input.get("query") or ""
        return f"{_PATTERN_TOOLS[name]} {cut(one_line(str(pattern)), SHOWN_CHARS)}".rstrip()
    command = tool_input.get("command")
    if isinstance(command, str):
        return f"running {cut(one_line(command), SHOWN_CHARS)}"
    if name == "escalate_to_claude":
        return "handing over to Claude"
    return f"using {name}"


def _short_path(path: str) -> str:
    return path if len(path) <= SHOWN_CHARS else PurePath(path).name


@dataclass
class _Shown:
    last: str | None = None
    sent_at: float = float("-inf")
    pending: str | None = None
    timer: asyncio.TimerHandle | None = None


class StatusThrottle:
    """Sends each turn's status at most once per interval; a status held back is sent when
    the interval ends, unless a newer one replaced it, so the latest is never lost."""

    def __init__(
        self, send: Callable[[str, str], None], interval_seconds: float = STATUS_INTERVAL_SECONDS
    ) -> None:
        self._send = send
        self._interval = interval_seconds
        self._turns: dict[str, _Shown] = {}

    def report(self, turn_id: str, message: str) -> None:
        shown = self._turns.setdefault(turn_id, _Shown())
        if shown.timer is None and message == shown.last:
            return
        loop = asyncio.get_running_loop()
        wait = shown.sent_at + self._interval - loop.time()
        if wait <= 0 and shown.timer is None:
            self._emit(turn_id, shown, message)
            return
        shown.pending = message
        if shown.timer is None:
            shown.timer = loop.call_later(max(0.0, wait), self._fire, turn_id)

    def forget(self, turn_id: str) -> None:
        """The turn ended: drop what is held back."""
        shown = self._turns.pop(turn_id, None)
        if shown is not None and shown.timer is not None:
            shown.timer.cancel()

    def _fire(self, turn_id: str) -> None:
        shown = self._turns.get(turn_id)
        if shown is None:
            return
        shown.timer = None
        message, shown.pending = shown.pending, None
        if message is not None and message != shown.last:
            self._emit(turn_id, shown, message)

    def _emit(self, turn_id: str, shown: _Shown, message: str) -> None:
        shown.last = message
        shown.sent_at = asyncio.get_running_loop().time()
        self._send(turn_id, message)
