"""The embedded local model: milk runs llama.cpp's OpenAI-compatible server itself.

With `local.provider` `"embedded"` (or `"auto"` when nothing answers on the default
endpoint and a model can be had), `EmbeddedServer` starts `milk_lsp.local_model.serve` (a
child process running `xllamacpp`) on 127.0.0.1 with a port the OS chooses. The model is
`local.modelPath`, or a GGUF downloaded from the Hugging Face Hub first
(`milk_lsp.local_model.download`: "downloading model… N%"). It starts on
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
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from milk_lsp.agents.base import FailureReason
from milk_lsp.agents.local.reply.stream import LocalModelError
from milk_lsp.config import LocalConfig
from milk_lsp.local_model import prompt_cache
from milk_lsp.local_model.download import (
    HUB_INSTALL_HINT,
    DownloadProgress,
    HubModel,
    cached,
    download,
    hub_installed,
    hub_model,
    mem_available,
)
from milk_lsp.system.orphans import EMBEDDED_RUN_ENV, die_with_parent, new_run_token

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
Progress = Callable[[str], None]
"""Where a waiting turn hears how the start goes ("downloading model… 42%")."""
Notice = Callable[[str, str], None]
"""Where a waiting turn is told something worth keeping (severity, message)."""


@dataclass(frozen=True)
class EmbeddedSettings:
    model_path: str
    context_size: int
    max_reply_tokens: int
    threads: int
    idle_stop_seconds: float
    model_repo: str = ""
    model_file: str = ""

    @classmethod
    def of(cls, cfg: LocalConfig) -> EmbeddedSettings:
        model = str(Path(cfg.model_path).expanduser()) if cfg.model_path else ""
        return cls(
            model,
            cfg.context_size,
            cfg.max_reply_tokens,
            cfg.threads,
            cfg.idle_stop_seconds,
            cfg.model_repo or "",
            cfg.model_file or "",
        )


# -- which provider --------------------------------------------------------------------------


def engine_installed() -> bool:
    """Whether `xllamacpp` can be imported (it is not imported here: that loads llama.cpp)."""
    return importlib.util.find_spec("xllamacpp") is not None


def base_url_explicit(cfg: LocalConfig) -> bool:
    return "base_url" in cfg.model_fields_set


def choose_provider(
    cfg: LocalConfig, *, installed: bool, endpoint_answers: bool, downloadable: bool
) -> Provider:
    """`local.provider` resolved: `auto` is embedded only when no server was named or
    answers, the engine is installed and a model can be had (`modelPath` set, or
    huggingface_hub installed to download one); else openai, as before."""
    if cfg.provider != "auto":
        return cfg.provider
    if base_url_explicit(cfg) or endpoint_answers:
        return "openai"
    return "embedded" if installed and (cfg.model_path or downloadable) else "openai"


async def resolve_provider(cfg: LocalConfig) -> Provider:
    """`choose_provider`, looking for the engine and probing the default endpoint only when
    the answer depends on them (it runs at every local turn: the usual setups cost nothing)."""
    if cfg.provider != "auto" or base_url_explicit(cfg):
        return choose_provider(cfg, installed=False, endpoint_answers=False, downloadable=False)
    if not engine_installed() or not (cfg.model_path or hub_installed()):
        return "openai"
    answers = await endpoint_answers(cfg.base_url)
    return choose_provider(cfg, installed=True, endpoint_answers=answers, downloadable=True)


async def endpoint_answers(base_url: str) -> bool:
    """Whether anything answers HTTP at `{base_url}/models` (any status counts)."""
    import httpx

    try:
        async with httpx.AsyncClient(timeout=PROBE_TIMEOUT_SECONDS, trust_env=False) as http:
            await http.get(f"{base_url.rstrip('/')}/models")
    except (httpx.HTTPError, ValueError):
        return False
    return True


def engine_problem() -> LocalModelError | None:
    if engine_installed():
        return None
    return LocalModelError(
        FailureReason.LOCAL_UNREACHABLE,
        f"local.provider is embedded but xllamacpp is not installed: {INSTALL_HINT}",
    )


def model_problem(model_path: str) -> LocalModelError | None:
    """What keeps the configured model from loading, found before a process is started."""
    problem = engine_problem()
    if problem is not None:
        return problem
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


KV_BYTES_PER_TOKEN = 32 * 1024
"""A generous estimate of llama.cpp's KV cache per context token for the small models milk
runs (Qwen2.5-Coder-1.5B in f16: 28 KiB)."""
ENGINE_OVERHEAD_BYTES = 384 * 1024**2
"""Compute buffers and the engine process itself."""


def memory_problem(
    model_path: str, context_size: int, available: int | None
) -> LocalModelError | None:
    """The model will not fit in the memory available now (found before it is loaded, so
    the user reads why instead of the machine swapping or the engine being killed)."""
    size = model_size(model_path)
    if size is None or available is None:
        return None
    needed = size + context_size * KV_BYTES_PER_TOKEN + ENGINE_OVERHEAD_BYTES
    if available >= needed:
        return None
    gib = 1024**3
    return LocalModelError(
        FailureReason.LOCAL_FAILED,
        f"not enough memory for the embedded model {Path(model_path).name}: it needs about "
        f"{needed / gib:.1f} GB with local.contextSize {context_size}, and "
        f"{available / gib:.1f} GB is available. Close other programs, lower "
        "local.contextSize, or set local.modelPath to a smaller GGUF.",
    )


NO_MODEL = (
    f"no embedded model is configured: {MODEL_HINT}, or install huggingface_hub "
    f"({HUB_INSTALL_HINT}) so milk downloads one"
)


@dataclass(frozen=True)
class PlannedModel:
    """The model a start would load, found without starting anything or using the network
    (for `milk/status`)."""

    path: str
    """The GGUF on disk; "" while it still has to be downloaded."""
    name: str
    size: int | None
    """The file's size, or the download's when it is pinned."""
    source: HubModel | None
    """Where it is downloaded from (no `local.modelPath`)."""
    problem: LocalModelError | None


def planned_model(settings: EmbeddedSettings) -> PlannedModel:
    if settings.model_path:
        path = settings.model_path
        return PlannedModel(path, Path(path).stem, model_size(path), None, model_problem(path))
    engine = engine_problem()
    if not hub_installed():
        no_model = LocalModelError(FailureReason.LOCAL_UNREACHABLE, NO_MODEL)
        return PlannedModel("", "", None, None, engine or no_model)
    try:
        source = hub_model(settings.model_repo, settings.model_file)
    except LocalModelError as exc:
        return PlannedModel("", "", None, None, engine or exc)
    found = cached(source)
    if found is None:
        return PlannedModel("", source.stem, source.size, source, engine)
    path = str(found)
    return PlannedModel(path, source.stem, model_size(path), source, model_problem(path))


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
        self.model_path = settings.model_path
        """The GGUF loaded: `local.modelPath`, or the downloaded file once it is there."""
        self.download: DownloadProgress | None = None
        """How far the model's download is, while it runs."""
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
        self._listeners: list[tuple[Progress | None, Notice | None]] = []
        self._last_progress = ""
        self._slots: Path | None = None
        """Where the prompt cache's slot files are (`prompt_cache`); None: not kept."""
        self._slot_saved = False
        self.restored_tokens: int | None = None
        """Prompt tokens the last start restored from a saved slot (None: none)."""

    @property
    def alias(self) -> str:
        return Path(self.model_path).stem or "embedded"

    async def acquire(self, progress: Progress | None = None, notice: Notice | None = None) -> str:
        """The server's base URL, started if need be. Until the matching `release` it is
        not stopped for idleness; the idle time starts when the last user releases. While
        it waits, the caller hears the download's progress and notices."""
        self._users += 1
        self._cancel_idle()
        listener = (progress, notice)
        self._listeners.append(listener)
        try:
            return await self.ensure_started()
        except BaseException:
            self.release()
            raise
        finally:
            self._listeners.remove(listener)

    def release(self) -> None:
        self._users -= 1
        if self._users > 0:
            return
        if self.download is not None and self._starting is not None and not self._starting.done():
            # Nobody waits for the download any more: stop it (the next start resumes it).
            self._starting.cancel()
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
        self._last_progress = ""
        problem = engine_problem()
        if problem is None:
            self.state, self.error = "loading", None
            try:
                self.model_path = await self._obtain_model()
            except LocalModelError as exc:
                problem = exc
            except BaseException:
                self.state = "stopped"
                raise
            finally:
                self.download = None
        problem = problem or model_problem(self.model_path)
        problem = problem or memory_problem(
            self.model_path, self.settings.context_size, mem_available()
        )
        if problem is not None:
            self.state, self.error = "failed", problem.message
            raise problem
        self.state, self.error = "loading", None
        try:
            self._slots = prompt_cache.slot_dir()
        except OSError as exc:  # no cache folder: every start reads the prompt afresh
            logger.info("prompt cache: no folder for it: %r", exc)
            self._slots = None
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
        self.restored_tokens = await self._restore_prompt(url)
        logger.info("embedded model %s loaded in %.1f s at %s", self.alias, self.load_seconds, url)
        if self._users == 0:
            self._arm_idle()
        return self.base_url

    async def remember_prompt(self) -> None:
        """After a local turn: save the slot (milk's static prompt and that turn) once per
        model file and version, so the next start of the engine restores it."""
        if self._slot_saved or self._slots is None or self.base_url is None:
            return
        self._slot_saved = True
        name = prompt_cache.slot_name(self.model_path, self.settings.context_size)
        saved = await prompt_cache.save(self.base_url.removesuffix("/v1"), self._slots, name)
        if saved:
            logger.info("prompt cache: saved %d tokens as %s", saved, name)

    async def _restore_prompt(self, origin: str) -> int | None:
        if self._slots is None:
            return None
        name = prompt_cache.slot_name(self.model_path, self.settings.context_size)
        restored = await prompt_cache.restore(origin, self._slots, name)
        if restored:
            logger.info("prompt cache: restored %d tokens from %s", restored, name)
        return restored

    async def _obtain_model(self) -> str:
        """`local.modelPath`, or the Hub model's file: from the cache, else downloaded with
        progress told to the waiting turns."""
        if self.settings.model_path:
            return self.settings.model_path
        if not hub_installed():
            raise LocalModelError(FailureReason.LOCAL_UNREACHABLE, NO_MODEL)
        source = hub_model(self.settings.model_repo, self.settings.model_file)
        found = await asyncio.to_thread(cached, source)
        if found is not None:
            return str(found)
        size = f" ({source.size / 1e6:.0f} MB)" if source.size else ""
        self._notice(
            "info",
            f"Downloading the embedded model {source.label}{size} from the Hugging Face Hub "
            "into its cache. Cancelling the turn stops the download; the next local turn "
            "resumes it.",
        )
        started = time.monotonic()
        self.download = DownloadProgress("downloading", 0, source.size)
        checked, live = False, True

        def on_progress(progress: DownloadProgress) -> None:
            nonlocal checked
            if not live:  # a cancelled download's thread may report once more
                return
            self.download = progress
            checked = checked or progress.stage == "checking"
            self._progress(progress.describe())

        try:
            path = await download(source, on_progress)
        finally:
            live = False
        seconds = time.monotonic() - started
        sha = " (sha256 checked)" if checked else ""
        self._notice("info", f"Downloaded {source.label} in {seconds:.0f} s{sha}.")
        self._progress("loading model…")
        logger.info("embedded model %s downloaded to %s in %.0f s", source.label, path, seconds)
        return str(path)

    def _progress(self, message: str) -> None:
        if message == self._last_progress:
            return
        self._last_progress = message
        for progress, _ in list(self._listeners):
            if progress is not None:
                progress(message)

    def _notice(self, severity: str, message: str) -> None:
        for _, notice in list(self._listeners):
            if notice is not None:
                notice(severity, message)

    async def _spawn_and_wait(self) -> str:
        model = self.model_path
        command = [sys.executable, "-m", "milk_lsp.local_model.serve", model, "--alias", self.alias]
        command += ["--threads", str(self.settings.threads)]
        command += ["--ctx", str(self.settings.context_size)]
        command += ["--n-predict", str(self.settings.max_reply_tokens)]
        if self._slots is not None:
            command += ["--slot-dir", str(self._slots)]
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
            f"embedded model {self.model_path}: {what}{detail}. Check that it is a "
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
