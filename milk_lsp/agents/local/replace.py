"""The edit_file tool's matching, pure: replace old_text once, or say why not.

Exact first, then forgiving only what small models get wrong (quotes, indentation, a trailing
comma, blank lines), and only where the match is unique (or unique inside the symbol the
request names). When old_text is not found, the failure shows the lines of the file most like
it (numbered, for a small model to copy); when it is found several times, the lines where it
starts.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass

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


@dataclass(frozen=True)
class Scope:
    """A part of the file an edit may be meant for: a symbol's lines (1-based, inclusive)."""

    name: str
    first_line: int
    last_line: int


@dataclass(frozen=True)
class Replacement:
    """The file's new text and what the edit matched, for the tool result."""

    text: str
    first_line: int
    last_line: int
    note: str = ""
    """How the match was found when it was not exact, in words ("" when exact)."""


@dataclass(frozen=True)
class _Match:
    start: int
    end: int
    first_line: int
    last_line: int
    new_text: str


def replace_once(
    current: str | None,
    old_text: str,
    new_text: str,
    where: str,
    scopes: Sequence[Scope] = (),
    *,
    scope_given: bool = False,
) -> Replacement:
    """Replace `old_text` once, or raise `EditDoesNotApply` saying why (with the closest text
    of the file, or where the several matches are, for the model to retry).

    The match is exact first; then with `'` and `"` taken as the same; then line by line,
    forgiving what small models get wrong and nothing more (indentation and runs of spaces, a
    trailing comma or colon, blank lines). Each way counts only when it matches exactly once;
    several matches are narrowed to `scopes` (the symbol the request or the call names: one
    scope holding exactly one match decides). With `scope_given` the edit must fall in the
    scope (the model named it)."""
    if current is None:
        if old_text:
            raise EditDoesNotApply(
                f"File not found: {where}. To create it, call edit_file with an empty old_text."
            )
        return Replacement(new_text, 1, _line_count(new_text))
    if not old_text:
        if current:
            raise EditDoesNotApply(
                f"{where} already exists and is not empty: old_text must quote the text to replace."
            )
        return Replacement(new_text, 1, _line_count(new_text))
    if "\r\n" in current and "\r\n" not in old_text:
        # The model writes `\n`; a CRLF file needs its own line endings on both sides.
        old_text = old_text.replace("\n", "\r\n")
        new_text = new_text.replace("\r\n", "\n").replace("\n", "\r\n")
    notes = ("", "taking ' and \" as the same", _FORGIVEN, _FORGIVEN_BREAKS)
    ways = (_exact, _any_quotes, _line_by_line, _across_lines)
    for way, note in zip(ways, notes, strict=True):
        matches = way(current, old_text, new_text)
        if scope_given and scopes:
            matches = [m for m in matches if _inside(m, scopes[0])]
        if not matches:
            continue
        chosen, narrowed = _one_of(matches, scopes)
        if chosen is None:
            lines = ", ".join(dict.fromkeys(str(m.first_line) for m in matches[:20]))
            raise EditDoesNotApply(
                f"old_text occurs {len(matches)} times in {where} (on lines {lines}); include"
                " more of the surrounding lines so that it matches exactly once, or give symbol"
                " (the function or class it is in)."
            )
        text = current[: chosen.start] + chosen.new_text + current[chosen.end :]
        return Replacement(text, chosen.first_line, chosen.last_line, _joined(note, narrowed))
    changed = _change_only(current, old_text, new_text)
    if changed is not None and (not scope_given or not scopes or _inside(changed, scopes[0])):
        text = current[: changed.start] + changed.new_text + current[changed.end :]
        was, now = old_text[changed.old_start : changed.old_end], changed.new_text
        note = (
            f"only the part that differs, {_quoted(was)} → {_quoted(now)}: the rest of old_text"
            " did not match the file exactly and was left as the file has it"
        )
        return Replacement(text, changed.first_line, changed.last_line, note)
    inside = f" inside {scopes[0].name}" if scope_given and scopes else ""
    raise EditDoesNotApply(
        f"old_text occurs 0 times{inside} in {where}; it must match the file exactly, whitespace"
        f" and indentation included. {_closest_text(current, old_text)}"
    )


