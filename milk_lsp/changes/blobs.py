"""The contents workspace checkpoints keep (`checkpoints.py`), by sha256, zlib-compressed,
checked against their digest when read, private to the user (0o600 files, 0o700 dirs).

Contents arrive in batches, one per snapshot. A small batch (the files a turn changed) is
written as loose blobs, `blobs/ab/cdef…`, each through a temp file and a rename. A large
one (the first snapshot of a workspace, a branch switch) goes into one pack, as git does:
`packs/<id>.pack` holds the compressed blobs back to back and `packs/<id>.idx` (written
last, so a pack without one is an interrupted batch and is never read) says where each
starts. Creating ten thousand small files costs seconds on some disks; one pack costs the
compression.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import os
import secrets
import struct
import time
import zlib
from pathlib import Path
from types import TracebackType

from milk_lsp.system.files import write_atomically

logger = logging.getLogger(__name__)

_HEX = frozenset("0123456789abcdef")
_COMPRESS_LEVEL = 1
"""zlib's fastest level: source text still shrinks about 3x, and the first snapshot of a
large workspace compresses every file."""
LOOSE_MAX = 64
"""A batch of at most this many new blobs is written loose; a larger one as a pack."""
_IDX_MAGIC = b"MILKIDX1"
_IDX_ENTRY = struct.Struct(">32sQI")
"""raw sha256, offset in the pack, compressed length."""
_ORPHAN_AGE_S = 3600
"""A pack without its index this old was left by an interrupted batch (not one running)."""


def is_digest(text: str) -> bool:
    return len(text) == 64 and _HEX.issuperset(text)


class CheckpointUnavailable(Exception):
    """A checkpoint cannot be taken, or a file cannot be put back; the message says why.

    Defined here, the lightest checkpoint module, so that the engine can name it without
    loading the scanner (and pathspec) at start-up."""


class BlobStore:
    """Contents by sha256 under one store directory. Writes raise OSError; reads never do.
    Not thread-safe: its owner (`Checkpoints`) holds a lock around every call."""

    def __init__(self, store_dir: Path) -> None:
        self.loose_dir = store_dir / "blobs"
        self.packs_dir = store_dir / "packs"
        self._fans: set[str] = set()
        """Fan-out directories of loose blobs known to exist."""
        self._packed: dict[str, tuple[str, int, int]] | None = None
        """digest -> (pack id, offset, length) over every indexed pack; loaded lazily."""
        self._packs_seen: set[str] = set()

    # --- reading --------------------------------------------------------------------------

    def has(self, digest: str) -> bool:
        return digest in self._index() or self._loose(digest).is_file()

    def get(self, digest: str) -> bytes | None:
        """The content stored under `digest`; None when missing, unreadable or damaged."""
        if not is_digest(digest):
            return None
        raw = self._raw(digest)
        if raw is None and digest not in self._index():
            self._load_new_packs()  # another server on this workspace may have written one
            raw = self._raw(digest)
        if raw is None:
            return None
        try:
            data = zlib.decompress(raw)
        except zlib.error:
            data = b""
        if hashlib.sha256(data).hexdigest() != digest:
            logger.warning("checkpoint blob %s is damaged; ignored", digest)
            return None
        return data

    def _raw(self, digest: str) -> bytes | None:
        """The compressed bytes of a blob, loose or packed."""
        place = self._index().get(digest)
        try:
            if place is None:
                return self._loose(digest).read_bytes()
            pack, offset, length = place
            with (self.packs_dir / f"{pack}.pack").open("rb") as source:
                source.seek(offset)
                return source.read(length)
        except OSError:
            return None

    def _loose(self, digest: str) -> Path:
        return self.loose_dir / digest[:2] / digest[2:]

    def _index(self) -> dict[str, tuple[str, int, int]]:
        if self._packed is None:
            self._packed = {}
            self._load_new_packs()
        return self._packed

    def _load_new_packs(self) -> None:
        index = self._index()
        try:
            names = sorted(entry.name for entry in os.scandir(self.packs_dir))
        except OSError:
            return
        for name in names:
            pack = name.removesuffix(".idx")
            if pack == name or pack in self._packs_seen or f"{pack}.pack" not in names:
                continue
            self._packs_seen.add(pack)
            try:
                entries = _read_idx(self.packs_dir / name, self.packs_dir / f"{pack}.pack")
            except (OSError, ValueError) as exc:
                logger.warning("checkpoint pack %s ignored: %s", pack, exc)
                continue
            for digest, offset, length in entries:
                index.setdefault(digest, (pack, offset, length))

    def digests(self) -> set[str]:
        """Every digest stored, loose or packed."""
        found = set(self._index())
        with contextlib.suppress(FileNotFoundError):
            for fan in os.scandir(self.loose_dir):
                if len(fan.name) != 2 or not fan.is_dir(follow_symlinks=False):
                    continue
                with os.scandir(fan.path) as blobs:
                    found.update(
                        fan.name + blob.name for blob in blobs if is_digest(fan.name + blob.name)
                    )
        return found

    # --- writing --------------------------------------------------------------------------

    def batch(self) -> BlobBatch:
        """A batch of new blobs, written when it closes (see the module docstring)."""
        return BlobBatch(self)

    def write_loose(self, digest: str, compressed: bytes) -> None:
        fan = digest[:2]
        if fan not in self._fans:
            (self.loose_dir / fan).mkdir(mode=0o700, parents=True, exist_ok=True)
            self._fans.add(fan)
        write_atomically(self._loose(digest), compressed)

    def add_pack(self, pack: str, entries: list[tuple[str, int, int]]) -> None:
        index = self._index()
        self._packs_seen.add(pack)
        for digest, offset, length in entries:
            index.setdefault(digest, (pack, offset, length))

    # --- pruning --------------------------------------------------------------------------

    def prune(self, wanted: set[str]) -> int:
        """Remove every blob not in `wanted`; a pack still holding some wanted blobs is
        rewritten without the others. Returns how many blobs went."""
        stored = self.digests()
        packs: dict[str, list[str]] = {}
        for digest, (pack, _, _) in self._index().items():
            packs.setdefault(pack, []).append(digest)
        for pack, members in packs.items():
            if all(digest in wanted for digest in members):
                continue
            live = [(d, raw) for d in members if d in wanted and (raw := self._raw(d)) is not None]
            for digest in members:
                del self._index()[digest]
            with self.batch() as batch:
                for digest, raw in live:
                    batch.put_compressed(digest, raw)
            for suffix in (".idx", ".pack"):  # the index first: a pack without one is unread
                with contextlib.suppress(FileNotFoundError):
                    (self.packs_dir / f"{pack}{suffix}").unlink()
        for digest in stored - wanted:
            with contextlib.suppress(FileNotFoundError):
                self._loose(digest).unlink()
        self._remove_orphan_packs()
        return len(stored - wanted)

    def _remove_orphan_packs(self) -> None:
        try:
            entries = list(os.scandir(self.packs_dir))
        except OSError:
            return
        names = {entry.name for entry in entries}
        for entry in entries:
            stem = entry.name.removesuffix(".pack")
            if stem == entry.name or f"{stem}.idx" in names:
                continue
            with contextlib.suppress(OSError):
                if time.time() - entry.stat().st_mtime > _ORPHAN_AGE_S:
                    Path(entry.path).unlink()


class BlobBatch:
    """New blobs of one snapshot: buffered while few, streamed into a pack once many."""

    def __init__(self, store: BlobStore) -> None:
        self._store = store
        self._buffered: list[tuple[str, bytes]] = []
        self._names: set[str] = set()
        self._pack: tuple[str, Path, int] | None = None
        """(id, temp path, descriptor) once the batch became a pack."""
        self._entries: list[tuple[str, int, int]] = []
        self._offset = 0

    def put(self, digest: str, data: bytes) -> None:
        """Keep `data` (whose sha256 is `digest`) unless the store has it."""
        if digest in self._names or self._store.has(digest):
            return
        self.put_compressed(digest, zlib.compress(data, _COMPRESS_LEVEL))

    def put_compressed(self, digest: str, compressed: bytes) -> None:
        self._names.add(digest)
        if self._pack is None:
            self._buffered.append((digest, compressed))
            if len(self._buffered) <= LOOSE_MAX:
                return
            self._open_pack()
            buffered, self._buffered = self._buffered, []
            for name, blob in buffered:
                self._append(name, blob)
        else:
            self._append(digest, compressed)

    def _open_pack(self) -> None:
        packs = self._store.packs_dir
        packs.mkdir(mode=0o700, parents=True, exist_ok=True)
        pack = f"{time.time_ns()}-{secrets.token_hex(4)}"
        temp = packs / f".{pack}.pack.tmp"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        self._pack = (pack, temp, fd)

    def _append(self, digest: str, compressed: bytes) -> None:
        assert self._pack is not None
        view = memoryview(compressed)
        while view:
            view = view[os.write(self._pack[2], view) :]
        self._entries.append((digest, self._offset, len(compressed)))
        self._offset += len(compressed)

    def __enter__(self) -> BlobBatch:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._pack is None:
            if kind is None:
                for digest, compressed in self._buffered:
                    self._store.write_loose(digest, compressed)
            return
        pack, temp, fd = self._pack
        try:
            os.close(fd)
            if kind is not None:
                return
            packs = self._store.packs_dir
            temp.replace(packs / f"{pack}.pack")
            index = _IDX_MAGIC + b"".join(
                _IDX_ENTRY.pack(bytes.fromhex(digest), offset, length)
                for digest, offset, length in self._entries
            )
            write_atomically(packs / f"{pack}.idx", index)
            self._store.add_pack(pack, self._entries)
        finally:
            with contextlib.suppress(FileNotFoundError):
                temp.unlink()


def _read_idx(idx: Path, pack: Path) -> list[tuple[str, int, int]]:
    """The entries of a pack's index, checked against the pack's size. Raises ValueError."""
    data = idx.read_bytes()
    body = data[len(_IDX_MAGIC) :]
    if not data.startswith(_IDX_MAGIC) or len(body) % _IDX_ENTRY.size:
        raise ValueError("not a pack index")
    size = pack.stat().st_size
    entries = []
    for raw, offset, length in _IDX_ENTRY.iter_unpack(body):
        if offset + length > size:
            raise ValueError("the index points past the end of the pack")
        entries.append((raw.hex(), offset, length))
    return entries


def store_error(store_dir: Path, exc: OSError) -> str:
    """Plain words for a store that cannot be written."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"the disk holding {store_dir} is full"
    return f"cannot write to {store_dir}: {exc.strerror or exc}"
