"""What exists in one workspace folder, for cheap existence checks (the checks of a local
answer, `milk_lsp.guided.verify`, and what a request names, `agents/local/judge/asked.py`).

`WorkspaceIndex.refresh()` walks the folder and keeps every file's path and the set of
identifier-like tokens of its text (`[A-Za-z_][A-Za-z0-9_]*` of two characters or more, and
`--long-option`s), the numbers it writes, and the names it defines: from its parse
(`milk_lsp.code`, tree-sitter through ast-grep) in the languages that knows, else from a
regex. A later refresh reads
again only the files whose (mtime_ns, size) changed, and those written so shortly before
they were read that a later write could keep both (git's "racily clean" files,
`changes.manifest.settled`); removed files drop out.

The walk never follows a symlink and never reads outside the folder: every directory is
opened from its parent's descriptor with O_NOFOLLOW, and files likewise, so a directory
swapped for a symlink meanwhile is not entered. It does not enter `.git`, `node_modules`,
virtual environments, caches, or what the root `.gitignore` ignores; those folders, and
ignored, binary (a NUL byte in the first 8 KiB), oversize and unreadable files and
symlinks, are known to exist (an answer naming them is right) but their text is not read.
An unreadable file or folder is skipped, never an error. At most `max_files` files are
listed; past that `truncated` is set and the rest of the folder is unknown.

Refreshes take a lock, one at a time; each builds a new state and swaps it in with one
assignment, and a question reads the state it starts with, so one thread may refresh while
others ask: a question sees the state before or after a refresh, never half of one.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import re
import stat
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pathspec import GitIgnoreSpec

from milk_lsp.system.files import read_at_most, settled

__all__ = ["SKIPPED_DIRS", "WorkspaceIndex"]

SKIPPED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        ".venv",
        "venv",
        "__pycache__",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        ".tox",
        ".nox",
    }
)
"""Folders never entered: version control, dependencies, virtual environments, caches."""
BINARY_SNIFF_BYTES = 8192
MAX_IGNORE_FILE_BYTES = 1 << 20

_TOKEN = re.compile(r"--[A-Za-z0-9][A-Za-z0-9_-]*|[A-Za-z_][A-Za-z0-9_]+")
"""Identifier-like tokens (two characters or more) and `--long-option`s."""
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
"""O_NONBLOCK: a FIFO swapped in for a file must not block the open."""
_LINE_SUFFIX = re.compile(r"(?::\d+){1,2}$|#L\d+(?:-L?\d+)?$")
"""`calc.py:12`, `calc.py:12:5`, `calc.py#L3-L9`: a place in a file names the file."""
_Tokens = tuple[str, ...]
"""The distinct tokens of one file, in no order: they are only ever added to and taken from
the counts of all files, and a tuple takes far less memory than a set (bench/grounding.py:
21 MB instead of 50 for 10,000 files)."""
_NO_TOKENS: _Tokens = ()


MAX_PARSED_BYTES = 256 * 1024
"""A larger source file is not parsed: its definitions come from `_DEFINITION` (bounds the
cost of a refresh; bench/grounding.py)."""
_DEFINITION = re.compile(
    r"\b(?:def|class|function|func|fn|interface|struct|enum|trait|type|const|let|var)\s+"
    r"([A-Za-z_][A-Za-z0-9_]+)|^([A-Za-z_][A-Za-z0-9_]+)\s*=(?!=)",
    re.MULTILINE,
)
"""For a file of no language `milk_lsp.code` parses (or too large to parse): a name it
defines, after a definition keyword, or assigned at the start of a line."""
_DEFINED = "\x00def:"
"""The prefix of a definition among a file's tokens (no token of text can start with it)."""
_NUMBER = "\x00num:"
"""The prefix of a number the file writes, of two digits or more, by `value_key`."""


