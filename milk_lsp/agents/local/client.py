"""The local model's HTTP side: an OpenAI-compatible chat-completions client.

One `LocalClient` per configured endpoint, holding the shared `httpx.AsyncClient` (several
sessions can stream at once). It lists the endpoint's models (`probe` for `milk/status`),
streams one reply (SSE through httpx-sse) into a `Reply`, and maps transport failures to
`LocalModelError`s with the reason and what to do. The HTTP response is always closed in
`finally` (the `async with` around the stream), so a cancelled turn leaves no open stream.
The tool loop that drives it is `milk_lsp.agents.local.agent`.
"""

from __future__ import annotations

import ipaddress
import json
import socket
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx
import httpx_sse

from milk_lsp.agents.base import AgentEvent, FailureReason
from milk_lsp.agents.local.context_window import (
    OllamaInfo,
    cut_message,
    estimate_prompt_tokens,
    looks_cut,
    probe_ollama,
    reported_prompt_tokens,
    template_drops_tools,
)
from milk_lsp.agents.local.reply.stream import (
    LocalModelError,
    Reply,
    apply_chunk,
    body_detail,
    short,
)
from milk_lsp.doors import LSP, Door

__all__ = ["LocalClient", "LocalSettings"]

_ERROR_BODY_LIMIT = 64 * 1024
"""Bytes of an HTTP error body read to explain a failure."""


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
    temperature: float | None = None
    """The sampling temperature sent with every request; None leaves the server's default."""
    max_tokens: int | None = 2048
    """The most tokens of a question's reply (a change request's: twice this); None: the
    server's own cap (`rounds.request_body`)."""
    text_tool_calls: bool = True
    """Run a reply that is only a tool call written as text (a ```json block, bare JSON,
    `<tool_call>`/`[tool_call]` tags; small models do this) as that tool call."""
    door: Door = LSP
    """How the front door names settings, for the fixes failure messages give."""


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


def _http_hint(status: int, door: Door) -> str:
    if status in (401, 403):
        return f"; check {door.setting('local.apiKey')}"
    if status == 404:
        return f"; check {door.setting('local.baseUrl')} and {door.setting('local.model')}"
    if status == 503:
        return "; the server may still be loading the model, try again shortly"
    return ""


