"""One streamed chat-completion reply: its chunks folded into text, reasoning, tool calls, usage.

Also the short texts quoted from a server's error values and bodies, and `LocalModelError`,
the failure (with its `TurnFailed` reason) raised for a reply that cannot be read and for
anything else that goes wrong talking to the local model.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from milk_lsp.agents.base import (
    AgentEvent,
    FailureReason,
    NoticeEvent,
    TextDelta,
    ThinkingDelta,
    UsageEvent,
)
from milk_lsp.text import cut, one_line

__all__ = [
    "LocalModelError",
    "Reply",
    "apply_chunk",
    "body_detail",
    "error_text",
    "final_reply_notices",
    "length_notice",
    "short",
    "usage_event",
]

_DETAIL_CHARS = 300
"""Characters of a server's error text quoted in a failure message."""


class LocalModelError(Exception):
    """A failure talking to the local model, with the `TurnFailed` reason it maps to."""

    def __init__(self, reason: FailureReason, message: str, http_status: int | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.http_status = http_status
        """The status of an HTTP error answer (None: no answer, or not an HTTP error)."""


@dataclass
class Reply:
    """What one model call produced (filled while its stream is read)."""

    text: list[str] = field(default_factory=list)
    reasoned: bool = False
    fragments: list[Any] = field(default_factory=list)
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    done: bool = False
    """`data: [DONE]` arrived (or a whole non-streamed completion was read)."""
    stopped: str | None = None
    """Why milk ended the request before the server did (`runaway`), in words."""


_REASONING_KEYS = ("reasoning_content", "reasoning", "thinking")


def apply_chunk(reply: Reply, chunk: Any) -> list[AgentEvent]:
    """Fold one parsed `chat.completion.chunk` into `reply`; the display events it carries."""
    if not isinstance(chunk, dict):
        raise LocalModelError(
            FailureReason.LOCAL_FAILED,
            f"malformed stream from the local model: a data line held a JSON "
            f"{type(chunk).__name__}, not an object",
        )
    error = chunk.get("error")
    if error:
        raise LocalModelError(
            FailureReason.LOCAL_FAILED,
            f"the local model reported an error mid-stream: {error_text(error)}",
        )
    usage = chunk.get("usage")
    if isinstance(usage, dict):
        reply.usage = usage
    choices = chunk.get("choices")
    if not isinstance(choices, list):
        return []
    events: list[AgentEvent] = []
    for choice in choices:
        if not isinstance(choice, dict) or choice.get("index", 0) not in (0, None):
            continue
        delta = choice.get("delta")
        if delta is None:
            delta = choice.get("message")  # a whole (non-streamed) completion
        if isinstance(delta, dict):
            for key in _REASONING_KEYS:
                reasoning = delta.get(key)
                if isinstance(reasoning, str) and reasoning:
                    reply.reasoned = True
                    events.append(ThinkingDelta(reasoning))
                    break  # servers that send two of these send the same text twice
            content = delta.get("content")
            if isinstance(content, str) and content:
                reply.text.append(content)
                events.append(TextDelta(content))
            tool_calls = delta.get("tool_calls")
            if isinstance(tool_calls, list):
                reply.fragments.extend(tool_calls)
            elif isinstance(delta.get("function_call"), dict):
                # the deprecated single-call field, only when `tool_calls` is absent
                reply.fragments.append({"index": 0, "function": delta["function_call"]})
        finish_reason = choice.get("finish_reason")
        if isinstance(finish_reason, str) and finish_reason:
            reply.finish_reason = finish_reason
    return events


def usage_event(usage: Mapping[str, Any]) -> UsageEvent:
    """OpenAI usage → `UsageEvent` (input tokens exclude the cached part, as Anthropic's do)."""
    prompt = _int(usage.get("prompt_tokens"))
    completion = _int(usage.get("completion_tokens"))
    details = usage.get("prompt_tokens_details")
    cached: int | None = None
    if isinstance(details, Mapping) and details.get("cached_tokens") is not None:
        cached = _int(details.get("cached_tokens"))
    return UsageEvent(
        input_tokens=max(prompt - (cached or 0), 0),
        output_tokens=completion,
        cache_read_tokens=cached,
    )


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def error_text(error: Any) -> str:
    """The message of an OpenAI-style `error` value (object or string), shortened."""
    if isinstance(error, Mapping):
        for key in ("message", "detail", "error"):
            value = error.get(key)
            if isinstance(value, str) and value:
                return short(value)
            if isinstance(value, Mapping):
                return error_text(value)
        return short(json.dumps(error))
    return short(str(error))


def short(text: str, limit: int = _DETAIL_CHARS) -> str:
    """`text` on one line, cut to `limit` characters."""
    return cut(one_line(text), limit)


def final_reply_notices(reply: Reply) -> list[NoticeEvent]:
    """The warnings a reply that ends the turn calls for: no answer, or cut off at its limit."""
    notices: list[NoticeEvent] = []
    if not "".join(reply.text).strip():
        notices.append(
            NoticeEvent(
                "warning",
                "the local model gave only reasoning and no answer"
                if reply.reasoned
                else "the local model returned an empty reply",
            )
        )
    if reply.finish_reason == "length":
        notices.append(length_notice())
    return notices


def length_notice() -> NoticeEvent:
    return NoticeEvent("warning", "the local model's reply was cut off at its token limit")


def body_detail(raw: bytes) -> str:
    """A short text for an error body: the JSON error message when there is one."""
    text = raw.decode("utf-8", "replace")
    try:
        payload = json.loads(text)
    except ValueError:
        return short(text) or "(empty body)"
    if isinstance(payload, Mapping):
        return error_text(payload.get("error") or payload)
    return short(text)
