"""The edit_file tool's matching, pure: replace old_text exactly once, or say why not.

When old_text is not found, the failure shows the lines of the file most like it (numbered,
for a small model to copy); when it is found several times, the lines where it starts.
"""

from __future__ import annotations

import difflib
import re

CLOSEST_TEXT_MAX_LINES = 12
"""Lines of the file shown when an edit's old_text is not found."""
CLOSEST_TEXT_CANDIDATES = 20
CLOSEST_TEXT_PROBE_LINES = 50
CLOSEST_TEXT_MAX_POSTINGS = 200
"""Finding the closest text: windows compared with difflib, lines of old_text used, and how
many lines a word may be on and still point somewhere."""
_WORD = re.compile(r"\w+")


class EditDoesNotApply(Exception):
    """The edit cannot apply; the message tells the model why and how to retry."""


def split_lines(text: str) -> list[str]:
    """Lines with their endings, split at `\\n` only (as editors number them)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def replace_once(current: str | None, old_text: str, new_text: str, where: str) -> str:
    """The new whole text, or an `EditDoesNotApply` saying why the edit cannot apply (with
    the closest text of the file, or where the several matches are, for the model to retry)."""
    if current is None:
        if old_text:
            raise EditDoesNotApply(
                f"File not found: {where}. To create it, call edit_file with an empty old_text."
            )
        return new_text
    if not old_text:
        if current:
            raise EditDoesNotApply(
                f"{where} already exists and is not empty: old_text must quote the text to replace."
            )
        return new_text
    count = current.count(old_text)
    if count == 0 and "\r\n" in current and "\n" in old_text and "\r\n" not in old_text:
        # The model writes `\n`; a CRLF file needs its own line endings on both sides.
        crlf_old = old_text.replace("\n", "\r\n")
        if current.count(crlf_old):
            old_text, count = crlf_old, current.count(crlf_old)
            new_text = new_text.replace("\r\n", "\n").replace("\n", "\r\n")
    if count == 0:
        raise EditDoesNotApply(
            f"old_text occurs 0 times in {where}; it must match the file exactly, whitespace"
            f" and indentation included. {_closest_text(current, old_text)}"
        )
    if count > 1:
        raise EditDoesNotApply(
            f"old_text occurs {count} times in {where} (on lines"
            f" {_occurrence_lines(current, old_text)}); include more of the surrounding lines"
            " so that it matches exactly once."
        )
    return current.replace(old_text, new_text, 1)


def _occurrence_lines(text: str, needle: str, most: int = 20) -> str:
    """The numbers of the lines where `needle` starts (counted as str.count counts)."""
    numbers: list[str] = []
    start = text.find(needle)
    while start != -1 and len(numbers) < most:
        number = str(text.count("\n", 0, start) + 1)
        if number not in numbers:
            numbers.append(number)
        start = text.find(needle, start + len(needle))
    return ", ".join(numbers) + (", ..." if start != -1 else "")


def _closest_text(current: str, old_text: str) -> str:
    """The lines of `current` most like `old_text`, numbered, for a small model to copy."""
    lines = [line.rstrip("\r\n") for line in split_lines(current)]  # numbered as editors do
    if not lines:
        return "The file is empty."
    wanted = [line.rstrip("\r\n") for line in split_lines(old_text.strip("\r\n"))] or [""]
    size = min(len(wanted), len(lines))
    best_start = _closest_start(lines, wanted, size)
    context = max(0, (CLOSEST_TEXT_MAX_LINES - size) // 2)
    first = max(0, best_start - context)
    last = min(len(lines), best_start + size + context, first + CLOSEST_TEXT_MAX_LINES)
    width = len(str(last))
    numbered = "\n".join(
        f"{number:>{width}} | {lines[number - 1]}" for number in range(first + 1, last + 1)
    )
    return (
        f"The closest text in the file is (lines {first + 1}-{last}; the numbers and ' | ' are"
        f" not part of the file):\n{numbered}\nCopy old_text exactly from the file's text"
        " (read_file shows it) and try again."
    )


def _closest_start(lines: list[str], wanted: list[str], size: int) -> int:
    """Where the window of `size` lines most like `wanted` starts.

    Candidate windows first, cheaply: each word of the first wanted lines votes for the
    windows that would put it where it is in old_text, rarer words weighing more (so one
    line copied with its indentation changed, the usual slip, points at the right place).
    Then difflib's ratio, line by line, picks among the best few.
    """
    last_start = len(lines) - size
    postings: dict[str, list[int]] = {}
    for number, line in enumerate(lines):
        for word in set(_WORD.findall(line)):
            postings.setdefault(word, []).append(number)
    votes: dict[int, float] = {}
    probe = wanted[:CLOSEST_TEXT_PROBE_LINES]
    for offset, line in enumerate(probe):
        for word in set(_WORD.findall(line)):
            found = postings.get(word, [])
            if 0 < len(found) <= CLOSEST_TEXT_MAX_POSTINGS:
                for number in found:
                    start = min(max(0, number - offset), last_start)
                    votes[start] = votes.get(start, 0.0) + 1 / len(found)
    starts = sorted(votes, key=lambda start: -votes[start])[:CLOSEST_TEXT_CANDIDATES] or [0]
    likeness = difflib.SequenceMatcher(None, autojunk=False)

    def score(start: int) -> float:
        total = 0.0
        for have, want in zip(lines[start : start + len(probe)], probe, strict=False):
            likeness.set_seqs(have.strip(), want.strip())
            total += likeness.ratio()
        return total

    return max(starts, key=lambda start: (score(start), -start))
