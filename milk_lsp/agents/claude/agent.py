"""The Claude Code agent: runs one escalated turn in the `claude` CLI and streams its events.

Driver: the CLI is driven **directly** (`asyncio.create_subprocess_exec`, stream-json in and
out), not through `claude-agent-sdk`. The SDK is still used for one thing: its wheel bundles
the `claude` binary, which is the fallback when `claude.path` is unset and no `claude` is on
PATH (found on disk without importing the SDK, in `claude_cli`). Why not the SDK's client:

* `command.build_argv` must be exactly the command that runs (``milk/context`` previews
  it). The SDK builds its command line privately (`SubprocessCLITransport._build_command`)
  and adds flags of its own, so a preview could only match by calling private API.
* Cancellation must interrupt, then SIGTERM/SIGKILL the CLI's *process group*, and the server
  must be able to kill every live CLI on exit. The SDK spawns without a new session (no
  group of its own to signal), exposes no hook to tag the process tree, and its close waits
  a fixed 5 s before SIGTERM.
* The SDK forces ``CLAUDE_CODE_ENTRYPOINT=sdk-py`` into the environment; milk drops it.
* Importing the SDK costs ~0.45 s (mostly `mcp`), for a protocol of a handful of line types.

What the driver does, per turn (one process per turn; no CLI outlives its turn):

* argv and environment: `milk_lsp.agents.claude.command` (exactly what runs).
* The prompt goes to stdin as a stream-json user message marked ``client_composed`` (the
  CLI then sends it verbatim: no ``@path`` expansion). No user text is ever on the argv.
* The context file lives in a private temp dir (0700, file 0600) removed after the run.
* stdout lines up to 16 MiB; stderr captured and quoted (its tail) in failures.
* Permission questions go to `AgentHost.request_permission`; the host times them (one
  timeout path for both agents) and a `PermissionTimedOut` is a deny that tells Claude
  why. ``AskUserQuestion`` is answered by milk itself with a deny that tells Claude to ask
  in its reply (the editor has no such dialog).
* Cancel: the interrupt control request and stdin EOF (the CLI stops its tools and records
  the partial turn), a short grace, then SIGTERM and SIGKILL of the process group. Claude
  Code runs its Bash tool in a session of its own, so every process of a run carries a
  ``MILK_LSP_CLAUDE_RUN`` token in its environment; whatever still carries it when the run
  ends (a CLI killed with SIGKILL leaves its tools behind) is killed (Linux, via /proc).
  `claude_processes.kill_all_running()` does all this for every live run (also at
  interpreter exit).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import shutil
import signal
import tempfile
import uuid
from collections.abc import AsyncGenerator, Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from milk_lsp.agents.base import (
    AgentEvent,
    AgentHost,
    FailureReason,
    PermissionOption,
    PermissionRequest,
    PermissionTimedOut,
    ToolCallEvent,
    TurnDone,
    TurnFailed,
)
from milk_lsp.agents.claude.cli import not_found_message, resolve_cli
from milk_lsp.agents.claude.command import (
    CONTEXT_FILE_PLACEHOLDER,
    MCP_CONFIG_PLACEHOLDER,
    ClaudeTurnRequest,
    build_argv,
    build_env,
    mcp_config_json,
)
from milk_lsp.agents.claude.lines import (
    allow_line,
    deny_line,
    error_response_line,
    interrupt_line,
    user_message_line,
)
from milk_lsp.agents.claude.processes import (
    RUN_TAG_ENV,
    cli_preexec,
    kill_tagged,
    new_run_tag,
    register_run,
    signal_group,
    unregister_run,
)
from milk_lsp.agents.claude.stream import (
    INSTALL_HINT,
    LOGIN_HINT,
    StreamMapper,
    StreamParseError,
    conversation_cost,
    login_hint,
    outcome_from_exit,
    outcome_from_result,
    parse_line,
)
from milk_lsp.sessions.model import Agent
from milk_lsp.system.files import write_private

__all__ = [
    "DENIED_MESSAGE",
    "ClaudeAgent",
]

logger = logging.getLogger(__name__)

LINE_LIMIT_BYTES = 16 * 1024 * 1024
"""stdout line limit; asyncio's default is 64 KiB and one stream-json line can be far larger."""
STDERR_KEEP_BYTES = 64 * 1024
"""How much of the CLI's stderr is kept (its end) for failure messages."""
INTERRUPT_GRACE_SECONDS = 2.0
"""After the interrupt and stdin EOF, how long the CLI gets to write its transcript and exit."""
TERMINATE_GRACE_SECONDS = 1.0
"""After SIGTERM of the process group, how long before SIGKILL."""
EXIT_AFTER_RESULT_SECONDS = 5.0
"""After the ``result`` line and stdin EOF, how long the CLI gets to exit on its own."""
DRAIN_SECONDS = 1.0
"""After the process is gone, how long the pipe readers get to reach EOF."""
WRITE_TIMEOUT_SECONDS = 10.0
"""How long a write to the CLI's stdin may wait for the pipe to drain."""
CONTEXT_FILE_NAME = "milk-context.md"
MCP_CONFIG_FILE_NAME = "mcp-config.json"
DENIED_MESSAGE = "The user denied this tool use in the editor."
CANCELLED_MESSAGE = "The user cancelled the turn in the editor."
ASK_IN_TEXT_MESSAGE = (
    "The editor cannot show this question dialog. Ask your questions in your reply "
    "instead and end your turn; the user will answer in the chat."
)


