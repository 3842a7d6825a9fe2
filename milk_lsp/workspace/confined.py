"""File access that cannot leave the workspace folder, not even by a race.

Checking a path and then using it by name leaves a gap: while the user decides on an edit,
or just between two system calls, a directory on the path can be swapped for a symlink to
outside, and a read or write by name would follow it. So nothing here opens a whole path.
Every access starts from a descriptor of the workspace root and opens one component at a
time relative to its parent's descriptor, with O_NOFOLLOW (and O_DIRECTORY for
directories). Reads, listings, the search walk and the temp file + rename of a write all go
through the descriptor of the directory that was opened, so confinement holds at the moment
of the open, the write and the rename.

Symlinks that stay inside the workspace still work: `resolve` reads a link's target and
walks it again from the root descriptor, component by component, at most
`MAX_SYMLINK_HOPS` times; `..` above the root and targets outside it are refused. The
operations then take those resolved components and follow no symlink at all: one found
there was swapped in after resolving, and the call fails with `SymlinkRefused`.

openat2(RESOLVE_BENEATH) is not used: it refuses every absolute symlink, also those that
point inside the workspace, so this walk would be needed anyway. What no path check can
prevent: a directory that is already open being moved out of the workspace by someone who
can write to both places.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import threading
from collections import deque
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

MAX_SYMLINK_HOPS = 40
"""Symlinks followed while resolving one path (the kernel's own limit)."""
MAX_LOOKS = 10
"""Times one component is looked at again when it changes between two system calls."""
_CHANGED_MEANWHILE = frozenset({errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.EINVAL})

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
"""O_NONBLOCK: opening a FIFO must not wait for a writer (it is then refused by its type)."""
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC

Parts = tuple[str, ...]
"""A path as components beneath the workspace root; () is the root itself."""


class OutsideWorkspace(ValueError):
    """A path argument leads outside the workspace folder."""


class SymlinkRefused(ValueError):
    """A component of a resolved path is a symlink now: it was swapped in after resolving."""


def shown(parts: Parts) -> str:
    """How a path beneath the root is written in messages: relative, `.` for the root."""
    return "/".join(parts) or "."


class ConfinedRoot:
    """One workspace folder, and race-free access to what is beneath it."""

    def __init__(self, root: Path) -> None:
        self.path = root.resolve()
        given = root.absolute()
        self._spellings = (self.path,) if given == self.path else (self.path, given)
        """The ways an absolute path may name the root: its real path, and as given."""

    def real_path(self, parts: Parts) -> Path:
        return self.path.joinpath(*parts)

    # --- resolving ----------------------------------------------------------------------

    def resolve(self, path: str) -> Parts:
        """The real components of `path` (relative to the root unless absolute).

        In-workspace symlinks are followed; `..` is taken after them, as the kernel does.
        The path need not exist: what is missing is taken as written. Raises
        `OutsideWorkspace`, or ValueError for a NUL character or a symlink loop.
        """
        if "\x00" in path:
            raise ValueError("the path contains a NUL character")
        return self._resolve(self._relative(path, path), path)

    def _relative(self, path: str, named: str, through: str = "") -> list[str]:
        """The components of `path` relative to the root, as written."""
        candidate = PurePosixPath(path)
        if not candidate.is_absolute():
            return list(candidate.parts)
        for spelling in self._spellings:
            if candidate.is_relative_to(spelling):
                return list(candidate.relative_to(spelling).parts)
        # Another spelling of a place inside (through a symlink above the root, say). Only a
        # translation: the components are walked from the root descriptor like any others.
        real = Path(os.path.realpath(candidate))
        if real.is_relative_to(self.path):
            return list(real.relative_to(self.path).parts)
        raise OutsideWorkspace(f"{named} is outside the workspace folder{through}")

    def _resolve(self, components: list[str], named: str) -> Parts:
        pending = deque(components)
        names: list[str] = []
        opened: list[int] = []
        """Descriptors of the directories names[:1], names[:2], ...; shorter than `names`
        once a component is missing or not a directory (the rest is then taken as written)."""
        hops = 0
        through = ""
        root_fd = self._open_root()
        try:
            while pending:
                name = pending.popleft()
                if name in ("", "."):
                    continue
                if name == "..":
                    if not names:
                        raise OutsideWorkspace(f"{named} is outside the workspace folder{through}")
                    names.pop()
                    if len(opened) > len(names):
                        os.close(opened.pop())
                    continue
                if len(opened) < len(names):
                    names.append(name)
                    continue
                parent = opened[-1] if opened else root_fd
                directory, target = _look(parent, name, named)
                if directory is not None:
                    opened.append(directory)
                if target is None:
                    names.append(name)
                    continue
                hops += 1
                if hops > MAX_SYMLINK_HOPS:
                    raise ValueError(f"cannot resolve {named}: too many levels of symlinks")
                through = f" (through the symlink {shown((*names, name))} to {target})"
                if PurePosixPath(target).is_absolute():
                    followed = self._relative(target, named, through)
                    while opened:
                        os.close(opened.pop())
                    names.clear()
                else:
                    followed = list(PurePosixPath(target).parts)
                pending.extendleft(reversed(followed))
        finally:
            for fd in opened:
                os.close(fd)
            os.close(root_fd)
        return tuple(names)

    # --- opening resolved paths, following no symlink ----------------------------------

    def _open_root(self) -> int:
        return os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)

    def open_dir(self, parts: Parts, *, create: bool = False) -> int:
        """A descriptor of directory `parts`; with `create`, missing directories are made
        one by one. Raises FileNotFoundError, NotADirectoryError (the last component is not a
        directory) or `SymlinkRefused`. The caller closes it."""
        fd = self._open_root()
        try:
            for index, name in enumerate(parts):
                try:
                    child = self._open_child_dir(fd, name, parts[: index + 1], create=create)
                except NotADirectoryError as exc:
                    if index + 1 == len(parts):
                        raise
                    raise FileNotFoundError(errno.ENOENT, "not found", shown(parts)) from exc
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _open_child_dir(self, parent: int, name: str, parts: Parts, *, create: bool) -> int:
        _check_component(name)
        for _ in range(MAX_LOOKS):
            try:
                return os.open(name, _DIR_FLAGS, dir_fd=parent)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o777, dir_fd=parent)
            except NotADirectoryError:
                # A symlink (O_NOFOLLOW with O_DIRECTORY says ENOTDIR), or not a directory.
                try:
                    info = os.stat(name, dir_fd=parent, follow_symlinks=False)
                except FileNotFoundError:
                    continue
                if stat.S_ISLNK(info.st_mode):
                    raise _symlink_refused(parts) from None
                if not stat.S_ISDIR(info.st_mode):
                    raise
                # A directory again: swapped back meanwhile; open it again.
        raise ValueError(f"{shown(parts)} kept changing while in use; try again")

    def open_file_for_read(self, parts: Parts) -> int:
        """A read-only descriptor of `parts` (any type: the caller checks it with fstat).
        Raises FileNotFoundError or `SymlinkRefused`. The caller closes it."""
        if not parts:
            return self._open_root()
        _check_component(parts[-1])
        try:
            parent = self.open_dir(parts[:-1])
        except NotADirectoryError as exc:
            raise FileNotFoundError(errno.ENOENT, "not found", shown(parts)) from exc
        try:
            return os.open(parts[-1], _READ_FLAGS, dir_fd=parent)
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # O_NOFOLLOW met a symlink
                raise _symlink_refused(parts) from None
            raise
        finally:
            os.close(parent)

    def atomic_write(self, parts: Parts, data: bytes) -> None:
        """Replace (or create) file `parts` with `data`: a temp file in the same directory,
        written and synced, then renamed over it, all through the directory's descriptor.

        An existing file keeps its mode; a new one gets 0o666 less the umask. Missing
        parent directories are made one by one."""
        if not parts:
            raise IsADirectoryError(errno.EISDIR, "is a directory", ".")
        name = parts[-1]
        _check_component(name)
        directory = self.open_dir(parts[:-1], create=True)
        try:
            try:
                info = os.stat(name, dir_fd=directory, follow_symlinks=False)
            except FileNotFoundError:
                mode = 0o666 & ~current_umask()
            else:
                if stat.S_ISLNK(info.st_mode):
                    raise _symlink_refused(parts)
                if stat.S_ISDIR(info.st_mode):
                    raise IsADirectoryError(errno.EISDIR, "is a directory", shown(parts))
                if not stat.S_ISREG(info.st_mode):
                    raise ValueError(f"{shown(parts)} is not a regular file")
                mode = stat.S_IMODE(info.st_mode)
            temp_name, temp_fd = _create_temp(directory, name)
            try:
                with os.fdopen(temp_fd, "wb") as temp_file:
                    temp_file.write(data)
                    temp_file.flush()
                    os.fchmod(temp_file.fileno(), mode)
                    os.fsync(temp_file.fileno())
                # rename does not follow a symlink at `name`: it replaces the name itself.
                os.rename(temp_name, name, src_dir_fd=directory, dst_dir_fd=directory)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temp_name, dir_fd=directory)
                raise
            with contextlib.suppress(OSError):
                os.fsync(directory)  # the rename itself survives a crash
        finally:
            os.close(directory)

    def remove_file(self, parts: Parts) -> None:
        """Delete regular file `parts` through its directory's descriptor (a symlink or a
        directory there is refused, not followed)."""
        if not parts:
            raise IsADirectoryError(errno.EISDIR, "is a directory", ".")
        _check_component(parts[-1])
        directory = self.open_dir(parts[:-1])
        try:
            info = os.stat(parts[-1], dir_fd=directory, follow_symlinks=False)
            if not stat.S_ISREG(info.st_mode):
                raise ValueError(f"{shown(parts)} is not a regular file")
            os.unlink(parts[-1], dir_fd=directory)
        finally:
            os.close(directory)

    def list_dir(self, parts: Parts) -> list[tuple[str, bool]]:
        """(name, is a directory) for each entry of directory `parts`, unsorted. A symlink
        counts as a directory only when it leads to one inside the workspace."""
        fd = self.open_dir(parts)
        try:
            with os.scandir(fd) as scan:
                entries = [
                    (entry.name, entry.is_dir(follow_symlinks=False), entry.is_symlink())
                    for entry in scan
                ]
        finally:
            os.close(fd)
        return [
            (name, self._leads_to_dir((*parts, name)) if is_link else is_dir)
            for name, is_dir, is_link in entries
        ]

    def _leads_to_dir(self, parts: Parts) -> bool:
        try:
            fd = self.open_dir(self._resolve(list(parts), shown(parts)))
        except (OSError, ValueError):
            return False
        os.close(fd)
        return True

    def walk(
        self, parts: Parts, stop: threading.Event, skip_dirs: frozenset[str], max_bytes: int
    ) -> Iterator[tuple[Parts, bytes]]:
        """(path, content) of each regular file under `parts` (or of `parts` itself when it
        is a file), at most `max_bytes` long; bigger and unreadable ones are left out.

        Stable order: a directory's files sorted, then its subdirectories sorted (skipping
        `skip_dirs`). Each subdirectory is opened relative to its parent's descriptor with
        O_NOFOLLOW, so a swapped-in symlink is skipped, never entered. Symlinks to files
        inside the workspace are read (under their own name); symlinked directories are not
        entered. Stops early once `stop` is set. Raises FileNotFoundError for a missing
        `parts`."""
        top = self.open_file_for_read(parts)  # a file or a directory, not a symlink
        try:
            is_dir = stat.S_ISDIR(os.fstat(top).st_mode)
            data = None if is_dir else _read_if_small(top, max_bytes)
        except BaseException:
            os.close(top)
            raise
        if not is_dir:
            os.close(top)
            if data is not None:
                yield parts, data
            return
        open_dirs: list[tuple[int, Parts, list[str]]] = []
        try:
            current: tuple[int, Parts] | None = (top, parts)
            while current is not None:
                fd, where = current
                files, links, subdirs = _entries(fd, skip_dirs)
                open_dirs.append((fd, where, sorted(subdirs, reverse=True)))
                for name in sorted(files | links):
                    if stop.is_set():
                        return
                    if name in links:
                        data = self._read_small_file(
                            self._resolve_quietly((*where, name)), max_bytes
                        )
                    else:
                        data = _read_small_at(fd, name, max_bytes)
                    if data is not None:
                        yield (*where, name), data
                current = None
                while open_dirs and current is None:
                    parent, parent_parts, remaining = open_dirs[-1]
                    if not remaining:
                        os.close(parent)
                        open_dirs.pop()
                        continue
                    name = remaining.pop()
                    with contextlib.suppress(OSError):
                        current = (os.open(name, _DIR_FLAGS, dir_fd=parent), (*parent_parts, name))
        finally:
            for fd, _, _ in open_dirs:
                os.close(fd)

    def _resolve_quietly(self, parts: Parts) -> Parts | None:
        try:
            return self._resolve(list(parts), shown(parts))
        except (OSError, ValueError):
            return None

    def _read_small_file(self, parts: Parts | None, max_bytes: int) -> bytes | None:
        if parts is None:
            return None
        try:
            fd = self.open_file_for_read(parts)
        except (OSError, ValueError):
            return None
        try:
            return _read_if_small(fd, max_bytes)
        finally:
            os.close(fd)


