"""What agents yield and what they may ask of their host (the engine).

Agents are async generators of `AgentEvent`s that always clean up in `finally`. They never
touch storage or the wire: permission questions and editor access go through `AgentHost`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from milk_lsp.sessions.model import Agent
from milk_lsp.workspace.edit_preview import FileEdit


class ToolStatus(enum.StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    DENIED = "denied"


class PermissionOption(enum.StrEnum):
    ALLOW_ONCE = "allow_once"
    ALLOW_SESSION = "allow_session"
    DENY = "deny"


class FailureReason(enum.StrEnum):
    """`TurnResult.error.reason` values of PROTOCOL.md."""

    LOCAL_UNREACHABLE = "local_unreachable"
    LOCAL_FAILED = "local_failed"
    CLAUDE_NOT_FOUND = "claude_not_found"
    CLAUDE_NOT_LOGGED_IN = "claude_not_logged_in"
    CLAUDE_FAILED = "claude_failed"
    RATE_LIMITED = "rate_limited"
    PROMPT_TOO_LONG = "prompt_too_long"
    TOOL_ROUNDS_EXCEEDED = "tool_rounds_exceeded"
    STORAGE_FAILED = "storage_failed"
    BUDGET_REACHED = "budget_reached"
    INTERNAL = "internal"


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ThinkingDelta:
    text: str


@dataclass(frozen=True)
class ToolCallEvent:
    """A tool call appeared or changed status."""

    tool_call_id: str
    name: str
    input: dict[str, Any]
    status: ToolStatus


@dataclass(frozen=True)
class ToolResultEvent:
    tool_call_id: str
    output: str
    is_error: bool


@dataclass(frozen=True)
class UsageEvent:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int | None = None
    cache_creation_tokens: int | None = None
    cost_usd: float | None = None


@dataclass(frozen=True)
class NoticeEvent:
    severity: str
    """"info", "warning" or "error"."""
    message: str


@dataclass(frozen=True)
class EscalationRequested:
    """The local model called `escalate_to_claude(reason)`; its part of the turn is over."""

    reason: str
    tool_call_id: str = ""


class LocalSignal(enum.StrEnum):
    """Ways milk can see that the local part of a turn failed (hand-off signals)."""

    ROUND_LIMIT = "round_limit"
    REPEATED_CALL = "repeated_call"
    UNKNOWN_TOOL = "unknown_tool"
    UNRUNNABLE_CALL = "unrunnable_call"
    DESCRIBED_CALL = "described_call"
    UNGROUNDED_ANSWER = "ungrounded_answer"
    EDIT_NOT_MADE = "edit_not_made"
    FAILED_EDIT = "failed_edit"
    EDIT_BROKE_FILE = "edit_broke_file"
    CHECK_FAILED = "check_failed"
    EMPTY_REPLY = "empty_reply"
    NO_ANSWER = "no_answer"
    MODEL_UNREACHABLE = "model_unreachable"
    MODEL_ERROR = "model_error"
    CONTEXT_OVERFLOW = "context_overflow"
    TIME_BUDGET = "time_budget"
    WIDE_REQUEST = "wide_request"
    """A change reaching more of the workspace than a local model does well; handed to
    Claude before the local model started (`judge.scope`)."""


@dataclass(frozen=True)
class LocalGaveUp:
    """The local part of the turn ended on a failure signal; the engine decides whether
    Claude takes over (route `auto`) or the turn ends as failed."""

    signal: LocalSignal
    detail: str
    """What went wrong, in words the user and Claude can act on."""
    tried: tuple[str, ...] = ()
    """The tool calls the local agent made this turn, one short line each (for the brief)."""


@dataclass(frozen=True)
class Cited:
    """A place an answer rests on, found by milk: the quote's real lines in the file."""

    path: str
    """Relative to the workspace folder, POSIX separators."""
    line: int
    end_line: int
    quote: str


@dataclass(frozen=True)
class CitationsEvent:
    """The checked citations of the answer just shown, and the paths it proposes creating
    (declared so by the model, not in the workspace yet)."""

    citations: tuple[Cited, ...]
    proposed: tuple[str, ...] = ()


@dataclass(frozen=True)
class ClaudeSessionStarted:
    """Claude Code reported the id of the conversation this turn runs in."""

    session_id: str


@dataclass(frozen=True)
class TurnDone:
    """The agent finished normally. `stop_reason` is "end_turn" or "max_turns"."""

    stop_reason: str = "end_turn"


@dataclass(frozen=True)
class TurnFailed:
    reason: FailureReason
    message: str
    resume_rejected: bool = False
    """Claude only: the `--resume` id was unknown; the engine retries as a fresh start."""


AgentEvent = (
    TextDelta
    | ThinkingDelta
    | ToolCallEvent
    | ToolResultEvent
    | UsageEvent
    | NoticeEvent
    | EscalationRequested
    | LocalGaveUp
    | ClaudeSessionStarted
    | CitationsEvent
    | TurnDone
    | TurnFailed
)


@dataclass(frozen=True)
class PermissionRequest:
    agent: Agent
    tool_call_id: str
    tool: str
    input: dict[str, Any]
    description: str = ""
    options: tuple[PermissionOption, ...] = field(
        default=(PermissionOption.ALLOW_ONCE, PermissionOption.ALLOW_SESSION, PermissionOption.DENY)
    )
    edits: tuple[FileEdit, ...] = ()
    """The files the call would change, when the agent knows (the host previews the rest)."""


class PermissionTimedOut(Exception):
    """Nobody answered a permission question in time (`claude.permissionTimeoutSeconds`).

    The host times every question (one timeout path for both agents) and tells the user;
    the agent treats it as a deny and may say why to its model."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"no answer within {seconds:g} s")
        self.seconds = seconds


class EditRejected(Exception):
    """The editor answered `workspace/applyEdit` with `applied: false`; nothing was written."""


class AgentHost(Protocol):
    """What the engine offers an agent during one turn."""

    async def request_permission(self, request: PermissionRequest) -> PermissionOption:
        """Ask the user; `allow_session` answers are remembered by the host per tool."""
        ...

    async def read_document(self, path: Path) -> str | None:
        """The editor's (possibly unsaved) text of a file, asking the editor when it can
        (ACP `fs/read_text_file`); None when it has none (read the disk)."""
        ...

    def open_document_text(self, path: Path) -> str | None:
        """The editor's (possibly unsaved) text of an open file, else None."""
        ...

    async def apply_edit(self, path: Path, new_text: str) -> bool:
        """Replace an open file's whole text through the editor.

        False when the file is not open or the editor cannot apply edits (write to disk
        instead); raises `EditRejected` when the editor refused the edit.
        """
        ...
