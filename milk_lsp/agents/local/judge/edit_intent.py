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
from dataclasses import dataclass
from pathlib import PurePath

from milk_lsp.agents.local.judge.grounding.hints import CHANGE, CHANGE_INTO, straight_quotes

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
        if not text:
            return 0
        if not self.word:
            return text.count(self.old)
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
