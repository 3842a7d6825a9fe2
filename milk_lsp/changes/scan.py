"""The walk behind a workspace checkpoint (`checkpoints.py`): which files there are, and
the version of each, read only when its stat says it may have changed.

The walk never follows a symlink: every directory is opened from its parent's descriptor
with O_NOFOLLOW, so one swapped in meanwhile is never entered, and symlinks, sockets and
devices are not files here. It skips every `.git`, the checkpoint store when it lies in
the workspace, and what `.gitignore` files (root and nested, negations included) and
`.git/info/exclude` leave out; an ignored directory is not entered, so, as in git, a
negation cannot bring back a file below it. Editors' scratch files (`EDITOR_SCRATCH`: Emacs'
`#parser.py#`, Vim's `.parser.py.swp` and `4913`) are never part of a checkpoint, so never
a turn's change that an undo would delete.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
import time
from collections.abc import Mapping
from dataclasses import dataclass

from pathspec import GitIgnoreSpec

from milk_lsp.changes.blobs import BlobBatch, BlobStore
from milk_lsp.changes.manifest import (
    TOO_LARGE,
    UNREADABLE,
    FileState,
    marker,
    version_of,
)
from milk_lsp.system.files import read_at_most, settled
from milk_lsp.workspace.confined import ConfinedRoot, Parts

_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
"""O_NONBLOCK: a FIFO swapped in for a file must not block the open."""
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_GONE = frozenset({errno.ENOENT, errno.ENOTDIR, errno.ELOOP})
"""Opening a file failed because it is no longer a regular file at that name."""
MAX_IGNORE_FILE_BYTES = 1 << 20
_MAX_DECISIONS = 200_000

ToRead = dict[Parts, list[tuple[str, os.stat_result]]]
"""Files to read, by directory: (name, stat seen by the walk)."""


EDITOR_SCRATCH = GitIgnoreSpec.from_lines(
    [
        "\\#*#",  # Emacs auto-save (a leading # is escaped: it starts a comment)
        ".#*",  # Emacs lock
        "*~",  # Emacs, Vim, gedit backups
        "*.swp",  # Vim swap files
        "*.swo",
        "*.swx",
        "4913",  # Vim's check that it may write a directory
        ".*.kate-swp",  # Kate
    ]
)
"""File names editors write beside the files being edited: never a turn's change."""


def editor_scratch(name: str) -> bool:
    """Whether the file `name` (no folder) is an editor's scratch file."""
    return EDITOR_SCRATCH.match_file(name)


class TooManyFiles(Exception):
    """The workspace has more files than a checkpoint takes."""


