"""`milk/update`: one model per kind, discriminated on `kind`; `build_update` checks each
one the server sends."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError

from milk_lsp.wire.base import AgentName, Route, WireModel
from milk_lsp.wire.turns import ChangeSummary, PlanStep, StopReason

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
    mode: Literal["first", "resume", "returning", "fresh", "brief"]
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


class Citation(WireModel):
    path: str
    uri: str
    line: int
    end_line: int
    quote: str


class ProposedPath(WireModel):
    path: str
    uri: str


class CitationsUpdate(_Update):
    """Since issue 38: the checked citations of a local answer, right after its text."""

    kind: Literal["citations"]
    agent: AgentName
    citations: list[Citation]
    proposed: list[ProposedPath] | None = None


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
    | CitationsUpdate
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
    CitationsUpdate,
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
