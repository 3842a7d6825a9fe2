"""The local agent: an OpenAI-compatible chat-completions client with a bounded tool loop.

One `LocalAgent` per configured endpoint. Each turn (`run`) is an async generator of
`AgentEvent`s: it streams a chat completion (SSE through httpx-sse), runs the tool calls the
model made, sends their results back and asks again, until a reply has no tool calls
(`TurnDone`), the model calls `escalate_to_claude` (`EscalationRequested`), the round bound
is hit or something fails (`TurnFailed`). It never raises except for cancellation, and the
HTTP response is always closed in `finally` (the `async with` around the stream), so a
cancelled turn leaves no open stream behind.

Streamed tool calls are merged leniently (`merge_tool_call_deltas`): servers differ in what
they repeat and when they say they are done, so the loop goes by the tool calls it saw,
never by `finish_reason`. See `shared/research/local-model.md` for the recorded shapes.

Small models (Qwen2.5-Coder behind llama.cpp, Ollama or vLLM) often write a tool call as
text instead: a ```json block, bare JSON, or `<tool_call>`/`[tool_call]` tags. With
`LocalSettings.text_tool_calls`, a reply without structured calls whose whole text is such
a call to an offered tool is run as that call (`parse_text_tool_calls`). Text that starts
like one is held back while it still could be one (`TextCallGate`), so the JSON is never
shown as an answer; any other text streams as it comes. The parsing of tool calls, both
kinds, lives in `milk_lsp.agents.tool_calls`, and folding one streamed reply's chunks in
`milk_lsp.agents.local_stream`; this module owns the HTTP side and the loop.

All per-turn state lives in the generator's locals; the agent object only holds settings
and the shared `httpx.AsyncClient`, so several sessions can run turns at once.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import secrets
import socket
from collections.abc import AsyncGenerator, Iterable, Mapping
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

import httpx
import httpx_sse

from milk_lsp.agents.base import (
    AgentEvent,
    EscalationRequested,
    FailureReason,
    LocalGaveUp,
    NoticeEvent,
    TextDelta,
    ToolCallEvent,
    ToolResultEvent,
    ToolStatus,
    TurnDone,
    TurnFailed,
)
from milk_lsp.agents.local_stream import (
    LocalModelError,
    Reply,
    apply_chunk,
    body_detail,
    final_reply_notices,
    length_notice,
    short,
    usage_event,
)
from milk_lsp.agents.local_watch import NUDGE, TurnWatch, embedded_call
from milk_lsp.agents.tool_calls import (
    MergedToolCall,
    TextCallGate,
    merge_tool_call_deltas,
    parse_text_tool_calls,
    parse_tool_arguments,
)

__all__ = [
    "ESCALATE_TOOL_NAME",
    "ESCALATE_TOOL_SPEC",
    "LocalAgent",
    "LocalModelError",
    "LocalSettings",
    "LocalTools",
    "ToolOutcomeLike",
]

logger = logging.getLogger(__name__)

ESCALATE_TOOL_NAME = "escalate_to_claude"

ESCALATE_TOOL_SPEC: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": ESCALATE_TOOL_NAME,
        "description": (
            "Hand this request over to Claude, a much stronger coding agent that works in the "
            "same workspace. Call it instead of guessing when the task is beyond you: changes "
            "across many files, a design decision, a bug you could not find after looking, "
            "an answer you are not sure of, or when the user asks for Claude. Your part of the "
            "turn ends when you call it, so call it alone, after any tool calls you still need. "
            "In `reason`, tell Claude what the user needs and what you found so far."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "reason": {
                    "type": "string",
                    "description": (
                        "Why Claude should take over: the user's need, what you tried or "
                        "learned, and what is left to do."
                    ),
                }
            },
            "required": ["reason"],
        },
    },
}

_ERROR_BODY_LIMIT = 64 * 1024
"""Bytes of an HTTP error body read to explain a failure."""
_RAW_ARGS_CHARS = 500
"""Characters of invalid tool arguments quoted back to the model."""


@dataclass(frozen=True)
class LocalSettings:
    """How to reach the local OpenAI-compatible endpoint (`local.*` settings)."""

    base_url: str = "http://127.0.0.1:11434/v1"
    model: str | None = None
    """None: the first model `GET {base_url}/models` lists, looked up at each turn."""
    api_key: str | None = field(default=None, repr=False)
    """Sent as a Bearer token when set. A secret: kept out of reprs and logs."""
    max_tool_rounds: int = 20
    connect_timeout_seconds: float = 5.0
    read_timeout_seconds: float = 120.0
    """The longest silence from the server (between two reads) before the turn fails."""
    text_tool_calls: bool = True
    """Run a reply that is only a tool call written as text (a ```json block, bare JSON,
    `<tool_call>`/`[tool_call]` tags; small models do this) as that tool call."""


class ToolOutcomeLike(Protocol):
    """What `LocalTools.call` returns (`milk_lsp.agents.tools.ToolOutcome` fits)."""

    @property
    def output(self) -> str: ...

    @property
    def is_error(self) -> bool: ...

    @property
    def denied(self) -> bool: ...


class LocalTools(Protocol):
    """The workspace tools the local model may call (`milk_lsp.agents.tools.WorkspaceTools`)."""

    @property
    def names(self) -> frozenset[str]: ...

    def specs(self) -> list[dict[str, Any]]:
        """OpenAI `tools` entries."""
        ...

    async def call(
        self, tool_call_id: str, name: str, arguments: dict[str, Any]
    ) -> ToolOutcomeLike: ...


# -- the tool calls of one round -------------------------------------------------------------


@dataclass(frozen=True)
class _Call:
    id: str
    name: str
    raw_arguments: str
    arguments: dict[str, Any] | None
    """None when the raw text was not a JSON object (`invalid` says why)."""
    invalid: str

    @property
    def display_input(self) -> dict[str, Any]:
        if self.arguments is not None:
            return self.arguments
        return {"raw_arguments": self.raw_arguments}

    def wire(self) -> dict[str, Any]:
        """The call as it goes back to the model in the assistant message."""
        # Invalid arguments are echoed as "{}": some servers re-parse the history's arguments
        # and reject the whole request otherwise. The tool result quotes what was sent.
        arguments = json.dumps(self.arguments) if self.arguments is not None else "{}"
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": arguments},
        }


def _new_call_id(used: set[str]) -> str:
    while True:
        call_id = f"call_{secrets.token_hex(8)}"
        if call_id not in used:
            return call_id


def _prepare_calls(merged: list[MergedToolCall], used_ids: set[str]) -> list[_Call]:
    """Give every named call a turn-unique id and parse its arguments."""
    calls: list[_Call] = []
    for call in merged:
        call_id = call.id if call.id and call.id not in used_ids else _new_call_id(used_ids)
        used_ids.add(call_id)
        arguments, invalid = parse_tool_arguments(call.arguments)
        calls.append(_Call(call_id, call.name, call.arguments, arguments, invalid))
    return calls


def _escalation_reason(call: _Call) -> str:
    if call.arguments is None:
        return call.raw_arguments.strip()
    reason = call.arguments.get("reason")
    if isinstance(reason, str):
        return reason.strip()
    return ""


@dataclass(frozen=True)
class _Outcome:
    output: str
    is_error: bool = False
    denied: bool = False


# -- transport errors --------------------------------------------------------------------------


def _connect_why(exc: BaseException) -> str:
    """The most telling cause of a connect failure ("connection refused", …)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError):
            return "connection refused"
        if isinstance(current, socket.gaierror):
            return f"cannot resolve the host name ({current.strerror or current})"
        current = current.__cause__ or current.__context__
    return str(exc) or type(exc).__name__


def _is_loopback(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _http_hint(status: int) -> str:
    if status in (401, 403):
        return "; check local.apiKey"
    if status == 404:
        return "; check local.baseUrl and local.model"
    if status == 503:
        return "; the server may still be loading the model, try again shortly"
    return ""


# -- the agent ---------------------------------------------------------------------------------


class LocalAgent:
    """Talks to one OpenAI-compatible endpoint; `run` is one turn."""

    def __init__(
        self, settings: LocalSettings, *, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        self.settings = settings
        self._base_url = settings.base_url.rstrip("/")
        self._listed_model: str | None = None
        headers = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else {}
        self._client = httpx.AsyncClient(
            transport=transport,
            headers=headers,
            timeout=httpx.Timeout(
                connect=settings.connect_timeout_seconds,
                read=settings.read_timeout_seconds,
                write=settings.read_timeout_seconds,
                pool=settings.connect_timeout_seconds,
            ),
            # A proxy from the environment must not catch requests to a model on this machine.
            trust_env=not _is_loopback(self._base_url),
            # Plain http never uses TLS; skipping the CA bundle saves ~0.1 s per agent.
            # https endpoints keep full certificate verification.
            verify=urlsplit(self._base_url).scheme.lower() == "https",
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    # -- models ----------------------------------------------------------------------------

    async def list_models(self) -> list[str]:
        """The model ids `GET {base_url}/models` lists. Raises `LocalModelError`."""
        return await self._list_models(None)

    async def probe(self) -> tuple[bool, str | None, str | None]:
        """(reachable, model, error message) for `milk/status` and `doctor`; a few seconds at most.

        `model` is `local.model` when set, else the first model the endpoint lists.
        """
        short = httpx.Timeout(
            connect=min(self.settings.connect_timeout_seconds, 2.0),
            read=min(self.settings.read_timeout_seconds, 5.0),
            write=5.0,
            pool=2.0,
        )
        try:
            models = await self._list_models(short)
        except LocalModelError as exc:
            reachable = exc.reason is not FailureReason.LOCAL_UNREACHABLE
            return reachable, self.settings.model, exc.message
        if self.settings.model:
            return True, self.settings.model, None
        if not models:
            return True, None, self._no_models_message()
        return True, models[0], None

    async def _list_models(self, limits: httpx.Timeout | None) -> list[str]:
        url = f"{self._base_url}/models"
        try:
            if limits is None:
                response = await self._client.get(url)
            else:
                response = await self._client.get(url, timeout=limits)
            if response.status_code >= 400:
                raise LocalModelError(
                    FailureReason.LOCAL_FAILED,
                    f"GET {url} answered HTTP {response.status_code}: "
                    f"{body_detail(response.content)}{_http_hint(response.status_code)}",
                )
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise self._transport_error(exc) from exc
        try:
            payload = response.json()
        except ValueError:
            raise LocalModelError(
                FailureReason.LOCAL_FAILED,
                f"GET {url} did not answer JSON: {body_detail(response.content)}",
            ) from None
        entries: Any = []
        if isinstance(payload, dict):
            entries = payload.get("data") or payload.get("models") or []
        models: list[str] = []
        if isinstance(entries, list):
            for entry in entries:
                if isinstance(entry, str):
                    models.append(entry)
                elif isinstance(entry, dict):
                    for key in ("id", "name", "model"):
                        value = entry.get(key)
                        if isinstance(value, str) and value:
                            models.append(value)
                            break
        return models

    def _no_models_message(self) -> str:
        return (
            f"the local endpoint {self._base_url} lists no models (GET /models); "
            "set local.model to the model to use"
        )

    async def _resolve_model(self) -> str:
        """`local.model`, else the first listed model: looked up once and kept until a turn
        fails (the server may have changed models), not fetched on every turn."""
        if self.settings.model:
            return self.settings.model
        if self._listed_model is not None:
            return self._listed_model
        models = await self._list_models(None)
        if not models:
            raise LocalModelError(FailureReason.LOCAL_FAILED, self._no_models_message())
        self._listed_model = models[0]
        return models[0]

    # -- one turn ------------------------------------------------------------------------------

    async def run(
        self,
        messages: list[dict[str, Any]],
        tools: LocalTools | None,
        *,
        offer_escalation: bool,
        cut_short: bool = False,
    ) -> AsyncGenerator[AgentEvent, None]:
        """One turn: stream replies and run tools until a reply has no tool calls.

        `messages` (system prompt, history, user message) is not modified. Ends with
        `TurnDone`, `EscalationRequested`, `LocalGaveUp` (a hand-off signal, see
        `local_watch`) or `TurnFailed`; raises only on cancellation. `cut_short` stops the
        loop at the first mid-turn signal (route `auto`, where Claude can take over).
        """
        try:
            async with aclosing(self._turn(messages, tools, offer_escalation, cut_short)) as events:
                async for event in events:
                    yield event
        except LocalModelError as exc:
            logger.info("local turn failed (%s): %s", exc.reason, exc.message)
            self._listed_model = None  # look the model up again next time
            yield TurnFailed(exc.reason, exc.message)
        except Exception as exc:
            logger.exception("local turn failed unexpectedly")
            yield TurnFailed(
                FailureReason.INTERNAL,
                f"the local agent failed unexpectedly: {type(exc).__name__}: {exc}",
            )

    async def _turn(
        self,
        messages: list[dict[str, Any]],
        tools: LocalTools | None,
        offer_escalation: bool,
        cut_short: bool,
    ) -> AsyncGenerator[AgentEvent, None]:
        model = await self._resolve_model()
        specs = list(tools.specs()) if tools is not None else []
        if offer_escalation:
            specs.append(ESCALATE_TOOL_SPEC)
        offered = frozenset(_spec_names(specs))
        watch = TurnWatch(offered, cut_short)
        conversation = list(messages)
        used_ids: set[str] = set()
        max_rounds = self.settings.max_tool_rounds
        rounds = 0
        noticed_text_calls = False
        while True:
            body: dict[str, Any] = {
                "model": model,
                "messages": conversation,
                "stream": True,
                "stream_options": {"include_usage": True},
            }
            if specs:
                body["tools"] = specs
            reply = Reply()
            gate = TextCallGate(offered) if self.settings.text_tool_calls and offered else None
            try:
                async with aclosing(self._stream_reply(body, reply)) as stream:
                    async for event in stream:
                        if gate is not None and isinstance(event, TextDelta):
                            shown = gate.feed(event.text)
                            if shown:
                                yield TextDelta(shown)
                        else:
                            yield event
            except LocalModelError:
                if gate is not None and gate.holding and gate.held:
                    yield TextDelta(gate.release())  # what arrived before the failure
                raise

            merged = merge_tool_call_deltas(reply.fragments)
            text_calls: list[MergedToolCall] | None = None
            if gate is not None and gate.holding and gate.held:
                if not reply.fragments:
                    text_calls = parse_text_tool_calls(gate.held, offered)
                if text_calls is None:
                    yield TextDelta(gate.release())
            if reply.usage is not None:
                yield usage_event(reply.usage)
            if not merged and not text_calls and gate is not None:
                embedded = embedded_call("".join(reply.text), offered)
                if embedded is not None:  # shown already; run it rather than leave it inert
                    text_calls = [embedded]
            if text_calls:
                merged = text_calls
                if not noticed_text_calls:
                    noticed_text_calls = True
                    yield NoticeEvent(
                        "info",
                        "the local model wrote its tool call as text; milk ran it as a tool "
                        "call (turn this off with local.textToolCalls)",
                    )
            named = [call for call in merged if call.name]
            if len(named) < len(merged):
                yield NoticeEvent(
                    "warning",
                    f"ignored {len(merged) - len(named)} tool call(s) without a function "
                    "name from the local model",
                )
            if not named:
                verdict = watch.final_reply("".join(reply.text), reasoned=reply.reasoned)
                if verdict == "nudge" and rounds < max_rounds:
                    rounds += 1
                    conversation.append({"role": "assistant", "content": "".join(reply.text)})
                    conversation.append({"role": "user", "content": NUDGE})
                    continue
                if isinstance(verdict, LocalGaveUp):
                    if reply.finish_reason == "length":
                        yield length_notice()
                    yield verdict
                    return
                for notice in final_reply_notices(reply):
                    yield notice
                yield TurnDone()
                return

            calls = _prepare_calls(named, used_ids)
            escalation = next(
                (c for c in calls if offer_escalation and c.name == ESCALATE_TOOL_NAME), None
            )
            over_limit = rounds >= max_rounds
            if over_limit and escalation is None:
                yield watch.round_limit(max_rounds)
                return
            rounds += 1
            conversation.append(
                {
                    "role": "assistant",
                    # a call written as text goes back as the call alone, not as its JSON too
                    "content": "" if text_calls else "".join(reply.text),
                    "tool_calls": [call.wire() for call in calls],
                }
            )
            if not over_limit:
                for call in calls:
                    if escalation is not None and call.name == ESCALATE_TOOL_NAME:
                        continue  # the first escalation call wins; it is handled below
                    stop = watch.before_call(call.name, call.arguments)
                    if stop is not None:
                        yield ToolCallEvent(
                            call.id, call.name, call.display_input, ToolStatus.FAILED
                        )
                        yield ToolResultEvent(call.id, f"not run: {stop.detail}", True)
                        yield stop
                        return
                    outcome = _Outcome("")
                    async with aclosing(self._run_tool(call, tools, offer_escalation)) as steps:
                        async for step in steps:
                            if isinstance(step, _Outcome):
                                outcome = step
                            else:
                                yield step
                    watch.after_call(
                        call.name,
                        call.arguments,
                        is_error=outcome.is_error,
                        denied=outcome.denied,
                        output=outcome.output,
                    )
                    conversation.append(
                        {"role": "tool", "tool_call_id": call.id, "content": outcome.output}
                    )
            if escalation is not None:
                reason = _escalation_reason(escalation)
                yield ToolCallEvent(
                    escalation.id,
                    escalation.name,
                    escalation.arguments
                    if escalation.arguments is not None
                    else {"reason": reason},
                    ToolStatus.COMPLETED,
                )
                yield EscalationRequested(reason=reason, tool_call_id=escalation.id)
                return

    async def _run_tool(
        self, call: _Call, tools: LocalTools | None, offer_escalation: bool
    ) -> AsyncGenerator[AgentEvent | _Outcome, None]:
        """Run one call: its events, then its `_Outcome` (for the tool message) last."""
        if call.arguments is None:
            outcome = _Outcome(
                f"error: the arguments of your {call.name} call were {call.invalid}, so "
                f"nothing was run. Call {call.name} again with a JSON object as its "
                f"arguments. You sent: {call.raw_arguments[:_RAW_ARGS_CHARS]}",
                is_error=True,
            )
            yield ToolCallEvent(call.id, call.name, call.display_input, ToolStatus.FAILED)
            yield ToolResultEvent(call.id, outcome.output, True)
            yield outcome
            return
        if tools is None or call.name not in tools.names:
            available = sorted(tools.names) if tools is not None else []
            if offer_escalation:
                available.append(ESCALATE_TOOL_NAME)
            if call.name == ESCALATE_TOOL_NAME:
                text = f"error: {ESCALATE_TOOL_NAME} is not available in this turn"
            else:
                text = f"error: there is no tool named {call.name!r}"
            outcome = _Outcome(
                f"{text}. Available tools: {', '.join(available) or 'none'}.", is_error=True
            )
            yield ToolCallEvent(call.id, call.name, call.arguments, ToolStatus.FAILED)
            yield ToolResultEvent(call.id, outcome.output, True)
            yield outcome
            return
        yield ToolCallEvent(call.id, call.name, call.arguments, ToolStatus.RUNNING)
        try:
            result = await tools.call(call.id, call.name, call.arguments)
            outcome = _Outcome(str(result.output), bool(result.is_error), bool(result.denied))
        except Exception as exc:
            logger.exception("tool %s raised", call.name)
            outcome = _Outcome(
                f"error: the {call.name} tool failed: {type(exc).__name__}: {exc}", True
            )
        if outcome.denied:
            status = ToolStatus.DENIED
        elif outcome.is_error:
            status = ToolStatus.FAILED
        else:
            status = ToolStatus.COMPLETED
        yield ToolCallEvent(call.id, call.name, call.arguments, status)
        yield ToolResultEvent(call.id, outcome.output, outcome.is_error or outcome.denied)
        yield outcome

    async def _stream_reply(
        self, body: dict[str, Any], reply: Reply
    ) -> AsyncGenerator[AgentEvent, None]:
        """POST one streamed chat completion; yields its text/thinking, fills `reply`."""
        url = f"{self._base_url}/chat/completions"
        try:
            async with httpx_sse.aconnect_sse(self._client, "POST", url, json=body) as source:
                response = source.response
                if response.status_code >= 400:
                    detail = body_detail(await _read_capped(response))
                    raise LocalModelError(
                        FailureReason.LOCAL_FAILED,
                        f"the local model at {self._base_url} answered HTTP "
                        f"{response.status_code}: {detail}{_http_hint(response.status_code)}",
                    )
                content_type = response.headers.get("content-type", "")
                if "text/event-stream" not in content_type:
                    # A server that ignored `stream: true` and sent the whole completion.
                    raw = await _read_capped(response, limit=None)
                    try:
                        completion = json.loads(raw)
                    except ValueError:
                        raise LocalModelError(
                            FailureReason.LOCAL_FAILED,
                            f"malformed stream from the local model: expected "
                            f"text/event-stream, got {content_type or 'no content type'}: "
                            f"{body_detail(raw)}",
                        ) from None
                    for event in apply_chunk(reply, completion):
                        yield event
                    reply.done = True
                    return
                async for sse in source.aiter_sse():
                    data = sse.data.strip()
                    if sse.event == "error":
                        raise LocalModelError(
                            FailureReason.LOCAL_FAILED,
                            f"the local model reported an error mid-stream: {short(data)}",
                        )
                    if not data:
                        continue
                    if data == "[DONE]":
                        reply.done = True
                        break
                    try:
                        chunk = json.loads(data)
                    except ValueError:
                        raise LocalModelError(
                            FailureReason.LOCAL_FAILED,
                            f"malformed stream from the local model: a data line is not "
                            f"JSON: {short(data, 120)}",
                        ) from None
                    for event in apply_chunk(reply, chunk):
                        yield event
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise self._transport_error(exc) from exc
        if not reply.done and reply.finish_reason is None:
            raise LocalModelError(
                FailureReason.LOCAL_FAILED,
                f"malformed stream from the local model at {self._base_url}: it ended "
                "without `data: [DONE]` and without a finish_reason (the connection may "
                "have dropped)",
            )

    def _transport_error(self, exc: httpx.HTTPError | httpx.InvalidURL) -> LocalModelError:
        base = self._base_url
        settings = self.settings
        if isinstance(exc, httpx.InvalidURL | httpx.UnsupportedProtocol):
            return LocalModelError(
                FailureReason.LOCAL_UNREACHABLE,
                f"no local model reachable at {base}: the URL is not valid ({exc}); "
                "set local.baseUrl",
            )
        if isinstance(exc, httpx.ConnectTimeout | httpx.ConnectError):
            why = (
                f"no answer within {settings.connect_timeout_seconds:g} s"
                if isinstance(exc, httpx.ConnectTimeout)
                else _connect_why(exc)
            )
            return LocalModelError(
                FailureReason.LOCAL_UNREACHABLE,
                f"no local model reachable at {base}: {why}; "
                "start Ollama/llama-server or set local.baseUrl",
            )
        if isinstance(exc, httpx.ReadTimeout):
            return LocalModelError(
                FailureReason.LOCAL_FAILED,
                f"timed out waiting for the local model at {base}: it sent nothing for "
                f"{settings.read_timeout_seconds:g} s (the read timeout); it may be stuck "
                "or overloaded. Try again, or raise local.requestTimeoutSeconds",
            )
        if isinstance(exc, httpx.TimeoutException):
            return LocalModelError(
                FailureReason.LOCAL_FAILED,
                f"timed out talking to the local model at {base} ({type(exc).__name__})",
            )
        if isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError | httpx.WriteError):
            return LocalModelError(
                FailureReason.LOCAL_FAILED,
                f"the connection to the local model at {base} dropped mid-stream: "
                f"{exc or type(exc).__name__}",
            )
        return LocalModelError(
            FailureReason.LOCAL_FAILED,
            f"the request to the local model at {base} failed: {type(exc).__name__}: {exc}",
        )


def _spec_names(specs: Iterable[Any]) -> Iterable[str]:
    """The function names of OpenAI `tools` entries (what the model was offered)."""
    for spec in specs:
        function = spec.get("function") if isinstance(spec, Mapping) else None
        name = function.get("name") if isinstance(function, Mapping) else None
        if isinstance(name, str) and name:
            yield name


async def _read_capped(response: httpx.Response, limit: int | None = _ERROR_BODY_LIMIT) -> bytes:
    """The response body, at most `limit` bytes (all of it when None)."""
    data = bytearray()
    async for piece in response.aiter_bytes():
        data.extend(piece)
        if limit is not None and len(data) >= limit:
            break
    return bytes(data)
