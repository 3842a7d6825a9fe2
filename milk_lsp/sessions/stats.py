"""The routing numbers (`milk/stats`): what each turn was, and the figures of a workspace.

Pure: the runner says what a turn was (`route_kind`), the store keeps one `turn_routes` row
per turn and sums them (`RouteGroup`, `ClaudeTotals`), and `build_stats` turns the sums into
the `Stats` every door shows, with its few lines in words. Nothing here does I/O.

The estimate (docs/protocol.md, `milk/stats`): the average cost of the workspace's Claude
turns that reported one, times the turns answered locally, is what local-first saved; with
Claude's actual cost added, what the same turns would have cost all on Claude.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from milk_lsp.wire import AdvisorStats, ModelStats, Stats, StatsBudget

RouteKind = Literal[
    "local", "handed_off", "escalated_by_user", "claude_reply", "unanswered", "advised"
]
"""`local`: the local model answered and Claude did not run; `handed_off`: the local part
failed or asked, and Claude took over; `escalated_by_user`: the user sent the turn (or the
session) to Claude; `claude_reply`: the user answered Claude's question; `unanswered`: no
answer from anyone (cancelled, the model server down, Claude stopped before it started);
`advised` (issue 32): Claude planned, the local model (and Claude for the steps it failed)
did the steps."""

CLAUDE_KINDS: tuple[RouteKind, ...] = (
    "handed_off",
    "escalated_by_user",
    "claude_reply",
    "advised",
)
"""The kinds of turns Claude ran (the turns `claudeTurns` counts)."""

MODEL_ASKED = "escalate_to_claude"
"""`handedOffBySignal`'s key for turns the local model itself handed to Claude."""

COST_DIGITS = 6
"""Dollar figures go out rounded to a millionth of a dollar."""

_SIGNAL_WORDS = {
    MODEL_ASKED: "the model asked",
    "round_limit": "too many tool rounds",
    "time_budget": "its time budget",
    "wide_request": "a request reaching too much of the workspace",
    "repeated_call": "a repeated call",
    "unknown_tool": "an unknown tool",
    "unrunnable_call": "a call it could not run",
    "described_call": "a call described, not made",
    "ungrounded_answer": "an unfounded answer",
    "edit_not_made": "an edit not made",
    "failed_edit": "a failed edit",
    "edit_broke_file": "an edit that broke a file",
    "check_failed": "a failed check",
    "empty_reply": "an empty reply",
    "no_answer": "no answer",
    "model_unreachable": "the model server down",
    "model_error": "a model server error",
    "context_overflow": "too small a context",
}


def route_kind(
    *,
    advised: bool = False,
    claude_ran: bool,
    escalated_by: str | None,
    answers_claude: bool,
    local_answered: bool,
) -> RouteKind:
    """What a turn was, from how it ended. `escalated_by` is `TurnResult.escalated.by`;
    `answers_claude`: the turn went to Claude because Claude had asked a question;
    `local_answered`: the local part said or did something and the turn was not cancelled;
    `advised`: an advisor turn (it counts apart, whoever did its steps)."""
    if advised:
        return "advised"
    if claude_ran:
        if escalated_by in ("agent", "fallback"):
            return "handed_off"
        return "claude_reply" if answers_claude else "escalated_by_user"
    return "local" if local_answered else "unanswered"


def hand_off_signal(escalated_by: str | None, signal: str | None) -> str | None:
    """The `handedOffBySignal` key of a handed-off turn: its signal, or the model's ask."""
    if escalated_by == "agent":
        return MODEL_ASKED
    return signal if escalated_by == "fallback" else None


def attributed_model(own: str | None, session_last: str | None, configured: str | None) -> str:
    """The local model a turn counts for: the one its local part ran on; for a turn the
    user sent to Claude, the one the session last ran locally, else `local.model`."""
    return own or session_last or configured or ""


@dataclass(frozen=True)
class TurnRoute:
    """One turn's row of `turn_routes` (the store adds the session, day and workspace)."""

    kind: RouteKind
    model: str
    """The model the local part ran on; "" when none ran (see `configured_model`)."""
    signal: str | None = None
    claude_cost_usd: float | None = None
    local_edits: bool = False
    """The turn's local part changed files (`milk/turn/undo` later marks the row undone)."""
    configured_model: str | None = None
    """`local.model`, for a turn without a local part in a session that never ran one."""
    steps_local: int = 0
    steps_claude: int = 0
    steps_failed: int = 0
    """An advisor turn's steps: done by the local side, by Claude, failed."""
    steps_milk: int = 0
    """Of `steps_local`, those milk applied itself (Claude's exact replacement)."""
    plan_cost_usd: float | None = None
    """What an advisor turn's plan cost (the rest of `claude_cost_usd` went to steps)."""


