"""One running turn: its `milk/update` stream and its answers as they build up.

The runner creates a `Turn` per `milk/chat` / `milk/escalate`; agents' events are folded
into it (`apply`), it numbers the updates without gaps, strips milk tags from text before
anyone sees it, and records the goal (`<milk-need>`) on the session it holds. Events go up
through it; nothing in a part calls back into the engine.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from milk_lsp.agents.base import (
    AgentEvent,
    CitationsEvent,
    FailureReason,
    NoticeEvent,
    PermissionTimedOut,
    TextDelta,
    ThinkingDelta,
    ToolCallEvent,
    ToolResultEvent,
    ToolStatus,
    UsageEvent,
)
from milk_lsp.config import MilkConfig
from milk_lsp.prompts.tags import TagInterceptor
from milk_lsp.sessions.model import (
    FINAL_TOOL_STATUSES,
    Agent,
    Role,
    Session,
    ToolCallRecord,
    TurnRecord,
)
from milk_lsp.system.redact import redact_value
from milk_lsp.text import cut, one_line
from milk_lsp.wire import PART_BREAK, PlanStep, StopReason, TurnError, build_update
from milk_lsp.workspace.edit_preview import capped

if TYPE_CHECKING:
    from milk_lsp.engine.local.clock import LocalClock

logger = logging.getLogger(__name__)

NEED_MAX_CHARS = 400
"""The need is one sentence; a runaway tag body must not swell every hand-off."""

TOOL_OUTPUT_WIRE_CHARS = 2000
"""A `tool_result` update's output is at most this long, the closing line saying how much was
cut included (`milk/session/get` has it whole)."""

MAX_NOTICES_KEPT = 20
"""Notices a turn keeps for its stored info (a reloaded chat shows them again)."""


class ClientBridge(Protocol):
    """What the server offers the engine: the editor side of the connection."""

    def send_update(self, payload: dict[str, Any]) -> None: ...

    async def ask_permission(self, params: dict[str, Any]) -> str:
        """Ask the user; returns an optionId ("deny" when dismissed or on failure)."""
        ...

    def open_document_text(self, path: Path) -> str | None: ...

    async def read_document(self, path: Path) -> str | None:
        """`open_document_text`, or the editor's text asked for over the connection."""
        ...

    async def apply_edit(self, path: Path, new_text: str) -> bool: ...

    async def progress_begin(self, title: str) -> object | None: ...

    def progress_report(self, token: object | None, message: str) -> None: ...

    def progress_end(self, token: object | None, message: str) -> None: ...


@dataclass
class UsageTotals:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int | None = None
    cache_creation_tokens: int | None = None
    cost_usd: float | None = None

    def add(self, event: UsageEvent) -> None:
        self.input_tokens += event.input_tokens
        self.output_tokens += event.output_tokens
        if event.cache_read_tokens is not None:
            self.cache_read_tokens = (self.cache_read_tokens or 0) + event.cache_read_tokens
        if event.cache_creation_tokens is not None:
            self.cache_creation_tokens = (
                self.cache_creation_tokens or 0
            ) + event.cache_creation_tokens
        if event.cost_usd is not None:
            self.cost_usd = (self.cost_usd or 0.0) + event.cost_usd

    @property
    def seen(self) -> bool:
        return bool(self.input_tokens or self.output_tokens or self.cost_usd)


@dataclass
class AgentPart:
    """What one agent said and did in this turn (becomes one assistant record)."""

    agent: Agent
    text_parts: list[str] = field(default_factory=list)
    tool_calls: dict[str, ToolCallRecord] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return "".join(self.text_parts)

    def record(self, turn_id: str) -> TurnRecord:
        return TurnRecord(
            turn_id=turn_id,
            role=Role.ASSISTANT,
            agent=self.agent,
            text=self.text,
            tool_calls=list(self.tool_calls.values()),
        )

    @property
    def is_empty(self) -> bool:
        return not self.text_parts and not self.tool_calls


