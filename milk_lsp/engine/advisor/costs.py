"""Whether the advisor route pays in this folder, from its history (`milk/stats`): the
estimate shown before a plan is asked, the real figure after, and the hand-off's choice
between a plan and Claude Code proper (issue 39, point 3)."""

from __future__ import annotations

from milk_lsp.sessions.service import Sessions
from milk_lsp.sessions.stats import usd
from milk_lsp.wire import Stats
from milk_lsp.workspace.paths import path_to_uri

EVIDENCE_TURNS = 3
"""Advisor turns with a cost a folder needs before its history may turn a hand-off away
from the route."""


async def folder_stats(sessions: Sessions, workspace: str) -> Stats | None:
    """The folder's figures; None when they cannot be read (they only inform)."""
    try:
        return await sessions.stats(path_to_uri(workspace))
    except Exception:
        return None


def estimate(stats: Stats | None) -> str | None:
    """What a plan has cost here, against Claude alone, in words (None: no figures yet)."""
    if stats is None:
        return None
    advisor = stats.advisor
    alone = stats.average_claude_turn_cost_usd
    if advisor is not None and advisor.turns:
        spent = (advisor.plan_cost_usd + advisor.steps_cost_usd) / advisor.turns
        line = f"advisor turns here have cost Claude about {usd(spent)} each"
        if advisor.estimated_all_claude_cost_usd is not None:
            line += f", against about {usd(advisor.estimated_all_claude_cost_usd / advisor.turns)}"
            line += " for a turn all on Claude"
        return line
    if alone is not None:
        return f"no advisor turn here yet; a turn all on Claude has cost about {usd(alone)}"
    return None


def pays(stats: Stats | None) -> tuple[bool, str]:
    """Whether a hand-off should take the advisor route: yes unless the folder's history
    (`EVIDENCE_TURNS` advisor turns or more, with an all-Claude estimate) says it costs
    Claude more than Claude alone; the figures in words."""
    advisor = None if stats is None else stats.advisor
    if advisor is None or advisor.turns < EVIDENCE_TURNS or advisor.saves is None:
        return True, ""
    return advisor.saves, estimate(stats) or ""


def spent(plan_usd: float | None, total_usd: float | None) -> str | None:
    """The real figure of one advisor turn, in words (None: no cost reported)."""
    if total_usd is None:
        return None
    plan = plan_usd or 0.0
    return (
        f"Claude cost {usd(total_usd)} on this turn: {usd(plan)} on the plan and "
        f"{usd(max(0.0, total_usd - plan))} on steps"
    )
