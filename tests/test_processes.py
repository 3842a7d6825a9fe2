"""Processes must not outlive their server: run tokens, the parent-death signal, the sweep.

Real processes throughout (`sleep`, `sh`, a second Python standing in for a server). A
"dead owner" is a real process that was started, had its start time read, and was killed:
its (pid, start time) pair names nobody alive, as a SIGKILLed server's would.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from milk_lsp.agents.claude import processes as claude_processes
from milk_lsp.agents.local.commands import run_shell
from milk_lsp.system import orphans
from milk_lsp.system.orphans import (
    CLAUDE_RUN_ENV,
    COMMAND_RUN_ENV,
    new_run_token,
    process_alive,
    process_start,
    run_tokens,
    token_owner,
)

linux_only = pytest.mark.skipif(
    not Path("/proc/self/environ").is_file() or sys.platform != "linux",
    reason="PR_SET_PDEATHSIG and the /proc sweep exist on Linux only",
)
ROOT = Path(__file__).resolve().parents[1]


def dead_owner() -> tuple[int, str]:
    """The (pid, start time) of a real process that has died."""
    proc = subprocess.Popen(["sleep", "30"])
    start = process_start(proc.pid)
    proc.kill()
    proc.wait()
    return proc.pid, start


def token_of(owner: tuple[int, str]) -> str:
    return f"{owner[0]}:{owner[1]}:{os.urandom(8).hex()}"


def wait_gone(pid: int, start: str, seconds: float = 2.0) -> float | None:
    """Seconds until (pid, start) is gone (a zombie counts), or None if it outlived `seconds`."""
    began = time.monotonic()
    while time.monotonic() - began < seconds:
        if not process_alive(pid, start):
            return time.monotonic() - began
        time.sleep(0.01)
    return None


class Sleepers:
    """Sleepers started by the test, each in a session of its own; all killed at the end."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, env: dict[str, str], command: str = "exec sleep 60") -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            ["sh", "-c", command],
            env={**os.environ, **env},
            stdout=subprocess.PIPE,
            start_new_session=True,
        )
        self.procs.append(proc)
        return proc

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()


@pytest.fixture
def sleepers() -> Iterator[Sleepers]:
    started = Sleepers()
    yield started
    started.close()