def timeout_message(seconds: float) -> str:
    """What Claude is told when the user did not answer a permission question in time."""
    return f"The user did not answer the permission question within {seconds:g} seconds; denied."


class ClaudeAgent:
    """Runs Claude Code turns; safe to share. It keeps between turns only each
    conversation's running cost, so a resumed turn's cost is its own (`turn_cost`)."""

    def __init__(
        self, *, env: Mapping[str, str] | None = None, temp_root: Path | None = None
    ) -> None:
        self._env = dict(env or {})
        """Extra environment for the CLI, applied over the inherited one."""
        self._temp_root = temp_root
        """Where the private context-file dirs are made (default: the system temp dir)."""
        self._running_costs: dict[str, float] = {}
        """The running total of cost each conversation (Claude's session id) last reported."""

    async def run(
        self, request: ClaudeTurnRequest, host: AgentHost
    ) -> AsyncGenerator[AgentEvent, None]:
        """Run one turn; yields events and ends with `TurnDone` or `TurnFailed`.

        Never raises except `CancelledError`/`GeneratorExit`; whatever happens, the CLI's
        process group is gone and the context file removed when the generator ends.
        """
        resolved = resolve_cli(request.settings)
        if resolved.path is None:
            yield TurnFailed(FailureReason.CLAUDE_NOT_FOUND, not_found_message(request.settings))
            return
        turn = _Turn(request, host, resolved.path, self._env, self._temp_root)
        if request.resume:
            turn.mapper.cost_before = self._running_costs.get(request.session_id)
        try:
            async for event in turn.events():
                yield event
        finally:
            await _shielded(turn.close())
            result = turn.mapper.result
            total = conversation_cost(result) if result is not None else None
            if total is not None:
                self._running_costs[turn.mapper.session_id or request.session_id] = total


async def _shielded(coro: Coroutine[Any, Any, None]) -> None:
    """Run a cleanup to completion even if the awaiting task is cancelled meanwhile.

    If the task is cancelled again while it waits here, it gets its `CancelledError` at
    once and the cleanup goes on in the background.
    """
    await asyncio.shield(asyncio.ensure_future(coro))


class _Eof:
    """The stdout reader has finished."""


@dataclass(frozen=True)
class _Fatal:
    failure: TurnFailed


_Item = AgentEvent | _Eof | _Fatal


