"""One brief request to Claude: the `claude` CLI with no tools and milk's own system prompt
(`ClaudeTurnRequest.brief`), the prompt on stdin, its reply collected rather than shown
(it is JSON for milk to check), its cost added to the turn's. No conversation is kept: the
advisor's plan and each step Claude takes over are requests of their own, each small.
Cancelling kills the CLI's process group and removes the system prompt's temp file (the
driver's `close`, shielded)."""

from __future__ import annotations

from contextlib import aclosing
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from milk_lsp.agents.base import (
    ClaudeSessionStarted,
    TextDelta,
    ThinkingDelta,
    TurnDone,
    TurnFailed,
    UsageEvent,
)
from milk_lsp.agents.claude.command import ClaudeTurnRequest
from milk_lsp.engine.agent_host import TurnHost
from milk_lsp.engine.claude_part import ClaudePart, claude_settings
from milk_lsp.engine.turn import Turn
from milk_lsp.sessions.model import Agent, Session, SessionState


@dataclass(frozen=True)
class Answer:
    """Claude's reply text, or why there is none (`failed`: the turn's failure is set)."""

    text: str = ""
    failed: bool = False
    cost_usd: float | None = None


async def ask_brief(
    claude: ClaudePart,
    session: Session,
    turn: Turn,
    *,
    system: str,
    prompt: str,
    by: Literal["user", "agent", "fallback"],
    reason: str,
) -> Answer:
    """Send one brief request, announced by an `escalated` update (mode `brief`, its size);
    within `claude.budgetUsd` as any Claude run. Claude's part of the turn is the current
    one when it is Claude's, else a new one."""
    turn.update(
        "escalated", by=by, reason=reason, mode="brief", contextChars=len(system) + len(prompt)
    )
    if not turn.parts or turn.part.agent is not Agent.CLAUDE:
        turn.start_part(Agent.CLAUDE)
    if not await claude.within_budget(session, turn):
        return Answer(failed=True)
    state = session.state
    session.state = SessionState.ESCALATION
    request = ClaudeTurnRequest(
        workspace=Path(session.workspace_folder),
        prompt=prompt,
        context_file_text=system,
        session_id="",
        resume=False,
        settings=claude_settings(turn.config.claude),
        brief=True,
    )
    host = TurnHost(turn, turn.config.claude.permission_timeout_seconds)
    pieces: list[str] = []
    cost: float | None = None
    failure: TurnFailed | None = None
    try:
        async with aclosing(claude.agent.run(request, host)) as events:
            async for event in events:
                match event:
                    case TextDelta(text=text):
                        pieces.append(text)
                    case UsageEvent(cost_usd=spent):
                        cost = spent if cost is None or spent is None else cost + spent
                        turn.apply(event)
                    case TurnFailed():
                        failure = event
                    case ClaudeSessionStarted() | TurnDone() | ThinkingDelta():
                        pass
                    case _:
                        turn.apply(event)
    finally:
        session.state = state
    if failure is not None:
        turn.failure = (failure.reason, failure.message)
        return Answer(failed=True, cost_usd=cost)
    return Answer("".join(pieces), cost_usd=cost)