def wait_for_token(pid: int, token: str, seconds: float = 5.0) -> None:
    """Wait until the process has exec'd with its environment in place."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if token in run_tokens(Path(f"/proc/{pid}/environ").read_bytes()):
                return
        except OSError:
            pass
        time.sleep(0.01)
    raise AssertionError(f"process {pid} never showed its token")


# -- tokens and process identity -----------------------------------------------------------------


def test_a_new_token_names_this_process() -> None:
    token = new_run_token()
    assert token_owner(token) == (os.getpid(), process_start(os.getpid()))
    assert token != new_run_token()


@pytest.mark.parametrize(
    "token", ["", "abc", "0f3a9c2e4b5d6a7f8e9d0c1b2a3f4e5d", "12:34", "12:x:ab", "x:34:ab", "1:2:"]
)
def test_tokens_of_another_form_name_no_owner(token: str) -> None:
    assert token_owner(token) is None


def test_run_tokens_are_read_from_an_environment_block() -> None:
    block = (
        f"A=1\0{CLAUDE_RUN_ENV}=1:2:ab\0B=2\0{COMMAND_RUN_ENV}=3:4:cd\0X{CLAUDE_RUN_ENV}=9".encode()
    )
    assert run_tokens(block) == ["1:2:ab", "3:4:cd"]


@linux_only
def test_a_process_is_alive_only_with_its_own_start_time() -> None:
    me = os.getpid()
    assert process_alive(me, process_start(me))
    assert not process_alive(me, "1")  # the pid, given to another process since
    assert not process_alive(*dead_owner())


@linux_only
def test_a_zombie_is_not_alive() -> None:
    proc = subprocess.Popen(["sleep", "30"])
    start = process_start(proc.pid)
    os.kill(proc.pid, signal.SIGKILL)
    assert wait_gone(proc.pid, start) is not None
    assert Path(f"/proc/{proc.pid}").exists()  # not reaped yet
    proc.wait()


# -- the parent-death signal ---------------------------------------------------------------------

SPAWNER = """
import signal, subprocess, sys, time
from milk_lsp.system.orphans import die_with_parent
child = subprocess.Popen(["sleep", "60"], preexec_fn=die_with_parent(signal.SIGKILL))
print(child.pid, flush=True)
time.sleep(60)
"""


@linux_only
def test_a_child_dies_with_the_process_that_spawned_it() -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", SPAWNER], stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        start = process_start(child)
        assert process_alive(child, start)
        parent.kill()
        took = wait_gone(child, start)
        print(f"\nchild gone {took} s after its parent's SIGKILL")
        assert took is not None and took < 2.0
    finally:
        parent.kill()
        parent.wait()
        if parent.stdout is not None:
            parent.stdout.close()


def test_die_with_parent_is_none_off_linux(monkeypatch: pytest.MonkeyPatch) -> None:
    orphans._prctl.cache_clear()
    monkeypatch.setattr(sys, "platform", "darwin")
    try:
        assert orphans.die_with_parent(signal.SIGTERM) is None
    finally:
        orphans._prctl.cache_clear()


# -- the sweep -----------------------------------------------------------------------------------


@linux_only
@pytest.mark.parametrize("variable", [CLAUDE_RUN_ENV, COMMAND_RUN_ENV])
def test_the_sweep_kills_runs_of_dead_owners_only(sleepers: Sleepers, variable: str) -> None:
    dead_token = token_of(dead_owner())
    live_token = new_run_token()
    # A leftover leading its group, with a child that dropped the token.
    leftover = sleepers.start(
        {variable: dead_token},
        f"env -u {variable} sleep 60 & echo $!; exec sleep 60",
    )
    assert leftover.stdout is not None
    untagged_child = int(leftover.stdout.readline())
    untagged_start = process_start(untagged_child)
    live_run = sleepers.start({variable: live_token})
    legacy = sleepers.start({variable: os.urandom(16).hex()})  # a token naming no owner
    untagged = sleepers.start({})
    for proc, token in ((leftover, dead_token), (live_run, live_token)):
        wait_for_token(proc.pid, token)

    assert orphans.sweep() >= 1

    assert leftover.wait(2) == -signal.SIGKILL
    assert wait_gone(untagged_child, untagged_start) is not None
    for survivor in (live_run, legacy, untagged):
        assert survivor.poll() is None


@linux_only
def test_the_sweep_spares_the_run_it_was_started_by(sleepers: Sleepers) -> None:
    """A server started by a run (a test suite run by a command) does not sweep that run."""
    inherited = token_of(dead_owner())
    other = token_of(dead_owner())
    sibling = sleepers.start({COMMAND_RUN_ENV: inherited})
    stranger = sleepers.start({COMMAND_RUN_ENV: other})
    wait_for_token(sibling.pid, inherited)
    wait_for_token(stranger.pid, other)
    done = subprocess.run(
        [sys.executable, "-c", "from milk_lsp.system.orphans import sweep; print(sweep())"],
        env={**os.environ, COMMAND_RUN_ENV: inherited},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert int(done.stdout) >= 1
    assert stranger.wait(2) == -signal.SIGKILL
    assert sibling.poll() is None


@linux_only
def test_a_sweep_with_nothing_to_do_is_quick() -> None:
    began = time.perf_counter()
    orphans.sweep()
    took = time.perf_counter() - began
    count = sum(1 for entry in Path("/proc").iterdir() if entry.name.isdigit())
    print(f"\nsweep over {count} processes: {took * 1000:.1f} ms")
    assert took < 1.0


# -- the spawners use them -----------------------------------------------------------------------


@linux_only
async def test_a_command_carries_a_token_naming_this_server(tmp_path: Path) -> None:
    result = await run_shell(f'printf %s "${COMMAND_RUN_ENV}"', tmp_path, 10, 1000)
    assert token_owner(result.output) == (os.getpid(), process_start(os.getpid()))


COMMAND_SPAWNER = """
import asyncio, sys
from pathlib import Path
from milk_lsp.agents.local.commands import run_shell
asyncio.run(run_shell(sys.argv[1], Path.cwd(), 60, 1000))
"""


@linux_only
def test_a_command_dies_with_its_server_and_the_sweep_takes_the_rest(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    command = f"sleep 60 & echo $$ $! > {pids}; wait"
    server = subprocess.Popen(
        [sys.executable, "-c", COMMAND_SPAWNER, command],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        deadline = time.monotonic() + 10
        while not (pids.is_file() and pids.read_text().strip().count(" ") == 1):
            assert time.monotonic() < deadline, "the command never started"
            time.sleep(0.02)
        shell, background = (int(p) for p in pids.read_text().split())
        shell_start, background_start = process_start(shell), process_start(background)
        server.kill()
        server.wait()
        took = wait_gone(shell, shell_start)
        print(f"\nshell gone {took} s after its server's SIGKILL")
        assert took is not None and took < 2.0
        # The background job gets no parent-death signal (not asserted: a milk-lsp starting
        # meanwhile on this machine may sweep it first); the sweep takes it.
        orphans.sweep()
        assert wait_gone(background, background_start) is not None
    finally:
        server.kill()
        server.wait()


@linux_only
def test_the_claude_cli_gets_the_parent_death_signal_and_a_token() -> None:
    assert claude_processes.cli_preexec() is not None
    assert token_owner(claude_processes.new_run_tag()) == (os.getpid(), process_start(os.getpid()))
