"""End to end, the advisor route (issue 32): the REAL Claude Code CLI on the Messages-API
stand-in writes a three-step plan in its plan mode; the local model (a real HTTP server,
scripted) does steps 1 and 3 and breaks the file in step 2, which Claude then does alone.
One turn, three steps and who did each; undo puts every file back; a cancel mid-plan
leaves no process."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from milk_lsp.agents.claude.cli import bundled_cli_path
from tests.e2e.conftest import Env, Harness, MilkClient, request
from tests.fakes.anthropic_api import FakeAnthropicAPI

pytestmark = [pytest.mark.e2e, pytest.mark.claude]

if bundled_cli_path() is None:  # pragma: no cover - the wheel always ships it
    pytest.skip("claude-agent-sdk's bundled CLI is missing", allow_module_level=True)

FILES = {"a.py": "X = 1\n", "b.py": "Y = 2\n", "c.py": "Z = 3\n"}
PLAN = """1. In `a.py`, change `X = 1` to `X = 10`.
2. In `b.py`, change `Y = 2` to `Y = 20`.
3. In `c.py`, change `Z = 3` to `Z = 30`."""


def edit(path: str, old: str, new: str) -> dict[str, Any]:
    return {
        "tool_calls": [
            {"name": "edit_file", "arguments": {"path": path, "old_text": old, "new_text": new}}
        ]
    }


def tool(name: str, **tool_input: Any) -> dict[str, Any]:
    return {"tool_use": {"name": name, "input": tool_input}}


async def advisor_client(harness: Harness, env: Env) -> tuple[MilkClient, str]:
    for name, text in FILES.items():
        (env.workspace / name).write_text(text)
    client = await harness.start()
    session = await request(client, "milk/session/new", {"workspaceFolder": env.workspace.as_uri()})
    return client, session["sessionId"]


async def test_claude_plans_the_local_model_does_and_claude_does_the_failed_step(
    harness: Harness, claude_env: Env, api: FakeAnthropicAPI, openai
) -> None:
    env = claude_env
    client, session_id = await advisor_client(harness, env)
    client.permission_answers.extend(["allow_once"] * 6)
    api.enqueue({"text": PLAN})  # the plan, in plan mode
    api.enqueue(  # step 2, Claude alone (the resumed conversation)
        tool(
            "Edit", file_path=str(env.workspace / "b.py"), old_string="Y = 2", new_string="Y = 20"
        ),
        {"text": "Step 2 is done."},
    )
    openai.set_script(
        [
            edit("a.py", "X = 1", "X = 10"),
            {"text": "Step 1 done."},
            edit("b.py", "Y = 2", "Y = (20"),  # does not parse
            {"text": "Step 2 done."},
            edit("c.py", "Z = 3", "Z = 30"),
            {"text": "Step 3 done."},
        ]
    )
    result = await request(
        client,
        "milk/chat",
        {
            "sessionId": session_id,
            "text": "Multiply the three constants by ten.",
            "route": "advise",
        },
    )
    assert result["stopReason"] == "end_turn", result
    assert [(s["status"], s["agent"]) for s in result["plan"]] == [
        ("completed", "local"),
        ("completed", "claude"),
        ("completed", "local"),
    ]
    assert [s["content"] for s in result["plan"]] == [line[3:] for line in PLAN.splitlines()]
    for name, want in {"a.py": "X = 10\n", "b.py": "Y = 20\n", "c.py": "Z = 30\n"}.items():
        assert (env.workspace / name).read_text() == want, name

    # Claude was asked for a plan only (it planned in its plan mode, see the argv test)
    main = [r["body"] for r in api.requests if r["main"]]
    assert "plan only" in json.dumps(main[0]["messages"])
    assert "could not do step 2" in json.dumps(main[-1]["messages"])  # the step, alone
    # the checklist streamed as `plan` updates; the step Claude took is marked as Claude's
    updates = client.turn_updates(result["turnId"])
    plans = [u["steps"] for u in updates if u["kind"] == "plan"]
    assert plans[0] == [{"content": s["content"], "status": "pending"} for s in result["plan"]]
    assert any(p[1] == {**p[1], "status": "in_progress", "agent": "claude"} for p in plans)
    assert [u["kind"] for u in updates].count("turn_ended") == 1

    # one turn in the session, with the plan and who did each step
    got = await request(client, "milk/session/get", {"sessionId": session_id})
    assert {t["turnId"] for t in got["turns"]} == {result["turnId"]}
    [info] = got["turnInfo"]
    assert [(s["status"], s["agent"]) for s in info["plan"]] == [
        ("completed", "local"),
        ("completed", "claude"),
        ("completed", "local"),
    ]
    # milk/stats counts the advisor turn, who did its steps and what Claude cost on them
    stats = await request(client, "milk/stats", {"workspaceFolder": env.workspace.as_uri()})
    advisor = stats["advisor"]
    assert (advisor["turns"], advisor["stepsLocal"], advisor["stepsClaude"]) == (1, 2, 1)
    assert advisor["stepsFailed"] == 0
    assert stats["claudeCostUsd"] == pytest.approx(
        advisor["planCostUsd"] + advisor["stepsCostUsd"], abs=1e-6
    )
    assert "Advisor: 1 turn, 3 steps (2 done locally, 1 by Claude)" in stats["text"]
    # its changes are one turn's: listed together, undone together
    changes = await request(
        client, "milk/turn/changes", {"sessionId": session_id, "turnId": result["turnId"]}
    )
    assert sorted(c["uri"].rsplit("/", 1)[1] for c in changes["changes"]) == [
        "a.py",
        "b.py",
        "c.py",
    ]
    await request(client, "milk/turn/undo", {"sessionId": session_id, "turnId": result["turnId"]})
    for name, text in FILES.items():
        assert (env.workspace / name).read_text() == text, name


async def test_cancel_mid_plan_stops_the_step_and_leaves_no_process(
    harness: Harness, claude_env: Env, api: FakeAnthropicAPI, openai
) -> None:
    env = claude_env
    client, session_id = await advisor_client(harness, env)
    client.permission_answers.extend(["allow_once"] * 3)
    api.enqueue({"text": PLAN})
    openai.set_script(
        [
            edit("a.py", "X = 1", "X = 10"),
            {"text": "Step 1 done."},
            {"text": "Working on step 2 slowly", "stall": 30, "stall_after": 1},
        ]
    )
    chat = asyncio.ensure_future(
        request(
            client,
            "milk/chat",
            {"sessionId": session_id, "text": "Multiply the constants by ten.", "route": "advise"},
        )
    )
    await client.wait_for_update(
        lambda u: u["kind"] == "plan" and u["steps"][1]["status"] == "in_progress", 60
    )
    for _ in range(100):
        if openai.open_streams:
            break
        await asyncio.sleep(0.05)
    assert await request(client, "milk/cancel", {"sessionId": session_id}) == {"cancelled": True}
    result = await asyncio.wait_for(chat, 10)
    assert result["stopReason"] == "cancelled"
    assert [s["status"] for s in result["plan"]] == ["completed", "in_progress", "pending"]
    assert openai.wait_for_disconnects(1, timeout=5)
    assert (env.workspace / "a.py").read_text() == "X = 10\n"  # step 1 stays, undo can take it
    assert (env.workspace / "c.py").read_text() == FILES["c.py"]
    # nothing runs any more: the session takes the next turn
    assert await request(client, "milk/cancel", {"sessionId": session_id}) == {"cancelled": False}
