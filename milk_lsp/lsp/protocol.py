"""milk's JSON-RPC protocol: pygls' LanguageServerProtocol with the reading and writing hardened.

* Reading: frames come from `framing.FrameReader` and are parsed by `jsonrpc.parse_message`
  instead of pygls' `run_async` and `object_hook` guessing (see those modules for why). Every
  request with an id gets an answer: -32700 (not JSON, not UTF-8), -32600 (not a request,
  too large, too deep, after `shutdown`), -32602 (params the LSP types do not take),
  -32002 (before `initialize`), or what its handler answers.
* `initialize` is tolerant: clients send odd optional capabilities, and a server that refuses
  them stays uninitialized for the whole session. Only params that are missing or not an
  object are refused; an optional part the LSP types do not take (`capabilities.window: 5`,
  `workspaceFolders: "nope"`, `capabilities.experimental.milk: "yes"`) is left out, and a
  missing or invalid `capabilities` counts as `{}`. Each is named in a `window/logMessage`
  warning (`initialize_params`).
* Dispatch goes straight to pygls' `_handle_request` / `_handle_notification` /
  `_handle_response` with params structured here, so a request without `params` reaches its
  handler as None.
* Writing: every outgoing message is strict JSON (`jsonrpc.dumps_strict`): a NaN from a model
  is sent as null instead of the bare `NaN` that breaks the client's parser. Once the client
  is gone (its end of stdout closed: an editor that quit), that is logged once, at info,
  and later messages are dropped without a word; a request sent to it fails at once.
* Engine refusals: an `EngineError` a handler raises answers RequestFailed (-32803) with
  its reason in `data` (`request_failed`, the one mapping both LSP doors use).
* Nudging: Emacs 28's jsonrpc.el 1.0.14 (eglot) stops reading a batch of messages at the
  response to its synchronous request and reads the rest only when more output arrives. A permission
  question sent just after the answer to `milk.ask` then waited unseen until its timeout. So
  when output that followed a response goes quiet, `$/milk/nudge` (ignored by clients, as
  every `$/` notification may be) is sent a few times.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import copy
import inspect
import json
import logging
import re
import threading
from collections.abc import Generator, Iterator
from concurrent.futures import Executor
from typing import Any

import attrs
import cattrs
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInternalError
from pygls.protocol import LanguageServerProtocol, lsp_method

from milk_lsp import wire
from milk_lsp.errors import EngineError
from milk_lsp.jsonrpc import messages as jsonrpc
from milk_lsp.jsonrpc.framing import Frame, FrameReader, Rejected
from milk_lsp.text import cut

logger = logging.getLogger(__name__)

_SHOWN_PARAM_PROBLEMS = 3
_SNAKE = re.compile(r"_([a-z0-9])")
_INDEX = re.compile(r"\[(?:'([^']*)'|(\d+))\]")
_STEP = re.compile(r"\.(\w+)|\[(\d+)\]|\['([^']*)'\]")
_REPAIR_PASSES = 8
"""How many times `initialize_params` leaves parts out and structures again."""


def request_failed(exc: EngineError) -> JsonRpcException:
    """A request the engine cannot serve, as RequestFailed (-32803) with its reason (and
    whatever more the error carries) in `data`."""
    return JsonRpcException(
        exc.message,
        code=types.LSPErrorCodes.RequestFailed.value,
        data={"reason": exc.reason, **exc.data},
    )


@contextlib.contextmanager
def refusals_answered() -> Iterator[None]:
    """An `EngineError` raised inside answers the request as `request_failed`."""
    try:
        yield
    except EngineError as exc:
        raise request_failed(exc) from None


class _BadParams(Exception):
    """Params the method's LSP type does not take; the message names the field."""


