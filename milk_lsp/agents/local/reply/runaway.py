"""Runaway replies, stopped as they stream (issue 30).

A small model that writes its tool call as text often goes on after it (the call again, a
made-up result, a plan), and one that loops repeats a line until the server's cap: measured
with Qwen2.5-Coder-1.5B on two cores, such replies were 80 % of the time spent generating.
`RunawayWatch` reads the reply's text as it arrives and says when to end the request:

* a complete tool call written as text (`{"name": …, "arguments": …}` bare, fenced or in
  tags, or the tool's name and its arguments at the reply's start, `search_text {'pattern':
  …}`) followed by anything but its closing fence or tag or another call: the reply is cut
  at the call's end; a call of an offered tool runs, one of another tool at the reply's
  start is judged as the unrunnable call it is (a call shown inside an answer is left);
* the text's end repeating itself: the same block of at least `MIN_PERIOD` characters three
  times or more in a row, `MIN_REPEATED_CHARS` in all (whitespace-only blocks aside), or
  `IN_CALL_REPEATED_CHARS` inside a call still being written; or blank space on and on
  (`BLANK_RUN_CHARS`);
* a chat template's special token (`<|im_start|>`, `<|eot_id|>`, `<end_of_turn>`) or a
  tool result's tag (`<tool_response>`): the model writes the conversation on itself (the
  user's next message, a made-up result of its own call); the reply is cut before it.

Pure: it looks at text only; the agent ends the request and judges what was kept.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from milk_lsp.agents.base import NoticeEvent, TextDelta
from milk_lsp.agents.local.context_window import estimate_prompt_tokens
from milk_lsp.agents.local.reply.stream import Reply
from milk_lsp.agents.local.reply.tool_calls import parse_text_tool_calls

MIN_PERIOD = 8
MAX_PERIOD = 600
MIN_REPEATED_CHARS = 240
IN_CALL_REPEATED_CHARS = 2000
"""A written call's text may repeat (a file's lines in `new_text`); this much of one block
again and again is a loop all the same (measured: an argument looping to the cap)."""
BLANK_RUN_CHARS = 240
"""Blank space this long at the reply's end is a runaway too (measured: a call written as
text, then newlines to the cap)."""
CHECK_EVERY_CHARS = 96
"""New text between two looks for a loop or a call (each look is linear in the text)."""

_CALL_SHAPE = re.compile(r'\{\s*"name"\s*:\s*"([^"\\]{1,80})"\s*,\s*"(?:arguments|parameters)"\s*:')
_SPECIAL_TOKEN = re.compile(
    r"<\|(?:im_start|im_end|endoftext|eot_id|start_header_id|end_header_id|begin_of_text|"
    r"end|user|assistant|system)\|>|<(?:start|end)_of_turn>|\[/?INST\]|"
    r"<(?:tool_response|tool_result)>"
)
"""A chat template's turn marks, and the tag of a tool's result: the model writes the
conversation on (a made-up result of its own call, the user's next message)."""
_NAMED_CALL = re.compile(r"\s*`?([A-Za-z_]\w*)`?\s*(?::\s*|\(\s*)?(?=\{)")
"""A call written as the tool's name and its arguments (`search_text {'pattern': 'x'}`,
`read_file({"path": "a.py"})`) at the start of a reply."""
_CLOSERS = ("```", "</tool_call>", "[/tool_call]", "</tools>")
_OPENERS = ("```", "<tool_call>", "[tool_call]", "<tools>", "{")
_CLOSER = re.compile(r"(?:\s*(?:```|</tool_call>|\[/tool_call\]|</tools>))+")
_TAIL_CHARS = 24
"""The end of the text kept to find a special token split over two pieces."""


@dataclass(frozen=True)
class Stop:
    """End the request: `why` in words for the user, and how much of the text to keep."""

    why: str
    keep: int
    """Characters of the reply's text kept (the rest is the runaway part)."""
    call: bool = False
    """The kept text ends with a complete tool call written as text, to be run."""


class RunawayWatch:
    """One reply's text as it streams, and whether it has run away (see the module)."""

    def __init__(self, offered: Collection[str], *, calls: bool = True) -> None:
        """`offered`: the tools the model may call; `calls`: whether a call written as text
        is run (`local.textToolCalls`), so one stops the reply."""
        self._offered = offered
        self._calls = calls and bool(offered)
        self._pieces: list[str] = []
        self._size = 0
        self._checked = 0
        self._tail = ""
        self._call_at: int | None = None
        """Where a call-shaped object starts in the text, once one has."""
        self._call_end: int | None = None
        self._named = False
        """`"name"` has been written, or the reply opens with a tool's name and `{`: a call
        may be taking shape."""
        self._search_from = 0
        self._count = 0
        self._runs = False
        """The call taking shape is to an offered tool, written so that it can be run."""
        self._named_end: re.Match[str] | None = None

    def feed(self, piece: str) -> Stop | None:
        """Take the next piece of the reply's text; a `Stop` when the request should end."""
        if not piece:
            return None
        start = self._size
        self._count += 1
        recent = self._tail + piece
        self._pieces.append(piece)
        self._size += len(piece)
        self._tail = recent[-_TAIL_CHARS:]
        special = _SPECIAL_TOKEN.search(recent)
        if special is not None:
            at = start - (len(recent) - len(piece)) + special.start()
            if not self._text()[:at].strip():  # markup as the whole answer: judged as such
                at += len(special.group())
            return Stop(f"it wrote chat-template markup ({special.group()})", max(0, at))
        self._named = (
            self._named
            or '"name"' in recent
            or ("{" in recent and self._size < 200 and bool(_NAMED_CALL.match(self._text())))
        )
        if self._calls and self._named:
            stop = self._after_call(self._text())
            if stop is not None:
                return stop
        if self._size - self._checked < CHECK_EVERY_CHARS:
            return None
        self._checked = self._size
        text = self._text()
        kept = text.rstrip()
        if len(text) - len(kept) >= BLANK_RUN_CHARS:
            return self._blank_run(kept)
        in_call = self.in_call
        period = repeating_period(text, IN_CALL_REPEATED_CHARS if in_call else MIN_REPEATED_CHARS)
        if period is not None:
            at = _loop_start(text, period)
            where = " inside a tool call" if in_call else ""
            return Stop(
                f"it repeated itself{where} ({_quoted(text[at - period : at])} again and again)",
                at,
            )
        return None

    def _blank_run(self, kept: str) -> Stop:
        """Blank space on and on: the text before it is kept, and a complete call written
        as text just before it runs."""
        end = self._call_end
        after = "" if end is None else _CLOSER.sub("", kept[end:], count=1).strip()
        runs = self._calls and self._runs and end is not None and not after
        return Stop("it wrote blank space on and on", len(kept), call=runs)

    @property
    def pieces(self) -> int:
        """Streamed pieces of text so far (a server streams about one token each)."""
        return self._count

    def take(self, event: TextDelta) -> tuple[TextDelta, Stop | None]:
        """`feed` for a streamed piece: the part of it to keep (all of it, unless the reply
        stops within it) and the stop, if any."""
        before = self._size
        stop = self.feed(event.text)
        if stop is None:
            return event, None
        return TextDelta(event.text[: max(0, stop.keep - before)]), stop

    def _text(self) -> str:
        if len(self._pieces) > 1:
            self._pieces = ["".join(self._pieces)]
        return self._pieces[0]

    def _after_call(self, text: str) -> Stop | None:
        """Complete calls written as text (JSON anywhere, or the tool's name and its
        arguments at the start) with text after them that is neither a closing fence or
        tag nor another call: keep the text to the last call's end (and its closer). A call
        of an offered tool is run; one of another is judged as the unrunnable call it is."""
        while True:
            if self._call_at is None:
                named = _NAMED_CALL.match(text) if self._search_from == 0 else None
                if named is not None and named.group(1) in self._offered:
                    self._call_at, self._runs = named.end(), True
                    self._named_end = named
                else:
                    match = _CALL_SHAPE.search(text, self._search_from)
                    if match is None:
                        return None
                    self._call_at, self._named_end = match.start(), None
                    self._runs = match.group(1) in self._offered
                    opening = text[: match.start()].strip(" \n`{<>[]").removesuffix("json")
                    if not self._runs and opening.replace("tool_call", "").strip():
                        self._calls = False  # an example of a call inside an answer
                        return None
            if self._call_end is None:
                end = _value_end(text, self._call_at)
                if end is None:
                    return None  # not complete yet (or never: then no stop for it)
                if self._named_end is not None and text.startswith(")", end):
                    end += 1
                written = text[:end] if self._named_end is not None else text[self._call_at : end]
                self._runs = self._runs and bool(parse_text_tool_calls(written, self._offered))
                self._call_end = end
            closer = _CLOSER.match(text, self._call_end)
            keep = closer.end() if closer is not None else self._call_end
            rest = text[keep:].lstrip()
            if not rest or any(closer.startswith(rest) for closer in _CLOSERS):
                return None  # nothing after it yet, or its closer still arriving
            if rest.startswith(_OPENERS) or any(opener.startswith(rest) for opener in _OPENERS):
                if not _CALL_SHAPE.search(text, keep):
                    return None  # another call may be taking shape
                self._search_from, self._call_at, self._call_end = keep, None, None
                continue
            if not self._runs:
                return Stop("it went on after a call it could not make", keep)
            return Stop("it went on after a complete tool call written as text", keep, call=True)

    @property
    def in_call(self) -> bool:
        """A written call has begun and is not complete yet (its text may repeat: a file's
        lines in `new_text`)."""
        return self._call_at is not None and self._call_end is None


def _value_end(text: str, start: int) -> int | None:
    """The end of the JSON object or Python dict at `start` (quotes of either kind kept
    apart), or None while it is not closed."""
    depth, quote, escaped = 0, "", False
    for at in range(start, len(text)):
        char = text[at]
        if quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return at + 1
    return None


def repeating_period(text: str, min_chars: int = MIN_REPEATED_CHARS) -> int | None:
    """The length of the block the end of `text` repeats (three times or more in a row,
    `min_chars` in all), or None."""
    size = len(text)
    for period in range(MIN_PERIOD, min(MAX_PERIOD, size // 3) + 1):
        block = text[size - period :]
        if not block.strip():
            continue
        copies = 1
        at = size - period
        while at - period >= 0 and text[at - period : at] == block:
            copies += 1
            at -= period
            if copies >= 3 and copies * period >= min_chars:
                return period
    return None


def _loop_start(text: str, period: int) -> int:
    """Where the repetition began: the text before its first copy, and that copy, kept."""
    at = len(text) - period
    while at - period >= 0 and text[at - period : at] == text[at : at + period]:
        at -= period
    return at + period


def _quoted(block: str) -> str:
    words = " ".join(block.split())
    return f"“{words[:40]}…”" if len(words) > 40 else f"“{words}”"


def end_reply(reply: Reply, stop: Stop, body: dict[str, Any], pieces: int) -> NoticeEvent:
    """The reply as milk ended it (its text cut to what `stop` keeps, and why), and the
    user's one quiet line about it. The server's usage never comes for a request ended
    early: milk's estimate stands in (the prompt as `context_window` counts it, a token a
    streamed piece), so the turn's usage is not lost."""
    reply.text[:] = ["".join(reply.text)[: stop.keep]]
    reply.stopped = stop.why
    reply.done = True
    if reply.usage is None:
        reply.usage = {
            "prompt_tokens": estimate_prompt_tokens(body),
            "completion_tokens": pieces,
        }
    return NoticeEvent("info", f"milk ended the local model's reply early: {stop.why}")