def replace_all(
    current: str, old_text: str, new_text: str, where: str, scopes: Sequence[Scope] = ()
) -> Replacement:
    """Replace every exact occurrence of `old_text` (inside `scopes[0]` when given): a rename.
    None found is the same failure as for one edit."""
    if "\r\n" in current and "\r\n" not in old_text:
        old_text = old_text.replace("\n", "\r\n")
        new_text = new_text.replace("\r\n", "\n").replace("\n", "\r\n")
    matches = _exact(current, old_text, new_text)
    if _NAME.fullmatch(old_text):  # a name: whole words only (`max` is not in `max_length`)
        matches = [m for m in matches if _whole_word(current, m)]
    if scopes:
        matches = [m for m in matches if _inside(m, scopes[0])]
    note = ""
    renamed = None if matches else _renamed_name(old_text, new_text)
    if renamed is not None:  # "rename X to Y everywhere", said with one line that has X
        old_text, new_text = renamed
        matches = [m for m in _exact(current, old_text, new_text) if _whole_word(current, m)]
        matches = [m for m in matches if not scopes or _inside(m, scopes[0])]
        note = f"the name {old_text} everywhere, as replace_all asks"
    if not matches:
        return replace_once(
            current, *(renamed or (old_text, new_text)), where, scopes, scope_given=bool(scopes)
        )
    pieces, at = [], 0
    for match in matches:
        pieces += [current[at : match.start], new_text]
        at = match.end
    pieces.append(current[at:])
    lines = ", ".join(str(m.first_line) for m in matches[:20])
    every = f"all {len(matches)} occurrences, on lines {lines}" if len(matches) > 1 else ""
    return Replacement(
        "".join(pieces), matches[0].first_line, matches[-1].last_line, _joined(note, every)
    )


def _renamed_name(old_text: str, new_text: str) -> tuple[str, str] | None:
    """The one name old_text and new_text differ in (`NUMBERS_PATTERN = re.compile(…)` to
    `COMMA = re.compile(…)`: NUMBERS_PATTERN, COMMA), None when they differ otherwise."""
    hunk = _one_hunk(old_text, new_text)
    if hunk is None:
        return None
    old_tokens, new_tokens, i1, i2, j1, j2 = hunk
    if i2 - i1 != 1 or j2 - j1 != 1:
        return None
    was, now = old_tokens[i1], new_tokens[j1]
    return (was, now) if _NAME.fullmatch(was) and _NAME.fullmatch(now) else None


def _one_hunk(
    old_text: str, new_text: str
) -> tuple[list[str], list[str], int, int, int, int] | None:
    """The tokens of both texts and the one place they differ (old i1:i2, new j1:j2), None
    when they differ in no place or in several."""
    old_tokens, new_tokens = _TOKEN.findall(old_text), _TOKEN.findall(new_text)
    matcher = difflib.SequenceMatcher(None, old_tokens, new_tokens, autojunk=False)
    hunks = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    if len(hunks) != 1:
        return None
    _, i1, i2, j1, j2 = hunks[0]
    return old_tokens, new_tokens, i1, i2, j1, j2


_NAME = re.compile(r"[A-Za-z_]\w*")


def _whole_word(current: str, match: _Match) -> bool:
    before = current[match.start - 1] if match.start else " "
    after = current[match.end] if match.end < len(current) else " "
    return not (_is_word(before) or _is_word(after))


def already_made(current: str, old_text: str, new_text: str) -> int | None:
    """The line where `new_text` already stands once when `old_text` is gone from the rest
    of the file: the model repeats an edit it made before (small models do), which is
    nothing to change. Exact text only (quotes aside)."""
    new = new_text.strip("\n")
    if not (old_text.strip() and new.strip()) or new.strip() in old_text:
        return None
    swap = str.maketrans("'", '"')
    for have, old, made in (
        (current, old_text, new),
        (current.translate(swap), old_text.translate(swap), new.translate(swap)),
    ):
        if have.count(made) == 1 and old not in have.replace(made, "\x00"):
            return have.count("\n", 0, have.find(made)) + 1
    return None


_FORGIVEN_BREAKS = "ignoring differences of spaces, line breaks and quotes"
_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")
CHANGE_ONLY_MIN_CONTEXT = 8
"""Characters of old_text around its change that must match the file where the change goes."""


@dataclass(frozen=True)
class _ChangedPart:
    """Where the one changed part of an edit goes in the file, and its span in old_text."""

    start: int
    end: int
    first_line: int
    last_line: int
    new_text: str
    old_start: int
    old_end: int


