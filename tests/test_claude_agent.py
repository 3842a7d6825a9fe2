"""The Claude Code agent: pure parts, and the REAL bundled CLI against the stand-in API.

Tests marked `claude` run the `claude` binary from the claude-agent-sdk wheel (or the one
`resolve_cli` finds) with a throwaway HOME and TMPDIR, pointed at `FakeAnthropicAPI`.
A turn costs about 1-2 s of wall time on two busy cores.
"""

# Small pathlib reads of test fixtures inside async tests are fine.
# ruff: noqa: ASYNC240

from __future__ import annotations

import asyncio
import functools
import json
import os
import re
import signal
import stat
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from milk_lsp.agents.base import (
    AgentEvent,
    ClaudeSessionStarted,
    FailureReason,
    NoticeEvent,
    PermissionOption,
    PermissionRequest,
    PermissionTimedOut,
    TextDelta,
    ToolCallEvent,
    ToolResultEvent,
    ToolStatus,
    TurnDone,
    TurnFailed,
    UsageEvent,
)
from milk_lsp.agents.claude import cli as claude_cli
from milk_lsp.agents.claude import processes as claude_processes
from milk_lsp.agents.claude.agent import DENIED_MESSAGE, ClaudeAgent, timeout_message
from milk_lsp.agents.claude.cli import bundled_cli_path, cli_version, resolve_cli
from milk_lsp.agents.claude.command import (
    CONTEXT_FILE_PLACEHOLDER,
    ClaudeSettings,
    ClaudeTurnRequest,
    build_argv,
    build_env,
)
from milk_lsp.agents.claude.processes import kill_all_running, running_pids
from milk_lsp.sessions.model import Agent
from tests.fakes.anthropic_api import FakeAnthropicAPI, appended_system_text, user_text

CLI = resolve_cli(ClaudeSettings()).path
needs_cli = pytest.mark.skipif(CLI is None, reason="no claude CLI (install claude-agent-sdk)")
TOUCH = {"name": "Bash", "input": {"command": "touch marker.txt", "description": "Create marker"}}
SLOW_TEXT = {"text": "word " * 40, "chunk_chars": 5, "delay": 0.25}


TEST_TIMEOUT_SECONDS = 60.0


def bounded(test: Callable[..., Awaitable[None]]) -> Callable[..., Awaitable[None]]:
    """Fail a CLI test that hangs instead of blocking the whole suite."""

    @functools.wraps(test)
    async def wrapper(*args: Any, **kwargs: Any) -> None:
        await asyncio.wait_for(test(*args, **kwargs), TEST_TIMEOUT_SECONDS)

    return wrapper


# -- helpers ------------------------------------------------------------------------------------


class FakeHost:
    """An `AgentHost` whose permission answers are scripted (or that never answers)."""

    def __init__(
        self, *answers: PermissionOption, hang: bool = False, time_out: float | None = None
    ) -> None:
        self.answers = list(answers)
        self.hang = hang
        self.time_out = time_out
        self.questions: list[PermissionRequest] = []
        self.asked = asyncio.Event()
        self.cancelled = False

    async def request_permission(self, request: PermissionRequest) -> PermissionOption:
        self.questions.append(request)
        self.asked.set()
        if self.time_out is not None:
            await asyncio.sleep(self.time_out)
            raise PermissionTimedOut(self.time_out)
        if self.hang:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.cancelled = True
                raise
        return self.answers.pop(0) if self.answers else PermissionOption.DENY

    async def read_document(self, path: Path) -> str | None:
        return self.open_document_text(path)

    def open_document_text(self, path: Path) -> str | None:
        return None

    async def apply_edit(self, path: Path, new_text: str) -> bool:
        return False


def make_request(
    workspace: Path,
    prompt: str = "hello",
    *,
    context: str = "",
    session_id: str | None = None,
    resume: bool = False,
    **settings: Any,
) -> ClaudeTurnRequest:
    return ClaudeTurnRequest(
        workspace=workspace,
        prompt=prompt,
        context_file_text=context,
        session_id=session_id or str(uuid.uuid4()),
        resume=resume,
        settings=ClaudeSettings(**settings),
    )


async def collect(events: AsyncIterator[AgentEvent]) -> list[AgentEvent]:
    return [event async for event in events]


