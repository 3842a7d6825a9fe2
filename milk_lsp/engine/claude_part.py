"""The Claude part of a turn: plan the hand-off context, run Claude Code, keep the books.

ADR 0004 bookkeeping lives here: the conversation id captured from the stream, the hash
of the last `<milk-context>` block, when the instructions last reached Claude, the brief
cleared once delivered, and the fallback to a fresh start (with the full context) when
Claude Code rejects the `--resume` id.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from contextlib import aclosing
from dataclasses import replace
from pathlib import Path
from typing import Literal

from milk_lsp import wire
from milk_lsp.agents.base import ClaudeSessionStarted, FailureReason, TurnDone, TurnFailed
from milk_lsp.agents.claude.agent import ClaudeAgent
from milk_lsp.agents.claude.cli import resolve_cli
from milk_lsp.agents.claude.command import (
    CONTEXT_FILE_PLACEHOLDER,
    ClaudeSettings,
    ClaudeTurnRequest,
    McpServer,
    build_argv,
)
from milk_lsp.config import ClaudeConfig
from milk_lsp.doors import LSP, Door
from milk_lsp.engine import budget
from milk_lsp.engine.agent_host import TurnHost
from milk_lsp.engine.turn import Turn
from milk_lsp.prompts.context import (
    ContextInputs,
    ContextMode,
    ContextPlan,
    plan_escalation,
)
from milk_lsp.sessions.bricks import ends_with_question
from milk_lsp.sessions.model import Agent, Session, SessionState, generate_nonce
from milk_lsp.sessions.service import Sessions
from milk_lsp.wire import StopReason

logger = logging.getLogger(__name__)


def claude_settings(cfg: ClaudeConfig) -> ClaudeSettings:
    return ClaudeSettings(
        path=cfg.path,
        model=cfg.model,
        allowed_tools=tuple(cfg.allowed_tools),
        add_dirs=tuple(cfg.add_dirs),
        skip_permissions=cfg.skip_permissions,
    )


def claude_path(cfg: ClaudeConfig) -> str | None:
    """The `claude` CLI these settings run (None: not found)."""
    return resolve_cli(claude_settings(cfg)).path


def claude_prompt_for_escalate(current_need: str) -> str:
    """What Claude is asked when the user escalates without typing anything."""
    if current_need:
        return f"Please take over and carry on with the current goal: {current_need}"
    return "Please take over and carry on with what the session context above describes."


class ClaudePart:
    """Runs Claude for a turn, and previews what the next escalation would hand it."""

    def __init__(
        self, sessions: Sessions, claude: ClaudeAgent, door: Callable[[], Door] = lambda: LSP
    ) -> None:
        """`door`: how the front door names settings (the budget's failure names its own)."""
        self._sessions = sessions
        self._claude = claude
        self._door = door
        self.agent = claude
        """The Claude Code driver (the advisor's brief requests run on it too)."""
        self.mcp_servers: dict[str, tuple[McpServer, ...]] = {}
        """By session id: the MCP servers an ACP client handed for that session."""

    async def context_inputs(
        self, session: Session, *, resume_rejected: bool = False, in_turn: bool = False
    ) -> ContextInputs:
        """`in_turn`: the running turn's user record is already stored (counted in
        `record_count`); a preview counts the turn about to run itself, so both agree."""
        """What the ADR 0004 builders need, from the session and the workspace's percepts."""
        if not session.escalation_nonce:  # a session stored before nonces existed
            session.escalation_nonce = generate_nonce()
            await self._sessions.save(session)
        percepts = await self._sessions.percepts(session.workspace_folder)
        need_ago = None
        if session.current_need and session.current_need_set_at:
            # Records since the need's user record, counting the turn about to run.
            upcoming = 0 if in_turn else 1
            need_ago = session.record_count + upcoming - (session.current_need_set_at - 1)
        return ContextInputs(
            nonce=session.escalation_nonce,
            percepts=tuple(percepts),
            current_need=session.current_need,
            need_records_ago=need_ago,
            escalation_brief=session.escalation_brief,
            last_local_summary=session.last_local_summary,
            last_claude_summary=session.last_claude_summary,
            claude_session_id=session.claude_session_id,
            waiting_on_claude=session.state is SessionState.ESCALATION_WAITING,
            local_turns_since_claude=session.local_turns_since_claude,
            need_changed_since_claude=session.need_changed_since_claude,
            resume_rejected=resume_rejected,
            last_resumed_context_hash=session.last_resumed_context_hash,
            claude_turns_since_injection=session.claude_turn_count
            - session.instructions_injected_at,
            claude_bytes_since_injection=session.claude_bytes_since_injection,
        )

    async def plan(
        self,
        session: Session,
        *,
        by_agent: bool,
        resume_rejected: bool = False,
        in_turn: bool = False,
    ) -> ContextPlan:
        inputs = await self.context_inputs(
            session, resume_rejected=resume_rejected, in_turn=in_turn
        )
        return plan_escalation(inputs, by_agent=by_agent)

    async def request(
        self, session: Session, plan: ContextPlan, prompt: str, cfg: ClaudeConfig
    ) -> ClaudeTurnRequest:
        """The Claude run for `plan`; a new conversation uses the session's next id, which is
        kept until a run uses it so that `milk/context` previews the argv exactly."""
        fresh = plan.mode in (ContextMode.FIRST, ContextMode.FRESH)
        if fresh:
            await self.reserve_conversation_id(session)
        return ClaudeTurnRequest(
            workspace=Path(session.workspace_folder),
            prompt=plan.user_message_prefix + prompt,
            context_file_text=plan.context_file,
            session_id=session.next_claude_session_id if fresh else session.claude_session_id,
            resume=not fresh,
            settings=claude_settings(cfg),
            mcp_servers=self.mcp_servers.get(session.id, ()),
        )

    async def reserve_conversation_id(self, session: Session) -> None:
        """Give the session the id its next new Claude conversation will use, and save it."""
        if not session.next_claude_session_id:
            session.next_claude_session_id = str(uuid.uuid4())
            await self._sessions.save(session)

    async def preview(
        self, session: Session, reason: str | None, cfg: ClaudeConfig
    ) -> wire.ContextPreview:
        """Exactly what the next escalation would hand Claude, without running anything;
        `reason`: as if the local agent escalated now (its reason becomes the brief, not
        stored)."""
        await self.reserve_conversation_id(session)
        preview_session = session if reason is None else replace(session, escalation_brief=reason)
        plan = await self.plan(preview_session, by_agent=reason is not None)
        request = await self.request(preview_session, plan, "", cfg)
        argv = build_argv(request, claude_path(cfg) or "claude", CONTEXT_FILE_PLACEHOLDER)
        return wire.ContextPreview(
            mode=plan.mode.value,
            argv=argv,
            context_file=plan.context_file,
            user_message_prefix=plan.user_message_prefix,
            chars=wire.ContextChars(
                context_file=len(plan.context_file),
                user_message_prefix=len(plan.user_message_prefix),
            ),
        )

    async def run(
        self,
        session: Session,
        turn: Turn,
        text: str,
        by: Literal["user", "agent", "fallback"],
        reason: str,
    ) -> StopReason:
        plan = await self.plan(session, by_agent=by != "user", in_turn=True)
        turn.update(
            "escalated",
            by=by,
            reason=reason,
            mode=plan.mode.value,
            contextChars=len(plan.context_file) + len(plan.user_message_prefix),
        )
        session.state = SessionState.ESCALATION
        if not await self.within_budget(session, turn):
            if not turn.parts or turn.part.agent is not Agent.CLAUDE:
                turn.start_part(Agent.CLAUDE)  # the turn ends as Claude's, not started
            session.state = SessionState.ROUTING
            return "error"
        attempt = await self._attempt(session, turn, text, plan)
        if attempt == "resume_rejected":
            turn.notice(
                "warning",
                "Claude Code no longer knows the previous conversation; starting a fresh one "
                "with the full session context.",
            )
            turn.failure = None
            plan = await self.plan(
                session, by_agent=by != "user", resume_rejected=True, in_turn=True
            )
            attempt = await self._attempt(session, turn, text, plan)
        if attempt == "end_turn":
            self._after_success(session, turn, plan)
            return "end_turn"
        if attempt == "resume_rejected":  # a fresh start is never rejected as a resume
            turn.failure = turn.failure or (FailureReason.CLAUDE_FAILED, "Claude Code failed")
        if session.state is SessionState.ESCALATION:
            session.state = SessionState.ROUTING
        return "error"

    async def within_budget(self, session: Session, turn: Turn) -> bool:
        """Whether Claude may start: no cap, today's cost below it, or the user goes on once
        past it. Otherwise the turn's failure says so, with the figures."""
        cfg = turn.config.claude
        if cfg.budget_usd is None:
            return True
        spent = await self._sessions.claude_spent_today(session.workspace_folder)
        today = budget.state(cfg.budget_usd, spent)
        if not today.reached:
            return True
        if await budget.ask_go_on(turn, today, cfg.permission_timeout_seconds):
            turn.notice("info", f"Going on with Claude once past the budget: {today.figures()}.")
            return True
        turn.failure = budget.failure(today, self._door())
        return False

    async def _attempt(
        self, session: Session, turn: Turn, text: str, plan: ContextPlan
    ) -> Literal["end_turn", "error", "resume_rejected"]:
        request = await self.request(session, plan, text, turn.config.claude)
        previous_id = session.claude_session_id
        if not request.resume:
            # A `--session-id` can be used once: the next new conversation gets another.
            session.next_claude_session_id = ""
            session.claude_session_id = request.session_id
            session.last_resumed_context_hash = ""
        # Claude's part: the one a rejected resume's retry goes on in, else a new one
        last = turn.parts[-1] if turn.parts else None
        part = (
            last
            if last is not None and last.agent is Agent.CLAUDE
            else turn.start_part(Agent.CLAUDE)
        )
        host = TurnHost(turn, turn.config.claude.permission_timeout_seconds)
        failure: TurnFailed | None = None
        seen_session = False
        async with aclosing(self._claude.run(request, host)) as events:
            async for event in events:
                match event:
                    case ClaudeSessionStarted(session_id=claude_id):
                        seen_session = True
                        if claude_id and claude_id != session.claude_session_id:
                            session.claude_session_id = claude_id
                        await self._sessions.save(session)
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
