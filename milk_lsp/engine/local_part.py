"""The local part of a turn: the local agent's conversation, its events folded into the
turn, and what happens when it fails (the twin of `escalation.py`, the Claude part).

`LocalBook.run` builds the messages (the cache-stable system prompt, the history tail, the
user's text with the session notes), runs the local agent with the workspace tools and
returns what ended the part: an `escalate_to_claude` call, a hand-off signal
(`LocalGaveUp`, also made from a failed request to the model server), or nothing.
`LocalBook.hand_off` then decides, per `local.handOff`, whether Claude takes over; if not,
the turn's failure says why.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, aclosing
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol, TypeVar

from milk_lsp.agents.base import (
    ClaudeSessionStarted,
    EscalationRequested,
    LocalGaveUp,
    LocalSignal,
    TurnDone,
    TurnFailed,
)
from milk_lsp.agents.local.tools import WorkspaceTools
from milk_lsp.agents.local.watch import asks_about_code, asks_for_change
from milk_lsp.config import MilkConfig
from milk_lsp.engine import handoff
from milk_lsp.engine.routing import Plan
from milk_lsp.engine.turn import Turn, TurnHost
from milk_lsp.prompts import local as prompts
from milk_lsp.sessions.model import Agent, Session, SessionState
from milk_lsp.sessions.store import SessionStore

if TYPE_CHECKING:  # httpx loads with the agent, on the first local turn
    from milk_lsp.agents.local.agent import LocalAgent

T = TypeVar("T")
LocalOutcome = EscalationRequested | LocalGaveUp | None


class LocalHost(Protocol):
    """What the local part needs from the engine (`Engine` fits)."""

    config: MilkConfig

    @property
    def store(self) -> SessionStore: ...

    @property
    def local(self) -> LocalAgent: ...

    async def stored(self, action: Callable[[], T]) -> T:
        """A store call in a worker thread, its failure mapped to `storage_failed`."""
        ...

    def claude_path(self) -> str | None: ...

    def local_model(self, turn: Turn) -> AbstractAsyncContextManager[TurnFailed | None]:
        """Held around the local agent's run: its model ready (the embedded one started),
        or why it could not be."""
        ...


@dataclass(frozen=True)
class HandOff:
    """Claude takes over the turn: who decided, the `escalated.reason`, the brief."""

    by: Literal["agent", "fallback"]
    reason: str
    brief: str


class LocalBook:
    """Runs the local agent for a turn on behalf of the engine."""

    def __init__(self, host: LocalHost) -> None:
        self._host = host

    async def run(
        self, session: Session, turn: Turn, text: str, plan: Plan, user_ask: str
    ) -> LocalOutcome:
        """The local agent's part of the turn: its escalation or failure signal, if any.
        `text` is what the model gets (with attachments), `user_ask` what the user typed."""
        host = self._host
        turn.start_part(Agent.LOCAL)
        session.state = SessionState.LOCAL
        percepts = await host.stored(lambda: host.store.percepts(session.workspace_folder))
        history = await host.stored(
            lambda: host.store.recent_turn_records(session.id, prompts.HISTORY_TURNS + 1)
        )
        history = [record for record in history if record.turn_id != turn.turn_id]
        memory_tags = host.config.local.memory_tags
        goal = session.current_need
        if not memory_tags and (not session.current_need or asks_for_change(user_ask)):
            turn.set_need(user_ask)  # no tags from the model: a new request is the goal
            goal = ""  # ...and the request itself says it
        notes = prompts.session_notes(
            session.escalation_nonce, goal, percepts, memory_tags=memory_tags
        )
        system = prompts.local_system_prompt(session.workspace_folder, plan.offer_escalation)
        messages = [
            {"role": "system", "content": system},
            *prompts.history_messages(history),
            {"role": "user", "content": prompts.with_session_notes(text, notes)},
        ]
        tools = WorkspaceTools(
            Path(session.workspace_folder),
            TurnHost(turn, host.config.claude.permission_timeout_seconds),
        )
        outcome: LocalOutcome = None
        async with host.local_model(turn) as not_started:
            if not_started is not None:  # the embedded model could not start
                return handoff.from_model_failure(not_started)
            run = host.local.run(
                messages,
                tools,
                offer_escalation=plan.offer_escalation,
                cut_short=plan.watches_local,
                change_requested=asks_for_change(user_ask),
                about_code=asks_about_code(user_ask),
            )
            async with aclosing(run) as events:
                async for event in events:
                    if isinstance(event, EscalationRequested | LocalGaveUp):
                        outcome = event
                        break
                    if isinstance(event, TurnFailed):
                        outcome = handoff.from_model_failure(event)
                        if outcome is not None:
                            break
                        turn.failure = (event.reason, event.message)
                    elif not isinstance(event, TurnDone | ClaudeSessionStarted):
                        turn.apply(event)
        turn.flush_text()
        if not turn.part.is_empty:
            session.local_turns_since_claude += 1
        return outcome

    async def hand_off(
        self, turn: Turn, plan: Plan, outcome: LocalOutcome, user_ask: str
    ) -> HandOff | None:
        """Whether Claude takes this turn over; when a failure is not handed off, the
        turn's failure says why."""
        if isinstance(outcome, EscalationRequested):
            return HandOff("agent", outcome.reason, outcome.reason)
        if isinstance(outcome, LocalGaveUp) and await self._fallback_wanted(turn, plan, outcome):
            reason = handoff.reason_text(outcome)
            return HandOff("fallback", reason, handoff.brief(outcome, user_ask))
        return None

    async def _fallback_wanted(self, turn: Turn, plan: Plan, gave_up: LocalGaveUp) -> bool:
        host = self._host
        mode = host.config.local.hand_off
        timeout = host.config.claude.permission_timeout_seconds
        if not plan.watches_local:
            kept = ""  # the user chose the local model
        elif mode == "off":
            kept = "Hand-off to Claude is off (local.handOff)."
        elif host.claude_path() is None:
            kept = "Claude Code was not found, so it could not take over."
        elif mode == "auto" or await handoff.ask_user(turn, gave_up, timeout):
            return True
        else:
            kept = "You kept the local answer."
        turn.failure = handoff.failure(gave_up, kept)
        if gave_up.signal is LocalSignal.MODEL_UNREACHABLE and host.claude_path() is not None:
            turn.notice(
                "info",
                "The local model is unreachable; you can still ask Claude (Escalate, or route "
                "claude).",
            )
        return False
