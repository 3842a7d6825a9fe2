"""The local agent's conversation: its system prompt and the messages of one turn.

The local model gets a system prompt that is byte-identical for every session and turn of a
workspace (the model server caches it with the tool specs), a budget-bounded tail of the
session's history (a long session costs the same per turn as a short one), and the turn's
message, led by the session notes: the need and percept instructions with the session's
nonce, the current need and remembered facts.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from milk_lsp.sessions.model import Agent, Role, TurnRecord
from milk_lsp.text import fence_for
from milk_lsp.wire import ContextItem

HISTORY_BUDGET_CHARS = 24000
HISTORY_TURNS = 20
ATTACHMENT_CAP_CHARS = 20000

_LOCAL_IDENTITY = """\
You are milk's local coding agent inside the user's editor. You work on the user's workspace
folder through the tools you are given. Paths are relative to that folder.

How you work:
- To learn anything about the code, call a tool: list_directory, search_text, read_file.
  Make the call; never describe it, never write it as text, never tell the user to run it.
- One step at a time: make one tool call, read its result, then decide the next step.
- To change a file, copy old_text exactly from the file's text (shown to you, or from
  read_file). For a Python function or class you may instead give symbol and the whole new
  definition as new_text. If an edit fails, read the file again and retry.
- When the change is made, say in one or two sentences what you changed. Never ask the user
  to make a change for you.
- Answer from what the tools showed you, briefly, in Markdown, naming files and lines.
- Use only the tools listed. Do not invent tools. The user is asked before each edit or
  command.
- When you are done, call finish: intent question or change (what the user asked for);
  outcome answered, changed (after your edits are made) or cannot; your answer; and for
  each thing the answer says about the code, a citation: path, line and the exact text of
  that line as a tool showed it. Put a file you suggest creating in proposed."""

_ESCALATE_HINT = """\
- When the task is beyond you (a design question, a change across many files, a bug you
  cannot find, or an answer you are not sure of), call escalate_to_claude with a reason
  instead of guessing or giving up: Claude Code, a stronger agent, takes over this turn
  with a summary of the session."""

_TAG_INSTRUCTIONS = """\
when the request below starts a new task, put the goal in one sentence inside
<milk:need:{nonce}>…</milk:need:{nonce}>; put a lasting fact you learn about the user or
project inside <milk:percept:{nonce}>…</milk:percept:{nonce}>."""


def local_system_prompt(offer_escalation: bool) -> str:
    """The local model's system prompt: the same bytes for every workspace, session and
    turn, so one model server's prefix cache covers it and the tool specs after it for all
    of them (the session's notes go in the turn's message, see `session_notes`). The folder's
    path is nowhere: the tools take paths relative to it, and a path in the prompt made each
    workspace's first turn evaluate the whole prefix again."""
    parts = [_LOCAL_IDENTITY]
    if offer_escalation:
        parts.append(_ESCALATE_HINT)
    return "\n".join(parts)


def session_notes(
    nonce: str, current_need: str, percepts: Sequence[str], *, memory_tags: bool = False
) -> str:
    """What varies by session (the goal, remembered facts and, with `local.memoryTags`, the
    tag instructions with the nonce), put in the turn's own user message so it never
    invalidates the cached prefix before it. "" when there is nothing to say.

    Small models echo tag instructions into their answers (measured with
    Qwen2.5-Coder-1.5B: "(milk:need:…) I need to…"), so they are off by default and milk
    keeps the goal itself from the user's requests."""
    notes = []
    if current_need:
        notes.append(f"the current goal is: {current_need}")
    if percepts:
        notes.append("known facts: " + "; ".join(percepts))
    if memory_tags:
        notes.append(_TAG_INSTRUCTIONS.format(nonce=nonce))
    if not notes:
        return ""
    return "(milk notes, not from the user: " + "; ".join(notes) + ")\n\n"


def claude_notes(summary: str) -> str:
    """The first local turn after Claude's (ADR 0029's demotion): what Claude was asked and
    did, its brick (budget-capped and sanitized when it was built), once, so "what did Claude
    change?" and "now do the same in the other module" work locally. "" with no summary."""
    if not summary.strip():
        return ""
    return (
        "(milk notes, not from the user: Claude Code worked on this session before this"
        " message; what it was asked and did, oldest first:\n"
        f"{summary.rstrip()}\n)\n\n"
    )


def demotion_summary(active_agent: Agent, last_claude_summary: str) -> str:
    """The Claude summary the next local turn carries: the session's Claude brick when Claude
    ran its last turn (the session comes back to the local model), else ""."""
    return last_claude_summary if active_agent is Agent.CLAUDE else ""


def with_session_notes(text: str, notes: str) -> str:
    """The turn's user message: the notes first, the user's request last (small models
    answer what they read last, and echo what follows it)."""
    return f"{notes}{text}"


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
            fence = fence_for(body)
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


def _display_path(uri: str, workspace: str) -> str:
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return uri
    path = Path(unquote(parsed.path))
    try:
        return str(path.relative_to(workspace))
    except ValueError:
        return str(path)
