"""The routing numbers: what each turn was, the counting, the store's rows and migration, the
words, `milk-lsp stats`, and the budget's failure in each door's words."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from milk_lsp import cli
from milk_lsp.doors import NVIM, TERMINAL, VSCODE
from milk_lsp.engine import budget
from milk_lsp.engine.advisor import costs
from milk_lsp.sessions import routes as routes_module
from milk_lsp.sessions.model import Agent, RecordStatus, Role, TurnRecord
from milk_lsp.sessions.schema import MIGRATIONS, SCHEMA_VERSION
from milk_lsp.sessions.service import stats_of
from milk_lsp.sessions.stats import (
    ClaudeTotals,
    RouteGroup,
    TurnRoute,
    build_stats,
    route_kind,
)
from milk_lsp.sessions.store import SessionStore, StoreReader
from milk_lsp.workspace.paths import path_to_uri

WS = "/ws/a"


def _no_bricks(reader: StoreReader, session) -> tuple[str, str]:
    return session.last_local_summary, session.last_claude_summary


def _turn(store: SessionStore, session, route: TurnRoute | None) -> str:
    turn_id = f"t-{session.turn_count + 1}"
    store.begin_turn(session, TurnRecord(turn_id, Role.USER, Agent.LOCAL, "ask"))
    reply = TurnRecord(turn_id, Role.ASSISTANT, Agent.LOCAL, "answer")
    store.finish_turn(session, turn_id, RecordStatus.OK, [reply], _no_bricks, route=route)
    return turn_id


# ---- what a turn was ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("claude_ran", "by", "answers_claude", "local_answered", "kind"),
    [
        (False, None, False, True, "local"),
        (False, None, False, False, "unanswered"),
        (True, "fallback", False, True, "handed_off"),
        (True, "agent", False, True, "handed_off"),
        (True, "user", False, False, "escalated_by_user"),
        (True, "user", True, False, "claude_reply"),
        # Claude never started (missing, or the budget): the local answer is what there is
        (False, "fallback", False, True, "local"),
        (False, "user", False, False, "unanswered"),
    ],
)
def test_route_kind(
    claude_ran: bool, by: str | None, answers_claude: bool, local_answered: bool, kind: str
) -> None:
    assert (
        route_kind(
            claude_ran=claude_ran,
            escalated_by=by,
            answers_claude=answers_claude,
            local_answered=local_answered,
        )
        == kind
    )


# ---- the counting ------------------------------------------------------------------------


def _group(model: str, kind: str, turns: int, **extra) -> RouteGroup:
    fields = {"signal": None, "local_edits": False, "undone": False, **extra}
    return RouteGroup(model=model, kind=kind, turns=turns, **fields)


def test_counts_by_model_and_the_estimate() -> None:
    groups = [
        _group("small", "local", 3),
        _group("small", "local", 2, local_edits=True),
        _group("small", "local", 1, local_edits=True, undone=True),
        _group("small", "handed_off", 2, signal="failed_edit"),
        _group("small", "handed_off", 1, signal="escalate_to_claude"),
        _group("big", "local", 1),
        _group("big", "escalated_by_user", 1),
        _group("", "escalated_by_user", 1),  # no local model known: in the total only
        _group("small", "claude_reply", 4),
        _group("small", "unanswered", 5),
    ]
    claude = ClaudeTotals(turns=9, costed_turns=8, cost_usd=0.8)
    stats = build_stats("file:///ws/a", groups, claude, 0.25, 1.0, "2026-05-01")
    assert [row.model for row in stats.by_model] == ["small", "big"]
    small, big = stats.by_model
    assert (small.answered_locally, small.handed_off, small.escalated_by_user) == (6, 3, 0)
    assert small.handed_off_by_signal == {"failed_edit": 2, "escalate_to_claude": 1}
    assert (small.local_edits_kept, small.local_edits_undone) == (2, 1)
    assert (big.answered_locally, big.escalated_by_user) == (1, 1)
    total = stats.total
    assert (total.answered_locally, total.handed_off, total.escalated_by_user) == (7, 3, 2)
    assert stats.claude_turns == 9 and stats.claude_cost_usd == 0.8
    assert stats.average_claude_turn_cost_usd == pytest.approx(0.1)
    assert stats.estimated_saved_usd == pytest.approx(0.7)  # 7 local turns at the average
    assert stats.estimated_all_claude_cost_usd == pytest.approx(1.5)
    assert stats.budget.to_wire() == {"limitUsd": 1.0, "spentTodayUsd": 0.25, "day": "2026-05-01"}
    text = stats.text
    assert "7 of 12 turns answered locally" in text
    assert "3 handed to Claude (2 a failed edit, 1 the model asked)" in text
    assert "2 sent to Claude by you" in text
    assert "Answered locally by model: small 6, big 1." in text
    assert "Turns with local edits: 2 kept, 1 undone." in text
    assert "all on Claude about $1.50, so local-first saved about $0.7000" in text
    assert "$0.2500 spent on Claude today (2026-05-01) of a daily budget of $1.00." in text
    assert "failed_edit" not in text, "the words name no signal id"


def test_without_a_claude_cost_the_estimates_are_null_on_the_wire() -> None:
    stats = build_stats("file:///ws/a", [_group("m", "local", 2)], ClaudeTotals(), 0, None, "d")
    wire = stats.to_wire()
    assert wire["averageClaudeTurnCostUsd"] is None
    assert wire["estimatedAllClaudeCostUsd"] is None
    assert wire["estimatedSavedUsd"] is None
    assert wire["budget"] == {"limitUsd": None, "spentTodayUsd": 0.0, "day": "d"}
    assert wire["byModel"][0]["handedOffBySignal"] == {}
    assert "Local model (m): 2 of 2 turns answered locally." in stats.text
    assert "no Claude cost yet to estimate savings from" in stats.text
    assert "no daily budget set" in stats.text


def test_no_turns_and_a_reached_budget_in_words() -> None:
    stats = build_stats("file:///ws", [], ClaudeTotals(), 2.0, 2.0, "2026-05-01")
    assert stats.text.splitlines() == [
        "No turns in this workspace yet.",
        "$2.00 spent on Claude today (2026-05-01): the daily budget of $2.00 is reached.",
    ]


# ---- the store ---------------------------------------------------------------------------


def test_store_counts_routes_undo_and_todays_cost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SessionStore(tmp_path / "sessions.sqlite3")
    session = store.create_session(WS)
    other = store.create_session("/ws/b")
    _turn(store, session, TurnRoute("local", "small"))
    edited = _turn(store, session, TurnRoute("local", "small", local_edits=True))
    _turn(store, session, TurnRoute("handed_off", "small", "empty_reply", 0.3))
    # a user escalation counts for the model the session last ran locally
    _turn(store, session, TurnRoute("escalated_by_user", "", None, 0.1, configured_model="cfg"))
    _turn(store, session, None)  # a turn whose route could not be made is not counted
    _turn(store, other, TurnRoute("escalated_by_user", "", None, 5.0, configured_model="cfg"))
    monkeypatch.setattr(routes_module, "today", lambda: "1999-12-31")
    _turn(store, session, TurnRoute("escalated_by_user", "", None, 0.2))
    info = store.turn_infos(session.id, [edited]).get(edited, {})
    store.set_turn_info(session.id, edited, {**info, "undone": True})

    stats = stats_of(store, WS, 1.0)
    [small] = stats.by_model
    assert small.model == "small"
    assert (small.answered_locally, small.handed_off, small.escalated_by_user) == (2, 1, 2)
    assert small.handed_off_by_signal == {"empty_reply": 1}
    assert (small.local_edits_kept, small.local_edits_undone) == (0, 1)
    assert stats.claude_turns == 3
    assert stats.claude_cost_usd == pytest.approx(0.6)
    assert stats.workspace_folder == path_to_uri(WS)
    assert store.routes.claude_spent(WS, "1999-12-31") == pytest.approx(0.2)
    monkeypatch.undo()
    assert stats_of(store, WS, 1.0).budget.spent_today_usd == pytest.approx(0.4)
    # the other workspace's session never ran locally: its model is the configured one
    assert [row.model for row in stats_of(store, "/ws/b", None).by_model] == ["cfg"]
    # deleting a session keeps what its turns cost (the day's budget stays spent)
    store.delete_session(session.id)
    assert stats_of(store, WS, 1.0).budget.spent_today_usd == pytest.approx(0.4)


def test_a_v5_database_migrates_and_keeps_its_turns(tmp_path: Path) -> None:
    path = tmp_path / "sessions.sqlite3"
    conn = sqlite3.connect(path)
    for version in range(1, 6):
        conn.executescript(MIGRATIONS[version])
    conn.execute(
        "INSERT INTO sessions (id, workspace, created_at, updated_at) VALUES"
        " ('s', '/ws/a', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')"
    )
    conn.execute("PRAGMA user_version = 5")
    conn.commit()
    conn.close()
    store = SessionStore(path)
    assert store._conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 9
    session = store.get_session("s")
    assert session is not None
    _turn(store, session, TurnRoute("local", "m"))
    assert stats_of(store, WS, None).total.answered_locally == 1


# ---- milk-lsp stats ----------------------------------------------------------------------


def test_cli_stats_reads_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"claude": {"budgetUsd": 2}}))
    monkeypatch.setenv("MILK_CONFIG_FILE", str(config))
    storage = tmp_path / "storage"
    argv = ["stats", "--workspace", str(workspace), "--storage-dir", str(storage)]

    assert cli.main([*argv, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["claudeTurns"] == 0
    assert not storage.exists(), "reading the numbers creates no store"

    store = SessionStore(storage / "sessions.sqlite3")
    session = store.create_session(str(workspace.resolve()))
    _turn(store, session, TurnRoute("local", "m"))
    _turn(store, session, TurnRoute("escalated_by_user", "", None, 0.5))
    store.close()
    assert cli.main([*argv, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["total"]["answeredLocally"] == 1
    assert shown["total"]["escalatedByUser"] == 1
    assert shown["estimatedSavedUsd"] == 0.5
    assert shown["budget"]["limitUsd"] == 2.0
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "Local model (m): 1 of 2 turns answered locally; 1 sent to Claude by you." in out
    assert "of a daily budget of $2.00" in out
    assert cli.main(["stats", "--workspace", str(tmp_path / "nowhere")]) == 2


# ---- the budget's words ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("door", "where"),
    [
        (VSCODE, "the milk.claude.budgetUsd setting"),
        (NVIM, "settings = { claude = { budgetUsd = … } } in require('milk').setup()"),
        (TERMINAL, "claude.budgetUsd in milk's config.json"),
    ],
)
def test_budget_failure_gives_the_figures_and_the_doors_setting(door, where: str) -> None:
    reached = budget.state(1.0, 1.25, "2026-05-01")
    assert reached.reached and not budget.state(None, 9.0).reached
    assert not budget.state(1.0, 0.5).reached
    reason, message = budget.failure(reached, door)
    assert reason.value == "budget_reached"
    assert "$1.25 of $1.00 spent on Claude today (2026-05-01)" in message
    assert f"raise {where}" in message


def test_advisor_turns_count_apart_with_their_steps_and_plan_cost(tmp_path: Path) -> None:
    """Issue 32: advisor turns, who did their steps, Claude's cost on plans and on steps, and
    the same turns all on Claude from the folder's other Claude turns."""
    store = SessionStore(tmp_path / "s.sqlite3")
    session = store.create_session(WS)
    assert stats_of(store, WS, None).advisor is None  # none yet
    _turn(store, session, TurnRoute("escalated_by_user", "m", claude_cost_usd=0.02))
    advised = TurnRoute(
        route_kind(
            advised=True,
            claude_ran=True,
            escalated_by="user",
            answers_claude=False,
            local_answered=True,
        ),
        "m",
        claude_cost_usd=0.008,
        steps_local=2,
        steps_claude=1,
        plan_cost_usd=0.005,
    )
    _turn(store, session, advised)
    stats = stats_of(store, WS, None)
    advisor = stats.advisor
    assert advisor is not None
    assert (advisor.turns, advisor.steps_local, advisor.steps_claude, advisor.steps_failed) == (
        1,
        2,
        1,
        0,
    )
    assert advisor.plan_cost_usd == pytest.approx(0.005)
    assert advisor.steps_cost_usd == pytest.approx(0.003)
    assert advisor.estimated_all_claude_cost_usd == pytest.approx(0.02)  # the other Claude turn
    assert stats.claude_turns == 2 and stats.claude_cost_usd == pytest.approx(0.028)
    assert stats.total.answered_locally == 0 and stats.total.escalated_by_user == 1
    assert (
        "Advisor: 1 turn, 3 steps (2 done locally, 1 by Claude); Claude cost $0.0050 on plans "
        "and $0.0030 on steps, against about $0.0200 all on Claude." in stats.text
    )


