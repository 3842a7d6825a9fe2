"""Every live Claude Code process group this server started, and stopping them.

Each CLI runs in a session (process group) of its own, registered here by pid (= its
process group id) with its run token while its turn runs. Claude Code runs its Bash tool in
a new session of its own, so a group kill does not reach the tools; every process of a run
carries the ``MILK_LSP_CLAUDE_RUN`` token in its environment instead, and whatever still
carries it is killed by a /proc scan (Linux). `kill_all_running()` stops every live run, at
server shutdown, from the SIGTERM handler and at interpreter exit (`atexit`).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
import signal
import time
from pathlib import Path

__all__ = [
    "RUN_TAG_ENV",
    "kill_all_running",
    "kill_tagged",
    "register_run",
    "running_pids",
    "signal_group",
    "tagged_pids",
    "unregister_run",
]

logger = logging.getLogger(__name__)

RUN_TAG_ENV = "MILK_LSP_CLAUDE_RUN"
"""Set to a per-run token in the CLI's environment; every process it starts inherits it.

Claude Code runs its Bash tool in a new session (not in the CLI's process group), so a
CLI that dies abruptly (SIGKILL) leaves its tools running. The token finds them."""

_LIVE: dict[int, tuple[asyncio.subprocess.Process, str]] = {}
"""Running CLI processes by pid (= their process group id) with their run token."""


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
    proc_root = Path("/proc")
    if not tags or not proc_root.is_dir():
        return []
    needles = [f"\0{RUN_TAG_ENV}={tag}\0".encode() for tag in tags]
    me = os.getpid()
    found: list[int] = []
    with os.scandir(proc_root) as entries:
        for entry in entries:
            if not entry.name.isdigit() or int(entry.name) == me:
                continue
            try:
                data = b"\0" + (proc_root / entry.name / "environ").read_bytes()
            except OSError:
                continue
            if any(needle in data for needle in needles):
                found.append(int(entry.name))
    return found


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
