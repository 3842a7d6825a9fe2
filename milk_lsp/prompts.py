"""The local agent's conversation: its system prompt and the messages of one turn.

The local model gets the same need and percept instructions as Claude (with the session's
nonce), the current need and remembered facts, and a budget-bounded tail of the session's
history, so a long session costs the same per turn as a short one.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from milk_lsp.sessions.model import Agent, Role, TurnRecord
from milk_lsp.wire import ContextItem

HISTORY_BUDGET_CHARS = 24000
HISTORY_TURNS = 20
ATTACHMENT_CAP_CHARS = 20000

_LOCAL_IDENTITY = """\
You are milk's local coding agent, running inside the user's editor on the workspace folder
{workspace}. Work with the tools you are given: read, list and search files before you
answer questions about them; edit files with exact-string replacements; run commands only
when they are needed (the user is asked before each edit or command). Paths are relative
to the workspace folder. Answer concisely, in Markdown."""

_ESCALATE_HINT = """\
When a task is beyond you (a deep bug, a large refactor, a design question, or you are
stuck after a few attempts), call escalate_to_claude with a one-sentence reason: Claude
Code takes over this turn with a summary of the session."""

_NEED_INSTRUCTION = """\
[Milk current-need tracking]
When the user starts a new task or changes goal, and on the first message when no goal is
known, write the goal as one sentence inside <milk:need:{nonce}>…</milk:need:{nonce}>.
milk removes the tag before the user sees your answer."""

_PERCEPT_INSTRUCTION = """\
[Milk shared memory]
When you learn a durable, reusable fact about the user or the project (a preference, a
decision, a constraint, where something lives), write it as one sentence inside
<milk:percept:{nonce}>…</milk:percept:{nonce}>, one fact per tag. Skip task progress and
anything obvious from the code. milk removes the tag and remembers the fact."""


def local_system_prompt(
    workspace: str, nonce: str, current_need: str, percepts: Sequence[str], offer_escalation: bool
) -> str:
    parts = [_LOCAL_IDENTITY.format(workspace=workspace)]
    if offer_escalation:
        parts.append(_ESCALATE_HINT)
    parts.append(_NEED_INSTRUCTION.format(nonce=nonce))
    parts.append(_PERCEPT_INSTRUCTION.format(nonce=nonce))
    if current_need:
        parts.append(f"[Current user goal]\n{current_need}")
    if percepts:
        parts.append("[Remembered facts]\n" + "\n".join(f"- {fact}" for fact in percepts))
    return "\n\n".join(parts)


def history_messages(records: Sequence[TurnRecord]) -> list[dict[str, Any]]:
    """Earlier records as chat messages, newest kept first within the budget."""
    messages: list[dict[str, Any]] = []
    used = 0
    for record in reversed(records):
        if not record.text:
            continue
        if record.role is Role.USER:
            message = {"role": "user", "content": record.text}
        elif record.agent is Agent.CLAUDE:
            message = {"role": "assistant", "content": f"[Claude Code answered]\n{record.text}"}
        else:
            message = {"role": "assistant", "content": record.text}
        used += len(message["content"])
        if used > HISTORY_BUDGET_CHARS:
            break
        messages.append(message)
    messages.reverse()
    # A chat must not open with an assistant message on some servers' templates.
    while messages and messages[0]["role"] != "user":
        messages.pop(0)
    return messages


def user_message(text: str, context: Sequence[ContextItem], workspace: str) -> str:
    """The user's text with attached selections/files appended as fenced blocks."""
    if not context:
        return text
    blocks = [text]
    for item in context:
        label = _display_path(item.uri, workspace)
        if item.range is not None:
            start, end = _line_span(item)
            label = f"{label} (lines {start}-{end})"
        body = item.text if item.text is not None else ""
        if len(body) > ATTACHMENT_CAP_CHARS:
            body = body[:ATTACHMENT_CAP_CHARS] + "\n… (cut)"
        if body:
            fence = "`" * max(3, _longest_backtick_run(body) + 1)
            blocks.append(f"Attached {label}:\n{fence}\n{body}\n{fence}")
        else:
            blocks.append(f"Attached file: {label}")
    return "\n\n".join(blocks)


def _line_span(item: ContextItem) -> tuple[int, int]:
    """1-based first and last line of a range (an end at character 0 is exclusive)."""
    assert item.range is not None
    start = item.range.start.line + 1
    end = item.range.end.line + (0 if item.range.end.character == 0 else 1)
    return start, max(start, end)


def _longest_backtick_run(text: str) -> int:
    longest = run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    return longest


def _display_path(uri: str, workspace: str) -> str:
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return uri
    path = Path(unquote(parsed.path))
    try:
        return str(path.relative_to(workspace))
    except ValueError:
        return str(path)