class MilkProtocol(LanguageServerProtocol):
    """Adds `capabilities.experimental.milk` to the initialize result, and the hardening above."""

    def __init__(self, server: Any, converter: cattrs.Converter) -> None:
        super().__init__(server, converter)
        self.initialize_answered = False
        """True once `initialize` succeeded; other requests before it get -32002."""
        self._pending_writes: set[asyncio.Future[Any]] = set()
        self._nudge_owed = False
        """A response was written and output followed it: nudge once it goes quiet."""
        self._nudge_step = 0
        """Which of `NUDGE_DELAYS` the armed timer waits for."""
        self._nudge_timer: asyncio.TimerHandle | None = None
        self.client_gone = False
        """Writing to the client failed with a broken pipe: nothing more is sent."""

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(
        self, params: types.InitializeParams
    ) -> Generator[Any, Any, types.InitializeResult]:
        result: types.InitializeResult = yield from super().lsp_initialize(params)
        result.capabilities.experimental = {"milk": {"protocolVersion": wire.PROTOCOL_VERSION}}
        self.initialize_answered = True
        return result

    # ---- reading -----------------------------------------------------------------------

    def handle_frame(self, frame: Frame | Rejected) -> None:
        """Take one frame from the reader; never raises, so the reading loop goes on."""
        message: jsonrpc.Message | None = None
        try:
            if isinstance(frame, Rejected):
                message = jsonrpc.invalid_from_prefix(frame.prefix, frame.reason, frame.code)
            else:
                message = jsonrpc.parse_message(frame.body)
            self.dispatch(message)
        except Exception as exc:
            logger.exception("could not handle a message")
            if message is None or isinstance(message, jsonrpc.Request):
                msg_id = message.id if message is not None else None
                self.send_error(msg_id, jsonrpc.INTERNAL_ERROR, f"the server failed: {exc}")

    def dispatch(self, message: jsonrpc.Message) -> None:
        ctx = contextvars.copy_context()  # each handler runs in its own context, as in pygls
        if isinstance(message, jsonrpc.Invalid):
            self._handle_invalid(message)
        elif isinstance(message, jsonrpc.Request):
            error = self._refusal(message.method)
            if error is not None:
                self.send_error(message.id, *error)
                return
            try:
                params = self._structure_params(message.method, message.params)
            except _BadParams as exc:
                self.send_error(message.id, jsonrpc.INVALID_PARAMS, str(exc))
                return
            ctx.run(self._handle_request, message.id, message.method, params)
        elif isinstance(message, jsonrpc.Notification):
            if self._drops_notification(message.method):
                return
            try:
                params = self._structure_params(message.method, message.params)
            except _BadParams as exc:
                logger.warning("notification %s ignored: %s", message.method, exc)
                return
            ctx.run(self._handle_notification, message.method, params)
        else:
            ctx.run(self._take_response, message)

    def _refusal(self, method: str) -> tuple[int, str] | None:
        """Why a request is answered with an error before its handler, if it is."""
        if self._shutdown:
            return jsonrpc.INVALID_REQUEST, "the server is shutting down (after shutdown)"
        if not self.initialize_answered and method != types.INITIALIZE:
            return jsonrpc.SERVER_NOT_INITIALIZED, "the server is not initialized yet"
        return None

    def _drops_notification(self, method: str) -> bool:
        """LSP: notifications before `initialize` or after `shutdown` are dropped, but `exit`."""
        if method == types.EXIT:
            return False
        if not self.initialize_answered:
            logger.warning("notification %s before initialize ignored", method)
            return True
        if self._shutdown:
            logger.warning("notification %s after shutdown ignored", method)
            return True
        return False

    def _structure_params(self, method: str, params: Any) -> Any:
        """Params as the method's LSP type; custom methods (`milk/*`) keep the plain JSON."""
        if method not in types.METHOD_TO_TYPES:
            return params
        params_type: Any = types.METHOD_TO_TYPES[method][2]
        if params_type is None:
            return None
        if params is None:
            raise _BadParams("invalid params: params: required")
        if attrs.has(params_type) and not isinstance(params, dict):
            raise _BadParams("invalid params: params: must be an object")
        if method == types.INITIALIZE:
            structured, ignored = initialize_params(self._converter, params)
            for where, problem in ignored:
                self._warn_client(f"milk: initialize: {where} ignored ({problem})")
            return structured
        try:
            return self._converter.structure(params, params_type)
        except Exception as exc:
            raise _BadParams("invalid params: " + _describe(exc)) from None

    def _warn_client(self, message: str) -> None:
        """A `window/logMessage` warning (allowed before the `initialize` answer, too)."""
        logger.info("%s", message)
        self.notify(
            types.WINDOW_LOG_MESSAGE,
            types.LogMessageParams(type=types.MessageType.Warning, message=message),
        )

    def _take_response(self, message: jsonrpc.Response) -> None:
        if message.error is not None:
            error = types.ResponseError(
                code=message.error["code"],
                message=message.error["message"],
                data=message.error.get("data"),
            )
            self._handle_response(message.id, None, error)
            return
        result = message.result
        response_type = self._result_types.pop(message.id, None)
        if response_type is not None:
            try:
                result = self._converter.structure(
                    {"jsonrpc": "2.0", "id": message.id, "result": result}, response_type
                ).result
            except Exception as exc:
                self._fail_pending(message.id, "invalid result: " + _describe(exc))
                return
        self._handle_response(message.id, result)

    def _handle_invalid(self, message: jsonrpc.Invalid) -> None:
        if message.kind == "response":
            logger.warning("malformed response from the client: %s", message.message)
            if message.id is not None:
                self._fail_pending(message.id, message.message)
            return
        if message.kind == "notification":
            logger.warning("malformed notification ignored: %s", message.message)
            return
        logger.warning("answered %s to a malformed message: %s", message.code, message.message)
        self.send_error(message.id, message.code, message.message)

    def _fail_pending(self, msg_id: jsonrpc.MsgId, reason: str) -> None:
        """The client's answer to our request was malformed: the request fails with why."""
        self._result_types.pop(msg_id, None)
        error = types.ResponseError(
            code=jsonrpc.INVALID_REQUEST, message=f"the client's response was malformed: {reason}"
        )
        self._handle_response(msg_id, None, error)

    def send_error(self, msg_id: jsonrpc.MsgId | None, code: int, message: str) -> None:
        """An error response; `msg_id` None is sent as `"id": null` (JSON-RPC's unknown id)."""
        self._send_data(
            {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}
        )

    # ---- writing -----------------------------------------------------------------------

    def _send_data(self, data: Any) -> None:
        """pygls' `_send_data`, writing strict JSON and a byte-exact Content-Length."""
        if not data:
            return
        if self.writer is None:
            logger.error("cannot send a message: no transport")
            return
        if self.client_gone:
            self._dropped(data)
            return
        try:
            text, replaced = jsonrpc.dumps_strict(data, default=self._serialize_message)
            if replaced:
                logger.warning("a message held NaN or infinite numbers: sent as null")
            body = text.encode("utf-8")
            if self._include_headers:
                header = (
                    f"Content-Length: {len(body)}\r\n"
                    f"Content-Type: {self.CONTENT_TYPE}; charset={self.CHARSET}\r\n\r\n"
                )
                body = header.encode("ascii") + body
            written = self.writer.write(body)
            if inspect.isawaitable(written):  # websocket writers; stdio writes at once
                pending = asyncio.ensure_future(written)
                self._pending_writes.add(pending)
                pending.add_done_callback(self._pending_writes.discard)
            self._after_write(data)
        except (BrokenPipeError, ConnectionResetError):
            self.client_gone = True
            logger.info("the client stopped reading (a broken pipe): nothing more is sent to it")
            self._dropped(data)
        except Exception as error:
            logger.exception("cannot send a message")
            self._server._report_server_error(error, JsonRpcInternalError)

    def _dropped(self, data: Any) -> None:
        """A message not sent: the client is gone. A request to it fails at once."""
        if isinstance(data, dict):
            msg_id, method = data.get("id"), data.get("method")
        else:
            msg_id, method = getattr(data, "id", None), getattr(data, "method", None)
        if method is None or msg_id is None:
            return
        self._result_types.pop(msg_id, None)
        future = self._request_futures.pop(msg_id, None)
        if future is not None and not future.done():
            future.set_exception(ConnectionError(f"{method}: the client is gone"))

    # ---- nudging (see the module docstring) ------------------------------------------------

    NUDGE_DELAYS: tuple[float, ...] = (0.25, 1.0, 3.0)
    """Seconds of quiet before each nudge: a client that reads late gets a later one."""

    def _after_write(self, data: Any) -> None:
        method = data.get("method") if isinstance(data, dict) else getattr(data, "method", None)
        if method == wire.NUDGE:
            return
        if method is None:  # a response: what is written after it may wait unread
            self._nudge_owed = True
            return
        if not self._nudge_owed:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # written outside the event loop: nothing can follow up
            return
        if self._nudge_timer is not None:
            self._nudge_timer.cancel()
        self._nudge_step = 0
        self._nudge_timer = loop.call_later(self.NUDGE_DELAYS[0], self._nudge)

    def _nudge(self) -> None:
        self._nudge_timer = None
        if self._shutdown or self.writer is None:
            return
        if self.client_gone:
            return
        self.notify(wire.NUDGE, {})
        self._nudge_step += 1
        if self._nudge_step < len(self.NUDGE_DELAYS):
            delay = self.NUDGE_DELAYS[self._nudge_step]
            self._nudge_timer = asyncio.get_running_loop().call_later(delay, self._nudge)
        else:
            self._nudge_owed = False


