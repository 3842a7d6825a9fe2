"""The embedded model's download from the Hugging Face Hub, against a stand-in Hub on
127.0.0.1 (`tests.fakes.hf_hub`: the real Hub cannot be reached here): progress, cancel and
resume, offline, a sha256 mismatch, and a cache huggingface_hub itself reads."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("huggingface_hub")

from huggingface_hub import constants, hf_hub_download

from milk_lsp.agents.base import FailureReason
from milk_lsp.agents.local.reply.stream import LocalModelError
from milk_lsp.local_model import download as model_download
from milk_lsp.local_model.download import (
    LARGE_MODEL_MIN_AVAILABLE,
    QWEN_CODER_0_5B,
    QWEN_CODER_1_5B,
    DownloadProgress,
    HubModel,
    cached,
    default_model,
    download,
    hub_model,
    mem_available,
)
from tests.fakes.hf_hub import COMMIT, FakeHub, HubFile

REPO = "milk-test/Tiny-GGUF"
FILE = "tiny-q4_k_m.gguf"
SIZE = 2 * 1024 * 1024
PIECE = 64 * 1024


@pytest.fixture
def content() -> bytes:
    return b"GGUF" + os.urandom(SIZE - 4)


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """huggingface_hub reads the body in 10 MB chunks; the stand-in's files are 2 MB."""
    monkeypatch.setattr(constants, "DOWNLOAD_CHUNK_SIZE", PIECE)


@pytest.fixture
def hub(content: bytes) -> Iterator[FakeHub]:
    with FakeHub([HubFile(REPO, FILE, content)], chunk_size=PIECE) as fake:
        yield fake


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def storage(cache: Path) -> Path:
    return cache / ("models--" + REPO.replace("/", "--"))


