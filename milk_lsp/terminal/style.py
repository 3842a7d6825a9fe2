"""Colour for `milk-lsp chat`: ANSI codes by hand, all in one table.

Colour is on when the stream is a terminal and `NO_COLOR` (https://no-color.org) is unset
or empty. `MILK_COLOR=1` forces it on where the stream is not a terminal (a pager with
`-R`, the tests) and `MILK_COLOR=0` forces it off; `NO_COLOR` wins over both, since it is
the user's standing wish.
"""

from __future__ import annotations

import os
from typing import TextIO

SGR = {
    "agent": "1;34",  # ── local / ── Claude
    "status": "2",  # ── done, ── cancelled
    "failed": "1;31",  # ── failed, milk: turn failed …
    "tool": "36",  # ⚙ a tool call
    "result": "2",  # → its output
    "warning": "33",
    "info": "2",
    "escalated": "35",  # ⇧
    "goal": "34",  # ◎
    "changes": "32",  # ✎
    "note": "2",  # milk: … lines
    "prompt": "1",
    "header": "1",  # a diff's ---/+++ lines
    "hunk": "36",  # @@ … @@
    "added": "32",  # +line
    "removed": "31",  # -line
}
"""Role → SGR parameters: every colour `milk-lsp chat` prints."""


def colour_wanted(stream: TextIO) -> bool:
    """Whether what goes to `stream` is coloured (see the module docstring)."""
    if os.environ.get("NO_COLOR"):
        return False
    forced = os.environ.get("MILK_COLOR", "").strip().lower()
    if forced in ("1", "always", "yes", "true"):
        return True
    if forced in ("0", "never", "no", "false"):
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a replaced or closed stream
        return False


class Style:
    """Paints text by role, or leaves it as it is when colour is off."""

    def __init__(self, on: bool) -> None:
        self.on = on

    def __call__(self, role: str, text: str) -> str:
        code = SGR.get(role)
        if not self.on or not code or not text:
            return text
        return f"\x1b[{code}m{text}\x1b[0m"

    def prompt(self, text: str) -> str:
        """A readline prompt: the codes between \\001 and \\002, so that readline does not
        count them as columns (line editing would be off by their width)."""
        if not self.on:
            return text
        return f"\001\x1b[{SGR['prompt']}m\002{text}\001\x1b[0m\002"

    def diff(self, text: str) -> str:
        """A unified diff with its lines coloured as git colours them."""
        return "\n".join(self(_diff_role(line), line) for line in text.split("\n"))


def _diff_role(line: str) -> str:
    if line.startswith(("--- ", "+++ ", "diff ", "index ")):
        return "header"
    if line.startswith("@@"):
        return "hunk"
    if line.startswith("+"):
        return "added"
    if line.startswith("-"):
        return "removed"
    return ""
