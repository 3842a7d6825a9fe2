"""The params of the `milk/*` requests a client sends."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from milk_lsp.wire.base import MAX_TURN_LIMIT, Route, SessionId, Title, Uri, WireModel


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
