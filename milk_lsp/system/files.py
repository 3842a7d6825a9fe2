"""Reading and writing files safely: a write whole or not at all (a temp file next to it,
renamed over it), a read of at most so many bytes, and when a file's stat can be trusted."""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

FINE_WINDOW_NS = 100_000_000
"""How long after its last write a file's stat is trusted to change on the next write, on a
file system with fine timestamps (they come from a clock that ticks every few ms)."""
COARSE_WINDOW_NS = 2_000_000_000
"""The same for whole-second timestamps (ext3, FAT's 2 s, some network file systems)."""


def write_atomically(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Write `path` so a reader never sees half of it, with exactly `mode` (the umask does
    not apply). No fsync: callers keep caches and views, not the only copy. Raises OSError."""
    temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            os.fchmod(out.fileno(), mode)
        temp.replace(path)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise


def settled(info: os.stat_result, read_at_ns: int) -> bool:
    """Whether the file was last written long enough before `read_at_ns` (when its content
    was read) that any later write must give it another mtime or ctime.

    A write within the same timestamp tick as the read leaves size and times unchanged;
    trusting that stat would keep a stale digest (git's "racily clean" entries). Files not
    settled are read again by the next snapshot, until they are."""
    fine = info.st_mtime_ns % 1_000_000_000 and info.st_ctime_ns % 1_000_000_000
    window = FINE_WINDOW_NS if fine else COARSE_WINDOW_NS
    return max(info.st_mtime_ns, info.st_ctime_ns) + window < read_at_ns


def read_at_most(fd: int, limit: int) -> bytes:
    """Up to `limit` bytes from `fd` (fewer at the end of the file)."""
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def write_private(path: str, text: str) -> None:
    """A new file only its owner can read (0600 whatever the umask), written whole; an
    existing file at `path` is an error, never overwritten."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.fchmod(fd, 0o600)
        view = memoryview(text.encode("utf-8"))
        while view:
            written = os.write(fd, view)
            view = view[written:]
    finally:
        os.close(fd)