async def no_download_thread_within(seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while any(t.name == "milk-model-download" for t in threading.enumerate()):
        assert time.monotonic() < deadline, "the download thread did not stop"
        await asyncio.sleep(0.01)


# -- which model ---------------------------------------------------------------------------


def test_the_default_is_the_1_5b_model_unless_memory_is_short() -> None:
    assert default_model(None) is QWEN_CODER_1_5B  # unknown: the better one
    assert default_model(LARGE_MODEL_MIN_AVAILABLE) is QWEN_CODER_1_5B
    assert default_model(LARGE_MODEL_MIN_AVAILABLE - 1) is QWEN_CODER_0_5B
    for pinned in (QWEN_CODER_1_5B, QWEN_CODER_0_5B):
        assert len(pinned.revision) == 40 and pinned.sha256 and pinned.size


def test_mem_available_reads_meminfo(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:  24000000 kB\nMemFree: 100 kB\nMemAvailable:  2048 kB\n")
    assert mem_available(meminfo) == 2048 * 1024
    assert mem_available(tmp_path / "absent") is None
    meminfo.write_text("MemTotal: 1 kB\n")
    assert mem_available(meminfo) is None


def test_a_repo_needs_its_file_and_the_other_way_round() -> None:
    assert hub_model("a/b", "m.gguf") == HubModel("a/b", "m.gguf")
    for repo, file, missing in (
        ("a/b", None, "local.modelFile"),
        (None, "m.gguf", "local.modelRepo"),
    ):
        with pytest.raises(LocalModelError, match=missing):
            hub_model(repo, file)
    assert hub_model(None, None) in (QWEN_CODER_1_5B, QWEN_CODER_0_5B)


# -- downloading ---------------------------------------------------------------------------


async def test_download_reports_progress_and_lands_in_huggingface_hubs_cache(
    tmp_path: Path, hub: FakeHub, content: bytes
) -> None:
    seen: list[DownloadProgress] = []
    model = HubModel(REPO, FILE)
    path = await download(model, seen.append, cache=tmp_path, endpoint=hub.endpoint)

    assert path.read_bytes() == content
    assert path == storage(tmp_path) / "snapshots" / COMMIT / FILE and path.is_symlink()
    stages = [p.stage for p in seen]
    assert stages[-1] == "checking", "the Hub's LFS sha256 is checked"
    done = [p.done for p in seen if p.stage == "downloading"]
    assert done[0] == 0 and done[-1] == SIZE and done == sorted(done) and len(done) > 10
    assert all(p.total == SIZE for p in seen)
    assert seen[len(seen) // 2].describe().startswith("downloading model… ")
    assert "%" in seen[len(seen) // 2].describe()

    # huggingface_hub finds it without the network, and so does milk
    assert hf_hub_download(REPO, FILE, cache_dir=tmp_path, local_files_only=True) == str(path)
    assert cached(model, tmp_path) == path
    # a second download only asks the Hub where the file is
    gets = len(hub.ranges())
    assert await download(model, seen.append, cache=tmp_path, endpoint=hub.endpoint) == path
    assert len(hub.ranges()) == gets


async def test_a_pinned_revision_and_sha256(tmp_path: Path, hub: FakeHub, content: bytes) -> None:
    served = hub.files[0]
    model = HubModel(REPO, FILE, revision=COMMIT, sha256=served.sha256, size=SIZE)
    assert cached(model, tmp_path) is None
    path = await download(model, lambda _: None, cache=tmp_path, endpoint=hub.endpoint)
    assert path.read_bytes() == content
    assert cached(model, tmp_path) == path
    assert not (storage(tmp_path) / "refs").exists()  # a commit needs no ref


async def test_a_cancelled_download_stops_and_the_next_one_resumes(
    tmp_path: Path, hub: FakeHub, content: bytes
) -> None:
    hub.chunk_delay = 0.01  # 32 pieces: about 0.3 s for the whole file
    model = HubModel(REPO, FILE)
    seen: list[DownloadProgress] = []
    arrived = asyncio.Event()

    def on_progress(progress: DownloadProgress) -> None:
        seen.append(progress)
        if progress.done >= SIZE // 4:
            arrived.set()

    task = asyncio.create_task(download(model, on_progress, cache=tmp_path, endpoint=hub.endpoint))
    await asyncio.wait_for(arrived.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await no_download_thread_within(5)

    blobs = storage(tmp_path) / "blobs"
    partial = blobs / f"{hub.files[0].sha256}.incomplete"
    kept = partial.stat().st_size
    assert SIZE // 4 <= kept < SIZE, kept
    assert not (blobs / hub.files[0].sha256).exists()
    assert hub.transfers[0].finished is False
    assert content.startswith(partial.read_bytes())

    resumed: list[DownloadProgress] = []
    path = await download(model, resumed.append, cache=tmp_path, endpoint=hub.endpoint)
    assert path.read_bytes() == content
    assert hub.ranges()[-1] == f"bytes={kept}-"  # only the rest was asked for
    assert resumed[0].done == kept
    assert hub.transfers[-1].start == kept and hub.transfers[-1].sent == SIZE - kept
    assert not partial.exists()


async def test_offline_says_what_to_do(tmp_path: Path) -> None:
    model = HubModel(REPO, FILE)
    endpoint = f"http://127.0.0.1:{closed_port()}"
    with pytest.raises(LocalModelError) as failed:
        await download(model, lambda _: None, cache=tmp_path, endpoint=endpoint)
    assert failed.value.reason is FailureReason.LOCAL_UNREACHABLE
    message = failed.value.message
    assert "cannot be reached" in message and "Offline?" in message, message
    assert "local.modelPath" in message and "local.baseUrl" in message


async def test_a_sha256_mismatch_deletes_the_file_and_the_next_try_starts_over(
    tmp_path: Path, hub: FakeHub, content: bytes
) -> None:
    served = hub.files[0]
    hub.corrupt.add(served.sha256)
    model = HubModel(REPO, FILE)
    with pytest.raises(LocalModelError) as failed:
        await download(model, lambda _: None, cache=tmp_path, endpoint=hub.endpoint)
    assert failed.value.reason is FailureReason.LOCAL_FAILED
    assert "sha256" in failed.value.message and "deleted it" in failed.value.message
    assert served.sha256 in failed.value.message
    assert list((storage(tmp_path) / "blobs").iterdir()) == []
    assert not (storage(tmp_path) / "snapshots").exists()

    hub.corrupt.clear()
    path = await download(model, lambda _: None, cache=tmp_path, endpoint=hub.endpoint)
    assert path.read_bytes() == content
    assert hub.ranges()[-1] is None  # from the start: nothing of the bad file was kept


async def test_a_pinned_sha256_the_download_does_not_have(tmp_path: Path, hub: FakeHub) -> None:
    model = HubModel(REPO, FILE, sha256="0" * 64)
    with pytest.raises(LocalModelError, match="not the expected 0000"):
        await download(model, lambda _: None, cache=tmp_path, endpoint=hub.endpoint)
    assert cached(model, tmp_path) is None


@pytest.mark.parametrize(
    ("repo", "filename", "revision", "says"),
    [
        ("milk-test/Nothing-GGUF", FILE, "main", "check local.modelRepo"),
        (REPO, "other.gguf", "main", "check local.modelFile"),
        (REPO, FILE, "f" * 40, "has no revision"),
    ],
)
async def test_what_the_hub_does_not_have(
    tmp_path: Path, hub: FakeHub, repo: str, filename: str, revision: str, says: str
) -> None:
    model = HubModel(repo, filename, revision=revision)
    with pytest.raises(LocalModelError) as failed:
        await download(model, lambda _: None, cache=tmp_path, endpoint=hub.endpoint)
    assert failed.value.reason is FailureReason.LOCAL_FAILED
    assert says in failed.value.message and "local.modelPath" in failed.value.message


def test_not_enough_disk_space_is_said_before_downloading(
    tmp_path: Path, hub: FakeHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A full disk cannot be made here: shutil.disk_usage is the one stand-in.
    usage = model_download.shutil.disk_usage(tmp_path)
    monkeypatch.setattr(
        model_download.shutil, "disk_usage", lambda _: usage._replace(free=SIZE // 2)
    )
    with pytest.raises(LocalModelError, match="not enough disk space"):
        model_download.download_blocking(
            HubModel(REPO, FILE),
            lambda _: None,
            threading.Event(),
            cache=tmp_path,
            endpoint=hub.endpoint,
        )
    assert hub.ranges() == []
