"""Hand-off on failure: when the local part of a turn fails visibly, Claude takes over.

The local agent reports a `LocalGaveUp` (see `agents.local_watch`); a failed request to the
model server becomes one here. On route `auto` the engine then hands the same turn to
Claude (`local.handOff`: ask the user first, or not), with a brief of what the local agent
tried and why it stopped. When it does not (route `local`, `handOff: "off"`, the user keeps
the local answer, no Claude), the turn must not end as if all were well: it ends `error`
with a reason naming the signal, and the local text is kept.
"""

from __future__ import annotations

import re
from typing import Literal

from milk_lsp.agents.base import (
    FailureReason,
    LocalGaveUp,
    LocalSignal,
    PermissionTimedOut,
    TurnFailed,
)
from milk_lsp.doors import LSP, Door
from milk_lsp.engine.turn import Turn
from milk_lsp.sessions.model import Agent
from milk_lsp.text import cut, one_line

HandOffMode = Literal["ask", "auto", "off"]

HAND_OFF_TOOL = "hand_off_to_claude"
"""The `tool` of the permission question that asks whether Claude takes over."""
HAND_OFF_LABELS = {"allow_once": "Hand to Claude", "deny": "Keep the local answer"}
"""The question reuses the permission option ids, so every client can answer it."""
HAND_OFF_NO_ANSWER_LABELS = {"allow_once": "Hand to Claude", "deny": "Don't hand off"}
"""The labels when the local model gave no answer to keep (the model server was down, or
only tool calls ran): "Keep the local answer" would offer a choice that does not exist."""
REASON_CHARS = 300

_OVERFLOW = re.compile(
    r"context (?:size|length|window)|context_length|exceeds? the (?:available )?context|"
    r"too many tokens|prompt is too long|maximum context",
    re.IGNORECASE,
)


def from_model_failure(failure: TurnFailed) -> LocalGaveUp | None:
    """A failed request to the model server as a hand-off signal (None: not the model's)."""
    if failure.reason is FailureReason.LOCAL_UNREACHABLE:
        return LocalGaveUp(LocalSignal.MODEL_UNREACHABLE, failure.message)
    if failure.reason is FailureReason.LOCAL_FAILED:
        signal = (
            LocalSignal.CONTEXT_OVERFLOW
            if _OVERFLOW.search(failure.message)
            else LocalSignal.MODEL_ERROR
        )
        return LocalGaveUp(signal, failure.message)
    return None


def reason_text(gave_up: LocalGaveUp) -> str:
    """`escalated.reason` of a fallback: what happened, in words (`escalated.signal` names
    the signal for clients)."""
    return cut(one_line(gave_up.detail), REASON_CHARS)


def brief(gave_up: LocalGaveUp, user_ask: str) -> str:
    """What Claude is told about the local agent's attempt (the escalation brief)."""
    opening = (
        "milk handed this request to you before the local model tried it"
        if gave_up.signal is LocalSignal.WIDE_REQUEST
        else "The local model could not finish this request and milk handed it to you"
    )
    lines = [
        f"{opening} ({gave_up.signal.value}): {gave_up.detail}",
        f"The user asked: {' '.join(user_ask.split())}",
    ]
    if gave_up.tried:
        lines.append("What the local agent tried this turn:")
        lines.extend(f"- {line}" for line in gave_up.tried)
    else:
        lines.append("The local agent ran no tools this turn.")
    return "\n".join(lines)


def failure(gave_up: LocalGaveUp, why_kept: str, door: Door = LSP) -> tuple[FailureReason, str]:
    """The turn's failure when the local part's failure is not handed off; its advice
    names the front door's own setting and way to Claude (`door`)."""
    if gave_up.signal is LocalSignal.MODEL_UNREACHABLE:
        return FailureReason.LOCAL_UNREACHABLE, gave_up.detail
    if gave_up.signal in (LocalSignal.MODEL_ERROR, LocalSignal.CONTEXT_OVERFLOW):
        return FailureReason.LOCAL_FAILED, gave_up.detail
    reason = (
        FailureReason.TOOL_ROUNDS_EXCEEDED
        if gave_up.signal is LocalSignal.ROUND_LIMIT
        else FailureReason.LOCAL_FAILED
    )
    advice = (
        f"raise {door.setting('local.maxToolRounds')}, or {door.escalate} instead"
        if gave_up.signal is LocalSignal.ROUND_LIMIT
        else f"raise {door.setting('local.turnBudgetSeconds')}, or {door.escalate} instead"
        if gave_up.signal is LocalSignal.TIME_BUDGET
        else f"{door.escalate}, or rephrase and try again"
    )
    message = f"The local model did not finish: {gave_up.detail}."
    if why_kept:
        message = f"{message} {why_kept}"
    return reason, f"{message} To go on, {advice}."


def has_local_answer(turn: Turn) -> bool:
    """Whether the local part said anything the user could keep as the turn's answer."""
    local = turn.part_of(Agent.LOCAL)
    return local is not None and bool(local.text.strip())


async def ask_user(turn: Turn, gave_up: LocalGaveUp, timeout_seconds: float) -> bool:
    """Ask through the permission path whether Claude takes over; True to hand off.

    The question is in words, with the reason, and offers only the choices that exist:
    `localAnswer` says whether the local model said anything the user could keep.
    No answer in time, a dismissed question or a broken client keeps the local answer; a
    cancel of the turn withdraws the question (the bridge cancels the client request).
    """
    has_answer = has_local_answer(turn)
    detail = gave_up.detail.rstrip(". ")
    keep = (
        "Keep the local answer: the turn ends as failed, with its text."
        if has_answer
        else "The local model gave no answer to keep."
    )
    params = {
        "sessionId": turn.session_id,
        "turnId": turn.turn_id,
        "agent": "local",
        "toolCallId": f"handoff-{turn.turn_id}",
        "tool": HAND_OFF_TOOL,
        "input": {"signal": gave_up.signal.value, "detail": gave_up.detail},
        "description": (
            f"The local model could not finish: {detail}. Hand this turn to Claude Code, "
            f"with the session's context? {keep}"
        ),
        "options": list(HAND_OFF_LABELS),
        "labels": HAND_OFF_LABELS if has_answer else HAND_OFF_NO_ANSWER_LABELS,
        "localAnswer": has_answer,
    }
    turn.bridge.progress_report(turn.progress_token, "the local model failed: hand to Claude?")
    try:
        answer = await turn.ask(params, timeout_seconds)
    except PermissionTimedOut:
        return False
    return answer == "allow_once"
