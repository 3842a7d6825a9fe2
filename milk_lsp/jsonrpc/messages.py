"""JSON-RPC 2.0 envelopes, read strictly and written as strict JSON (no pygls here).

pygls 2 parses a body with `json.loads(body, object_hook=...)` and guesses, for every nested
object, whether it is a message: params with a member named `jsonrpc`, or shaped like a
message, break the parse, and so do deep nesting, invalid UTF-8 or a message without `params`.
Each of those was dropped without an answer. Here a body is decoded and parsed once (depth
checked first), and the kind of message is decided by its top-level keys only. A message that
cannot be taken still yields its `id` when one can be read, so the request gets its error.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from itertools import accumulate
from typing import Any, Literal

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SERVER_NOT_INITIALIZED = -32002

MAX_JSON_DEPTH = 128
"""Deepest nesting of arrays and objects taken; LSP messages nest a few levels, and deeper
values would exhaust Python's recursion limit in the parser, the models or the logs."""

MsgId = int | str


@dataclass(frozen=True)
class Request:
    id: MsgId
    method: str
    params: Any
    """None when the message has no `params` (or `params: null`)."""


@dataclass(frozen=True)
class Notification:
    method: str
    params: Any


@dataclass(frozen=True)
class Response:
    id: MsgId
    result: Any
    error: dict[str, Any] | None


@dataclass(frozen=True)
class Invalid:
    """A message that cannot be taken, with what could be read of it.

    `kind` decides what happens: a "request" or an "unknown" message is answered with `code`
    (and `id`, null when unknown); a "response" fails the server's pending request with that
    id; a "notification" is only logged, as it cannot be answered.
    """

    code: int
    message: str
    id: MsgId | None
    kind: Literal["request", "notification", "response", "unknown"]


Message = Request | Notification | Response | Invalid


