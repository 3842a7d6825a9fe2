"""Did the local edits do what the request asked? Evidence in the files, not the words.

Asked to change a description from "Slug string" to "Make a slug from text", a 1.5B model
edited another line. A request that writes texts as code or in quotes names what the
change is about: edits that leave every one of them as it was, or lie away from every line
naming them, are not the change asked for; a file named that the workspace does not have
must be created. No connecting word of any language ("to", "を…に") is read: only the
quoted and code-shaped texts and the diff.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from milk_lsp.agents.local.judge.asked import code_shaped, straight_quotes
from milk_lsp.code import added_at_heads
from milk_lsp.text import changed_lines, dropped_beside, line_spans

if TYPE_CHECKING:
    from milk_lsp.workspace.index import WorkspaceIndex

_QUOTED = re.compile(r'"([^"\n]{1,200})"')
_PATHISH = re.compile(r"\S*[/\\]\S*|\S+\.[A-Za-z]{1,5}\b")
_IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*")
_OPTION_OR_NAME = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*|[A-Za-z_$][\w$]*")
"""A command-line option (`--no-lowercase`) or a name."""
_BLOCK = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*\n(.*?)^[ \t]*\1[ \t]*$", re.DOTALL | re.MULTILINE)
HELD_LINE = 12
"""A shown line shorter than this (`}`, `return x`) proves no block rewrites it."""
_ELIDED = re.compile(r"^\W*(?:\.\.\.|…)\W*$")
"""`...`, `// …`: a line left out, not one written."""


def _named_texts(request: str) -> list[str]:
    """What the request writes in quotes of any style, else its code-shaped names and
    command-line options, in order."""
    quoted = [text for text in _QUOTED.findall(straight_quotes(request)) if text.strip()]
    if quoted:
        return list(dict.fromkeys(quoted))
    text = _PATHISH.sub(" ", request)
    words = _OPTION_OR_NAME.findall(text)
    return list(dict.fromkeys(w for w in words if w.startswith("-") or code_shaped(w)))


def _count(text: str | None, wanted: str) -> int:
    if not text:
        return 0
    if _IDENTIFIER.fullmatch(wanted):  # a name: whole words only, not inside longer names
        return len(re.findall(rf"(?<![\w$-]){re.escape(wanted)}(?![\w$-])", text))
    return text.count(wanted)


def spelled_out_change(request: str, index: WorkspaceIndex) -> bool:
    """Whether the request spells out a change by its structure: among the texts it quotes
    (or the names it writes as code) is one this workspace holds (every identifier of it
    is in some file) and one it does not (an old text and a new one: "rename `digits` to
    `count_digits`", «A» в «B», 「A」を「B」に). Such a request answered in words with no
    file changed did not do what was asked, whatever the answer says."""
    named = [text for text in _named_texts(request) if _IDENTIFIER.search(text)]
    if len(named) < 2:
        return False
    held = [all(index.has_name(word) for word in _IDENTIFIER.findall(text)) for text in named]
    return any(held) and not all(held)


def unmade_change(request: str, edited: dict[str, tuple[str | None, str | None]]) -> str | None:
    """Why the edits did not make the change the request spells out, in words: it quotes
    (or writes as code) a text an edited file held and one none held (an old and a new
    text, in any order and language), and every old text stands in every edited file as
    often as before (a new text holding the old one, "X = 10" of "X = 1", not counted).
    None when an old text changed, nothing was edited, or no such pair is named. `edited`:
    each file's text before the turn and now (None: not there). The same for the numbers
    it writes, whole ("von 0 auf 130" answered by `kill('SIGINT', 130)`); a held number
    that is a changed line's number ("on line 42 …") names the line, unjudged."""
    numbers = list(dict.fromkeys(_NUMBER.findall(_PATHISH.sub(" ", request))))
    lines = (
        {
            line
            for was, now in edited.values()
            if was is not None and now is not None
            for line in changed_lines(was.split("\n"), now.split("\n"))
        }
        if len(numbers) > 1
        else set()
    )
    return _unmade(_named_texts(request), edited, _count, nested=True) or _unmade(
        numbers, edited, _count_number, skip={str(line) for line in lines}
    )


def _unmade(
    named: list[str],
    edited: dict[str, tuple[str | None, str | None]],
    count: Callable[[str | None, str], int],
    *,
    nested: bool = False,
    skip: set[str] | None = None,
) -> str | None:
    """`unmade_change` for `named` texts counted by `count` (`nested`: a new text holding
    an old one hides that many of its occurrences; `skip`: held texts not judged)."""
    if len(named) < 2 or not edited:
        return None
    held = [text for text in named if any(count(before, text) for before, _ in edited.values())]
    new = [text for text in named if text not in held]
    held = [text for text in held if text not in (skip or set())]
    if not held or not new:
        return None

    def standing(text: str | None, old: str) -> int:
        inside = sum(count(text, other) for other in new if nested and old in other)
        return count(text, old) - inside

    for old in held:
        if any(standing(before, old) != standing(now, old) for before, now in edited.values()):
            return _dropped(edited, old, new[0]) if nested and len(held) == len(new) == 1 else None
    written = any(count(now, t) > count(was, t) for t in new for was, now in edited.values())
    if not written and all(added_at_heads(p, *texts, held) for p, texts in edited.items()):
        return None  # lines at the named definitions' heads: "a JSDoc comment for parseCommand"
    return (
        f'the request asks to change "{held[0]}" to "{new[0]}", but the local model\'s'
        f' edits left "{held[0]}" as it was in {", ".join(edited)}'
    )


def _dropped(edited: dict[str, tuple[str | None, str | None]], old: str, new: str) -> str | None:
    """What the edits took away beside changing `old` into `new` (`text.dropped_beside`)."""
    for path, (was, now) in edited.items():
        if lost := dropped_beside(was or "", now or "", old, new):
            return (
                f'the local model\'s edits changed "{old}" to "{new}" in {path} but also took'
                f" away {', '.join(lost)} beside it: keep the rest of those lines as they were"
            )
    return None


_NUMBER = re.compile(r"(?<![A-Za-z0-9_.$#])\d+(?:\.\d+)*(?![A-Za-z0-9_$]|\.\d)")
"""A number as a whole (`130`, `3.11`), not a part of a name (`SHA1`, `v6`) or a longer one;
next to a letter of a script without spaces (从0改成130) it is whole."""


def _count_number(text: str | None, number: str) -> int:
    if not text:
        return 0
    return len(re.findall(rf"(?<![A-Za-z0-9_.$]){re.escape(number)}(?![A-Za-z0-9_$]|\.\d)", text))


_MEMBER = re.compile(r"(?<![\w$.])([A-Za-z_$][\w$]*)\.([A-Za-z_$][\w$]*)(?![\w$(]|\.\w)")


def unwritten_member(
    request: str, edited: dict[str, tuple[str | None, str | None]], index: WorkspaceIndex
) -> str | None:
    """The request writes a new member of an object an edited file holds (`options.quiet`:
    `options` there, `quiet` in no file here) and no edit wrote it: in words, else None.
    dotenv's "read DOTENV_CONFIG_QUIET into options.quiet" got a `DOTENV_CONFIG_QUIET:` key."""
    extensions = index.file_extensions()
    for match in _MEMBER.finditer(request):
        holder, member = match.groups()
        if min(len(holder), len(member)) < 2 or member in extensions or index.has_name(member):
            continue  # `e.g.`, `main.py`, a member the workspace has
        if any(_count(was, holder) for was, _ in edited.values()) and not any(
            _count(now, member) > _count(was, member) for was, now in edited.values()
        ):
            edits = ", ".join(edited)
            return f"the request writes {match.group()}; the edits wrote no {member} in {edits}"
    return None


def line_rank(request: str, names: Sequence[str] = ()) -> Callable[[str], int]:
    """How a line stands to what the request writes: 2 holding a text it quotes or writes
    as code, or a number it writes; 1 naming a definition it names (`names`) or a word it
    writes as code; 0 neither."""
    texts = _named_texts(request)
    numbers = list(dict.fromkeys(_NUMBER.findall(_PATHISH.sub(" ", request))))
    marks = sorted(set(names) | _named_in(request))

    def rank(line: str) -> int:
        if any(_count(line, t) for t in texts) or any(_count_number(line, n) for n in numbers):
            return 2
        return 1 if any(_mentions(line, mark) for mark in marks) else 0

    return rank


def no_new_file(
    new_files: Sequence[str], edited: dict[str, tuple[str | None, str | None]]
) -> str | None:
    """The request names files the workspace does not have (`new_files`, `scope.reach`) and
    the turn's edits created none, only changed files that were there: in words, else None."""
    if not edited or not new_files:
        return None
    if any(before is None and now is not None for before, now in edited.values()):
        return None
    return (
        f"the request names {', '.join(new_files[:3])}, which the workspace does not have, but"
        f" the local model's edits created no file (they changed {', '.join(edited)})"
    )


NEAR_LINES = 3
"""An edit this many lines from a line naming what the request names is an edit of it."""


def edits_elsewhere(
    request: str,
    edited: dict[str, tuple[str | None, str | None]],
    names: Sequence[str] = (),
    files: Sequence[str] = (),
) -> str | None:
    """Why the edits are not the change asked for, by the diff, in words (None: an edit is
    near what the request names: `names`, its definitions, and its words written as code,
    `SIGINT`, `"inherit"`). Away: every changed line of a file that has those lies outside
    the definition around them and over `NEAR_LINES` from them ("… bei SIGINT von 0 auf
    130" edited line 1), or the file has none of them and the request does not name it, or
    it names `files` and no edit is in one, nor new (a comment in src/index.js for "In
    src/command.js change the default…")."""
    if files and all(was for was, _ in edited.values()) and not set(files) & set(edited):
        where = f"it names {', '.join(files[:2])}, the edits changed {', '.join(edited)}"
        return f"the local model's edits are away from what the request names: {where}"
    named = set(names) | _named_in(request)
    if not named:
        return None
    away: list[str] = []
    for path, (before, now) in edited.items():
        if not before or now is None or before == now:
            continue
        lines = before.split("\n")
        marks = [name for name in sorted(named) if _mentions(before, name)]
        stem = path.rsplit("/", 1)[-1].split(".")[0].lower()
        if not marks and names and stem not in request.lower():
            away.append(f"{path} (it has none of {', '.join(sorted(names)[:3])})")
        if not marks:
            continue
        near = _near_lines(path, before, lines, marks)
        changed = changed_lines(lines, now.split("\n"))
        if changed & near:
            return None
        away.append(f"{path} (the request names {marks[0]}; lines {line_spans(changed)} changed)")
    if not away:
        return None
    return f"the local model's edits are away from what the request names: {'; '.join(away)}"


def _named_in(request: str) -> set[str]:
    """The words a request writes as code: with code's shape, in capitals (`SIGINT`), or in
    quotes of any style; its paths left out (`src/index.js` names a file, not code)."""
    text = _PATHISH.sub(" ", straight_quotes(request))
    quoted = {
        word for span in re.findall(r'"([^"\n]+)"', text) for word in _IDENTIFIER.findall(span)
    }
    words = set(_IDENTIFIER.findall(text))
    return {
        word
        for word in words
        if len(word) >= 3
        and (code_shaped(word) or (word.isupper() and len(word) >= 4) or word in quoted)
    }


def _mentions(text: str, name: str) -> bool:
    return re.search(rf"(?<![\w$]){re.escape(name)}(?![\w$])", text) is not None


def _near_lines(path: str, before: str, lines: list[str], marks: list[str]) -> set[int]:
    """The lines (1-based) of `before` near the marks: each line naming one, `NEAR_LINES`
    around it, and the smallest definition holding it (its parse, in any language)."""
    from milk_lsp.code import definitions, language_for  # off start-up

    language = language_for(path)
    spans = [
        (found.first_line, found.last_line)
        for found in (definitions(before, language) if language is not None else [])
    ]
    near: set[int] = set()
    for number, line in enumerate(lines, 1):
        if not any(_mentions(line, mark) for mark in marks):
            continue
        near.update(range(number - NEAR_LINES, number + NEAR_LINES + 1))
        holding = [span for span in spans if span[0] <= number <= span[1]]
        if holding:
            first, last = min(holding, key=lambda span: span[1] - span[0])
            near.update(range(first, last + 1))
    return near


def rewritten_code(answer: str, shown: str) -> bool:
    """Whether a fenced block of `answer` rewrites code the turn was shown: it holds a line
    of `shown` (at least `HELD_LINE` characters) and a line of its own (not an ellipsis).
    That is a change written out for the user instead of made. A block that copies shown
    lines, or holds none of them (new code, an example of use), rewrites nothing."""
    for match in _BLOCK.finditer(answer):
        lines = [line.strip() for line in match[2].splitlines() if line.strip()]
        held = [line for line in lines if line in shown]
        own = [line for line in lines if line not in shown and not _ELIDED.match(line)]
        if own and any(len(line) >= HELD_LINE for line in held):
            return True
    return False
