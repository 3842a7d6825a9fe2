"""End to end, ADR 0029's demotion: the first local turn after Claude's carries what Claude
did (its brick) once — the REAL Claude Code CLI on the Messages-API stand-in edits two
files, then the local model (a real HTTP server, scripted) is asked on route local."""

from __future__ import annotations

from typing import Any

import pytest

from milk_lsp.agents.claude.cli import bundled_cli_path
from tests.e2e.conftest import Env, Harness, request
from tests.fakes.anthropic_api import FakeAnthropicAPI

pytestmark = [pytest.mark.e2e, pytest.mark.claude]

if bundled_cli_path() is None:  # pragma: no cover - the wheel always ships it
    pytest.skip("claude-agent-sdk's bundled CLI is missing", allow_module_level=True)

NOTE = "Claude Code worked on this session before this message"


def tool(name: str, **tool_input: Any) -> dict[str, Any]:
    return {"tool_use": {"name": name, "input": tool_input}}


def last_user_message(request_body: dict[str, Any]) -> str:
    return str([m for m in request_body["messages"] if m["role"] == "user"][-1]["content"])


async def test_the_first_local_turn_after_claude_gets_its_summary_once(
    harness: Harness, claude_env: Env, api: FakeAnthropicAPI, openai
) -> None:
    env = claude_env
    (env.workspace / "util.py").write_text("def helper():\n    return 1\n")
    client = await harness.start()
    client.permission_answers.extend(["allow_once"] * 4)
    session = await request(client, "milk/session/new", {"workspaceFolder": env.workspace.as_uri()})
    session_id = session["sessionId"]
    api.enqueue(
        tool(
            "Edit",
            file_path=str(env.workspace / "hello.py"),
            old_string="'hello'",
            new_string="'bonjour'",
        ),
        tool(
            "Edit",
            file_path=str(env.workspace / "util.py"),
            old_string="return 1",
            new_string="return 2",
        ),
        {"text": "Changed the greeting and the helper's value."},
    )
    claude = await request(
        client, "milk/escalate", {"sessionId": session_id, "text": "Mets le salut en français."}
    )
    assert claude["stopReason"] == "end_turn", claude
    assert "bonjour" in (env.workspace / "hello.py").read_text()

    # milk/context shows what the next local turn will carry
    preview = await request(client, "milk/context", {"sessionId": session_id})
    assert NOTE in preview["localNotes"]
    assert "util.py" in preview["localNotes"] and "hello.py" in preview["localNotes"]

    openai.set_script([{"text": "Claude changed hello.py and util.py."}])
    back = await request(
        client,
        "milk/chat",
        {"sessionId": session_id, "text": "Was hat Claude geändert?", "route": "local"},
    )
    assert back["agent"] == "local" and back["stopReason"] == "end_turn", back
    first = last_user_message(openai.requests[-1])
    assert NOTE in first
    assert "Mets le salut en français." in first  # what Claude was asked
    assert "[Tool: Edit]" in first and "util.py" in first and "bonjour" in first  # what it did
    assert first.rstrip().endswith("Was hat Claude geändert?")  # the request last
    assert first.count(NOTE) == 1

    # the turn after: nothing from Claude again, and milk/context has nothing to preview
    openai.set_script([{"text": "Noted."}])
    again = await request(
        client, "milk/chat", {"sessionId": session_id, "text": "Danke.", "route": "local"}
    )
    assert again["stopReason"] == "end_turn", again
    assert NOTE not in last_user_message(openai.requests[-1])
    preview = await request(client, "milk/context", {"sessionId": session_id})
    assert "localNotes" not in preview
