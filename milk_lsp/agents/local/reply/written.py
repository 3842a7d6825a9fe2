"""A tool call a reply spells out among its prose, found so it can run."""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from dataclasses import dataclass

from milk_lsp.agents.local.reply.tool_calls import (
    MergedToolCall,
    decode_loose_object,
    parse_text_tool_calls,
)

CALL_SHAPE = re.compile(r'\{\s*"name"\s*:\s*"([^"\\]{1,80})"\s*,\s*"(?:arguments|parameters)"\s*:')
"""The start of a call written as JSON: `{"name": "…", "arguments":`."""
_JSON = json.JSONDecoder()


@dataclass(frozen=True)
class WrittenCall:
    """The call a reply spells out among prose, and how many calls it wrote in all."""

    call: MergedToolCall
    written: int


def embedded_call(text: str, offered: Collection[str]) -> WrittenCall | None:
    """The tool call a reply spells out among prose (bare, in a fence or in tool-call tags):
    its first call-shaped JSON object, when that is a call to an offered tool whose
    arguments parse; None otherwise.

    Small models write a plan of several calls at once; running the first and letting the
    model see its result is the "one step at a time" the prompt asks for (measured with
    Qwen2.5-Coder-1.5B on the question tasks of bench/real_tasks.py: 1 of 6 answered
    locally when a plan was refused, 3 of 6 when its first step ran)."""
    first: MergedToolCall | None = None
    written = 0
    for match in CALL_SHAPE.finditer(text):
        written += 1
        if written > 1:
            continue
        try:
            value, _ = _JSON.raw_decode(text, match.start())
        except (ValueError, RecursionError):
            value = decode_loose_object(text, match.start())  # code's `"` left unescaped
            if value is None:
                return None
        calls = parse_text_tool_calls(json.dumps(value), offered)
        if not calls:
            return None
        first = calls[0]
    return WrittenCall(first, written) if first is not None else None
