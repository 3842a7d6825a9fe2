"""The Claude part of a turn: plan the hand-off context, run Claude Code, keep the books.

ADR 0004 bookkeeping lives here: the conversation id captured from the stream, the hash
of the last `<milk-context>` block, when the instructions last reached Claude, the brief
cleared once delivered, and the fallback to a fresh start (with the full context) when
Claude Code rejects the `--resume` id.
"""

from __future__ import annotations

import logging
from contextlib import aclosing
from typing import TYPE_CHECKING, Literal

from milk_lsp.agents.base import ClaudeSessionStarted, FailureReason, TurnDone, TurnFailed
from milk_lsp.context import ContextMode, ContextPlan
from milk_lsp.sessions.bricks import ends_with_question
from milk_lsp.sessions.model import Agent, Session, SessionState
from milk_lsp.turn import Turn, TurnHost

if TYPE_CHECKING:
    from milk_lsp.engine import Engine

logger = logging.getLogger(__name__)

StopReason = Literal["end_turn", "cancelled", "error", "max_turns"]


def claude_prompt_for_escalate(current_need: str) -> str:
    """What Claude is asked when the user escalates without typing anything."""
    if current_need:
        return f"Please take over and carry on with the current goal: {current_need}"
    return "Please take over and carry on with what the session context above describes."


class EscalationBook:
    """Runs Claude for a turn on behalf of the engine."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    async def run(
        self,
        session: Session,
        turn: Turn,
        text: str,
        by: Literal["user", "agent"],
        reason: str,
    ) -> StopReason:
        engine = self._engine
        plan = engine.plan_context(session, by_agent=by == "agent")
        turn.update(
            "escalated",
            by=by,
            reason=reason,
            mode=plan.mode.value,
            contextChars=len(plan.context_file) + len(plan.user_message_prefix),
        )
        session.state = SessionState.ESCALATION
        attempt = await self._attempt(session, turn, text, plan)
        if attempt == "resume_rejected":
            turn.notice(
                "warning",
                "Claude Code no longer knows the previous conversation; starting a fresh one "
                "with the full session context.",
            )
            turn.failure = None
            plan = engine.plan_context(session, by_agent=by == "agent", resume_rejected=True)
            attempt = await self._attempt(session, turn, text, plan)
        if attempt == "end_turn":
            self._after_success(session, turn, plan)
            return "end_turn"
        if attempt == "resume_rejected":  # a fresh start is never rejected as a resume
            turn.failure = turn.failure or (FailureReason.CLAUDE_FAILED, "Claude Code failed")
        if session.state is SessionState.ESCALATION:
            session.state = SessionState.ROUTING
        return "error"

    async def _attempt(
        self, session: Session, turn: Turn, text: str, plan: ContextPlan
    ) -> Literal["end_turn", "error", "resume_rejected"]:
        engine = self._engine
        request = engine.claude_request(session, plan, text)
        previous_id = session.claude_session_id
        if not request.resume:
            # A `--session-id` can be used once: the next new conversation gets another.
            session.next_claude_session_id = ""
            session.claude_session_id = request.session_id
            session.last_resumed_context_hash = ""
        part = turn.part_of(Agent.CLAUDE) or turn.start_part(Agent.CLAUDE)
        host = TurnHost(turn, engine.config.claude.permission_timeout_seconds)
        failure: TurnFailed | None = None
        seen_session = False
        async with aclosing(engine.claude.run(request, host)) as events:
            async for event in events:
                match event:
                    case ClaudeSessionStarted(session_id=claude_id):
                        seen_session = True
                        if claude_id and claude_id != session.claude_session_id:
                            session.claude_session_id = claude_id
                        engine.store.save_session(session)
                    case TurnFailed():
                        failure = event
                    case TurnDone():
                        pass
                    case _:
                        turn.apply(event)
        turn.flush_text()
        if failure is None:
            return "end_turn"
        if failure.resume_rejected and request.resume and part.is_empty:
            return "resume_rejected"
        turn.failure = (failure.reason, failure.message)
        if not request.resume and part.is_empty and not seen_session:
            # Nothing was recorded under the new id: keep the conversation we had.
            session.claude_session_id = previous_id
        return "error"

    def _after_success(self, session: Session, turn: Turn, plan: ContextPlan) -> None:
        part = turn.part_of(Agent.CLAUDE)
        reply = part.text if part is not None else ""
        session.claude_turn_count += 1
        if plan.mode in (ContextMode.FIRST, ContextMode.FRESH) or plan.reinjected_instructions:
            session.instructions_injected_at = session.claude_turn_count
            session.claude_bytes_since_injection = 0
        session.claude_bytes_since_injection += len(reply.encode("utf-8"))
        if plan.block_hash:
            session.last_resumed_context_hash = plan.block_hash
        if plan.delivered_brief:
            session.escalation_brief = ""
        session.need_changed_since_claude = False
        session.local_turns_since_claude = 0
        session.state = (
            SessionState.ESCALATION_WAITING if ends_with_question(reply) else SessionState.ROUTING
        )
