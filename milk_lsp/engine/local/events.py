"""A local part's events folded into its turn, whichever strategy made them (the agent
loop or a guided turn): shown as they come, within `local.turnBudgetSeconds`, until the
part ends or gives a hand-off signal."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing

from milk_lsp.agents.base import (
    AgentEvent,
    ClaudeSessionStarted,
    EscalationRequested,
    LocalGaveUp,
    TurnDone,
    TurnFailed,
)
from milk_lsp.agents.local.agent import LocalAgent
from milk_lsp.engine.local import handoff
from milk_lsp.engine.local.clock import LocalClock
from milk_lsp.engine.turn import Turn

LocalOutcome = EscalationRequested | LocalGaveUp | None


async def fold_local_events(
    turn: Turn,
    agent: LocalAgent,
    events: AsyncGenerator[AgentEvent, None],
    progress: Callable[[str], None],
) -> LocalOutcome:
    """Run `events` to their end (or the budget's), applying each to `turn`; the part's
    escalation or hand-off signal, if any. The text held back is released at the end."""
    outcome: LocalOutcome = None
    clock = turn.local_clock = LocalClock(turn.config.local.turn_budget_seconds, progress)
    try:
        async with clock.bounded(), aclosing(events) as running:
            async for event in running:
                # the model as the turn ran on it: a failed turn forgets it after
                turn.local_model = agent.model_in_use or turn.local_model
                clock.saw(event)
                if isinstance(event, EscalationRequested | LocalGaveUp):
                    outcome = event
                    break
                if isinstance(event, TurnFailed):
                    outcome = handoff.from_model_failure(event)
                    if outcome is not None:
                        break
                    turn.failure = (event.reason, event.message)
                elif not isinstance(event, TurnDone | ClaudeSessionStarted):
                    turn.apply(event)
    finally:  # the turn's info names the model, however the part ended
        turn.local_model = agent.model_in_use or turn.local_model
        turn.local_clock = None
    if clock.ran_out:  # cancelled at the deadline: its stream and tools have stopped
        outcome = clock.out_of_time()
        turn.failure = None
    turn.flush_text()
    return outcome
