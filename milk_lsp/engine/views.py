"""Domain objects mapped onto the wire models of PROTOCOL.md."""

from __future__ import annotations

import logging
from datetime import datetime
from pathlib import Path
from typing import Any

from milk_lsp import wire
from milk_lsp.changes.book import ChangeTexts
from milk_lsp.changes.tracker import stored_changes
from milk_lsp.engine.routing import RoutingState, next_route
from milk_lsp.sessions.model import Session, TurnRecord, in_shown_order, turn_ids

logger = logging.getLogger(__name__)


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def next_route_of(session: Session) -> wire.NextRoute:
    """Where the session's next message goes, and why (`nextRoute`)."""
    agent, reason = next_route(RoutingState.of(session))
    return wire.NextRoute(agent=agent.value, reason=reason)


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
        next_route=next_route_of(session),
    )


def session_detail(
    session: Session, records: list[TurnRecord], infos: dict[str, dict[str, Any]] | None = None
) -> wire.SessionGetResult:
    """`milk/session/get`: the session, its newest records (oldest first), how their turns
    ended, and its bricks."""
    turn_info = [
        info
        for info in (_turn_info(tid, (infos or {}).get(tid)) for tid in turn_ids(records))
        if info
    ]
    return wire.SessionGetResult(
        session=session_info(session),
        turns=[turn_record(record) for record in records],
        turn_info=turn_info or None,
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
            status=call.status,
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
        segments=segments(record),
        damaged=list(record.damaged) or None,
    )


def segments(record: TurnRecord) -> list[wire.Segment] | None:
    """`TurnRecord.segments`: the record's text and calls in the order they were shown."""
    pieces = in_shown_order(record)
    if pieces is None:
        return None
    return [
        wire.Segment(text=piece)
        if isinstance(piece, str)
        else wire.Segment(tool_call_id=piece.tool_call_id)
        for piece in pieces
    ]


def _turn_info(turn_id: str, stored: dict[str, Any] | None) -> wire.TurnInfo | None:
    """A stored turn info on the wire (stored changes become their summaries); None when
    there is none or it cannot be read."""
    if stored is None:
        return None
    raw = {key: value for key, value in stored.items() if key != "changes"}
    changes = stored_changes(stored)
    if changes:
        raw["changes"] = [
            {
                "uri": Path(change.path).as_uri(),
                "kind": change.kind,
                "added": change.added,
                "removed": change.removed,
            }
            for change in changes
        ]
    info = wire.model_or_none(wire.TurnInfo, {**raw, "turnId": turn_id})
    if info is None:
        logger.warning("turn %s: stored info cannot be read; left out", turn_id)
    return info


def turn_changes_result(changes: list[ChangeTexts], undone: bool) -> wire.TurnChangesResult:
    return wire.TurnChangesResult(
        changes=[
            wire.FileChangeWire(
                uri=Path(item.change.path).as_uri(),
                kind=item.change.kind,
                before=item.before,
                after=item.after,
                binary=item.change.binary or None,
                truncated=item.truncated or None,
            )
            for item in changes
        ],
        undone=undone or None,
    )
