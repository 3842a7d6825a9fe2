"""What Claude is given when a turn escalates (ADR 0004): the context file and `<milk-context>`.

Pure functions: the caller takes the inputs from a `Session` and its percepts, and applies the
resulting `ContextPlan` (which file to pass, what to put before the user's message, and which
session fields to update after a successful run).

Layout. The file always starts with the static block (identity, need and memory instructions,
remembered facts), byte-identical for the same nonce and percepts so it can hit the prompt
cache. On a new conversation (`first`, `fresh`) the dynamic block follows after a `\\n`. On a
continued conversation (`resume`, `returning`) Claude replays the system prompt it recorded on
the first request, so the file is the static block alone and what is new for the turn goes in
front of the user's message in a `<milk-context>` block.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

FRESH_START_LOCAL_TURNS = 8
"""Local turns since Claude's last turn from which its conversation counts as stale."""
REINJECT_CLAUDE_TURNS = 20
REINJECT_CLAUDE_BYTES = 40000
STALE_NEED_RECORDS = 4
"""Records since the need was set from which it may already be fulfilled."""
IDENTITY_HEADER = "[Milk agent context]"
NEED_INSTRUCTION_HEADER = "[Milk current-need tracking]"
MEMORY_INSTRUCTION_HEADER = "[Milk shared memory]"
FACTS_HEADER = "[Remembered facts]"
BRIEF_HEADER = "[Escalation brief from the local agent]"
NEED_HEADER = "[Current user goal]"
STALE_NEED_HEADER = "[Last known user goal — may already be fulfilled; verify before acting]"
PRIOR_SUMMARY_HEADER = "[Prior escalation session summary]"
LOCAL_SUMMARY_HEADER = "[Recent local agent activity]"
TURN_CONTEXT_NOTICE = (
    "[Added by milk for this turn, not typed by the user. "
    "The user's message follows the closing tag.]"
)

_IDENTITY = (
    f"{IDENTITY_HEADER}\n"
    "You are running inside milk, which pairs you with a local agent in the user's editor. "
    "You share this session's history and memory with it, so expect work handed over "
    "mid-task and conversations resumed across turns.\n"
    "Never start background workflows or agents (no run_in_background: true, no /bg): milk "
    "ends your process as soon as you reply, so anything still running is lost. Finish your "
    "work within the turn, and call the Agent tool with run_in_background: false."
)
_PRIOR_SUMMARY_NOTE = (
    "(Your earlier conversation in this session was closed; this is what you did in it.)"
)


class ContextMode(enum.StrEnum):
    """How Claude is reached this turn (PROTOCOL.md `ContextPreview.mode`)."""

    FIRST = "first"
    """No Claude conversation in the session yet."""
    RESUME = "resume"
    """Continue Claude's conversation; no local turn since its last turn."""
    RETURNING = "returning"
    """Continue Claude's conversation after local turns."""
    FRESH = "fresh"
    """Start a new conversation although one exists: it went stale or its id was rejected."""


@dataclass(frozen=True)
class ContextInputs:
    """Everything the builders need, taken from a `Session` and the percepts by the caller."""

    nonce: str
    """The session's `escalation_nonce`; generate and persist one before the first escalation."""
    percepts: tuple[str, ...] = ()
    current_need: str = ""
    need_records_ago: int | None = None
    """Records stored since the need's user record (0 = set this turn); None = unknown."""
    escalation_brief: str = ""
    last_local_summary: str = ""
    last_claude_summary: str = ""
    claude_session_id: str = ""
    waiting_on_claude: bool = False
    """Claude's last turn ended with a question to the user (`escalation_waiting`)."""
    local_turns_since_claude: int = 0
    need_changed_since_claude: bool = False
    resume_rejected: bool = False
    """Claude did not know `claude_session_id`; start a new conversation."""
    last_resumed_context_hash: str = ""
    claude_turns_since_injection: int = 0
    claude_bytes_since_injection: int = 0


@dataclass(frozen=True)
class ContextPlan:
    """What to give Claude this turn, and what the caller records after a successful run.

    After the run succeeds: when `reinjected_instructions`, reset the re-injection counters;
    when `delivered_brief`, clear the brief; on `first`/`fresh` set the resumed-context hash
    to "", otherwise to `block_hash` when it is not "". On failure change nothing (P7).
    """

    mode: ContextMode
    context_file: str
    """Full text of the one `--append-system-prompt-file`."""
    user_message_prefix: str
    """Text placed before the user's message ("" when no `<milk-context>` block is sent)."""
    block_hash: str
    """`block_hash()` of the `<milk-context>` block content sent ("" when none)."""
    reinjected_instructions: bool
    """The need/memory instructions reach Claude this turn (new conversation's file, or block)."""
    delivered_brief: bool
    """The escalation brief is in what is sent."""


def choose_mode(inputs: ContextInputs) -> ContextMode:
    """Pick the mode; first match wins, and `resume` is never downgraded."""
    if not inputs.claude_session_id:
        return ContextMode.FIRST
    if inputs.resume_rejected:
        return ContextMode.FRESH
    if inputs.waiting_on_claude or inputs.local_turns_since_claude == 0:
        return ContextMode.RESUME
    if (
        inputs.need_changed_since_claude
        or inputs.local_turns_since_claude >= FRESH_START_LOCAL_TURNS
    ):
        return ContextMode.FRESH
    return ContextMode.RETURNING


def build_static(nonce: str, percepts: Sequence[str]) -> str:
    """The static block: identity, need and memory instructions, remembered facts.

    Always the full block (ADR 0004 update), byte-identical for the same nonce and percepts.
    """
    return f"{_IDENTITY}\n\n{_instructions(nonce, percepts)}\n"


