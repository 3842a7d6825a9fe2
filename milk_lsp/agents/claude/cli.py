"""Finding the Claude Code CLI (``claude.path``, PATH, the SDK's bundled binary) and its version.

The claude-agent-sdk wheel bundles a ``claude`` binary; it is the fallback when
``claude.path`` is unset and no ``claude`` is on PATH, and it is found on disk without
importing the SDK (importing it costs ~0.45 s).
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import re
import shutil
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

from milk_lsp.agents.claude.command import ClaudeSettings
from milk_lsp.agents.claude.processes import cli_preexec, signal_group
from milk_lsp.agents.claude.stream import install_hint
from milk_lsp.doors import LSP, Door

__all__ = [
    "ResolvedCli",
    "bundled_cli_path",
    "cli_version",
    "not_found_message",
    "resolve_cli",
]

VERSION_TIMEOUT_SECONDS = 5.0


@dataclass(frozen=True)
class ResolvedCli:
    path: str | None
    source: str
    """"setting" | "path" | "bundled" | "missing"."""


def bundled_cli_path() -> str | None:
    """The `claude` binary inside the installed claude-agent-sdk wheel, without importing it."""
    try:
        spec = importlib.util.find_spec("claude_agent_sdk")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    name = "claude.exe" if sys.platform == "win32" else "claude"
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "_bundled" / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def resolve_cli(settings: ClaudeSettings) -> ResolvedCli:
    """``claude.path``, then ``claude`` on PATH, then the SDK's bundled binary.

    A ``claude.path`` that does not point at an executable is "missing": it is never
    silently replaced by another CLI.
    """
    if settings.path:
        configured = Path(settings.path).expanduser()
        if len(configured.parts) == 1:  # a bare name: look it up on PATH
            found = shutil.which(settings.path)
            return ResolvedCli(found, "setting") if found else ResolvedCli(None, "missing")
        if configured.is_file() and os.access(configured, os.X_OK):
            return ResolvedCli(str(configured), "setting")
        return ResolvedCli(None, "missing")
    found = shutil.which("claude")
    if found:
        return ResolvedCli(found, "path")
    bundled = bundled_cli_path()
    if bundled:
        return ResolvedCli(bundled, "bundled")
    return ResolvedCli(None, "missing")


def not_found_message(settings: ClaudeSettings, door: Door = LSP) -> str:
    """Why no `claude` runs, and the fix in the front door's words (`door`)."""
    if settings.path:
        return f"claude.path = {settings.path!r} does not exist or cannot run. {install_hint(door)}"
    return (
        "Claude Code (`claude`) was not found on PATH and no bundled copy is installed. "
        f"{install_hint(door)}"
    )


async def cli_version(path: str) -> str | None:
    """The version `claude --version` reports (e.g. "2.1.332"), or None if it cannot run."""
    try:
        proc = await asyncio.create_subprocess_exec(
            path,
            "--version",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=cli_preexec(),
        )
    except OSError:
        return None
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), VERSION_TIMEOUT_SECONDS)
    except TimeoutError:
        signal_group(proc.pid, signal.SIGKILL)
        await proc.wait()
        return None
    except asyncio.CancelledError:
        signal_group(proc.pid, signal.SIGKILL)
        raise
    if proc.returncode != 0 or not out:
        return None
    line = out.decode("utf-8", "replace").strip().splitlines()[0] if out.strip() else ""
    match = re.match(r"\d+\.\d+\.\d+\S*", line)
    return match.group(0) if match else (line or None)
