"""A stand-in for the Hugging Face Hub on 127.0.0.1: what `hf_hub_download` and
`milk_lsp.local_model.download` ask of it (stdlib only).

Two listeners, as on the real Hub: the Hub itself and a "CDN" on another port (another
origin, so huggingface_hub treats it as the storage host an LFS file redirects to)::

    with FakeHub([HubFile("Qwen/Tiny-GGUF", "tiny.gguf", data)], chunk_delay=0.01) as hub:
        env["HF_ENDPOINT"] = hub.endpoint

* ``HEAD|GET /{owner}/{name}/resolve/{revision}/{file}``: ``302`` to the CDN with the
  headers an LFS file has there (``X-Repo-Commit``, ``X-Linked-Etag`` = the sha256,
  ``X-Linked-Size``); revision ``main`` or the file's commit. An unknown repository, revision
  or file gets ``404`` with the Hub's ``X-Error-Code`` (``RepoNotFound``,
  ``RevisionNotFound``, ``EntryNotFound``).
* ``GET /cdn/{etag}`` on the CDN: the bytes, honouring ``Range: bytes=N-`` (``206``), in
  ``chunk_size`` pieces ``chunk_delay`` seconds apart. A file in `corrupt` has its first
  byte flipped (the sha256 no longer matches the ETag, the size does).

`requests` records ``(origin, method, path, range header)``; `transfers` records each CDN
body: where it started, how many bytes went out, whether it finished, and when it ended.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Self

from tests.fakes._loopback import LoopbackHandler, QuietThreadingServer

COMMIT = "c0ffee" + "0" * 34
_RESOLVE = re.compile(r"^/(?P<repo>[^/]+/[^/]+)/resolve/(?P<revision>[^/]+)/(?P<file>.+)$")
_CDN = re.compile(r"^/cdn/(?P<etag>[0-9a-f]+)$")
_RANGE = re.compile(r"^bytes=(?P<start>\d+)-$")


@dataclass
class HubFile:
    repo: str
    filename: str
    content: bytes | Path
    """The bytes, or a file read piece by piece (a real model)."""
    commit: str = COMMIT
    sha256: str = ""
    """The LFS oid the Hub reports (ETag); by default the content's real sha256."""

    def __post_init__(self) -> None:
        if not self.sha256:
            digest = hashlib.sha256()
            if isinstance(self.content, bytes):
                digest.update(self.content)
            else:
                with self.content.open("rb") as file:
                    while chunk := file.read(1 << 20):
                        digest.update(chunk)
            self.sha256 = digest.hexdigest()

    @property
    def size(self) -> int:
        return len(self.content) if isinstance(self.content, bytes) else self.content.stat().st_size

    def read(self, start: int, count: int) -> bytes:
        if isinstance(self.content, bytes):
            return self.content[start : start + count]
        with self.content.open("rb") as file:
            file.seek(start)
            return file.read(count)


@dataclass
class Transfer:
    etag: str
    start: int
    sent: int = 0
    finished: bool = False
    """Every byte went out."""
    ended: bool = False
    """The body is over: finished, or the client hung up."""


@dataclass
class FakeHub:
    files: list[HubFile]
    chunk_size: int = 64 * 1024
    chunk_delay: float = 0.0
    corrupt: set[str] = field(default_factory=set)
    """ETags whose first byte is served flipped."""
    requests: list[tuple[str, str, str, str | None]] = field(default_factory=list)
    transfers: list[Transfer] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.lock = threading.Lock()
        self._servers: list[ThreadingHTTPServer] = []
        self.stopping = threading.Event()

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> Self:
        for role in ("hub", "cdn"):
            server = QuietThreadingServer(("127.0.0.1", 0), _Handler)
            server.owner = self  # type: ignore[attr-defined]
            server.role = role  # type: ignore[attr-defined]
            self._servers.append(server)
            threading.Thread(
                target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
            ).start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        for server in self._servers:
            server.shutdown()
            server.server_close()
        self._servers.clear()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._servers[0].server_address[1]}"

    @property
    def cdn(self) -> str:
        return f"http://127.0.0.1:{self._servers[1].server_address[1]}"

    def ranges(self) -> list[str | None]:
        """The Range header of each CDN GET, in order."""
        with self.lock:
            return [
                r for origin, method, _, r in self.requests if origin == "cdn" and method == "GET"
            ]

    # -- lookups -----------------------------------------------------------------------------

    def find(self, repo: str, filename: str) -> HubFile | None:
        return next((f for f in self.files if f.repo == repo and f.filename == filename), None)

    def by_etag(self, etag: str) -> HubFile | None:
        return next((f for f in self.files if f.sha256 == etag), None)


