"""Workspace checkpoints: every file as it was, so a turn's changes, made by any tool or
shell command, can be listed and undone.

No git binary and nothing in the user's `.git`: a snapshot walks the workspace (never
following a symlink, skipping `.git` and what `.gitignore` files and `.git/info/exclude`
leave out: `checkpoint_scan.py`) and keeps each file's content in a content-addressed
store outside the workspace (`checkpoint_store.py`). A file whose size, times and inode
did not change since the last snapshot keeps its version without being read, so a
snapshot of an unchanged 10,000-file workspace costs a directory walk and a stat per file;
that stat cache is saved (`checkpoint_manifest.py`), so a restarted server does not read
everything again. Symlinks, sockets and devices are not checkpointed.

Restoring goes through `ConfinedRoot` (a walk from the workspace's descriptor, O_NOFOLLOW
at every step): a restore cannot leave the workspace or write through a symlink.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import threading
from collections.abc import ItemsView, Iterable, Iterator, KeysView, Mapping, Sequence, ValuesView
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from milk_lsp.changes.blobs import BlobStore, CheckpointUnavailable, is_digest, store_error
from milk_lsp.changes.manifest import (
    TOO_LARGE,
    FileState,
    load_manifest,
    save_manifest,
    split_version,
)
from milk_lsp.changes.scan import Scanner, StoreUnwritable, TooManyFiles
from milk_lsp.workspace.confined import ConfinedRoot, Parts, SymlinkRefused

ChangeKind = Literal["created", "modified", "deleted"]


@dataclass(frozen=True)
class FileChange:
    """One file that differs between two snapshots.

    `before`/`after` are versions: `<sha256>:<octal mode>` (`blob` takes them, `restore`
    puts the file back to one), or a `too-large:`/`unreadable:` marker for a file milk kept
    no copy of (listed, but `restore` refuses it)."""

    path: str
    """Workspace-relative, posix."""
    kind: ChangeKind
    before: str | None
    """None: the file was created."""
    after: str | None
    """None: the file was deleted."""

    @property
    def too_large(self) -> bool:
        return any(
            v is not None and v.startswith(TOO_LARGE + ":") for v in (self.before, self.after)
        )


class Snapshot(Mapping[str, FileState]):
    """The workspace's files at one moment: workspace-relative posix path -> `FileState`.
    Immutable (snapshots share their unchanged `FileState`s)."""

    __slots__ = ("_files",)

    def __init__(self, files: dict[str, FileState]) -> None:
        self._files = files

    def __getitem__(self, path: str) -> FileState:
        return self._files[path]

    def __iter__(self) -> Iterator[str]:
        return iter(self._files)

    def __len__(self) -> int:
        return len(self._files)

    # The dict's own views and lookups: a diff walks 10,000 entries.
    def __contains__(self, path: object) -> bool:
        return path in self._files

    def get(self, path: str, default: FileState | None = None) -> FileState | None:  # type: ignore[override]
        return self._files.get(path, default)

    def keys(self) -> KeysView[str]:
        return self._files.keys()

    def values(self) -> ValuesView[FileState]:
        return self._files.values()

    def items(self) -> ItemsView[str, FileState]:
        return self._files.items()

    def __repr__(self) -> str:
        return f"Snapshot({len(self._files)} files)"


class Checkpoints:
    """Snapshots of one workspace, kept in `store_dir` (one store per workspace)."""

    def __init__(
        self,
        store_dir: Path,
        workspace: Path,
        *,
        max_files: int = 50_000,
        max_blob_bytes: int = 16 * 1024 * 1024,
    ) -> None:
        self.store_dir = store_dir
        self.max_files = max_files
        self.max_blob_bytes = max_blob_bytes
        self._root = ConfinedRoot(workspace)
        self._blobs = BlobStore(store_dir)
        self._store_inside = _inside(self._root.path, store_dir)
        """The store's path in the workspace when it lies there (the walk skips it)."""
        self._scanner = Scanner(
            self._root,
            self._blobs,
            skip_dir=self._store_inside,
            max_files=max_files,
            max_blob_bytes=max_blob_bytes,
        )
        self._lock = threading.RLock()
        self._latest: Snapshot | None = None

    @property
    def files_hashed(self) -> int:
        """Files read to compute their digest since this object was made (for tests and
        the benchmark: unchanged files are not read)."""
        return self._scanner.files_hashed

    # --- taking snapshots -----------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        """The workspace now. Raises `CheckpointUnavailable` when it has more than
        `max_files` files or the store cannot be written (a full disk, say)."""
        with self._lock:
            if self._latest is None:
                previous: Mapping[str, FileState] = load_manifest(
                    self.store_dir, str(self._root.path), self.max_blob_bytes
                )
            else:
                previous = self._latest
            try:
                self.store_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            except OSError as exc:
                raise CheckpointUnavailable(store_error(self.store_dir, exc)) from exc
            try:
                files = self._scanner.files(previous)
            except TooManyFiles:
                raise CheckpointUnavailable(
                    f"the workspace has more than {self.max_files:,} files (not counting "
                    "what .gitignore leaves out), too many to checkpoint; undo covers only "
                    "the agents' own edits"
                ) from None
            except StoreUnwritable as exc:
                raise CheckpointUnavailable(store_error(self.store_dir, exc.error)) from exc
            except OSError as exc:
                raise CheckpointUnavailable(
                    f"cannot read the workspace folder {self._root.path}: {_reason(exc)}"
                ) from exc
            changed = len(files) != len(previous) or any(
                previous.get(path) is not state for path, state in files.items()
            )
            if changed:
                try:
                    save_manifest(self.store_dir, str(self._root.path), self.max_blob_bytes, files)
                except OSError as exc:
                    raise CheckpointUnavailable(store_error(self.store_dir, exc)) from exc
            self._latest = Snapshot(files)
            return self._latest

    # --- comparing ------------------------------------------------------------------------

    @staticmethod
    def diff(before: Snapshot, after: Snapshot) -> list[FileChange]:
        """What changed from `before` to `after`, sorted by path. A change of the
        permission bits alone is a modification."""
        changes: list[FileChange] = []
        for path, old in before.items():
            new = after.get(path)
            if new is None:
                changes.append(FileChange(path, "deleted", old.version, None))
            elif new is not old and new.version != old.version:
                changes.append(FileChange(path, "modified", old.version, new.version))
        changes.extend(
            FileChange(path, "created", None, new.version)
            for path, new in after.items()
            if path not in before
        )
        changes.sort(key=lambda change: change.path)
        return changes

    def blob(self, digest: str) -> bytes | None:
        """The content of a version (or a bare sha256 digest); None when no copy was
        kept or it is missing or damaged."""
        parsed = split_version(digest)
        with self._lock:
            return self._blobs.get(parsed[0] if parsed is not None else digest)

    def current_digest(self, path: str) -> str | None:
        """The version of file `path` as it is now, as a snapshot would see it: None when
        it is absent or not a regular file (a symlink, a directory)."""
        parts = self._parts(path)
        with self._lock:
            known = self._latest.get(path) if self._latest is not None else None
            return self._scanner.version_now(parts, known)

    # --- restoring ------------------------------------------------------------------------

    def restore(self, path: str, digest: str | None) -> None:
        """Put file `path` back to version `digest` (exact bytes and permission bits),
        making missing parent directories; None deletes it, and then the directories it
        leaves empty (as git does). An empty directory standing where the file goes is
        replaced. Never follows a symlink: one on the way is refused, one at `path` is
        replaced. Raises `CheckpointUnavailable` saying why nothing was changed."""
        parts = self._parts(path)
        with self._lock:
            if digest is None:
                self._delete(parts)
            else:
                data, mode = self._copy_of(path, digest)
                self._write(parts, data, mode)

    def restore_all(self, versions: Sequence[tuple[str, str | None]]) -> None:
        """Restore several files, (path, version or None) each, in an order that works when
        a file and a directory swapped places: deletions first, deepest first. Every copy
        is checked before anything is touched."""
        with self._lock:
            copies = {
                path: self._copy_of(path, digest) for path, digest in versions if digest is not None
            }
            for path, digest in sorted(versions, key=lambda item: (-item[0].count("/"), item[0])):
                if digest is None:
                    self._delete(self._parts(path))
            for path, _ in sorted(versions, key=lambda item: item[0]):
                if path in copies:
                    self._write(self._parts(path), *copies[path])

    def _copy_of(self, path: str, digest: str) -> tuple[bytes, int]:
        self._parts(path)
        parsed = split_version(digest)
        if parsed is None:
            if digest.startswith(TOO_LARGE + ":"):
                raise CheckpointUnavailable(
                    f"{path} was larger than {self.max_blob_bytes:,} bytes, so milk kept no "
                    "copy of it; it cannot be put back"
                )
            raise CheckpointUnavailable(
                f"{path} could not be read when it was checkpointed; it cannot be put back"
            )
        data = self._blobs.get(parsed[0])
        if data is None:
            raise CheckpointUnavailable(
                f"the saved copy of {path} is missing or damaged in {self.store_dir}; "
                "it cannot be put back"
            )
        return data, parsed[1]

    def _write(self, parts: Parts, data: bytes, mode: int) -> None:
        shown = "/".join(parts)
        try:
            directory = self._root.open_dir(parts[:-1], create=True)
        except (OSError, ValueError) as exc:
            raise CheckpointUnavailable(f"cannot put back {shown}: {_reason(exc)}") from exc
        name = parts[-1]
        try:
            with contextlib.suppress(FileNotFoundError):
                if stat.S_ISDIR(os.stat(name, dir_fd=directory, follow_symlinks=False).st_mode):
                    try:
                        os.rmdir(name, dir_fd=directory)
                    except OSError as exc:
                        raise CheckpointUnavailable(
                            f"cannot put back {shown}: a directory with files in it is there now"
                        ) from exc
            temp = f".{name[:100]}.{secrets.token_hex(4)}.milk-tmp"
            fd = os.open(
                temp,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                0o600,
                dir_fd=directory,
            )
            try:
                with os.fdopen(fd, "wb") as out:
                    out.write(data)
                    out.flush()
                    os.fchmod(out.fileno(), mode)
                # rename replaces a symlink at `name` itself, never what it points to
                os.rename(temp, name, src_dir_fd=directory, dst_dir_fd=directory)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temp, dir_fd=directory)
                raise
        except OSError as exc:
            raise CheckpointUnavailable(f"cannot put back {shown}: {_reason(exc)}") from exc
        finally:
            os.close(directory)

    def _delete(self, parts: Parts) -> None:
        shown = "/".join(parts)
        try:
            directory = self._root.open_dir(parts[:-1])
        except (FileNotFoundError, NotADirectoryError):
            return  # already gone
        except (OSError, ValueError) as exc:
            raise CheckpointUnavailable(f"cannot delete {shown}: {_reason(exc)}") from exc
        try:
            info = os.stat(parts[-1], dir_fd=directory, follow_symlinks=False)
            if stat.S_ISDIR(info.st_mode):
                raise CheckpointUnavailable(f"cannot delete {shown}: it is a directory now")
            os.unlink(parts[-1], dir_fd=directory)  # a symlink: the link itself
        except FileNotFoundError:
            return
        except OSError as exc:
            raise CheckpointUnavailable(f"cannot delete {shown}: {_reason(exc)}") from exc
        finally:
            os.close(directory)
        for depth in range(len(parts) - 1, 0, -1):
            try:
                parent = self._root.open_dir(parts[: depth - 1])
            except (OSError, ValueError):
                return
            try:
                os.rmdir(parts[depth - 1], dir_fd=parent)
            except OSError:
                return  # not empty (or not ours to remove): stop there
            finally:
                os.close(parent)

    def _parts(self, path: str) -> Parts:
        """The components of a workspace-relative posix path milk checkpoints."""
        pure = PurePosixPath(path)
        parts = pure.parts
        inside = self._store_inside
        if (
            not parts
            or "\x00" in path
            or pure.is_absolute()
            or ".." in parts
            or ".git" in parts
            or (inside is not None and pure.is_relative_to(inside))
        ):
            raise CheckpointUnavailable(f"{path!r} is not a workspace file milk checkpoints")
        return parts

    # --- housekeeping ---------------------------------------------------------------------

    def prune(self, keep: Iterable[str]) -> int:
        """Remove the stored copies no longer needed: all but the versions (or digests) in
        `keep` and those of the latest snapshot. Returns how many were removed."""
        keep = list(keep)
        with self._lock:
            wanted = {v for v in keep if is_digest(v)}
            wanted.update(parsed[0] for v in keep if (parsed := split_version(v)) is not None)
            if self._latest is not None:
                wanted.update(s.digest for s in self._latest.values() if s.digest is not None)
            return self._blobs.prune(wanted)


def _inside(root: Path, store_dir: Path) -> str | None:
    """`store_dir` relative to workspace `root` (posix) when it lies inside; else None."""
    store = store_dir.absolute()
    for spelling in (store, store.resolve()):
        if spelling != root and spelling.is_relative_to(root):
            return spelling.relative_to(root).as_posix()
    return None


def _reason(exc: Exception) -> str:
    if isinstance(exc, SymlinkRefused):
        return "a symlink is on the way, and milk does not write through symlinks"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return str(exc)


__all__ = [
    "CheckpointUnavailable",
    "Checkpoints",
    "FileChange",
    "FileState",
    "Snapshot",
]
