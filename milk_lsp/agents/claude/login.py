"""Whether Claude Code is logged in, as the CLI itself reports it (`claude auth status`).

`milk-lsp doctor` asks this so that a missing login is found before the first escalation
fails with "Not logged in". The CLI runs with the environment a turn's CLI would get
(`build_env`), so an `ANTHROPIC_API_KEY` the user exported counts, as it does for a turn.
A CLI that cannot say (too old for `auth status`, no answer in time) is reported as unknown,
never as logged out: no false alarm.
"""

from __future__ import annotations

import asyncio
import json
import signal
from dataclasses import dataclass
from pathlib import Path

from milk_lsp.agents.claude.command import ClaudeSettings, build_env
from milk_lsp.agents.claude.processes import cli_preexec, signal_group

STATUS_TIMEOUT_SECONDS = 20.0


@dataclass(frozen=True)
class Login:
    """`logged_in` None: the CLI could not tell (`detail` says why)."""

    logged_in: bool | None
    detail: str


async def claude_login(path: str, settings: ClaudeSettings, workspace: Path) -> Login:
    """What `<path> auth status --json` says about the login."""
    try:
        proc = await asyncio.create_subprocess_exec(
            path,
            "auth",
            "status",
            "--json",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=workspace,
            env=build_env(settings, workspace),
            start_new_session=True,
            preexec_fn=cli_preexec(),
        )
    except OSError as exc:
        return Login(None, f"{path} auth status could not run: {exc.strerror or exc}")
    try:
        out, err = await asyncio.wait_for(proc.communicate(), STATUS_TIMEOUT_SECONDS)
    except TimeoutError:
        signal_group(proc.pid, signal.SIGKILL)
        await proc.wait()
        return Login(
            None, f"{path} auth status gave no answer within {STATUS_TIMEOUT_SECONDS:.0f} s"
        )
    return login_of(out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))


def login_of(stdout: str, stderr: str = "") -> Login:
    """The login state in the JSON `auth status` prints (it exits 1 when logged out)."""
    try:
        report = json.loads(stdout)
    except ValueError:
        said = (stderr or stdout).strip().splitlines()
        why = said[-1] if said else "no output"
        return Login(None, f"`claude auth status` did not answer in JSON ({why})")
    if not isinstance(report, dict) or not isinstance(report.get("loggedIn"), bool):
        return Login(None, "`claude auth status` did not say whether it is logged in")
    if not report["loggedIn"]:
        return Login(False, "not logged in")
    method = str(report.get("authMethod") or "")
    source = report.get("apiKeySource")
    if method == "api_key":
        return Login(True, f"via API key{f' ({source})' if source else ''}")
    return Login(True, f"via {method}" if method else "")


def login_lines(login: Login, path: str) -> tuple[list[str], int]:
    """The doctor's lines for the login, and 1 when it is a problem."""
    if login.logged_in is True:
        return [f"✓ Claude Code logged in{' ' + login.detail if login.detail else ''}"], 0
    if login.logged_in is None:
        return [f"! could not check Claude Code's login: {login.detail}"], 0
    return [
        '✗ Claude Code is not logged in: escalations to Claude would fail with "Not logged in"',
        f"    fix: run `{path} auth login` (or start `claude` once and log in), or export "
        "ANTHROPIC_API_KEY before starting milk-lsp",
    ], 1