def read_text_inside(root: Path, path: Path, max_bytes: int | None = None) -> str | None:
    """The UTF-8 text of regular file `path` when it lies inside `root`, read race-free;
    None for anything else (outside, missing, not a regular file, not UTF-8, larger than
    `max_bytes`)."""
    confined = ConfinedRoot(root)
    try:
        fd = confined.open_file_for_read(confined.resolve(str(path)))
    except (OSError, ValueError):
        return None
    try:
        if max_bytes is not None:
            data = _read_if_small(fd, max_bytes)
            return None if data is None else data.decode("utf-8")
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return read_all(fd).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    finally:
        os.close(fd)


def read_all(fd: int) -> bytes:
    """Everything left to read from `fd`."""
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def current_umask() -> int:
    """The process umask, read without changing it (os.umask would race other threads)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    return 0o022


def _look(parent: int, name: str, named: str) -> tuple[int | None, str | None]:
    """What `name` in `parent` is: a directory (its open descriptor, None), a symlink (None,
    its target), or anything else, missing included (None, None). Looks again when it
    changes between the system calls, a few times."""
    for _ in range(MAX_LOOKS):
        try:
            info = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            return None, None
        try:
            if stat.S_ISDIR(info.st_mode):
                return os.open(name, _DIR_FLAGS, dir_fd=parent), None
            if stat.S_ISLNK(info.st_mode):
                return None, os.readlink(name, dir_fd=parent)
        except OSError as exc:
            if exc.errno in _CHANGED_MEANWHILE:
                continue
            raise
        return None, None
    raise ValueError(f"{named} kept changing while it was being resolved; try again")


def _check_component(name: str) -> None:
    if name in ("", ".", "..") or "/" in name or "\x00" in name:
        raise ValueError(f"not a single path component: {name!r}")


def _symlink_refused(parts: Parts) -> SymlinkRefused:
    return SymlinkRefused(
        f"{shown(parts)} became a symlink while in use; symlinks are not followed there,"
        " so nothing was read or written. Try again."
    )


def _create_temp(directory: int, name: str) -> tuple[str, int]:
    for _ in range(100):
        temp_name = f".{name[:100]}.{secrets.token_hex(4)}.milk-tmp"
        try:
            return temp_name, os.open(temp_name, _TEMP_FLAGS, 0o600, dir_fd=directory)
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary file name", name)


def _entries(fd: int, skip_dirs: frozenset[str]) -> tuple[set[str], set[str], list[str]]:
    """Names of the regular files, symlinks and directories (less `skip_dirs`) in `fd`."""
    files: set[str] = set()
    links: set[str] = set()
    subdirs: list[str] = []
    with contextlib.suppress(OSError), os.scandir(fd) as scan:
        for entry in scan:
            with contextlib.suppress(OSError):
                if entry.is_symlink():
                    links.add(entry.name)
                elif entry.is_dir(follow_symlinks=False):
                    if entry.name not in skip_dirs:
                        subdirs.append(entry.name)
                elif entry.is_file(follow_symlinks=False):
                    files.add(entry.name)
    return files, links, subdirs


def _read_small_at(directory: int, name: str, max_bytes: int) -> bytes | None:
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=directory)
    except OSError:
        return None
    try:
        return _read_if_small(fd, max_bytes)
    finally:
        os.close(fd)


def _read_if_small(fd: int, max_bytes: int) -> bytes | None:
    """The content of a regular file of at most `max_bytes`; None for anything else."""
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
            return None
        return read_all(fd)
    except OSError:
        return None
