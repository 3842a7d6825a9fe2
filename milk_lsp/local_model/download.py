"""The embedded engine's model from the Hugging Face Hub: which one, and getting it.

With no `local.modelPath`, the embedded engine loads `local.modelRepo`/`local.modelFile`, or
the pinned default: Qwen2.5-Coder-1.5B-Instruct Q4_K_M, or its 0.5B sibling when the
machine has little memory available. The file is fetched into huggingface_hub's cache
(``HF_HOME``/``HF_HUB_CACHE``; ``HF_ENDPOINT`` and a stored token are honoured) with
progress, can be cancelled, resumes where it stopped, and its sha256 is checked (the
pinned one, else the Hub's LFS sha256): a mismatch deletes the file.

Why not `hf_hub_download` itself: since huggingface_hub 1.18 it writes every download to a
process-unique temporary file and deletes it on failure, so an interrupted 1.1 GB download
starts again from zero (huggingface/huggingface_hub#4196). milk keeps the partial file at
``blobs/<etag>.incomplete`` (the name huggingface_hub resumed before 1.18), continues it with
a Range request through huggingface_hub's own `http_get`, under the same lock file
`hf_hub_download` takes, and files the result in the standard cache layout
(``blobs/<etag>``, ``snapshots/<commit>/<file>``), where `hf_hub_download` and
`try_to_load_from_cache` find it.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib.util
import os
import re
import shutil
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from milk_lsp.agents.base import FailureReason
from milk_lsp.agents.local.reply.stream import LocalModelError

HUB_INSTALL_HINT = "pip install 'milk-lsp[embedded]'"
WAY_OUT = (
    "download a .gguf yourself and set local.modelPath to it, or set local.baseUrl to a "
    "running model server"
)
_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class HubModel:
    """One GGUF file in a Hub repository, at a revision, with what it must hash to."""

    repo: str
    filename: str
    revision: str = "main"
    sha256: str | None = None
    """Pinned: the download must hash to this. Unset: the Hub's LFS sha256 is used."""
    size: int | None = None

    @property
    def label(self) -> str:
        return f"{self.repo}/{self.filename}"

    @property
    def stem(self) -> str:
        return Path(self.filename).stem


QWEN_CODER_1_5B = HubModel(
    repo="Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF",
    filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    revision="f86cb2c1fa58255f8052cc32aeede1b7482d4361",
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    size=1_117_320_768,
)
"""The default model (Apache-2.0). The same bytes as the real-model tier's wheel-assembled
copy (`tests/real_model/fetch.py` takes its size and sha256 from here)."""

QWEN_CODER_0_5B = HubModel(
    repo="Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF",
    filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    revision="ebb2015119c907b064c512bf053e945850b5875f",
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    size=491_400_064,
)
"""The default when memory is short (Apache-2.0)."""

LARGE_MODEL_MIN_AVAILABLE = 3 * 1024**3
"""MemAvailable below which the default is the 0.5B model: running, the 1.5B one holds about
1.9 GB (measured with xllamacpp), the 0.5B about 0.7 GB; the rest is the editor's."""


def hub_installed() -> bool:
    """Whether huggingface_hub can be imported (it is not imported here: start-up stays quick)."""
    return importlib.util.find_spec("huggingface_hub") is not None


def mem_available(meminfo: Path = Path("/proc/meminfo")) -> int | None:
    """The kernel's estimate of memory available without swapping (Linux), in bytes."""
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def default_model(available: int | None) -> HubModel:
    if available is not None and available < LARGE_MODEL_MIN_AVAILABLE:
        return QWEN_CODER_0_5B
    return QWEN_CODER_1_5B


def hub_model(repo: str | None, filename: str | None) -> HubModel:
    """The model `local.modelRepo`/`local.modelFile` name, or the default one for this machine.
    Raises `LocalModelError` when only one of the two is set."""
    if repo and filename:
        return HubModel(repo, filename)
    if repo or filename:
        missing = "local.modelFile" if repo else "local.modelRepo"
        raise LocalModelError(
            FailureReason.LOCAL_UNREACHABLE,
            f"{missing} is not set: set both local.modelRepo and local.modelFile",
        )
    return default_model(mem_available())


def cache_dir() -> Path:
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def cached(model: HubModel, cache: Path | None = None) -> Path | None:
    """The model's file when it is in the cache already (no network), else None. A file of
    another size than the pinned one does not count (the download replaces it)."""
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(
        model.repo, model.filename, cache_dir=cache, revision=model.revision
    )
    if not isinstance(found, str):
        return None
    path = Path(found)
    try:
        size = path.stat().st_size
    except OSError:
        return None
    return path if model.size is None or size == model.size else None


# -- downloading -----------------------------------------------------------------------------


