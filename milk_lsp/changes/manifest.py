"""What a checkpoint knows of each file, and the manifest that keeps it across restarts.

A file's *version* names its content and permission bits, `<sha256 hex>:<octal mode>`, so
that undo puts back the mode too and a chmod counts as a change. A file milk keeps no copy
of gets a marker instead, `too-large:…` or `unreadable:…`, built from its stat: it still
changes whenever the file's stat does, so the file is listed as changed, but it cannot be
restored.

The manifest is the latest snapshot's stat cache (size, times, inode, version per file) in
the store directory, so a restarted server reads only the files that changed since. One
that cannot be read or does not fit (damaged, another format, another workspace) is
ignored: the next snapshot reads everything again.
"""

from __future__ import annotations

import json
import logging
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from milk_lsp.changes.blobs import is_digest
from milk_lsp.system.files import write_atomically

logger = logging.getLogger(__name__)

TOO_LARGE = "too-large"
UNREADABLE = "unreadable"
MANIFEST_NAME = "manifest.json"
_MANIFEST_FORMAT = "milk-checkpoint-manifest"
_MANIFEST_VERSION = 1


def version_of(digest: str, mode: int) -> str:
    return f"{digest}:{mode:o}"


def split_version(version: str) -> tuple[str, int] | None:
    """(sha256 digest, permission bits) of a version; None for a marker or garbage."""
    digest, colon, mode = version.partition(":")
    if not colon or not is_digest(digest) or not mode or not set(mode) <= set("01234567"):
        return None
    return digest, int(mode, 8)


def marker(reason: str, info: os.stat_result) -> str:
    """The version of a file milk keeps no copy of: it changes whenever the stat does."""
    return (
        f"{reason}:{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}:{info.st_ino}:"
        f"{stat.S_IMODE(info.st_mode):o}"
    )


@dataclass(frozen=True, slots=True)
class FileState:
    """One file as a snapshot saw it."""

    size: int
    mtime_ns: int
    ctime_ns: int
    ino: int
    mode: int
    """Permission bits (`stat.S_IMODE`)."""
    version: str
    """`<sha256>:<octal mode>`, or a `too-large:`/`unreadable:` marker (no copy kept)."""
    settled: bool
    """The stat can be trusted: an unchanged stat means unchanged content (see `settled`)."""

    @property
    def digest(self) -> str | None:
        """The sha256 of the content; None when no copy was kept."""
        parsed = split_version(self.version)
        return parsed[0] if parsed is not None else None

    @property
    def too_large(self) -> bool:
        return self.version.startswith(TOO_LARGE + ":")

    def same_stat(self, info: os.stat_result) -> bool:
        return (
            self.size == info.st_size
            and self.mtime_ns == info.st_mtime_ns
            and self.ctime_ns == info.st_ctime_ns
            and self.ino == info.st_ino
        )

    @classmethod
    def of(cls, info: os.stat_result, version: str, is_settled: bool) -> FileState:
        return cls(
            info.st_size,
            info.st_mtime_ns,
            info.st_ctime_ns,
            info.st_ino,
            stat.S_IMODE(info.st_mode),
            version,
            is_settled,
        )


# --- on disk ---------------------------------------------------------------------------


def save_manifest(
    store_dir: Path, workspace: str, max_blob_bytes: int, files: Mapping[str, FileState]
) -> None:
    """Persist a snapshot's stat cache. Raises OSError."""
    rows = [
        [path, s.size, s.mtime_ns, s.ctime_ns, s.ino, s.mode, s.version, int(s.settled)]
        for path, s in files.items()
    ]
    document = {
        "format": _MANIFEST_FORMAT,
        "version": _MANIFEST_VERSION,
        "workspace": workspace,
        "maxBlobBytes": max_blob_bytes,
        "files": rows,
    }
    data = json.dumps(document, separators=(",", ":")).encode("utf-8")
    write_atomically(store_dir / MANIFEST_NAME, data)


def load_manifest(store_dir: Path, workspace: str, max_blob_bytes: int) -> dict[str, FileState]:
    """The stat cache saved for this workspace; empty when there is none or it cannot be
    used (damaged, another format, another workspace or size limit)."""
    path = store_dir / MANIFEST_NAME
    try:
        document = json.loads(path.read_bytes())
        files = _manifest_files(document, workspace, max_blob_bytes)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:  # JSONDecodeError and UnicodeDecodeError too
        logger.warning("checkpoint manifest %s ignored: %s", path, exc)
        return {}
    return files


def _manifest_files(document: Any, workspace: str, max_blob_bytes: int) -> dict[str, FileState]:
    if not isinstance(document, dict):
        raise ValueError("not a JSON object")
    if document.get("format") != _MANIFEST_FORMAT or document.get("version") != _MANIFEST_VERSION:
        raise ValueError("another format")
    if document.get("workspace") != workspace:
        raise ValueError("written for another workspace")
    if document.get("maxBlobBytes") != max_blob_bytes:
        raise ValueError("written with another size limit")
    rows = document.get("files")
    if not isinstance(rows, list):
        raise ValueError("no file list")
    files: dict[str, FileState] = {}
    for row in rows:
        if not (
            isinstance(row, list)
            and len(row) == 8
            and isinstance(row[0], str)
            and all(type(value) is int and value >= 0 for value in row[1:6])
            and isinstance(row[6], str)
            and row[7] in (0, 1)
        ):
            raise ValueError(f"a damaged entry: {str(row)[:200]}")
        path, size, mtime_ns, ctime_ns, ino, mode, version, is_settled = row
        if split_version(version) is None and not version.startswith(
            (TOO_LARGE + ":", UNREADABLE + ":")
        ):
            raise ValueError(f"a damaged version for {path}")
        files[path] = FileState(size, mtime_ns, ctime_ns, ino, mode, version, bool(is_settled))
    return files