def _change_only(current: str, old_text: str, new_text: str) -> _ChangedPart | None:
    """The edit's one changed part, put where the file has it, when the text the model
    copied around it is partly wrong: a small model renaming `NUMBERS_PATTERN` miscopies the
    regex beside it, though old_text and new_text agree on it. Only when old_text and
    new_text differ in one place, the changed part is in the file verbatim, the text next to
    it matches the file for most of old_text, and one place matches best; what the model got
    wrong around the change is not written (it meant to keep it)."""
    hunk = _one_hunk(old_text, new_text)
    if hunk is None:
        return None
    old_tokens, new_tokens, i1, i2, j1, j2 = hunk
    old_start = len("".join(old_tokens[:i1]))
    old_end = old_start + len("".join(old_tokens[i1:i2]))
    core, replacement = old_text[old_start:old_end], "".join(new_tokens[j1:j2])
    if not re.search(r"\w", core):
        return None
    before, after = old_text[:old_start], old_text[old_end:]
    scored: list[tuple[int, int]] = []
    at = current.find(core)
    while at != -1 and len(scored) < 200:
        end = at + len(core)
        left = _common_suffix(before, current[max(0, at - len(before)) : at])
        right = _common_prefix(after, current[end : end + len(after)])
        bounded = (left or not _is_word(core[0]) or at == 0 or not _is_word(current[at - 1])) and (
            right
            or not _is_word(core[-1])
            or at + len(core) == len(current)
            or not _is_word(current[at + len(core)])
        )
        if bounded:
            scored.append((left + right, at))
        at = current.find(core, at + 1)
    if not scored:
        return None
    scored.sort(reverse=True)
    best, at = scored[0]
    runner_up = scored[1][0] if len(scored) > 1 else -1
    covered = best + len(core)
    if (
        best < CHANGE_ONLY_MIN_CONTEXT
        or best == runner_up
        or 3 * covered < 2 * len(old_text.strip())
    ):
        return None
    first = current.count("\n", 0, at) + 1
    return _ChangedPart(
        at, at + len(core), first, first + core.count("\n"), replacement, old_start, old_end
    )


def _common_prefix(a: str, b: str) -> int:
    count = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        count += 1
    return count


def _common_suffix(a: str, b: str) -> int:
    return _common_prefix(a[::-1], b[-len(a) :][::-1] if a else "")


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


def _quoted(text: str) -> str:
    shown = " ".join(text.split())
    return f"`{shown[:60]}`" if shown else "nothing"


def _across_lines(current: str, old_text: str, new_text: str) -> list[_Match]:
    """Matches with every run of whitespace, line breaks included, taken as none, and
    quotes as the same: a call written on one line that the file spreads over two. The
    match spans from its first to its last non-space character; new_text goes there with
    its own leading indentation dropped (the file's stays). Whole lines only."""
    wanted = "".join(old_text.split()).translate(str.maketrans("'", '"'))
    if len(wanted) < 8:
        return []  # a short fragment without spaces would match almost anywhere
    kept: list[int] = []  # offsets in `current` of its non-space characters
    for offset, char in enumerate(current):
        if not char.isspace():
            kept.append(offset)
    squeezed = "".join(current[offset] for offset in kept).translate(str.maketrans("'", '"'))
    found: list[_Match] = []
    start = squeezed.find(wanted)
    while start != -1 and len(found) < 20:
        first, last = kept[start], kept[start + len(wanted) - 1] + 1
        start = squeezed.find(wanted, start + 1)
        line_start = current.rfind("\n", 0, first) + 1
        line_end = current.find("\n", last)
        rest = current[last : len(current) if line_end == -1 else line_end]
        if current[line_start:first].strip() or rest.strip():
            continue  # whole lines only: never part of a line
        first_line = current.count("\n", 0, first) + 1
        found.append(
            _Match(
                first,
                last,
                first_line,
                first_line + current.count("\n", first, last),
                new_text.strip(),
            )
        )
    return found


_FORGIVEN = "ignoring differences of indentation, spaces, quotes, trailing commas and blank lines"


def _joined(note: str, narrowed: str) -> str:
    return "; ".join(part for part in (note, narrowed) if part)


def _inside(match: _Match | _ChangedPart, scope: Scope) -> bool:
    return scope.first_line <= match.first_line and match.last_line <= scope.last_line


