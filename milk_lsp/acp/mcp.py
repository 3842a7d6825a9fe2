"""The MCP servers an ACP client hands milk in `session/new` and `session/load`.

ACP asks agents to connect to the client's MCP servers. milk's Claude part can: Claude Code
takes an MCP configuration on its command line (`--mcp-config`, written to a private file by
the Claude agent), and connects to stdio, HTTP and SSE servers itself, so milk advertises
`mcpCapabilities: {http, sse}`. The local model's tool loop has milk's own tools only; the
user is told so once per open session, after the first turn the local model answered.
Servers over ACP itself (`type: "acp"`, not advertised) are not passed on: they are named in
`_meta.milk.ignoredMcpServers` and in the notice.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from acp import RequestError
from acp.schema import HttpMcpServer, McpServerStdio, SseMcpServer

from milk_lsp.acp.errors import invalid_params
from milk_lsp.agents.claude.command import McpServer

logger = logging.getLogger(__name__)


def read_servers(raw: Sequence[Any] | None) -> tuple[tuple[McpServer, ...], list[str]]:
    """The servers Claude Code gets, and the names of those it cannot be given.

    Two servers of one name would be one entry of Claude's configuration: refused, naming
    the second, rather than one of them dropped without a word."""
    servers: list[McpServer] = []
    ignored: list[str] = []
    seen: set[str] = set()
    for index, server in enumerate(raw or ()):
        name = str(getattr(server, "name", ""))
        if not name.strip():
            raise invalid_params(f"mcpServers[{index}].name", "an MCP server needs a name")
        if name in seen:
            raise _duplicate(index, name)
        seen.add(name)
        match server:
            case McpServerStdio():
                servers.append(
                    McpServer(
                        name=name,
                        transport="stdio",
                        command=server.command,
                        args=tuple(server.args),
                        env=tuple((var.name, var.value) for var in server.env),
                    )
                )
            case HttpMcpServer() | SseMcpServer():
                servers.append(
                    McpServer(
                        name=name,
                        transport=server.type,
                        url=server.url,
                        headers=tuple((h.name, h.value) for h in server.headers),
                    )
                )
            case _:
                ignored.append(name)
    if ignored:
        logger.warning("MCP servers milk cannot pass to Claude Code: %s", ignored)
    return tuple(servers), ignored


def _duplicate(index: int, name: str) -> RequestError:
    return invalid_params(
        f"mcpServers[{index}].name", f"another MCP server is already named {name!r}"
    )


def local_notice(servers: Sequence[McpServer], ignored: Sequence[str]) -> str:
    """What the user is told after the first local turn of a session with MCP servers."""
    parts = []
    if servers:
        names = ", ".join(f"`{server.name}`" for server in servers)
        parts.append(
            f"The local model cannot use this editor's MCP servers ({names}); Claude Code "
            "can: type `/escalate …` or choose the `claude` mode."
        )
    if ignored:
        names = ", ".join(f"`{name}`" for name in ignored)
        parts.append(f"MCP servers over ACP itself ({names}) are not used by milk.")
    return "\n\n*" + " ".join(parts) + "*\n"
