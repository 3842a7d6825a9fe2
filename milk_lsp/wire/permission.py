"""`milk/requestPermission`: the question a tool call asks the user, and its answer."""

from __future__ import annotations

from typing import Any, Literal

from milk_lsp.wire.base import AgentName, WireModel

PERMISSION_LABELS = {
    "allow_once": "Allow once",
    "allow_session": "Allow for this session",
    "deny": "Deny",
}


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