class StoreUnwritable(Exception):
    """A blob could not be written; `error` says why."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


IgnoreKey = tuple[tuple[str, str], ...]
"""The ignore files in force, as (directory, text) pairs: equal keys, equal decisions."""


class Ignores:
    """The ignore files in force in one directory, deepest first: nested `.gitignore`s,
    the root one, then `.git/info/exclude` (git's order of precedence). Each layer's
    patterns are relative to the directory holding the file.

    Decisions are remembered: the scanner hands the same object to the next walk while
    the ignore files read on the way are the same, so an unchanged workspace costs a dict
    lookup per path, not a match against every pattern."""

    __slots__ = ("_decided", "key", "layers")

    def __init__(
        self, layers: tuple[tuple[str, GitIgnoreSpec], ...] = (), key: IgnoreKey = ()
    ) -> None:
        self.layers = layers
        self.key = key
        self._decided: dict[str, bool] = {}

    def below(self, base: str, text: str, known: dict[IgnoreKey, Ignores]) -> Ignores:
        """These rules with those of an ignore file in directory `base` ('' or 'a/b/'),
        taken from `known` when it has them (and added to it)."""
        key = (*self.key, (base, text))
        found = known.get(key)
        if found is None:
            spec = GitIgnoreSpec.from_lines(text.splitlines())
            layers = ((base, spec), *self.layers) if len(spec) else self.layers
            found = known[key] = Ignores(layers, key)
        return found

    def ignored(self, path: str, is_dir: bool) -> bool:
        name = path + "/" if is_dir else path
        decided = self._decided.get(name)
        if decided is None:
            if len(self._decided) > _MAX_DECISIONS:
                self._decided.clear()  # names of files long gone pile up otherwise
            decided = self._decided[name] = self._match(name)
        return decided

    def _match(self, name: str) -> bool:
        for base, spec in self.layers:
            include = spec.check_file(name[len(base) :]).include
            if include is not None:  # the last matching pattern of the deepest file wins
                return include
        return False


@dataclass(slots=True)
class _OpenDir:
    """A directory on the walk's path: its descriptor, and its subdirectories still to
    visit (None until it is listed)."""

    fd: int
    parts: Parts
    ignores: Ignores
    pending: list[str] | None = None


class Scanner:
    """Walks one workspace and reads the files it cannot vouch for, storing their blobs."""

    def __init__(
        self,
        root: ConfinedRoot,
        blobs: BlobStore,
        *,
        skip_dir: str | None,
        max_files: int,
        max_blob_bytes: int,
    ) -> None:
        self.root = root
        self.blobs = blobs
        self.skip_dir = skip_dir
        """The checkpoint store's path in the workspace, when it lies there."""
        self.max_files = max_files
        self.max_blob_bytes = max_blob_bytes
        self.files_hashed = 0
        """Files read to compute their digest (unchanged files are not read)."""
        self._ignores: dict[IgnoreKey, Ignores] = {}
        """The ignore rules of the last walk, by the ignore files they were made from."""

    def files(self, previous: Mapping[str, FileState]) -> dict[str, FileState]:
        """Every file of the workspace now, keeping `previous` states whose stat is
        unchanged. Raises TooManyFiles, StoreUnwritable, or OSError when the workspace
        folder itself cannot be opened."""
        files, to_read = self._walk(previous)
        try:
            with self.blobs.batch() as batch:
                for parts, entries in to_read.items():
                    prefix = "/".join(parts) + "/" if parts else ""
                    try:
                        fd = self.root.open_dir(parts)
                    except (OSError, ValueError):
                        continue  # the directory went away (or became a symlink) meanwhile
                    try:
                        for name, walked in entries:
                            state = self._read_file(batch, fd, name, walked)
                            if state is not None:
                                files[prefix + name] = state
                    finally:
                        os.close(fd)
        except OSError as exc:  # writing the batch; reading errors are handled per file
            raise StoreUnwritable(exc) from exc
        return files

    def _walk(self, previous: Mapping[str, FileState]) -> tuple[dict[str, FileState], ToRead]:
        """The files whose stat is unchanged (with their previous state), and the others,
        to be read. Depth first, with one open descriptor per level."""
        files: dict[str, FileState] = {}
        to_read: ToRead = {}
        count = 0
        root_fd = self.root.open_dir(())
        last_rules, self._ignores = self._ignores, {}  # only the rules met now are kept
        stack = [
            _OpenDir(root_fd, (), self._rules(Ignores(), "", _git_exclude(root_fd), last_rules))
        ]
        try:
            while stack:
                top = stack[-1]
                if top.pending is not None:  # listed already: enter its next subdirectory
                    if not top.pending:
                        os.close(stack.pop().fd)
                        continue
                    name = top.pending.pop()
                    with contextlib.suppress(OSError):
                        child = os.open(name, _DIR_FLAGS, dir_fd=top.fd)
                        stack.append(_OpenDir(child, (*top.parts, name), top.ignores))
                    continue
                top.pending = []
                prefix = "/".join(top.parts) + "/" if top.parts else ""
                try:
                    with os.scandir(top.fd) as scan:
                        entries = list(scan)
                except OSError:
                    continue  # unreadable: nothing in it is seen
                if any(entry.name == ".gitignore" for entry in entries):
                    text = _read_text(top.fd, ".gitignore")
                    top.ignores = self._rules(top.ignores, prefix, text, last_rules)
                ignores = top.ignores
                for entry in entries:
                    name = entry.name
                    if name == ".git":
                        continue
                    path = prefix + name
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            if path != self.skip_dir and not ignores.ignored(path, True):
                                top.pending.append(name)
                            continue
                        if not entry.is_file(follow_symlinks=False):
                            continue  # symlinks, sockets, FIFOs, devices
                        if editor_scratch(name):
                            continue
                        if ignores.layers and ignores.ignored(path, False):
                            continue
                        info = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue  # gone meanwhile
                    count += 1
                    if count > self.max_files:
                        raise TooManyFiles
                    known = previous.get(path)
                    if known is not None and known.settled and known.same_stat(info):
                        files[path] = known
                    else:
                        to_read.setdefault(top.parts, []).append((name, info))
                top.pending.sort(reverse=True)
        finally:
            for open_dir in stack:
                os.close(open_dir.fd)
        return files, to_read

    def _rules(
        self, parent: Ignores, base: str, text: str, known: dict[IgnoreKey, Ignores]
    ) -> Ignores:
        rules = parent.below(base, text, known)
        self._ignores[rules.key] = rules
        return rules

    def _read_file(
        self, batch: BlobBatch, directory: int, name: str, walked: os.stat_result
    ) -> FileState | None:
        """The state of regular file `name`, its content added to `batch`; None when it is
        no longer a regular file there. Raises OSError only from the batch."""
        read_at = time.time_ns()
        try:
            fd = os.open(name, _READ_FLAGS, dir_fd=directory)
        except OSError as exc:
            if exc.errno in _GONE:
                return None
            return FileState.of(walked, marker(UNREADABLE, walked), False)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                return None
            if info.st_size > self.max_blob_bytes:
                return FileState.of(info, marker(TOO_LARGE, info), True)
            data = read_at_most(fd, self.max_blob_bytes + 1)
        except OSError:
            return FileState.of(walked, marker(UNREADABLE, walked), False)
        finally:
            os.close(fd)
        if len(data) > self.max_blob_bytes:  # it grew while being read
            return FileState.of(info, marker(TOO_LARGE, info), False)
        self.files_hashed += 1
        digest = hashlib.sha256(data).hexdigest()
        batch.put(digest, data)
        return FileState.of(
            info, version_of(digest, stat.S_IMODE(info.st_mode)), settled(info, read_at)
        )

    def version_now(self, parts: Parts, known: FileState | None) -> str | None:
        """The version of file `parts` now (None: absent or not a regular file), without
        reading it when `known` vouches for its stat. Stores nothing."""
        try:
            fd = self.root.open_file_for_read(parts)
        except PermissionError:
            return self._unreadable_now(parts)
        except (OSError, ValueError):
            return None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                return None
            if known is not None and known.settled and known.same_stat(info):
                return known.version
            if info.st_size > self.max_blob_bytes:
                return marker(TOO_LARGE, info)
            try:
                data = read_at_most(fd, self.max_blob_bytes + 1)
            except OSError:
                return marker(UNREADABLE, info)
        except OSError:
            return None
        finally:
            os.close(fd)
        if len(data) > self.max_blob_bytes:
            return marker(TOO_LARGE, info)
        self.files_hashed += 1
        return version_of(hashlib.sha256(data).hexdigest(), stat.S_IMODE(info.st_mode))

    def _unreadable_now(self, parts: Parts) -> str | None:
        """The marker a snapshot gives a regular file it may not open (None otherwise)."""
        try:
            directory = self.root.open_dir(parts[:-1])
        except (OSError, ValueError):
            return None
        try:
            info = os.stat(parts[-1], dir_fd=directory, follow_symlinks=False)
        except OSError:
            return None
        finally:
            os.close(directory)
        return marker(UNREADABLE, info) if stat.S_ISREG(info.st_mode) else None


def _git_exclude(root_fd: int) -> str:
    """`.git/info/exclude`, the one file of `.git` milk reads ('' when absent)."""
    try:
        git = os.open(".git", _DIR_FLAGS, dir_fd=root_fd)
    except OSError:
        return ""  # none, or a file (a worktree or submodule)
    try:
        info = os.open("info", _DIR_FLAGS, dir_fd=git)
    except OSError:
        return ""
    finally:
        os.close(git)
    try:
        return _read_text(info, "exclude")
    finally:
        os.close(info)


def _read_text(directory: int, name: str) -> str:
    """A small ignore file's text ('' when it is not a readable regular file)."""
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=directory)
    except OSError:
        return ""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return ""
        return read_at_most(fd, MAX_IGNORE_FILE_BYTES).decode("utf-8", "surrogateescape")
    except OSError:
        return ""
    finally:
        os.close(fd)
