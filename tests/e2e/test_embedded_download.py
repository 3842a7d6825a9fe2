"""The embedded engine's model downloaded through the real milk-lsp, from a stand-in Hub.

`local.provider` embedded without `local.modelPath`: milk fetches the GGUF from the Hub at
``HF_ENDPOINT`` (`tests.fakes.hf_hub` on 127.0.0.1; the real Hub cannot be reached here) into
the cache under ``HF_HOME``. The files served are not models (a sparse file of zeros), so no
model loads here: each turn ends at the GGUF check after the download, which is what these
tests look at (tests/real_model/test_embedded_download.py loads a real one).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from milk_lsp.local_model.download import QWEN_CODER_0_5B, QWEN_CODER_1_5B, hub_installed
from milk_lsp.local_model.embedded import engine_installed
from tests.e2e.conftest import Env, Harness, MilkClient, request
from tests.fakes.hf_hub import COMMIT, FakeHub, HubFile

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not hub_installed(), reason="huggingface_hub is not installed"),
    # Without the engine a turn stops before the download (xllamacpp is not installed).
    pytest.mark.skipif(not engine_installed(), reason="xllamacpp is not installed"),
]

REPO = "milk-test/Zeros-GGUF"
FILE = "zeros-q4_k_m.gguf"
SIZE = 40 * 1024 * 1024
"""huggingface_hub reports progress every 10 MB: four steps."""
MB = 1024 * 1024


@pytest.fixture
def zeros(tmp_path: Path) -> Path:
    path = tmp_path / "served" / FILE
    path.parent.mkdir()
    with path.open("wb") as file:
        file.truncate(SIZE)  # sparse: no 40 MB written
    return path


@pytest.fixture
def hub(zeros: Path) -> Iterator[FakeHub]:
    with FakeHub([HubFile(REPO, FILE, zeros)], chunk_size=MB) as fake:
        yield fake


def download_env(env: Env, endpoint: str, **local: Any) -> Env:
    env.extra_env.update({"HF_ENDPOINT": endpoint, "HF_HOME": str(env.root / "hf")})
    env.settings["local"] = {"provider": "embedded", "requestTimeoutSeconds": 30, **local}
    env.settings["route"] = "local"
    return env


def progress_messages(client: MilkClient) -> list[str]:
    return [
        str(getattr(report, "message", None))
        for reports in client.progress_reports.values()
        for report in reports
    ]


def notices(client: MilkClient, turn_id: str) -> list[str]:
    return [u["message"] for u in client.turn_updates(turn_id) if u["kind"] == "notice"]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_a_download_reports_progress_and_its_check_before_the_load(
    harness: Harness, env: Env, hub: FakeHub
) -> None:
    download_env(env, hub.endpoint, modelRepo=REPO, modelFile=FILE)
    client = await harness.start()
    before = (await request(client, "milk/status", {}))["local"]
    assert before["provider"] == "embedded" and before["loadState"] == "stopped", before
    assert before["reachable"] is True and before.get("modelPath") is None, before
    assert before["model"] == Path(FILE).stem

    result = await request(client, "milk/chat", {"text": "hi"})
    # the file arrived whole, then failed the GGUF check (it is zeros)
    assert result["stopReason"] == "error", result
    assert "is not a GGUF model file" in result["error"]["message"], result
    assert client.kinds(result["turnId"])[-1] == "turn_ended"
    told = notices(client, result["turnId"])
    assert any(n.startswith(f"Downloading the embedded model {REPO}/{FILE}") for n in told), told
    assert any(n.startswith(f"Downloaded {REPO}/{FILE}") and "sha256" in n for n in told), told
    shown = progress_messages(client)
    steps = [m for m in shown if m.startswith("downloading model… ")]
    assert "downloading model… 0% (0 of 42 MB)" in steps, shown
    assert any(m.startswith("downloading model… 50%") for m in steps), shown
    assert steps[-1].startswith("downloading model… 100%"), shown
    assert shown.index("checking the downloaded model (sha256)…") > shown.index(steps[-1])

    stored = env.root / "hf" / "hub" / f"models--{REPO.replace('/', '--')}"
    pointer = stored / "snapshots" / COMMIT / FILE
    assert pointer.is_symlink() and pointer.stat().st_size == SIZE
    status = (await request(client, "milk/status", {}))["local"]
    assert status["modelPath"] == str(pointer) and status["modelBytes"] == SIZE, status
    assert status["reachable"] is False and "not a GGUF" in status["error"], status


async def test_cancelling_the_turn_stops_the_download_and_the_next_turn_resumes_it(
    harness: Harness, env: Env, hub: FakeHub
) -> None:
    hub.chunk_delay = 0.1  # about 4 s for the whole file
    download_env(env, hub.endpoint, modelRepo=REPO, modelFile=FILE)
    client = await harness.start()
    session = await request(client, "milk/session/new", {"workspaceFolder": env.workspace.as_uri()})
    session_id = session["sessionId"]
    turn = asyncio.create_task(
        request(client, "milk/chat", {"sessionId": session_id, "text": "hi"})
    )
    deadline = time.monotonic() + 20
    while not any(m.startswith("downloading model… 25%") for m in progress_messages(client)):
        assert time.monotonic() < deadline and not turn.done(), progress_messages(client)
        await asyncio.sleep(0.02)
    assert await request(client, "milk/cancel", {"sessionId": session_id}) == {"cancelled": True}
    result = await asyncio.wait_for(turn, 10)
    assert result["stopReason"] == "cancelled", result
    assert client.kinds(result["turnId"])[-1] == "turn_ended"
    deadline = time.monotonic() + 10
    while not hub.transfers[0].ended:  # milk hangs up at the next 10 MB piece
        assert time.monotonic() < deadline, "the download went on after the cancel"
        await asyncio.sleep(0.05)
    assert hub.transfers[0].finished is False

    hub.chunk_delay = 0.0
    again = await request(client, "milk/chat", {"sessionId": session_id, "text": "hi"})
    assert "is not a GGUF model file" in again["error"]["message"], again
    resumed_from = hub.ranges()[-1]
    assert resumed_from is not None and resumed_from.startswith("bytes="), hub.ranges()
    kept = int(resumed_from.removeprefix("bytes=").rstrip("-"))
    assert 10 * MB <= kept < SIZE, kept
    assert hub.transfers[-1].start == kept and hub.transfers[-1].finished


async def test_offline_the_default_model_fails_the_turn_naming_local_model_path(
    harness: Harness, env: Env
) -> None:
    download_env(env, f"http://127.0.0.1:{closed_port()}")
    client = await harness.start()
    status = (await request(client, "milk/status", {}))["local"]
    default = QWEN_CODER_1_5B if status["model"] == QWEN_CODER_1_5B.stem else QWEN_CODER_0_5B
    assert status["model"] == default.stem, status
    assert status["modelBytes"] == default.size and status.get("modelPath") is None, status
    assert status["reachable"] is True and status["loadState"] == "stopped", status

    result = await request(client, "milk/chat", {"text": "hi"})
    assert result["stopReason"] == "error", result
    assert result["error"]["reason"] == "local_unreachable", result
    message = result["error"]["message"]
    assert default.label in message and "Offline?" in message, message
    assert "local.modelPath" in message and "local.baseUrl" in message
    assert client.kinds(result["turnId"])[-1] == "turn_ended"
    status = (await request(client, "milk/status", {}))["local"]
    assert status["loadState"] == "failed" and status["reachable"] is False, status
    assert "Offline?" in status["error"]


def test_doctor_names_the_model_to_download(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    local = {"provider": "embedded", "modelRepo": REPO, "modelFile": FILE}
    config.write_text(json.dumps({"local": local}))
    env = {
        **os.environ,
        "MILK_CONFIG_FILE": str(config),
        "HF_HOME": str(tmp_path / "hf"),
        "HF_ENDPOINT": f"http://127.0.0.1:{closed_port()}",
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "MILK_LOG_DIR": str(tmp_path / "logs"),
    }
    done = subprocess.run(
        [sys.executable, "-m", "milk_lsp", "doctor", "--claude-path", str(tmp_path / "none")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    line = next(
        (text for text in done.stdout.splitlines() if text.startswith("✓ embedded model")),
        done.stdout,
    )
    assert f"{Path(FILE).stem} (size unknown, not downloaded yet)" in line, done.stdout
    assert "downloaded from the Hugging Face Hub and loaded on the first local turn" in line


async def test_a_download_another_session_waits_for_goes_on_when_one_turn_is_cancelled(
    harness: Harness, env: Env, hub: FakeHub
) -> None:
    hub.chunk_delay = 0.05  # about 2 s for the whole file
    download_env(env, hub.endpoint, modelRepo=REPO, modelFile=FILE)
    client = await harness.start()
    folder = {"workspaceFolder": env.workspace.as_uri()}
    first, second = [(await request(client, "milk/session/new", folder))["sessionId"] for _ in "ab"]
    turns = [
        asyncio.create_task(request(client, "milk/chat", {"sessionId": sid, "text": "hi"}))
        for sid in (first, second)
    ]
    deadline = time.monotonic() + 20
    while not any(m.startswith("downloading model… 25%") for m in progress_messages(client)):
        assert time.monotonic() < deadline, progress_messages(client)
        await asyncio.sleep(0.02)
    assert await request(client, "milk/cancel", {"sessionId": first}) == {"cancelled": True}
    cancelled, waited = await asyncio.wait_for(asyncio.gather(*turns), 30)
    assert cancelled["stopReason"] == "cancelled", cancelled
    assert "is not a GGUF model file" in waited["error"]["message"], waited  # downloaded whole
    assert hub.ranges() == [None] and hub.transfers[0].finished, hub.transfers
