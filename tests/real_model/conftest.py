"""Fixtures for the `real_model` tier: a real llama.cpp server with a real (tiny) model.

`smollm2_server` (one per test session): fetches the pinned SmolLM2-135M GGUF (see
`fetch.py`), makes sure the pinned `xllamacpp` is installed, starts `serve.py` in its own
process group on 127.0.0.1 with 2 threads, waits for ``GET /health`` to answer 200, sends one
warm-up request, and kills the process group at the end of the session.

`qwen_coder_server` does the same for Qwen2.5-Coder-1.5B with the `[tool_call]` template fix,
only when ``MILK_REAL_MODEL_TOOLS=1`` (1.1 GB download, ~2 GB RAM: not for CI).

A missing package or a failed download skips the tests that need them (set
``MILK_REAL_MODEL_REQUIRED=1`` to make that a failure instead); a checksum mismatch always
fails.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import httpx
import pytest
import pytest_asyncio

from tests.e2e.conftest import Env, Harness
from tests.real_model import fetch

SERVE = Path(__file__).with_name("serve.py")
THREADS = int(os.environ.get("MILK_REAL_MODEL_THREADS", "2"))
START_SECONDS = 120.0
TOOLS_ENV = "MILK_REAL_MODEL_TOOLS"
REQUIRED_ENV = "MILK_REAL_MODEL_REQUIRED"


def pytest_configure(config: pytest.Config) -> None:
    # Registered here so the tier works before pyproject.toml lists the marker.
    config.addinivalue_line(
        "markers", "real_model: runs a real local model (llama.cpp via xllamacpp); skips offline"
    )


def _unavailable(message: str) -> NoReturn:
    if os.environ.get(REQUIRED_ENV) == "1":
        pytest.fail(f"{message} ({REQUIRED_ENV}=1)", pytrace=False)
    pytest.skip(message)


@dataclass
class LlamaServer:
    """A running llama.cpp server: `base_url` ends in /v1, `model` is the id it lists."""

    root_url: str
    model: str
    gguf: Path
    log: Path
    load_seconds: float

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/v1"

    def log_tail(self, lines: int = 30) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        return ""


def _prepare(spec: fetch.ModelSpec) -> Path:
    try:
        fetch.ensure_xllamacpp()
        return fetch.fetch_model(spec)
    except fetch.Unavailable as exc:
        unavailable, problem = True, f"real model unavailable: {exc}"
    except OSError as exc:  # e.g. a read-only or full cache folder
        unavailable, problem = True, f"real model unavailable: {fetch.cache_root()}: {exc}"
    except fetch.ChecksumMismatch as exc:
        unavailable, problem = False, f"CHECKSUM MISMATCH: {exc}"
    # outside the except blocks, so the report has no chained traceback
    if unavailable:
        _unavailable(problem)
    pytest.fail(problem, pytrace=False)


@contextlib.contextmanager
def _serve(
    gguf: Path, alias: str, logs: Path, *, chat_template: Path | None = None
) -> Iterator[LlamaServer]:
    logs.mkdir(parents=True, exist_ok=True)
    out_path, log_path = logs / f"{alias}.stdout", logs / f"{alias}.log"
    command = [sys.executable, str(SERVE), str(gguf), "--alias", alias, "--threads", str(THREADS)]
    if chat_template is not None:
        command += ["--chat-template-file", str(chat_template)]
    with out_path.open("wb") as out, log_path.open("wb") as log:
        proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=out, stderr=log, start_new_session=True
        )
    try:
        root_url, load_seconds = _wait_ready(proc, out_path, log_path)
        server = LlamaServer(root_url, alias, gguf, log_path, load_seconds)
        _wait_healthy(proc, server)
        _warm_up(server)
        yield server
    finally:
        _kill_group(proc)


def _wait_ready(proc: subprocess.Popen[bytes], out: Path, log: Path) -> tuple[str, float]:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        for line in out.read_text(errors="replace").splitlines():
            if line.startswith("READY "):
                _, url, seconds = line.split()
                return url, float(seconds)
        if proc.poll() is not None:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-20:])
            pytest.fail(f"serve.py exited {proc.returncode} before READY:\n{tail}", pytrace=False)
        time.sleep(0.05)
    pytest.fail(f"serve.py printed no READY line in {START_SECONDS:.0f} s", pytrace=False)


def _wait_healthy(proc: subprocess.Popen[bytes], server: LlamaServer) -> None:
    deadline = time.monotonic() + START_SECONDS
    status: Any = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"llama.cpp server died:\n{server.log_tail()}", pytrace=False)
        try:
            status = httpx.get(f"{server.root_url}/health", timeout=5).status_code
        except httpx.HTTPError as exc:
            status = repr(exc)
        if status == 200:
            return
        time.sleep(0.1)
    pytest.fail(f"GET /health never answered 200 (last: {status})", pytrace=False)


def _warm_up(server: LlamaServer) -> None:
    # The first request after a start is much slower; pay for it here, not in a test's timing.
    response = httpx.post(
        f"{server.base_url}/chat/completions",
        json={
            "model": server.model,
            "messages": [{"role": "user", "content": "Hi"}],
            "max_tokens": 4,
        },
        timeout=120,
    )
    assert response.status_code == 200, response.text


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    if proc.stdin is not None:
        with contextlib.suppress(OSError):
            proc.stdin.close()
    for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 10.0)):
        if proc.poll() is not None:
            break
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)  # the group is the server's own (start_new_session)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(wait)


# -- servers (one per session) ------------------------------------------------------------------


@pytest.fixture(scope="session")
def smollm2_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    spec = fetch.SMOLLM2_135M
    gguf = _prepare(spec)
    with _serve(gguf, spec.name, tmp_path_factory.mktemp("llama-logs")) as server:
        yield server


def qwen_tool_call_template(gguf: Path) -> str:
    """The model's own chat template with `<tool_call>` spelled `[tool_call]`.

    Qwen2.5-Coder otherwise writes its calls as JSON text; with this spelling llama.cpp's
    parser returns structured `tool_calls` (the Ollama community workaround).
    """
    template = fetch.gguf_string(gguf, "tokenizer.chat_template")
    assert template and "<tool_call>" in template, "unexpected Qwen2.5-Coder chat template"
    return template.replace("<tool_call>", "[tool_call]").replace("</tool_call>", "[/tool_call]")


@pytest.fixture(scope="session")
def qwen_coder_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    if os.environ.get(TOOLS_ENV) != "1":
        pytest.skip(f"set {TOOLS_ENV}=1 to run the Qwen2.5-Coder-1.5B tool-call test (1.1 GB)")
    spec = fetch.QWEN_CODER_1_5B
    gguf = _prepare(spec)
    logs = tmp_path_factory.mktemp("llama-logs-qwen")
    template = logs / "qwen-brackets.jinja"
    template.write_text(qwen_tool_call_template(gguf), encoding="utf-8")
    with _serve(gguf, spec.name, logs, chat_template=template) as server:
        yield server


# -- milk-lsp over LSP (the e2e harness, pointed at the real server) ---------------------------


def local_env(tmp_path: Path, local: dict[str, Any]) -> Env:
    """A workspace with hello.py, its own storage, route local, no Claude, and `local`."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "hello.py").write_text("def greet():\n    return 'hello'\n")
    storage = tmp_path / "storage"
    settings = {
        "local": {"requestTimeoutSeconds": 180, **local},
        "route": "local",
        "storageDir": str(storage),
        "claude": {"path": str(tmp_path / "no-claude-here")},
    }
    return Env(tmp_path, workspace, storage, settings)


def make_env(tmp_path: Path, server: LlamaServer) -> Env:
    # No local.model: milk takes the first model the endpoint lists.
    return local_env(tmp_path, {"baseUrl": server.base_url})


@pytest_asyncio.fixture
async def smollm2_harness(tmp_path: Path, smollm2_server: LlamaServer) -> AsyncIterator[Harness]:
    harness = Harness(make_env(tmp_path, smollm2_server))
    yield harness
    await harness.close()


@pytest_asyncio.fixture
async def qwen_harness(tmp_path: Path, qwen_coder_server: LlamaServer) -> AsyncIterator[Harness]:
    harness = Harness(make_env(tmp_path, qwen_coder_server))
    yield harness
    await harness.close()