class Turn:
    """State of one turn while it runs."""

    def __init__(
        self,
        session_id: str,
        turn_id: str,
        nonce: str,
        bridge: ClientBridge,
        on_need: Callable[[str], None] | None = None,
        workspace: Path | None = None,
        *,
        session: Session | None = None,
        user_record: TurnRecord | None = None,
        config: MilkConfig | None = None,
    ) -> None:
        """`session` and `user_record`: the goal a part finds is recorded on the session
        (set at the user's record); `on_need` is told each goal too. `config` is the
        settings the whole turn runs with (one snapshot)."""
        self.session_id = session_id
        self.session = session
        self._user_record = user_record
        self.config = config or MilkConfig()
        self.local_model: str | None = None
        """The model the local part ran on, as the server named it (for the turn's info)."""
        self.workspace = workspace
        """The session's workspace folder: edits outside it are not previewed."""
        self.escalation_shown: dict[str, Any] | None = None
        """The last `escalated` update's fields, as the user saw them."""
        self.route_reason_shown: str | None = None
        """The `turn_started` reason, as the user saw it next to the badge."""
        self.notices_shown: list[dict[str, str]] = []
        """The turn's notices other than its error (the error is `error`), as shown."""
        self.editor_edits: dict[Path, tuple[str | None, str]] = {}
        """Files changed in the editor's buffer (not on disk): first text before, last after."""
        self.turn_id = turn_id
        self.bridge = bridge
        self._seq = 0
        self._nonce = nonce
        self._on_need = on_need
        self.parts: list[AgentPart] = []
        self.usage = UsageTotals()
        self.percepts: list[tuple[Agent, str]] = []
        self.failure: tuple[FailureReason, str] | None = None
        self.failure_signal: str | None = None
        """The hand-off signal behind `failure`, when a local part's failure ended the turn
        (`error.data.signal`; the message says it in words)."""
        self.progress_token: object | None = None
        self._interceptor: TagInterceptor | None = None
        self._needs_seen = 0
        self._percepts_seen = 0
        self.allowed_tools: set[str] = set()
        """Tools the user allowed for the whole session (shared with the session's turns)."""
        self.local_clock: LocalClock | None = None
        """The running local part's clock: a permission question pauses its budget."""
        self.need_before: tuple[str, int] | None = None
        """The session's goal (and where it was set) before this turn set a new one: an
        undo of the turn puts it back."""
        self.plan: list[PlanStep] | None = None
        """An advisor turn's plan as last shown (for its result and stored info)."""
        self.plan_cost_usd: float | None = None
        """What Claude's plan cost (an advisor turn; its steps' cost is the rest)."""
        self.publish: Callable[[dict[str, Any]], None] | None = None
        """Shows each update to the doors of other server processes too."""

    def clear_failure(self) -> None:
        """The next part starts clean (an advisor turn's step after one that failed)."""
        self.failure = None
        self.failure_signal = None

    # ---- updates ------------------------------------------------------------------------

    def update(self, kind: str, **fields: Any) -> None:
        self._seq += 1
        payload = {"sessionId": self.session_id, "turnId": self.turn_id, "seq": self._seq}
        payload["kind"] = kind
        payload.update(
            {key: redact_value(value) for key, value in fields.items() if value is not None}
        )
        wire_update = build_update(payload)
        if kind == "escalated":  # kept for the turn's stored info (a reload shows it)
            self.escalation_shown = {
                key: wire_update[key] for key in ("by", "reason", "mode", "contextChars")
            }
        elif kind == "turn_started":
            self.route_reason_shown = wire_update.get("reason") or None
        elif (
            kind == "notice"
            and wire_update.get("severity") != "error"
            and len(self.notices_shown) < MAX_NOTICES_KEPT
        ):
            self.notices_shown.append(
                {"severity": wire_update["severity"], "message": wire_update["message"]}
            )
        self.bridge.send_update(wire_update)
        if self.publish is not None:
            if kind == "turn_started" and self._user_record is not None:
                # the other doors never saw the message: it comes with the turn
                wire_update = {**wire_update, "userText": self._user_record.text}
            self.publish(wire_update)

    def started(self, agent: Agent, route: str, reason: str, warning: str | None) -> None:
        """`turn_started`, then what the user must know before the agents speak: a warning
        from checkpointing, and a session whose stored state was partly unreadable."""
        self.update("turn_started", agent=agent.value, route=route, reason=reason)
        if warning:
            self.notice("warning", warning)
        if self.session is not None and self.session.damaged:
            # The end of this turn writes the session's fields back whole.
            self.notice(
                "warning",
                f"Part of this session's stored state could not be read "
                f"({', '.join(self.session.damaged)}) and was replaced by defaults; this turn "
                "saves the session again.",
            )

    def ended(
        self,
        agent: Agent,
        stop: StopReason,
        changes: list[dict[str, Any]],
        error: TurnError | None,
    ) -> None:
        """The turn's last updates: the files it changed, its error, `turn_ended`; and the
        progress ends."""
        if changes:
            self.update("changes", changes=changes)
        if error is not None:
            self.notice("error", error.message)
        self.update("turn_ended", agent=agent.value, stopReason=stop)
        self.bridge.progress_end(self.progress_token, stop.replace("_", " "))

    def notice(self, severity: str, message: str) -> None:
        self.update("notice", severity=severity, message=message)

    async def ask(self, params: dict[str, Any], timeout_seconds: float) -> str:
        """Ask the user a permission-shaped question; the one place questions are timed.

        Raises `PermissionTimedOut` (after telling the user) when nobody answers in time.
        """
        try:
            return await asyncio.wait_for(self.bridge.ask_permission(params), timeout_seconds)
        except TimeoutError:
            self.notice(
                "warning",
                f"No answer to the permission question for {params.get('tool')} within "
                f"{timeout_seconds:g} s; treated as deny.",
            )
            raise PermissionTimedOut(timeout_seconds) from None

    def set_need(self, need: str, *, news_for_claude: bool = True) -> None:
        """The session's goal, as milk itself took it from the user's request (or a part
        found in a `<milk-need>` tag): stored on the session, shown as a `need` update."""
        session = self.session
        if session is not None:
            need = cut(one_line(need), NEED_MAX_CHARS)
            if need and need != session.current_need:
                if self.need_before is None:
                    self.need_before = (session.current_need, session.current_need_set_at)
                session.current_need = need
                if self._user_record is not None:
                    session.current_need_set_at = self._user_record.position
                if news_for_claude and self.parts and self.part.agent is Agent.LOCAL:
                    session.need_changed_since_claude = True
                self.update("need", currentNeed=need)
        if self._on_need is not None:
            self._on_need(need)

    # ---- agent parts --------------------------------------------------------------------

    def start_part(self, agent: Agent) -> AgentPart:
        self.flush_text()
        part = AgentPart(agent)
        self.parts.append(part)
        self._interceptor = TagInterceptor(self._nonce)
        self._needs_seen = 0
        self._percepts_seen = 0
        return part

    @property
    def part(self) -> AgentPart:
        return self.parts[-1]

    def part_of(self, agent: Agent) -> AgentPart | None:
        for part in self.parts:
            if part.agent is agent:
                return part
        return None

    def close_open_calls(self) -> None:
        """A cancelled turn: calls that never finished end as cancelled (live and stored)."""
        for part in self.parts:
            for call in part.tool_calls.values():
                if call.status is None:
                    call.status = "cancelled"

    @property
    def text(self) -> str:
        """All the text the user saw, in order, tags stripped."""
        pieces = [part.text for part in self.parts if part.text]
        return PART_BREAK.join(pieces)

    def apply(self, event: AgentEvent) -> None:
        """Fold a streamed agent event into the turn and tell the client."""
        agent = self.part.agent.value
        match event:
            case TextDelta(text=text):
                self._show_text(text)
            case ThinkingDelta(text=text):
                if text:
                    self.update("thinking", agent=agent, delta=text)
            case ToolCallEvent():
                call = self.part.tool_calls.get(event.tool_call_id)
                if call is None:
                    call = ToolCallRecord(event.tool_call_id, event.name, dict(event.input))
                    call.text_offset = sum(map(len, self.part.text_parts))
                    self.part.tool_calls[event.tool_call_id] = call
                else:
                    call.input = dict(event.input) or call.input
                    call.name = event.name or call.name
                if event.status is ToolStatus.DENIED:
                    call.is_error = True
                    call.output = call.output or "denied by the user"
                if event.status.value in FINAL_TOOL_STATUSES:
                    call.status = event.status.value
                self.update(
                    "tool_call",
                    agent=agent,
                    toolCallId=event.tool_call_id,
                    name=call.name,
                    input=call.input,
                    status=event.status.value,
                )
            case ToolResultEvent():
                call = self.part.tool_calls.get(event.tool_call_id)
                if call is not None:
                    call.output = event.output
                    call.is_error = event.is_error
                    if call.status != ToolStatus.DENIED.value:
                        call.status = "failed" if event.is_error else "completed"
                self.update(
                    "tool_result",
                    agent=agent,
                    toolCallId=event.tool_call_id,
                    output=capped(event.output, TOOL_OUTPUT_WIRE_CHARS)[0],
                    isError=event.is_error,
                )
            case UsageEvent():
                self.usage.add(event)
                self.update(
                    "usage",
                    agent=agent,
                    inputTokens=event.input_tokens,
                    outputTokens=event.output_tokens,
                    cacheReadTokens=event.cache_read_tokens,
                    cacheCreationTokens=event.cache_creation_tokens,
                    costUsd=event.cost_usd,
                )
            case NoticeEvent(severity=severity, message=message):
                self.notice(severity, message)
            case CitationsEvent():
                self._cite(event)
            case _:
                logger.debug("turn %s: event %r handled by the engine", self.turn_id, event)

    def _cite(self, event: CitationsEvent) -> None:
        """The `citations` update: each place with its file's URI (in the workspace)."""
        self.flush_text()
        root = self.workspace or Path.cwd()

        def uri(path: str) -> str:
            return (root / path).as_uri()

        citations = [
            {
                "path": cited.path,
                "uri": uri(cited.path),
                "line": cited.line,
                "endLine": cited.end_line,
                "quote": cited.quote,
            }
            for cited in event.citations
        ]
        proposed = [{"path": path, "uri": uri(path)} for path in event.proposed]
        self.update(
            "citations", agent=self.part.agent.value, citations=citations, proposed=proposed or None
        )

    def _show_text(self, text: str) -> None:
        if self._interceptor is None:
            return
        visible = self._interceptor.feed(text)
        self._emit_visible(visible)

    def flush_text(self) -> None:
        """End of an agent's stream: release text held back while it could have been a tag."""
        if self._interceptor is not None and self.parts:
            self._emit_visible(self._interceptor.flush())

    def _emit_visible(self, visible: str) -> None:
        interceptor = self._interceptor
        if visible:
            agent = self.part.agent.value
            if not self.part.text_parts and any(part.text for part in self.parts[:-1]):
                self.update("text", agent=agent, delta=PART_BREAK)  # as `text` joins them
            self.part.text_parts.append(visible)
            self.update("text", agent=agent, delta=visible)
        if interceptor is None:
            return
        for need in interceptor.needs[self._needs_seen :]:
            self.set_need(need)
        self._needs_seen = len(interceptor.needs)
        for percept in interceptor.percepts[self._percepts_seen :]:
            self.percepts.append((self.part.agent, percept))
        self._percepts_seen = len(interceptor.percepts)