@dataclass(frozen=True)
class DownloadProgress:
    stage: Literal["downloading", "checking"]
    done: int
    total: int | None

    def describe(self) -> str:
        if self.stage == "checking":
            return "checking the downloaded model (sha256)…"
        if not self.total:
            return f"downloading model… {self.done / 1e6:.0f} MB"
        percent = min(100, self.done * 100 // self.total)
        return f"downloading model… {percent}% ({self.done / 1e6:.0f} of {self.total / 1e6:.0f} MB)"


ProgressSink = Callable[[DownloadProgress], None]


class DownloadCancelled(Exception):
    """The download was cancelled; what arrived stays in the partial file for the next try."""


async def download(
    model: HubModel,
    on_progress: ProgressSink,
    *,
    cache: Path | None = None,
    endpoint: str | None = None,
) -> Path:
    """`download_blocking` in a worker thread. Cancelling the caller stops the transfer at
    its next chunk and keeps what arrived for the next try; the thread is a daemon, so a
    stalled connection never holds up milk-lsp's exit."""
    loop = asyncio.get_running_loop()
    outcome: asyncio.Future[Path] = loop.create_future()
    cancelled = threading.Event()

    def report(progress: DownloadProgress) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody listens
            loop.call_soon_threadsafe(on_progress, progress)

    def settle(path: Path | None, error: BaseException | None) -> None:
        if outcome.done():  # the waiter was cancelled
            return
        if error is not None:
            outcome.set_exception(error)
        else:
            assert path is not None
            outcome.set_result(path)

    def work() -> None:
        path: Path | None = None
        error: BaseException | None = None
        try:
            path = download_blocking(model, report, cancelled, cache=cache, endpoint=endpoint)
        except BaseException as exc:
            error = exc
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle, path, error)

    threading.Thread(target=work, name="milk-model-download", daemon=True).start()
    try:
        return await outcome
    except asyncio.CancelledError:
        cancelled.set()
        raise


