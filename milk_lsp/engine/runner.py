"""`TurnRunner`: the spine of one turn, from the stored question to the stored answer.

begin (the user's message stored, the session claimed) ‖ checkpoint → the local part →
its hand-off → the Claude part → finish (the turn's changes, everything stored in one
transaction with the rebuilt bricks, `turn_ended`). Each part hands control back by
returning; events reach the client through the `Turn`. Whatever happens, a turn that was
claimed ends with `turn_ended` and its claim released.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from contextlib import suppress
from pathlib import Path
from typing import Any, Literal, TypeVar

from milk_lsp.agents.base import FailureReason
from milk_lsp.agents.local.tool_specs import EDIT_FILE
from milk_lsp.changes.book import Before, ChangeBook
from milk_lsp.changes.tracker import TurnChange
from milk_lsp.config import MilkConfig
from milk_lsp.engine.advisor import Advisor
from milk_lsp.engine.claude_part import ClaudePart
from milk_lsp.engine.local.part import LocalPart
from milk_lsp.engine.routing import Plan
from milk_lsp.engine.turn import AgentPart, ClientBridge, Turn
from milk_lsp.engine.views import next_route_of
from milk_lsp.errors import EngineError
from milk_lsp.sessions.model import (
    Agent,
    RecordStatus,
    Role,
    Session,
    SessionState,
    TurnRecord,
    generate_nonce,
)
from milk_lsp.sessions.service import Sessions
from milk_lsp.sessions.stats import TurnRoute, hand_off_signal, route_kind
from milk_lsp.system.redact import redact
from milk_lsp.wire import (
    ChangeSummary,
    Escalated,
    RequestErrorReason,
    StopReason,
    TurnError,
    TurnResult,
    Usage,
)

logger = logging.getLogger(__name__)

T = TypeVar("T")

PROGRESS_CREATE_SECONDS = 5.0
"""How long the client may take to accept a work-done progress token."""

_RECORD_STATUS = {
    "end_turn": RecordStatus.OK,
    "max_turns": RecordStatus.OK,
    "cancelled": RecordStatus.CANCELLED,
    "error": RecordStatus.ERROR,
}


class TurnRunner:
    def __init__(
        self,
        bridge: ClientBridge,
        sessions: Sessions,
        changes: ChangeBook,
        local: LocalPart,
        claude: ClaudePart,
        advisor: Advisor,
        publish: Callable[[str, dict[str, Any]], None] | None = None,
    ) -> None:
        """`advisor` runs the advisor route's turns (Claude plans, the local model does);
        `publish(workspace, update)` shows each update to the other doors too."""
        self._advisor = advisor
        self._bridge = bridge
        self._publish = publish
        self._sessions = sessions
        self._changes = changes
        self._local = local
        self._claude = claude
        self._allowed_tools: dict[str, set[str]] = {}
        """Tools the user allowed for the rest of a session, per session id."""

    def forget(self, session_id: str) -> None:
        """A deleted session: its allowed tools go with it."""
        self._allowed_tools.pop(session_id, None)

    async def run(
        self,
        session: Session,
        turn_id: str,
        text: str,
        plan: Plan,
        display_text: str,
        config: MilkConfig,
    ) -> TurnResult:
        """`text` is what the agents get (with attachments), `display_text` what the user
        typed; `config` the settings the whole turn runs with."""
        if not session.escalation_nonce:
            session.escalation_nonce = generate_nonce()
        user_record = TurnRecord(turn_id, Role.USER, plan.agent, display_text)
        before, warning, cancelled_at_start = await self._begin(session, user_record)
        turn = Turn(
            session.id,
            turn_id,
            session.escalation_nonce,
            self._bridge,
            workspace=Path(session.workspace_folder),
            session=session,
            user_record=user_record,
            config=config,
        )
        turn.allowed_tools = self._allowed_tools.setdefault(session.id, set())
        if self._publish is not None:
            turn.publish = functools.partial(self._publish, session.workspace_folder)
        turn.started(plan.agent, plan.route, plan.reason, warning)
        if cancelled_at_start:
            return await self._finish(session, turn, plan, "cancelled", None, before)
        stop, escalated = await self._parts(session, turn, text, plan, display_text)
        return await self._finish(session, turn, plan, stop, escalated, before)

    async def _begin(
        self, session: Session, user_record: TurnRecord
    ) -> tuple[Before | None, str | None, bool]:
        """Store the user's message while the workspace is checkpointed (what undo goes back
        to). A cancel meanwhile lets both finish: the claimed turn must still end properly,
        so it is reported (the third value) instead of raised. A failure to store raises
        `EngineError` and no turn starts."""
        begin = asyncio.ensure_future(self._sessions.begin_turn(session, user_record))
        checkpoint = asyncio.ensure_future(self._changes.before_turn(session))
        cancelled = False
        try:
            try:
                await asyncio.shield(begin)
            except asyncio.CancelledError:
                cancelled = True
                await _uncancellable(begin)
        except EngineError as exc:
            checkpoint.cancel()
            if cancelled:
                raise asyncio.CancelledError from exc
            raise
        try:
            before, warning = await asyncio.shield(checkpoint)
        except asyncio.CancelledError:
            cancelled = True
            before, warning = await _uncancellable(checkpoint)
        return before, warning, cancelled

    async def _parts(
        self, session: Session, turn: Turn, text: str, plan: Plan, display_text: str
    ) -> tuple[StopReason, Escalated | None]:
        """The agents' parts of the turn: how it stopped, and the escalation if any."""
        escalated: Escalated | None = None
        by: Literal["user", "agent", "fallback"]
        try:
            await self._progress_begin(turn, plan.agent)
            if plan.advises:
                escalated = Escalated(by="user", reason=plan.escalation_reason)
                return await self._advisor.run(session, turn, text, plan, display_text), escalated
            if plan.agent is Agent.LOCAL:
                outcome = await self._local.run(session, turn, text, plan, display_text)
                hand_off = await self._local.hand_off(session, turn, plan, outcome, display_text)
                if hand_off is None:
                    return ("error" if turn.failure else "end_turn"), None
                by, reason, signal = hand_off.by, hand_off.reason, hand_off.signal
                # a progress title cannot change: the local one ends, Claude's begins
                self._bridge.progress_end(turn.progress_token, "handed to Claude")
                await self._progress_begin(turn, Agent.CLAUDE)
                advise = turn.config.local.hand_off == "advise"
                if advise and await self._advisor.pays(turn, session.workspace_folder):
                    escalated = Escalated(by=by, reason=reason, signal=signal)
                    stop = await self._advisor.run(session, turn, text, plan, display_text)
                    return stop, escalated
            else:
                by, reason, signal = plan.escalated_by or "user", plan.escalation_reason, None
            escalated = Escalated(by=by, reason=reason, signal=signal)
            self._bridge.progress_report(turn.progress_token, "escalating to Claude")
            stop = await self._claude.run(session, turn, text, by, reason)
        except asyncio.CancelledError:
            turn.flush_text()
            return "cancelled", escalated
        except EngineError as exc:
            storage = exc.reason is RequestErrorReason.STORAGE_FAILED
            turn.failure = (
                FailureReason.STORAGE_FAILED if storage else FailureReason.INTERNAL,
                str(exc),
            )
            stop = "error"
        except Exception as exc:  # a bug must end the turn, not the server
            logger.exception("turn %s failed", turn.turn_id)
            turn.failure = (FailureReason.INTERNAL, f"internal error: {exc}")
            stop = "error"
        if turn.failure is not None:
            stop = "error"
        return stop, escalated

    async def _progress_begin(self, turn: Turn, agent: Agent) -> None:
        """The turn's work-done progress, titled by the agent that runs it now."""
        title = "milk: Claude" if agent is Agent.CLAUDE else "milk: local"
        turn.progress_token = None
        with suppress(TimeoutError):  # a client that never answers gets no progress
            turn.progress_token = await asyncio.wait_for(
                self._bridge.progress_begin(title), PROGRESS_CREATE_SECONDS
            )

    async def _finish(
        self,
        session: Session,
        turn: Turn,
        plan: Plan,
        stop: StopReason,
        escalated: Escalated | None,
        before: Before | None,
    ) -> TurnResult:
        """Save the turn and end it. Whatever saving does, the turn ends: its failure gets
        the error notice, `turn_ended` and the progress end, and the claim is released."""
        last_agent = turn.parts[-1].agent if turn.parts else Agent.LOCAL
        if stop == "cancelled":
            turn.close_open_calls()
        if escalated is not None and stop == "error":
            # A failed escalation must not keep sending the session's turns to Claude.
            session.user_escalated = False
            if session.state is SessionState.ESCALATION_WAITING:
                session.state = SessionState.ROUTING
        changes = await _uncancellable(
            asyncio.to_thread(
                self._changes.after_turn,
                session.workspace_folder,
                turn.turn_id,
                before,
                turn.editor_edits,
            )
        )
        try:
            await _uncancellable(
                self._save(session, turn, plan, stop, last_agent, escalated, changes)
            )
        except EngineError as exc:
            logger.error("turn %s: storage failed: %s", turn.turn_id, exc)
            await _uncancellable(self._sessions.release_turn(session.id, turn.turn_id))
            turn.failure = (
                FailureReason.STORAGE_FAILED,
                f"the turn could not be saved: {exc}. Free disk space or check "
                f"{turn.config.storage_path()}.",
            )
            stop = "error"
        except Exception as exc:  # a bug in saving must still end the turn
            logger.exception("turn %s: saving failed", turn.turn_id)
            await _uncancellable(self._sessions.release_turn(session.id, turn.turn_id))
            turn.failure = (FailureReason.INTERNAL, f"internal error saving the turn: {exc}")
            stop = "error"
        summaries = [_summary(change) for change in changes]
        error = _turn_error(stop, turn)
        turn.ended(last_agent, stop, [item.to_wire() for item in summaries], error)
        return TurnResult(
            session_id=session.id,
            turn_id=turn.turn_id,
            agent=last_agent.value,
            stop_reason=stop,
            text=redact(turn.text),
            escalated=escalated,
            usage=_usage(turn),
            error=error,
            changes=summaries or None,
            next_route=next_route_of(session),
            plan=turn.plan,
        )

    async def _save(
        self,
        session: Session,
        turn: Turn,
        plan: Plan,
        stop: StopReason,
        last_agent: Agent,
        escalated: Escalated | None,
        changes: list[TurnChange],
    ) -> None:
        """Store the turn's percepts and answers, its final status, how it ended (what a
        reloaded chat shows), where it went (the routing numbers) and the session."""
        answers = [part.record(turn.turn_id) for part in turn.parts if not part.is_empty]
        if session.state in (SessionState.LOCAL, SessionState.ESCALATION):
            session.state = SessionState.ROUTING
        session.active_agent = last_agent
        info: dict[str, Any] | None = None
        route: TurnRoute | None = None
        try:  # how the turn ended is for the reloaded view: a bug there must not lose the turn
            info = _turn_info(turn, stop, last_agent, escalated, changes)
        except Exception:
            logger.exception("turn %s: its info is not stored", turn.turn_id)
        try:  # nor may one in the routing numbers
            route = _route(turn, plan, stop, escalated, changes)
        except Exception:
            logger.exception("turn %s: its route is not counted", turn.turn_id)
        await self._sessions.finish_turn(
            session, turn.turn_id, _RECORD_STATUS[stop], answers, turn.percepts, info, route
        )


