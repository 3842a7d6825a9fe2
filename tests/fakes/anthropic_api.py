"""A stand-in for the Anthropic Messages API on 127.0.0.1, for running the real `claude` CLI.

It records every request and answers `POST /v1/messages` with scripted SSE streams in the
real event shapes, so tests can drive Claude Code end to end and assert what it was sent.

Library::

    with FakeAnthropicAPI() as api:
        api.enqueue({"text": "hello"}, {"tool_use": {"name": "Bash", "input": {...}}})
        ...  # run claude with ANTHROPIC_BASE_URL=api.base_url
        main = api.main_requests()
        assert appended_system_text(main[0]) == context_file_text

CLI::

    python -m tests.fakes.anthropic_api [--port N] [--script FILE.json]

prints exactly ``READY http://127.0.0.1:PORT`` on stdout, then serves until killed.
``POST /_script`` (a JSON list, or ``{"responses": [...]}``) replaces the queue,
``GET /_requests`` returns the recorded requests, ``DELETE /_requests`` clears them.

Scripted responses (one is popped per *main* conversation request; an empty queue answers
the text "ok"):

* ``{"text": "...", "chunk_chars": 5, "delay": 0.0}``: a text block streamed in chunks of
  ``chunk_chars`` characters, ``delay`` seconds before each chunk.
* ``{"thinking": "...", "text": "..."}``: a thinking block (with a signature), then text.
* ``{"tool_use": {"name": "Bash", "input": {...}, "id": optional}, "text": optional}``:
  optional text, then a tool_use block streamed as ``input_json_delta``s, ``stop_reason``
  ``tool_use``. The CLI runs the tool (or asks permission) and sends a follow-up request
  with the tool_result: script that answer as the next response.
* ``{"status": 500}`` / ``{"status": 429}`` (optional ``"message"``, ``"retry_after"``,
  and ``"repeat": N`` to answer N consecutive requests, e.g. the CLI's retries).
* ``{"error": "prompt_too_long"}``: the real API's 400 ``invalid_request_error``
  "prompt is too long: N tokens > M maximum".
* ``{"stall": s}``: streams the first text chunk, then sends nothing for ``s`` seconds
  (woken early by the client hanging up or ``stop()``), then the rest.
* ``{"delay": s}``: waits ``s`` seconds before each chunk, so ``{"delay": s}`` alone answers
  "ok" after ``s`` seconds.
* ``"usage"``: optional dict merged into the reported usage, or ``"measured"``: counted from
  the request (`FakeAnthropicAPI.measured_usage`), for cost comparisons.
* ``{"when": "text", "then": [...]}``: waits, skipped, until a request whose last user text
  contains ``text``; its ``then`` responses answer that request and the ones after it.

Side requests that Claude Code may make besides the conversation (title generation, quota
probes, small-model side calls) never consume the script: a request is "main" only when it
carries a ``tools`` list (empty under ``--tools=``) and ``stream: true``, which every
conversation request of the CLI does and its side calls do not. Side requests get a short text answer. (Measured on
2.1.332 in ``--print`` mode: no side call at all, with or without
``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC``; without it the CLI also sends
``HEAD /api/hello``, which is answered 200.) ``/v1/messages/count_tokens`` and
``/v1/models`` are answered too, although the CLI was not seen calling them.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import sys
import uuid
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.fakes._loopback import (
    LoopbackHandler,
    QuietThreadingServer,
    Response,
    ScriptedLoopbackServer,
    load_script,
    serve_until_killed,
)

_SECRET_HEADERS = frozenset({"x-api-key", "authorization"})
_DEFAULT_USAGE = {
    "input_tokens": 21,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
    "output_tokens": 1,
}
SIDE_ANSWER = "Side answer"
"""What side requests (no tools) are answered with."""


def is_main_request(request: dict[str, Any]) -> bool:
    """True for a conversation request of the CLI: it streams and has a `tools` list, empty
    for milk's tool-less brief requests (``--tools=``)."""
    body = request.get("body")
    if not isinstance(body, dict):
        return False
    if request.get("path", "").split("?", 1)[0] != "/v1/messages":
        return False
    return isinstance(body.get("tools"), list) and body.get("stream") is True