def parse_message(body: bytes) -> Message:
    """One framed body as a message, or as `Invalid` with the reason and the id if readable."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return invalid_from_text(
            body.decode("utf-8", "replace"),
            PARSE_ERROR,
            f"the message is not valid UTF-8 (byte {exc.start})",
        )
    if json_depth(text) > MAX_JSON_DEPTH:
        return invalid_from_text(
            text, INVALID_REQUEST, f"the message is nested deeper than {MAX_JSON_DEPTH} levels"
        )
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        return invalid_from_text(
            text,
            PARSE_ERROR,
            f"the message is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})",
        )
    except (ValueError, RecursionError) as exc:
        return invalid_from_text(text, PARSE_ERROR, f"the message is not valid JSON: {exc}")
    return classify(data)


def invalid_from_prefix(prefix: bytes, reason: str, code: int = INVALID_REQUEST) -> Invalid:
    """A message refused before its body was read (too large, no length, two lengths):
    `prefix` is what arrived of it, enough to find an `id` sent before the bulk of it."""
    return invalid_from_text(prefix.decode("utf-8", "replace"), code, reason)


def classify(data: Any) -> Message:
    """Request, notification or response, by the top-level keys of a parsed message."""
    if not isinstance(data, dict):
        what = "a batch (an array) is not supported" if isinstance(data, list) else "not an object"
        return Invalid(
            INVALID_REQUEST, f"the message must be a JSON object: {what}", None, "unknown"
        )
    msg_id = _valid_id(data.get("id"))
    has_id = "id" in data
    if "method" in data:
        kind: Literal["request", "notification"] = "request" if has_id else "notification"
        if has_id and msg_id is None:
            return Invalid(INVALID_REQUEST, "id must be an integer or a string", None, kind)
        problem = _envelope_problem(data)
        if problem is None and not isinstance(data["method"], str):
            problem = "method must be a string"
        params = data.get("params")
        if problem is None and params is not None and not isinstance(params, dict | list):
            problem = "params must be an object or an array"
        if problem is not None:
            return Invalid(INVALID_REQUEST, problem, msg_id, kind)
        if msg_id is not None:
            return Request(msg_id, data["method"], params)
        return Notification(data["method"], params)
    if "result" in data or "error" in data:
        problem = _envelope_problem(data)
        if msg_id is None:
            problem = "a response needs an id that is an integer or a string"
        elif "result" in data and "error" in data:
            problem = "a response has either result or error, not both"
        elif "error" in data and not _is_error_object(data["error"]):
            problem = "error must be an object with an integer code and a string message"
        if problem is not None:
            return Invalid(INVALID_REQUEST, problem, msg_id, "response")
        assert msg_id is not None
        return Response(msg_id, data.get("result"), data.get("error"))
    return Invalid(
        INVALID_REQUEST,
        "the message has no method (request or notification) and no result or error (response)",
        msg_id,
        "request" if has_id else "unknown",
    )


def invalid_from_text(text: str, code: int, reason: str) -> Invalid:
    """`Invalid` for text that did not parse whole: the top-level members read before the
    fault say whether it was a request (answered with its id) or a response."""
    members = top_level_members(text)
    msg_id = _valid_id(members.get("id"))
    if "method" not in members and ("result" in members or "error" in members):
        return Invalid(code, reason, msg_id, "response")
    if msg_id is not None:
        return Invalid(code, reason, msg_id, "request")
    return Invalid(code, reason, None, "unknown")


def _envelope_problem(data: dict[str, Any]) -> str | None:
    return None if data.get("jsonrpc") == "2.0" else 'jsonrpc must be "2.0"'


def _valid_id(value: Any) -> MsgId | None:
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    return None


def _is_error_object(error: Any) -> bool:
    return (
        isinstance(error, dict)
        and isinstance(error.get("code"), int)
        and not isinstance(error.get("code"), bool)
        and isinstance(error.get("message"), str)
    )


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


# ---- reading what did not parse ------------------------------------------------------------

_STRING = r'"[^"\\]*(?:\\.[^"\\]*)*"'
_STRINGS = re.compile(_STRING, re.DOTALL)
_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")
_DEPTH_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
_TOKEN = re.compile(
    r"[ \t\r\n]*(?:(?P<string>" + _STRING + r")|(?P<punct>[\[\]{}:,])"
    r"|(?P<scalar>-?[0-9][0-9.eE+-]*|true|false|null))",
    re.DOTALL,
)

COMPOSITE = object()
"""Stands for an object or array value in `top_level_members` (it is skipped, not read)."""
UNREADABLE = object()
"""Stands for the value of the member where the text stops being valid JSON."""


def json_depth(text: str) -> int:
    """How deep arrays and objects nest in `text` (brackets inside strings do not count)."""
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return 0  # cannot be deeper than the number of opening brackets: the common case
    brackets = _NOT_BRACKETS.sub("", _STRINGS.sub("", text))
    return max(accumulate(map(_DEPTH_STEP.__getitem__, brackets)), default=0)


def top_level_members(text: str) -> dict[str, Any]:
    """The members of a top-level JSON object read in order until the text stops being
    valid; scalar values are decoded, object and array values are `COMPOSITE`, and the
    member where the text stops is `UNREADABLE`."""
    found: dict[str, Any] = {}
    token = _TOKEN.match(text)
    if token is None or token["punct"] != "{":
        return found
    pos = token.end()
    while True:
        key = _TOKEN.match(text, pos)
        if key is None or key["string"] is None:
            return found
        try:
            name = json.loads(key["string"])
        except ValueError:
            return found
        colon = _TOKEN.match(text, key.end())
        if colon is None or colon["punct"] != ":":
            return found
        found[name] = UNREADABLE
        value = _TOKEN.match(text, colon.end())
        if value is None:
            return found
        if value["punct"] in ("{", "["):
            end = _skip_composite(text, value.end())
            if end is None:
                return found
            found[name] = COMPOSITE
        elif value["punct"] is None:
            try:
                found[name] = json.loads(value[0])
            except ValueError:
                return found
            end = value.end()
        else:
            return found
        after = _TOKEN.match(text, end)
        if after is None or after["punct"] != ",":
            return found
        pos = after.end()


def _skip_composite(text: str, pos: int) -> int | None:
    """The end of the object or array whose opening bracket ends at `pos`; None if cut."""
    depth = 1
    while depth:
        token = _TOKEN.match(text, pos)
        if token is None:
            return None
        if token["punct"] in ("{", "["):
            depth += 1
        elif token["punct"] in ("}", "]"):
            depth -= 1
        pos = token.end()
    return pos


# ---- writing -------------------------------------------------------------------------------


def dumps_strict(data: Any, default: Callable[[Any], Any]) -> tuple[str, bool]:
    """`data` as strict JSON; NaN and infinities (which Python would write as the bare,
    invalid `NaN`/`Infinity`) become null. Returns the text and whether anything was replaced."""
    try:
        return json.dumps(data, default=default, allow_nan=False), False
    except ValueError:
        # A non-finite float somewhere (or a cycle, which fails again below): go through
        # plain JSON values, where every float can be seen, and null the non-finite ones.
        plain = json.loads(json.dumps(data, default=default))
        return json.dumps(_finite(plain), allow_nan=False), True


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_finite(item) for item in value]
    return value