def build_dynamic(inputs: ContextInputs, mode: ContextMode, *, include_brief: bool) -> str:
    """What Claude is told about the session: brief, need, prior summary, local activity.

    On `resume` only what changed since Claude's last turn: the need when it changed, the
    local summary when the local agent ran. Never the identity or the instructions.
    """
    sections: list[str] = []
    if include_brief and inputs.escalation_brief.strip():
        sections.append(_section(BRIEF_HEADER, inputs.escalation_brief))
    if inputs.current_need.strip() and (
        mode != ContextMode.RESUME or inputs.need_changed_since_claude
    ):
        stale = (
            inputs.need_records_ago is not None and inputs.need_records_ago >= STALE_NEED_RECORDS
        )
        sections.append(_section(STALE_NEED_HEADER if stale else NEED_HEADER, inputs.current_need))
    if mode == ContextMode.FRESH and inputs.last_claude_summary.strip():
        body = f"{_PRIOR_SUMMARY_NOTE}\n{inputs.last_claude_summary}"
        sections.append(_section(PRIOR_SUMMARY_HEADER, body))
    if inputs.last_local_summary.strip() and (
        mode != ContextMode.RESUME or inputs.local_turns_since_claude > 0
    ):
        sections.append(_section(LOCAL_SUMMARY_HEADER, inputs.last_local_summary))
    return "\n\n".join(sections) + "\n" if sections else ""


def combine_context_file(static: str, dynamic: str) -> str:
    """The one context file: static first, then `\\n` and the dynamic part when there is one."""
    return f"{static}\n{dynamic}" if dynamic else static


def wrap_turn_context(block: str, prompt: str) -> str:
    """Put a `<milk-context>` block before the user's prompt; a blank block changes nothing."""
    if not block.strip():
        return prompt
    return f"<milk-context>\n{TURN_CONTEXT_NOTICE}\n{block}\n</milk-context>\n\n{prompt}"


def plan_escalation(inputs: ContextInputs, *, by_agent: bool) -> ContextPlan:
    """Decide everything Claude is given for this turn.

    `by_agent` is True when the local agent escalated (`escalate_to_claude(reason)`): the
    brief is then sent in every mode (Q5, Q9).
    """
    mode = choose_mode(inputs)
    static = build_static(inputs.nonce, inputs.percepts)
    dynamic = build_dynamic(inputs, mode, include_brief=by_agent)
    brief = by_agent and bool(inputs.escalation_brief.strip())
    if mode in (ContextMode.FIRST, ContextMode.FRESH):
        # A new conversation records this file: always send it in full, whatever the hash (P8).
        return ContextPlan(
            mode=mode,
            context_file=combine_context_file(static, dynamic),
            user_message_prefix="",
            block_hash="",
            reinjected_instructions=True,
            delivered_brief=brief,
        )
    reinject = (
        inputs.claude_turns_since_injection >= REINJECT_CLAUDE_TURNS
        or inputs.claude_bytes_since_injection >= REINJECT_CLAUDE_BYTES
    )
    parts = [dynamic.rstrip("\n")] if dynamic else []
    if reinject:
        parts.append(_instructions(inputs.nonce, inputs.percepts))
    block = "\n\n".join(parts)
    digest = block_hash(block) if block else ""
    if not block or digest == inputs.last_resumed_context_hash:
        return ContextPlan(
            mode=mode,
            context_file=static,
            user_message_prefix="",
            block_hash="",
            reinjected_instructions=False,
            delivered_brief=False,
        )
    return ContextPlan(
        mode=mode,
        context_file=static,
        user_message_prefix=wrap_turn_context(block, ""),
        block_hash=digest,
        reinjected_instructions=reinject,
        delivered_brief=brief,
    )


def block_hash(block: str) -> str:
    """Hex SHA-256 of a `<milk-context>` block's content (the resumed-turn hash guard)."""
    return hashlib.sha256(block.encode("utf-8")).hexdigest()


# --- private helpers ---------------------------------------------------------------------


def _instructions(nonce: str, percepts: Sequence[str]) -> str:
    """Need and memory instructions plus the remembered facts: the static block minus identity."""
    if not nonce:
        raise ValueError("the escalation nonce must be set before building context")
    need = (
        f"{NEED_INSTRUCTION_HEADER}\n"
        "When the user moves to a new goal, or on their first message if no goal is known "
        "yet, state the goal in one sentence as "
        f"<milk:need:{nonce}>goal</milk:need:{nonce}>. "
        "milk removes these tags before the user sees your reply."
    )
    memory = (
        f"{MEMORY_INSTRUCTION_HEADER}\n"
        "To remember a fact for later sessions, emit "
        f"<milk:percept:{nonce}>fact</milk:percept:{nonce}>, one fact per tag. Record what "
        "stays true beyond this session and is not obvious from the code: who the user is and "
        "their preferences, project decisions and constraints, external resources, and "
        "corrections or confirmed approaches (with the reason). Skip task progress and "
        "short-lived state.\n"
        "When the user asks you to remember something, emit a tag; do not write it to Claude "
        "Code's own memory files."
    )
    blocks = [need, memory]
    facts = [" ".join(p.split()) for p in percepts if p.strip()]
    if facts:
        blocks.append(FACTS_HEADER + "".join(f"\n- {fact}" for fact in facts))
    return "\n\n".join(blocks)


def _section(header: str, body: str) -> str:
    return header + "\n" + body.strip("\n")
