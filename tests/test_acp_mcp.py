"""`milk_lsp.acp.mcp` and the claude argv's `--mcp-config`: the ACP client's MCP servers as
Claude Code's MCP configuration (item 24 of issue 20; the real run is
`tests/e2e/test_acp_mcp.py`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from acp import RequestError
from acp.schema import (
    AcpMcpServer,
    EnvVariable,
    HttpHeader,
    McpServerStdio,
    SseMcpServer,
)

from milk_lsp.acp.mcp import local_notice, read_servers
from milk_lsp.agents.claude.command import (
    ClaudeSettings,
    ClaudeTurnRequest,
    build_argv,
    mcp_config_json,
)

STDIO = McpServerStdio(
    name="fs",
    command="/usr/bin/fs-server",
    args=["--root", "/ws"],
    env=[EnvVariable(name="TOKEN", value="s3cret")],
)
SSE = SseMcpServer(
    type="sse", name="web", url="http://127.0.0.1:1/sse", headers=[HttpHeader(name="X", value="y")]
)


def request(servers: tuple = ()) -> ClaudeTurnRequest:
    return ClaudeTurnRequest(
        workspace=Path("/ws"),
        prompt="hi",
        context_file_text="",
        session_id="id",
        resume=False,
        settings=ClaudeSettings(),
        mcp_servers=servers,
    )


def test_the_servers_become_claudes_mcp_configuration() -> None:
    servers, ignored = read_servers([STDIO, SSE])
    assert ignored == []
    assert json.loads(mcp_config_json(servers)) == {
        "mcpServers": {
            "fs": {
                "type": "stdio",
                "command": "/usr/bin/fs-server",
                "args": ["--root", "/ws"],
                "env": {"TOKEN": "s3cret"},
            },
            "web": {"type": "sse", "url": "http://127.0.0.1:1/sse", "headers": {"X": "y"}},
        }
    }


def test_the_argv_names_a_file_never_the_servers() -> None:
    servers, _ = read_servers([STDIO])
    argv = build_argv(request(servers), "claude", "<context-file>", "/tmp/x/mcp-config.json")
    assert argv[-1] == "--mcp-config=/tmp/x/mcp-config.json"  # one value, `=` form
    assert "s3cret" not in " ".join(argv) and "--strict-mcp-config" not in argv
    assert build_argv(request(servers), "claude", "<context-file>")[-1] == (
        "--mcp-config=<mcp-config>"
    )
    assert not any(a.startswith("--mcp-config") for a in build_argv(request(), "claude", "x"))


def test_servers_over_acp_are_not_passed_and_the_user_is_told() -> None:
    acp_server = AcpMcpServer(type="acp", name="inproc", server_id="1")
    servers, ignored = read_servers([STDIO, acp_server])
    assert [s.name for s in servers] == ["fs"] and ignored == ["inproc"]
    notice = local_notice(servers, ignored)
    assert "local model cannot use" in notice and "`fs`" in notice and "`inproc`" in notice


@pytest.mark.parametrize(
    ("servers", "field"),
    [
        ([STDIO, STDIO.model_copy(update={"command": "other"})], "mcpServers[1].name"),
        ([STDIO.model_copy(update={"name": " "})], "mcpServers[0].name"),
    ],
)
def test_names_that_cannot_be_told_apart_are_refused(servers: list, field: str) -> None:
    with pytest.raises(RequestError) as refused:
        read_servers(servers)
    assert refused.value.code == -32602 and refused.value.data["field"] == field
