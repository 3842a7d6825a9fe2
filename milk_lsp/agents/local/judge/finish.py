"""The local model's explicit end of a turn: `finish(intent, outcome, answer, citations,
proposed)`, the guided turn's checked shape as a call.

As SWE-agent's `submit` and Cline's `attempt_completion` do, the model says in fields, not in
words, what it was asked (`intent`: a question or a change) and how its turn ended:
`answered` (the answer, with the lines it rests on quoted), `changed` (it changed files) or
`cannot` (it could not). milk then judges that by evidence: a change asked for or claimed
with no file changed is contradicted by the workspace, each quote is looked up in its file
(`milk_lsp.guided.verify`, one verification for both strategies), `cannot` is the model's
own verdict (a hand-off where Claude may take over). A model that only writes text is
judged by the same evidence, as an answer without citations. Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

FINISH_TOOL_NAME = "finish"
OUTCOMES = ("answered", "changed", "cannot")
INTENTS = ("question", "change")
MAX_CITATIONS = 6
MAX_PROPOSED = 4

FINISH_TOOL_SPEC: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": FINISH_TOOL_NAME,
        "description": (
            "End your turn. intent: question (the user asked something) or change (the "
            "user asked you to change files). outcome: answered (you answer), changed (you "
            "changed the files with edit_file or run_command), or cannot (you could not do "
            "it). answer: your answer, or what you changed, or why you cannot. citations: "
            "the lines your answer rests on, each with its path, line and the exact text "
            "quoted from the file. proposed: paths your answer suggests creating that do not "
            "exist yet."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "intent": {"type": "string", "enum": list(INTENTS)},
                "outcome": {"type": "string", "enum": list(OUTCOMES)},
                "answer": {"type": "string"},
                "citations": {
                    "type": "array",
                    "maxItems": MAX_CITATIONS,
                    "items": {
                        "type": "object",
                        "properties": {
                            "path": {"type": "string"},
                            "line": {"type": "integer"},
                            "quote": {"type": "string"},
                        },
                        "required": ["path", "line", "quote"],
                    },
                },
                "proposed": {
                    "type": "array",
                    "maxItems": MAX_PROPOSED,
                    "items": {"type": "string"},
                },
            },
            "required": ["intent", "outcome", "answer"],
        },
    },
}

Outcome = Literal["answered", "changed", "cannot"]


Intent = Literal["question", "change"]


@dataclass(frozen=True)
class Finish:
    """How the model says its turn ended."""

    outcome: Outcome
    summary: str
    """Its answer (`answer`, or the older `summary`): what it answered or changed, or why
    it cannot."""
    intent: Intent | None = None
    citations: tuple[dict[str, Any], ...] = ()
    """As the model wrote them (`{path, line, quote}`); milk checks each."""
    proposed: tuple[str, ...] = ()


def finish_of(arguments: dict[str, Any] | None) -> Finish:
    """The call's fields, read leniently (a small model writes `"Changed"`, or no outcome
    at all: then it answered; a citation that is no object is left out)."""
    arguments = arguments or {}
    outcome = str(arguments.get("outcome", "")).strip().lower()
    said = arguments.get("answer")
    if not isinstance(said, str) or not said.strip():
        said = arguments.get("summary")
    text = said.strip() if isinstance(said, str) else ""
    intent = str(arguments.get("intent", "")).strip().lower()
    cited = arguments.get("citations")
    citations = tuple(
        item for item in (cited if isinstance(cited, list) else []) if isinstance(item, dict)
    )[:MAX_CITATIONS]
    named = arguments.get("proposed")
    proposed = tuple(
        item.strip() for item in (named if isinstance(named, list) else []) if isinstance(item, str)
    )[:MAX_PROPOSED]
    ended: Outcome = (
        "changed" if outcome == "changed" else "cannot" if outcome == "cannot" else "answered"
    )
    return Finish(
        ended,
        text,
        intent="change" if intent == "change" else "question" if intent == "question" else None,
        citations=citations,
        proposed=proposed,
    )


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
