"""One round of the local agent's tool loop, its pieces: the calls a reply made (each with a
turn-unique id and parsed arguments), a tool's outcome for the tool message, and the text
shown over the replies of a turn (a new reply starts a new paragraph)."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from milk_lsp.agents.base import TextDelta
from milk_lsp.agents.local.client import LocalSettings
from milk_lsp.agents.local.reply.tool_calls import MergedToolCall, parse_tool_arguments


@dataclass(frozen=True)
class Call:
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


def new_call_id(used: set[str]) -> str:
    while True:
        call_id = f"call_{secrets.token_hex(8)}"
        if call_id not in used:
            return call_id


def prepare_calls(merged: list[MergedToolCall], used_ids: set[str]) -> list[Call]:
    """Give every named call a turn-unique id and parse its arguments."""
    calls: list[Call] = []
    for call in merged:
        call_id = call.id if call.id and call.id not in used_ids else new_call_id(used_ids)
        used_ids.add(call_id)
        arguments, invalid = parse_tool_arguments(call.arguments)
        calls.append(Call(call_id, call.name, call.arguments, arguments, invalid))
    return calls


def escalation_reason(call: Call) -> str:
    if call.arguments is None:
        return call.raw_arguments.strip()
    reason = call.arguments.get("reason")
    if isinstance(reason, str):
        return reason.strip()
    return ""


@dataclass(frozen=True)
class Outcome:
    output: str
    is_error: bool = False
    denied: bool = False
    made_already: bool = False


class Paragraphs:
    """The text shown over the replies of one turn: a reply's text that follows earlier
    text (after a tool round or a nudge) starts a new paragraph instead of running on."""

    def __init__(self) -> None:
        self._tail = ""
        self._new_reply = False

    def new_reply(self) -> None:
        self._new_reply = True

    def delta(self, text: str) -> TextDelta:
        if text and self._new_reply and self._tail and not self._tail.endswith("\n\n"):
            text = ("\n" if self._tail.endswith("\n") else "\n\n") + text
        if text:
            self._new_reply = False
            self._tail = (self._tail + text)[-2:]
        return TextDelta(text)


def plan_note(rest: int, ended: bool = False) -> str:
    """Told to a model whose reply wrote several calls as text: only the first ran; or
    (`ended`) whose reply milk ended after the call it wrote (`runaway`); else ""."""
    if rest:
        return (
            f"\n\n(milk ran only the first call you wrote; {rest} more were not run. Read "
            "this result, then make the next call if you still need it.)"
        )
    if ended:
        return (
            "\n\n(milk ran the call you wrote and ended your reply there. Read this result, "
            "then make the next call if you still need it.)"
        )
    return ""


def spec_names(specs: Iterable[Any]) -> Iterable[str]:
    """The function names of OpenAI `tools` entries (what the model was offered)."""
    for spec in specs:
        function = spec.get("function") if isinstance(spec, Mapping) else None
        name = function.get("name") if isinstance(function, Mapping) else None
        if isinstance(name, str) and name:
            yield name


def request_body(
    model: str,
    conversation: list[dict[str, Any]],
    specs: list[dict[str, Any]],
    settings: LocalSettings,
    edits: bool,
) -> dict[str, Any]:
    """One streamed chat-completion request of the loop. Its `max_tokens` fits what the
    reply may carry: `settings.max_tokens`, twice that when it may carry edits (`edits`:
    `edit_file` is offered; an edit carries its new text), so a reply that rambles ends at
    milk's cap, not at the server's (often the whole context)."""
    body: dict[str, Any] = {
        "model": model,
        "messages": conversation,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if specs:
        body["tools"] = specs
    if settings.temperature is not None:
        body["temperature"] = settings.temperature
    if settings.max_tokens:
        body["max_tokens"] = settings.max_tokens * (2 if edits else 1)
    return body