def _describe(exc: Exception) -> str:
    """cattrs' structuring error as `field: problem` with the wire's camelCase names."""
    if isinstance(exc, cattrs.BaseValidationError):
        problems = []
        for line in cattrs.transform_error(exc, path="params"):
            problem, _, where = line.rpartition(" @ ")
            field = _SNAKE.sub(lambda m: m.group(1).upper(), where.removeprefix("params."))
            field = _INDEX.sub(lambda m: "." + (m.group(1) or m.group(2)), field)
            problems.append(f"{field}: {problem}" if problem else line)
        shown = problems[:_SHOWN_PARAM_PROBLEMS]
        if len(problems) > len(shown):
            shown.append(f"and {len(problems) - len(shown)} more")
        return "; ".join(shown)
    return f"params: {exc}"


def initialize_params(
    converter: cattrs.Converter, params: dict[str, Any]
) -> tuple[types.InitializeParams, list[tuple[str, str]]]:
    """`initialize`'s params as the LSP type, leaving out every part it does not take (see the
    module docstring), with the parts left out: `(dotted field, problem)`. `_BadParams` only
    when nothing can be left out to make them fit."""
    data: Any = params
    ignored: dict[tuple[str | int, ...], str] = {}
    for _ in range(_REPAIR_PASSES):
        try:
            structured: types.InitializeParams = converter.structure(data, types.InitializeParams)
        except cattrs.BaseValidationError as exc:
            if data is params:
                data = copy.deepcopy(params)
            if not _leave_out(data, exc, ignored):
                raise _BadParams("invalid params: " + _describe(exc)) from None
            continue
        except Exception as exc:
            raise _BadParams("invalid params: " + _describe(exc)) from None
        in_order = sorted(ignored.items(), key=lambda item: _sort_key(item[0]))
        found = [(_dotted(where), problem) for where, problem in in_order]
        return structured, found + _milk_capability_problems(structured.capabilities)
    raise _BadParams(
        "invalid params: " + "; ".join(f"{_dotted(w)}: {p}" for w, p in ignored.items())
    )


