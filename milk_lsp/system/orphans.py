"""No process a milk-lsp server starts may outlive it for long, even when it is SIGKILLed.

Two guards, because neither covers everything alone:

* **Parent-death signal** (Linux): `die_with_parent(sig)` is a ``preexec_fn`` that arms
  ``PR_SET_PDEATHSIG`` in the child before exec, so the kernel signals the *direct* child
  (the Claude CLI, a ``run_command`` shell) the moment the server dies. It is not inherited:
  Claude Code runs its Bash tool in a session of its own, and a shell's background jobs are
  its grandchildren. (A ``preexec_fn`` forks without vfork and runs Python in the child; the
  function only calls ``prctl``, resolved in the parent, and `os.getppid`/`os.kill`.)
* **Run tokens and the start-up sweep** (Linux, /proc): every run's environment carries a
  token, ``<owner pid>:<owner start time>:<random hex>`` in `CLAUDE_RUN_ENV` or
  `COMMAND_RUN_ENV`, which every process of the run inherits. `sweep()`, called when a server
  starts, SIGKILLs each process whose token names an owner that is no longer alive (pid gone,
  or reused by a process that started at another time), and the process group it leads.
  Runs of live servers, processes without a token, tokens of unknown form, other users'
  processes, this process, its ancestors and whatever carries a token this process itself
  inherited are never touched.

While a server runs, `guard()` stops its children itself: on SIGTERM (then the process exits
at once) and when serving ends, the kill functions it is given (every live Claude Code run,
every `run_command`) are called.

Elsewhere (macOS) neither of the two guards exists: the Claude CLI sees stdin EOF when the
server dies and exits after finishing the response in flight, and nothing is swept.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import logging
import os
import signal
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

__all__ = [
    "CLAUDE_RUN_ENV",
    "COMMAND_RUN_ENV",
    "EMBEDDED_RUN_ENV",
    "RUN_ENVS",
    "die_with_parent",
    "environments",
    "guard",
    "new_run_token",
    "process_alive",
    "process_start",
    "resident_bytes",
    "run_tokens",
    "sweep",
    "token_owner",
]

logger = logging.getLogger(__name__)

CLAUDE_RUN_ENV = "MILK_LSP_CLAUDE_RUN"
"""The token of a Claude Code run, in the CLI's environment and its tools'."""
COMMAND_RUN_ENV = "MILK_LSP_COMMAND_RUN"
"""The token of a local agent's `run_command`, in the shell's environment and its children's."""
EMBEDDED_RUN_ENV = "MILK_LSP_EMBEDDED_RUN"
"""The token of the embedded model's llama.cpp process (`milk_lsp.local_model.embedded`)."""
RUN_ENVS = (CLAUDE_RUN_ENV, COMMAND_RUN_ENV, EMBEDDED_RUN_ENV)

PROC = Path("/proc")
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


# -- process identity ------------------------------------------------------------------------


def process_start(pid: int) -> str:
    """The process's start time in clock ticks since boot (Linux), or "" where unknown.

    With the pid it names one process for good: a pid can be given to another process later,
    a (pid, start time) pair cannot.
    """
    fields = _stat_fields(pid)
    return fields[19] if len(fields) > 19 else ""


def process_alive(pid: int, start: str) -> bool:
    """Whether the process (pid, start time) still runs; an unknown start time ("") only
    checks the pid. A zombie counts as gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    fields = _stat_fields(pid)
    if not fields:  # no /proc here (then the pid is all there is to go by), or just exited
        return not PROC.is_dir()
    if fields[0] in ("Z", "X"):
        return False
    return not start or fields[19] == start


def _stat_fields(pid: int) -> list[str]:
    """/proc/<pid>/stat after the command name: [state, ppid, ..., starttime at 19]."""
    try:
        stat = (PROC / str(pid) / "stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return []
    # The command name (field 2) may hold spaces and parentheses: split after its last ")".
    return stat.rpartition(")")[2].split()


# -- run tokens ------------------------------------------------------------------------------


def resident_bytes(pid: int) -> int | None:
    """The process's resident memory (Linux `/proc/<pid>/status` VmRSS), or None."""
    try:
        status = (PROC / str(pid) / "status").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit():
                return int(parts[1]) * 1024
    return None


def new_run_token() -> str:
    """A fresh token naming this process as the run's owner."""
    pid = os.getpid()
    return f"{pid}:{process_start(pid)}:{uuid.uuid4().hex}"


def token_owner(token: str) -> tuple[int, str] | None:
    """The (pid, start time) a token names, or None for a token of another form."""
    parts = token.split(":")
    if len(parts) != 3 or not parts[0].isdigit() or not parts[1].isdigit() or not parts[2]:
        return None
    return int(parts[0]), parts[1]


def run_tokens(environ: bytes) -> list[str]:
    """The run tokens in a NUL-separated environment block (/proc/<pid>/environ)."""
    prefixes = tuple(f"{name}=".encode() for name in RUN_ENVS)
    return [
        entry.partition(b"=")[2].decode("ascii", "replace")
        for entry in environ.split(b"\0")
        if entry.startswith(prefixes)
    ]


