"""Stored rows to the session model, tolerant of damaged values.

The database is a file in the user's data directory: a hand edit, another tool or an old
bug can leave a `state` of `bogus`, `tool_calls` that are not JSON or a `created_at` of
`yesterday`. One such value must not take down the session list, the session or its next
turn. So each value that cannot be read is replaced by its default, its field is named in
the model's `damaged` list (shown to the client) and a warning is logged once per process.
A row that cannot be shown at all (a session without an id or an absolute workspace folder,
a record whose role is unknown) is skipped with a warning.
"""

from __future__ import annotations

import enum
import json
import logging
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from milk_lsp.sessions.model import (
    FINAL_TOOL_STATUSES,
    Agent,
    RecordStatus,
    Role,
    Session,
    SessionState,
    ToolCallRecord,
    TurnRecord,
)

logger = logging.getLogger(__name__)

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
"""What an unreadable time becomes (marked damaged, so never mistaken for a real one)."""

BRICK_COLUMNS: dict[str, str] = {
    "current_need": "currentNeed",
    "current_need_set_at": "currentNeedSetAt",
    "escalation_brief": "escalationBrief",
    "last_local_summary": "lastLocalSummary",
    "last_claude_summary": "lastClaudeSummary",
}
"""Brick columns and the names a damaged one gets in `damaged`."""

HANDOFF_FIELDS = (
    "escalation_nonce",
    "claude_session_id",
    "next_claude_session_id",
    "last_resumed_context_hash",
    "claude_turn_count",
    "instructions_injected_at",
    "claude_bytes_since_injection",
    "local_turns_since_claude",
    "need_changed_since_claude",
    "user_escalated",
)
"""Session fields stored together as JSON in the `handoff` column."""

_DEFAULTS = Session(id="", workspace_folder="")
_WARNED_MAX = 1000
_warned: set[tuple[str, str]] = set()
E = TypeVar("E", bound=enum.Enum)


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def session_from_row(row: sqlite3.Row) -> Session | None:
    """The session of a `sessions` row, or None (logged) when it cannot be shown at all."""
    what = f"session {row['id']!r}"
    try:
        if not isinstance(row["id"], str) or not row["id"]:
            _warn_once(what, "id", "the session has no id; it is left out")
            return None
        workspace = row["workspace"]
        if not isinstance(workspace, str) or not Path(workspace).is_absolute():
            _warn_once(what, "workspace", f"no workspace folder {_short(workspace)}; left out")
            return None
        fields = _Fields(row, what)
        session = Session(
            id=row["id"],
            workspace_folder=workspace,
            title=fields.text("title", "title"),
            state=fields.choice("state", "state", SessionState, SessionState.ROUTING),
            active_agent=fields.choice("active_agent", "activeAgent", Agent, Agent.LOCAL),
            turn_count=fields.count("turn_count", "turnCount"),
            record_count=fields.count("record_count", "recordCount"),
        )
        # An unreadable time borrows the other one: the session's age stays about right.
        created_at = fields.time("created_at", "createdAt")
        updated_at = fields.time("updated_at", "updatedAt")
        session.created_at = created_at or updated_at or EPOCH
        session.updated_at = updated_at or created_at or EPOCH
        # A row from before bricks existed has NULL brick columns: it loads with empty
        # bricks and `bricks_built` False, and its next turn builds them (ADR 0029).
        session.bricks_built = row["last_local_summary"] is not None
        for column, name in BRICK_COLUMNS.items():
            if row[column] is None:
                continue
            if column == "current_need_set_at":
                session.current_need_set_at = fields.count(column, name)
            else:
                setattr(session, column, fields.text(column, name))
        for key, value in fields.json_object("handoff", "handoff").items():
            if key not in HANDOFF_FIELDS:
                continue
            if type(value) is type(getattr(_DEFAULTS, key)):
                setattr(session, key, value)
            else:
                fields.bad("handoff", f"{key}={value!r}")
        session.damaged = fields.damaged
        return session
    except Exception:  # a row must never take the list down; say which one and why
        logger.warning("%s cannot be read; it is left out", what, exc_info=True)
        return None