def test_advisor_share_local_steps_by_milk_and_whether_it_saves(tmp_path: Path) -> None:
    """Issue 39: the share of steps done locally, the ones milk applied itself, whether the
    route costs Claude less than Claude alone; the estimate before a plan, the real figure
    after, and a hand-off turned away from the route once the history says it does not pay."""
    store = SessionStore(tmp_path / "s.sqlite3")
    session = store.create_session(WS)
    assert costs.estimate(stats_of(store, WS, None)) is None  # no figures yet
    assert costs.pays(stats_of(store, WS, None)) == (True, "")
    _turn(store, session, TurnRoute("escalated_by_user", "m", claude_cost_usd=0.02))
    assert costs.estimate(stats_of(store, WS, None)) == (
        "no advisor turn here yet; a turn all on Claude has cost about $0.0200"
    )

    def advised(cost: float) -> TurnRoute:
        kind = route_kind(
            advised=True,
            claude_ran=True,
            escalated_by="user",
            answers_claude=False,
            local_answered=True,
        )
        return TurnRoute(
            kind,
            "m",
            claude_cost_usd=cost,
            steps_local=3,
            steps_claude=1,
            steps_milk=2,
            plan_cost_usd=cost / 2,
        )

    _turn(store, session, advised(0.004))
    stats = stats_of(store, WS, None)
    advisor = stats.advisor
    assert advisor is not None
    assert (advisor.steps_by_milk, advisor.share_local, advisor.saves) == (2, 0.75, True)
    assert "(3 done locally (2 of them applied by milk itself), 1 by Claude)" in stats.text
    assert advisor.to_wire()["stepsByMilk"] == 2 and advisor.to_wire()["shareLocal"] == 0.75
    assert costs.estimate(stats) == (
        "advisor turns here have cost Claude about $0.0040 each, against about $0.0200 for a "
        "turn all on Claude"
    )
    assert costs.pays(stats) == (True, "")  # one turn is no evidence yet
    for _ in range(3):
        _turn(store, session, advised(0.05))  # dearer than Claude alone
    stats = stats_of(store, WS, None)
    assert stats.advisor is not None and stats.advisor.saves is False
    saves, figures = costs.pays(stats)
    assert not saves and figures.startswith("advisor turns here have cost Claude about $0.0385")
    assert costs.spent(0.001, 0.003) == (
        "Claude cost $0.0030 on this turn: $0.0010 on the plan and $0.0020 on steps"
    )
    assert costs.spent(None, None) is None
