"""A rename the model began, finished by milk.

A small model asked to rename a definition "with all its uses" renames the definition and
stops (google/uuid's `xtob`: one edit, then `go vet` says "undeclared name: xtob"; the
repair got the same edit back). Which name becomes which is in the model's own edit: its
new text is its old text with one identifier replaced by another. The other places are
mechanical: each line still holding the old name as a whole identifier, when there are
few (`USES_MAX`), gets the same replacement, as an edit of its own through the tools (the
user's permission, each file parsed after it, the project's check after all). No word of
the request is read.
"""

from __future__ import annotations

import re

from milk_lsp.guided.locate import USES_MAX, whole_word

CONTEXT_LINES = 3
"""Lines added around a use, each side, at most, until its old text is unique."""
_IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*")


def renamed(old_text: str, new_text: str) -> tuple[str, str] | None:
    """(old name, new name) when `new_text` is `old_text` with one identifier replaced by
    another wherever it stands; None for any other edit."""
    before, after = set(_IDENTIFIER.findall(old_text)), set(_IDENTIFIER.findall(new_text))
    gone, added = before - after, after - before
    if len(gone) != 1 or len(added) != 1:
        return None
    old, new = next(iter(gone)), next(iter(added))
    if whole_word(old).sub(new, old_text) != new_text:
        return None
    return old, new


def rest_of_rename(old: str, new: str, texts: dict[str, str]) -> list[dict[str, str]]:
    """The edits that rename the uses of `old` left in `texts` (path → text as it is now),
    each `{path, old_text, new_text}` with an old text found once in its file; none when
    there are more than `USES_MAX` uses or one cannot be made unique."""
    word = whole_word(old)
    places = [
        (path, number)
        for path, text in texts.items()
        for number, line in enumerate(text.splitlines())
        if word.search(line)
    ]
    if len(places) > USES_MAX:
        return []
    edits: list[dict[str, str]] = []
    taken: dict[str, int] = {}
    """Per file, the last line an edit of it already covers."""
    for path, number in places:
        if taken.get(path, -1) >= number:
            continue
        lines = texts[path].splitlines(keepends=True)
        for around in range(CONTEXT_LINES + 1):
            first = max(taken.get(path, -1) + 1, number - around)
            last = min(len(lines) - 1, number + around)
            block = "".join(lines[first : last + 1])
            if texts[path].count(block) == 1:
                break
        else:
            return []
        edits.append({"path": path, "old_text": block, "new_text": word.sub(new, block)})
        taken[path] = last
    return edits
