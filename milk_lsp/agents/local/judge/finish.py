"""The local model's explicit end of a turn: `finish(outcome, summary)`.

As SWE-agent's `submit` and Cline's `attempt_completion` do, the model says in a call, not in
words, how its turn ended: `answered` (its answer is written), `changed` (it changed files)
or `cannot` (it could not do what was asked). milk then judges that by evidence: `changed`
with no file changed is a claim the workspace contradicts, `cannot` is the model's own
verdict (a hand-off where Claude may take over). A model that only writes text is judged by
the same evidence without the call. Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

FINISH_TOOL_NAME = "finish"
OUTCOMES = ("answered", "changed", "cannot")

FINISH_TOOL_SPEC: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": FINISH_TOOL_NAME,
        "description": (
            "End your turn. outcome: answered (you wrote the answer), changed (you changed "
            "the files with edit_file or run_command), or cannot (you could not do it). "
            "summary: one line saying what you answered or changed, or why you cannot."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "outcome": {"type": "string", "enum": list(OUTCOMES)},
                "summary": {"type": "string"},
            },
            "required": ["outcome", "summary"],
        },
    },
}

Outcome = Literal["answered", "changed", "cannot"]


@dataclass(frozen=True)
class Finish:
    """How the model says its turn ended."""

    outcome: Outcome
    summary: str


def finish_of(arguments: dict[str, Any] | None) -> Finish:
    """The call's outcome and summary, read leniently (a small model writes `"Changed"`, or
    no outcome at all: then it answered)."""
    arguments = arguments or {}
    outcome = str(arguments.get("outcome", "")).strip().lower()
    summary = arguments.get("summary")
    text = summary.strip() if isinstance(summary, str) else ""
    if outcome == "changed":
        return Finish("changed", text)
    if outcome == "cannot":
        return Finish("cannot", text)
    return Finish("answered", text)


_CALL_START = re.compile(
    r"(?:^[ \t]*(?:`{3,}|~{3,})[\w-]*[ \t]*\n|<tool_call>\s*|\[tool_call\]\s*)?"
    r"\{\s*\"name\"\s*:\s*\"" + FINISH_TOOL_NAME + r"\"",
    re.MULTILINE,
)


def prose_before_finish(text: str) -> str:
    """A reply's text without the `finish` call it wrote as text at its end (its fence or
    tag included): the answer it gave before ending the turn."""
    found = _CALL_START.search(text)
    return text if found is None else text[: found.start()].rstrip()
