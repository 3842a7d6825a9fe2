"""Shared by the end-to-end benchmarks: a scratch environment, the fake servers, an LSP client.

Not a benchmark itself. `Scratch` makes a throwaway root (workspace, storage, config, logs,
HOME, TMPDIR) and removes it; `FakeProcess` runs one of the tests' fake servers
(`tests.fakes.openai_server`, `tests.fakes.anthropic_api`) as its own process, so its
threads never share a GIL with the client being timed; `MilkLsp` starts the real
`python -m milk_lsp` over stdio and drives it with pygls' `LanguageClient` as an editor does.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types
from lsprotocol.converters import get_converter
from pygls.lsp.client import LanguageClient

REPO = Path(__file__).resolve().parents[1]


def spread_ms(samples: list[float]) -> str:
    """'median X ms (min Y, max Z)' of timings in seconds."""
    return (
        f"median {statistics.median(samples) * 1000:.1f} ms "
        f"(min {min(samples) * 1000:.1f}, max {max(samples) * 1000:.1f})"
    )


def cpu_per_turn(label: str, timed: list[float]) -> str:
    """The mean CPU seconds of the server per timed turn, as a line."""
    return (
        f"{label} CPU per turn (user + sys, mean of {len(timed)}): "
        f"{sum(timed) / len(timed) * 1000:.1f} ms"
    )


def paired_ratio(
    name: str, ours: list[float], theirs: list[float], target: float, decimals: int = 0
) -> str:
    """The ratio line for interleaved pairs of timings (seconds): medians, per-pair, fastest."""
    pairs = statistics.median(o / t for o, t in zip(ours, theirs, strict=True))
    overhead = statistics.median(o - t for o, t in zip(ours, theirs, strict=True))
    ratio = statistics.median(ours) / statistics.median(theirs)
    return (
        f"ratio {name}: {ratio:.3f}x (target <= {target}x; median of per-pair ratios "
        f"{pairs:.3f}x, of the fastest runs {min(ours) / min(theirs):.3f}x); "
        f"overhead median {overhead * 1000:.{decimals}f} ms per turn"
    )


async def stream_chat(
    http: Any, url: str, body: dict[str, Any]
) -> tuple[float, str, dict[str, Any]]:
    """One streamed chat completion sent straight to a model server (the naive path the
    turn benches compare with): seconds to `[DONE]`, the reply's text, the last usage."""
    started = time.perf_counter()
    usage: dict[str, Any] = {}
    text: list[str] = []
    async with http.stream("POST", f"{url}/chat/completions", json=body) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                break
            chunk = json.loads(data)
            usage = chunk.get("usage") or usage
            for choice in chunk.get("choices") or []:
                text.append((choice.get("delta") or {}).get("content") or "")
    return time.perf_counter() - started, "".join(text), usage


def expect(ok: bool, what: object) -> None:
    """Stop the benchmark when a run did not do what it should (then its time means nothing)."""
    if not ok:
        raise RuntimeError(f"benchmark run failed: {what!r}")


def process_cpu(pid: int) -> tuple[float, float]:
    """(own, waited-for children's) CPU seconds, user + system, of a process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    utime, stime, cutime, cstime = (int(v) for v in fields[11:15])
    return (utime + stime) / tick, (cutime + cstime) / tick


class Scratch:
    """A throwaway root with a workspace and the server's folders; `close()` removes it."""

    def __init__(self, prefix: str) -> None:
        self.root = Path(tempfile.mkdtemp(prefix=prefix))
        self.workspace = self.root / "workspace"
        self.storage = self.root / "storage"
        for name in ("workspace", "config", "data", "state", "logs", "home", "tmp"):
            (self.root / name).mkdir()
        (self.workspace / "hello.py").write_text("def greet():\n    return 'hello'\n")

    def server_env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        return {
            **os.environ,
            "XDG_CONFIG_HOME": str(self.root / "config"),
            "XDG_DATA_HOME": str(self.root / "data"),
            "XDG_STATE_HOME": str(self.root / "state"),
            "MILK_LOG_DIR": str(self.root / "logs"),
            "MILK_CONFIG_FILE": str(self.root / "config" / "milk" / "config.json"),
            "PYTHONUNBUFFERED": "1",
            **(extra or {}),
        }

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


