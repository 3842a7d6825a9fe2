"""The wire contract of PROTOCOL.md: method names and the pydantic models of params and results.

Python fields are snake_case; on the wire they are camelCase (set once in `WireModel`).
Nothing else in the package spells a method name.
"""

from __future__ import annotations

import enum
import re
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
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
STATS = "milk/stats"
UPDATE = "milk/update"
REQUEST_PERMISSION = "milk/requestPermission"
TURN_CHANGES = "milk/turn/changes"
TURN_UNDO = "milk/turn/undo"
NUDGE = "$/milk/nudge"
"""Server → client, params `{}`, to be ignored: sent when output goes quiet after a response,
so a client that stops reading at a response (Emacs 28's jsonrpc.el) reads what followed."""

PART_BREAK = "\n\n"
"""Between the text of a turn's two agent parts (local, then Claude) in `TurnResult.text`;
sent as a `text` update of its own before the later part's first text, so the text updates
add up to `TurnResult.text`."""

Route = Literal["auto", "local", "claude", "advise"]
"""`advise` (since issue 32): Claude plans, the local model carries the plan out."""
AgentName = Literal["local", "claude"]


class RequestErrorReason(enum.StrEnum):
    """`RequestFailed.data.reason` of a request the server could not serve (-32803)."""

    SESSION_NOT_FOUND = "session_not_found"
    SESSION_BUSY = "session_busy"
    WORKSPACE_UNKNOWN = "workspace_unknown"
    STORAGE_FAILED = "storage_failed"
    TURN_NOT_FOUND = "turn_not_found"
    UNDO_CONFLICT = "undo_conflict"
    """`milk/turn/undo`: a file changed again after the turn (`data.files` names them)."""
    UNDO_UNAVAILABLE = "undo_unavailable"
    """`milk/turn/undo`: milk recorded no way back for (some of) the turn's files."""


ERROR_SESSION_NOT_FOUND = RequestErrorReason.SESSION_NOT_FOUND
ERROR_SESSION_BUSY = RequestErrorReason.SESSION_BUSY
ERROR_WORKSPACE_UNKNOWN = RequestErrorReason.WORKSPACE_UNKNOWN
ERROR_STORAGE_FAILED = RequestErrorReason.STORAGE_FAILED

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
        parsed = model.model_validate(raw)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            field = ".".join(str(part) for part in error["loc"]) or "params"
            problems.append(f"{field}: {error['msg']}")
        raise ParamsError("invalid params: " + "; ".join(problems)) from None
    where = _lone_surrogate_at(parsed.model_dump(by_alias=True))
    if where is not None:
        # Not storable as UTF-8 (SQLite, files, the model's request would all fail later).
        raise ParamsError(f"invalid params: {where}: contains a lone surrogate (not valid Unicode)")
    return parsed


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _lone_surrogate_at(value: Any) -> str | None:
    """The dotted path of the first string (or key) holding a lone surrogate, if any."""
    pending: list[tuple[str, Any]] = [("", value)]
    while pending:
        path, item = pending.pop()
        if isinstance(item, str):
            if _LONE_SURROGATE.search(item):
                return path or "params"
        elif isinstance(item, dict):
            for key, sub in item.items():
                if isinstance(key, str) and _LONE_SURROGATE.search(key):
                    return f"{path}.{key}".lstrip(".") or "params"
                pending.append((f"{path}.{key}".lstrip("."), sub))
        elif isinstance(item, list | tuple):
            pending.extend((f"{path}.{i}".lstrip("."), sub) for i, sub in enumerate(item))
    return None


# ---- bounds of incoming strings and numbers --------------------------------------------

MAX_ID_CHARS = 256
MAX_URI_CHARS = 4096
MAX_TITLE_CHARS = 1000
MAX_TURN_LIMIT = 1_000_000


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain a NUL character")
    return value


SessionId = Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS), AfterValidator(_no_nul)]
Uri = Annotated[str, Field(max_length=MAX_URI_CHARS), AfterValidator(_no_nul)]
"""A `file://` URI or path: longer ones cannot name a file (PATH_MAX is 4096 bytes)."""
Title = Annotated[str, Field(max_length=MAX_TITLE_CHARS), AfterValidator(_no_nul)]


# ---- params ---------------------------------------------------------------------------


class Position(WireModel):
    line: int = Field(ge=0)
    character: int = Field(ge=0)


class Range(WireModel):
    start: Position
    end: Position


class ContextItem(WireModel):
    uri: Uri
    range: Range | None = None
    text: str | None = None


class SessionNewParams(WireModel):
    workspace_folder: Uri | None = None
    title: Title | None = None


class SessionListParams(WireModel):
    workspace_folder: Uri | None = None


class SessionGetParams(WireModel):
    session_id: SessionId
    limit: int = Field(default=50, ge=1, le=MAX_TURN_LIMIT)


class SessionIdParams(WireModel):
    session_id: SessionId