def _one_of(matches: list[_Match], scopes: Sequence[Scope]) -> tuple[_Match | None, str]:
    """The one match, or the one inside the one scope that holds exactly one."""
    if len(matches) == 1:
        return matches[0], ""
    for scope in scopes:
        inside = [m for m in matches if _inside(m, scope)]
        if len(inside) == 1:
            others = ", ".join(str(m.first_line) for m in matches if m is not inside[0])
            return inside[0], (
                f"the one inside {scope.name} (lines {scope.first_line}-{scope.last_line});"
                f" old_text also occurs on line(s) {others}, left unchanged"
            )
    return None, ""


def _exact(current: str, old_text: str, new_text: str) -> list[_Match]:
    return _occurrences(current, current, old_text, new_text)


def _any_quotes(current: str, old_text: str, new_text: str) -> list[_Match]:
    """Matches with ' and " the same (one character for one, so offsets carry over)."""
    if "'" not in old_text and '"' not in old_text:
        return []
    swap = str.maketrans("'", '"')
    return _occurrences(current, current.translate(swap), old_text.translate(swap), new_text)


def _occurrences(current: str, haystack: str, needle: str, new_text: str) -> list[_Match]:
    found: list[_Match] = []
    start = haystack.find(needle)
    while start != -1 and len(found) < 200:
        first = current.count("\n", 0, start) + 1
        last = first + needle.rstrip("\r\n").count("\n")
        found.append(_Match(start, start + len(needle), first, last, new_text))
        start = haystack.find(needle, start + len(needle))
    return found


_SPACES = re.compile(r"\s+")
_SPACED_MARK = re.compile(r" ?([^\w\s]) ?")


def _normal(line: str) -> str:
    """A line as the forgiving match compares it: spaces matter only between words."""
    text = _SPACES.sub(" ", line.strip()).translate(str.maketrans("'", '"'))
    return _SPACED_MARK.sub(r"\1", text).rstrip(",:")


def _line_by_line(current: str, old_text: str, new_text: str) -> list[_Match]:
    """Whole-line matches of old_text's lines, forgiving indentation, spaces, quotes, a
    trailing comma or colon and blank lines; new_text is indented as the file's lines are
    and keeps the trailing comma or colon old_text left out."""
    wanted = [_normal(line) for line in old_text.split("\n") if line.strip()]
    if not wanted:
        return []
    lines = split_lines(current)
    kept = [number for number, line in enumerate(lines) if line.strip()]
    normal = {number: _normal(lines[number]) for number in kept}
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    found: list[_Match] = []
    for at in range(len(kept) - len(wanted) + 1):
        window = kept[at : at + len(wanted)]
        if any(normal[number] != want for number, want in zip(window, wanted, strict=True)):
            continue
        first, last = window[0], window[-1]
        ending = lines[last][len(lines[last].rstrip("\r\n")) :]
        body = _fitted(new_text, old_text, [lines[number] for number in window])
        found.append(
            _Match(
                starts[first], starts[last + 1], first + 1, last + 1, body + ending if body else ""
            )
        )
    return found


def _fitted(new_text: str, old_text: str, matched: list[str]) -> str:
    """new_text indented as the file's matched lines are (line for line when it has as many
    lines as old_text, else shifted as the first line is), with the trailing comma or colon
    of the file's last matched line when old_text and new_text both left it out."""
    new_lines = new_text.strip("\r\n").split("\n")
    if not any(line.strip() for line in new_lines):
        return ""
    old_lines = [line for line in old_text.split("\n") if line.strip()]
    pairs = (
        list(zip(old_lines, matched, strict=True))
        if len(new_lines) == len(old_lines) == len(matched)
        else [(old_lines[0], matched[0])] * len(new_lines)
    )
    shifted = []
    for line, (old, have) in zip(new_lines, pairs, strict=True):
        shift = len(_indent(have)) - len(_indent(old))
        if not line.strip():
            shifted.append("")
        elif shift >= 0:
            shifted.append(_indent(have)[:shift] + line)
        else:
            shifted.append(line[min(-shift, len(_indent(line))) :])
    file_last = matched[-1].rstrip()
    tail = file_last[-1] if file_last[-1:] in (",", ":") else ""
    if tail and not old_lines[-1].rstrip().endswith(tail) and not shifted[-1].endswith(tail):
        shifted[-1] = shifted[-1].rstrip() + tail
    return "\n".join(shifted)


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _line_count(text: str) -> int:
    return max(1, len(split_lines(text)))


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