def _tokens_of(path: str, data: bytes) -> _Tokens:
    """The identifier-like tokens and `--options` of the file at `path` whose content is
    `data`, once each, and the names it defines (marked `_DEFINED`): those its parse finds
    in a language `milk_lsp.code` knows (not a name it imports: `const x = require(…)` is
    defined in the module it names), else those `_DEFINITION` finds. Interned, so a
    token in many files is one string."""
    from milk_lsp.code import definitions, language_for  # off start-up: the first refresh
    from milk_lsp.code.numbers import literal_values, value_key

    language = language_for(path)
    if language is not None and len(data) <= MAX_PARSED_BYTES:
        text = data.decode("utf-8", "replace")
        defined = {d.name for d in definitions(text, language) if d.kind != "import"}
    else:
        # latin-1 never fails, and the ASCII tokens come out as they would from UTF-8
        text = data.decode("latin-1")
        defined = {a or b for a, b in _DEFINITION.findall(text)}
    tokens = set(_TOKEN.findall(text))
    tokens.update(_DEFINED + name for name in defined)
    tokens.update(_NUMBER + value_key(value) for value in literal_values(text) if value >= 10)
    return tuple(map(sys.intern, tokens))


@dataclass(frozen=True, slots=True)
class _File:
    mtime_ns: int
    size: int
    tokens: _Tokens
    trusted: bool
    """Whether an unchanged (mtime_ns, size) vouches for these tokens next time: not for
    files that were not read (the reason may go away: a rule, a permission) nor for those
    read too soon after their last write."""

    def same_stat(self, info: os.stat_result) -> bool:
        return self.mtime_ns == info.st_mtime_ns and self.size == info.st_size


def _unread(known: _File | None, info: os.stat_result) -> _File:
    """The entry of a file whose text is not read: `known` when it is the same one."""
    if known is not None and not known.trusted and not known.tokens and known.same_stat(info):
        return known
    return _File(info.st_mtime_ns, info.st_size, _NO_TOKENS, False)


@dataclass(slots=True)
class _State:
    files: dict[str, _File] = field(default_factory=dict)
    dirs: frozenset[str] = frozenset()
    """Folders walked or known to exist ('' is the root), relative, without a slash."""
    opaque: frozenset[str] = frozenset()
    """Folders known to exist but not entered (skipped or ignored): nothing below is known."""
    counts: Counter[str] = field(default_factory=Counter)
    """Every token, by the number of files it appears in."""
    file_tails: frozenset[str] = frozenset()
    """Every file path and each of its trailing parts (`c.py`, `b/c.py`, `a/b/c.py`)."""
    dir_tails: frozenset[str] = frozenset()
    truncated: bool = False


@dataclass(slots=True)
class _OpenDir:
    fd: int
    prefix: str
    """'' for the root, else 'a/b/'."""
    pending: list[str] | None = None


