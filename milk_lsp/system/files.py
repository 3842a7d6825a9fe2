"""Writing a file whole or not at all: a temp file next to it, renamed over it."""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path


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