def texts(events: list[AgentEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def statuses(events: list[AgentEvent]) -> list[ToolStatus]:
    return [e.status for e in events if isinstance(e, ToolCallEvent)]


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


async def wait_group_gone(pgid: int, seconds: float = 3.0) -> bool:
    """True once the group is gone (its zombie leader may take a moment to be reaped)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not group_alive(pgid):
            return True
        await asyncio.sleep(0.02)
    return not group_alive(pgid)


def request_json(api: FakeAnthropicAPI) -> str:
    return json.dumps([r["body"] for r in api.main_requests()])


# -- fixtures -----------------------------------------------------------------------------------


@pytest.fixture
def api() -> Iterator[FakeAnthropicAPI]:
    with FakeAnthropicAPI() as fake:
        yield fake


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture
def temp_root(tmp_path: Path) -> Path:
    return tmp_path / "milk-tmp"


@pytest.fixture
def agent(tmp_path: Path, api: FakeAnthropicAPI, temp_root: Path) -> ClaudeAgent:
    for name in ("home", "tmp"):
        (tmp_path / name).mkdir()
    env = {
        "HOME": str(tmp_path / "home"),
        "TMPDIR": str(tmp_path / "tmp"),
        "ANTHROPIC_BASE_URL": api.base_url,
        "ANTHROPIC_API_KEY": "sk-ant-fake",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
    }
    # The CLI refuses --dangerously-skip-permissions as root unless it is told it is sandboxed.
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        env["IS_SANDBOX"] = "1"
    return ClaudeAgent(env=env, temp_root=temp_root)


@pytest.fixture(autouse=True)
def no_leftover_processes() -> Iterator[None]:
    yield
    assert running_pids() == []


# -- pure: argv, env, resolution ---------------------------------------------------------------


def test_argv_first_turn(workspace: Path) -> None:
    request = make_request(workspace, "-- --help @x", context="ctx", session_id="S1")
    argv = build_argv(request, "/bin/claude", CONTEXT_FILE_PLACEHOLDER)
    assert argv == [
        "/bin/claude",
        "--print",
        "--output-format",
        "stream-json",
        "--input-format",
        "stream-json",
        "--verbose",
        "--include-partial-messages",
        "--setting-sources=user,project,local",
        "--permission-prompt-tool",
        "stdio",
        "--session-id=S1",
        "--append-system-prompt-file=<context-file>",
    ]
    # The prompt goes to stdin, never on the command line; the preset prompt is kept.
    assert not any("--help" in a or "@x" in a for a in argv[1:])
    assert not any(a.startswith("--system-prompt") for a in argv)


def test_argv_resume_with_settings(workspace: Path) -> None:
    request = make_request(
        workspace,
        session_id="S2",
        resume=True,
        model="claude-sonnet-5-5",
        allowed_tools=("Bash(git diff:*)", "Read"),
        add_dirs=("/srv/a", "-odd"),
        skip_permissions=True,
    )
    argv = build_argv(request, "claude", "/tmp/x/ctx.md")
    assert argv[9:] == [
        "--dangerously-skip-permissions",
        "--model=claude-sonnet-5-5",
        "--allowedTools=Bash(git diff:*),Read",
        "--add-dir=/srv/a",
        "--add-dir=-odd",
        "--resume=S2",
    ]
    assert "--permission-prompt-tool" not in argv
    assert not any(a.startswith("--session-id") for a in argv)
    assert not any(a.startswith("--append-system-prompt") for a in argv)  # "" → no flag


def test_env_drops_nested_session_vars_and_bounds_retries(workspace: Path) -> None:
    base = {
        "PATH": "/usr/bin",
        "CLAUDE_CODE_SESSION_ID": "x",
        "CLAUDE_CODE_ENTRYPOINT": "cli",
        "CLAUDECODE": "1",
        "CLAUDE_CODE_MAX_RETRIES": "10",
        "ANTHROPIC_API_KEY": "inherited",
    }
    env = build_env(ClaudeSettings(max_retries=3), workspace, {"HOME": "/h"}, base=base)
    assert env == {
        "PATH": "/usr/bin",
        "ANTHROPIC_API_KEY": "inherited",
        "HOME": "/h",
        "CLAUDE_CODE_MAX_RETRIES": "3",
        "PWD": str(workspace),
    }


def write_script(path: Path, body: str) -> Path:
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


def test_resolve_cli_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    on_path = write_script(bindir / "claude", "echo '1.0.0 (Claude Code)'")
    explicit = write_script(tmp_path / "my-claude", "exit 0")
    monkeypatch.setenv("PATH", str(bindir))
    assert resolve_cli(ClaudeSettings(path=str(explicit))) == claude_cli.ResolvedCli(
        str(explicit), "setting"
    )
    assert resolve_cli(ClaudeSettings()) == claude_cli.ResolvedCli(str(on_path), "path")
    missing = resolve_cli(ClaudeSettings(path=str(tmp_path / "nope")))
    assert missing == claude_cli.ResolvedCli(None, "missing")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    bundled = bundled_cli_path()
    expected = claude_cli.ResolvedCli(bundled, "bundled" if bundled else "missing")
    assert resolve_cli(ClaudeSettings()) == expected


def test_bundled_cli_found_without_importing_the_sdk() -> None:
    was_loaded = "claude_agent_sdk" in sys.modules
    path = bundled_cli_path()
    if path is None:
        pytest.skip("claude-agent-sdk has no bundled CLI here")
    assert Path(path).name in ("claude", "claude.exe")
    assert ("claude_agent_sdk" in sys.modules) == was_loaded


async def test_cli_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = write_script(tmp_path / "claude", "echo '9.8.7 (Claude Code)'")
    assert await cli_version(str(fake)) == "9.8.7"
    assert await cli_version(str(tmp_path / "nope")) is None
    failing = write_script(tmp_path / "failing", "exit 3")
    assert await cli_version(str(failing)) is None
    monkeypatch.setattr(claude_cli, "VERSION_TIMEOUT_SECONDS", 0.3)
    slow = write_script(tmp_path / "slow", "sleep 30")
    started = time.monotonic()
    assert await cli_version(str(slow)) is None
    assert time.monotonic() - started < 5


@needs_cli
async def test_cli_version_of_the_real_cli() -> None:
    assert CLI is not None
    version = await cli_version(CLI)
    assert version is not None
    assert version[0].isdigit()


async def test_missing_binary_is_claude_not_found(workspace: Path) -> None:
    request = make_request(workspace, path=str(workspace / "no-such-claude"))
    events = await collect(ClaudeAgent().run(request, FakeHost()))
    assert len(events) == 1
    failed = events[0]
    assert isinstance(failed, TurnFailed)
    assert failed.reason == FailureReason.CLAUDE_NOT_FOUND
    assert "npm install -g @anthropic-ai/claude-code" in failed.message
    assert "claude.path" in failed.message


async def test_kill_all_running_kills_registered_groups() -> None:
    proc = await asyncio.create_subprocess_exec(
        "sh", "-c", "sleep 30 & sleep 30", start_new_session=True
    )
    claude_processes._LIVE[proc.pid] = (proc, uuid.uuid4().hex)
    try:
        assert running_pids() == [proc.pid]
        assert kill_all_running(grace_seconds=1.0) == 1
        assert await asyncio.wait_for(proc.wait(), 5) == -signal.SIGTERM
        assert await wait_group_gone(proc.pid)
    finally:
        claude_processes._LIVE.pop(proc.pid, None)


# -- the real CLI -------------------------------------------------------------------------------


@pytest.mark.claude
@needs_cli
@bounded
async def test_first_turn_then_resume(
    agent: ClaudeAgent, api: FakeAnthropicAPI, workspace: Path, temp_root: Path
) -> None:
    context = "MILK-CTX: escalation context\n\n@/etc/passwd stays text\ntrailing newline kept\n"
    api.enqueue(
        {"thinking": "Thinking it over.", "text": "Hello from Claude, streamed.", "chunk_chars": 4}
    )
    first = make_request(workspace, "Why does this fail?", context=context)
    events: list[AgentEvent] = []
    modes: tuple[int, int] | None = None
    started = time.monotonic()
    async for event in agent.run(first, FakeHost()):
        events.append(event)
        if isinstance(event, ClaudeSessionStarted):
            # The context file exists while the CLI runs: private dir, private file.
            (tmp_dir,) = temp_root.iterdir()
            (ctx_file,) = tmp_dir.iterdir()
            modes = (stat.S_IMODE(tmp_dir.stat().st_mode), stat.S_IMODE(ctx_file.stat().st_mode))
            assert ctx_file.read_text() == context
    elapsed = time.monotonic() - started
    assert modes == (0o700, 0o600)
    assert events[0] == ClaudeSessionStarted(first.session_id)
    assert texts(events) == "Hello from Claude, streamed."
    assert sum(isinstance(e, TextDelta) for e in events) == 7  # token-level, no duplicate
    assert any(isinstance(e, UsageEvent) and e.output_tokens > 0 for e in events)
    assert events[-1] == TurnDone("end_turn")
    assert list(temp_root.iterdir()) == []  # removed after the run
    (request,) = api.main_requests()
    assert appended_system_text(request) == context
    assert user_text(request) == "Why does this fail?"
    assert elapsed < 30

    api.enqueue({"text": "Second answer."})
    second = make_request(
        workspace,
        "<milk-context>\nnew\n</milk-context>\nAnd now?",
        context=context,
        session_id=first.session_id,
        resume=True,
    )
    events = await collect(agent.run(second, FakeHost()))
    assert events[0] == ClaudeSessionStarted(first.session_id)
    assert texts(events) == "Second answer."
    assert events[-1] == TurnDone()
    resumed = api.main_requests()[-1]
    assert user_text(resumed) == "<milk-context>\nnew\n</milk-context>\nAnd now?"
    replayed = json.dumps(resumed["body"]["messages"])
    assert "Why does this fail?" in replayed
    assert "Hello from Claude, streamed." in replayed
    assert list(temp_root.iterdir()) == []


@pytest.mark.claude
@needs_cli
@bounded
async def test_at_paths_reach_the_api_verbatim(
    agent: ClaudeAgent, api: FakeAnthropicAPI, workspace: Path
) -> None:
    (workspace / "notes.txt").write_text("MILK-SECRET-NOTES\n")
    prompt = "<milk-context>\n@notes.txt\n@property\n</milk-context>\nWhat is in @/etc/passwd?"
    events = await collect(agent.run(make_request(workspace, prompt), FakeHost()))
    assert events[-1] == TurnDone()
    (request,) = api.main_requests()
    assert user_text(request) == prompt
    sent = request_json(api)
    assert "root:x:0:0" not in sent
    assert "MILK-SECRET-NOTES" not in sent


@pytest.mark.claude
@needs_cli
@bounded
async def test_permission_allowed(
    agent: ClaudeAgent, api: FakeAnthropicAPI, workspace: Path
) -> None:
    api.enqueue({"text": "Creating it.", "tool_use": TOUCH}, {"text": "Done."})
    host = FakeHost(PermissionOption.ALLOW_ONCE)
    events = await collect(agent.run(make_request(workspace, "make a marker"), host))
    assert events[-1] == TurnDone()
    (question,) = host.questions
    tool_id = question.tool_call_id
    assert tool_id.startswith("toolu_")
    assert question.agent == Agent.CLAUDE
    assert question.tool == "Bash"
    assert question.input == TOUCH["input"]
    assert question.description == "Create marker"
    assert (workspace / "marker.txt").exists()
    assert {e.tool_call_id for e in events if isinstance(e, ToolCallEvent)} == {tool_id}
    assert statuses(events)[-2:] == [ToolStatus.RUNNING, ToolStatus.COMPLETED]
    assert ToolStatus.PENDING in statuses(events)
    results = [e for e in events if isinstance(e, ToolResultEvent)]
    assert results == [ToolResultEvent(tool_id, "(Bash completed with no output)", False)]
    assert texts(events) == "Creating it.\nDone."


@pytest.mark.claude
@needs_cli
@bounded
async def test_permission_denied(
    agent: ClaudeAgent, api: FakeAnthropicAPI, workspace: Path
) -> None:
    api.enqueue({"tool_use": TOUCH}, {"text": "Understood."})
    host = FakeHost(PermissionOption.DENY)
    events = await collect(agent.run(make_request(workspace, "make a marker"), host))
    assert events[-1] == TurnDone()
    assert len(host.questions) == 1
    assert not (workspace / "marker.txt").exists()
    assert statuses(events)[-1] == ToolStatus.DENIED
    (result,) = [e for e in events if isinstance(e, ToolResultEvent)]
    assert result.is_error
    assert result.output == DENIED_MESSAGE
    follow_up = api.main_requests()[-1]["body"]["messages"][-1]["content"]
    tool_results = [b for b in follow_up if b.get("type") == "tool_result"]
    assert tool_results[0]["content"] == DENIED_MESSAGE
    assert tool_results[0]["is_error"] is True


@pytest.mark.claude
@needs_cli
@bounded
async def test_permission_question_times_out_as_deny(
    agent: ClaudeAgent, api: FakeAnthropicAPI, workspace: Path
) -> None:
    api.enqueue({"tool_use": TOUCH}, {"text": "Ok."})
    host = FakeHost(time_out=0.5)  # the host times questions (TurnHost in the server)
    request = make_request(workspace, "make a marker")
    events = await collect(agent.run(request, host))
    assert events[-1] == TurnDone()
    assert statuses(events)[-1] == ToolStatus.DENIED
    assert not (workspace / "marker.txt").exists()
    follow_up = api.main_requests()[-1]["body"]["messages"][-1]["content"]
    [tool_result] = [b for b in follow_up if b.get("type") == "tool_result"]
    assert tool_result["content"] == timeout_message(0.5)


@pytest.mark.claude
@needs_cli
@bounded
async def test_skip_permissions_runs_tools_without_asking(
    agent: ClaudeAgent, api: FakeAnthropicAPI, workspace: Path
) -> None:
    api.enqueue({"tool_use": TOUCH}, {"text": "Made."})
    host = FakeHost()
    request = make_request(workspace, "make a marker", skip_permissions=True)
    events = await collect(agent.run(request, host))
    assert events[-1] == TurnDone()
    assert host.questions == []
    assert (workspace / "marker.txt").exists()
    assert statuses(events)[-1] == ToolStatus.COMPLETED


@pytest.mark.claude
@needs_cli
@bounded
async def test_cancel_mid_stream_then_resume(
    agent: ClaudeAgent, api: FakeAnthropicAPI, workspace: Path, temp_root: Path
) -> None:
    api.enqueue(SLOW_TEXT)
    request = make_request(workspace, "talk slowly", context="CTX\n")
    seen: list[AgentEvent] = []
    two_deltas = asyncio.Event()
    pids: list[int] = []

    async def consume() -> None:
        async for event in agent.run(request, FakeHost()):
            seen.append(event)
            if sum(isinstance(e, TextDelta) for e in seen) == 2:
                pids.extend(running_pids())
                two_deltas.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(two_deltas.wait(), 30)
    started = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - started < 3.0
    (pid,) = pids
    assert await wait_group_gone(pid)
    assert running_pids() == []
    assert list(temp_root.iterdir()) == []
    assert not any(isinstance(e, TurnDone | TurnFailed) for e in seen)

    api.enqueue({"text": "Back again."})
    again = make_request(
        workspace, "go on", session_id=request.session_id, resume=True, context="CTX\n"
    )
    events = await collect(agent.run(again, FakeHost()))
    assert events[-1] == TurnDone()
    assert texts(events) == "Back again."
    replayed = json.dumps(api.main_requests()[-1]["body"]["messages"])
    assert "word word" in replayed  # the partial answer was kept in the conversation
    assert "talk slowly" in replayed


@pytest.mark.claude
@needs_cli
@bounded
async def test_close_while_permission_question_is_open(
    agent: ClaudeAgent, api: FakeAnthropicAPI, workspace: Path, temp_root: Path
) -> None:
    api.enqueue({"tool_use": TOUCH})
    host = FakeHost(hang=True)
    gen: AsyncGenerator[AgentEvent, None] = agent.run(
        make_request(workspace, "make a marker", context="CTX\n"), host
    )
    seen: list[AgentEvent] = []
    async for event in gen:
        seen.append(event)
        # announced, input complete, then pending again: the question is being asked
        if statuses(seen) == [ToolStatus.PENDING, ToolStatus.RUNNING, ToolStatus.PENDING]:
            break
    await asyncio.wait_for(host.asked.wait(), 30)
    pids = running_pids()
    started = time.monotonic()
    await gen.aclose()
    assert time.monotonic() - started < 3.0
    assert host.cancelled
    (pid,) = pids
    assert await wait_group_gone(pid)
    assert list(temp_root.iterdir()) == []
    assert not (workspace / "marker.txt").exists()


@pytest.mark.claude
@needs_cli
@bounded
async def test_cli_killed_mid_stream_fails_the_turn(
    agent: ClaudeAgent, api: FakeAnthropicAPI, workspace: Path, temp_root: Path
) -> None:
    api.enqueue(SLOW_TEXT)
    events: list[AgentEvent] = []
    async for event in agent.run(make_request(workspace, "talk", context="CTX\n"), FakeHost()):
        events.append(event)
        if isinstance(event, TextDelta) and len(texts(events)) == 5:
            (pid,) = running_pids()
            os.kill(pid, signal.SIGKILL)
    failed = events[-1]
    assert isinstance(failed, TurnFailed)
    assert failed.reason == FailureReason.CLAUDE_FAILED
    assert "SIGKILL" in failed.message
    assert not failed.resume_rejected
    assert list(temp_root.iterdir()) == []


@pytest.mark.claude
@needs_cli
@bounded
async def test_unknown_resume_id_is_rejected(
    agent: ClaudeAgent, api: FakeAnthropicAPI, workspace: Path
) -> None:
    request = make_request(workspace, "continue", resume=True, context="CTX\n")
    events = await collect(agent.run(request, FakeHost()))
    assert events == [events[-1]]
    failed = events[-1]
    assert isinstance(failed, TurnFailed)
    assert failed.reason == FailureReason.CLAUDE_FAILED
    assert failed.resume_rejected
    assert api.main_requests() == []


@pytest.mark.claude
@needs_cli
@bounded
async def test_server_error_fails_quickly_with_bounded_retries(
    agent: ClaudeAgent, api: FakeAnthropicAPI, workspace: Path
) -> None:
    api.enqueue({"status": 500, "repeat": 20})
    started = time.monotonic()
    events = await collect(agent.run(make_request(workspace, "hi"), FakeHost()))
    elapsed = time.monotonic() - started
    failed = events[-1]
    assert isinstance(failed, TurnFailed)
    assert failed.reason == FailureReason.CLAUDE_FAILED
    assert "500" in failed.message
    assert len(api.main_requests()) == 3  # the default max_retries=2
    assert sum(isinstance(e, NoticeEvent) for e in events) == 2
    assert texts(events) == ""
    assert elapsed < 15


@pytest.mark.claude
@needs_cli
@bounded
@pytest.mark.parametrize(
    ("script", "reason"),
    [
        pytest.param({"status": 429, "repeat": 5}, FailureReason.RATE_LIMITED, id="429"),
        pytest.param({"error": "prompt_too_long"}, FailureReason.PROMPT_TOO_LONG, id="too-long"),
    ],
)
async def test_api_failures(
    agent: ClaudeAgent,
    api: FakeAnthropicAPI,
    workspace: Path,
    script: dict[str, Any],
    reason: FailureReason,
) -> None:
    api.enqueue(script)
    events = await collect(agent.run(make_request(workspace, "hi", max_retries=0), FakeHost()))
    failed = events[-1]
    assert isinstance(failed, TurnFailed)
    assert failed.reason == reason
    assert len(api.main_requests()) == 1


@pytest.mark.claude
@needs_cli
@bounded
async def test_not_logged_in(
    agent: ClaudeAgent, api: FakeAnthropicAPI, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(agent, "_env", {**agent._env, "ANTHROPIC_API_KEY": ""})
    events = await collect(agent.run(make_request(workspace, "hi"), FakeHost()))
    failed = events[-1]
    assert isinstance(failed, TurnFailed)
    assert failed.reason == FailureReason.CLAUDE_NOT_LOGGED_IN
    assert "/login" in failed.message


def _cmdline(pid: int) -> bytes:
    """A process's command line, or b"" once it is gone (it may exit while we look)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


async def wait_for_tool_processes(cli_pid: int, tag: str, seconds: float = 15.0) -> list[int]:
    """The processes (besides the CLI) carrying this run's tag, once the tool has started."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        pids = [p for p in claude_processes.tagged_pids({tag}) if p != cli_pid]
        if any(b"sleep" in _cmdline(p) for p in pids):
            return pids
        await asyncio.sleep(0.05)
    raise AssertionError("the slow tool never started")


async def wait_tag_gone(tag: str, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not claude_processes.tagged_pids({tag}):
            return True
        await asyncio.sleep(0.05)
    return False


SLOW_TOOL = {"name": "Bash", "input": {"command": "./slow.sh", "description": "Run slow"}}


@pytest.mark.claude
@needs_cli
@bounded
@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
@pytest.mark.parametrize("how", ["cancel", "sigkill"])
async def test_no_tool_process_survives_the_turn(
    agent: ClaudeAgent, api: FakeAnthropicAPI, workspace: Path, how: str
) -> None:
    write_script(workspace / "slow.sh", "sleep 37")
    api.enqueue({"tool_use": SLOW_TOOL}, {"text": "done"})
    host = FakeHost(PermissionOption.ALLOW_ONCE)
    gen = agent.run(make_request(workspace, "run the slow script"), host)
    events: list[AgentEvent] = []
    tag = ""
    async for event in gen:
        events.append(event)
        if not tag and isinstance(event, ToolCallEvent) and event.status == ToolStatus.RUNNING:
            (cli_pid,) = running_pids()
            tag = claude_processes._LIVE[cli_pid][1]
            await wait_for_tool_processes(cli_pid, tag)
            if how == "cancel":
                break
            os.kill(cli_pid, signal.SIGKILL)  # the CLI dies without stopping its tool
    started = time.monotonic()
    await gen.aclose()
    assert time.monotonic() - started < 4.0
    assert await wait_tag_gone(tag)
    if how == "sigkill":
        failed = events[-1]
        assert isinstance(failed, TurnFailed)
        assert "SIGKILL" in failed.message


# -- the stand-in API itself --------------------------------------------------------------------

MAIN_BODY = {
    "model": "claude-opus-5-5",
    "max_tokens": 100,
    "stream": True,
    "tools": [{"name": "Bash", "input_schema": {"type": "object"}}],
    "system": [{"type": "text", "text": "x"}],
    "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
}


def sse_events(body: str) -> list[dict[str, Any]]:
    return [
        json.loads(line[len("data: ") :]) for line in body.splitlines() if line.startswith("data: ")
    ]


def sse_text(body: str) -> str:
    return "".join(
        e["delta"].get("text", "") for e in sse_events(body) if e["type"] == "content_block_delta"
    )


def test_fake_api_streams_the_real_event_shapes() -> None:
    script: list[dict[str, Any]] = [
        {"thinking": "hmm", "text": "Hi!", "chunk_chars": 2},
        {"tool_use": {"name": "Bash", "input": {"command": "echo hi"}, "id": "toolu_x"}},
    ]
    with FakeAnthropicAPI(script) as fake, httpx.Client(base_url=fake.base_url) as client:
        first = sse_events(client.post("/v1/messages?beta=true", json=MAIN_BODY).text)
        second = sse_events(client.post("/v1/messages", json=MAIN_BODY).text)
    assert [e["type"] for e in first][:2] == ["message_start", "content_block_start"]
    assert first[-2]["type"] == "message_delta"
    assert first[-2]["delta"]["stop_reason"] == "end_turn"
    assert first[-1] == {"type": "message_stop"}
    deltas = [e["delta"] for e in first if e["type"] == "content_block_delta"]
    assert "".join(d.get("thinking", "") for d in deltas) == "hmm"
    assert [d["text"] for d in deltas if d["type"] == "text_delta"] == ["Hi", "!"]
    assert any(d["type"] == "signature_delta" for d in deltas)
    (start,) = [e for e in second if e["type"] == "content_block_start"]
    assert start["content_block"]["type"] == "tool_use"
    assert start["content_block"]["id"] == "toolu_x"
    args = "".join(e["delta"]["partial_json"] for e in second if e["type"] == "content_block_delta")
    assert json.loads(args) == {"command": "echo hi"}
    assert second[-2]["delta"]["stop_reason"] == "tool_use"


def test_fake_api_errors_and_side_requests() -> None:
    with FakeAnthropicAPI() as fake, httpx.Client(base_url=fake.base_url) as client:
        fake.enqueue({"status": 500, "repeat": 2}, {"error": "prompt_too_long"})
        side = client.post("/v1/messages", json={"model": "haiku", "max_tokens": 5, "messages": []})
        assert side.status_code == 200
        assert side.json()["content"][0]["text"] == "Side answer"
        assert [client.post("/v1/messages", json=MAIN_BODY).status_code for _ in range(3)] == [
            500,
            500,
            400,
        ]
        assert fake.pending() == 0
        assert sse_text(client.post("/v1/messages", json=MAIN_BODY).text) == "ok"  # empty queue
        fake.enqueue({"status": 429})
        limited = client.post("/v1/messages", json=MAIN_BODY)
        assert limited.status_code == 429
        assert limited.json()["error"]["type"] == "rate_limit_error"
        assert "retry-after" in limited.headers
        assert client.post("/v1/messages/count_tokens", json={}).json() == {"input_tokens": 100}
    assert [r["main"] for r in fake.requests] == [False, True, True, True, True, True, False]


def test_fake_api_stall_ends_when_the_client_hangs_up() -> None:
    with FakeAnthropicAPI([{"text": "abcdef", "stall": 30}]) as fake:
        started = time.monotonic()
        with (
            httpx.Client(base_url=fake.base_url) as client,
            client.stream("POST", "/v1/messages", json=MAIN_BODY) as response,
        ):
            for chunk in response.iter_text():
                if "text_delta" in chunk:
                    break
    assert time.monotonic() - started < 5  # stop() did not wait for the stall


def test_appended_system_text_and_user_text_helpers() -> None:
    builtin = "You are Claude Code.\n\nDo build original games ... even if it is renamed or called original."
    appended = "MILK\n\nline two\n"
    request = {
        "body": {
            "system": [
                {"type": "text", "text": "x-anthropic-billing-header: cc_version=1"},
                {"type": "text", "text": "You are Claude Code"},
                {"type": "text", "text": f"{builtin}\n\n{appended}"},
            ],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "first"}]},
                {"role": "assistant", "content": [{"type": "text", "text": "answer"}]},
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "<system-reminder>\nnote\n</system-reminder>"},
                        {"type": "text", "text": "second @/etc/passwd"},
                    ],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}],
                },
                {"role": "system", "content": "# Environment"},
            ],
        }
    }
    assert appended_system_text(request) == appended
    assert user_text(request) == "second @/etc/passwd"
    no_append = {"body": {"system": [{"type": "text", "text": builtin}]}}
    assert appended_system_text(no_append) == ""
    bare = {"body": {"system": [{"type": "text", "text": "CWD: /w\nDate: today\n\nctx"}]}}
    assert appended_system_text(bare) == "ctx"
    with pytest.raises(ValueError, match="BUILTIN_PROMPT_ENDINGS"):
        appended_system_text({"body": {"system": "some other prompt"}})


def test_fake_api_command_line(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"responses": [{"text": "from the file"}]}))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.anthropic_api", "--script", str(script)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parent.parent,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert re.fullmatch(r"READY http://127\.0\.0\.1:\d+\n", line)
        with httpx.Client(base_url=line.split()[1], timeout=10) as client:
            headers = {"x-api-key": "sk-secret", "authorization": "Bearer secret"}
            first = client.post("/v1/messages", json=MAIN_BODY, headers=headers)
            assert sse_text(first.text) == "from the file"
            assert client.post("/_script", json=[{"text": "replaced"}]).status_code == 200
            second = client.post("/v1/messages", json=MAIN_BODY)
            assert sse_text(second.text) == "replaced"
            recorded = client.get("/_requests").json()
        assert [r["body"]["messages"] for r in recorded] == [MAIN_BODY["messages"]] * 2
        assert "x-api-key" not in recorded[0]["headers"]
        assert "authorization" not in recorded[0]["headers"]
        assert recorded[0]["path"] == "/v1/messages"
    finally:
        proc.terminate()
        proc.wait(10)