def _shared_start(one: str, other: str) -> int:
    """How many first characters `one` and `other` have in common (a binary search)."""
    low, high = 0, min(len(one), len(other))
    while low < high:
        middle = (low + high + 1) // 2
        if one[:middle] == other[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def latest_user_text(body: dict[str, Any]) -> str:
    """The text of the request's last user message (its tool results left out)."""
    users = [
        m for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "user"
    ]
    return "\n".join(_block_texts(users[-1].get("content"))) if users else ""


def _block_texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    texts: list[str] = []
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                texts.append(str(block.get("text", "")))
    return texts


BUILTIN_PROMPT_ENDINGS: tuple[str, ...] = (
    # Claude Code 2.1.327 and 2.1.332: the last sentence of the built-in system prompt.
    "even if it is renamed or called original.",
)
"""How the CLI's built-in system prompt ends; the appended text follows it after a blank line.

Re-check after a CLI upgrade: `appended_system_text` raises when none of these is found.
"""


def appended_system_text(request: dict[str, Any]) -> str:
    """The text Claude Code appended to its system prompt (``--append-system-prompt-file``).

    The CLI puts the file's bytes verbatim at the very end of the last ``system`` block,
    after the built-in prompt and a blank line (claude-cli-facts.md §3); with no append flag
    the block ends with the built-in prompt. Under ``--bare`` the block is the ``CWD:`` and
    ``Date:`` lines, a blank line and the appended text. Returns "" when nothing was appended.
    """
    body = request.get("body") or {}
    blocks = _block_texts(body.get("system"))
    if not blocks:
        return ""
    last = blocks[-1]
    for ending in BUILTIN_PROMPT_ENDINGS:
        start = 0
        while (idx := last.find(ending, start)) >= 0:
            tail = last[idx + len(ending) :]
            if tail == "":
                return ""
            if tail.startswith("\n\n"):
                return tail[2:]
            start = idx + 1
    if last.startswith("CWD: "):
        _, _, tail = last.partition("\n\n")
        return tail
    raise ValueError(
        "cannot find the end of Claude Code's built-in system prompt in this request; "
        "add the new ending to tests.fakes.anthropic_api.BUILTIN_PROMPT_ENDINGS"
    )


def user_text(request: dict[str, Any]) -> str:
    """The text the user sent in a request: the newest user message with text blocks.

    Claude Code's own ``<system-reminder>`` blocks (such as the attribution note it puts
    before a first prompt) are left out; several text blocks are joined by newlines. A user
    message holding only tool results is skipped.
    """
    body = request.get("body") or {}
    for message in reversed(body.get("messages") or []):
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        texts = [
            t for t in _block_texts(message.get("content")) if not t.startswith("<system-reminder>")
        ]
        if texts:
            return "\n".join(texts)
    return ""


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def _chunks(text: str, size: int) -> list[str]:
    size = max(1, size)
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


class _Handler(LoopbackHandler):
    server: _Server

    # -- helpers -----------------------------------------------------------------------

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", f"req_fake_{uuid.uuid4().hex[:16]}")
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _record(self, body: Any) -> dict[str, Any]:
        headers = {
            k.lower(): v for k, v in self.headers.items() if k.lower() not in _SECRET_HEADERS
        }
        record = {"method": self.command, "path": self.path, "headers": headers, "body": body}
        record["main"] = is_main_request(record)
        with self.server.api.lock:
            self.server.api.requests_list.append(record)
        return record

    # -- endpoints ---------------------------------------------------------------------

    def do_HEAD(self) -> None:
        self._record(None)
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/_requests":
            with self.server.api.lock:
                payload = copy.deepcopy(self.server.api.requests_list)
            self._send_json(200, payload)
            return
        self._record(None)
        if path == "/v1/models":
            self._send_json(
                200,
                {
                    "data": [
                        {
                            "type": "model",
                            "id": "claude-fake-1",
                            "display_name": "Claude Fake",
                            "created_at": "2026-01-01T00:00:00Z",
                        }
                    ],
                    "has_more": False,
                    "first_id": "claude-fake-1",
                    "last_id": "claude-fake-1",
                },
            )
            return
        self._send_json(200, {})

    def do_DELETE(self) -> None:
        if self.path.split("?", 1)[0] == "/_requests":
            with self.server.api.lock:
                self.server.api.requests_list.clear()
            self._send_json(200, {"ok": True})
            return
        self._send_json(
            404, {"type": "error", "error": {"type": "not_found_error", "message": "not found"}}
        )

    def do_POST(self) -> None:
        body = self._json_body()
        path = self.path.split("?", 1)[0]
        if path == "/_script":
            self._replace_script(body)
            return
        record = self._record(body)
        if path == "/v1/messages/count_tokens":
            self._send_json(200, {"input_tokens": 100})
            return
        if path != "/v1/messages":
            self._send_json(200, {})
            return
        if not isinstance(body, dict):
            self._send_json(
                400,
                {
                    "type": "error",
                    "error": {"type": "invalid_request_error", "message": "bad body"},
                },
            )
            return
        if record["main"]:
            response = self.server.api.pop_response(latest_user_text(body))
            if response.get("usage") == "measured":
                response = {**response, "usage": self.server.api.measured_usage(body)}
        else:
            response = {"text": SIDE_ANSWER, "chunk_chars": 1000}
        model = str(body.get("model") or "claude-fake-1")
        try:
            if body.get("stream"):
                self._answer_stream(response, model)
            else:
                self._answer_plain(response, model)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    # -- answers -----------------------------------------------------------------------

    def _error_answer(self, response: Response) -> bool:
        """Send an HTTP error if the response is one; True when it was."""
        if "status" in response:
            status = int(response["status"])
            if status == 429:
                kind, message = "rate_limit_error", "stand-in rate limit"
            elif status == 529:
                kind, message = "overloaded_error", "stand-in overloaded"
            elif status == 401:
                kind, message = "authentication_error", "invalid x-api-key"
            elif status >= 500:
                kind, message = "api_error", "stand-in internal error"
            else:
                kind, message = "invalid_request_error", "stand-in bad request"
            headers = {}
            if "retry_after" in response:
                headers["retry-after"] = str(response["retry_after"])
            elif status == 429:
                headers["retry-after"] = "0"
            self._send_json(
                status,
                {
                    "type": "error",
                    "error": {"type": kind, "message": response.get("message", message)},
                },
                headers,
            )
            return True
        if response.get("error") == "prompt_too_long":
            tokens = int(response.get("tokens", 210_000))
            maximum = int(response.get("maximum", 200_000))
            self._send_json(
                400,
                {
                    "type": "error",
                    "error": {
                        "type": "invalid_request_error",
                        "message": f"prompt is too long: {tokens} tokens > {maximum} maximum",
                    },
                },
            )
            return True
        return False

    def _usage(self, response: Response) -> dict[str, int]:
        usage = dict(_DEFAULT_USAGE)
        usage.update(response.get("usage") or {})
        return usage

    def _answer_plain(self, response: Response, model: str) -> None:
        if self._error_answer(response):
            return
        content: list[dict[str, Any]] = []
        if response.get("thinking"):
            content.append(
                {"type": "thinking", "thinking": response["thinking"], "signature": "sig"}
            )
        text = response.get("text")
        if text is None and "tool_use" not in response:
            text = "ok"
        if text:
            content.append({"type": "text", "text": text})
        stop_reason = "end_turn"
        if "tool_use" in response:
            tool = response["tool_use"]
            content.append(
                {
                    "type": "tool_use",
                    "id": tool.get("id") or f"toolu_fake_{uuid.uuid4().hex[:12]}",
                    "name": tool["name"],
                    "input": tool.get("input", {}),
                }
            )
            stop_reason = "tool_use"
        usage = self._usage(response)
        usage["output_tokens"] = max(1, usage["output_tokens"]) + len(str(text or "")) // 4
        self._send_json(
            200,
            {
                "id": f"msg_fake_{uuid.uuid4().hex[:16]}",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": content,
                "stop_reason": stop_reason,
                "stop_sequence": None,
                "usage": usage,
            },
        )

    def _answer_stream(self, response: Response, model: str) -> None:
        if "delay" in response and not any(
            k in response for k in ("text", "thinking", "tool_use", "stall")
        ):
            response = {**response, "text": "ok"}
        if self._error_answer(response):
            return
        delay = float(response.get("delay", 0.0))
        stall = float(response.get("stall", 0.0))
        size = int(response.get("chunk_chars", 5))
        usage = self._usage(response)

        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("request-id", f"req_fake_{uuid.uuid4().hex[:16]}")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True

        def emit(event: str, data: dict[str, Any]) -> None:
            self.wfile.write(_sse(event, data))
            self.wfile.flush()

        emit(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": f"msg_fake_{uuid.uuid4().hex[:16]}",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {**usage, "output_tokens": 1},
                },
            },
        )
        index = 0
        output_chars = 0
        stalled = stall <= 0

        def maybe_stall() -> bool:
            nonlocal stalled
            if not stalled:
                stalled = True
                return self._wait(stall)
            return True

        if response.get("thinking"):
            emit(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "thinking", "thinking": "", "signature": ""},
                },
            )
            for piece in _chunks(str(response["thinking"]), size):
                if delay and not self._wait(delay):
                    return
                emit(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "thinking_delta", "thinking": piece},
                    },
                )
                output_chars += len(piece)
            emit(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "signature_delta", "signature": "ZmFrZS1zaWduYXR1cmU="},
                },
            )
            emit("content_block_stop", {"type": "content_block_stop", "index": index})
            index += 1

        text = response.get("text")
        if text is None and "tool_use" not in response:
            text = "ok"
        if text:
            emit(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                },
            )
            for piece in _chunks(str(text), size):
                if delay and not self._wait(delay):
                    return
                emit(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "text_delta", "text": piece},
                    },
                )
                output_chars += len(piece)
                if not maybe_stall():
                    return
            emit("content_block_stop", {"type": "content_block_stop", "index": index})
            index += 1
        if not maybe_stall():
            return

        stop_reason = "end_turn"
        if "tool_use" in response:
            tool = response["tool_use"]
            emit(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {
                        "type": "tool_use",
                        "id": tool.get("id") or f"toolu_fake_{uuid.uuid4().hex[:12]}",
                        "name": tool["name"],
                        "input": {},
                    },
                },
            )
            args = json.dumps(tool.get("input", {}))
            for piece in _chunks(args, max(size, 16)):
                emit(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": piece},
                    },
                )
            emit("content_block_stop", {"type": "content_block_stop", "index": index})
            index += 1
            stop_reason = "tool_use"

        emit(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {
                    "input_tokens": usage["input_tokens"],
                    "cache_creation_input_tokens": usage["cache_creation_input_tokens"],
                    "cache_read_input_tokens": usage["cache_read_input_tokens"],
                    "output_tokens": max(usage["output_tokens"], 1 + output_chars // 4),
                },
            },
        )
        emit("message_stop", {"type": "message_stop"})


