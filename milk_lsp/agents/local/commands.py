"""Running a shell command for the local agent: process group, timeout and output cap.

`run_shell` is the one entry point (the `run_command` tool in `milk_lsp.agents.local.tools` asks the
user first, then calls it). The command runs under `sh -c` in a new session, so it leads a
process group of its own and everything it starts can be stopped together: after the timeout,
when the call is cancelled, or when the shell exits while processes it left behind still hold
its output open. Stopping is SIGTERM to the group, then SIGKILL after a grace. The output keeps
its start and its end past the cap.

The groups of commands still running are recorded, so that what is left when the server dies
can be stopped: `kill_running_commands`, from the CLI's SIGTERM handler and at the end of
`serve`. A server killed outright (SIGKILL) runs neither: the shell then gets SIGKILL from the
kernel (Linux, `PR_SET_PDEATHSIG`), and every process of the command carries a
``MILK_LSP_COMMAND_RUN`` token naming this server, so the next server's start-up sweep kills
what the shell left (`milk_lsp.system.orphans`).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import os
import signal
from dataclasses import dataclass
from pathlib import Path

from milk_lsp.system.orphans import COMMAND_RUN_ENV, die_with_parent, new_run_token

__all__ = [
    "CommandNotStarted",
    "CommandResult",
    "Ending",
    "kill_running_commands",
    "run_shell",
]

TERMINATE_GRACE_SECONDS = 2.0
"""Between SIGTERM and SIGKILL of a command's process group."""
KILL_WAIT_SECONDS = 2.0
DRAIN_GRACE_SECONDS = 0.5
"""After the shell exits, how long its output may stay open (background children) before
those children are stopped."""
EXIT_POLL_SECONDS = 0.1
READ_CHUNK_BYTES = 65536
SHELL = "/bin/sh"


class Ending(enum.Enum):
    EXITED = enum.auto()
    LINGERED = enum.auto()
    """The shell exited but processes it left behind kept the output open."""
    TIMED_OUT = enum.auto()


class CommandNotStarted(Exception):
    """The shell could not be started; the message says why."""


@dataclass(frozen=True)
class CommandResult:
    """How a command ended and what it wrote."""

    output: str
    """stdout and stderr merged; past the cap, its start and its end. "" when it wrote none."""
    returncode: int | None
    ending: Ending
    timeout_seconds: float

    @property
    def failed(self) -> bool:
        """Timed out, or exited with a status other than 0 (a signal included)."""
        return self.ending == Ending.TIMED_OUT or self.returncode != 0

    @property
    def status(self) -> str:
        """How the command ended, in words (exit code or signal, and what was stopped)."""
        if self.ending == Ending.TIMED_OUT:
            return (
                f"timed out after {self.timeout_seconds:g} s; the command and its processes "
                "were stopped"
            )
        status = _describe_exit(self.returncode)
        if self.ending == Ending.LINGERED:
            status += "; background processes still holding its output were stopped"
        return status


async def run_shell(
    command: str, cwd: Path, timeout_seconds: float, output_cap_chars: int
) -> CommandResult:
    """Run `command` with `sh -c` in `cwd`, without input, for at most `timeout_seconds`.

    Output past `output_cap_chars` characters keeps its start and its end. No process of the
    command outlives the call, cancelled or not (except detached ones that closed the output).
    Raises `CommandNotStarted` when the shell cannot be started.
    """
    # The command text is what the user approved; the shell is an explicit argv.
    return await run_argv([SHELL, "-c", command], cwd, timeout_seconds, output_cap_chars)


async def run_argv(
    argv: list[str],
    cwd: Path,
    timeout_seconds: float,
    output_cap_chars: int,
    env: dict[str, str] | None = None,
) -> CommandResult:
    """`run_shell` for a program and its arguments, no shell between (`env` added to the
    environment)."""
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env={**os.environ, **(env or {}), COMMAND_RUN_ENV: new_run_token()},
            start_new_session=True,
            preexec_fn=die_with_parent(signal.SIGKILL),
        )
    except OSError as exc:
        raise CommandNotStarted(f"Could not start {argv[0]}: {exc}") from exc
    output = _CappedOutput(output_cap_chars)
    _RUNNING_GROUPS.add(process.pid)
    try:
        ending = await _supervise(process, output, timeout_seconds)
    finally:
        _RUNNING_GROUPS.discard(process.pid)
    return CommandResult(output.text(), process.returncode, ending, timeout_seconds)


