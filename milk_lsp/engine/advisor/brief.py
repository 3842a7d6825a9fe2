"""What the advisor asks Claude, in milk's words: a short system prompt of milk's own and
a brief built from what milk's local side gathered (the located lines, the repository
map, what the local model tried), so Claude plans without reading the workspace.

Claude Code's own system prompt (about 7,400 characters) and tool definitions (about
32,000) are not sent: the request is one tool-less call (`command.BRIEF_FLAGS`). The
numbered lines are marked as such, since `old_text` must be copied without the numbers.
"""

from __future__ import annotations

import difflib

from milk_lsp.engine.advisor.shape import MAX_NEEDS, MAX_STEPS, STEP_EDITS_MAX, StepEdit
from milk_lsp.guided.locate import Located
from milk_lsp.text import cut, fenced

PLAN_SYSTEM = f"""You plan code changes for milk, an editor assistant. A small local model \
or milk itself carries out each step; you cannot read files or run anything: what you know \
of the workspace is what the message shows (numbered lines: the numbers and the `| ` after \
them are not part of the file).

Answer with ONE JSON object and nothing else:
{{"steps": [{{"path": "relative/path", "old_text": "exact text of the file, copied", \
"new_text": "what replaces it", "why": "the step in a few words"}}]}}
- at most {MAX_STEPS} steps, in order; each stands alone (a step's old_text is in the file \
as it is now, not after another step) and is small: a few lines;
- old_text occurs exactly once in its file when you can make it so (widen it by a line); \
to change every occurrence in the file (a rename), add "replace_all": true; an empty \
old_text creates a new file;
- or, when the lines shown are not enough to write exact old_text, ask once for more: \
{{"needs": ["path/or/DefinitionName", ...]}} (at most {MAX_NEEDS}).
"""

STEP_SYSTEM = f"""You fix one step of a code change for milk, an editor assistant. You \
cannot read files or run anything: the message shows the step, the file's current lines \
(numbered: the numbers and the `| ` after them are not part of the file) and why the \
attempt failed.

Answer with ONE JSON object and nothing else:
{{"steps": [{{"path": "relative/path", "old_text": "exact text of the file, copied", \
"new_text": "what replaces it", "why": "a few words"}}]}}
Usually one edit (at most {STEP_EDITS_MAX}); each old_text must occur exactly once in the file \
as shown, or the edit says "replace_all": true to change every occurrence (a rename).
"""

TRIED_MAX = 1200
FILE_MAX = 6000
AROUND = 12
"""Lines shown before and after the place a step is about (`AROUND_MANY` when it is in
many places: a rename's uses)."""
AROUND_MANY = 2
PLACES_MAX = 24


def plan_brief(request: str, located: Located, tried: str = "") -> str:
    """The plan request: what the user asked, what the local model tried (a hand-off),
    and the located lines with the repository map."""
    parts = [f"The request:\n{request.strip()}"]
    if tried.strip():
        parts.append(f"What the local model already tried:\n{cut(tried.strip(), TRIED_MAX)}")
    parts.append(f"The code milk located for it:\n{located.context() or '(nothing located)'}")
    if located.repo_map:
        parts.append(f"A map of the repository (files and what they define):\n{located.repo_map}")
    return "\n\n".join(parts)


def needs_brief(first: str, needs: list[str], given: Located, missing: list[str]) -> str:
    """The second and last plan request: the first brief, then what Claude asked for."""
    shown = "\n\n".join(chunk.render() for chunk in given.chunks) or "(none found)"
    parts = [first, f"You asked for: {', '.join(needs)}. Here it is:\n{shown}"]
    if missing:
        parts.append(f"Not found in the workspace: {', '.join(missing)}.")
    parts.append("Now answer with the steps; you cannot ask again.")
    return "\n\n".join(parts)


def step_brief(number: int, request: str, step: StepEdit, text: str | None, failed: str) -> str:
    """A step Claude takes over: the step as planned, the file's current lines around
    where it applies, and the mechanical reason the local attempt failed."""
    lines = (
        f"The file does not exist: {step.path}."
        if text is None
        else f"{step.path}, its current lines:\n{lines_around(text, step.old_text)}"
    )
    planned = (
        f"Step {number} of the plan for the request {request.strip()!r}: {step.why or 'edit'}\n"
        f"In {step.path}, replace:\n{fenced(step.old_text)}with:\n{fenced(step.new_text)}"
    )
    return "\n\n".join([planned, lines, f"Why it failed: {cut(failed.strip(), TRIED_MAX)}"])


def check_brief(request: str, failed: str, lines: str) -> str:
    """After the plan's last step the project's check fails: its output and the lines it
    names, for the edits that make it pass."""
    parts = [
        f"Every step of the plan for the request {request.strip()!r} is made, and the "
        f"project's check fails now (it passed before):\n{cut(failed.strip(), TRIED_MAX)}",
        f"The lines it names:\n{lines}" if lines else "",
        "Answer with the edits that make the check pass.",
    ]
    return "\n\n".join(part for part in parts if part)


def lines_around(text: str, old_text: str) -> str:
    """The file's lines where `old_text` is (up to `PLACES_MAX` places), or where it is
    most like, numbered, within `FILE_MAX` characters; a short file whole."""
    lines = text.split("\n")
    if lines[-1] == "":  # the file's last newline starts no line
        lines.pop()
    if len(text) <= FILE_MAX:
        return _numbered(lines, 0, len(lines))
    starts = _places(text, old_text, lines)
    spans: list[tuple[int, int]] = []
    height = old_text.count("\n") + 1
    around = AROUND if len(starts) <= 2 else AROUND_MANY
    for start in starts:
        first, last = max(0, start - around), min(len(lines), start + height + around)
        if spans and first <= spans[-1][1]:
            spans[-1] = (spans[-1][0], last)
        else:
            spans.append((first, last))
    shown = "\n...\n".join(_numbered(lines, first, last) for first, last in spans)
    return cut(shown, FILE_MAX)


def _places(text: str, old_text: str, lines: list[str]) -> list[int]:
    """0-based lines where `old_text` starts; none: the line most like its first line."""
    starts: list[int] = []
    at = text.find(old_text) if old_text else -1
    while at >= 0 and len(starts) < PLACES_MAX:
        starts.append(text.count("\n", 0, at))
        at = text.find(old_text, at + 1)
    if starts:
        return starts
    first = next((line.strip() for line in old_text.split("\n") if line.strip()), "")
    stripped = [line.strip() for line in lines]
    close = difflib.get_close_matches(first, stripped, n=1, cutoff=0.0) if first else []
    return [stripped.index(close[0])] if close else [0]


def _numbered(lines: list[str], first: int, last: int) -> str:
    width = len(str(last))
    return "\n".join(f"{n:>{width}}| {lines[n - 1]}" for n in range(first + 1, last + 1))