def _leave_out(
    data: dict[str, Any], exc: cattrs.BaseValidationError, ignored: dict[tuple[str | int, ...], str]
) -> bool:
    """Leave out of `data` the parts `exc` names (a part that is missing: the part holding
    it; `capabilities`: `{}` in its place); False when there is nothing to leave out."""
    found: dict[tuple[str | int, ...], str] = {}
    for line in cattrs.transform_error(exc, path="$"):
        problem, _, where = line.rpartition(" @ ")
        steps = _steps(where)
        if steps is None:
            return False
        target, rest = _existing_part(data, steps)
        if not target and steps[:1] == ["capabilities"]:  # required: `{}` in its place
            found.setdefault(("capabilities",), f"{problem}; taken as {{}}")
            continue
        if not target:
            return False
        value = _at(data, target)
        if rest and not isinstance(value, dict | list):
            kind = "an array" if isinstance(rest[0], int) else "an object"
            problem = f"must be {kind}, got {_shown(value)}"
        elif rest:
            problem = f"{_dotted(rest)}: {problem}"
        else:
            problem = f"{problem}, got {_shown(value)}"
        if target == ("capabilities",):
            problem = f"{problem}; taken as {{}}"
        found.setdefault(target, problem)
    # A part inside another one left out goes with it; lists lose their items from the end.
    targets = [t for t in found if not any(t[: len(o)] == o and t != o for o in found)]
    for target in sorted(targets, key=_sort_key, reverse=True):
        if target == ("capabilities",):
            data["capabilities"] = {}
        else:
            del _at(data, target[:-1])[target[-1]]
        problem = found[target]
        inner = [t for t in ignored if t[: len(target)] == target and t != target]
        if inner and problem.endswith("required field missing"):
            # A required part left out before: the part holding it goes, for that reason.
            problem = f"{_dotted(inner[0][len(target) :])}: {ignored[inner[0]]}"
        for t in inner:
            del ignored[t]
        ignored[target] = problem
    return bool(targets)