@dataclass(frozen=True)
class RouteGroup:
    """The turns of one workspace that share all of these (a GROUP BY of `turn_routes`)."""

    model: str
    kind: str
    signal: str | None
    local_edits: bool
    undone: bool
    turns: int


@dataclass(frozen=True)
class AdvisorTotals:
    """The workspace's advisor turns, summed."""

    turns: int = 0
    steps_local: int = 0
    steps_claude: int = 0
    steps_failed: int = 0
    steps_milk: int = 0
    plan_cost_usd: float = 0.0
    cost_usd: float = 0.0
    """Claude's whole cost of those turns (plans and steps)."""


@dataclass(frozen=True)
class ClaudeTotals:
    """The workspace's Claude turns: how many, what those that reported a cost cost."""

    turns: int = 0
    costed_turns: int = 0
    cost_usd: float = 0.0


def today() -> str:
    """The local date, YYYY-MM-DD: the day a budget counts."""
    return datetime.now().astimezone().date().isoformat()


def build_stats(
    workspace_uri: str,
    groups: Iterable[RouteGroup],
    claude: ClaudeTotals,
    spent_today_usd: float,
    limit_usd: float | None,
    day: str,
    advised: AdvisorTotals | None = None,
) -> Stats:
    """The figures of a workspace, with `text` saying them in words."""
    by_model: dict[str, ModelStats] = {}
    total = ModelStats(model="")
    for group in groups:
        rows = [total]
        if group.model:
            rows.append(by_model.setdefault(group.model, ModelStats(model=group.model)))
        for row in rows:
            _add(row, group)
    models = sorted(by_model.values(), key=lambda row: (-_turns(row), row.model))
    average = claude.cost_usd / claude.costed_turns if claude.costed_turns else None
    saved = None if average is None else average * total.answered_locally
    stats = Stats(
        workspace_folder=workspace_uri,
        total=total,
        by_model=models,
        claude_turns=claude.turns,
        claude_cost_usd=_dollars(claude.cost_usd),
        average_claude_turn_cost_usd=_maybe_dollars(average),
        estimated_all_claude_cost_usd=_maybe_dollars(
            None if saved is None else claude.cost_usd + saved
        ),
        estimated_saved_usd=_maybe_dollars(saved),
        budget=StatsBudget(limit_usd=limit_usd, spent_today_usd=_dollars(spent_today_usd), day=day),
        text="",
        advisor=_advisor(advised, claude),
    )
    stats.text = stats_text(stats)
    return stats


def _advisor(advised: AdvisorTotals | None, claude: ClaudeTotals) -> AdvisorStats | None:
    """The advisor turns' figures; the all-Claude estimate from the other Claude turns."""
    if advised is None or not advised.turns:
        return None
    others = claude.costed_turns - advised.turns
    other_cost = claude.cost_usd - advised.cost_usd
    average = other_cost / others if others > 0 and other_cost > 0 else None
    steps = advised.steps_local + advised.steps_claude + advised.steps_failed
    return AdvisorStats(
        share_local=round(advised.steps_local / steps, 3) if steps else None,
        saves=None if average is None else advised.cost_usd < average * advised.turns,
        turns=advised.turns,
        steps_local=advised.steps_local,
        steps_claude=advised.steps_claude,
        steps_failed=advised.steps_failed,
        steps_by_milk=advised.steps_milk,
        plan_cost_usd=_dollars(advised.plan_cost_usd),
        steps_cost_usd=_dollars(max(0.0, advised.cost_usd - advised.plan_cost_usd)),
        estimated_all_claude_cost_usd=_maybe_dollars(
            None if average is None else average * advised.turns
        ),
    )


def _add(row: ModelStats, group: RouteGroup) -> None:
    if group.kind == "local":
        row.answered_locally += group.turns
    elif group.kind == "handed_off":
        row.handed_off += group.turns
        key = group.signal or "other"
        row.handed_off_by_signal[key] = row.handed_off_by_signal.get(key, 0) + group.turns
    elif group.kind == "escalated_by_user":
        row.escalated_by_user += group.turns
    if group.local_edits and group.undone:
        row.local_edits_undone += group.turns
    elif group.local_edits:
        row.local_edits_kept += group.turns


