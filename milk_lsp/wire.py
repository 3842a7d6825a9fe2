"""The wire contract of PROTOCOL.md: method names and the pydantic models of params and results.

Python fields are snake_case; on the wire they are camelCase (set once in `WireModel`).
Nothing else in the package spells a method name.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

PROTOCOL_VERSION = 1

SESSION_NEW = "milk/session/new"
SESSION_LIST = "milk/session/list"
SESSION_GET = "milk/session/get"
SESSION_DELETE = "milk/session/delete"
CHAT = "milk/chat"
ESCALATE = "milk/escalate"
CANCEL = "milk/cancel"
CONTEXT = "milk/context"
STATUS = "milk/status"
UPDATE = "milk/update"
REQUEST_PERMISSION = "milk/requestPermission"

Route = Literal["auto", "local", "claude"]
AgentName = Literal["local", "claude"]

ERROR_SESSION_NOT_FOUND = "session_not_found"
ERROR_SESSION_BUSY = "session_busy"
ERROR_WORKSPACE_UNKNOWN = "workspace_unknown"
ERROR_STORAGE_FAILED = "storage_failed"

PERMISSION_LABELS = {
    "allow_once": "Allow once",
    "allow_session": "Allow for this session",
    "deny": "Deny",
}


class WireModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="ignore",
    )

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class ParamsError(ValueError):
    """Params did not validate; the message names the field (mapped to -32602)."""


M = TypeVar("M", bound=WireModel)


def parse(model: type[M], raw: Any) -> M:
    """Validate raw params into `model`, turning pydantic's error into one that names the field."""
    if raw is None:
        raw = {}
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            field = ".".join(str(part) for part in error["loc"]) or "params"
            problems.append(f"{field}: {error['msg']}")
        raise ParamsError("invalid params: " + "; ".join(problems)) from None


# ---- params ---------------------------------------------------------------------------


class Position(WireModel):
    line: int = Field(ge=0)
    character: int = Field(ge=0)


class Range(WireModel):
    start: Position
    end: Position


class ContextItem(WireModel):
    uri: str
    range: Range | None = None
    text: str | None = None


class SessionNewParams(WireModel):
    workspace_folder: str | None = None
    title: str | None = None


class SessionListParams(WireModel):
    workspace_folder: str | None = None


class SessionGetParams(WireModel):
    session_id: str = Field(min_length=1)
    limit: int = Field(default=50, ge=1)


class SessionIdParams(WireModel):
    session_id: str = Field(min_length=1)


class ChatParams(WireModel):
    session_id: str | None = None
    workspace_folder: str | None = None
    text: str = Field(min_length=1)
    route: Route | None = None
    context: list[ContextItem] = Field(default_factory=list)


class EscalateParams(WireModel):
    session_id: str = Field(min_length=1)
    text: str | None = None
    reason: str | None = None


class ContextParams(WireModel):
    session_id: str = Field(min_length=1)
    reason: str | None = None


# ---- results --------------------------------------------------------------------------


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


class ToolCallWire(WireModel):
    tool_call_id: str
    name: str
    input: dict[str, Any]
    output: str | None = None
    is_error: bool | None = None


class TurnRecordWire(WireModel):
    turn_id: str
    role: Literal["user", "assistant"]
    agent: AgentName
    text: str
    tool_calls: list[ToolCallWire] | None = None
    status: Literal["ok", "cancelled", "error"]
    created_at: str


class Bricks(WireModel):
    current_need: str
    escalation_brief: str
    last_local_summary: str
    last_claude_summary: str


class SessionGetResult(WireModel):
    session: SessionInfo
    turns: list[TurnRecordWire]
    bricks: Bricks


class Usage(WireModel):
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int | None = None
    cache_creation_tokens: int | None = None
    cost_usd: float | None = None


class Escalated(WireModel):
    by: Literal["user", "agent"]
    reason: str


class TurnError(WireModel):
    reason: str
    message: str


StopReason = Literal["end_turn", "cancelled", "error", "max_turns"]


class TurnResult(WireModel):
    session_id: str
    turn_id: str
    agent: AgentName
    stop_reason: StopReason
    text: str
    escalated: Escalated | None = None
    usage: Usage | None = None
    error: TurnError | None = None


class ContextChars(WireModel):
    context_file: int
    user_message_prefix: int


class ContextPreview(WireModel):
    mode: Literal["first", "resume", "returning", "fresh"]
    argv: list[str]
    context_file: str
    user_message_prefix: str
    chars: ContextChars


class LocalStatus(WireModel):
    base_url: str
    model: str | None = None
    reachable: bool
    error: str | None = None


class ClaudeStatus(WireModel):
    path: str | None = None
    found: bool
    version: str | None = None
    error: str | None = None
    skip_permissions: bool | None = None
    """Set (true) only when `claude.skipPermissions` is on, so the user sees it."""


class Status(WireModel):
    version: str
    local: LocalStatus
    claude: ClaudeStatus
    storage: str


class PermissionOptionWire(WireModel):
    option_id: Literal["allow_once", "allow_session", "deny"]
    label: str


class RequestPermissionParams(WireModel):
    session_id: str
    turn_id: str
    agent: AgentName
    tool_call_id: str
    tool: str
    input: dict[str, Any]
    description: str | None = None
    options: list[PermissionOptionWire]


class RequestPermissionResult(WireModel):
    option_id: str


def permission_options(option_ids: list[str]) -> list[PermissionOptionWire]:
    return [
        PermissionOptionWire.model_validate({"optionId": oid, "label": PERMISSION_LABELS[oid]})
        for oid in option_ids
    ]