class _Server(QuietThreadingServer):
    api: FakeAnthropicAPI


class FakeAnthropicAPI(ScriptedLoopbackServer):
    """The stand-in API, serving on 127.0.0.1 in a background thread.

    Use as a context manager (or call `start()`/`stop()`). ``port=0`` picks a free port.
    """

    handler_class = _Handler
    server_class = _Server

    def __init__(self, script: list[Response] | None = None, *, port: int = 0) -> None:
        self.requests_list: list[dict[str, Any]] = []
        """Every recorded request: method, path, headers (minus the key), JSON body, main."""
        self._sent: list[str] = []
        """The requests `measured_usage` counted, as sent (for what the cache holds)."""
        super().__init__(script, port=port)

    def _attach(self, server: ThreadingHTTPServer) -> None:
        assert isinstance(server, _Server)
        server.api = self

    # -- records -------------------------------------------------------------------------

    @property
    def requests(self) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.requests_list)

    def main_requests(self) -> list[dict[str, Any]]:
        """The conversation requests (the ones that consumed the script)."""
        return [r for r in self.requests if r["main"]]

    def clear_requests(self) -> None:
        with self.lock:
            self.requests_list.clear()

    def measured_usage(self, body: dict[str, Any]) -> dict[str, int]:
        """Usage as the API would count `body`, roughly: 4 characters a token; the longest
        start it shares with an earlier request (tools, system prompt, earlier messages) is
        read from the prompt cache when 1024 tokens or more, the rest is new input."""
        sent = json.dumps([body.get("tools"), body.get("system"), body.get("messages")])
        with self.lock:
            shared = max((_shared_start(sent, old) for old in self._sent), default=0)
            self._sent.append(sent)
        cached = shared // 4 if shared // 4 >= 1024 else 0
        return {
            "input_tokens": max(1, len(sent) // 4 - cached),
            "cache_read_input_tokens": cached,
            "cache_creation_input_tokens": 0,
        }


@contextlib.contextmanager
def running(script: list[Response] | None = None) -> Iterator[FakeAnthropicAPI]:
    """`with running([...]) as api:` — the same as `with FakeAnthropicAPI([...]) as api:`."""
    with FakeAnthropicAPI(script) as api:
        yield api


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fakes.anthropic_api")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--script", type=Path, default=None)
    args = parser.parse_args(argv)
    return serve_until_killed(FakeAnthropicAPI(load_script(args.script), port=args.port))


if __name__ == "__main__":
    sys.exit(main())
