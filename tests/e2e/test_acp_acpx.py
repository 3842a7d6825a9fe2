"""`milk-lsp acp` driven by acpx, the headless ACP client on the official TypeScript SDK
(pinned in `tests/acp_node/package.json`). `scripts/test.sh` installs it as
`cd tests/acp_node && npm install --no-save --ignore-scripts` (not `npm ci`: the lock names
platform packages the registry does not serve for every platform). acpx 0.19.1 declares Node
>= 22.13 but runs these tests on the Node 20 the project asks for (npm only warns). acpx
prints every ACP message it exchanges as NDJSON (`--format json`), which is what these tests
read."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.acp_harness import write_config
from tests.e2e.conftest import Env
from tests.fakes.openai_server import FakeOpenAIServer

pytestmark = pytest.mark.e2e

ACPX = (
    Path(__file__).resolve().parents[1] / "acp_node" / "node_modules" / "acpx" / "dist" / "cli.js"
)
NODE = shutil.which("node")
if NODE is None or not ACPX.is_file():
    pytest.skip(
        "acpx is not installed (node, and `npm install --no-save --ignore-scripts` in"
        " tests/acp_node, as scripts/test.sh runs it)",
        allow_module_level=True,
    )

EDIT = {
    "name": "edit_file",
    "arguments": {"path": "hello.py", "old_text": "'hello'", "new_text": "'hi'"},
}


async def acpx(env: Env, *args: str) -> tuple[int, list[dict[str, Any]], str]:
    """Run acpx with milk as its agent; returns its exit code, messages and stderr."""
    write_config(env)
    (env.root / "home").mkdir(exist_ok=True)
    agent = f"{sys.executable} -m milk_lsp acp"
    assert NODE is not None
    process = await asyncio.create_subprocess_exec(
        NODE,
        str(ACPX),
        "--agent",
        agent,
        "--format",
        "json",
        "--cwd",
        str(env.workspace),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**env.server_env(), "HOME": str(env.root / "home")},
        cwd=env.workspace,
    )
    out, err = await asyncio.wait_for(process.communicate(), 120)
    messages = [json.loads(line) for line in out.decode().splitlines() if line.strip()]
    assert process.returncode is not None
    return process.returncode, messages, err.decode()


def updates(messages: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [
        m["params"]["update"]
        for m in messages
        if m.get("method") == "session/update" and m["params"]["update"]["sessionUpdate"] == kind
    ]


def answer_to(messages: list[dict[str, Any]], method: str) -> dict[str, Any]:
    """The answer to the one `method` request: the next message with its id (each side
    numbers its own requests, so an id alone is not enough)."""
    [at] = [i for i, m in enumerate(messages) if m.get("method") == method and "id" in m]
    return next(
        m for m in messages[at + 1 :] if m.get("id") == messages[at]["id"] and "method" not in m
    )


async def test_acpx_exec_streams_a_local_turn(env: Env, openai: FakeOpenAIServer) -> None:
    reply = "It defines a greeting function that returns hello."
    openai.enqueue({"text": reply, "chunk_chars": 6})
    code, messages, err = await acpx(env, "exec", "say something friendly")
    assert code == 0, err
    chunks = updates(messages, "agent_message_chunk")
    assert len(chunks) > 3
    assert "".join(c["content"]["text"] for c in chunks) == reply
    assert {c["_meta"]["milk"]["agent"] for c in chunks} == {"local"}
    assert answer_to(messages, "session/prompt")["result"]["stopReason"] == "end_turn"
    commands = updates(messages, "available_commands_update")
    assert [c["name"] for c in commands[0]["availableCommands"]] == [
        "escalate",
        "local",
        "advise",
        "context",
        "undo",
    ]


@pytest.mark.parametrize("policy", ["--approve-all", "--deny-all"])
async def test_acpx_permission_policy_on_an_edit(
    env: Env, openai: FakeOpenAIServer, policy: str
) -> None:
    openai.enqueue({"tool_calls": [EDIT]}, {"text": "done"})
    code, messages, err = await acpx(env, policy, "exec", "say hi")
    assert code == (0 if policy == "--approve-all" else 5), err  # 5: acpx's "permission denied"
    [start] = updates(messages, "tool_call")
    [diff] = [c for c in start["content"] if c["type"] == "diff"]
    assert (diff["oldText"], diff["newText"]) == ("'hello'", "'hi'")
    question = answer_to(messages, "session/request_permission")
    chosen = question["result"]["outcome"]
    text = (env.workspace / "hello.py").read_text()
    final = [u for u in updates(messages, "tool_call_update") if u.get("status")][-1]
    if policy == "--approve-all":
        assert chosen["optionId"] in ("allow_once", "allow_session")
        assert text == "def greet():\n    return 'hi'\n"
        # acpx offers fs/write_text_file: the edit went through the client
        assert answer_to(messages, "fs/write_text_file").get("result") is not None
        assert final["status"] == "completed"
        # acpx saved the file itself: the call says it is edited, not "not saved yet"
        [output] = [
            u["rawOutput"]["output"]
            for u in updates(messages, "tool_call_update")
            if u.get("rawOutput")
        ]
        assert output == "Edited hello.py: lines 2-2."
    else:
        assert chosen.get("optionId", "deny") == "deny" or chosen["outcome"] == "cancelled"
        assert text == "def greet():\n    return 'hello'\n"
        assert final["_meta"]["milk"]["status"] == "denied"


async def test_acpx_reports_a_failed_turn_as_an_error(env: Env, openai: FakeOpenAIServer) -> None:
    openai.enqueue({"status": 500, "body": "the model server crashed"})
    code, messages, _err = await acpx(env, "exec", "anything")
    assert code != 0
    answer = answer_to(messages, "session/prompt")
    assert answer["error"]["code"] == -32603
    assert answer["error"]["data"]["reason"] == "local_failed"
    assert "the model server crashed" in answer["error"]["message"]