def download_blocking(
    model: HubModel,
    on_progress: ProgressSink,
    cancelled: threading.Event,
    *,
    cache: Path | None = None,
    endpoint: str | None = None,
) -> Path:
    """Fetch `model` into the cache (resuming a partial file) and return its path there.
    Raises `LocalModelError` saying what went wrong and what to do."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_url
    from huggingface_hub.utils import WeakFileLock  # type: ignore[attr-defined]  # documented, not in __all__

    root = cache or cache_dir()
    url = hf_hub_url(model.repo, model.filename, revision=model.revision, endpoint=endpoint)
    try:
        meta = get_hf_file_metadata(url, endpoint=endpoint)
    except Exception as exc:
        raise _hub_failure(model, url, exc) from exc
    if meta.commit_hash is None or meta.etag is None:
        raise LocalModelError(
            FailureReason.LOCAL_FAILED,
            f"{url} did not answer like a Hugging Face Hub (no commit or ETag header): check "
            f"HF_ENDPOINT, or {WAY_OUT}",
        )
    size = meta.size if meta.size is not None else model.size
    expected = model.sha256 or (meta.etag if _SHA256.fullmatch(meta.etag) else None)
    storage = root / ("models--" + model.repo.replace("/", "--"))
    blob = storage / "blobs" / meta.etag
    partial = blob.with_name(f"{meta.etag}.incomplete")
    pointer = storage / "snapshots" / meta.commit_hash / model.filename
    lock = root / ".locks" / storage.name / f"{meta.etag}.lock"
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
        blob.parent.mkdir(parents=True, exist_ok=True)
        with WeakFileLock(str(lock)):
            if not _complete(blob, size):
                _transfer(model, meta.location, url, partial, size, on_progress, cancelled)
                if expected is not None:
                    on_progress(DownloadProgress("checking", size or 0, size))
                    _check_sha256(model, partial, expected)
                partial.replace(blob)
            _link(blob, pointer)
            if model.revision != meta.commit_hash:
                refs = storage / "refs" / model.revision
                refs.parent.mkdir(parents=True, exist_ok=True)
                refs.write_text(meta.commit_hash)
    except OSError as exc:
        raise LocalModelError(
            FailureReason.LOCAL_FAILED,
            f"cannot store the embedded model {model.label} in {root}: "
            f"{exc.strerror or exc}. Free disk space or set HF_HUB_CACHE, or {WAY_OUT}",
        ) from exc
    return pointer


def _complete(blob: Path, size: int | None) -> bool:
    try:
        actual = blob.stat().st_size
    except OSError:
        return False
    return size is None or actual == size


def _transfer(
    model: HubModel,
    location: str,
    url: str,
    partial: Path,
    size: int | None,
    on_progress: ProgressSink,
    cancelled: threading.Event,
) -> None:
    from huggingface_hub.file_download import http_get
    from huggingface_hub.utils import build_hf_headers  # type: ignore[attr-defined]  # documented

    resume = partial.stat().st_size if partial.exists() else 0
    if size is not None and resume > size:
        partial.unlink()
        resume = 0
    if size is not None:
        free = shutil.disk_usage(partial.parent).free
        if free < size - resume:
            raise LocalModelError(
                FailureReason.LOCAL_FAILED,
                f"not enough disk space for the embedded model {model.label}: "
                f"{(size - resume) / 1e6:.0f} MB needed in {partial.parent}, "
                f"{free / 1e6:.0f} MB free. Free some space or set HF_HUB_CACHE, or {WAY_OUT}",
            )
    # The token goes to the Hub only, never to the CDN a file is redirected to.
    same_host = urlsplit(location).netloc == urlsplit(url).netloc
    headers = build_hf_headers() if same_host else {}
    progress_class: Any = _progress_class(on_progress, cancelled)
    on_progress(DownloadProgress("downloading", resume, size))
    try:
        with partial.open("ab") as out:
            http_get(
                location,
                out,
                resume_size=resume,
                headers=headers,
                expected_size=size,
                displayed_filename=model.filename,
                tqdm_class=progress_class,
            )
    except DownloadCancelled:
        raise
    except OSError as exc:
        if "Consistency check failed" in str(exc):  # the server sent more or fewer bytes
            partial.unlink(missing_ok=True)
            raise LocalModelError(
                FailureReason.LOCAL_FAILED,
                f"the download of {model.label} had the wrong size: deleted it, the next "
                f"local turn downloads it again; or {WAY_OUT}",
            ) from exc
        if not isinstance(exc, ConnectionError):
            raise  # the disk's: reported by the caller
        raise _stopped(model, partial, size, exc) from exc
    except Exception as exc:
        raise _stopped(model, partial, size, exc) from exc


def _stopped(model: HubModel, partial: Path, size: int | None, exc: Exception) -> LocalModelError:
    got = partial.stat().st_size if partial.exists() else 0
    return LocalModelError(
        FailureReason.LOCAL_UNREACHABLE,
        f"the download of the embedded model {model.label} stopped at "
        f"{got / 1e6:.0f} MB{f' of {size / 1e6:.0f} MB' if size else ''} ({_why(exc)}): "
        f"the next local turn resumes it; or {WAY_OUT}",
    )


def _progress_class(on_progress: ProgressSink, cancelled: threading.Event) -> type:
    """A stand-in for the tqdm bar `http_get` drives: reports each chunk and stops the
    transfer once cancelled (before the chunk is written, so the partial file stays whole)."""

    class Progress:
        def __init__(self, *, total: int | None = None, initial: int = 0, **_: Any) -> None:
            self.total = total
            self.n = initial

        def update(self, count: int) -> None:
            if cancelled.is_set():
                raise DownloadCancelled
            self.n += count
            on_progress(DownloadProgress("downloading", self.n, self.total))

        def __enter__(self) -> Progress:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

    return Progress


def _check_sha256(model: HubModel, path: Path, expected: str) -> None:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    got = digest.hexdigest()
    if got != expected:
        path.unlink(missing_ok=True)
        raise LocalModelError(
            FailureReason.LOCAL_FAILED,
            f"the downloaded {model.label} has sha256 {got}, not the expected {expected}: "
            f"deleted it. The next local turn downloads it again; if this repeats, {WAY_OUT}",
        )


def _link(blob: Path, pointer: Path) -> None:
    """The snapshot entry: a relative symlink to the blob, as huggingface_hub makes it
    (a copy where symlinks are not allowed)."""
    if pointer.exists():
        return
    pointer.unlink(missing_ok=True)  # a link left dangling when its blob was deleted
    pointer.parent.mkdir(parents=True, exist_ok=True)
    try:
        pointer.symlink_to(os.path.relpath(blob, pointer.parent))
    except OSError:
        shutil.copyfile(blob, pointer)


def _hub_failure(model: HubModel, url: str, exc: Exception) -> LocalModelError:
    from huggingface_hub.errors import (
        EntryNotFoundError,
        GatedRepoError,
        HfHubHTTPError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    if isinstance(exc, GatedRepoError):
        what = "is gated: accept its terms on the Hub and log in with `hf auth login`"
    elif isinstance(exc, RepositoryNotFoundError):
        what = "was not found (check local.modelRepo)"
    elif isinstance(exc, RevisionNotFoundError):
        what = f"has no revision {model.revision}"
    elif isinstance(exc, EntryNotFoundError):
        what = f"has no file {model.filename} (check local.modelFile)"
    elif isinstance(exc, HfHubHTTPError):
        what = f"could not be fetched ({_why(exc)})"
    else:  # no HTTP answer at all
        return LocalModelError(
            FailureReason.LOCAL_UNREACHABLE,
            f"cannot download the embedded model {model.label}: the Hub "
            f"({urlsplit(url).netloc}) cannot be reached ({_why(exc)}). Offline? {WAY_OUT}",
        )
    return LocalModelError(
        FailureReason.LOCAL_FAILED, f"the embedded model {model.label} {what}; or {WAY_OUT}"
    )


def _why(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:200]}" if text else type(exc).__name__