class _Handler(LoopbackHandler):
    server: ThreadingHTTPServer

    @property
    def hub(self) -> FakeHub:
        return self.server.owner  # type: ignore[attr-defined,no-any-return]

    def _record(self) -> None:
        role: str = self.server.role  # type: ignore[attr-defined]
        with self.hub.lock:
            self.hub.requests.append((role, self.command, self.path, self.headers.get("Range")))

    def do_HEAD(self) -> None:
        self._record()
        self._answer(body=False)

    def do_GET(self) -> None:
        self._record()
        self._answer(body=True)

    def _answer(self, *, body: bool) -> None:
        if self.server.role == "hub":  # type: ignore[attr-defined]
            self._resolve()
        else:
            self._serve_bytes(body=body)

    def _error(self, status: int, code: str, commit: str | None = None) -> None:
        self.send_response(status)
        self.send_header("X-Error-Code", code)
        if commit:
            self.send_header("X-Repo-Commit", commit)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _resolve(self) -> None:
        match = _RESOLVE.match(self.path.split("?", 1)[0])
        if match is None:
            self._error(404, "RepoNotFound")
            return
        repo, revision, filename = match["repo"], match["revision"], match["file"]
        in_repo = [f for f in self.hub.files if f.repo == repo]
        if not in_repo:
            self._error(404, "RepoNotFound")
            return
        commit = in_repo[0].commit
        if revision not in ("main", commit):
            self._error(404, "RevisionNotFound")
            return
        found = self.hub.find(repo, filename)
        if found is None:
            self._error(404, "EntryNotFound", commit)
            return
        self.send_response(302)
        self.send_header("Location", f"{self.hub.cdn}/cdn/{found.sha256}")
        self.send_header("X-Repo-Commit", found.commit)
        self.send_header("X-Linked-Etag", f'"{found.sha256}"')
        self.send_header("X-Linked-Size", str(found.size))
        self.send_header("ETag", f'"{found.sha256[:40]}"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _serve_bytes(self, *, body: bool) -> None:
        match = _CDN.match(self.path.split("?", 1)[0])
        found = self.hub.by_etag(match["etag"]) if match else None
        if found is None:
            self._error(404, "EntryNotFound")
            return
        size = found.size
        wanted = self.headers.get("Range")
        range_match = _RANGE.match(wanted) if wanted else None
        ranged = range_match is not None
        start = int(range_match["start"]) if range_match is not None else 0
        if ranged and start >= size:
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{size}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(206 if ranged else 200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(size - start))
        self.send_header("Accept-Ranges", "bytes")
        if ranged:
            self.send_header("Content-Range", f"bytes {start}-{size - 1}/{size}")
        self.end_headers()
        if not body:
            return
        transfer = Transfer(found.sha256, start)
        with self.hub.lock:
            self.hub.transfers.append(transfer)
        offset = start
        try:
            with contextlib.suppress(ConnectionError, OSError):
                while offset < size and not self.hub.stopping.is_set():
                    piece = found.read(offset, self.hub.chunk_size)
                    if offset == 0 and found.sha256 in self.hub.corrupt:
                        piece = bytes([piece[0] ^ 0xFF]) + piece[1:]
                    self.wfile.write(piece)
                    self.wfile.flush()
                    offset += len(piece)
                    transfer.sent = offset - start
                    if self.hub.chunk_delay and offset < size:
                        time.sleep(self.hub.chunk_delay)
                transfer.finished = offset >= size
        finally:
            transfer.ended = True
