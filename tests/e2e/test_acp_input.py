"""Bad input to `milk-lsp acp` gets a JSON-RPC error naming the field, and loses nothing.

Schema-level input goes through the SDK's own JSON-RPC `Connection` (its client router
answering our requests), since its typed client would refuse to send it; framing-level input
(not JSON, a line too long) is written to the agent's stdin as bytes.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from acp import RequestError, spawn_stdio_connection
from acp.client.router import build_client_router
from acp.connection import Connection

from tests.e2e.acp_harness import REPO, RecordingClient, write_config
from tests.e2e.conftest import Env
from tests.fakes.openai_server import FakeOpenAIServer

pytestmark = pytest.mark.e2e


@asynccontextmanager
async def raw_connection(env: Env, client: RecordingClient) -> AsyncIterator[Connection]:
    write_config(env)
    with (env.root / "acp-stderr.log").open("wb") as stderr:
        async with spawn_stdio_connection(
            build_client_router(client),  # type: ignore[arg-type]
            sys.executable,
            "-m",
            "milk_lsp",
            "acp",
            env=env.server_env(),
            cwd=REPO,
            stderr=stderr,
        ) as (conn, _process):
            await conn.send_request("initialize", {"protocolVersion": 1})
            yield conn


async def error_of(conn: Connection, method: str, params: Any) -> RequestError:
    with pytest.raises(RequestError) as caught:
        await asyncio.wait_for(conn.send_request(method, params), 20)
    return caught.value


async def test_bad_requests_name_the_field_and_lose_nothing(
    env: Env, openai: FakeOpenAIServer
) -> None:
    client = RecordingClient()
    async with raw_connection(env, client) as conn:
        new = await conn.send_request("session/new", {"cwd": str(env.workspace), "mcpServers": []})
        sid = new["sessionId"]

        unknown = await error_of(
            conn,
            "session/prompt",
            {"sessionId": "no-such", "prompt": [{"type": "text", "text": "hi"}]},
        )
        assert unknown.code == -32602
        assert "sessionId" in str(unknown) and unknown.data["reason"] == "session_not_found"

        no_text = await error_of(
            conn, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text"}]}
        )
        assert no_text.code == -32602
        assert str(no_text) == "invalid params: prompt[0].text: Field required"

        video = await error_of(
            conn,
            "session/prompt",
            {"sessionId": sid, "prompt": [{"type": "video", "data": "AAAA"}]},
        )
        assert video.code == -32602 and str(video).startswith("invalid params: prompt[0]: ")
        assert "'video'" in str(video)

        image = await error_of(
            conn,
            "session/prompt",
            {
                "sessionId": sid,
                "prompt": [
                    {"type": "text", "text": "what is this?"},
                    {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
                ],
            },
        )
        assert image.code == -32602
        assert str(image).startswith("invalid params: prompt[1]: image content is not supported")

        blob = await error_of(
            conn,
            "session/prompt",
            {
                "sessionId": sid,
                "prompt": [
                    {"type": "text", "text": "see"},
                    {"type": "resource", "resource": {"uri": "file:///x.bin", "blob": "AAAA"}},
                ],
            },
        )
        assert blob.code == -32602 and "prompt[1].resource" in str(blob)

        missing = await error_of(conn, "session/prompt", {"sessionId": sid})
        assert str(missing) == "invalid params: prompt: Field required"
        not_object = await error_of(conn, "session/prompt", [sid])
        assert not_object.code == -32602

        empty = await error_of(conn, "session/prompt", {"sessionId": sid, "prompt": []})
        assert str(empty) == "invalid params: prompt: the prompt has no text"

        relative = await error_of(conn, "session/new", {"cwd": "workspace", "mcpServers": []})
        assert relative.code == -32602 and "cwd" in str(relative)
        gone = await error_of(
            conn, "session/new", {"cwd": str(env.root / "nowhere"), "mcpServers": []}
        )
        assert gone.code == -32602 and gone.data == {"reason": "workspace_unknown", "field": "cwd"}
        load = await error_of(
            conn,
            "session/load",
            {"cwd": str(env.workspace), "sessionId": "no-such", "mcpServers": []},
        )
        assert load.code == -32602 and load.data["field"] == "sessionId"
        cursor = await error_of(conn, "session/list", {"cursor": "x"})
        assert cursor.code == -32602 and "cursor" in str(cursor)
        assert (await error_of(conn, "session/fork", {})).code == -32601
        assert (await error_of(conn, "no/such/method", {})).code == -32601

        # nothing was lost or half-done: the session works and stored one turn only
        openai.enqueue({"text": "fine"})
        ok = await conn.send_request(
            "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}
        )
        assert ok["stopReason"] == "end_turn"
        assert len(openai.requests) == 1
        listed = await conn.send_request("session/list", {})
        assert [s["sessionId"] for s in listed["sessions"]] == [sid]
        before = len(client.updates)
        await conn.send_request(
            "session/load", {"cwd": str(env.workspace), "sessionId": sid, "mcpServers": []}
        )
        users = [u for _, u in client.updates[before:] if u.session_update == "user_message_chunk"]
        assert [u.content.text for u in users] == ["hi"]


async def read_message(stdout: asyncio.StreamReader) -> dict[str, Any]:
    line = await asyncio.wait_for(stdout.readline(), 20)
    assert line, "the agent closed its output"
    message: dict[str, Any] = json.loads(line)
    return message


async def test_unreadable_lines_are_answered_and_the_agent_keeps_serving(env: Env) -> None:
    write_config(env)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "milk_lsp",
        "acp",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env=env.server_env(),
        cwd=REPO,
        limit=2**20,
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write(b'{"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {\n')
        assert await read_message(process.stdout) == {
            "jsonrpc": "2.0",
            "id": 7,
            "error": {
                "code": -32700,
                "message": await _message_of_cut_json(),
            },
        }
        process.stdin.write(b"\xff\xfe not utf-8\n")
        error = await read_message(process.stdout)
        assert (error["id"], error["error"]["code"]) == (None, -32700)
        process.stdin.write(b"[1, 2]\n")
        error = await read_message(process.stdout)
        assert (error["id"], error["error"]["code"]) == (None, -32600)
        huge = b'{"jsonrpc": "2.0", "id": "big", "method": "x", "params": {"p": "' + b"a" * (
            65 * 2**20
        )
        process.stdin.write(huge + b'"}}\n')
        error = await read_message(process.stdout)
        assert (error["id"], error["error"]["code"]) == ("big", -32600)
        assert "longer than" in error["error"]["message"]
        process.stdin.write(
            b'{"jsonrpc": "2.0", "id": 8, "method": "initialize", "params": {"protocolVersion": 1}}\n'
        )
        answer = await read_message(process.stdout)
        assert answer["id"] == 8 and answer["result"]["protocolVersion"] == 1
    finally:
        process.stdin.close()
        await asyncio.wait_for(process.wait(), 20)
    assert process.returncode == 0  # the end of the input ends the agent, cleanly


async def _message_of_cut_json() -> str:
    from milk_lsp.jsonrpc import messages as jsonrpc

    parsed = jsonrpc.parse_message(
        b'{"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {'
    )
    assert isinstance(parsed, jsonrpc.Invalid)
    return parsed.message