class LocalClient:
    """One OpenAI-compatible endpoint: its models and one streamed reply at a time."""

    def __init__(
        self, settings: LocalSettings, *, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        self.settings = settings
        self._base_url = settings.base_url.rstrip("/")
        self._listed_model: str | None = None
        self._ignores_tool_choice: set[str] = set()
        self._refuses_json_schema: set[str] = set()
        self._reads_intent: dict[str, bool] = {}
        self._drops_tools: bool | None = None
        """The server's template renders no tools (None: not asked yet)."""
        self._ollama: dict[str | None, OllamaInfo | None] = {}
        """Model → what Ollama said about it (None: not Ollama), asked once per client."""
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
                    f"{body_detail(response.content)}"
                    f"{_http_hint(response.status_code, self.settings.door)}",
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
            f"set {self.settings.door.setting('local.model')} to the model to use"
        )

    async def resolve_model(self) -> str:
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

    @property
    def model_in_use(self) -> str | None:
        """The model the last turn ran on (`local.model`, else the one listed), if known."""
        return self.settings.model or self._listed_model

    def obeys(self, model: str) -> bool:
        """Whether `tool_choice: "required"` may be sent for `model` (not known to be ignored
        or refused by this server)."""
        return model not in self._ignores_tool_choice

    def ignores_tool_choice(self, model: str) -> None:
        """The server ignored or refused `tool_choice` for `model`: not sent again."""
        self._ignores_tool_choice.add(model)

    def takes_json_schema(self, model: str) -> bool:
        """Whether a `response_format` with a JSON schema may be sent for `model` (not
        known to be refused by this server: llama.cpp, Ollama, vLLM and LM Studio take it)."""
        return model not in self._refuses_json_schema

    def refuses_json_schema(self, model: str) -> None:
        """The server refused `response_format` for `model`: the reply is validated instead."""
        self._refuses_json_schema.add(model)

    def reads_intent(self, model: str) -> bool | None:
        """Whether `model` told a question from a change when milk tried it (None: not
        tried on this server yet; `guided.ask.Ask.intent`)."""
        return self._reads_intent.get(model)

    def remember_reads_intent(self, model: str, reads: bool) -> None:
        self._reads_intent[model] = reads

    async def drops_tools(self) -> bool:
        """Whether the server's chat template drops tool definitions (llama.cpp's
        `/props`: the model cannot call tools there)."""
        return await self._template_drops_tools()

    def forget_model(self) -> None:
        """After a failed turn: look the model up again next time (the server may have
        changed models)."""
        self._listed_model = None

    async def stream_reply(
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
                        f"{response.status_code}: {detail}"
                        f"{_http_hint(response.status_code, self.settings.door)}",
                        http_status=response.status_code,
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
        await self._check_not_cut(body, reply)

    async def _check_not_cut(self, body: dict[str, Any], reply: Reply) -> None:
        """Raise a context overflow when the server saw far fewer prompt tokens than milk
        sent (`context_window`: Ollama drops a long prompt's start without an error)."""
        reported = reported_prompt_tokens(reply.usage)
        if reported is None:
            return
        estimated = estimate_prompt_tokens(body)
        if not looks_cut(estimated, reported):
            return
        without_tools = estimate_prompt_tokens(body, with_tools=False)
        if not looks_cut(without_tools, reported) and await self._template_drops_tools():
            return
        model = body.get("model")
        ollama = await self.ollama(model if isinstance(model, str) else None)
        raise LocalModelError(
            FailureReason.LOCAL_FAILED,
            cut_message(reported, estimated, ollama, self.settings.door),
        )

    async def _template_drops_tools(self) -> bool:
        """Asked once per client (`context_window.template_drops_tools`)."""
        if self._drops_tools is None:
            self._drops_tools = await template_drops_tools(self._client, self._base_url)
        return self._drops_tools

    async def ollama(self, model: str | None, *, now: bool = False) -> OllamaInfo | None:
        """What Ollama says about `model` (its version, the context it runs with); None
        when the server is not Ollama. Asked once per model (again while the context is not
        known), or `now` (`milk/status`: the model may have been loaded or changed since)."""
        if model in self._ollama and not now:
            known = self._ollama[model]
            if known is None or known.context_tokens is not None:
                return known
        info = await probe_ollama(self._client, self._base_url, model)
        self._ollama[model] = info
        return info

    def _transport_error(self, exc: httpx.HTTPError | httpx.InvalidURL) -> LocalModelError:
        base = self._base_url
        settings = self.settings
        if isinstance(exc, httpx.InvalidURL | httpx.UnsupportedProtocol):
            return LocalModelError(
                FailureReason.LOCAL_UNREACHABLE,
                f"no local model reachable at {base}: the URL is not valid ({exc}); "
                f"set {settings.door.setting('local.baseUrl')}",
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
                f"start Ollama/llama-server or set {settings.door.setting('local.baseUrl')}",
            )
        if isinstance(exc, httpx.ReadTimeout):
            return LocalModelError(
                FailureReason.LOCAL_FAILED,
                f"timed out waiting for the local model at {base}: it sent nothing for "
                f"{settings.read_timeout_seconds:g} s (the read timeout); it may be stuck "
                "or overloaded. Try again, or raise "
                f"{settings.door.setting('local.requestTimeoutSeconds')}",
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


async def _read_capped(response: httpx.Response, limit: int | None = _ERROR_BODY_LIMIT) -> bytes:
    """The response body, at most `limit` bytes (all of it when None)."""
    data = bytearray()
    async for piece in response.aiter_bytes():
        data.extend(piece)
        if limit is not None and len(data) >= limit:
            break
    return bytes(data)
