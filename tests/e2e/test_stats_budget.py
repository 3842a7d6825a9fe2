"""End to end: the routing numbers and Claude's daily budget. The real server, the scripted
model server and the REAL Claude Code CLI on the Messages-API stand-in.

A scripted mix (answered locally, local edits kept and undone, a hand-off on a signal, the
model's own escalation, the user's) is counted by `milk/stats`; with `claude.budgetUsd`
reached, milk asks before Claude starts: "Stop here" ends the turn `budget_reached` with the
figures (a hand-off keeps the local answer), "Go on once" runs Claude that once.
"""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.e2e.conftest import Env, Harness, MilkClient, request
from tests.e2e.test_escalation import no_leftovers, session_of
from tests.fakes.anthropic_api import FakeAnthropicAPI
from tests.fakes.openai_server import FakeOpenAIServer

pytestmark = [pytest.mark.e2e, pytest.mark.claude]

READ = {"name": "read_file", "arguments": {"path": "hello.py"}}
BAD_EDIT = {
    "name": "edit_file",
    "arguments": {"path": "hello.py", "old_text": "def hello():", "new_text": "def hi():"},
}
ASK = "rename greet to hello_world"
LOCAL_KEPT = "Run sed yourself to rename it."


def edit(old: str, new: str) -> dict[str, Any]:
    return {
        "name": "edit_file",
        "arguments": {"path": "hello.py", "old_text": old, "new_text": new},
    }


async def chat(client: MilkClient, session_id: str, text: str, **extra: Any) -> dict[str, Any]:
    params = {"sessionId": session_id, "text": text, **extra}
    result: dict[str, Any] = await request(client, "milk/chat", params)
    return result


async def escalate(client: MilkClient, session_id: str, text: str) -> dict[str, Any]:
    result: dict[str, Any] = await request(
        client, "milk/escalate", {"sessionId": session_id, "text": text}
    )
    return result


async def test_stats_count_a_scripted_mix_of_turns(
    harness: Harness, claude_env: Env, api: FakeAnthropicAPI, openai: FakeOpenAIServer
) -> None:
    claude_env.settings["local"]["handOff"] = "auto"
    client = await harness.start()
    session_id = await session_of(client, claude_env)

    openai.enqueue({"text": "Hello!"})
    result = await chat(client, session_id, "say hello")
    assert (result["agent"], result["stopReason"]) == ("local", "end_turn"), result

    client.permission_answers = ["allow_once", "allow_once"]
    openai.enqueue({"tool_calls": [edit("'hello'", "'hi'")]}, {"text": "Changed it."})
    kept = await chat(client, session_id, "make the greeting 'hi'", route="local")
    openai.enqueue({"tool_calls": [edit("'hi'", "'hey'")]}, {"text": "Changed it again."})
    undone = await chat(client, session_id, "make the greeting 'hey'", route="local")
    assert kept["changes"] and undone["changes"], (kept, undone)
    ids = {"sessionId": session_id, "turnId": undone["turnId"]}
    assert (await request(client, "milk/turn/undo", ids))["restored"]

    openai.enqueue({"tool_calls": [READ]}, {"text": ""})  # an empty reply: handed off
    api.enqueue({"text": "Claude renamed it."})
    result = await chat(client, session_id, ASK)
    assert result["escalated"]["signal"] == "empty_reply", result

    openai.enqueue(
        {"tool_calls": [READ]},
        {
            "text": "Handing over.",
            "tool_calls": [{"name": "escalate_to_claude", "arguments": {"reason": "too big"}}],
        },
    )
    api.enqueue({"text": "Claude did the big one."})
    result = await chat(client, session_id, "split hello.py into modules")
    assert result["escalated"]["by"] == "agent", result

    api.enqueue({"text": "Claude took it from here."})
    result = await escalate(client, session_id, "take it from here")
    assert (result["agent"], result["stopReason"]) == ("claude", "end_turn"), result
    await chat(client, session_id, "back to you", route="local")  # leaves the escalation
    openai.requests.clear()

    stats = await request(client, "milk/stats", {"workspaceFolder": claude_env.workspace.as_uri()})
    assert await request(client, "milk/stats", {}) == stats  # the first workspace folder
    assert stats["workspaceFolder"] == claude_env.workspace.resolve().as_uri()
    expected = {
        "model": "fake-model",
        "answeredLocally": 4,
        "handedOff": 2,
        "handedOffBySignal": {"empty_reply": 1, "escalate_to_claude": 1},
        "escalatedByUser": 1,
        "localEditsKept": 1,
        "localEditsUndone": 1,
    }
    assert stats["byModel"] == [expected]
    assert stats["total"] == {**expected, "model": ""}
    assert stats["claudeTurns"] == 3
    cost = stats["claudeCostUsd"]
    assert cost > 0
    average = stats["averageClaudeTurnCostUsd"]
    assert average == pytest.approx(cost / 3, abs=1e-6)
    assert stats["estimatedSavedUsd"] == pytest.approx(average * 4, abs=1e-5)
    assert stats["estimatedAllClaudeCostUsd"] == pytest.approx(cost + average * 4, abs=1e-5)
    assert stats["budget"] == {
        "limitUsd": None,
        "spentTodayUsd": pytest.approx(cost, abs=1e-6),
        "day": date.today().isoformat(),
    }
    text = stats["text"]
    assert "Local model (fake-model): 4 of 7 turns answered locally" in text
    assert "2 handed to Claude (1 an empty reply, 1 the model asked)" in text
    assert "1 sent to Claude by you" in text
    assert "Turns with local edits: 1 kept, 1 undone." in text
    assert "no daily budget set" in text

    with pytest.raises(JsonRpcException) as refused:
        await request(client, "milk/stats", {"workspaceFolder": "file:///no/such/folder"})
    assert "workspace folder not found" in str(refused.value)
    await no_leftovers(claude_env)


