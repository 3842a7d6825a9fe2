"""How much of the workspace a change request reaches, before the local model is asked.

A small local model does a change to one or two files well and a change across a package
badly, slowly: the bench's Claude-sized requests (port a package, a new module with its
tests, a redesign through five modules) spent minutes of local attempts before Claude
started. What a request reaches is read from its structure: the workspace files it names
(by path, by name, or through the definitions it names), the new files it names, whether
it asks for tests too, and whether it speaks of the whole workspace (`hints`, per human
language). A change reaching `WIDE_ARTIFACTS` things or the whole workspace is
Claude-sized: on route `auto` with `local.handOff: "auto"` it goes to Claude at once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from milk_lsp.agents.local.judge.grounding.asked import asked
from milk_lsp.agents.local.judge.grounding.hints import (
    asks_for_new_file,
    asks_for_tests,
    asks_for_whole_workspace,
)

if TYPE_CHECKING:
    from milk_lsp.workspace.index import WorkspaceIndex

WIDE_ARTIFACTS = 3
"""A change naming this many files (existing or new, tests counting as one) is Claude-sized."""
SHOWN_FILES = 4
"""How many of the files a reason names."""

_PATH = re.compile(r"(?<![\w./-])(?:[\w.-]+/)*[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{1,6}(?![\w/])")
"""A file's path or name with an extension (`src/env-file.js`, `tsconfig.json`)."""
_DEFINERS_MAX = 1
"""A name defined in more files than this says nothing about which file it reaches."""


@dataclass(frozen=True)
class Reach:
    """What a change request reaches: existing files, new files, tests, the whole workspace."""

    files: tuple[str, ...] = ()
    new_files: tuple[str, ...] = ()
    new_module: bool = False
    tests: bool = False
    whole: bool = False

    @property
    def artifacts(self) -> int:
        """How many things the change makes or changes."""
        new = len(self.new_files) or int(self.new_module)
        return len(self.files) + new + int(self.tests)

    @property
    def wide(self) -> bool:
        return self.whole or self.artifacts >= WIDE_ARTIFACTS

    def reason(self) -> str:
        """Why the request is Claude-sized, in words (empty when it is not)."""
        if not self.wide:
            return ""
        if self.whole:
            return "the request changes the whole workspace"
        named = [*self.files, *self.new_files]
        shown = ", ".join(named[:SHOWN_FILES]) + (", …" if len(named) > SHOWN_FILES else "")
        parts = [_count(len(self.files), "file to change", "files to change")] if self.files else []
        if self.new_files or self.new_module:
            parts.append(_count(len(self.new_files) or 1, "new file", "new files"))
        if self.tests:
            parts.append("tests")
        return f"the request reaches {' and '.join(parts)}" + (f" ({shown})" if shown else "")


def _count(number: int, one: str, many: str) -> str:
    return f"1 {one}" if number == 1 else f"{number} {many}"


def reach(request: str, index: WorkspaceIndex) -> Reach:
    """What the change `request` reaches in the workspace of `index`."""
    named = asked(request, index)
    files = dict.fromkeys(named.files)
    for name in named.names:
        definers = index.definers(name, limit=_DEFINERS_MAX + 1)
        if len(definers) <= _DEFINERS_MAX:
            files.update(dict.fromkeys(definers))
    new_files = [
        path
        for path in dict.fromkeys(match.group() for match in _PATH.finditer(request))
        if index.file_for(path) is None and not index.has_path(path)
    ]
    return Reach(
        files=tuple(files),
        new_files=tuple(new_files),
        new_module=asks_for_new_file(request),
        tests=asks_for_tests(request),
        whole=asks_for_whole_workspace(request),
    )
