"""An edit that only writes the request down as a comment changes nothing.

Asked "Add a one-line docstring to slugify_params", a 1.5B model appended
`# Add a one-line docstring to the function slugify_params…` to the function and said it
was done: the file still parses, so no check after the edit catches it, and the turn would
end as if the change had been made. Such an edit is refused with what to do instead.
"""

from __future__ import annotations

import difflib
import re
from pathlib import PurePath

_COMMENT = re.compile(r"^\s*(?:#|//)")
_WORD = re.compile(r"[a-z0-9_]+")
ECHO_MIN_WORDS = 3
ECHO_SHARE = 0.6
"""A comment echoes the request when at least this share of its words are the request's."""


def echoes_request(path: str, before: str, after: str, request: str) -> str | None:
    """Why the edit from `before` to `after` is no change (it only adds comment lines whose
    words are mostly the user's `request`), in words for the model; None when it changes
    something or comments on its own."""
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
