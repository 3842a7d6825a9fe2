"""Did the local edits do what the request asked? Evidence in the files, not the words.

Asked "Add a one-line docstring to slugify_params", a 1.5B model appended
`# Add a one-line docstring to the function slugify_params…` to the function and said it
was done: the file still parses, so no check after the edit catches it, and the turn would
end as if the change had been made. Such an edit is refused with what to do instead.
Asked to change a description from "Slug string" to "Make a slug from text", it edited
another line, and asked to rename the dict `suffixes`, it renamed a key inside it: a
request that spells out what to change is not done while the edits left that as it was.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePath

from milk_lsp.agents.local.judge.grounding.hints import (
    CHANGE,
    CHANGE_INTO,
    asks_for_new_file,
    straight_quotes,
)

_QUOTED_CHANGE = re.compile(
    rf"""(["'])(?P<old>[^"'\n]{{1,200}})\1\s*(?:{CHANGE_INTO})\s*(["'])(?P<new>[^"'\n]{{1,200}})\3""",
    re.IGNORECASE,
)
"""`from "A" to "B"`, `"A" with "B"`, `«A» в «B»`, `「A」を「B」に`: a change the request spells
out, old and new text (quotes of every style made straight first)."""
_RENAME = re.compile(
    r"\brename\s+(?:[\w-]+\s+){0,4}?`?(?P<old>-{0,2}[A-Za-z_][\w.-]*)`?\s+(?:to|as|into)\s+"
    r"`?(?P<new>-{0,2}[A-Za-z_][\w-]*)",
    re.IGNORECASE,
)
"""`rename the constant NUMBERS_PATTERN to NUMBER_COMMA_PATTERN`, `rename --a to --b`."""
_COMMENT = re.compile(r"^\s*(?:#|//)")
_WORD = re.compile(r"[a-z0-9_]+")
ECHO_MIN_WORDS = 3
ECHO_SHARE = 0.6
"""A comment echoes the request when at least this share of its words are the request's."""


def echoes_request(path: str, before: str, after: str, request: str) -> str | None:
    """Why the edit from `before` to `after` is no change (it only adds comment lines whose
    words are mostly the user's `request`), in words for the model; None when it changes
    something, comments on its own, or the request asks for a comment."""
    if re.search(r"\bcomment", request, re.IGNORECASE):
        return None
    old, new = before.split("\n"), after.split("\n")
    added: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new).get_opcodes():
        if tag == "equal":
            continue
        if any(line.strip() for line in old[i1:i2]):
            return None  # something was removed or rewritten: a real change
        added += [line for line in new[j1:j2] if line.strip()]
    if not added or not all(_COMMENT.match(line) for line in added):
        return None
    words = _WORD.findall(" ".join(added).lower())
    asked = set(_WORD.findall(request.lower()))
    if len(words) < ECHO_MIN_WORDS or sum(w in asked for w in words) < ECHO_SHARE * len(words):
        return None
    shown = " ".join(added[0].split())[:80]
    said = (
        f"Not made: this edit only adds the request as a comment (`{shown}`), which changes no"
        " code. Make the change the request asks for."
    )
    if "docstring" in request.lower() and PurePath(path).suffix in (".py", ".pyi"):
        said += (
            " A docstring is a string literal as the first line of the body: right under the"
            ' `def …:` line, indented like the body, for example `    """Say what it does."""`.'
        )
    return said


@dataclass(frozen=True)
class RequestedChange:
    """The old and new text of a change the request spells out."""

    old: str
    new: str
    word: bool
    """A name (a rename): counted as a whole word, not inside longer names."""

    def count(self, text: str | None) -> int:
        """How often the old text stands in `text`, not counting where it is part of the new
        text ("X = 1" to "X = 10": the new line has the old one inside it)."""
        if not text:
            return 0
        if not self.word:
            inside_new = self.new.count(self.old)
            return text.count(self.old) - (text.count(self.new) * inside_new if inside_new else 0)
        return len(re.findall(rf"(?<![\w-]){re.escape(self.old)}(?![\w-])", text))


def requested_change(request: str) -> RequestedChange | None:
    """The change the request spells out: quoted ("Slug string" to "Make a slug from
    text") or a rename (rename the constant NUMBERS_PATTERN to NUMBER_COMMA_PATTERN); None
    when it spells out none."""
    match = _QUOTED_CHANGE.search(straight_quotes(request))
    if match is not None and match.group("new").strip():
        return RequestedChange(match.group("old"), match.group("new"), word=False)
    match = _RENAME.search(request)
    if match is not None:
        return RequestedChange(match.group("old"), match.group("new"), word=True)
    return None


def unmade_change(request: str, edited: dict[str, tuple[str | None, str | None]]) -> str | None:
    """Why the turn's edits did not make the change the request spells out, in words: the
    old text (the old name) is in the edited files as often as before the turn (the edit
    went elsewhere); None when it was changed, when nothing was edited, when the request
    spells out no change, or when no edited file had the old text (nothing to judge by).
    `edited`: each edited file's text before the turn and now (None: not there)."""
    wanted = requested_change(request)
    if wanted is None or not edited:
        return None
    counts = [(wanted.count(before), wanted.count(now)) for before, now in edited.values()]
    if not any(before for before, _ in counts) or any(now < before for before, now in counts):
        return None
    files = ", ".join(edited)
    verb = "rename" if wanted.word else "change"
    return (
        f'the request asks to {verb} "{wanted.old}" to "{wanted.new}", but the local model\'s'
        f' edits left "{wanted.old}" as it was in {files}'
    )


