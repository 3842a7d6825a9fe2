"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1 (stdlib only).

It answers with the stream shapes recorded from real servers (llama.cpp, llama-cpp-python,
Ollama; see ``tests/data/openai/*.sse``), records every request, and notices when a client
hangs up mid-stream, so tests can check that a cancelled turn leaves no open stream.

Library::

    with FakeOpenAIServer([{"text": "hello"}]) as server:
        server.enqueue({"tool_calls": [{"name": "read_file", "arguments": {"path": "a.py"}}]},
                       {"text": "done"})
        agent = LocalAgent(LocalSettings(base_url=server.base_url))
        ...
        assert server.requests[1]["messages"][-1]["role"] == "tool"
        assert server.wait_for_disconnects(1)   # after cancelling a turn mid-stream

CLI::

    python -m tests.fakes.openai_server [--port N] [--script FILE.json] [--model ID]

prints exactly one line ``READY http://127.0.0.1:PORT/v1`` on stdout (flushed), then serves
until killed. ``POST /_script`` (a JSON list, or ``{"responses": [...]}``) replaces the
queue, ``GET /_requests`` returns the recorded chat request bodies, ``DELETE /_requests``
clears them, ``GET /_state`` returns ``{"pending", "disconnects", "openStreams"}``.

Endpoints: ``GET /v1/models`` lists one model (``fake-model`` unless configured);
``POST /v1/chat/completions`` pops the next scripted response (an empty queue answers the
text "ok"; milk's intent request, when the next response is not an intent, is answered
``{"intent": "question"}`` (milk's probes of the model's reading: rightly) without popping
and left out of ``requests``: see ``unscripted_intent``); ``GET /health`` answers ``{"status": "ok"}``. Requests with ``stream: false``
get a plain JSON ``chat.completion`` built from the same script entry.

Scripted responses (one dict per chat request; unknown keys are ignored):

* ``{"text": "...", "chunk_chars": 3, "reasoning": "...", "finish_reason": "stop"}``: the
  llama.cpp shapes: a first delta ``{"role": "assistant", "content": null}``, the reasoning
  as ``reasoning_content`` pieces, the content pieces, a finish chunk, a usage chunk with
  ``choices: []`` (only when the request asked ``stream_options.include_usage``), then
  ``data: [DONE]``.
* ``{"tool_calls": [{"name": "read_file", "arguments": {...} | "raw text", "id": ...}],
  "style": "llamacpp" | "ollama" | "repeat_names", "text": optional}``:

  * ``llamacpp`` (default): per call a first fragment with index, id (32 random chars),
    type, name and the first character of the arguments, then argument pieces of
    ``chunk_chars``; ``finish_reason: "tool_calls"``;
  * ``ollama``: every call whole in one chunk, with ``finish_reason: "stop"``;
  * ``repeat_names``: llama-cpp-python's shape, id and name (and the deprecated
    ``function_call``) repeated in every chunk.

  A call's ``"id": null`` leaves the id out; ``"index": false`` on the response leaves
  ``index`` out of every fragment.
* ``{"replay": "tests/data/openai/<file>.sse"}``: the recorded file verbatim, one event per
  write (a relative path is looked up from the repository root, then the working directory).
* ``{"status": 500, "body": "..." | {...}}``: that HTTP status with that body (default an
  OpenAI-style ``{"error": {...}}``).
* ``{"stall": 30, "stall_after": 1}``: sends the headers and ``stall_after`` events (default
  1, the role chunk), then nothing for ``stall`` seconds (woken early when the client hangs
  up or the server stops), then the rest.
* ``{"cut_after": 2, ...}``: drops the connection after that many events (no end chunk).
* ``{"malformed": true}``: a role chunk, then a ``data:`` line that is not JSON, then
  ``[DONE]``.
* ``"delay": s``: waits ``s`` seconds before each event; ``"usage": {...}`` is merged into
  the reported usage (``false`` sends no usage chunk); ``"repeat": N`` answers N requests
  with the same entry. The reported ``prompt_tokens`` count the messages and the tool specs
  (JSON characters / 4), as a real server counts what its template renders.

``FakeOpenAIServer.ollama`` (a dict) makes it answer Ollama's native ``/api/version``,
``/api/ps`` and ``/api/show`` too (see ``_answer_ollama``).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import secrets
import socket
import string
import sys
import threading
import time
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

from milk_lsp.guided.ask import INTENT_PROBES
from tests.fakes._loopback import (
    LoopbackHandler,
    QuietThreadingServer,
    Response,
    ScriptedLoopbackServer,
    load_script,
    serve_until_killed,
)

DEFAULT_MODEL = "fake-model"
PROBES = dict(INTENT_PROBES)
"""milk's probes of a model's reading of requests, and the intent each means."""
REPO_ROOT = Path(__file__).resolve().parents[2]
_ALNUM = string.ascii_letters + string.digits


def _random_id(length: int = 32) -> str:
    return "".join(secrets.choice(_ALNUM) for _ in range(length))


def _pieces(text: str, size: int) -> list[str]:
    size = max(1, size)
    return [text[i : i + size] for i in range(0, len(text), size)]


def _event(data: Any) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    return f"data: {payload}\n\n".encode()


def _arguments_text(call: dict[str, Any]) -> str:
    arguments = call.get("arguments", {})
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def resolve_replay_path(name: str) -> Path:
    path = Path(name)
    if path.is_absolute():
        return path
    for base in (REPO_ROOT, Path.cwd()):
        if (base / path).is_file():
            return base / path
    return REPO_ROOT / path


class _Handler(LoopbackHandler):
    wait_tick_seconds = 0.02
    server: _Server

    def setup(self) -> None:
        super().setup()
        # Every SSE event is its own small write: without this, Nagle's algorithm and the
        # client's delayed ACKs add ~40 ms stalls to a stream.
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.fake._track(self.connection, add=True)

    def finish(self) -> None:
        self.server.fake._track(self.connection, add=False)
        with contextlib.suppress(OSError):
            super().finish()

    # -- helpers ---------------------------------------------------------------------------

    @property
    def fake(self) -> FakeOpenAIServer:
        return self.server.fake

    def _send_bytes(self, status: int, data: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_json(self, status: int, payload: Any) -> None:
        self._send_bytes(status, json.dumps(payload).encode(), "application/json")

    def _record(self, body: Any) -> dict[str, Any]:
        headers = {k.lower(): v for k, v in self.headers.items()}
        record = {"method": self.command, "path": self.path, "headers": headers, "body": body}
        with self.fake.lock:
            self.fake.records.append(record)
        return record

    def _drop(self) -> None:
        """Close the connection at once, mid-response."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    # -- endpoints -------------------------------------------------------------------------

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path == "/_requests":
            self._send_json(200, self.fake.requests)
            return
        if path == "/_state":
            self._send_json(
                200,
                {
                    "pending": self.fake.pending(),
                    "disconnects": self.fake.disconnects,
                    "openStreams": self.fake.open_streams,
                },
            )
            return
        self._record(None)
        if path.startswith("/api/") and self.fake.ollama is not None:
            self._answer_ollama(path, None)
        elif path in ("/health", "/v1/health"):
            self._send_json(200, {"status": "ok"})
        elif path.endswith("/models"):
            data = [{"id": m, "object": "model", "owned_by": "fake"} for m in self.fake.models]
            self._send_json(200, {"object": "list", "data": data})
        else:
            self._send_json(404, {"error": {"message": f"no route {path}", "type": "not_found"}})

    def do_DELETE(self) -> None:
        if self.path.split("?", 1)[0].rstrip("/") == "/_requests":
            self.fake.clear_requests()
            self._send_json(200, {"ok": True})
            return
        self._send_json(404, {"error": {"message": "not found", "type": "not_found"}})

    def do_POST(self) -> None:
        body = self._json_body()
        path = self.path.split("?", 1)[0].rstrip("/")
        if path == "/_script":
            self._replace_script(body)
            return
        record = self._record(body)
        if path.startswith("/api/") and self.fake.ollama is not None:
            self._answer_ollama(path, body)
            return
        if not path.endswith("/chat/completions"):
            self._send_json(404, {"error": {"message": f"no route {path}", "type": "not_found"}})
            return
        if not isinstance(body, dict):
            self._send_json(400, {"error": {"message": "body is not a JSON object"}})
            return
        response = self.fake.unscripted_intent(body)
        if response is None:
            response = self.fake.pop_response()
        else:
            with self.fake.lock:
                record["unscripted"] = True
        try:
            if body.get("stream"):
                self._answer_stream(response, body)
            else:
                self._answer_plain(response, body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    # -- answers ---------------------------------------------------------------------------

    def _answer_ollama(self, path: str, body: Any) -> None:
        """Ollama's native API, as far as milk reads it: `GET /api/version`, `GET /api/ps`
        (the loaded models and their `context_length`), `POST /api/show` (`parameters`)."""
        ollama = self.fake.ollama or {}
        if path == "/api/version":
            self._send_json(200, {"version": ollama.get("version", "0.12.3")})
        elif path == "/api/ps":
            self._send_json(200, {"models": ollama.get("loaded", [])})
        elif path == "/api/show" and isinstance(body, dict):
            model = body.get("model") or body.get("name")
            if model not in self.fake.models:
                self._send_json(404, {"error": f"model '{model}' not found"})
                return
            self._send_json(
                200,
                {
                    "parameters": ollama.get("parameters", ""),
                    "model_info": {"qwen2.context_length": 32768},
                },
            )
        else:
            self._send_json(404, {"error": f"no route {path}"})

    def _answer_error(self, response: Response) -> None:
        status = int(response["status"])
        body = response.get(
            "body",
            {
                "error": {
                    "message": f"scripted HTTP {status}",
                    "type": "server_error",
                    "code": status,
                }
            },
        )
        if isinstance(body, str):
            try:
                json.loads(body)
                content_type = "application/json"
            except ValueError:
                content_type = "text/plain; charset=utf-8"
            self._send_bytes(status, body.encode(), content_type)
        else:
            self._send_json(status, body)

    def _usage(self, response: Response, request: dict[str, Any], pieces: int) -> dict[str, Any]:
        # What a real server counts: the messages and the tool specs its template renders.
        sent = len(json.dumps(request.get("messages", []))) + len(
            json.dumps(request.get("tools", []))
        )
        prompt = max(1, sent // 4)
        usage: dict[str, Any] = {
            "completion_tokens": max(1, pieces),
            "prompt_tokens": prompt,
            "total_tokens": prompt + max(1, pieces),
            "prompt_tokens_details": {"cached_tokens": 0},
        }
        extra = response.get("usage")
        if isinstance(extra, dict):
            usage.update(extra)
        return usage

    def _answer_plain(self, response: Response, request: dict[str, Any]) -> None:
        if "status" in response:
            self._answer_error(response)
            return
        if response.get("stall") and not self._wait(float(response["stall"])):
            self._client_gone()
            return
        if response.get("cut_after") is not None:
            self._drop()
            return
        if response.get("malformed"):
            self._send_bytes(200, b"{this is not json", "application/json")
            return
        model = str(request.get("model") or self.fake.models[0])
        calls = response.get("tool_calls") or []
        text = response.get("text")
        if text is None and not calls:
            text = "ok"
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if response.get("reasoning"):
            message["reasoning_content"] = response["reasoning"]
        if calls:
            message["tool_calls"] = [
                {
                    "id": call.get("id") or f"call_{_random_id(12)}",
                    "type": "function",
                    "function": {"name": call["name"], "arguments": _arguments_text(call)},
                }
                for call in calls
            ]
        payload: dict[str, Any] = {
            "id": f"chatcmpl-{_random_id()}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if calls else "stop",
                }
            ],
        }
        if response.get("usage") is not False:
            payload["usage"] = self._usage(response, request, len(text or "") // 4)
        self._send_json(200, payload)

    def _answer_stream(self, response: Response, request: dict[str, Any]) -> None:
        if "status" in response:
            self._answer_error(response)
            return
        events = self._stream_events(response, request)
        delay = float(response.get("delay") or 0)
        stall = float(response.get("stall") or 0)
        stall_after = int(response.get("stall_after", 1))
        cut_after = response.get("cut_after")

        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        self.fake._stream_started()
        sent = 0
        try:
            for number, data in enumerate(events):
                if cut_after is not None and number >= int(cut_after):
                    self._drop()
                    return
                if stall and number == stall_after and not self._wait(stall):
                    self._client_gone()
                    return
                if delay and not self._wait(delay):
                    self._client_gone()
                    return
                try:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                    sent += 1
                except OSError:
                    self._client_gone()
                    return
            if stall and stall_after >= len(events) and not self._wait(stall):
                self._client_gone()
                return
            try:
                self.wfile.write(b"0\r\n\r\n")
            except OSError:
                self._client_gone()
        finally:
            self.fake._stream_ended(sent)

    def _client_gone(self) -> None:
        self.close_connection = True
        if not self.fake.stopping.is_set():
            self.fake._note_disconnect()

    def _stream_events(self, response: Response, request: dict[str, Any]) -> list[bytes]:
        if "replay" in response:
            recorded = resolve_replay_path(str(response["replay"])).read_text(encoding="utf-8")
            return [
                (block.strip("\n") + "\n\n").encode()
                for block in recorded.replace("\r\n", "\n").split("\n\n")
                if block.strip()
            ]
        model = str(request.get("model") or self.fake.models[0])
        completion_id = f"chatcmpl-{_random_id()}"
        created = int(time.time())
        include_usage = bool((request.get("stream_options") or {}).get("include_usage"))

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            return _event(
                {
                    "choices": [{"finish_reason": finish, "index": 0, "delta": delta}],
                    "created": created,
                    "id": completion_id,
                    "model": model,
                    "system_fingerprint": "fake",
                    "object": "chat.completion.chunk",
                }
            )

        if response.get("malformed"):
            return [
                chunk({"role": "assistant", "content": None}),
                b'data: {"choices": [{"delta": {"content": "unterminated\n\n',
                _event("[DONE]"),
            ]

        size = int(response.get("chunk_chars") or 3)
        calls: list[dict[str, Any]] = list(response.get("tool_calls") or [])
        style = str(response.get("style") or "llamacpp")
        with_index = response.get("index", True) is not False
        text = response.get("text")
        if text is None and not calls:
            text = "ok"
        events = [chunk({"role": "assistant", "content": None})]
        pieces = 0
        for piece in _pieces(str(response.get("reasoning") or ""), size):
            events.append(chunk({"reasoning_content": piece}))
            pieces += 1
        for piece in _pieces(text or "", size):
            events.append(chunk({"content": piece}))
            pieces += 1

        def fragment(i: int, call: dict[str, Any], call_id: str | None, **function: Any) -> Any:
            entry: dict[str, Any] = {"index": i} if with_index else {}
            if call_id is not None:
                entry["id"] = call_id
                entry["type"] = "function"
            entry["function"] = function
            return entry

        ids = [
            None
            if ("id" in call and call["id"] is None)
            else (
                call.get("id") or (f"call_{_random_id(8)}" if style == "ollama" else _random_id())
            )
            for call in calls
        ]
        finish = "stop"
        if calls and style == "ollama":
            whole = [
                fragment(i, call, ids[i], name=call["name"], arguments=_arguments_text(call))
                for i, call in enumerate(calls)
            ]
            events.append(
                chunk(
                    {"role": "assistant", "content": "", "tool_calls": whole},
                    str(response.get("finish_reason") or "stop"),
                )
            )
            pieces += len(calls)
            finish = ""
        elif calls and style == "repeat_names":
            for i, call in enumerate(calls):
                for piece in [*_pieces(_arguments_text(call), size), ""]:
                    events.append(
                        chunk(
                            {
                                "role": None,
                                "content": None,
                                "function_call": {"name": call["name"], "arguments": piece},
                                "tool_calls": [
                                    fragment(i, call, ids[i], name=call["name"], arguments=piece)
                                ],
                            }
                        )
                    )
                    pieces += 1
            finish = "tool_calls"
        elif calls:
            for i, call in enumerate(calls):
                arguments = _arguments_text(call)
                first, rest = arguments[:1], arguments[1:]
                events.append(
                    chunk(
                        {
                            "tool_calls": [
                                fragment(i, call, ids[i], name=call["name"], arguments=first)
                            ]
                        }
                    )
                )
                for piece in _pieces(rest, size):
                    entry: dict[str, Any] = {"index": i} if with_index else {}
                    entry["function"] = {"arguments": piece}
                    events.append(chunk({"tool_calls": [entry]}))
                pieces += 1 + len(_pieces(rest, size))
            finish = "tool_calls"
        if finish:
            events.append(chunk({}, str(response.get("finish_reason") or finish)))
        if include_usage and response.get("usage") is not False:
            events.append(
                _event(
                    {
                        "choices": [],
                        "created": created,
                        "id": completion_id,
                        "model": model,
                        "system_fingerprint": "fake",
                        "object": "chat.completion.chunk",
                        "usage": self._usage(response, request, pieces),
                    }
                )
            )
        events.append(_event("[DONE]"))
        return events


class _Server(QuietThreadingServer):
    fake: FakeOpenAIServer


class FakeOpenAIServer(ScriptedLoopbackServer):
    """The scripted server, on 127.0.0.1 in a background thread.

    Use as a context manager (or call `start()`/`stop()`). ``port=0`` picks a free port;
    `base_url` (``http://127.0.0.1:PORT/v1``) is what `local.baseUrl` should be.
    """

    handler_class = _Handler
    server_class = _Server
    url_suffix = "/v1"

    def __init__(
        self,
        script: list[Response] | None = None,
        *,
        port: int = 0,
        model: str = DEFAULT_MODEL,
        models: list[str] | None = None,
    ) -> None:
        super().__init__(script, port=port)
        self.models: list[str] = list(models) if models is not None else [model]
        """What ``GET /v1/models`` lists (may be empty)."""
        self.records: list[dict[str, Any]] = []
        """Every request but the ``/_`` control ones: method, path, headers, JSON body."""
        self.ollama: dict[str, Any] | None = None
        """Set: the server also answers as Ollama's native API (`_answer_ollama`): keys
        ``version``, ``loaded`` (the ``/api/ps`` entries), ``parameters`` (``/api/show``)."""
        self.default_intent = "question"
        """What an unscripted intent request is answered (`unscripted_intent`)."""
        self.reads_intent = True
        """Whether milk's probes of the model's reading are answered right."""
        self._disconnects = 0
        self.events_sent: list[int] = []
        """Per streamed answer, in order of their ends: the SSE events written before it
        ended or the client hung up (a stream milk ended early wrote fewer)."""
        self._open_streams = 0
        self._changed = threading.Condition(self.lock)
        self._connections: set[socket.socket] = set()

    def unscripted_intent(self, body: dict[str, Any]) -> Response | None:
        """The answer to milk's intent request (`response_format` named `milk_intent`) when
        the script's next response is not one (a JSON object with an `intent`): the intent
        `default_intent`, the queue left as it is. Scripts written for the agent loop before
        it asked the intent stay true; a test of the intent scripts it. milk's own probes of
        the model's reading (`guided.ask.INTENT_PROBES`) are answered right, or, with
        `reads_intent` False, both "change" (as SmolLM2-135M answers them)."""
        shape = body.get("response_format")
        schema = shape.get("json_schema") if isinstance(shape, dict) else None
        if not isinstance(schema, dict) or schema.get("name") != "milk_intent":
            return None
        messages = body.get("messages") or [{}]
        probe = PROBES.get(str(messages[-1].get("content")))
        if probe is not None:  # milk trying the model's reading: a model that reads well
            said = probe if self.reads_intent else "change"
            return {"text": json.dumps({"intent": said})}
        with self.lock:
            ready = next((r for r in self._queue if "when" not in r), None)
        text = ready.get("text") if ready is not None else None
        try:
            loaded = json.loads(text) if isinstance(text, str) else None
        except json.JSONDecodeError:
            loaded = None
        scripted = isinstance(loaded, dict) and "intent" in loaded
        return None if scripted else {"text": json.dumps({"intent": self.default_intent})}

    def _attach(self, server: ThreadingHTTPServer) -> None:
        assert isinstance(server, _Server)
        server.fake = self

    def _wake_handlers(self) -> None:
        with self.lock:
            connections = list(self._connections)
        for connection in connections:  # wake handler threads blocked on keep-alive reads
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)

    # -- records ---------------------------------------------------------------------------

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The JSON bodies of the chat-completion requests the script answered, in order
        (an unscripted intent request, `unscripted_intent`, is in `all_requests` only)."""
        return [body for body, unscripted in self._chat_requests() if not unscripted]

    @property
    def all_requests(self) -> list[dict[str, Any]]:
        """The JSON bodies of every chat-completion request, in order."""
        return [body for body, _ in self._chat_requests()]

    def _chat_requests(self) -> list[tuple[dict[str, Any], bool]]:
        with self.lock:
            return [
                (copy.deepcopy(r["body"]), bool(r.get("unscripted")))
                for r in self.records
                if r["method"] == "POST" and str(r["path"]).split("?")[0].endswith("/completions")
            ]

    def clear_requests(self) -> None:
        with self.lock:
            self.records.clear()

    # -- streams and hang-ups ----------------------------------------------------------------

    @property
    def disconnects(self) -> int:
        """Streams the client abandoned before their end (a cancelled or timed-out turn)."""
        with self.lock:
            return self._disconnects

    @property
    def open_streams(self) -> int:
        """Streaming responses being written right now."""
        with self.lock:
            return self._open_streams

    def wait_for_disconnects(self, count: int = 1, timeout: float = 5.0) -> bool:
        """Block until at least `count` streams were abandoned; False on timeout."""
        with self._changed:
            return self._changed.wait_for(lambda: self._disconnects >= count, timeout)

    def wait_until_idle(self, timeout: float = 5.0) -> bool:
        """Block until no streaming response is being written; False on timeout."""
        with self._changed:
            return self._changed.wait_for(lambda: self._open_streams == 0, timeout)

    def _note_disconnect(self) -> None:
        with self._changed:
            self._disconnects += 1
            self._changed.notify_all()

    def _stream_started(self) -> None:
        with self._changed:
            self._open_streams += 1
            self._changed.notify_all()

    def _stream_ended(self, sent: int = 0) -> None:
        with self._changed:
            self._open_streams -= 1
            self.events_sent.append(sent)
            self._changed.notify_all()

    def _track(self, connection: socket.socket, *, add: bool) -> None:
        with self.lock:
            if add:
                self._connections.add(connection)
            else:
                self._connections.discard(connection)


@contextlib.contextmanager
def running(script: list[Response] | None = None, **kwargs: Any) -> Iterator[FakeOpenAIServer]:
    """`with running([...]) as server:`, the same as `with FakeOpenAIServer([...]) as server:`."""
    with FakeOpenAIServer(script, **kwargs) as server:
        yield server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fakes.openai_server")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--script", type=Path, default=None, help="JSON list of responses")
    parser.add_argument("--model", default=DEFAULT_MODEL, help="the model id /v1/models lists")
    args = parser.parse_args(argv)
    return serve_until_killed(
        FakeOpenAIServer(load_script(args.script), port=args.port, model=args.model)
    )


if __name__ == "__main__":
    sys.exit(main())