class ChatParams(WireModel):
    session_id: SessionId | None = None
    workspace_folder: Uri | None = None
    text: str = Field(min_length=1)
    route: Route | None = None
    context: list[ContextItem] = Field(default_factory=list)


class EscalateParams(WireModel):
    session_id: SessionId
    text: str | None = None
    reason: str | None = None


class TurnParams(WireModel):
    session_id: SessionId
    turn_id: Annotated[str, Field(min_length=1, max_length=64)]


class TurnUndoParams(TurnParams):
    force: bool = False


class ContextParams(WireModel):
    session_id: SessionId
    reason: str | None = None


# ---- results --------------------------------------------------------------------------


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
    mode: Literal["first", "resume", "returning", "fresh"] | None = None
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
    """Who did the step (or is doing it): the local model, or Claude when the local model
    failed it. Unset while pending."""


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


LoadState = Literal["stopped", "loading", "running", "failed"]


class LocalStatus(WireModel):
    base_url: str
    model: str | None = None
    reachable: bool
    error: str | None = None
    provider: Literal["openai", "embedded"] | None = None
    """`local.provider` as resolved (`auto` is never reported)."""
    model_path: str | None = None
    """The embedded engine's GGUF file (provider embedded)."""
    model_bytes: int | None = None
    load_state: LoadState | None = None
    """The embedded engine: not started (it loads on the first local turn), loading,
    serving, or its last start failed (`error` says why)."""
    load_seconds: float | None = None
    """How long the running embedded model took to load."""
    memory_bytes: int | None = None
    """The running embedded engine's resident memory (Linux)."""
    server: str | None = None
    """The model server milk recognised, with its version ("ollama 0.12.3"); unset: unknown."""
    context_tokens: int | None = None
    """The context the model runs with, when the server says (Ollama: `ollama ps`, or
    `num_ctx` in the Modelfile)."""
    context_warning: str | None = None
    """Set when the server's context is (or may be) smaller than milk's prompts: the server
    would silently drop their start. Says the fix."""


class ClaudeStatus(WireModel):
    path: str | None = None
    found: bool
    version: str | None = None
    error: str | None = None
    skip_permissions: bool | None = None
    """Set (true) only when `claude.skipPermissions` is on, so the user sees it."""
    logged_in: bool | None = None
    """Asked with `checkLogin`: what `claude auth status` says (null: it could not tell)."""
    login_detail: str | None = None
    """Asked with `checkLogin`: how it is logged in, or why it could not tell."""


class StatusParams(WireModel):
    check_login: bool = False
    """Also ask `claude auth status` (a second or two): for a health check, not a status bar."""


class Status(WireModel):
    version: str
    local: LocalStatus
    claude: ClaudeStatus
    storage: str


class PermissionOptionWire(WireModel):
    option_id: Literal["allow_once", "allow_session", "deny"]
    label: str


class FileEditWire(WireModel):
    """A file a tool would change: the whole text before and after (no `before` for a new
    file, no `after` for a deleted one); `truncated` when a side was cut (its text ends with
    a line saying how much)."""

    uri: str
    before: str | None = None
    after: str | None = None
    truncated: bool | None = None


class RequestPermissionParams(WireModel):
    session_id: str
    turn_id: str
    agent: AgentName
    tool_call_id: str
    tool: str
    input: dict[str, Any]
    description: str | None = None
    options: list[PermissionOptionWire]
    edits: list[FileEditWire] | None = None
    local_answer: bool | None = None
    """The hand-off question only: whether the local model gave an answer the user could
    keep (so a client offers only the choices that exist)."""


class RequestPermissionResult(WireModel):
    option_id: str


def permission_options(
    option_ids: list[str], labels: dict[str, str] | None = None
) -> list[PermissionOptionWire]:
    """The options of a question; `labels` overrides the standard ones (the hand-off
    question reuses `allow_once`/`deny` with its own words)."""
    chosen = {**PERMISSION_LABELS, **(labels or {})}
    return [
        PermissionOptionWire.model_validate({"optionId": oid, "label": chosen[oid]})
        for oid in option_ids
    ]


# ---- milk/update: one model per kind, discriminated on `kind` --------------------------------

ToolStatusName = Literal["pending", "running", "completed", "failed", "denied"]


class _Update(WireModel):
    """What every `milk/update` carries. Extra fields are a bug in the server: refused."""

    model_config = ConfigDict(extra="forbid")  # merged with WireModel's

    session_id: str
    turn_id: str
    seq: int
    elsewhere: bool | None = None
    """Since issue 31: true on a turn another server process runs (another door), relayed."""


class TurnStartedUpdate(_Update):
    kind: Literal["turn_started"]
    agent: AgentName
    route: Route
    reason: str
    user_text: str | None = None
    """On `elsewhere` turns: the user's message (this door never saw it)."""
    door: str | None = None
    """On `elsewhere` turns: the front door it was asked in (`milk_lsp.doors`' names)."""


