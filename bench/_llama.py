"""The llama.cpp side of `bench/real_tasks.py`: the pinned model's server and a timings recorder.

Not a benchmark itself.

* `LlamaProcess` starts a pinned Qwen2.5-Coder GGUF on xllamacpp (llama.cpp's
  OpenAI-compatible server) through `tests/real_model/serve.py`: the model's own chat template
  (`--jinja`, no template fix: milk reads tool calls written as text itself), 2 threads,
  temperature 0, one slot. The weights are fetched and sha256-checked by
  `tests.real_model.fetch`, never installed.
* `TimingsProxy` is a recording reverse proxy on 127.0.0.1 between milk-lsp and the model
  server. It passes every request and streamed reply through unchanged and reads the
  `timings` llama.cpp puts in the last SSE chunk of a chat completion (`prompt_n`: prompt
  tokens evaluated, `cache_n`: prompt tokens reused from the cache), so each model call is
  attributed to the task that was running.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from bench._harness import REPO
from tests.real_model import fetch

SERVE = REPO / "tests" / "real_model" / "serve.py"
START_SECONDS = 180.0

MODELS = {"1.5b": fetch.QWEN_CODER_1_5B, "0.5b": fetch.QWEN_CODER_0_5B}


class LlamaProcess:
    """`serve.py` for a pinned model, in its own process group; `close()` kills the group."""

    def __init__(
        self, size: str, logs: Path, *, threads: int, ctx: int, n_predict: int, slots: int = 1
    ) -> None:
        spec = MODELS[size]
        fetch.ensure_xllamacpp()
        gguf = fetch.fetch_model(spec)
        self.model = spec.name
        self.log = logs / f"{spec.name}.log"
        command = [sys.executable, str(SERVE), str(gguf), "--alias", spec.name]
        command += ["--threads", str(threads), "--ctx", str(ctx), "--n-predict", str(n_predict)]
        command += ["--slots", str(slots)]
        started = time.monotonic()
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,  # serve.py exits when this pipe closes
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                start_new_session=True,
            )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line.startswith("READY "):
            self.close()
            raise RuntimeError(f"serve.py did not start ({line!r}):\n{self.log_tail()}")
        self.root_url = line.split()[1]
        self._wait_healthy()
        self.load_seconds = time.monotonic() - started
        self.description = (
            f"{spec.name} (pinned {spec.packages[0]}..=={spec.version}, sha256 "
            f"{spec.sha256[:12]}…) on xllamacpp {fetch.XLLAMACPP_VERSION}, model's own template "
            f"(--jinja), {threads} threads, {slots} slot(s) of ctx {ctx}, at most {n_predict} "
            "tokens per reply"
        )

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama.cpp server died:\n{self.log_tail()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.root_url}/health", timeout=5).status_code == 200:
                    return
            time.sleep(0.2)
        raise RuntimeError(f"GET /health never answered 200:\n{self.log_tail()}")

    def log_tail(self, lines: int = 20) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        return ""

    def close(self) -> None:
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if self.proc.poll() is not None:
                break
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


@dataclass
class ModelCall:
    """One request through the proxy, with the timings llama.cpp reported for it."""

    label: str
    path: str
    messages: int
    seconds: float = 0.0
    status: int = 0
    timings: dict[str, Any] = field(default_factory=dict)
    chunks: int = 0
    """SSE `data:` lines passed on (a llama.cpp stream sends about one token per line)."""
    ended_by_client: bool = False
    """milk closed the stream before llama.cpp finished it (no `timings` then)."""

    @property
    def prompt_n(self) -> int:
        return int(self.timings.get("prompt_n", 0))

    @property
    def generated(self) -> int:
        """Tokens generated: llama.cpp's `predicted_n`, else the lines streamed."""
        return int(self.timings.get("predicted_n", self.chunks))

    @property
    def generating_seconds(self) -> float:
        """Seconds spent generating: llama.cpp's `predicted_ms`, else the call's time."""
        predicted = self.timings.get("predicted_ms")
        return float(predicted) / 1000 if predicted is not None else self.seconds

    @property
    def prompt_seconds(self) -> float:
        """Seconds spent evaluating the prompt: llama.cpp's `prompt_ms` (0 without timings)."""
        return float(self.timings.get("prompt_ms", 0)) / 1000

    @property
    def cache_n(self) -> int:
        return int(self.timings.get("cache_n", 0))


