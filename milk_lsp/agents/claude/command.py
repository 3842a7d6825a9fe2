"""Exactly what runs: the argv and environment a Claude Code turn's CLI is started with.

``milk/context`` previews the same `build_argv` a real run uses (with
`CONTEXT_FILE_PLACEHOLDER` for the context file's path), so the preview is the command.

* argv: ``--print``, stream-json input and output, ``--verbose``, partial messages, user
  setting sources (user, project, local), ``--permission-prompt-tool stdio`` (permission
  questions arrive as ``can_use_tool`` control requests on stdout) or
  ``--dangerously-skip-permissions``, ``--model``/``--allowedTools``/``--add-dir`` from the
  settings, ``--session-id=`` (first/fresh) or ``--resume=``, and ONE
  ``--append-system-prompt-file`` (only the last such flag counts), and ``--mcp-config=`` a
  private file naming the MCP servers an ACP client handed milk for the session (a file, not
  a JSON string: their environment and headers may hold secrets, and the argv is logged and
  previewed). Claude Code's preset system prompt is kept (no ``--system-prompt``), and so
  are the user's own MCP servers (no ``--strict-mcp-config``). Values use the
  ``--flag=value`` form so they can never be read as flags (``--mcp-config`` takes several
  values; the ``=`` form takes exactly one). No user text is ever on the argv.
* A brief request (``ClaudeTurnRequest.brief``, the advisor's): ``BRIEF_FLAGS`` and
  ``--system-prompt-file=`` instead of the permission, session and append flags.
* Environment: inherited, minus ``CLAUDE_CODE_SESSION_ID``, ``CLAUDE_CODE_ENTRYPOINT`` and
  ``CLAUDECODE``, with ``CLAUDE_CODE_MAX_RETRIES`` bounded (a dead API fails in seconds).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = [
    "BRIEF_FLAGS",
    "CONTEXT_FILE_PLACEHOLDER",
    "MCP_CONFIG_PLACEHOLDER",
    "ClaudeSettings",
    "ClaudeTurnRequest",
    "McpServer",
    "build_argv",
    "build_env",
    "mcp_config_json",
]

CONTEXT_FILE_PLACEHOLDER = "<context-file>"
MCP_CONFIG_PLACEHOLDER = "<mcp-config>"
SETTING_SOURCES = "user,project,local"
BRIEF_FLAGS = (
    "--tools=",
    "--strict-mcp-config",
    "--disable-slash-commands",
    "--no-session-persistence",
)
"""A brief request (the advisor's plan or step): no tool definitions (``--tools=``, and no
MCP servers: their tools would be sent and their processes started), no skill listing, no
transcript on disk (nothing resumes it). Not ``--bare``: it reads no OAuth login or
keychain, so a user logged in with ``claude`` would fail. Measured in docs/architecture.md."""
_STREAMED = (
    "--print",
    "--output-format",
    "stream-json",
    "--input-format",
    "stream-json",
    "--verbose",
    "--include-partial-messages",
    f"--setting-sources={SETTING_SOURCES}",
)
"""Every run's start: one prompt, stream-json both ways, the user's setting sources."""
DROPPED_ENV = ("CLAUDE_CODE_SESSION_ID", "CLAUDE_CODE_ENTRYPOINT", "CLAUDECODE")
"""Inherited variables that would make the CLI think it runs inside another Claude Code."""


@dataclass(frozen=True)
class ClaudeSettings:
    """The ``claude.*`` settings that shape a run."""

    path: str | None = None
    model: str | None = None
    allowed_tools: tuple[str, ...] = ()
    add_dirs: tuple[str, ...] = ()
    skip_permissions: bool = False
    max_retries: int = 2
    """``CLAUDE_CODE_MAX_RETRIES`` for the CLI (its default of 10 takes ~3 minutes)."""


@dataclass(frozen=True)
class McpServer:
    """One MCP server for the run, in Claude Code's terms: a command it starts (`stdio`),
    or a URL it connects to (`http`, `sse`)."""

    name: str
    transport: Literal["stdio", "http", "sse"]
    command: str = ""
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    url: str = ""
    headers: tuple[tuple[str, str], ...] = ()

    def entry(self) -> dict[str, object]:
        """The server's entry in an MCP configuration (`.mcp.json`'s shape)."""
        if self.transport == "stdio":
            return {
                "type": "stdio",
                "command": self.command,
                "args": list(self.args),
                "env": dict(self.env),
            }
        return {"type": self.transport, "url": self.url, "headers": dict(self.headers)}


def mcp_config_json(servers: Sequence[McpServer]) -> str:
    """The `--mcp-config` file's text."""
    return json.dumps({"mcpServers": {server.name: server.entry() for server in servers}})


@dataclass(frozen=True)
class ClaudeTurnRequest:
    workspace: Path
    prompt: str
    """The user's text, already prefixed with any ``<milk-context>`` block."""
    context_file_text: str
    """The one ``--append-system-prompt-file`` content ("" → no flag)."""
    session_id: str
    """A new uuid4 for a first/fresh start (``--session-id``), or the id to ``--resume``."""
    resume: bool
    settings: ClaudeSettings
    mcp_servers: tuple[McpServer, ...] = ()
    """The MCP servers of the session's ACP client (none over LSP)."""
    brief: bool = False
    """A tool-less request of the advisor (`BRIEF_FLAGS`): `context_file_text` is the
    whole system prompt (``--system-prompt-file``), no conversation is kept or resumed."""


def build_argv(
    request: ClaudeTurnRequest,
    cli_path: str,
    context_file_path: str,
    mcp_config_path: str = MCP_CONFIG_PLACEHOLDER,
) -> list[str]:
    """The exact argv of the turn; ``milk/context`` previews it with ``"<context-file>"``
    (and ``"<mcp-config>"``)."""
    settings = request.settings
    if request.brief:
        return _brief_argv(request, cli_path, context_file_path)
    argv = [cli_path, *_STREAMED]
    if settings.skip_permissions:
        argv.append("--dangerously-skip-permissions")
    else:
        argv += ["--permission-prompt-tool", "stdio"]
    if settings.model:
        argv.append(f"--model={settings.model}")
    if settings.allowed_tools:
        argv.append(f"--allowedTools={','.join(settings.allowed_tools)}")
    argv += [f"--add-dir={directory}" for directory in settings.add_dirs]
    if request.resume:
        argv.append(f"--resume={request.session_id}")
    else:
        argv.append(f"--session-id={request.session_id}")
    if request.context_file_text:
        argv.append(f"--append-system-prompt-file={context_file_path}")
    if request.mcp_servers:
        argv.append(f"--mcp-config={mcp_config_path}")
    return argv


def _brief_argv(request: ClaudeTurnRequest, cli_path: str, system_file_path: str) -> list[str]:
    """The argv of a brief request: the user's setting sources and model, no tools, no
    permission flags (nothing to permit), milk's system prompt in place of Claude Code's."""
    argv = [cli_path, *_STREAMED, *BRIEF_FLAGS]
    if request.settings.model:
        argv.append(f"--model={request.settings.model}")
    argv.append(f"--system-prompt-file={system_file_path}")
    return argv


def build_env(
    settings: ClaudeSettings,
    workspace: Path,
    overrides: Mapping[str, str] | None = None,
    base: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The CLI's environment: inherited, minus the nested-session variables, retries bounded."""
    env = dict(os.environ if base is None else base)
    for name in DROPPED_ENV:
        env.pop(name, None)
    if overrides:
        env.update(overrides)
    env["CLAUDE_CODE_MAX_RETRIES"] = str(max(0, settings.max_retries))
    env["PWD"] = str(workspace)
    return env
