"""Claude's daily budget (`claude.budgetUsd`): before a Claude part starts, what Claude cost
the workspace today is held against the cap. Once reached, milk asks the user whether to go
on once, the way it asks about a hand-off (a permission question with choices in words); a
no, no answer or a door that cannot ask ends the turn with a failure that gives the figures
and names the door's own way to raise the cap.
"""

from __future__ import annotations

from dataclasses import dataclass

from milk_lsp.agents.base import FailureReason, PermissionTimedOut
from milk_lsp.doors import LSP, Door
from milk_lsp.engine.turn import Turn
from milk_lsp.sessions.stats import today, usd

BUDGET_TOOL = "claude_budget"
"""The `tool` of the question whether Claude may run once past the day's budget."""
BUDGET_LABELS = {"allow_once": "Go on once", "deny": "Stop here"}
"""The question reuses the permission option ids, so every client can answer it."""


@dataclass(frozen=True)
class BudgetState:
    """Today's spending against the cap (`limit_usd` None: no cap)."""

    limit_usd: float | None
    spent_usd: float
    day: str

    @property
    def reached(self) -> bool:
        return self.limit_usd is not None and self.spent_usd >= self.limit_usd

    def figures(self) -> str:
        return (
            f"{usd(self.spent_usd)} of {usd(self.limit_usd or 0.0)} spent on Claude today "
            f"({self.day})"
        )


def state(limit_usd: float | None, spent_usd: float, day: str | None = None) -> BudgetState:
    return BudgetState(limit_usd, spent_usd, day or today())


async def ask_go_on(turn: Turn, budget: BudgetState, timeout_seconds: float) -> bool:
    """Ask through the permission path whether Claude runs this once anyway; True to go on.
    No answer in time, a dismissed question or a client that cannot ask is a no."""
    params = {
        "sessionId": turn.session_id,
        "turnId": turn.turn_id,
        "agent": "claude",
        "toolCallId": f"budget-{turn.turn_id}",
        "tool": BUDGET_TOOL,
        "input": {
            "limitUsd": budget.limit_usd,
            "spentTodayUsd": round(budget.spent_usd, 6),
            "day": budget.day,
        },
        "description": (
            f"Claude's daily budget for this workspace is reached: {budget.figures()}. "
            "Go on with Claude for this turn anyway? Otherwise the turn stops before Claude "
            "starts."
        ),
        "options": list(BUDGET_LABELS),
        "labels": BUDGET_LABELS,
    }
    turn.bridge.progress_report(turn.progress_token, "Claude's budget is reached: go on?")
    try:
        answer = await turn.ask(params, timeout_seconds)
    except PermissionTimedOut:
        return False
    return answer == "allow_once"


def failure(budget: BudgetState, door: Door = LSP) -> tuple[FailureReason, str]:
    """The turn's failure when Claude is not started for the budget, in the door's words."""
    return FailureReason.BUDGET_REACHED, (
        f"Claude's daily budget for this workspace is reached: {budget.figures()}, so Claude "
        f"was not started. To go on, raise {door.setting('claude.budgetUsd')} (unset, there is "
        'no cap), or answer "Go on once" when milk asks; the budget starts again tomorrow.'
    )