async def _uncancellable(work: Awaitable[T]) -> T:
    """Wait for `work` to the end even when the turn is cancelled meanwhile: a turn being
    saved must be saved, then end with `turn_ended` (the cancel is already its stop)."""
    future = asyncio.ensure_future(work)
    while True:
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            if future.done():
                return future.result()


def _usage(turn: Turn) -> Usage | None:
    if not turn.usage.seen:
        return None
    return Usage(
        input_tokens=turn.usage.input_tokens,
        output_tokens=turn.usage.output_tokens,
        cache_read_tokens=turn.usage.cache_read_tokens,
        cache_creation_tokens=turn.usage.cache_creation_tokens,
        cost_usd=turn.usage.cost_usd,
    )


def _turn_error(stop: StopReason, turn: Turn) -> TurnError | None:
    if stop != "error" or turn.failure is None:
        return None
    reason, message = turn.failure
    data = {"signal": turn.failure_signal} if turn.failure_signal else None
    return TurnError(reason=reason.value, message=redact(message), data=data)


def _summary(change: TurnChange) -> ChangeSummary:
    return ChangeSummary(
        uri=Path(change.path).as_uri(),
        kind=change.kind,
        added=change.added,
        removed=change.removed,
    )


def _route(
    turn: Turn,
    plan: Plan,
    stop: StopReason,
    escalated: Escalated | None,
    changes: list[TurnChange],
) -> TurnRoute:
    """Where the turn went, for the routing numbers: Claude ran when its part said or did
    something or reported a cost (not when it never started: missing, or the budget)."""
    local = turn.part_of(Agent.LOCAL)
    claude = turn.part_of(Agent.CLAUDE)
    claude_ran = claude is not None and (not claude.is_empty or turn.usage.cost_usd is not None)
    by = escalated.by if escalated is not None else None
    steps = turn.plan or []
    kind = route_kind(
        advised=plan.advises or bool(steps),
        claude_ran=claude_ran,
        escalated_by=by,
        answers_claude=plan.answers_claude,
        local_answered=local is not None and not local.is_empty and stop != "cancelled",
    )
    signal = escalated.signal if escalated is not None else None
    return TurnRoute(
        kind=kind,
        model=turn.local_model or "",
        signal=hand_off_signal(by, signal) if kind == "handed_off" else None,
        claude_cost_usd=turn.usage.cost_usd if claude_ran else None,
        local_edits=_local_edits(local, claude_ran, changes),
        configured_model=turn.config.local.model,
        steps_local=sum(s.status == "completed" and s.agent == "local" for s in steps),
        steps_claude=sum(s.status == "completed" and s.agent == "claude" for s in steps),
        steps_failed=sum(s.status == "failed" for s in steps),
        steps_milk=sum(s.status == "completed" and bool(s.by_milk) for s in steps),
        plan_cost_usd=turn.plan_cost_usd,
    )