class _Turn:
    """One CLI process: spawn, pump stdout into events, answer control requests, clean up."""

    def __init__(
        self,
        request: ClaudeTurnRequest,
        host: AgentHost,
        cli_path: str,
        env: Mapping[str, str],
        temp_root: Path | None,
    ) -> None:
        self.request = request
        self.host = host
        self.cli_path = cli_path
        self.env_overrides = env
        self.temp_root = temp_root
        self.mapper = StreamMapper()
        self.tag = new_run_tag()
        """This run's `RUN_TAG_ENV` token (it names this server as the owner)."""
        self.queue: asyncio.Queue[_Item] = asyncio.Queue()
        self.proc: asyncio.subprocess.Process | None = None
        self.temp_dir: str | None = None
        self.stderr = bytearray()
        self.stdin_closed = False
        self.closed = False
        self.ran_tools = False
        """Claude used a tool: its processes may outlive a killed CLI (see `close`)."""
        self.reader: asyncio.Task[None] | None = None
        self.stderr_reader: asyncio.Task[None] | None = None
        self.permission_tasks: dict[str, asyncio.Task[None]] = {}
        """Open ``can_use_tool`` questions by control request id."""

    # -- main flow -------------------------------------------------------------------------

    async def events(self) -> AsyncGenerator[AgentEvent, None]:
        try:
            async for event in self._events():
                yield event
        except (asyncio.CancelledError, GeneratorExit):
            raise
        except Exception as exc:  # a bug here must still end the turn cleanly
            logger.exception("Claude turn failed")
            await self.close()
            yield TurnFailed(
                FailureReason.INTERNAL, f"milk-lsp failed running Claude Code: {exc!r}"
            )

    async def _events(self) -> AsyncGenerator[AgentEvent, None]:
        request = self.request
        if not request.workspace.is_dir():
            yield TurnFailed(
                FailureReason.CLAUDE_FAILED,
                f"The workspace folder {str(request.workspace)!r} does not exist.",
            )
            return
        context_path = CONTEXT_FILE_PLACEHOLDER
        if request.context_file_text:
            context_path = self._write_private_file(CONTEXT_FILE_NAME, request.context_file_text)
        mcp_path = MCP_CONFIG_PLACEHOLDER
        if request.mcp_servers:  # a file: their env and headers may hold secrets
            mcp_path = self._write_private_file(
                MCP_CONFIG_FILE_NAME, mcp_config_json(request.mcp_servers)
            )
        argv = build_argv(request, self.cli_path, context_path, mcp_path)
        logger.debug("running Claude Code in %s: %s", request.workspace, argv)
        env = build_env(request.settings, request.workspace, self.env_overrides)
        env[RUN_TAG_ENV] = self.tag
        try:
            self.proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=str(request.workspace),
                env=env,
                start_new_session=True,
                preexec_fn=cli_preexec(),  # dies with the server (Linux)
                limit=LINE_LIMIT_BYTES,
            )
        except (FileNotFoundError, PermissionError) as exc:
            yield TurnFailed(
                FailureReason.CLAUDE_NOT_FOUND,
                f"Claude Code could not be started from {self.cli_path!r}: {exc.strerror or exc}. "
                f"{INSTALL_HINT}",
            )
            return
        except OSError as exc:
            yield TurnFailed(
                FailureReason.CLAUDE_FAILED, f"Claude Code could not be started: {exc}"
            )
            return
        register_run(self.proc, self.tag)
        self.stderr_reader = asyncio.create_task(self._read_stderr())
        self.reader = asyncio.create_task(self._read_stdout())
        await self._write(user_message_line(request.prompt))

        while True:
            item = await self.queue.get()
            if isinstance(item, _Eof):
                break
            if isinstance(item, _Fatal):
                await self.close()
                yield item.failure
                return
            yield item

        returncode = await self._wait_exit(EXIT_AFTER_RESULT_SECONDS)
        if returncode is None:
            await self._terminate()
        outcome: TurnDone | TurnFailed
        if self.mapper.result is not None:
            outcome = outcome_from_result(self.mapper.result, resume=request.resume)
        else:
            await self._drain_readers()
            outcome = outcome_from_exit(
                self.proc.returncode, self._stderr_text(), resume=request.resume
            )
        await self.close()
        yield _naming_binary(outcome, self.cli_path)

    def _write_private_file(self, name: str, text: str) -> str:
        if self.temp_dir is None:
            root = str(self.temp_root) if self.temp_root is not None else None
            if self.temp_root is not None:
                self.temp_root.mkdir(parents=True, exist_ok=True)
            self.temp_dir = tempfile.mkdtemp(prefix="milk-claude-", dir=root)  # mode 0700
        path = str(Path(self.temp_dir) / name)
        write_private(path, text)
        return path

    # -- stdout / stderr ---------------------------------------------------------------------

    async def _read_stdout(self) -> None:
        assert self.proc is not None
        assert self.proc.stdout is not None
        stdout = self.proc.stdout
        try:
            while True:
                try:
                    raw = await stdout.readline()
                except ValueError:
                    self.queue.put_nowait(
                        _Fatal(
                            TurnFailed(
                                FailureReason.CLAUDE_FAILED,
                                "A line of Claude Code's output exceeded "
                                f"{LINE_LIMIT_BYTES // (1024 * 1024)} MiB.",
                            )
                        )
                    )
                    return
                if not raw:
                    return
                try:
                    msg = parse_line(raw)
                except StreamParseError as exc:
                    self.queue.put_nowait(_Fatal(TurnFailed(FailureReason.CLAUDE_FAILED, str(exc))))
                    return
                if msg is not None:
                    await self._dispatch(msg)
        except Exception as exc:
            logger.exception("reading Claude Code's output failed")
            self.queue.put_nowait(
                _Fatal(
                    TurnFailed(
                        FailureReason.INTERNAL, f"reading Claude Code's output failed: {exc!r}"
                    )
                )
            )
        finally:
            self.queue.put_nowait(_Eof())

    async def _read_stderr(self) -> None:
        assert self.proc is not None
        assert self.proc.stderr is not None
        stderr = self.proc.stderr
        while True:
            chunk = await stderr.read(65536)
            if not chunk:
                return
            self.stderr += chunk
            if len(self.stderr) > STDERR_KEEP_BYTES:
                del self.stderr[: len(self.stderr) - STDERR_KEEP_BYTES]

    def _stderr_text(self) -> str:
        return self.stderr.decode("utf-8", "replace")

    def _emit(self, events: list[AgentEvent]) -> None:
        for event in events:
            if isinstance(event, ToolCallEvent):
                self.ran_tools = True
            self.queue.put_nowait(event)

    async def _dispatch(self, msg: dict[str, Any]) -> None:
        kind = msg.get("type")
        if kind == "control_request":
            await self._control_request(msg)
        elif kind == "control_cancel_request":
            task = self.permission_tasks.pop(str(msg.get("request_id")), None)
            if task is not None:
                task.cancel()
        elif kind in ("control_response", "keep_alive"):
            return
        else:
            self._emit(self.mapper.feed(msg))
            if kind == "result":
                # One turn per process: EOF lets the CLI finish and exit.
                await self._close_stdin()

    async def _control_request(self, msg: dict[str, Any]) -> None:
        request_id = str(msg.get("request_id") or "")
        body = msg.get("request")
        if not isinstance(body, dict) or body.get("subtype") != "can_use_tool":
            subtype = body.get("subtype") if isinstance(body, dict) else None
            await self._write(
                error_response_line(request_id, f"milk-lsp does not serve {subtype!r}")
            )
            return
        if self.closed:  # the turn is being stopped: ask nobody
            await self._write(deny_line(request_id, CANCELLED_MESSAGE))
            return
        tool_use_id = str(body.get("tool_use_id") or request_id)
        tool_name = str(body.get("tool_name") or "")
        tool_input = body.get("input") if isinstance(body.get("input"), dict) else {}
        self._emit(self.mapper.permission_asked(tool_use_id, tool_name, tool_input))
        task = asyncio.create_task(self._answer_permission(request_id, tool_use_id, body))
        self.permission_tasks[request_id] = task
        task.add_done_callback(lambda _t: self.permission_tasks.pop(request_id, None))

    async def _answer_permission(
        self, request_id: str, tool_use_id: str, body: dict[str, Any]
    ) -> None:
        tool_name = str(body.get("tool_name") or "")
        tool_input: dict[str, Any] = body["input"] if isinstance(body.get("input"), dict) else {}
        if tool_name == "AskUserQuestion" or body.get("requires_user_interaction"):
            self._emit(self.mapper.permission_decided(tool_use_id, allowed=False))
            await self._write(deny_line(request_id, ASK_IN_TEXT_MESSAGE))
            return
        description = str(body.get("title") or body.get("description") or "")
        question = PermissionRequest(
            agent=Agent.CLAUDE,
            tool_call_id=tool_use_id,
            tool=tool_name,
            input=tool_input,
            description=description,
        )
        try:
            answer = await self.host.request_permission(question)
        except PermissionTimedOut as exc:  # the host timed it and told the user
            self._emit(self.mapper.permission_decided(tool_use_id, allowed=False))
            await self._write(deny_line(request_id, timeout_message(exc.seconds)))
            return
        except asyncio.CancelledError:
            # The CLI withdrew the question, or the turn is being cancelled (then the
            # interrupt makes the CLI reject the call itself).
            self._emit(self.mapper.permission_decided(tool_use_id, allowed=False))
            raise
        except Exception as exc:
            logger.warning("permission question failed: %r", exc)
            self._emit(self.mapper.permission_decided(tool_use_id, allowed=False))
            await self._write(
                deny_line(request_id, f"The editor could not ask the user ({exc}); denied.")
            )
            return
        allowed = answer in (PermissionOption.ALLOW_ONCE, PermissionOption.ALLOW_SESSION)
        if self.closed:
            allowed = False  # an answer that comes in while the turn is being stopped
        self._emit(self.mapper.permission_decided(tool_use_id, allowed=allowed))
        if allowed:
            await self._write(allow_line(request_id, tool_input))
        else:
            await self._write(deny_line(request_id, DENIED_MESSAGE))

    # -- stdin -----------------------------------------------------------------------------

    async def _write(self, data: bytes, drain_seconds: float = WRITE_TIMEOUT_SECONDS) -> bool:
        """Write one line to the CLI's stdin; False if it is gone or not reading."""
        proc = self.proc
        if proc is None or proc.stdin is None or self.stdin_closed or proc.returncode is not None:
            return False
        try:
            proc.stdin.write(data)
            await asyncio.wait_for(proc.stdin.drain(), drain_seconds)
        except (TimeoutError, BrokenPipeError, ConnectionResetError, RuntimeError, OSError):
            return False
        return True

    async def _close_stdin(self) -> None:
        proc = self.proc
        if proc is None or proc.stdin is None or self.stdin_closed:
            return
        self.stdin_closed = True
        with contextlib.suppress(Exception):
            proc.stdin.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(proc.stdin.wait_closed(), 1.0)

    # -- ending ------------------------------------------------------------------------------

    async def _wait_exit(self, seconds: float) -> int | None:
        proc = self.proc
        if proc is None:
            return None
        if proc.returncode is not None:
            return proc.returncode
        try:
            return await asyncio.wait_for(asyncio.shield(proc.wait()), seconds)
        except TimeoutError:
            return None

    async def _interrupt(self) -> None:
        """Ask the CLI to stop (it records the partial turn), then close its stdin."""
        proc = self.proc
        if proc is None or proc.returncode is not None:
            return
        interrupt = interrupt_line(f"milk-interrupt-{uuid.uuid4().hex[:8]}")
        sent = await self._write(interrupt, drain_seconds=1.0)
        await self._close_stdin()
        if not sent:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGINT)

    async def _terminate(self) -> None:
        """SIGTERM the process group, then SIGKILL it; reap the CLI."""
        proc = self.proc
        if proc is None:
            return
        if proc.returncode is None:
            signal_group(proc.pid, signal.SIGTERM)
            if await self._wait_exit(TERMINATE_GRACE_SECONDS) is None:
                signal_group(proc.pid, signal.SIGKILL)
                await self._wait_exit(10.0)
        # Whatever the CLI started in its group (tools) goes with it.
        signal_group(proc.pid, signal.SIGKILL)

    async def _drain_readers(self) -> None:
        tasks = [t for t in (self.reader, self.stderr_reader) if t is not None]
        if not tasks:
            return
        _done, pending = await asyncio.wait(tasks, timeout=DRAIN_SECONDS)
        for task in pending:
            task.cancel()
        for task in pending:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def close(self) -> None:
        """Stop the CLI if it still runs, reap it and its group, remove the temp dir. Idempotent."""
        if self.closed:
            return
        self.closed = True
        try:
            for task in list(self.permission_tasks.values()):
                task.cancel()
            proc = self.proc
            if proc is not None:
                if proc.returncode is None:
                    await self._interrupt()
                    self.ran_tools = True  # stopped mid-run: a tool may still be running
                    if await self._wait_exit(INTERRUPT_GRACE_SECONDS) is None:
                        await self._terminate()
                signal_group(proc.pid, signal.SIGKILL)
                await self._close_stdin()
                await self._drain_readers()
                transport = getattr(proc, "_transport", None)
                if transport is not None:
                    with contextlib.suppress(Exception):
                        transport.close()
                # Tools run in sessions of their own: if the CLI did not stop them, do it.
                # (A /proc scan; skipped for runs that used no tool and ended by themselves.)
                if self.ran_tools or proc.returncode != 0:
                    await asyncio.to_thread(kill_tagged, {self.tag})
                unregister_run(proc.pid)
            if self.permission_tasks:
                await asyncio.wait(list(self.permission_tasks.values()), timeout=1.0)
        finally:
            if self.temp_dir is not None:
                shutil.rmtree(self.temp_dir, ignore_errors=True)
                self.temp_dir = None


def _naming_binary(outcome: TurnDone | TurnFailed, cli_path: str) -> TurnDone | TurnFailed:
    """A not-logged-in failure's hint names the binary this run used."""
    if isinstance(outcome, TurnFailed) and outcome.reason is FailureReason.CLAUDE_NOT_LOGGED_IN:
        return dataclasses.replace(
            outcome, message=outcome.message.replace(LOGIN_HINT, login_hint(cli_path))
        )
    return outcome
