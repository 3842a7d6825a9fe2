"""The session data model: sessions, the records of their turns, and tool calls.

Plain dataclasses with no I/O, shared by the store, the bricks, the context builders
and the engine. Field names follow ADR 0029 / ADR 0004 (snake_case); `milk_lsp.wire` maps them
onto the camelCase protocol types.
"""

from __future__ import annotations

import enum
import secrets
import string
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

NONCE_CHARS = 6
_NONCE_ALPHABET = string.ascii_lowercase + string.digits


def generate_nonce() -> str:
    """A new tag nonce (a session's `escalation_nonce`): 6 characters of `[a-z0-9]` from
    `secrets` (P16)."""
    return "".join(secrets.choice(_NONCE_ALPHABET) for _ in range(NONCE_CHARS))


class Agent(enum.StrEnum):
    """Who answered: the local OpenAI-compatible model or Claude Code."""

    LOCAL = "local"
    CLAUDE = "claude"


class Role(enum.StrEnum):
    USER = "user"
    ASSISTANT = "assistant"


class RecordStatus(enum.StrEnum):
    """The final status of the turn a record belongs to (every record of a turn shares it)."""

    OK = "ok"
    CANCELLED = "cancelled"
    ERROR = "error"


class SessionState(enum.StrEnum):
    ROUTING = "routing"
    LOCAL = "local"
    ESCALATION = "escalation"
    ESCALATION_WAITING = "escalation_waiting"


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class ToolCallRecord:
    """One tool call an agent made, with what it returned."""

    tool_call_id: str
    name: str
    input: dict[str, Any]
    output: str | None = None
    is_error: bool = False
    status: str | None = None
    """The last status shown live, one of `FINAL_TOOL_STATUSES` (None in older rows)."""
    text_offset: int | None = None
    """How much of its record's text (in characters) had been shown when the call started:
    a reloaded chat puts the call there, as the live one did (None in older rows)."""


FINAL_TOOL_STATUSES = ("completed", "failed", "denied", "cancelled")


@dataclass
class TurnRecord:
    """One message of a turn: the user's, or one agent's answer with its tool calls.

    `position` is the record's 1-based index in its session (0 until stored); the need's
    `current_need_set_at` and the bricks' boundaries are expressed in it.
    """

    turn_id: str
    role: Role
    agent: Agent
    text: str
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    status: RecordStatus = RecordStatus.OK
    created_at: datetime = field(default_factory=utc_now)
    position: int = 0
    damaged: list[str] = field(default_factory=list)
    """Stored fields that could not be read and were replaced by defaults (see `rows.py`)."""


def turn_ids(records: list[TurnRecord]) -> list[str]:
    """The turns `records` belong to, each once, in order."""
    return list(dict.fromkeys(record.turn_id for record in records))


def in_shown_order(record: TurnRecord) -> list[str | ToolCallRecord] | None:
    """An assistant record's text cut where its tool calls started, with the calls in
    between, as the live stream showed them; None when a call has no stored place (older
    rows) or there are no calls."""
    calls = record.tool_calls
    if not calls or any(call.text_offset is None for call in calls):
        return None
    pieces: list[str | ToolCallRecord] = []
    shown = 0
    for call in calls:  # in the order they started; offsets never go down
        cut = min(max(call.text_offset or 0, shown), len(record.text))
        if cut > shown:
            pieces.append(record.text[shown:cut])
        pieces.append(call)
        shown = cut
    if shown < len(record.text):
        pieces.append(record.text[shown:])
    return pieces


@dataclass
class Session:
    """A chat session of one workspace folder, with its ADR 0029 bricks and ADR 0004 state."""

    id: str
    workspace_folder: str
    """Resolved absolute path of the workspace folder the session belongs to."""
    title: str = ""
    state: SessionState = SessionState.ROUTING
    active_agent: Agent = Agent.LOCAL
    created_at: datetime = field(default_factory=utc_now)
    updated_at: datetime = field(default_factory=utc_now)
    turn_count: int = 0
    """User messages stored (one per turn)."""
    record_count: int = 0
    """Records stored; the position the next record gets is `record_count + 1`."""

    # ADR 0029 bricks
    current_need: str = ""
    current_need_set_at: int = 0
    """1-based position of the user record of the turn that set the need (0 = unset)."""
    escalation_brief: str = ""
    last_local_summary: str = ""
    last_claude_summary: str = ""
    bricks_built: bool = False
    """False for a session stored before bricks existed; its next turn builds them."""

    # ADR 0004 hand-off state
    escalation_nonce: str = ""
    claude_session_id: str = ""
    next_claude_session_id: str = ""
    """The `--session-id` the next new Claude conversation will use (shown by milk/context)."""
    last_resumed_context_hash: str = ""
    """Hash of the last `<milk-context>` block delivered on a resumed turn."""
    claude_turn_count: int = 0
    """Claude assistant records so far (drives instruction re-injection)."""
    instructions_injected_at: int = 0
    """`claude_turn_count` when the need/percept instructions last reached Claude."""
    claude_bytes_since_injection: int = 0
    local_turns_since_claude: int = 0
    """Local assistant records after Claude's last assistant record."""
    need_changed_since_claude: bool = False
    """The need changed after Claude's last turn (a stale Claude conversation)."""
    user_escalated: bool = False
    """The user sent the session to Claude and has not taken it back with route local."""

    damaged: list[str] = field(default_factory=list)
    """Stored fields that could not be read and were replaced by defaults (see `rows.py`);
    saving the session writes its state, agent, bricks and hand-off state back whole."""