def _local_edits(local: AgentPart | None, claude_ran: bool, changes: list[TurnChange]) -> bool:
    """Whether the turn's local part changed files: without Claude, any change of the turn
    (a shell command's too); after Claude took over, a completed `edit_file` of the local
    part (the checkpoint compares the turn as a whole)."""
    if local is None:
        return False
    if not claude_ran:
        return bool(changes)
    calls = local.tool_calls.values()
    return any(call.name == EDIT_FILE and call.status == "completed" for call in calls)


def _turn_info(
    turn: Turn,
    stop: StopReason,
    last_agent: Agent,
    escalated: Escalated | None,
    changes: list[TurnChange],
) -> dict[str, Any]:
    """How the turn ended, stored with it (`milk/session/get` returns it as `turnInfo`)."""
    info: dict[str, Any] = {"agent": last_agent.value, "stopReason": stop}
    if escalated is not None:
        info["escalated"] = {**escalated.to_wire(), **(turn.escalation_shown or {})}
    error = _turn_error(stop, turn)
    if error is not None:
        info["error"] = error.to_wire()
    usage = _usage(turn)
    if usage is not None:
        info["usage"] = usage.to_wire()
    if changes:
        info["changes"] = [change.to_dict() for change in changes]
    if turn.local_model:  # set when the local part ran, even if it said nothing
        info["model"] = turn.local_model
    if turn.route_reason_shown:
        info["routeReason"] = turn.route_reason_shown
    if turn.notices_shown:
        info["notices"] = list(turn.notices_shown)
    if turn.plan:
        info["plan"] = [step.to_wire() for step in turn.plan]
    session = turn.session
    if turn.need_before is not None and session is not None:
        before, before_at = turn.need_before
        info["needSet"] = {"need": session.current_need, "before": before, "beforeAt": before_at}
    return info