async def test_budget_stops_claude_and_goes_on_once(
    harness: Harness, claude_env: Env, api: FakeAnthropicAPI, openai: FakeOpenAIServer
) -> None:
    limit = 0.000001  # the first Claude turn costs more: after it, the budget is reached
    claude_env.settings["claude"]["budgetUsd"] = limit
    claude_env.settings["local"]["handOff"] = "auto"
    client = await harness.start()
    session_id = await session_of(client, claude_env)

    api.enqueue({"text": "First answer."})
    first = await escalate(client, session_id, "first")
    assert first["stopReason"] == "end_turn", first
    assert [q for q in client.permission_requests if q["tool"] == "claude_budget"] == []
    sent = len(api.main_requests())

    # the user's escalation: asked, declined; Claude is not started
    client.permission_answers = ["deny"]
    stopped = await escalate(client, session_id, "second")
    assert (stopped["agent"], stopped["stopReason"]) == ("claude", "error"), stopped
    assert stopped["error"]["reason"] == "budget_reached"
    message = stopped["error"]["message"]
    assert "daily budget for this workspace is reached" in message
    assert "spent on Claude today" in message and date.today().isoformat() in message
    assert "raise claude.budgetUsd in milk's config.json (" in message  # a plain LSP door
    [question] = client.permission_requests
    assert question["tool"] == "claude_budget" and question["agent"] == "claude"
    assert [o["label"] for o in question["options"]] == ["Go on once", "Stop here"]
    assert question["input"]["limitUsd"] == limit
    assert question["input"]["spentTodayUsd"] >= limit
    assert "Go on with Claude for this turn anyway?" in question["description"]
    assert len(api.main_requests()) == sent
    assert client.kinds(stopped["turnId"])[-2:] == ["notice", "turn_ended"]
    assert stopped["nextRoute"]["agent"] == "local", "a stopped escalation does not stick"

    # a hand-off stopped by the budget keeps the local answer
    client.permission_answers = ["deny"]
    # (the failed edit gets one request to redo it, which the model declines)
    openai.enqueue({"tool_calls": [BAD_EDIT]}, {"text": LOCAL_KEPT}, {"text": "I still cannot."})
    handed = await chat(client, session_id, ASK)
    assert handed["stopReason"] == "error" and handed["error"]["reason"] == "budget_reached"
    assert handed["text"] == f"{LOCAL_KEPT}\n\nI still cannot.", handed
    assert len(api.main_requests()) == sent

    # "Go on once": Claude runs this turn
    client.permission_answers = ["allow_once"]
    api.enqueue({"text": "Third answer."})
    third = await escalate(client, session_id, "third")
    assert third["stopReason"] == "end_turn", third
    assert third["text"] == "Third answer."
    notices = [u["message"] for u in client.turn_updates(third["turnId"]) if u["kind"] == "notice"]
    assert any("Going on with Claude once past the budget" in n for n in notices), notices
    assert [q["tool"] for q in client.permission_requests] == ["claude_budget"] * 3

    stats = await request(client, "milk/stats", {})
    assert stats["claudeTurns"] == 2
    assert stats["total"]["escalatedByUser"] == 2  # the stopped one never reached Claude
    assert stats["total"]["answeredLocally"] == 1  # the stopped hand-off kept its answer
    assert stats["total"]["handedOff"] == 0
    assert stats["budget"]["limitUsd"] == limit
    assert stats["budget"]["spentTodayUsd"] == pytest.approx(stats["claudeCostUsd"], abs=1e-6)
    assert "is reached" in stats["text"]
    await no_leftovers(claude_env)


async def test_a_resumed_claude_turn_costs_its_own_usage_once(
    harness: Harness, claude_env: Env, api: FakeAnthropicAPI
) -> None:
    """The CLI's `total_cost_usd` is the conversation's running total on `--resume`
    (issue 30: $0.0055, $0.0111, $0.0166 for three identical turns): each turn shows what
    it cost alone, and the stats and the budget add each once."""
    client = await harness.start()
    session_id = await session_of(client, claude_env)
    costs: list[float] = []
    for number in range(3):
        api.enqueue({"text": f"Claude answered {number}."})
        result = await escalate(client, session_id, f"question {number}")
        assert (result["agent"], result["stopReason"]) == ("claude", "end_turn"), result
        costs.append(result["usage"]["costUsd"])
    assert len(api.main_requests()) >= 3
    assert costs[0] > 0
    assert costs[1] == pytest.approx(costs[0], rel=0.25), costs  # not twice the first
    assert costs[2] == pytest.approx(costs[0], rel=0.25), costs  # nor three times
    stats = await request(client, "milk/stats", {"workspaceFolder": claude_env.workspace.as_uri()})
    assert stats["claudeTurns"] == 3
    assert stats["claudeCostUsd"] == pytest.approx(sum(costs), abs=1e-9)
    assert stats["budget"]["spentTodayUsd"] == pytest.approx(sum(costs), abs=1e-9)
    await no_leftovers(claude_env)
