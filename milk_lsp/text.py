"""Small text helpers every part uses the same way: cut with an ellipsis, short JSON, fences,
the lines a diff changed.

One home so that "cut to N characters" means one thing everywhere (the ellipsis counts
toward N) and a fence is always longer than any backtick run it wraps.
"""

from __future__ import annotations

import difflib
import json
import re
from collections import Counter
from typing import Any

ELLIPSIS = "…"


def cut(text: str, limit: int) -> str:
    """`text`, or its first characters and an ellipsis: never longer than `limit`."""
    if len(text) <= limit:
        return text
    return text[: max(limit - 1, 0)] + ELLIPSIS


def one_line(text: str) -> str:
    """Runs of whitespace (line breaks too) as single spaces."""
    return " ".join(text.split())


def short_json(value: Any, limit: int = 300) -> str:
    """`value` as JSON for a one-line display, cut at `limit` (objects it cannot encode
    are shown by `str`)."""
    return cut(json.dumps(value, ensure_ascii=False, default=str), limit)


def longest_run(text: str, char: str = "`") -> int:
    """The longest run of `char` in `text`."""
    return max((len(run) for run in re.findall(re.escape(char) + "+", text)), default=0)


def fence_for(text: str, char: str = "`") -> str:
    """A fence longer than any run of `char` inside `text` (at least three)."""
    return char * max(3, longest_run(text, char) + 1)


def fenced(text: str, info: str = "") -> str:
    """`text` in a fenced block that its own backticks cannot close."""
    fence = fence_for(text)
    inner = text if text.endswith("\n") or not text else text + "\n"
    return f"{fence}{info}\n{inner}{fence}\n"


def plural(count: int, noun: str) -> str:
    """`1 file`, `2 files`: never `file(s)`."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def changed_lines(before: list[str], now: list[str]) -> set[int]:
    """The lines of `before` (1-based) an edit replaced or removed, and those around a line
    it inserted."""
    changed: set[int] = set()
    for tag, i1, i2, _, _ in difflib.SequenceMatcher(None, before, now).get_opcodes():
        if tag in ("replace", "delete"):
            changed.update(range(i1 + 1, i2 + 1))
        elif tag == "insert":
            changed.update((i1, i1 + 1))
    return changed


def blank_space_only(edited: dict[str, tuple[str | None, str | None]]) -> str | None:
    """Why edits that changed nothing but blank space, and added trailing blank space, made
    no change: every edited file, its line ends and blank lines aside, reads as before, and
    one holds more lines ending in spaces or tabs than before (a 1.5B model asked for spaces
    around `=` added lines of two spaces after six lines). Removing trailing blanks, or
    adding empty lines, is asked for; adding invisible ones never is. None otherwise.
    `edited`: each file's text before the turn and now (None: not there)."""
    grew: list[str] = []
    for path, (was, now) in edited.items():
        if was is None or now is None:
            return None  # a file made or removed is a change
        if was == now:
            continue
        if _code_lines(was) != _code_lines(now):
            return None
        if _trailing_blanks(now) > _trailing_blanks(was):
            grew.append(path)
    if not grew:
        return None
    return (
        f"the edits of {', '.join(grew)} only add blank space (spaces or tabs ending lines,"
        " lines of nothing else): they change no code"
    )


def _code_lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.splitlines() if line.strip()]


def _trailing_blanks(text: str) -> int:
    return sum(1 for line in text.splitlines() if line != line.rstrip())


def line_spans(numbers: set[int]) -> str:
    """`{3, 4, 5, 9}` as "3-5, 9"."""
    ordered = sorted(numbers)
    spans: list[str] = []
    start = previous = ordered[0] if ordered else 0
    for number in ordered[1:]:
        if number == previous + 1:
            previous = number
            continue
        spans.append(str(start) if start == previous else f"{start}-{previous}")
        start = previous = number
    spans.append(str(start) if start == previous else f"{start}-{previous}")
    return ", ".join(spans[:4])


def dropped_beside(before: str, now: str, old: str, new: str) -> list[str]:
    """The words of `before`'s changed lines holding `old` that the lines replacing them
    no longer have, `old` read as `new`: what an edit "renaming A to B" took away beside
    the rename (`dest='lowercase'` dropped from the line of the option it renamed); `old`
    is read whole, not inside a longer name (`foo` of `foo_impl`)."""
    was, became = before.split("\n"), now.split("\n")
    lost: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, was, became).get_opcodes():
        if tag != "replace" or not any(old in line for line in was[i1:i2]):
            continue
        kept = Counter(re.findall(r"\w+", "\n".join(became[j1:j2])))
        renamed = re.sub(rf"(?<![\w$-]){re.escape(old)}(?![\w$-])", new, "\n".join(was[i1:i2]))
        kept.subtract(re.findall(r"\w+", renamed))
        lost.extend(word for word, count in kept.items() if count < 0)
    return list(dict.fromkeys(lost))
