"""The contract's ground: method names, error reasons, the model every param and result is
(camelCase on the wire, set once in `WireModel`), `parse()` naming the bad field, and the bounds
of incoming strings. Nothing else in the package spells a method name."""

from __future__ import annotations

import enum
import re
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError
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


def model_or_none(model: type[M], raw: Any) -> M | None:
    """A stored value as its wire model, or None when it does not fit (a damaged row)."""
    try:
        return model.model_validate(raw)
    except ValidationError:
        return None
