"""What server processes sharing one session database tell each other: requests to cancel
a turn another process runs, and the live updates of every running turn.

Each door runs a server process of its own (an editor window, `milk-lsp chat`), all on one
store. A turn's `milk/update`s are appended to `live_updates` as they stream (in small
batches) so that the other processes on the same workspace folder can relay them to their
clients; rows are kept a few minutes, long enough for any poller to read them.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from milk_lsp.sessions.database import Database
from milk_lsp.sessions.model import utc_now
from milk_lsp.sessions.rows import iso
from milk_lsp.system.orphans import process_alive, process_start

LIVE_KEEP_SECONDS = 300.0
"""How long a live update stays in the store after it was written."""
LIVE_PAGE = 500
"""Updates one poll reads at most (the rest on the next poll)."""


@dataclass(frozen=True)
class LiveUpdate:
    """One `milk/update` of a turn, as its process published it."""

    id: int
    workspace: str
    payload: dict[str, Any]


class Elsewhere:
    """The store's tables for other processes: cancel requests and live updates."""

    def __init__(self, store: Database) -> None:
        self._store = store

    # ---- cancelling a turn run by another process -------------------------------------

    def request_cancel(self, session_id: str) -> str | None:
        """Ask the live process that runs a turn on the session to cancel it (it polls
        `cancel_requested`). Returns that turn's id, or None when no other live process holds
        the session: then there is nothing to cancel elsewhere."""
        with self._store.transaction() as conn:
            claim = conn.execute(
                "SELECT turn_id, pid, process_start FROM running_turns WHERE session_id = ?",
                (session_id,),
            ).fetchone()
            if (
                claim is None
                or claim["pid"] == os.getpid()
                or not process_alive(claim["pid"], claim["process_start"])
            ):
                return None
            turn_id = str(claim["turn_id"])
            conn.execute(
                "INSERT OR REPLACE INTO cancel_requests (session_id, turn_id, requested_at)"
                " VALUES (?, ?, ?)",
                (session_id, turn_id, iso(utc_now())),
            )
            return turn_id

    def cancel_requested(self, session_id: str, turn_id: str) -> bool:
        """Whether another process asked to cancel this turn."""
        rows = self._store.read(
            "SELECT 1 FROM cancel_requests WHERE session_id = ? AND turn_id = ?",
            (session_id, turn_id),
        )
        return bool(rows)

    def turn_claimed(self, session_id: str, turn_id: str) -> bool:
        """Whether a live process still holds the session for this turn (the requester of a
        cancel waits for this to end; a process that died holds nothing)."""
        rows = self._store.read(
            "SELECT pid, process_start FROM running_turns WHERE session_id = ? AND turn_id = ?",
            (session_id, turn_id),
        )
        return bool(rows) and process_alive(rows[0]["pid"], rows[0]["process_start"])

    # ---- live updates -----------------------------------------------------------------

    def watch(self, origin: str, workspaces: Sequence[str]) -> None:
        """Say that `origin` (this process) shows the turns of `workspaces` to its client:
        the other processes then write their turns' updates for it."""
        with self._store.transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO live_watchers (origin, pid, process_start, workspaces)"
                " VALUES (?, ?, ?, ?)",
                (origin, os.getpid(), process_start(os.getpid()), json.dumps(list(workspaces))),
            )

    def unwatch(self, origin: str) -> None:
        with self._store.transaction() as conn:
            conn.execute("DELETE FROM live_watchers WHERE origin = ?", (origin,))

    def watched(self, origin: str, workspace: str) -> bool:
        """Whether a live process other than `origin` shows `workspace`'s turns (with none,
        a turn's updates are not written: one door alone adds no writes to its turns)."""
        rows = self._store.read(
            "SELECT pid, process_start, workspaces FROM live_watchers WHERE origin != ?",
            (origin,),
        )
        for row in rows:
            try:
                folders = json.loads(row["workspaces"])
            except (TypeError, ValueError):
                continue
            if workspace in folders and process_alive(row["pid"], row["process_start"]):
                return True
        return False

    def publish(self, origin: str, updates: Sequence[tuple[str, dict[str, Any]]]) -> None:
        """Append `(workspace, payload)` updates of `origin` (one server process); at a
        turn's end, updates older than `LIVE_KEEP_SECONDS` go in the same transaction."""
        now = time.time()
        with self._store.transaction() as conn:
            conn.executemany(
                "INSERT INTO live_updates (origin, workspace, session_id, turn_id, payload, at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (
                        origin,
                        workspace,
                        str(payload.get("sessionId", "")),
                        str(payload.get("turnId", "")),
                        json.dumps(payload, ensure_ascii=False),
                        now,
                    )
                    for workspace, payload in updates
                ],
            )
            if any(payload.get("kind") == "turn_ended" for _, payload in updates):
                conn.execute("DELETE FROM live_updates WHERE at < ?", (now - LIVE_KEEP_SECONDS,))

    def live_start(self) -> int:
        """Where a new watcher starts reading: at the first update of a turn some live
        process still runs (a door opened mid-turn sees it whole), else after the last."""
        running = self._store.read(
            "SELECT min(u.id) AS first, r.pid, r.process_start FROM live_updates u"
            " JOIN running_turns r ON r.session_id = u.session_id AND r.turn_id = u.turn_id"
            " GROUP BY r.session_id"
        )
        firsts = [
            int(row["first"])
            for row in running
            if row["first"] is not None and process_alive(row["pid"], row["process_start"])
        ]
        if firsts:
            return min(firsts) - 1
        last = self._store.read("SELECT max(id) FROM live_updates")[0][0]
        return int(last or 0)

    def live_after(
        self, after_id: int, origin: str, workspaces: Sequence[str]
    ) -> tuple[int, list[LiveUpdate]]:
        """Updates after `after_id` that other processes published on `workspaces`, oldest
        first, and the last id read (the poller's next `after_id`: own and unreadable rows
        count as read)."""
        if not workspaces:
            return after_id, []
        marks = ",".join("?" for _ in workspaces)
        rows = self._store.read(
            f"SELECT id, workspace, origin, payload FROM live_updates WHERE id > ?"
            f" AND workspace IN ({marks}) ORDER BY id LIMIT ?",
            (after_id, *workspaces, LIVE_PAGE),
        )
        updates: list[LiveUpdate] = []
        for row in rows:
            after_id = max(after_id, int(row["id"]))
            if row["origin"] == origin:
                continue
            try:
                payload = json.loads(row["payload"])
            except (TypeError, ValueError):
                payload = None
            if isinstance(payload, dict):
                updates.append(LiveUpdate(int(row["id"]), str(row["workspace"]), payload))
        return after_id, updates