def environments() -> Iterator[tuple[int, str, bytes]]:
    """(pid, start time, environment block) of every other process this user may read
    (Linux). The start time is read first: if the pid is reused meanwhile, it no longer
    matches the process the environment came from."""
    if not PROC.is_dir():
        return
    me = os.getpid()
    with os.scandir(PROC) as entries:
        for entry in entries:
            if not entry.name.isdigit() or int(entry.name) == me:
                continue
            pid = int(entry.name)
            start = process_start(pid)
            try:
                environ = (PROC / entry.name / "environ").read_bytes()
            except OSError:  # gone meanwhile, or another user's
                continue
            if environ and start:
                yield pid, start, environ


# -- the parent-death signal -----------------------------------------------------------------

_PrctlFunction = Callable[[int, int, int, int, int], int]


@functools.cache
def _prctl() -> _PrctlFunction | None:
    """libc's prctl, looked up in the parent (never in a forked child), or None off Linux."""
    if sys.platform != "linux":
        return None
    try:
        function = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4
    function.restype = ctypes.c_int
    prctl: _PrctlFunction = function
    return prctl


def die_with_parent(sig: signal.Signals) -> Callable[[], None] | None:
    """A ``preexec_fn`` that has the kernel send `sig` to the child when this process dies.

    None where that is not available (not Linux): pass it as is to ``preexec_fn``. The
    signal comes when the *thread* that spawned the child ends, so spawn from the event
    loop's thread, which lives as long as the server.
    """
    prctl = _prctl()
    if prctl is None:
        return None
    parent = os.getpid()
    number = int(sig)

    def arm_parent_death_signal() -> None:
        # Between fork and exec: no locks, no imports, no allocation-heavy work.
        if prctl(_PR_SET_PDEATHSIG, number, 0, 0, 0) == 0 and os.getppid() != parent:
            os.kill(os.getpid(), number)  # the parent died before the signal was armed

    return arm_parent_death_signal


# -- the sweep -------------------------------------------------------------------------------


def sweep() -> int:
    """SIGKILL what is left of the runs of milk-lsp servers that have died; returns how many
    processes were killed (each with the process group it leads). Linux only, else 0.

    Never raises: it runs while the server starts, which it must not stop."""
    if not (PROC / "self" / "environ").is_file():
        return 0
    try:
        return _sweep()
    except Exception:
        logger.exception("sweeping the processes of dead milk-lsp servers failed")
        return 0


def _sweep() -> int:
    me = os.getpid()
    spared = _ancestors(me) | {me}
    spared_groups = {group for pid in spared if (group := _group_of(pid)) is not None}
    own_tokens = set(run_tokens(_own_environ()))
    owner_alive: dict[tuple[int, str], bool] = {}
    leftovers: list[tuple[int, str]] = []
    for pid, start, environ in environments():
        if pid in spared:
            continue
        for token in run_tokens(environ):
            owner = token_owner(token)
            if owner is None or token in own_tokens:
                continue
            if owner not in owner_alive:
                owner_alive[owner] = process_alive(*owner)
            if not owner_alive[owner]:
                leftovers.append((pid, start))
                break
    killed = sum(_kill_leftover(pid, start, spared_groups) for pid, start in leftovers)
    if killed:
        logger.info("killed %d process(es) left running by milk-lsp servers that died", killed)
    return killed


def _kill_leftover(pid: int, start: str, spared_groups: set[int]) -> bool:
    """SIGKILL one leftover (if it is still the process that was found) and its group."""
    if process_start(pid) != start:  # gone, or the pid now names another process
        return False
    group = _group_of(pid)
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return False
    if group == pid and group not in spared_groups:
        # It leads its group (a run's CLI or shell): members that dropped the token go too.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGKILL)
    return True


def _group_of(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except (ProcessLookupError, PermissionError):
        return None


def _ancestors(pid: int) -> set[int]:
    found: set[int] = set()
    fields = _stat_fields(pid)
    while len(fields) > 1 and fields[1].isdigit() and int(fields[1]) > 1:
        parent = int(fields[1])
        if parent in found:
            break
        found.add(parent)
        fields = _stat_fields(parent)
    return found


def _own_environ() -> bytes:
    try:
        return (PROC / "self" / "environ").read_bytes()
    except OSError:
        return b""


# -- while serving ---------------------------------------------------------------------------


@contextlib.contextmanager
def guard(*kill_children: Callable[[], object]) -> Iterator[None]:
    """Serve inside this. `kill_children` kill what the server started (Claude Code runs,
    `run_command` shells): on SIGTERM, before the process exits with 128 + the signal at
    once, and when the block is left, however it is left. A killed host must not leave
    them running until they end."""

    def kill() -> None:
        for kill_some in kill_children:
            kill_some()

    def on_term(signum: int, frame: object) -> None:
        kill()
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    finally:
        kill()
