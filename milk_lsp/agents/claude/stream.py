"""Pure mapping of Claude Code's stream-json protocol onto milk-lsp agent events.

No I/O here: `claude.py` feeds each parsed stdout line of the CLI to a `StreamMapper`,
which returns the `AgentEvent`s it implies, and asks `outcome_from_result` /
`outcome_from_exit` how the turn ended. The builders at the end produce the lines written
to the CLI's stdin (the user message and control responses). Shapes are the ones measured
on Claude Code 2.1.332 (see shared/research/claude-cli-facts.md and tests/data/claude/).
"""

from __future__ import annotations

import json
import re
import signal
from dataclasses import dataclass, field
from typing import Any

from milk_lsp.agents.base import (
    AgentEvent,
    ClaudeSessionStarted,
    FailureReason,
    NoticeEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallEvent,
    ToolResultEvent,
    ToolStatus,
    TurnDone,
    TurnFailed,
    UsageEvent,
)
from milk_lsp.doors import LSP, Door

Message = dict[str, Any]


def install_hint(door: Door = LSP) -> str:
    """How to get Claude Code, naming the front door's own `claude.path` setting."""
    return (
        "Install Claude Code with `npm install -g @anthropic-ai/claude-code`, "
        f"or set {door.setting('claude.path')} to the `claude` executable."
    )


INSTALL_HINT = install_hint()


def login_hint(cli_path: str | None = None) -> str:
    """What to do when Claude Code is not logged in, naming the binary milk ran (the SDK's
    bundled copy is not on PATH: `claude` alone would log in a different one, or none)."""
    binary = cli_path or "claude"
    return (
        f"Run `{binary}` in a terminal and log in with /login, "
        "or set ANTHROPIC_API_KEY in the editor's environment."
    )


LOGIN_HINT = login_hint()
RESUME_REJECTED_TEXT = "No conversation found with session ID"
STDERR_TAIL_CHARS = 2000
"""How much of the CLI's stderr a failure message quotes (its end)."""


class StreamParseError(ValueError):
    """A stdout line of the CLI looked like JSON but was not."""


