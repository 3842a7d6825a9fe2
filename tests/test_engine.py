"""The engine in process, with its collaborators passed in: routing (a pure table), the
retry when Claude Code rejects a `--resume` id, and how a turn's end maps to the stored
status and the `TurnResult`. A real SQLite store; the agents are scripted stand-ins that
yield the events the real ones do (their own tests drive the real model server and CLI).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import pytest

from milk_lsp.agents.base import (
    AgentEvent,
    ClaudeSessionStarted,
    FailureReason,
    LocalGaveUp,
    LocalSignal,
    TextDelta,
    TurnDone,
    TurnFailed,
)
from milk_lsp.agents.claude.command import ClaudeTurnRequest
from milk_lsp.agents.local.reply.stream import LocalModelError
from milk_lsp.config import MilkConfig
from milk_lsp.engine import Engine
from milk_lsp.engine.routing import Plan, RoutingState, escalate_plan, route_turn
from milk_lsp.sessions.model import Agent, RecordStatus, SessionState
from milk_lsp.sessions.store import SessionStore
from milk_lsp.wire import ChatParams
from tests.test_turn import FakeBridge


class ServerWithoutIntent:
    """The scripted agent's model server: it fails milk's intent request (the loop then
    runs without it, as after a real server's failure)."""

    async def resolve_model(self) -> str:
        raise LocalModelError(FailureReason.LOCAL_UNREACHABLE, "no intent request here")


class ScriptedLocal:
    """Stands in for `LocalAgent`: each turn yields the next scripted events."""

    model_in_use = "scripted-model"

    def __init__(self, *turns: list[AgentEvent]) -> None:
        self.turns = list(turns)
        self.calls: list[dict[str, Any]] = []
        self.client = ServerWithoutIntent()

    async def run(
        self, messages: list[dict[str, Any]], tools: Any, **options: Any
    ) -> AsyncGenerator[AgentEvent, None]:
        self.calls.append({"messages": messages, **options})
        for event in self.turns.pop(0):
            yield event

    async def aclose(self) -> None:
        pass


class ScriptedClaude:
    """Stands in for `ClaudeAgent`: records each run's request, yields scripted events."""

    def __init__(self, *runs: list[AgentEvent]) -> None:
        self.runs = list(runs)
        self.requests: list[ClaudeTurnRequest] = []

    async def run(self, request: ClaudeTurnRequest, host: Any) -> AsyncGenerator[AgentEvent, None]:
        self.requests.append(request)
        for event in self.runs.pop(0):
            yield event


def engine_for(
    tmp_path: Path, local: ScriptedLocal | None = None, claude: ScriptedClaude | None = None
) -> tuple[Engine, FakeBridge]:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    config = MilkConfig.model_validate(
        # provider openai: the scripted local agent, whatever is installed or listening here
        {"claude": {"path": sys.executable}, "local": {"handOff": "auto", "provider": "openai"}}
    )
    bridge = FakeBridge()
    engine = Engine(
        config,
        bridge,
        store=SessionStore(tmp_path / "sessions.sqlite3"),
        local=local,  # type: ignore[arg-type]
        claude=claude,  # type: ignore[arg-type]
    )
    engine.sessions.set_workspaces([str(workspace)])
    return engine, bridge


# ---- routing: the table of protocol.md open detail 5 ------------------------------------------

FRESH = RoutingState(SessionState.ROUTING, user_escalated=False, has_claude_conversation=False)
WAITING = RoutingState(SessionState.ESCALATION_WAITING, False, has_claude_conversation=True)
STICKY = RoutingState(SessionState.ROUTING, user_escalated=True, has_claude_conversation=True)


@pytest.mark.parametrize(
    ("state", "requested", "agent", "reason", "offer"),
    [
        (FRESH, "auto", Agent.LOCAL, "default", True),
        (FRESH, "local", Agent.LOCAL, "user chose the local agent", False),
        (FRESH, "claude", Agent.CLAUDE, "user asked", False),
        (WAITING, "auto", Agent.CLAUDE, "session waiting on Claude", False),
        (STICKY, "auto", Agent.CLAUDE, "session escalated by the user", False),
        (WAITING, "local", Agent.LOCAL, "user chose the local agent", False),
        (STICKY, "local", Agent.LOCAL, "user chose the local agent", False),
    ],
)
def test_routing_table(
    state: RoutingState, requested: Any, agent: Agent, reason: str, offer: bool
) -> None:
    plan, _ = route_turn(state, requested)
    assert (plan.agent, plan.reason, plan.offer_escalation) == (agent, reason, offer)
    assert plan.watches_local is (agent is Agent.LOCAL and requested == "auto")


def test_routing_local_takes_the_escalation_back_and_claude_makes_it_stick() -> None:
    _, after = route_turn(STICKY, "local")
    assert after.user_escalated is False
    _, after = route_turn(WAITING, "local")
    assert after.state is SessionState.ROUTING
    _, after = route_turn(FRESH, "claude")
    assert after.user_escalated is True
    _, after = route_turn(FRESH, "auto")
    assert after == FRESH, "auto changes nothing"
    assert escalate_plan("hard") == Plan(
        Agent.CLAUDE, "claude", "user asked", False, "user", "hard"
    )


def test_waiting_without_a_claude_conversation_stays_local() -> None:
    plan, _ = route_turn(RoutingState(SessionState.ESCALATION_WAITING, False, False), "auto")
    assert plan.agent is Agent.LOCAL


# ---- the resume-rejected retry ---------------------------------------------------------------


async def test_a_rejected_resume_is_retried_as_a_fresh_conversation(tmp_path: Path) -> None:
    claude = ScriptedClaude(
        [ClaudeSessionStarted("conv-1"), TextDelta("first"), TurnDone()],
        [TurnFailed(FailureReason.CLAUDE_FAILED, "no conversation found", resume_rejected=True)],
        [ClaudeSessionStarted("conv-2"), TextDelta("fresh answer"), TurnDone()],
    )
    engine, bridge = engine_for(tmp_path, claude=claude)
    first = await engine.chat(ChatParams(text="hi", route="claude"))
    assert first.stop_reason == "end_turn"
    second = await engine.chat(ChatParams(session_id=first.session_id, text="and?"))
    assert second.stop_reason == "end_turn", second
    assert second.text == "fresh answer"
    resumed, fresh = claude.requests[1:]
    assert resumed.resume and resumed.session_id == "conv-1"
    assert not fresh.resume and fresh.session_id != "conv-1"
    assert fresh.context_file_text, "the fresh start carries the full context"
    warnings = [u["message"] for u in bridge.of_kind("notice") if u["severity"] == "warning"]
    assert any("no longer knows the previous conversation" in w for w in warnings)
    session = await engine.sessions.get(first.session_id)
    assert session.claude_session_id == "conv-2"


# ---- the end of a turn -----------------------------------------------------------------------


async def test_end_turn_is_stored_ok(tmp_path: Path) -> None:
    engine, bridge = engine_for(tmp_path, local=ScriptedLocal([TextDelta("fine"), TurnDone()]))
    result = await engine.chat(ChatParams(text="hi"))
    assert (result.stop_reason, result.agent, result.error) == ("end_turn", "local", None)
    assert bridge.kinds()[0] == "turn_started" and bridge.kinds()[-1] == "turn_ended"
    records = await engine.sessions.records(result.session_id, 5)
    assert [r.status for r in records] == [RecordStatus.OK, RecordStatus.OK]


async def test_a_failure_is_stored_error_with_its_reason_and_notice(tmp_path: Path) -> None:
    local = ScriptedLocal(
        [TextDelta("partial"), TurnFailed(FailureReason.INTERNAL, "the agent broke")]
    )
    engine, bridge = engine_for(tmp_path, local=local)
    result = await engine.chat(ChatParams(text="hi", route="local"))
    assert result.stop_reason == "error"
    assert result.error is not None and result.error.reason == "internal"
    assert result.text == "partial", "the text so far is kept"
    assert bridge.kinds()[-2:] == ["notice", "turn_ended"]
    records = await engine.sessions.records(result.session_id, 5)
    assert {r.status for r in records} == {RecordStatus.ERROR}


async def test_a_local_signal_on_route_local_ends_error_never_end_turn(tmp_path: Path) -> None:
    gave_up = LocalGaveUp(LocalSignal.ROUND_LIMIT, "still calling tools after 2 rounds")
    engine, _ = engine_for(tmp_path, local=ScriptedLocal([TextDelta("hm"), gave_up]))
    result = await engine.chat(ChatParams(text="hi", route="local"))
    assert result.stop_reason == "error"
    assert result.error is not None and result.error.reason == "tool_rounds_exceeded"
    assert result.escalated is None


async def test_a_local_signal_on_auto_is_handed_to_claude(tmp_path: Path) -> None:
    gave_up = LocalGaveUp(LocalSignal.EMPTY_REPLY, "the local model returned an empty reply")
    claude = ScriptedClaude([ClaudeSessionStarted("c"), TextDelta("Claude here"), TurnDone()])
    engine, _ = engine_for(tmp_path, local=ScriptedLocal([gave_up]), claude=claude)
    result = await engine.chat(ChatParams(text="what is x?"))
    assert result.stop_reason == "end_turn"
    assert result.escalated is not None and result.escalated.by == "fallback"
    assert result.escalated.signal == "empty_reply"
    assert not result.escalated.reason.startswith("empty_reply")  # words, not the id
    assert "milk handed it to you (empty_reply)" in claude.requests[0].context_file_text


async def test_a_cancel_is_stored_cancelled(tmp_path: Path) -> None:
    streaming = asyncio.Event()

    class Hanging(ScriptedLocal):
        async def run(
            self, messages: list[dict[str, Any]], tools: Any, **options: Any
        ) -> AsyncGenerator[AgentEvent, None]:
            yield TextDelta("thinking…")
            streaming.set()
            await asyncio.sleep(3600)

    engine, bridge = engine_for(tmp_path, local=Hanging())
    task = asyncio.create_task(engine.chat(ChatParams(text="hi")))
    await asyncio.wait_for(streaming.wait(), 10)
    session_id = bridge.updates[0]["sessionId"]
    assert await engine.cancel(session_id) is True
    result = await task
    assert result.stop_reason == "cancelled"
    assert bridge.kinds()[-1] == "turn_ended"
    records = await engine.sessions.records(session_id, 5)
    assert {r.status for r in records} == {RecordStatus.CANCELLED}


async def test_a_cancel_while_the_message_is_being_stored_still_ends_the_turn(
    tmp_path: Path,
) -> None:
    """The store call runs in a worker thread; a cancel then waits for it and the claimed
    turn ends properly (turn_ended, stored cancelled, the claim released)."""
    import threading

    engine, bridge = engine_for(tmp_path, local=ScriptedLocal([TextDelta("x"), TurnDone()]))
    store = engine.sessions.store
    entered, release = threading.Event(), threading.Event()
    real_begin = store.begin_turn

    def slow_begin(*args: Any) -> None:
        entered.set()
        release.wait(10)
        real_begin(*args)

    store.begin_turn = slow_begin  # type: ignore[method-assign]
    session = await engine.sessions.new(None, None)
    task = asyncio.create_task(engine.chat(ChatParams(session_id=session.id, text="hi")))
    await asyncio.to_thread(entered.wait, 10)
    cancel = asyncio.create_task(engine.cancel(session.id))
    await asyncio.sleep(0.1)
    release.set()
    assert await cancel is True
    result = await task
    assert result.stop_reason == "cancelled"
    assert bridge.kinds()[-1] == "turn_ended"
    store.begin_turn = real_begin  # type: ignore[method-assign]
    again = await engine.chat(ChatParams(session_id=session.id, text="again"))
    assert again.stop_reason in ("end_turn", "error"), "the session is not left claimed"