class TextUpdate(_Update):
    kind: Literal["text"]
    agent: AgentName
    delta: str


class ThinkingUpdate(_Update):
    kind: Literal["thinking"]
    agent: AgentName
    delta: str


class ToolCallUpdate(_Update):
    kind: Literal["tool_call"]
    agent: AgentName
    tool_call_id: str
    name: str
    input: dict[str, Any]
    status: ToolStatusName


class ToolResultUpdate(_Update):
    kind: Literal["tool_result"]
    agent: AgentName
    tool_call_id: str
    output: str
    is_error: bool


class EscalatedUpdate(_Update):
    kind: Literal["escalated"]
    by: Literal["user", "agent", "fallback"]
    reason: str
    mode: Literal["first", "resume", "returning", "fresh"]
    context_chars: int


class NeedUpdate(_Update):
    kind: Literal["need"]
    current_need: str


class UsageUpdate(_Update):
    kind: Literal["usage"]
    agent: AgentName
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int | None = None
    cache_creation_tokens: int | None = None
    cost_usd: float | None = None


class NoticeUpdate(_Update):
    kind: Literal["notice"]
    severity: Literal["info", "warning", "error"]
    message: str


class ChangesUpdate(_Update):
    kind: Literal["changes"]
    changes: list[ChangeSummary]


class PlanUpdate(_Update):
    """An advisor turn's plan, whole, each time a step changes (issue 32)."""

    kind: Literal["plan"]
    steps: list[PlanStep]


class TurnEndedUpdate(_Update):
    kind: Literal["turn_ended"]
    agent: AgentName
    stop_reason: StopReason


Update = Annotated[
    TurnStartedUpdate
    | TextUpdate
    | ThinkingUpdate
    | ToolCallUpdate
    | ToolResultUpdate
    | EscalatedUpdate
    | NeedUpdate
    | UsageUpdate
    | NoticeUpdate
    | ChangesUpdate
    | PlanUpdate
    | TurnEndedUpdate,
    Field(discriminator="kind"),
]
UPDATE_MODELS: tuple[type[_Update], ...] = (
    TurnStartedUpdate,
    TextUpdate,
    ThinkingUpdate,
    ToolCallUpdate,
    ToolResultUpdate,
    EscalatedUpdate,
    NeedUpdate,
    UsageUpdate,
    NoticeUpdate,
    ChangesUpdate,
    PlanUpdate,
    TurnEndedUpdate,
)
_UPDATE = TypeAdapter(Update)


def build_update(payload: dict[str, Any]) -> dict[str, Any]:
    """A `milk/update` checked against its kind's model, as it goes on the wire. Raises
    `ValueError` for a payload the contract does not allow (a bug, never the user's)."""
    try:
        update = _UPDATE.validate_python(payload)
    except ValidationError as exc:
        raise ValueError(f"invalid milk/update {payload.get('kind')!r}: {exc}") from exc
    return update.to_wire()


def model_or_none(model: type[M], raw: Any) -> M | None:
    """A stored value as its wire model, or None when it does not fit (a damaged row)."""
    try:
        return model.model_validate(raw)
    except ValidationError:
        return None


# ---- milk/stats: the routing numbers ---------------------------------------------------


class StatsParams(WireModel):
    workspace_folder: Uri | None = None


class ModelStats(WireModel):
    """Where one local model's turns went (`total` sums every model)."""

    model: str
    answered_locally: int = 0
    handed_off: int = 0
    handed_off_by_signal: dict[str, int] = Field(default_factory=dict)
    escalated_by_user: int = 0
    local_edits_kept: int = 0
    local_edits_undone: int = 0


class AdvisorStats(WireModel):
    """Advisor turns (issue 32): Claude's plans, who did their steps, what Claude cost."""

    turns: int
    steps_local: int
    steps_claude: int
    steps_failed: int
    plan_cost_usd: float
    """What Claude's plans cost."""
    steps_cost_usd: float
    """What the steps Claude did cost."""
    estimated_all_claude_cost_usd: float | None
    """The same turns all on Claude: the average cost of the workspace's other Claude turns
    times the advisor turns (null with no other Claude turn that reported a cost)."""


class StatsBudget(WireModel):
    limit_usd: float | None
    spent_today_usd: float
    day: str
    """The local date `spentTodayUsd` counts, YYYY-MM-DD."""


class Stats(WireModel):
    workspace_folder: str
    total: ModelStats
    by_model: list[ModelStats]
    claude_turns: int
    claude_cost_usd: float
    average_claude_turn_cost_usd: float | None
    estimated_all_claude_cost_usd: float | None
    estimated_saved_usd: float | None
    budget: StatsBudget
    text: str
    advisor: AdvisorStats | None = None
    """Since issue 32; null until the workspace has an advisor turn."""

    def to_wire(self) -> dict[str, Any]:
        """With its nulls: a missing estimate is `null`, never left out."""
        return self.model_dump(mode="json", by_alias=True)
