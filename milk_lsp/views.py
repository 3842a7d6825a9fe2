"""Domain objects mapped onto the wire models of PROTOCOL.md."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from pathlib import Path

from milk_lsp import wire
from milk_lsp.engine import Engine, EngineError
from milk_lsp.sessions.model import Session, TurnRecord

CONTEXT_FILE_PLACEHOLDER = "<context-file>"


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def session_info(session: Session) -> wire.SessionInfo:
    return wire.SessionInfo(
        session_id=session.id,
        workspace_folder=Path(session.workspace_folder).as_uri(),
        title=session.title,
        state=session.state.value,
        active_agent=session.active_agent.value,
        created_at=iso(session.created_at),
        updated_at=iso(session.updated_at),
        turn_count=session.turn_count,
        current_need=session.current_need or None,
        claude_session_id=session.claude_session_id or None,
        damaged=list(session.damaged) or None,
    )


def session_detail(session: Session, records: list[TurnRecord]) -> wire.SessionGetResult:
    """`milk/session/get`: the session, its newest records (oldest first) and its bricks."""
    return wire.SessionGetResult(
        session=session_info(session),
        turns=[turn_record(record) for record in records],
        bricks=wire.Bricks(
            current_need=session.current_need,
            escalation_brief=session.escalation_brief,
            last_local_summary=session.last_local_summary,
            last_claude_summary=session.last_claude_summary,
        ),
    )


def turn_record(record: TurnRecord) -> wire.TurnRecordWire:
    calls = [
        wire.ToolCallWire(
            tool_call_id=call.tool_call_id,
            name=call.name,
            input=call.input,
            output=call.output,
            is_error=call.is_error,
        )
        for call in record.tool_calls
    ]
    return wire.TurnRecordWire(
        turn_id=record.turn_id,
        role=record.role.value,
        agent=record.agent.value,
        text=record.text,
        tool_calls=calls or None,
        status=record.status.value,
        created_at=iso(record.created_at),
        damaged=list(record.damaged) or None,
    )


def context_preview(engine: Engine, session_id: str, reason: str | None) -> wire.ContextPreview:
    """Exactly what the next escalation would hand Claude, without running anything."""
    from milk_lsp.agents.claude import build_argv

    session = engine.get_session(session_id)
    if engine.is_busy(session_id):
        raise EngineError(
            wire.RequestErrorReason.SESSION_BUSY, f"session {session_id} is running a turn"
        )
    engine.escalations.reserve_conversation_id(session)
    preview_session = session
    if reason is not None:
        # As if the local agent escalated now: its reason becomes the brief (not stored).
        preview_session = replace(session, escalation_brief=reason)
    plan = engine.escalations.plan(preview_session, by_agent=reason is not None)
    request = engine.escalations.request(preview_session, plan, "")
    argv = build_argv(request, engine.claude_path() or "claude", CONTEXT_FILE_PLACEHOLDER)
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
