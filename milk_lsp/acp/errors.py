"""JSON-RPC errors of `milk-lsp acp`: what goes wrong is said with the field that caused it.

Params that do not validate against the ACP schema get -32602 listing every bad field by its
path on the wire (`prompt[0].text`, not pydantic's `prompt.0.text.text`), instead of the
SDK's bare "Invalid params" with pydantic's raw error list. The engine's refusals keep their
reason in `data.reason`: a bad id or folder is -32602 naming the field, the rest -32603.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any

from acp import RequestError

from milk_lsp import wire
from milk_lsp.engine import EngineError

logger = logging.getLogger(__name__)

INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SHOWN_PROBLEMS = 5


def invalid_params(field: str, message: str, reason: str = "invalid_params") -> RequestError:
    return RequestError(
        INVALID_PARAMS, f"invalid params: {field}: {message}", {"reason": reason, "field": field}
    )


def busy(session_id: str) -> RequestError:
    return RequestError(
        INTERNAL_ERROR,
        f"session {session_id} is still running a prompt; cancel it (session/cancel) or wait",
        {"reason": wire.ERROR_SESSION_BUSY},
    )


@contextlib.contextmanager
def engine_errors(field: str) -> Iterator[None]:
    """EngineError → a JSON-RPC error: a bad id or folder is -32602 naming `field`, the rest
    (busy elsewhere, storage) -32603; `data.reason` is the engine's reason either way."""
    try:
        yield
    except EngineError as exc:
        if exc.reason in (wire.ERROR_SESSION_NOT_FOUND, wire.ERROR_WORKSPACE_UNKNOWN):
            raise invalid_params(field, exc.message, reason=exc.reason) from None
        raise RequestError(
            INTERNAL_ERROR, exc.message, {"reason": exc.reason, **exc.data}
        ) from None


def validation_error(exc: ValueError, raw: Any) -> RequestError | None:
    """pydantic's ValidationError (a ValueError with `errors()`) as -32602 naming each field
    as it is spelled on the wire (`prompt[0].text`); None for any other ValueError."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return None
    problems = [
        {"field": _field_path(raw, error.get("loc", ())), "message": str(error.get("msg", ""))}
        for error in errors(include_url=False, include_context=False, include_input=False)
    ]
    shown = "; ".join(f"{p['field']}: {p['message']}" for p in problems[:SHOWN_PROBLEMS])
    if len(problems) > SHOWN_PROBLEMS:
        shown += f"; and {len(problems) - SHOWN_PROBLEMS} more"
    return RequestError(
        INVALID_PARAMS,
        f"invalid params: {shown}",
        {"reason": "invalid_params", "errors": problems},
    )


def _field_path(raw: Any, loc: Sequence[Any]) -> str:
    """pydantic's `loc` as a path into the params (`prompt[0].text`); the tag pydantic puts
    in for a block's `type` (the middle `text` of `prompt.0.text.text`) is left out."""
    path = ""
    node = raw
    tag_possible = False
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
            node = node[part] if isinstance(node, list) and 0 <= part < len(node) else None
            tag_possible = True
            continue
        key = str(part)
        if tag_possible and isinstance(node, dict) and node.get("type") == key:
            tag_possible = False
            continue  # the union member's tag (the block's `type`), not a field
        tag_possible = False
        path += f".{key}" if path else key
        node = node.get(key) if isinstance(node, dict) else None
    return path or "params"


Handler = Callable[[str, Any, bool], Awaitable[Any]]


def checked(router: Handler) -> Handler:
    async def handle(method: str, params: Any, is_notification: bool) -> Any:
        try:
            return await router(method, params, is_notification)
        except ValueError as exc:
            error = validation_error(exc, params)
            if error is None:
                raise
            if is_notification:
                logger.warning("ignored %s: %s", method, error)
                return None
            raise error from None

    return handle