def record_from_row(row: sqlite3.Row) -> TurnRecord | None:
    """The record of a `records` row, or None (logged) when it cannot be shown at all."""
    what = f"record {row['position']!r} of session {row['session_id']!r}"
    try:
        role = _enum(Role, row["role"])
        if role is None:
            _warn_once(what, "role", f"unknown role {_short(row['role'])}; it is left out")
            return None
        fields = _Fields(row, what)
        record = TurnRecord(
            turn_id=fields.text("turn_id", "turnId"),
            role=role,
            agent=fields.choice("agent", "agent", Agent, Agent.LOCAL),
            text=fields.text("text", "text"),
            tool_calls=_tool_calls(fields),
            # an unreadable status must never claim `ok`
            status=fields.choice("status", "status", RecordStatus, RecordStatus.ERROR),
            created_at=fields.time("created_at", "createdAt") or EPOCH,
            position=fields.count("position", "position"),
        )
        record.damaged = fields.damaged
        return record
    except Exception:
        logger.warning("%s cannot be read; it is left out", what, exc_info=True)
        return None


def tool_call_dict(call: ToolCallRecord) -> dict[str, Any]:
    return {
        "id": call.tool_call_id,
        "name": call.name,
        "input": call.input,
        "output": call.output,
        "isError": call.is_error,
        **({"status": call.status} if call.status else {}),
        **({"textOffset": call.text_offset} if call.text_offset is not None else {}),
    }


def _tool_calls(fields: _Fields) -> list[ToolCallRecord]:
    """The record's tool calls; calls that are not JSON objects are dropped (and noted)."""
    calls: list[ToolCallRecord] = []
    for item in fields.json_list("tool_calls", "toolCalls"):
        if not isinstance(item, dict):
            fields.bad("toolCalls", item)
            continue
        call_input = item.get("input")
        output = item.get("output")
        calls.append(
            ToolCallRecord(
                tool_call_id=str(item.get("id", "")),
                name=str(item.get("name", "")),
                input=call_input if isinstance(call_input, dict) else {},
                output=output if output is None or isinstance(output, str) else json.dumps(output),
                is_error=bool(item.get("isError", False)),
                status=_final_status(item.get("status")),
                text_offset=_offset(item.get("textOffset")),
            )
        )
    return calls


def _offset(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _final_status(value: Any) -> str | None:
    return value if value in FINAL_TOOL_STATUSES else None


class _Fields:
    """Reads one row's columns; a value that cannot be read becomes its default and its
    field name is added to `damaged`."""

    def __init__(self, row: sqlite3.Row, what: str) -> None:
        self._row = row
        self._what = what
        self.damaged: list[str] = []

    def bad(self, name: str, value: Any) -> None:
        if name not in self.damaged:
            self.damaged.append(name)
        _warn_once(self._what, name, f"unreadable {name} {_short(value)}; using the default")

    def text(self, column: str, name: str) -> str:
        value = self._row[column]
        if isinstance(value, str):
            return value
        if isinstance(value, bytes):
            try:
                return value.decode("utf-8")
            except UnicodeDecodeError:
                pass
        self.bad(name, value)
        return ""

    def choice(self, column: str, name: str, kind: type[E], default: E) -> E:
        value = _enum(kind, self._row[column])
        if value is None:
            self.bad(name, self._row[column])
            return default
        return value

    def time(self, column: str, name: str) -> datetime | None:
        value = self._row[column]
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except (AttributeError, TypeError, ValueError):
            self.bad(name, value)
            return None
        return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)

    def count(self, column: str, name: str) -> int:
        value = self._row[column]
        if type(value) is int and value >= 0:
            return value
        self.bad(name, value)
        return 0

    def json_list(self, column: str, name: str) -> list[Any]:
        value = self._json(column, name, "[]")
        if isinstance(value, list):
            return value
        self.bad(name, value)
        return []

    def json_object(self, column: str, name: str) -> dict[str, Any]:
        value = self._json(column, name, "{}")
        if isinstance(value, dict):
            return value
        self.bad(name, value)
        return {}

    def _json(self, column: str, name: str, empty: str) -> Any:
        raw = self._row[column]
        try:
            return json.loads(raw or empty)
        except (TypeError, ValueError):  # JSONDecodeError, and bytes that are not UTF-8
            self.bad(name, raw)
            return json.loads(empty)


def _enum(kind: type[E], value: Any) -> E | None:
    try:
        return kind(value)
    except ValueError:
        return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _warn_once(what: str, name: str, message: str) -> None:
    """Log a damaged value once per process, not on every list or history read."""
    key = (what, name)
    if key in _warned:
        return
    if len(_warned) < _WARNED_MAX:
        _warned.add(key)
    logger.warning("%s: %s", what, message)