class _CappedOutput:
    """A command's merged output: its start and its end, the middle dropped past the cap."""

    def __init__(self, cap_chars: int) -> None:
        self._cap_chars = max(cap_chars, 2)
        self._keep_bytes = self._cap_chars * 4  # enough for `cap_chars` characters of UTF-8
        self._head = bytearray()
        self._tail = bytearray()
        self._total_bytes = 0

    def add(self, data: bytes) -> None:
        self._total_bytes += len(data)
        room = self._keep_bytes - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        self._tail += data
        if len(self._tail) > 2 * self._keep_bytes:
            del self._tail[: -self._keep_bytes]

    def text(self) -> str:
        tail = self._tail[-self._keep_bytes :]
        gap = self._total_bytes - len(self._head) - len(tail)
        if gap == 0:
            whole = bytes(self._head + tail).decode("utf-8", "replace")
            if len(whole) <= self._cap_chars:
                return whole
            start, end = whole, whole
        else:
            start = bytes(self._head).decode("utf-8", "replace")
            end = bytes(tail).decode("utf-8", "replace")
        half = self._cap_chars // 2
        return (
            f"{start[:half]}\n[... output truncated: {self._total_bytes} bytes in all, "
            f"the middle is left out ...]\n{end[-(self._cap_chars - half) :]}"
        )


async def _supervise(
    process: asyncio.subprocess.Process, output: _CappedOutput, limit_seconds: float
) -> Ending:
    """Collect the output until the command ends, stopping its process group when needed."""
    assert process.stdout is not None
    reader = asyncio.create_task(_pump(process.stdout, output))
    try:
        try:
            async with asyncio.timeout(limit_seconds):
                lingered = await _wait_for_output_end(process, reader)
                if not lingered:
                    await process.wait()
        except TimeoutError:
            await _stop_process_group(process)
            await asyncio.wait({reader}, timeout=DRAIN_GRACE_SECONDS)
            return Ending.TIMED_OUT
        if lingered:
            await _stop_process_group(process)
            await asyncio.wait({reader}, timeout=DRAIN_GRACE_SECONDS)
            return Ending.LINGERED
        return Ending.EXITED
    except BaseException:
        # Cancelled (or broken): no process of the command may outlive the call.
        await _stop_process_group(process)
        raise
    finally:
        reader.cancel()


async def _wait_for_output_end(
    process: asyncio.subprocess.Process, reader: asyncio.Task[None]
) -> bool:
    """Wait for the end of the output; True when the shell exited but others hold it open.

    The shell's exit is polled: before Python 3.12 `Process.wait()` also waits for the pipes,
    which a background child may keep open for ever.
    """
    while not reader.done():
        await asyncio.wait({reader}, timeout=EXIT_POLL_SECONDS)
        if process.returncode is not None and not reader.done():
            await asyncio.wait({reader}, timeout=DRAIN_GRACE_SECONDS)
            return not reader.done()
    return False


async def _pump(stream: asyncio.StreamReader, output: _CappedOutput) -> None:
    while chunk := await stream.read(READ_CHUNK_BYTES):
        output.add(chunk)


async def _stop_process_group(process: asyncio.subprocess.Process) -> None:
    """SIGTERM the command's process group, then SIGKILL whatever is left after a grace."""
    _signal_group(process.pid, signal.SIGTERM)
    try:
        await _wait_at_most(process, TERMINATE_GRACE_SECONDS)
    finally:
        _signal_group(process.pid, signal.SIGKILL)
    await _wait_at_most(process, KILL_WAIT_SECONDS)


async def _wait_at_most(process: asyncio.subprocess.Process, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await process.wait()


_RUNNING_GROUPS: set[int] = set()
"""Process groups of commands still running, so a dying server can stop them."""


def kill_running_commands() -> int:
    """SIGKILL every running command's process group (the server is going away)."""
    groups = list(_RUNNING_GROUPS)
    for group in groups:
        _signal_group(group, signal.SIGKILL)
    return len(groups)


def _signal_group(process_group: int, signal_number: signal.Signals) -> None:
    # start_new_session made the shell the leader of its own group: its pid is the group id.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process_group, signal_number)


def _describe_exit(returncode: int | None) -> str:
    if returncode is None:
        return "exit code unknown"
    if returncode < 0:
        try:
            return f"killed by signal {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit code {returncode}"