def parse_line(raw: bytes | str) -> Message | None:
    """One NDJSON line of the CLI's stdout → a message dict, or None for a non-message line.

    Blank lines and lines that do not start with ``{`` (stray diagnostics some CLI builds
    print on stdout) are skipped. A line that starts with ``{`` but does not parse, or
    parses to something other than an object with a ``type``, raises `StreamParseError`.
    """
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    text = text.strip()
    if not text or not text.startswith("{"):
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise StreamParseError(f"unparseable output from Claude Code: {text[:200]!r}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise StreamParseError(f"unexpected output from Claude Code: {text[:200]!r}")
    return data


def tool_output_text(content: Any) -> str:
    """A tool_result's content (a string or a list of blocks) as plain text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for block in content:
            if isinstance(block, dict):
                kind = block.get("type")
                if kind == "text":
                    parts.append(str(block.get("text", "")))
                elif kind == "image":
                    parts.append("[image]")
                else:
                    parts.append(json.dumps(block, ensure_ascii=False))
            else:
                parts.append(str(block))
        return "\n".join(parts)
    return json.dumps(content, ensure_ascii=False)


@dataclass
class _Tool:
    tool_use_id: str
    name: str
    input: dict[str, Any] = field(default_factory=dict)
    partial_json: str = ""
    input_complete: bool = False
    status: ToolStatus | None = None
    denied: bool = False


@dataclass
class StreamMapper:
    """Turns the CLI's stdout messages into `AgentEvent`s, remembering what it has seen.

    Text and thinking come from the token-level ``stream_event`` deltas of the main
    conversation. The full ``assistant`` line that follows each content block is used for
    text only when no delta of that API message was seen (so nothing is shown twice), and
    never for the CLI's synthetic error messages (they end the turn as a failure instead).
    Tool calls go pending when announced, running when their input is complete (or the
    user allowed them), pending again while a permission question is open, and completed,
    failed or denied when their result arrives.
    """

    session_id: str | None = None
    """The conversation id, once the stream has reported one."""
    result: Message | None = None
    """The ``result`` line, once seen."""
    text: str = ""
    """All answer text emitted so far (used for the message separator)."""
    cost_before: float | None = None
    """The conversation's running cost after its previous turn, when resumed and known
    (`turn_cost`)."""
    _tools: dict[str, _Tool] = field(default_factory=dict)
    _block_tools: dict[Any, str] = field(default_factory=dict)
    _streamed_messages: set[str] = field(default_factory=set)
    _reported: UsageEvent = field(default_factory=UsageEvent)
    """Usage already sent per API call (from `message_delta`)."""

    # -- public --------------------------------------------------------------------------

    def feed(self, msg: Message) -> list[AgentEvent]:
        """The events one stdout message implies (control messages are not handled here)."""
        events: list[AgentEvent] = []
        kind = msg.get("type")
        if kind != "result":
            self._note_session(msg, events)
        if kind == "stream_event":
            self._stream_event(msg, events)
        elif kind == "assistant":
            self._assistant(msg, events)
        elif kind == "user":
            self._user(msg, events)
        elif kind == "system":
            self._system(msg, events)
        elif kind == "result":
            self.result = msg
            usage = _remainder(usage_from_result(msg, self.cost_before), self._reported)
            counts = (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens)
            if any(counts) or usage.cache_creation_tokens or usage.cost_usd:
                events.append(usage)  # not for a turn that never reached the model
        return events

    def permission_asked(
        self, tool_use_id: str, tool_name: str, tool_input: Any
    ) -> list[AgentEvent]:
        """A ``can_use_tool`` question for this call is open: it is pending on the user."""
        tool = self._tool(tool_use_id, tool_name)
        if isinstance(tool_input, dict):
            tool.input = tool_input
        tool.input_complete = True
        return self._set_status(tool, ToolStatus.PENDING, force=True)

    def permission_decided(self, tool_use_id: str, allowed: bool) -> list[AgentEvent]:
        """The user answered (or the wait ended): running when allowed, else denied."""
        tool = self._tools.get(tool_use_id)
        if tool is None:
            return []
        if not allowed:
            tool.denied = True
            return self._set_status(tool, ToolStatus.DENIED)
        return self._set_status(tool, ToolStatus.RUNNING)

    def tool_name(self, tool_use_id: str) -> str | None:
        tool = self._tools.get(tool_use_id)
        return tool.name if tool else None

    # -- internals -----------------------------------------------------------------------

    def _note_session(self, msg: Message, events: list[AgentEvent]) -> None:
        sid = msg.get("session_id")
        if self.session_id is None and isinstance(sid, str) and sid:
            self.session_id = sid
            events.append(ClaudeSessionStarted(sid))

    def _emit_text(self, text: str, events: list[AgentEvent]) -> None:
        if text:
            self.text += text
            events.append(TextDelta(text))

    def _tool(self, tool_use_id: str, name: str) -> _Tool:
        tool = self._tools.get(tool_use_id)
        if tool is None:
            tool = _Tool(tool_use_id=tool_use_id, name=name)
            self._tools[tool_use_id] = tool
        elif name and not tool.name:
            tool.name = name
        return tool

    def _set_status(
        self, tool: _Tool, status: ToolStatus, *, force: bool = False
    ) -> list[AgentEvent]:
        if tool.status == status and not force:
            return []
        if tool.status in (ToolStatus.COMPLETED, ToolStatus.FAILED) and status in (
            ToolStatus.PENDING,
            ToolStatus.RUNNING,
        ):
            return []
        if tool.status == ToolStatus.DENIED and status != ToolStatus.DENIED:
            return []
        tool.status = status
        return [ToolCallEvent(tool.tool_use_id, tool.name, dict(tool.input), status)]

    def _input_complete(self, tool: _Tool, tool_input: Any, events: list[AgentEvent]) -> None:
        if tool.input_complete:
            return
        if isinstance(tool_input, dict):
            tool.input = tool_input
        tool.input_complete = True
        if tool.status in (None, ToolStatus.PENDING):
            events.extend(self._set_status(tool, ToolStatus.RUNNING))

    def _stream_event(self, msg: Message, events: list[AgentEvent]) -> None:
        event = msg.get("event")
        if not isinstance(event, dict):
            return
        if msg.get("parent_tool_use_id"):
            return  # a subagent's stream: its tool calls are reported by its assistant lines
        etype = event.get("type")
        index = event.get("index", 0)
        if etype == "message_start":
            self._on_message_start(event, events)
        elif etype == "content_block_start":
            self._on_block_start(event, index, events)
        elif etype == "content_block_delta":
            self._on_block_delta(event, index, events)
        elif etype == "content_block_stop":
            self._on_block_stop(index, events)
        elif etype == "message_delta":
            self._on_message_delta(event, events)

    def _on_message_delta(self, event: Message, events: list[AgentEvent]) -> None:
        """The end of one API call: its usage, reported as it happens (the `result` line
        then adds only what was not reported yet, and the cost)."""
        usage = event.get("usage")
        if not isinstance(usage, dict):
            return
        call = _usage_event(usage)
        if call.input_tokens or call.output_tokens:
            self._reported = _sum(self._reported, call)
            events.append(call)

    def _on_message_start(self, event: Message, events: list[AgentEvent]) -> None:
        message = event.get("message")
        mid = message.get("id") if isinstance(message, dict) else None
        if isinstance(mid, str) and mid:
            self._streamed_messages.add(mid)
        self._block_tools.clear()
        if self.text and not self.text.endswith("\n"):
            self._emit_text("\n", events)

    def _on_block_start(self, event: Message, index: Any, events: list[AgentEvent]) -> None:
        block = event.get("content_block")
        if not isinstance(block, dict) or block.get("type") not in ("tool_use", "server_tool_use"):
            return
        tid = str(block.get("id") or "")
        if tid:
            tool = self._tool(tid, str(block.get("name") or ""))
            self._block_tools[index] = tid
            events.extend(self._set_status(tool, ToolStatus.PENDING))

    def _on_block_delta(self, event: Message, index: Any, events: list[AgentEvent]) -> None:
        delta = event.get("delta")
        if not isinstance(delta, dict):
            return
        dtype = delta.get("type")
        if dtype == "text_delta":
            self._emit_text(str(delta.get("text", "")), events)
        elif dtype == "thinking_delta":
            thinking = str(delta.get("thinking", ""))
            if thinking:
                events.append(ThinkingDelta(thinking))
        elif dtype == "input_json_delta":
            tool = self._tools.get(self._block_tools.get(index, ""))
            if tool is not None:
                tool.partial_json += str(delta.get("partial_json", ""))

    def _on_block_stop(self, index: Any, events: list[AgentEvent]) -> None:
        tool = self._tools.get(self._block_tools.get(index, ""))
        if tool is None or tool.input_complete:
            return
        try:
            parsed = json.loads(tool.partial_json) if tool.partial_json else {}
        except json.JSONDecodeError:
            parsed = {}
        self._input_complete(tool, parsed, events)

    def _assistant(self, msg: Message, events: list[AgentEvent]) -> None:
        message = msg.get("message")
        if not isinstance(message, dict):
            return
        content = message.get("content")
        if not isinstance(content, list):
            return
        mid = message.get("id")
        streamed = isinstance(mid, str) and mid in self._streamed_messages
        synthetic = bool(
            msg.get("error")
            or msg.get("is_api_error_message")
            or message.get("model") == "<synthetic>"
        )
        subagent = bool(msg.get("parent_tool_use_id"))
        for block in content:
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype in ("tool_use", "server_tool_use"):
                tid = str(block.get("id") or "")
                if not tid:
                    continue
                tool = self._tool(tid, str(block.get("name") or ""))
                if tool.status is None:
                    events.extend(self._set_status(tool, ToolStatus.PENDING))
                self._input_complete(tool, block.get("input"), events)
            elif streamed or synthetic or subagent:
                continue
            elif btype == "text":
                text = str(block.get("text", ""))
                if text and self.text and not self.text.endswith("\n"):
                    self._emit_text("\n", events)
                self._emit_text(text, events)
            elif btype == "thinking":
                thinking = str(block.get("thinking", ""))
                if thinking:
                    events.append(ThinkingDelta(thinking))

    def _user(self, msg: Message, events: list[AgentEvent]) -> None:
        message = msg.get("message")
        if not isinstance(message, dict):
            return
        content = message.get("content")
        if not isinstance(content, list):
            return
        rejected: set[str] = set()
        for meta in msg.get("tool_result_meta") or []:
            if isinstance(meta, dict):
                decision = meta.get("permission_decision") or {}
                if isinstance(decision, dict) and decision.get("decision") == "reject":
                    rejected.add(str(meta.get("id", "")))
        for block in content:
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            tid = str(block.get("tool_use_id") or "")
            if not tid:
                continue
            is_error = bool(block.get("is_error"))
            tool = self._tool(tid, "")
            if tid in rejected:
                tool.denied = True
            if tool.denied:
                status = ToolStatus.DENIED
            elif is_error:
                status = ToolStatus.FAILED
            else:
                status = ToolStatus.COMPLETED
            events.extend(self._set_status(tool, status))
            events.append(ToolResultEvent(tid, tool_output_text(block.get("content")), is_error))

    def _system(self, msg: Message, events: list[AgentEvent]) -> None:
        subtype = msg.get("subtype")
        if subtype == "permission_denied":
            tid = str(msg.get("tool_use_id") or "")
            if tid:
                tool = self._tool(tid, str(msg.get("tool_name") or ""))
                tool.denied = True
                events.extend(self._set_status(tool, ToolStatus.DENIED))
        elif subtype == "api_retry":
            status = msg.get("error_status")
            error = msg.get("error") or "error"
            what = f"{status} ({error})" if status else str(error)
            events.append(
                NoticeEvent(
                    "warning",
                    f"Claude API error {what}; retrying "
                    f"(attempt {msg.get('attempt', '?')} of {msg.get('max_retries', '?')}).",
                )
            )


def usage_from_result(result: Message, cost_before: float | None = None) -> UsageEvent:
    """The turn's usage from the ``result`` line (summed by the CLI over the turn)."""
    usage = result.get("usage") if isinstance(result.get("usage"), dict) else {}
    assert isinstance(usage, dict)
    return _usage_event(usage, turn_cost(result, cost_before))


def turn_cost(result: Message, cost_before: float | None = None) -> float | None:
    """What this turn cost. ``total_cost_usd`` is the conversation's running total: on
    ``--resume`` it includes every earlier turn. The CLI's ``model_usage_since_last_result``
    (per model, ``costUSD``) is the turn's own; without it, the total less `cost_before`,
    the total the conversation's previous turn reported (None: not known, the total)."""
    since = result.get("model_usage_since_last_result")
    if isinstance(since, dict) and since:
        costs = [
            float(entry["costUSD"])
            for entry in since.values()
            if isinstance(entry, dict) and isinstance(entry.get("costUSD"), int | float)
        ]
        if costs:
            return sum(costs)
    total = result.get("total_cost_usd")
    if not isinstance(total, int | float):
        return None
    if cost_before is None:
        return float(total)
    return max(0.0, float(total) - cost_before)


def conversation_cost(result: Message) -> float | None:
    """The conversation's running total the ``result`` line reports."""
    total = result.get("total_cost_usd")
    return float(total) if isinstance(total, int | float) else None


def _usage_event(usage: Message, cost_usd: float | None = None) -> UsageEvent:
    def num(key: str) -> int:
        value = usage.get(key)
        return int(value) if isinstance(value, int | float) else 0

    return UsageEvent(
        input_tokens=num("input_tokens"),
        output_tokens=num("output_tokens"),
        cache_read_tokens=num("cache_read_input_tokens"),
        cache_creation_tokens=num("cache_creation_input_tokens"),
        cost_usd=cost_usd,
    )


def _sum(a: UsageEvent, b: UsageEvent) -> UsageEvent:
    return UsageEvent(
        input_tokens=a.input_tokens + b.input_tokens,
        output_tokens=a.output_tokens + b.output_tokens,
        cache_read_tokens=(a.cache_read_tokens or 0) + (b.cache_read_tokens or 0),
        cache_creation_tokens=(a.cache_creation_tokens or 0) + (b.cache_creation_tokens or 0),
    )


def _remainder(total: UsageEvent, reported: UsageEvent) -> UsageEvent:
    """What the turn's total adds to the per-call usage already sent (never negative)."""
    return UsageEvent(
        input_tokens=max(0, total.input_tokens - reported.input_tokens),
        output_tokens=max(0, total.output_tokens - reported.output_tokens),
        cache_read_tokens=max(
            0, (total.cache_read_tokens or 0) - (reported.cache_read_tokens or 0)
        ),
        cache_creation_tokens=max(
            0, (total.cache_creation_tokens or 0) - (reported.cache_creation_tokens or 0)
        ),
        cost_usd=total.cost_usd,
    )


def _result_text(result: Message) -> str:
    errors = result.get("errors")
    if isinstance(errors, list) and errors:
        return "; ".join(str(e) for e in errors)
    text = result.get("result")
    if isinstance(text, str) and text.strip():
        return text.strip()
    return str(result.get("subtype") or "error")


_LOGIN_PATTERNS = re.compile(
    r"not logged in|please run /login|invalid api key|invalid x-api-key|"
    r"authentication_error|oauth token",
    re.IGNORECASE,
)


def outcome_from_result(result: Message, *, resume: bool) -> TurnDone | TurnFailed:
    """How the turn ended, from the CLI's ``result`` line."""
    subtype = str(result.get("subtype") or "")
    is_error = bool(result.get("is_error")) or (subtype not in ("", "success"))
    terminal = str(result.get("terminal_reason") or "")
    if subtype == "error_max_turns" or terminal == "max_turns":
        return TurnDone("max_turns")
    if not is_error:
        return TurnDone("end_turn")
    text = _result_text(result)
    status = result.get("api_error_status")
    api_type = str(result.get("api_error_type") or "")
    if RESUME_REJECTED_TEXT in text:
        return TurnFailed(
            FailureReason.CLAUDE_FAILED,
            f"Claude Code could not resume the conversation: {text}",
            resume_rejected=resume,
        )
    if terminal == "prompt_too_long" or "prompt is too long" in text.lower():
        return TurnFailed(
            FailureReason.PROMPT_TOO_LONG,
            f"The conversation is too long for Claude: {text} "
            "Start a fresh Claude conversation or attach less context.",
        )
    if status == 429 or api_type == "rate_limit_error":
        return TurnFailed(
            FailureReason.RATE_LIMITED,
            f"Claude is rate limited: {text} Wait a moment and try again.",
        )
    if (
        status in (401, 403)
        or api_type in ("authentication_error", "permission_error")
        or (_LOGIN_PATTERNS.search(text) and status is None)
    ):
        return TurnFailed(
            FailureReason.CLAUDE_NOT_LOGGED_IN,
            f"Claude Code is not logged in: {text}. {LOGIN_HINT}",
        )
    if terminal in ("aborted_streaming", "aborted_tools"):
        return TurnFailed(
            FailureReason.CLAUDE_FAILED, f"Claude Code's turn was interrupted ({terminal})."
        )
    if terminal == "api_error" or status is not None:
        return TurnFailed(FailureReason.CLAUDE_FAILED, f"The Claude API failed: {text}")
    return TurnFailed(FailureReason.CLAUDE_FAILED, f"Claude Code reported an error: {text}")


def _exit_description(returncode: int | None) -> str:
    if returncode is None:
        return "Claude Code stopped"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"Claude Code was killed by {name} (exit {returncode})"
    return f"Claude Code exited with code {returncode}"


def outcome_from_exit(returncode: int | None, stderr: str, *, resume: bool) -> TurnFailed:
    """A turn whose process ended without a ``result`` line (or with an unusable one)."""
    tail = stderr.strip()[-STDERR_TAIL_CHARS:]
    exit_text = _exit_description(returncode)
    if RESUME_REJECTED_TEXT in tail:
        return TurnFailed(
            FailureReason.CLAUDE_FAILED,
            f"Claude Code could not resume the conversation: {tail}",
            resume_rejected=resume,
        )
    if re.search(r"not logged in|please run /login|invalid api key", tail, re.IGNORECASE):
        return TurnFailed(FailureReason.CLAUDE_NOT_LOGGED_IN, f"{exit_text}: {tail}. {LOGIN_HINT}")
    if "cannot be used with root/sudo" in tail:
        return TurnFailed(
            FailureReason.CLAUDE_FAILED,
            f"{exit_text}: {tail}. Turn off `claude.skipPermissions`, or run the editor as a "
            "normal user (inside a sandbox, IS_SANDBOX=1 in the environment allows it).",
        )
    detail = f": {tail}" if tail else " without a result and with nothing on stderr"
    return TurnFailed(FailureReason.CLAUDE_FAILED, f"{exit_text}{detail}")
