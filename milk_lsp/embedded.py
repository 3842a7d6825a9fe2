"""The embedded local model: milk runs llama.cpp's OpenAI-compatible server itself.

With `local.provider` `"embedded"` (or `"auto"` when nothing answers on the default
endpoint and a GGUF is configured), `EmbeddedServer` starts `milk_lsp.embedded_serve` (a
child process running `xllamacpp`) on 127.0.0.1 with a port the OS chooses. It starts on
the first local turn, serves every session of the server, stops after
`local.idleStopSeconds` without turns, and never outlives milk-lsp: its standard input is a
pipe milk-lsp holds, the kernel SIGKILLs it when milk-lsp dies (`orphans.die_with_parent`),
and its run token lets the next server's start-up sweep kill it where neither worked.
The local agent then talks to it like to any OpenAI-compatible server.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
import os
import signal
import sys
import time
from collections import deque
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from milk_lsp.agents.base import FailureReason
from milk_lsp.agents.local_stream import LocalModelError
from milk_lsp.config import LocalConfig
from milk_lsp.orphans import EMBEDDED_RUN_ENV, die_with_parent, new_run_token

logger = logging.getLogger(__name__)

Provider = Literal["openai", "embedded"]
LoadState = Literal["stopped", "loading", "running", "failed"]

GGUF_MAGIC = b"GGUF"
READY_TIMEOUT_SECONDS = 300.0
"""Longest a model may take to load (a large GGUF from a slow disk) before the turn fails."""
HEALTH_TIMEOUT_SECONDS = 30.0
"""After READY: how long `GET /health` may take to answer 200."""
STOP_WAIT_SECONDS = 5.0
PROBE_TIMEOUT_SECONDS = 1.0
"""How long `auto` waits for the default endpoint before it counts as silent."""
STDERR_LINES = 20
INSTALL_HINT = "install the embedded engine: pip install 'milk-lsp[embedded]'"
MODEL_HINT = "set local.modelPath to a .gguf file"


@dataclass(frozen=True)
class EmbeddedSettings:
    model_path: str
    context_size: int
    max_reply_tokens: int
    threads: int
    idle_stop_seconds: float

    @classmethod
    def of(cls, cfg: LocalConfig) -> EmbeddedSettings:
        model = str(Path(cfg.model_path).expanduser()) if cfg.model_path else ""
        return cls(
            model, cfg.context_size, cfg.max_reply_tokens, cfg.threads, cfg.idle_stop_seconds
        )


# -- which provider --------------------------------------------------------------------------


def engine_installed() -> bool:
    """Whether `xllamacpp` can be imported (it is not imported here: that loads llama.cpp)."""
    return importlib.util.find_spec("xllamacpp") is not None


def base_url_explicit(cfg: LocalConfig) -> bool:
    return "base_url" in cfg.model_fields_set


def choose_provider(cfg: LocalConfig, *, installed: bool, endpoint_answers: bool) -> Provider:
    """`local.provider` resolved: `auto` is embedded only when no server was named or
    answers, the engine is installed and a model is configured; else openai, as before."""
    if cfg.provider != "auto":
        return cfg.provider
    if base_url_explicit(cfg) or endpoint_answers:
        return "openai"
    return "embedded" if installed and cfg.model_path else "openai"


async def resolve_provider(cfg: LocalConfig) -> Provider:
    """`choose_provider`, looking for the engine and probing the default endpoint only when
    the answer depends on them (it runs at every local turn: the usual setups cost nothing)."""
    if cfg.provider != "auto" or base_url_explicit(cfg) or not cfg.model_path:
        return choose_provider(cfg, installed=False, endpoint_answers=False)
    if not engine_installed():
        return "openai"
    answers = await endpoint_answers(cfg.base_url)
    return choose_provider(cfg, installed=True, endpoint_answers=answers)


async def endpoint_answers(base_url: str) -> bool:
    """Whether anything answers HTTP at `{base_url}/models` (any status counts)."""
    import httpx

    try:
        async with httpx.AsyncClient(timeout=PROBE_TIMEOUT_SECONDS, trust_env=False) as http:
            await http.get(f"{base_url.rstrip('/')}/models")
    except (httpx.HTTPError, ValueError):
        return False
    return True


def model_problem(model_path: str) -> LocalModelError | None:
    """What keeps the configured model from loading, found before a process is started."""
    if not engine_installed():
        return LocalModelError(
            FailureReason.LOCAL_UNREACHABLE,
            f"local.provider is embedded but xllamacpp is not installed: {INSTALL_HINT}",
        )
    if not model_path:
        return LocalModelError(
            FailureReason.LOCAL_UNREACHABLE, f"no embedded model is configured: {MODEL_HINT}"
        )
    path = Path(model_path).expanduser()
    try:
        with path.open("rb") as file:
            magic = file.read(len(GGUF_MAGIC))
    except FileNotFoundError:
        return LocalModelError(
            FailureReason.LOCAL_UNREACHABLE, f"the model file {path} does not exist: {MODEL_HINT}"
        )
    except OSError as exc:
        return LocalModelError(
            FailureReason.LOCAL_UNREACHABLE,
            f"the model file {path} cannot be read ({exc.strerror}): {MODEL_HINT}",
        )
    if magic != GGUF_MAGIC:
        return LocalModelError(
            FailureReason.LOCAL_FAILED, f"{path} is not a GGUF model file: {MODEL_HINT}"
        )
    return None


def model_size(model_path: str) -> int | None:
    try:
        return Path(model_path).expanduser().stat().st_size if model_path else None
    except OSError:
        return None


# -- the server process ----------------------------------------------------------------------


class EmbeddedServer:
    """One llama.cpp server process for every session, started and stopped on demand."""

    def __init__(self, settings: EmbeddedSettings) -> None:
        self.settings = settings
        self.state: LoadState = "stopped"
        self.base_url: str | None = None
        """`http://127.0.0.1:PORT/v1` while running."""
        self.load_seconds: float | None = None
        self.error: str | None = None
        self.pid: int | None = None
        self._proc: asyncio.subprocess.Process | None = None
        self._starting: asyncio.Task[str] | None = None
        self._stderr: deque[str] = deque(maxlen=STDERR_LINES)
        self._users = 0
        self._idle: asyncio.TimerHandle | None = None
        self._retired = False
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def alias(self) -> str:
        return Path(self.settings.model_path).stem or "embedded"

    async def acquire(self) -> str:
        """The server's base URL, started if need be. Until the matching `release` it is
        not stopped for idleness; the idle time starts when the last user releases."""
        self._users += 1
        self._cancel_idle()
        try:
            return await self.ensure_started()
        except BaseException:
            self.release()
            raise

    def release(self) -> None:
        self._users -= 1
        if self._users > 0:
            return
        if self._retired:
            self._spawn(self.stop())
        else:
            self._arm_idle()

    async def ensure_started(self) -> str:
        """Start the server unless it runs; waiters share one start, and a cancelled waiter
        does not cancel the load (another session may be waiting for it)."""
        if self.state == "running" and self.base_url is not None:
            return self.base_url
        if self._starting is None or self._starting.done():
            self._starting = asyncio.create_task(self._start())
        return await asyncio.shield(self._starting)

    def retire(self) -> None:
        """The settings changed: stop now, or when the last lease ends."""
        self._retired = True
        if self._users == 0:
            self._spawn(self.stop())

    async def stop(self) -> None:
        """Stop the process (SIGTERM to its group, then SIGKILL); a load in progress ends."""
        self._cancel_idle()
        if self._starting is not None and not self._starting.done():
            self._starting.cancel()
            with contextlib.suppress(asyncio.CancelledError, LocalModelError):
                await self._starting
        await self._kill()

    async def aclose(self) -> None:
        await self.stop()
        for task in list(self._tasks):
            task.cancel()

    # -- internals ---------------------------------------------------------------------------

    async def _start(self) -> str:
        problem = model_problem(self.settings.model_path)
        if problem is not None:
            self.state, self.error = "failed", problem.message
            raise problem
        self.state, self.error = "loading", None
        started = time.monotonic()
        try:
            url = await self._spawn_and_wait()
        except LocalModelError as exc:
            await self._kill()
            self.state, self.error = "failed", exc.message
            raise
        except BaseException:
            await self._kill()
            self.state = "stopped"
            raise
        self.load_seconds = time.monotonic() - started
        self.base_url, self.state = f"{url}/v1", "running"
        logger.info("embedded model %s loaded in %.1f s at %s", self.alias, self.load_seconds, url)
        if self._users == 0:
            self._arm_idle()
        return self.base_url

    async def _spawn_and_wait(self) -> str:
        model = self.settings.model_path
        command = [sys.executable, "-m", "milk_lsp.embedded_serve", model, "--alias", self.alias]
        command += ["--threads", str(self.settings.threads)]
        command += ["--ctx", str(self.settings.context_size)]
        command += ["--n-predict", str(self.settings.max_reply_tokens)]
        env = {**os.environ, EMBEDDED_RUN_ENV: new_run_token()}
        self._stderr.clear()
        proc = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE,  # embedded_serve exits when this pipe closes
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            start_new_session=True,
            preexec_fn=die_with_parent(signal.SIGKILL),
        )
        self._proc, self.pid = proc, proc.pid
        assert proc.stdout is not None
        assert proc.stderr is not None
        self._spawn(self._keep_stderr(proc.stderr))
        try:
            line = await asyncio.wait_for(proc.stdout.readline(), READY_TIMEOUT_SECONDS)
        except TimeoutError:
            raise self._failure(
                f"the model did not load within {READY_TIMEOUT_SECONDS:.0f} s"
            ) from None
        words = line.decode("utf-8", "replace").split()
        if len(words) < 2 or words[0] != "READY":
            await asyncio.sleep(0.1)  # let the last stderr lines arrive
            said = " ".join(words[1:]) if words[:1] == ["FAILED"] else "the engine exited"
            raise self._failure(f"the model could not be loaded ({said})")
        self._spawn(self._watch_exit(proc))
        await self._wait_healthy(words[1])
        return words[1]

    async def _wait_healthy(self, url: str) -> None:
        import httpx

        deadline = time.monotonic() + HEALTH_TIMEOUT_SECONDS
        async with httpx.AsyncClient(timeout=5.0, trust_env=False) as http:
            while time.monotonic() < deadline:
                with contextlib.suppress(httpx.HTTPError):
                    if (await http.get(f"{url}/health")).status_code == 200:
                        return
                if self._proc is None or self._proc.returncode is not None:
                    raise self._failure("the engine exited while starting")
                await asyncio.sleep(0.1)
        raise self._failure(f"GET /health did not answer 200 within {HEALTH_TIMEOUT_SECONDS} s")

    def _failure(self, what: str) -> LocalModelError:
        tail = " | ".join(line for line in self._stderr if " E " in line or "error" in line)
        detail = f" — llama.cpp said: {tail[-600:]}" if tail else ""
        return LocalModelError(
            FailureReason.LOCAL_FAILED,
            f"embedded model {self.settings.model_path}: {what}{detail}. Check that it is a "
            f"valid GGUF that fits in memory, or lower local.contextSize.",
        )

    async def _keep_stderr(self, stream: asyncio.StreamReader) -> None:
        """Read llama.cpp's log as it comes (a full pipe would stall it); keep the tail."""
        while line := await stream.readline():
            self._stderr.append(line.decode("utf-8", "replace").rstrip())

    async def _watch_exit(self, proc: asyncio.subprocess.Process) -> None:
        code = await proc.wait()
        if self._proc is proc:  # not stopped by milk: it crashed or was killed
            self._proc, self.pid, self.base_url = None, None, None
            self.state = "failed"
            self.error = f"the embedded model's process exited unexpectedly (code {code})"
            logger.warning("%s", self.error)

    async def _kill(self) -> None:
        proc, self._proc = self._proc, None
        self.pid, self.base_url = None, None
        if self.state == "running":  # at once: a start from now on is a new one
            self.state = "stopped"
        if proc is None:
            return
        if proc.stdin is not None:
            proc.stdin.close()
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if proc.returncode is not None:
                break
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, sig)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait(), STOP_WAIT_SECONDS)

    def _arm_idle(self) -> None:
        self._cancel_idle()
        if self.state != "running":
            return
        loop = asyncio.get_running_loop()
        self._idle = loop.call_later(self.settings.idle_stop_seconds, self._idle_stop)

    def _cancel_idle(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None

    def _idle_stop(self) -> None:
        self._idle = None
        self._spawn(self._stop_if_idle())

    async def _stop_if_idle(self) -> None:
        # Checked again in the task: a turn may have taken the server meanwhile.
        if self._users == 0 and self.state == "running":
            logger.info("embedded model idle for %.0f s: stopping", self.settings.idle_stop_seconds)
            await self.stop()

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
