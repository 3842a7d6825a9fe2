"""Where each turn went, for `milk/stats`: the `turn_routes` row a turn writes as it ends
(`write_route`), and the workspace's totals read back (`RouteBook`)."""

from __future__ import annotations

import sqlite3

from milk_lsp.sessions.database import Database
from milk_lsp.sessions.model import Session
from milk_lsp.sessions.stats import (
    CLAUDE_KINDS,
    AdvisorTotals,
    ClaudeTotals,
    RouteGroup,
    TurnRoute,
    attributed_model,
    today,
)


class RouteBook:
    """The workspace's routing numbers, read from `turn_routes`."""

    def __init__(self, store: Database) -> None:
        self._store = store

    def route_groups(self, workspace: str) -> list[RouteGroup]:
        """The workspace's turns, counted by model, kind, signal, local edits and undo."""
        rows = self._store.read(
            "SELECT model, kind, signal, local_edits, undone, count(*) AS turns"
            " FROM turn_routes WHERE workspace = ?"
            " GROUP BY model, kind, signal, local_edits, undone",
            (workspace,),
        )
        return [
            RouteGroup(
                model=str(row["model"] or ""),
                kind=str(row["kind"]),
                signal=None if row["signal"] is None else str(row["signal"]),
                local_edits=bool(row["local_edits"]),
                undone=bool(row["undone"]),
                turns=int(row["turns"]),
            )
            for row in rows
        ]

    def advisor_totals(self, workspace: str) -> AdvisorTotals:
        """The workspace's advisor turns: their steps and what Claude cost on them."""
        row = self._store.read(
            "SELECT count(*), coalesce(sum(steps_local), 0), coalesce(sum(steps_claude), 0),"
            " coalesce(sum(steps_failed), 0), coalesce(sum(plan_cost_usd), 0),"
            " coalesce(sum(claude_cost_usd), 0), coalesce(sum(steps_milk), 0) FROM turn_routes"
            " WHERE workspace = ? AND kind = 'advised'",
            (workspace,),
        )[0]
        return AdvisorTotals(
            turns=int(row[0]),
            steps_local=int(row[1]),
            steps_claude=int(row[2]),
            steps_failed=int(row[3]),
            plan_cost_usd=float(row[4]),
            cost_usd=float(row[5]),
            steps_milk=int(row[6]),
        )

    def claude_totals(self, workspace: str) -> ClaudeTotals:
        """The workspace's Claude turns (all sessions) and what they cost."""
        marks = ",".join("?" for _ in CLAUDE_KINDS)
        row = self._store.read(
            "SELECT count(*), count(claude_cost_usd), coalesce(sum(claude_cost_usd), 0)"
            f" FROM turn_routes WHERE workspace = ? AND kind IN ({marks})",
            (workspace, *CLAUDE_KINDS),
        )[0]
        return ClaudeTotals(turns=int(row[0]), costed_turns=int(row[1]), cost_usd=float(row[2]))

    def claude_spent(self, workspace: str, day: str) -> float:
        """What Claude cost the workspace on `day` (a local date, YYYY-MM-DD)."""
        row = self._store.read(
            "SELECT coalesce(sum(claude_cost_usd), 0) FROM turn_routes"
            " WHERE workspace = ? AND day = ?",
            (workspace, day),
        )[0]
        return float(row[0])


def write_route(conn: sqlite3.Connection, session: Session, turn_id: str, route: TurnRoute) -> None:
    """The turn's `turn_routes` row, counted on the local day it ended."""
    session_last = None
    if not route.model:
        row = conn.execute(
            "SELECT model FROM turn_routes WHERE session_id = ? AND model != ''"
            " ORDER BY rowid DESC LIMIT 1",
            (session.id,),
        ).fetchone()
        session_last = None if row is None else str(row["model"])
    conn.execute(
        "INSERT OR REPLACE INTO turn_routes (session_id, turn_id, workspace, day, model, kind,"
        " signal, claude_cost_usd, local_edits, steps_local, steps_claude, steps_failed,"
        " plan_cost_usd, steps_milk) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            session.id,
            turn_id,
            session.workspace_folder,
            today(),
            attributed_model(route.model, session_last, route.configured_model),
            route.kind,
            route.signal,
            route.claude_cost_usd,
            int(route.local_edits),
            route.steps_local,
            route.steps_claude,
            route.steps_failed,
            route.plan_cost_usd,
            route.steps_milk,
        ),
    )