def _turns(row: ModelStats) -> int:
    return row.answered_locally + row.handed_off + row.escalated_by_user


def _dollars(value: float) -> float:
    return round(value, COST_DIGITS)


def _maybe_dollars(value: float | None) -> float | None:
    return None if value is None else _dollars(value)


def usd(value: float) -> str:
    """A dollar figure in words: cents, or four places below a dollar."""
    return f"${value:,.2f}" if value >= 1 else f"${value:.4f}"


def stats_text(stats: Stats) -> str:
    """The figures in a few short lines (the VS Code tooltip, `milk-lsp stats`,
    `:checkhealth milk`)."""
    total = stats.total
    routed = _turns(total)
    lines: list[str] = []
    if routed == 0 and stats.claude_turns == 0:
        lines.append("No turns in this workspace yet.")
    else:
        lines.append(_routing_line(total, routed, stats.by_model))
        if total.local_edits_kept or total.local_edits_undone:
            lines.append(
                f"Turns with local edits: {total.local_edits_kept} kept, "
                f"{total.local_edits_undone} undone."
            )
        lines.append(_claude_line(stats))
    if stats.advisor is not None:
        lines.append(_advisor_line(stats.advisor))
    lines.append(_budget_line(stats.budget))
    return "\n".join(lines)


def _routing_line(total: ModelStats, routed: int, models: Sequence[ModelStats]) -> str:
    named = f" ({models[0].model})" if len(models) == 1 else ""
    line = f"Local model{named}: {total.answered_locally} of {_count(routed, 'turn')} answered"
    parts = [line + " locally"]
    if total.handed_off:
        reasons = sorted(total.handed_off_by_signal.items(), key=lambda item: (-item[1], item[0]))
        why = ", ".join(f"{n} {_SIGNAL_WORDS.get(signal, 'other')}" for signal, n in reasons)
        parts.append(f"{total.handed_off} handed to Claude ({why})")
    if total.escalated_by_user:
        parts.append(f"{total.escalated_by_user} sent to Claude by you")
    text = "; ".join(parts) + "."
    if len(models) > 1:
        each = ", ".join(f"{row.model} {row.answered_locally}" for row in models)
        text += f" Answered locally by model: {each}."
    return text


def _claude_line(stats: Stats) -> str:
    line = f"Claude: {_count(stats.claude_turns, 'turn')}, {usd(stats.claude_cost_usd)}"
    if stats.estimated_saved_usd is None or stats.estimated_all_claude_cost_usd is None:
        return line + "; no Claude cost yet to estimate savings from."
    return (
        f"{line}; all on Claude about {usd(stats.estimated_all_claude_cost_usd)}, "
        f"so local-first saved about {usd(stats.estimated_saved_usd)}."
    )


def _advisor_line(advisor: AdvisorStats) -> str:
    steps = advisor.steps_local + advisor.steps_claude + advisor.steps_failed
    line = (
        f"Advisor: {_count(advisor.turns, 'turn')}, {_count(steps, 'step')} "
        f"({advisor.steps_local} done locally{_by_milk(advisor)}, {advisor.steps_claude} by Claude"
        f"{f', {advisor.steps_failed} failed' if advisor.steps_failed else ''}); Claude cost "
        f"{usd(advisor.plan_cost_usd)} on plans and {usd(advisor.steps_cost_usd)} on steps"
    )
    if advisor.estimated_all_claude_cost_usd is None:
        return line + "."
    return f"{line}, against about {usd(advisor.estimated_all_claude_cost_usd)} all on Claude."


def _by_milk(advisor: AdvisorStats) -> str:
    if not advisor.steps_by_milk:
        return ""
    return f" ({advisor.steps_by_milk} of them applied by milk itself)"


def _budget_line(budget: StatsBudget) -> str:
    spent = f"{usd(budget.spent_today_usd)} spent on Claude today ({budget.day})"
    if budget.limit_usd is None:
        return f"{spent}; no daily budget set."
    if budget.spent_today_usd >= budget.limit_usd:
        return f"{spent}: the daily budget of {usd(budget.limit_usd)} is reached."
    return f"{spent} of a daily budget of {usd(budget.limit_usd)}."


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
