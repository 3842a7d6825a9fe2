"""The ACP client's MCP servers (issue 20, item 24), through the REAL Claude Code CLI (the
SDK's bundled binary) on the Messages-API stand-in: the client hands `milk-lsp acp` a real
stdio MCP server (`tests/fakes/mcp_stdio_server.py`) in `session/new`; Claude Code starts
it with the client's environment, its tool is in what the model is sent, a call of it runs
in that server, and nothing of it is left running. The local model cannot use them, and the
user is told so once."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from acp import RequestError
from acp.schema import EnvVariable, HttpHeader, HttpMcpServer, McpServerStdio

from tests.e2e.acp_harness import REPO, RecordingClient, start_agent
from tests.e2e.conftest import Env
from tests.e2e.test_escalation import no_leftovers
from tests.fakes.anthropic_api import FakeAnthropicAPI
from tests.fakes.openai_server import FakeOpenAIServer

pytestmark = [pytest.mark.e2e, pytest.mark.claude]

TOOL = "mcp__milktest__shout"
MARK = "secret-mark-7f3a"
"""Handed to the server in its environment: it must reach the server, never the argv."""


def stdio_server(env: Env) -> McpServerStdio:
    return McpServerStdio(
        name="milktest",
        command=sys.executable,
        args=["-m", "tests.fakes.mcp_stdio_server", "--log", str(env.root / "mcp-calls.log")],
        env=[
            EnvVariable(name="MILK_MCP_MARK", value=MARK),
            EnvVariable(name="PYTHONPATH", value=str(REPO)),
        ],
    )


def offered(request: dict) -> bool:
    """Whether the model was offered the MCP tool: in `tools`, or (this CLI defers MCP
    tools behind its ToolSearch) named in the list of deferred tools it is sent."""
    body = request["body"]
    if TOOL in [tool.get("name") for tool in body.get("tools", [])]:
        return True
    texts = json.dumps(body.get("messages", []))
    return "ToolSearch" in texts and f"\\n{TOOL}\\n" in texts


def mcp_processes(env: Env) -> list[int]:
    marker = str(env.root / "mcp-calls.log").encode()
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and marker in (proc / "cmdline").read_bytes():
                pids.append(int(proc.name))
        except OSError:
            continue
    return pids


async def test_claude_code_starts_the_clients_mcp_server_and_uses_its_tool(
    claude_env: Env, api: FakeAnthropicAPI
) -> None:
    env = claude_env
    client = RecordingClient(permission_answers=["allow_once"])
    async with start_agent(env, client) as agent:
        mcp = agent.init.agent_capabilities.mcp_capabilities
        assert mcp is not None and (mcp.http, mcp.sse) == (True, True)
        new = await agent.conn.new_session(cwd=str(env.workspace), mcp_servers=[stdio_server(env)])
        sid = new.session_id
        assert new.field_meta["milk"]["mcpServers"] == ["milktest"]
        assert "ignoredMcpServers" not in new.field_meta["milk"]

        # what /context shows is the argv: a private file, not the servers' environment
        preview = await agent.conn.ext_method("milk/context", {"sessionId": sid})
        assert "--mcp-config=<mcp-config>" in preview["argv"]
        assert MARK not in json.dumps(preview)

        await agent.conn.set_session_mode(session_id=sid, mode_id="claude")
        api.enqueue(
            {"tool_use": {"name": TOOL, "input": {"text": "hello"}}},
            {"text": "The server shouted back."},
        )
        result = await agent.say(sid, "shout hello with the MCP tool")
        assert result.stop_reason == "end_turn", result
        first = api.main_requests()[0]
        assert offered(first)  # Claude Code connected to the client's server
        # the call ran in that server, with the environment the client gave it
        [logged] = [
            json.loads(line) for line in (env.root / "mcp-calls.log").read_text().splitlines()
        ]
        assert logged == {"tool": "shout", "text": "hello", "answer": "HELLO" + MARK}
        [asked] = client.permission_requests  # an MCP tool asks like any of Claude's tools
        assert asked["toolCall"]["title"] == TOOL
        outputs = [
            u.raw_output["output"] for u in client.of_kind("tool_call_update", sid) if u.raw_output
        ]
        assert any("HELLO" + MARK in output for output in outputs)
        assert agent.client.text(sid, agent="claude") == "The server shouted back."
        # no word about the local model: it did not answer
        assert not [u for u in client.of_kind("agent_message_chunk", sid) if _is_mcp_notice(u)]
        await no_leftovers(env)
        for _ in range(50):
            if not mcp_processes(env):
                break
            await asyncio.sleep(0.1)
        assert mcp_processes(env) == []  # the server ended with Claude Code's run
    assert MARK not in (env.root / "acp-stderr-0.log").read_text()  # nor in milk's log


def _is_mcp_notice(update) -> bool:
    return (update.field_meta or {}).get("milk", {}).get("kind") == "mcp"


async def test_the_local_model_says_once_that_it_cannot_use_them(
    claude_env: Env, api: FakeAnthropicAPI, openai: FakeOpenAIServer
) -> None:
    env = claude_env
    async with start_agent(env) as agent:
        http = HttpMcpServer(
            type="http",
            name="docs",
            url="http://127.0.0.1:9/mcp",
            headers=[HttpHeader(name="Authorization", value="Bearer " + MARK)],
        )
        new = await agent.conn.new_session(
            cwd=str(env.workspace), mcp_servers=[stdio_server(env), http]
        )
        sid = new.session_id
        assert new.field_meta["milk"]["mcpServers"] == ["milktest", "docs"]
        for text in ("first", "second"):
            openai.enqueue({"text": f"local answer {text}"})
            await agent.say(sid, f"tell me something nice, {text}")
        [notice] = [
            u for u in agent.client.of_kind("agent_message_chunk", sid) if _is_mcp_notice(u)
        ]
        assert "local model cannot use" in notice.content.text
        assert "`milktest`, `docs`" in notice.content.text and "/escalate" in notice.content.text
        # the local model was not offered the servers' tools
        assert TOOL not in json.dumps(openai.requests[-1].get("tools", []))


async def test_mcp_servers_that_cannot_be_told_apart_are_refused(claude_env: Env) -> None:
    async with start_agent(claude_env) as agent:
        twice = [stdio_server(claude_env), stdio_server(claude_env)]
        with pytest.raises(RequestError) as refused:
            await agent.conn.new_session(cwd=str(claude_env.workspace), mcp_servers=twice)
        assert refused.value.code == -32602
        assert refused.value.data["field"] == "mcpServers[1].name"
        assert "already named 'milktest'" in str(refused.value)
        listed = await agent.conn.list_sessions()
        assert listed.sessions == []  # refused before anything was stored
