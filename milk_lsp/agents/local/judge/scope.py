"""How much of the workspace a request reaches, before the local model is asked.

A small local model does a change to one or two files well and a change across a package
badly, slowly: the bench's Claude-sized requests (port a package, a new module with its
tests, a redesign through five modules) spent minutes of local attempts before Claude
started. What a request reaches is what it locates: the workspace files it names (by path,
by name, or through the definitions it names; a folder written with its `/` reaches every
file under it, and a hyphenated file name, `is-windows`, is that file) and the files it
names that the workspace does not have (new files). No word of the request is read. A
request reaching `WIDE_ARTIFACTS` files is Claude-sized: on route `auto` with
`local.handOff: "auto"` it goes to Claude at once (a guided turn asks its intent request
first, and answers a question itself).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from milk_lsp.agents.local.judge.asked import PATH, asked

if TYPE_CHECKING:
    from milk_lsp.workspace.index import WorkspaceIndex

WIDE_ARTIFACTS = 3
"""A request naming this many files (existing or new) is Claude-sized."""
SHOWN_FILES = 4
"""How many of the files a reason names."""

_FOLDER = re.compile(r"(?<![\w./-])(?:[\w.-]+/)+(?![\w/])")
"""A folder written as one, with its trailing `/` (`src/`, `src/bin/`)."""
_HYPHENATED = re.compile(r"(?<![\w./-])[A-Za-z0-9_]+(?:-[A-Za-z0-9_]+)+(?![\w./-])")
"""A hyphenated word (`is-windows`, `cross-env-shell`): a file's stem when one file has it;
a word of a sentence (`command-line`) names none."""
_DEFINERS_MAX = 1
"""A name defined in more files than this says nothing about which file it reaches."""


@dataclass(frozen=True)
class Reach:
    """What a request reaches: files of the workspace, and files it does not have yet."""

    files: tuple[str, ...] = ()
    new_files: tuple[str, ...] = ()

    @property
    def artifacts(self) -> int:
        """How many files the request makes or changes."""
        return len(self.files) + len(self.new_files)

    @property
    def wide(self) -> bool:
        return self.artifacts >= WIDE_ARTIFACTS

    def reason(self) -> str:
        """Why the request is Claude-sized, in words (empty when it is not)."""
        if not self.wide:
            return ""
        named = [*self.files, *self.new_files]
        shown = ", ".join(named[:SHOWN_FILES]) + (", …" if len(named) > SHOWN_FILES else "")
        counts = ((len(self.files), "file{} here"), (len(self.new_files), "new file{}"))
        parts = [f"{n} {what.format('' if n == 1 else 's')}" for n, what in counts if n]
        return f"the request reaches {' and '.join(parts)} ({shown})"


def reach(request: str, index: WorkspaceIndex) -> Reach:
    """What `request` reaches in the workspace of `index`."""
    named = asked(request, index)
    files = dict.fromkeys(named.files)
    stems = index.file_stems()
    for match in _HYPHENATED.finditer(request):
        paths = stems.get(match.group().lower(), ())
        if len(paths) <= _DEFINERS_MAX:
            files.update(dict.fromkeys(paths))
    for match in _FOLDER.finditer(request):
        folder = match.group().lstrip("./")
        files.update(dict.fromkeys(_under(folder, stems) if folder else ()))
    for name in named.names:
        definers = index.definers(name, limit=_DEFINERS_MAX + 1)
        if len(definers) <= _DEFINERS_MAX:
            files.update(dict.fromkeys(definers))
    extensions = index.file_extensions()
    new_files = [
        path
        for path in dict.fromkeys(match.group() for match in PATH.finditer(request))
        if path.rsplit(".", 1)[-1] in extensions  # `e.g.` names no file here
        and ("/" in path or not path[:1].isupper())  # `Node.js` is a name, not a file
        and index.file_for(path) is None
        and not index.has_path(path)
    ]
    return Reach(files=tuple(files), new_files=tuple(new_files))


def _under(folder: str, stems: dict[str, tuple[str, ...]]) -> list[str]:
    """The workspace's files under `folder` (ending in `/`), in path order."""
    return sorted(path for paths in stems.values() for path in paths if path.startswith(folder))