class FakeProcess:
    """`python -m <module>` of a fake server: waits for its `READY <url>` line."""

    def __init__(self, module: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", module],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line.startswith("READY "):
            self.close()
            raise RuntimeError(f"{module} did not start: {line!r}")
        self.url = line.split(" ", 1)[1]
        self.origin = self.url.removesuffix("/v1")

    def call(self, method: str, path: str, payload: Any = None) -> Any:
        data = None if payload is None else json.dumps(payload).encode()
        request = urllib.request.Request(
            self.origin + path,
            data=data,
            method=method,
            headers={"content-type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read() or b"null")

    def script(self, responses: list[dict[str, Any]]) -> None:
        self.call("POST", "/_script", responses)

    def close(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


class MilkLsp:
    """The real server over stdio, driven like an editor (pygls `LanguageClient`)."""

    def __init__(
        self, scratch: Scratch, settings: dict[str, Any], env: dict[str, str] | None = None
    ) -> None:
        self.scratch = scratch
        self.settings = settings
        self.env = scratch.server_env(env)
        self.updates = 0
        self.on_update: Callable[[dict[str, Any]], None] | None = None
        self.permission_answer = "allow_once"
        self.permission_requests: list[dict[str, Any]] = []
        self.client: LanguageClient | None = None
        self._stderr_task: asyncio.Task[None] | None = None
        self.stderr_tail = bytearray()

    async def start(self) -> float:
        """Spawn and initialize; returns seconds from spawn to the initialize result."""
        client = LanguageClient("milk-bench", "0", converter_factory=get_converter)

        @client.feature("milk/update")
        def on_update(ls: LanguageClient, params: Any) -> None:
            self.updates += 1
            if self.on_update is not None:
                self.on_update(params)

        @client.feature("milk/requestPermission")
        def on_permission(ls: LanguageClient, params: Any) -> dict[str, str]:
            self.permission_requests.append(params)
            return {"optionId": self.permission_answer}

        @client.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
        def on_progress_create(ls: LanguageClient, params: Any) -> None:
            return None

        @client.feature(types.PROGRESS)
        def on_progress(ls: LanguageClient, params: Any) -> None:
            return None

        @client.feature(types.WINDOW_LOG_MESSAGE)
        def on_log(ls: LanguageClient, params: Any) -> None:
            return None

        @client.feature(types.WINDOW_SHOW_MESSAGE)
        def on_show(ls: LanguageClient, params: Any) -> None:
            return None

        @client.feature("$/milk/nudge")  # keeps a quiet stream moving; clients ignore it
        def on_nudge(ls: LanguageClient, params: Any) -> None:
            return None

        uri = self.scratch.workspace.as_uri()
        started = time.perf_counter()
        await client.start_io(sys.executable, "-m", "milk_lsp", env=self.env, cwd=str(REPO))
        self.client = client
        server = client._server  # drain stderr so a chatty server never blocks on the pipe
        if server is not None and server.stderr is not None:
            self._stderr_task = asyncio.create_task(self._drain(server.stderr))
        await client.initialize_async(
            types.InitializeParams(
                process_id=os.getpid(),
                root_uri=uri,
                workspace_folders=[types.WorkspaceFolder(uri=uri, name="workspace")],
                capabilities=types.ClientCapabilities(
                    window=types.WindowClientCapabilities(work_done_progress=True),
                    experimental={"milk": {"requestPermission": True}},
                ),
                initialization_options=self.settings,
            )
        )
        elapsed = time.perf_counter() - started
        client.initialized(types.InitializedParams())
        return elapsed

    async def _drain(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(65536):
            self.stderr_tail += chunk
            del self.stderr_tail[:-8192]

    @property
    def pid(self) -> int:
        server = self.client._server if self.client is not None else None
        if server is None:
            raise RuntimeError("the server is not running")
        return server.pid

    async def request(self, method: str, params: Any) -> Any:
        assert self.client is not None
        return await self.client.protocol.send_request_async(method, params)

    async def stop(self) -> None:
        client, self.client = self.client, None
        if client is None:
            return
        try:
            await asyncio.wait_for(client.shutdown_async(None), 10)
            client.exit(None)
            server = client._server
            if server is not None:
                await asyncio.wait_for(server.wait(), 10)
        except Exception:
            server = client._server
            if server is not None and server.returncode is None:
                server.kill()
        await client.stop()
        if self._stderr_task is not None:
            self._stderr_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._stderr_task