_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "transfer-encoding",
        "content-length",
        "content-encoding",
        "host",
        "accept-encoding",
        "proxy-connection",
        "te",
        "upgrade",
    }
)


class TimingsProxy:
    """Forwards HTTP/1.1 requests to `upstream` (an origin), recording chat completions."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.label = ""
        self.calls: list[ModelCall] = []
        self._server: asyncio.Server | None = None
        self._http = httpx.AsyncClient(base_url=self.upstream, timeout=None, trust_env=False)
        self.origin = ""

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, limit=1 << 24)
        port = self._server.sockets[0].getsockname()[1]
        self.origin = f"http://127.0.0.1:{port}"
        return self.origin

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._server.wait_closed(), 5)
        await self._http.aclose()

    def since(self, start: int) -> list[ModelCall]:
        return [c for c in self.calls[start:] if c.path.endswith("/chat/completions")]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                headers = [tuple(h.split(":", 1)) for h in lines[1:] if ":" in h]
                named = {k.strip().lower(): v.strip() for k, v in headers}
                if "chunked" in named.get("transfer-encoding", "").lower():
                    writer.write(b"HTTP/1.1 411 Length Required\r\nContent-Length: 0\r\n\r\n")
                    await writer.drain()
                    return
                body = await reader.readexactly(int(named.get("content-length", "0") or 0))
                forward = {
                    k.strip(): v.strip() for k, v in headers if k.strip().lower() not in _HOP_BY_HOP
                }
                forward["Accept-Encoding"] = "identity"  # read the SSE as text
                await self._forward(method, target, forward, body, writer)
                if named.get("connection", "").lower() == "close":
                    return
        except (ConnectionError, asyncio.CancelledError):
            return
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    async def _forward(
        self,
        method: str,
        target: str,
        headers: dict[str, str],
        body: bytes,
        writer: asyncio.StreamWriter,
    ) -> None:
        messages = 0
        if body[:1] == b"{":
            with contextlib.suppress(ValueError):
                messages = len(json.loads(body).get("messages") or [])
        call = ModelCall(self.label, urlsplit(target).path, messages)
        self.calls.append(call)
        started = time.perf_counter()
        try:
            async with self._http.stream(method, target, headers=headers, content=body) as reply:
                call.status = reply.status_code
                head = [f"HTTP/1.1 {reply.status_code} {reply.reason_phrase}"]
                head += [
                    f"{k}: {v}" for k, v in reply.headers.items() if k.lower() not in _HOP_BY_HOP
                ]
                head += ["Transfer-Encoding: chunked", "Connection: keep-alive", "", ""]
                writer.write("\r\n".join(head).encode("latin-1"))
                pending = b""
                async for chunk in reply.aiter_raw():
                    writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    await writer.drain()
                    pending = self._scan(call, pending + chunk)
                self._scan(call, pending + b"\n")
                writer.write(b"0\r\n\r\n")
                await writer.drain()
        except ConnectionError:
            call.ended_by_client = True
            raise
        except httpx.HTTPError as exc:
            text = f"proxy: upstream failed: {exc!r}".encode()
            writer.write(
                b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: %d\r\n\r\n%s" % (len(text), text)
            )
            await writer.drain()
        finally:
            call.seconds = time.perf_counter() - started

    @staticmethod
    def _scan(call: ModelCall, data: bytes) -> bytes:
        """Record `timings` from the complete lines (SSE `data:` or a JSON body); keep the rest."""
        *complete, rest = data.split(b"\n")
        for line in complete:
            text = line.strip()
            if text.startswith(b"data:"):
                text = text[5:].strip()
                call.chunks += text != b"[DONE]"
            if b'"timings"' not in text:
                continue
            with contextlib.suppress(ValueError):
                timings = json.loads(text).get("timings")
                if isinstance(timings, dict):
                    call.timings = timings
        return rest

    async def erase_slots(self) -> str:
        """Best effort: empty llama.cpp's slot caches, so the next turn starts cold."""
        try:
            slots = (await self._http.get("/slots", timeout=10)).json()
            for slot in slots:
                await self._http.post(
                    f"/slots/{slot['id']}", params={"action": "erase"}, timeout=30
                )
            return f"erased {len(slots)} slot(s)"
        except (httpx.HTTPError, ValueError, TypeError, KeyError) as exc:
            return f"could not erase the slot cache ({exc!r}); the first turn may not be cold"