class WorkspaceIndex:
    """The files of one workspace folder and the tokens in their text (see the module)."""

    def __init__(
        self, root: Path, *, max_files: int = 20000, max_file_bytes: int = 1_000_000
    ) -> None:
        self.root = root.resolve()
        given = str(root.absolute())
        self._spellings = tuple({str(self.root), given})
        self.max_files = max_files
        self.max_file_bytes = max_file_bytes
        self.refreshed_at: float | None = None
        """`time.monotonic()` when the last refresh finished (None before the first)."""
        self.files_read = 0
        """Files whose text the last refresh read (the others it took from the one before)."""
        self._reads = 0
        self._state = _State()
        self._refreshing = threading.Lock()
        """One refresh at a time; questions take no lock (see the module)."""
        self._definitions: tuple[object, frozenset[str]] | None = None
        self._stems: tuple[object, dict[str, tuple[str, ...]]] | None = None
        """What is made on demand, with what it was made from (a refresh that changed no
        token keeps the same counts, one that changed no path the same tails)."""
        self._ignore_text: str | None = None
        self._ignore: GitIgnoreSpec | None = None

    # --- what is known ----------------------------------------------------------------

    @property
    def files(self) -> int:
        """Files listed by the last refresh (their text read or not)."""
        return len(self._state.files)

    @property
    def truncated(self) -> bool:
        """Whether the last refresh stopped at `max_files`: a miss then proves nothing."""
        return self._state.truncated

    def has_path(self, claim: str) -> bool:
        """Whether `claim` names a file or folder here: a relative path (`./` and a trailing
        `/` allowed, `:line` ignored), an absolute one inside the root, or the trailing part
        of one (`calc.py`, `local/watch.py`, `docs/`). Anything below a folder that is not
        entered (`.venv/bin/python`) counts as existing."""
        state = self._state
        path, wants_dir = self._normalised(claim)
        if path is None:
            return False
        if path == "":
            return True
        if wants_dir:
            return path in state.dirs or path in state.dir_tails or _below(path, state.opaque)
        return (
            path in state.files
            or path in state.dirs
            or path in state.file_tails
            or path in state.dir_tails
            or _below(path, state.opaque)
        )

    def has_name(self, name: str) -> bool:
        """Whether identifier `name` appears in the text of a file here. A dotted name
        (`pkg.mod.func`, `self.total`) counts when its last part does, and a module path
        `a.b` when there is a file `a/b.py` or a package `a/b`."""
        counts = self._state.counts
        name = name.strip().removesuffix("()")
        if name in counts:
            return True
        if "." not in name:
            return False
        parts = [part for part in name.split(".") if part]
        if not parts:
            return False
        if parts[-1] in counts or (len(parts[-1]) < 2 and len(parts) > 1 and parts[-2] in counts):
            return True
        module = "/".join(parts)
        return self.has_path(module + ".py") or self.has_path(module + "/")

    def has_definition(self, name: str) -> bool:
        """Whether a file here defines `name` (a function, class, type or module-level
        name): a plain word of a question that is one is about this workspace."""
        return _DEFINED + name in self._state.counts

    def definers(self, name: str, limit: int = 8) -> tuple[str, ...]:
        """The files that define `name` (at most `limit`, in walk order): where a question
        asking where `name` is defined finds its answer."""
        state = self._state
        marked = _DEFINED + name
        if not state.counts.get(marked):
            return ()
        found = [path for path, entry in state.files.items() if marked in entry.tokens]
        return tuple(found[:limit])

    def definition_names(self) -> frozenset[str]:
        """Every name a file here defines: what a message's words are matched against
        (`agents.local.judge.asked`). Made once per refresh that changed a token."""
        state = self._state
        known = self._definitions
        if known is None or known[0] is not state.counts:
            start = len(_DEFINED)
            names = frozenset(token[start:] for token in state.counts if token[:start] == _DEFINED)
            self._definitions = known = (state.counts, names)
        return known[1]

    def file_words(self) -> Iterator[tuple[str, tuple[str, ...]]]:
        """Each file read here, with its distinct tokens (identifiers, `--options`, and
        the marked names it defines: `names_defined`), for a ranking over the workspace
        (`milk_lsp.guided.locate`). The tuple is the index's own: the same object while the
        file is unchanged, so a caller may cache what it derives from it."""
        for path, entry in self._state.files.items():
            if entry.tokens:
                yield path, entry.tokens

    @staticmethod
    def names_defined(tokens: tuple[str, ...]) -> tuple[str, ...]:
        """The names a file defines, of the tokens `file_words` gives for it, sorted."""
        start = len(_DEFINED)
        return tuple(sorted(token[start:] for token in tokens if token[:start] == _DEFINED))

    @staticmethod
    def is_word(token: str) -> bool:
        """Whether a token of `file_words` is a word of the file's text (not a mark)."""
        return not token.startswith("\x00")

    def in_file(self, path: str, token: str) -> bool:
        """Whether the text of the file `path` (relative) has the identifier `token`."""
        entry = self._state.files.get(path)
        return entry is not None and token in entry.tokens

    def writes_number(self, path: str, value: float) -> bool:
        """Whether the file `path` (relative) writes the number `value` (10 or more), in
        any notation (`256`, `0x100`, `2.56e2`)."""
        from milk_lsp.code.numbers import value_key

        entry = self._state.files.get(path)
        return entry is not None and _NUMBER + value_key(value) in entry.tokens

    def file_stems(self) -> dict[str, tuple[str, ...]]:
        """The files here by the lower-case stem of their name (`utils` for `src/utils.js`,
        `readme` for `README.md`): a message naming a file without its extension. Made once
        per refresh that changed the paths."""
        state = self._state
        known = self._stems
        if known is None or known[0] is not state.file_tails:
            stems: dict[str, list[str]] = {}
            for path in state.files:
                stem = path.rsplit("/", 1)[-1].split(".", 1)[0].lower()
                if stem:
                    stems.setdefault(stem, []).append(path)
            built = {stem: tuple(paths) for stem, paths in stems.items()}
            self._stems = known = (state.file_tails, built)
        return known[1]

    def file_extensions(self) -> frozenset[str]:
        """The extensions of the files here, without the dot (`py`, `js`): a dotted word
        ending in none of them (`e.g.`, `options.quiet`) names no file."""
        return frozenset(
            path.rsplit(".", 1)[-1]
            for paths in self.file_stems().values()
            for path in paths
            if "." in path.rsplit("/", 1)[-1]
        )

    def file_for(self, claim: str) -> str | None:
        """The one file `claim` names (a relative path, or the trailing part of exactly one
        file's path), relative to the root; None when it names none or several."""
        path, wants_dir = self._normalised(claim)
        if not path or wants_dir:
            return None
        files = self._state.files
        if path in files:
            return path
        if path not in self._state.file_tails:
            return None
        found = [known for known in files if known.endswith("/" + path)]
        return found[0] if len(found) == 1 else None

    def has_option(self, option: str) -> bool:
        """Whether `--option` (a value after `=` ignored) appears in the text of a file."""
        option = option.strip().split("=", 1)[0].rstrip("-")
        return option.startswith("--") and option in self._state.counts

    def _normalised(self, claim: str) -> tuple[str | None, bool]:
        """(path relative to the root, whether a folder is meant); None when the claim
        cannot name anything inside the root."""
        path = claim.strip().strip("`'\"").replace("\\", "/")
        path = _LINE_SUFFIX.sub("", path)
        for spelling in self._spellings:
            if path == spelling:
                return "", True
            if path.startswith(spelling + "/"):
                path = path[len(spelling) + 1 :]
                break
        if not path or path.startswith(("/", "~")):
            return None, False
        wants_dir = path.endswith("/")
        path = posixpath.normpath(path)
        if path == ".":
            return "", True
        if path == ".." or path.startswith("../"):
            return None, False
        return path, wants_dir

    # --- refreshing -------------------------------------------------------------------

    def refresh(self) -> None:
        """Walk the folder again, reading only files that may have changed (see the module).
        Never raises for what is in the folder; an unreadable root leaves an empty index."""
        with self._refreshing:
            self._reads = 0
            self._state = self._walk(self._state)
            self.files_read = self._reads
            self.refreshed_at = time.monotonic()

    def _walk(self, old: _State) -> _State:
        files: dict[str, _File] = {}
        dirs: set[str] = {""}
        opaque: set[str] = set()
        truncated = False
        try:
            root_fd = os.open(self.root, _DIR_FLAGS)
        except OSError:
            return _State()
        stack = [_OpenDir(root_fd, "")]
        ignore = self._root_ignore(root_fd)
        try:
            while stack and not truncated:
                top = stack[-1]
                if top.pending is not None:  # listed already: enter its next folder
                    if not top.pending:
                        os.close(stack.pop().fd)
                        continue
                    name = top.pending.pop()
                    try:
                        child = os.open(name, _DIR_FLAGS, dir_fd=top.fd)
                    except OSError:
                        continue  # unreadable, or swapped for a symlink meanwhile
                    dirs.add(top.prefix + name)
                    stack.append(_OpenDir(child, top.prefix + name + "/"))
                    continue
                top.pending = []
                truncated = self._list(top, old, ignore, files, opaque)
        finally:
            for open_dir in stack:
                os.close(open_dir.fd)
        return self._state_of(old, files, frozenset(dirs), frozenset(opaque), truncated)

    def _list(
        self,
        top: _OpenDir,
        old: _State,
        ignore: GitIgnoreSpec | None,
        files: dict[str, _File],
        opaque: set[str],
    ) -> bool:
        """Record the entries of one open folder, its subfolders in `top.pending`; True
        when `max_files` was reached."""
        assert top.pending is not None
        try:
            with os.scandir(top.fd) as scan:
                entries = list(scan)
        except OSError:
            return False  # unreadable: nothing in it is seen
        to_read: list[tuple[str, str]] = []
        full = False
        for entry in entries:
            path = top.prefix + entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name in SKIPPED_DIRS or (
                        ignore is not None and ignore.match_file(path + "/")
                    ):
                        opaque.add(path)
                    else:
                        top.pending.append(entry.name)
                    continue
                is_file = entry.is_file(follow_symlinks=False)
                if not is_file and not entry.is_symlink():
                    continue  # sockets, FIFOs, devices
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue  # gone meanwhile
            if len(files) >= self.max_files:
                full = True
                break
            known = old.files.get(path)
            if (
                not is_file  # a symlink exists, but is not followed
                or info.st_size > self.max_file_bytes
                or (ignore is not None and ignore.match_file(path))
            ):
                files[path] = _unread(known, info)
            elif known is not None and known.trusted and known.same_stat(info):
                files[path] = known
            else:
                files[path] = _unread(None, info)
                to_read.append((entry.name, path))
        for name, path in to_read:
            files[path] = self._read(top.fd, name, files[path])
        top.pending.sort(reverse=True)
        return full

    def _read(self, directory: int, name: str, walked: _File) -> _File:
        """The tokens of file `name` in `directory`; none (and tried again next time) when
        it cannot be read; none, for good, when it is binary or too large."""
        read_at = time.time_ns()
        self._reads += 1
        try:
            fd = os.open(name, _READ_FLAGS, dir_fd=directory)
        except OSError:
            return walked
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                return walked
            if info.st_size > self.max_file_bytes:
                return _unread(None, info)
            data = read_at_most(fd, self.max_file_bytes + 1)
        except OSError:
            return walked
        finally:
            os.close(fd)
        trusted = settled(info, read_at)
        if len(data) > self.max_file_bytes:
            return _unread(None, info)  # it grew while being read
        if b"\0" in data[:BINARY_SNIFF_BYTES]:
            return _File(info.st_mtime_ns, info.st_size, _NO_TOKENS, trusted)
        return _File(info.st_mtime_ns, info.st_size, _tokens_of(name, data), trusted)

    def _root_ignore(self, root_fd: int) -> GitIgnoreSpec | None:
        """The rules of the root `.gitignore` (compiled again only when its text changed)."""
        text = ""
        with contextlib.suppress(OSError):
            fd = os.open(".gitignore", _READ_FLAGS, dir_fd=root_fd)
            try:
                if stat.S_ISREG(os.fstat(fd).st_mode):
                    text = read_at_most(fd, MAX_IGNORE_FILE_BYTES).decode("utf-8", "replace")
            finally:
                os.close(fd)
        if text != self._ignore_text:
            self._ignore_text = text
            spec = GitIgnoreSpec.from_lines(text.splitlines())
            self._ignore = spec if len(spec) else None
        return self._ignore

    @staticmethod
    def _state_of(
        old: _State,
        files: dict[str, _File],
        dirs: frozenset[str],
        opaque: frozenset[str],
        truncated: bool,
    ) -> _State:
        """The new state; the token counts and the path tails are made again only from
        what changed (an unchanged folder costs the walk and nothing more)."""
        counts = old.counts
        changed: list[tuple[_Tokens, _Tokens]] = []
        for path, now in files.items():
            before = old.files.get(path)
            if before is None:
                if now.tokens:
                    changed.append((_NO_TOKENS, now.tokens))
            elif before is not now and set(before.tokens) != set(now.tokens):
                changed.append((before.tokens, now.tokens))
        changed.extend(
            (known.tokens, _NO_TOKENS)
            for path, known in old.files.items()
            if known.tokens and path not in files
        )
        if changed:
            counts = old.counts.copy()
            for before_tokens, now_tokens in changed:
                _forget(counts, before_tokens)
                counts.update(now_tokens)
        file_tails, dir_tails = old.file_tails, old.dir_tails
        if files.keys() != old.files.keys():
            file_tails = frozenset(_tails(files))
        if dirs != old.dirs or opaque != old.opaque:
            dir_tails = frozenset(_tails(path for path in dirs | opaque if path))
        return _State(files, dirs, opaque, counts, file_tails, dir_tails, truncated)


def _forget(counts: Counter[str], tokens: Iterable[str]) -> None:
    for token in tokens:
        left = counts[token] - 1
        if left > 0:
            counts[token] = left
        else:
            del counts[token]


def _tails(paths: Iterable[str]) -> Iterator[str]:
    """Each path and every trailing part of it, at component boundaries."""
    for path in paths:
        yield path
        start = path.find("/")
        while start != -1:
            yield path[start + 1 :]
            start = path.find("/", start + 1)


def _below(path: str, folders: frozenset[str]) -> bool:
    """Whether `path` lies inside (or is) one of `folders`."""
    if not folders:
        return False
    if path in folders:
        return True
    start = path.find("/")
    while start != -1:
        if path[:start] in folders:
            return True
        start = path.find("/", start + 1)
    return False
