"""What the session and turn requests answer: sessions, stored turns and how they ended,
a turn's result and changes, the context preview."""

from __future__ import annotations

from typing import Any, Literal

from milk_lsp.wire.base import AgentName, WireModel


class NextRoute(WireModel):
    """Where the next `milk/chat` with route `auto` goes, and why, in plain words."""

    agent: AgentName
    reason: str


class SessionInfo(WireModel):
    session_id: str
    workspace_folder: str
    title: str
    state: Literal["routing", "local", "escalation", "escalation_waiting"]
    active_agent: AgentName
    created_at: str
    updated_at: str
    turn_count: int
    current_need: str | None = None
    claude_session_id: str | None = None
    damaged: list[str] | None = None
    """Stored fields that could not be read (replaced by defaults); left out when none."""
    next_route: NextRoute | None = None


FinalToolStatus = Literal["completed", "failed", "denied", "cancelled"]


class ToolCallWire(WireModel):
    tool_call_id: str
    name: str
    input: dict[str, Any]
    output: str | None = None
    is_error: bool | None = None
    status: FinalToolStatus | None = None
    """The call's last status as shown live (stored by this version; older rows lack it)."""


class Segment(WireModel):
    """One piece of an assistant record in the order it was shown: text, or a tool call."""

    text: str | None = None
    tool_call_id: str | None = None


class TurnRecordWire(WireModel):
    turn_id: str
    role: Literal["user", "assistant"]
    agent: AgentName
    text: str
    tool_calls: list[ToolCallWire] | None = None
    status: Literal["ok", "cancelled", "error"]
    created_at: str
    segments: list[Segment] | None = None
    """The record's text and tool calls in the order they were shown (records with tool
    calls stored by this version)."""
    damaged: list[str] | None = None
    """Stored fields that could not be read (replaced by defaults); left out when none."""


class Bricks(WireModel):
    current_need: str
    escalation_brief: str
    last_local_summary: str
    last_claude_summary: str


class Usage(WireModel):
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int | None = None
    cache_creation_tokens: int | None = None
    cost_usd: float | None = None


class Escalated(WireModel):
    by: Literal["user", "agent", "fallback"]
    """`fallback`: milk handed the turn over because the local part failed (`reason` says
    what happened in words, `signal` which hand-off signal it was)."""
    reason: str
    signal: str | None = None


class TurnError(WireModel):
    reason: str
    message: str
    data: dict[str, Any] | None = None
    """More for a client than the message: `signal`, the hand-off signal a local part ended
    on (the message says what happened in words and names no signal)."""


StopReason = Literal["end_turn", "cancelled", "error", "max_turns"]


ChangeKind = Literal["created", "modified", "deleted"]


class ChangeSummary(WireModel):
    """One file a turn changed, counted in lines."""

    uri: str
    kind: ChangeKind
    added: int
    removed: int


class FileChangeWire(WireModel):
    """One file a turn changed, whole: `before` absent for a created file, `after` for a
    deleted one; `binary` files carry no text; `truncated` when a side was cut."""

    uri: str
    kind: ChangeKind
    before: str | None = None
    after: str | None = None
    binary: bool | None = None
    truncated: bool | None = None


class TurnChangesResult(WireModel):
    changes: list[FileChangeWire]
    undone: bool | None = None


class TurnUndoResult(WireModel):
    restored: list[str]


class EscalatedInfo(WireModel):
    by: Literal["user", "agent", "fallback"]
    reason: str
    signal: str | None = None
    mode: Literal["first", "resume", "returning", "fresh", "brief"] | None = None
    context_chars: int | None = None


class TurnNotice(WireModel):
    severity: str
    message: str


StepStatus = Literal["pending", "in_progress", "completed", "failed"]


class PlanStep(WireModel):
    """One step of an advisor turn's plan (issue 32), as the checklist shows it."""

    content: str
    status: StepStatus
    agent: AgentName | None = None
    """Who did the step (or is doing it): the local side, or Claude when the local side
    failed it. Unset while pending."""
    by_milk: bool | None = None
    """With `agent: "local"`: milk applied the step itself, Claude's exact replacement,
    without the model (since issue 39); left out otherwise."""


class NeedSet(WireModel):
    need: str
    before: str
    before_at: int


class TurnInfo(WireModel):
    """How a stored turn ended, so a reloaded chat shows what the live one did."""

    turn_id: str
    agent: AgentName
    stop_reason: StopReason
    escalated: EscalatedInfo | None = None
    error: TurnError | None = None
    usage: Usage | None = None
    changes: list[ChangeSummary] | None = None
    undone: bool | None = None
    model: str | None = None
    """The local model that answered (turns with a local part), as it was named then."""
    route_reason: str | None = None
    """The `turn_started` reason (why the turn went to its agent), as shown live."""
    notices: list[TurnNotice] | None = None
    """The turn's notices other than its error, in order, as shown live."""
    need_set: NeedSet | None = None
    """The goal this turn set, and the one before it (an undo puts that back)."""
    plan: list[PlanStep] | None = None
    """An advisor turn's plan, each step as it ended."""


class SessionGetResult(WireModel):
    session: SessionInfo
    turns: list[TurnRecordWire]
    bricks: Bricks
    turn_info: list[TurnInfo] | None = None
    """For the returned turns stored by this version (older turns have none)."""


class TurnResult(WireModel):
    session_id: str
    turn_id: str
    agent: AgentName
    stop_reason: StopReason
    text: str
    escalated: Escalated | None = None
    usage: Usage | None = None
    error: TurnError | None = None
    changes: list[ChangeSummary] | None = None
    next_route: NextRoute | None = None
    plan: list[PlanStep] | None = None
    """An advisor turn's plan, each step as it ended (issue 32)."""


class ContextChars(WireModel):
    context_file: int
    user_message_prefix: int


class ContextPreview(WireModel):
    mode: Literal["first", "resume", "returning", "fresh"]
    argv: list[str]
    context_file: str
    user_message_prefix: str
    chars: ContextChars
    local_notes: str | None = None
    """Since issue 32: what the next local turn carries from Claude when Claude ran the
    session's last turn (the demotion notes, exactly as the local model gets them)."""