def _steps(where: str) -> list[str | int] | None:
    """cattrs' `$.a.b[0]['c']` as steps, None when it does not read as a path."""
    if not where.startswith("$"):
        return None
    steps: list[str | int] = []
    at = 1
    while at < len(where):
        step = _STEP.match(where, at)
        if step is None:
            return None
        name, index, key = step.groups()
        steps.append(int(index) if index is not None else key if key is not None else name)
        at = step.end()
    return steps


def _existing_part(
    data: Any, steps: list[str | int]
) -> tuple[tuple[str | int, ...], tuple[str | int, ...]]:
    """The longest start of `steps` that is in `data` (with its keys as `data` spells them,
    camelCase), and the steps that are not."""
    node = data
    found: list[str | int] = []
    for n, step in enumerate(steps):
        if isinstance(step, int) and isinstance(node, list) and 0 <= step < len(node):
            node = node[step]
        elif isinstance(step, str) and isinstance(node, dict):
            camel = _SNAKE.sub(lambda m: m.group(1).upper(), step)
            key = step if step in node else camel if camel in node else None
            if key is None:
                return tuple(found), tuple(steps[n:])
            node, step = node[key], key
        else:
            return tuple(found), tuple(steps[n:])
        found.append(step)
    return tuple(found), ()


def _at(data: Any, steps: tuple[str | int, ...]) -> Any:
    for step in steps:
        data = data[step]
    return data


def _shown(value: Any) -> str:
    return cut(json.dumps(value, default=str), 60)  # ASCII: a lone surrogate escaped


def _sort_key(steps: tuple[str | int, ...]) -> tuple[tuple[int, int, str], ...]:
    return tuple((0, step, "") if isinstance(step, int) else (1, 0, step) for step in steps)


def _dotted(steps: tuple[str | int, ...]) -> str:
    return ".".join(_SNAKE.sub(lambda m: m.group(1).upper(), str(step)) for step in steps)


def _milk_capability_problems(capabilities: types.ClientCapabilities) -> list[tuple[str, str]]:
    """`capabilities.experimental.milk` (`{requestPermission?: boolean}`) left out where it is
    not what milk reads (the LSP types take any value there)."""
    experimental = capabilities.experimental
    if experimental is None:
        return []
    if not isinstance(experimental, dict):
        capabilities.experimental = None
        return [("capabilities.experimental", f"must be an object, got {_shown(experimental)}")]
    milk = experimental.get("milk")
    if milk is None:
        return []
    if not isinstance(milk, dict):
        capabilities.experimental = {k: v for k, v in experimental.items() if k != "milk"}
        return [("capabilities.experimental.milk", f"must be an object, got {_shown(milk)}")]
    asks = milk.get("requestPermission")
    if asks is not None and not isinstance(asks, bool):
        kept = {k: v for k, v in milk.items() if k != "requestPermission"}
        capabilities.experimental = {**experimental, "milk": kept}
        problem = f"must be true or false, got {_shown(asks)}"
        return [("capabilities.experimental.milk.requestPermission", problem)]
    return []


async def serve_frames(
    reader: FrameReader,
    protocol: MilkProtocol,
    stop_event: threading.Event,
    executor: Executor,
) -> None:
    """The reading loop (pygls' `run_async` with milk's framing): one frame at a time, read in
    a worker thread, handled on the event loop, until the input ends or the server stops."""
    loop = asyncio.get_running_loop()
    while not stop_event.is_set():
        try:
            frame = await loop.run_in_executor(executor, reader.next)
        except OSError as exc:
            logger.error("cannot read the client's messages: %s; stopping", exc)
            return
        if frame is None:
            logger.info("the client closed the connection")
            return
        protocol.handle_frame(frame)