def no_new_file(request: str, edited: dict[str, tuple[str | None, str | None]]) -> str | None:
    """The request asks for a new file or module (a hint, `NEW_FILE`) and the turn's edits
    created none, only changed files that were there: in words, else None."""
    if not edited or not asks_for_new_file(request):
        return None
    if any(before is None and now is not None for before, now in edited.values()):
        return None
    files = ", ".join(edited)
    return (
        "the request asks for a new file or module, but the local model's edits created "
        f"none (they changed {files})"
    )


_MORE_ASKED = re.compile(r"[.!?;]\s+\S|\b(?:and|also|then|too|as\s+well)\b", re.IGNORECASE)
"""A request asking for more than one change: a second sentence, "and", "also", "then"."""


def made_change(request: str, edited: dict[str, tuple[str | None, str | None]]) -> str | None:
    """Where the turn's edits made the one change the request asks for, spelled out as
    quoted old and new text ("Slug string" to "Make a slug from text"): an edited file had
    the old text and has it fewer times now, with the new text more times, and no edited
    file gained the old text. None otherwise, also for a request asking for more than that
    change and for a rename (other files may still use the old name). In words."""
    wanted = requested_change(request)
    if wanted is None or wanted.word or not edited:
        return None
    rest = _QUOTED_CHANGE.sub(" ", straight_quotes(request)).strip()
    if _MORE_ASKED.search(rest.rstrip(".!")):
        return None
    new = RequestedChange(wanted.new, "", word=False)
    made = [
        path
        for path, (before, now) in edited.items()
        if wanted.count(now) < wanted.count(before) and new.count(now) > new.count(before)
    ]
    if not made or any(wanted.count(now) > wanted.count(b) for b, now in edited.values()):
        return None
    return f'"{wanted.old}" is now "{wanted.new}" in {", ".join(made)}'


_CHANGE_VERBS = frozenset(CHANGE["en"]) - {"make"}
"""The verbs a change request starts with ("make" also starts "Make a list of …")."""


def asks_for_change(request: str) -> bool:
    """Whether the user's request is an instruction to change the code (it starts with a
    verb such as add, rename, fix, replace) rather than a question."""
    lead = _REQUEST_LEAD.match(request)
    words = re.findall(r"[a-z]+", request[lead.end() if lead else 0 :].lower()[:80])
    return bool(words) and words[0] in _CHANGE_VERBS


_REQUEST_LEAD = re.compile(
    r"\s*(?:please\s+)?(?:(?:in|inside|within|for)\s+(?:the\s+)?(?:file\s+)?[`'\"]?[\w./-]+"
    r"[`'\"]?\s*,?\s+)?(?:please\s+)?",
    re.IGNORECASE,
)
"""What may come before the verb of a change request: "In slugify/slugify.py rename …"
(bench/real_tasks 'rename-constant' ended `end_turn` saying it had renamed, with no edit)."""


NEAR_LINES = 3
"""An edit this many lines from a line naming what the request names is an edit of it."""
_PATHISH = re.compile(r"\S*[/\\]\S*|\S+\.[A-Za-z]{1,5}\b")
_IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*")


def edits_elsewhere(
    request: str, edited: dict[str, tuple[str | None, str | None]], names: Sequence[str] = ()
) -> str | None:
    """Why the turn's edits are not the change the request asks for, by the diff: in each
    edited file that has what the request names (`names`, the definitions it names, and
    the words it writes as code: `resumeNext`, `SIGINT`, `"inherit"`), every changed line
    lies away from those (outside the definition around them and more than `NEAR_LINES`
    from them). In words; None when an edit is near one, or the request names nothing the
    edited files have. A hint-free check: "Ändere … bei SIGINT von 0 auf 130" edited line 1
    of src/index.js, and the SIGINT line stayed as it was."""
    named = set(names) | _named_in(request)
    if not named:
        return None
    away: list[str] = []
    for path, (before, now) in edited.items():
        if not before or now is None or before == now:
            continue
        lines = before.split("\n")
        marks = [name for name in sorted(named) if _mentions(before, name)]
        if not marks:
            continue
        near = _near_lines(path, before, lines, marks)
        changed = _changed_lines(lines, now.split("\n"))
        if changed & near:
            return None
        away.append(f"{path} (the request names {marks[0]}; lines {_spans(changed)} changed)")
    if not away:
        return None
    return f"the local model's edits are away from what the request names: {'; '.join(away)}"


def _named_in(request: str) -> set[str]:
    """The words a request writes as code: with code's shape, in capitals (`SIGINT`), or in
    quotes of any style; its paths left out (`src/index.js` names a file, not code)."""
    from milk_lsp.agents.local.judge.grounding.asked import code_shaped

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


def _changed_lines(before: list[str], now: list[str]) -> set[int]:
    """The lines of `before` (1-based) an edit replaced or removed, and those around a line
    it inserted."""
    changed: set[int] = set()
    for tag, i1, i2, _, _ in difflib.SequenceMatcher(None, before, now).get_opcodes():
        if tag in ("replace", "delete"):
            changed.update(range(i1 + 1, i2 + 1))
        elif tag == "insert":
            changed.update((i1, i1 + 1))
    return changed


def _spans(numbers: set[int]) -> str:
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
