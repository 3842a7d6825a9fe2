"""Every live Claude Code process group this server started, and stopping them.

Each CLI runs in a session (process group) of its own, registered here by pid (= its
process group id) with its run token while its turn runs. Claude Code runs its Bash tool in
a new session of its own, so a group kill does not reach the tools; every process of a run
carries the ``MILK_LSP_CLAUDE_RUN`` token in its environment instead, and whatever still
carries it is killed by a /proc scan (Linux). `kill_all_running()` stops every live run, at
server shutdown, from the SIGTERM handler and at interpreter exit (`atexit`).

When the server dies without running any of that (SIGKILL), the CLI gets
`PARENT_DEATH_SIGNAL` from the kernel (Linux, `milk_lsp.system.orphans.die_with_parent`), and the
token, which names this server as the run's owner, lets the next server's start-up sweep
(`milk_lsp.system.orphans.sweep`) kill whatever of the run is left.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
import signal
import time
from collections.abc import Callable

from milk_lsp.system.orphans import CLAUDE_RUN_ENV, die_with_parent, environments, new_run_token

__all__ = [
    "PARENT_DEATH_SIGNAL",
    "RUN_TAG_ENV",
    "cli_preexec",
    "kill_all_running",
    "kill_tagged",
    "new_run_tag",
    "register_run",
    "running_pids",
    "signal_group",
    "tagged_pids",
    "unregister_run",
]

logger = logging.getLogger(__name__)

RUN_TAG_ENV = CLAUDE_RUN_ENV
"""Set to a per-run token in the CLI's environment; every process it starts inherits it.

Claude Code runs its Bash tool in a new session (not in the CLI's process group), so a
CLI that dies abruptly (SIGKILL) leaves its tools running. The token finds them."""

PARENT_DEATH_SIGNAL = signal.SIGKILL
"""What the CLI gets when the server dies (Linux). Not SIGTERM: with a Bash tool running,
Claude Code 2.1.332 took 0.35-3.5 s to exit on SIGTERM once its server was gone (it does
stop the tool), and a CLI must be gone within 2 s; SIGKILL takes ~10 ms. The tools it
leaves are killed by the next server's start-up sweep."""

_LIVE: dict[int, tuple[asyncio.subprocess.Process, str]] = {}
"""Running CLI processes by pid (= their process group id) with their run token."""


def new_run_tag() -> str:
    """A run token naming this server as the owner (see `milk_lsp.system.orphans`)."""
    return new_run_token()


def cli_preexec() -> Callable[[], None] | None:
    """The CLI's ``preexec_fn``: it gets `PARENT_DEATH_SIGNAL` when the server dies (Linux)."""
    return die_with_parent(PARENT_DEATH_SIGNAL)


def register_run(proc: asyncio.subprocess.Process, tag: str) -> None:
    """Record a CLI just started in a new session, with its run token."""
    _LIVE[proc.pid] = (proc, tag)


def unregister_run(pid: int) -> None:
    """Forget a CLI whose run has been cleaned up."""
    _LIVE.pop(pid, None)


def running_pids() -> list[int]:
    """Pids (= process group ids) of the CLI processes of turns still running."""
    return [pid for pid, (proc, _tag) in _LIVE.items() if proc.returncode is None]


def tagged_pids(tags: set[str]) -> list[int]:
    """Pids of processes whose environment carries one of these run tokens (Linux only)."""
    if not tags:
        return []
    needles = [f"\0{RUN_TAG_ENV}={tag}\0".encode() for tag in tags]
    return [
        pid
        for pid, _start, environ in environments()
        if any(needle in b"\0" + environ for needle in needles)
    ]


def kill_tagged(tags: set[str]) -> int:
    """SIGKILL every process left over from these runs (tools of a CLI that died)."""
    killed = 0
    for pid in tagged_pids(tags):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
            killed += 1
    return killed


def signal_group(pgid: int, sig: int) -> bool:
    """Send `sig` to a process group; False when it no longer exists."""
    try:
        os.killpg(pgid, sig)  # POSIX: the CLI runs in a session of its own
    except ProcessLookupError:
        return False
    except PermissionError:
        logger.warning("not allowed to signal process group %d", pgid)
        return False
    return True


def kill_all_running(grace_seconds: float = 0.0) -> int:
    """Kill every live CLI process group (server shutdown / SIGTERM); returns how many.

    Sends SIGTERM, waits up to `grace_seconds` for the groups to go, then SIGKILLs what is
    left, and the tool processes the CLIs started. Synchronous, so it can run from a signal
    handler or `atexit`.
    """
    groups = list(_LIVE)
    tags = {tag for _proc, tag in _LIVE.values()}
    alive = [pgid for pgid in groups if signal_group(pgid, signal.SIGTERM)]
    deadline = time.monotonic() + grace_seconds
    while alive and time.monotonic() < deadline:
        time.sleep(0.02)
        alive = [pgid for pgid in alive if _group_has_live_members(pgid)]
    for pgid in alive:
        signal_group(pgid, signal.SIGKILL)
    kill_tagged(tags)
    return len(groups)


def _group_has_live_members(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


atexit.register(kill_all_running)
