"""SQLite storage of sessions, their turn records and the workspace percepts; where each turn
went (the routing numbers) is `routes.py`'s, what processes tell each other `elsewhere.py`'s.

One database (WAL) shared by every server process of the user. A turn touches storage
twice: `begin_turn` stores the user's message pessimistically marked `error` (so a crash
mid-turn leaves a readable, never-`ok` record and no half turn), and `finish_turn` writes
the answers, the final status, the rebuilt bricks and the session row in one transaction.
Reads for the bricks walk records newest first in small pages, so their cost follows the
budget, not the length of the session.

Every failure of SQLite or of the file system (a full disk, a lock held too long, a corrupt
file) leaves this module as `StorageError`, so that callers have one thing to map to
`storage_failed`; damaged values in readable rows are handled by `rows.py`.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from milk_lsp.sessions import bricks
from milk_lsp.sessions.elsewhere import Elsewhere
from milk_lsp.sessions.model import (
    Agent,
    RecordStatus,
    Session,
    TurnRecord,
    utc_now,
)
from milk_lsp.sessions.reader import StorageError as StorageError
from milk_lsp.sessions.reader import StoreReader as StoreReader
from milk_lsp.sessions.reader import records_of
from milk_lsp.sessions.routes import RouteBook, write_route
from milk_lsp.sessions.rows import (
    HANDOFF_FIELDS,
    iso,
    session_from_row,
    tool_call_dict,
)
from milk_lsp.sessions.schema import MIGRATIONS, SCHEMA_VERSION
from milk_lsp.sessions.stats import TurnRoute
from milk_lsp.system.orphans import process_alive, process_start

logger = logging.getLogger(__name__)

BUSY_TIMEOUT_SECONDS = 10.0
OPEN_RETRY_SECONDS = 0.05


class SessionClaimed(RuntimeError):
    """Another live server process is running a turn on this session."""


DEFAULT_BRICK_BUDGET_CHARS = 12000
"""`contextBudgetChars` when the caller does not say (the settings' default)."""
BrickBuilder = Callable[["StoreReader", Session], tuple[str, str]]
"""Given read access inside the turn's transaction, returns (local, claude) summaries."""


class SessionStore:
    """All access to the database; thread-safe, one connection per store."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.RLock()
        self.elsewhere = Elsewhere(self)
        self.routes = RouteBook(self)
        """Cancel requests and live updates between the server processes on this store."""
        deadline = time.monotonic() + BUSY_TIMEOUT_SECONDS
        while True:
            try:
                path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                self._connect()
                return
            except (sqlite3.Error, OSError, StorageError) as exc:
                # Two connections opening a new database at once: one holds its read lock
                # while asking for the write lock the other holds, and SQLite answers
                # "locked" at once instead of waiting (its deadlock rule). Open again.
                if _locked(exc) and time.monotonic() < deadline:
                    time.sleep(OPEN_RETRY_SECONDS)
                    continue
                if isinstance(exc, StorageError):
                    raise
                raise StorageError(f"cannot open the session database {path}: {exc}") from exc

    def _connect(self) -> None:
        """`_conn` in WAL mode with the schema migrated; the connection closed on failure."""
        conn = sqlite3.connect(
            self.path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None, check_same_thread=False
        )
        try:
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
            self._conn = conn
            self._migrate()
        except BaseException:
            conn.close()
            raise

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    # ---- schema -----------------------------------------------------------------------

    def _migrate(self) -> None:
        with self.transaction() as conn:
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            if version > SCHEMA_VERSION:
                raise StorageError(
                    f"{self.path} was written by a newer milk-lsp (schema {version}); upgrade"
                )
            for target in range(version + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[target].split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {target}")

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE: writers from other processes queue on the lock, never interleave.
        A failure of SQLite or of the disk inside the transaction leaves as `StorageError`."""
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise StorageError(f"session database is unavailable: {exc}") from exc
            try:
                yield self._conn
                self._conn.execute("COMMIT")
            except (sqlite3.Error, OSError) as exc:
                self._rollback()
                raise StorageError(f"could not save to {self.path}: {exc}") from exc
            except BaseException:
                self._rollback()
                raise

    def _rollback(self) -> None:
        """Roll back what is still open. On some errors (SQLITE_FULL, SQLITE_IOERR, ...)
        SQLite has already rolled back by itself, and a second ROLLBACK would fail with
        "no transaction is active" and hide the error that matters."""
        if not self._conn.in_transaction:
            return
        try:
            self._conn.execute("ROLLBACK")
        except sqlite3.Error as exc:
            logger.warning("rollback in %s failed: %s", self.path, exc)

    def read(self, sql: str, args: Sequence[Any] = ()) -> list[sqlite3.Row]:
        with self._lock:
            try:
                return self._conn.execute(sql, args).fetchall()
            except sqlite3.Error as exc:
                raise StorageError(f"could not read {self.path}: {exc}") from exc

    # ---- sessions -----------------------------------------------------------------------

    def create_session(self, workspace: str, title: str = "", nonce: str = "") -> Session:
        now = utc_now()
        session = Session(
            id=str(uuid.uuid4()),
            workspace_folder=workspace,
            title=title,
            created_at=now,
            updated_at=now,
            escalation_nonce=nonce,
            bricks_built=True,
        )
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO sessions (id, workspace, title, state, active_agent, created_at,"
                " updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    session.id,
                    workspace,
                    title,
                    session.state.value,
                    session.active_agent.value,
                    iso(now),
                    iso(now),
                ),
            )
            self._write_session(conn, session)
        return session

    def get_session(self, session_id: str) -> Session | None:
        """The session, or None when there is none or its row cannot be shown at all."""
        rows = self.read("SELECT * FROM sessions WHERE id = ?", (session_id,))
        return session_from_row(rows[0]) if rows else None

    def list_sessions(self, workspaces: Sequence[str] | None = None) -> list[Session]:
        """Sessions, most recently used first; all of them when `workspaces` is None. A row
        that cannot be shown at all is left out (and logged)."""
        if workspaces is None:
            rows = self.read("SELECT * FROM sessions ORDER BY updated_at DESC, rowid DESC")
        elif not workspaces:
            return []
        else:
            marks = ",".join("?" for _ in workspaces)
            rows = self.read(
                f"SELECT * FROM sessions WHERE workspace IN ({marks})"
                " ORDER BY updated_at DESC, rowid DESC",
                list(workspaces),
            )
        sessions = (session_from_row(row) for row in rows)
        return [session for session in sessions if session is not None]

    def delete_session(self, session_id: str) -> bool:
        with self.transaction() as conn:
            conn.execute("DELETE FROM records WHERE session_id = ?", (session_id,))
            conn.execute("DELETE FROM turn_info WHERE session_id = ?", (session_id,))
            cursor = conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
            return cursor.rowcount > 0

    def save_session(self, session: Session) -> None:
        """Write the session's own fields (state, bricks, hand-off state); not its records."""
        with self.transaction() as conn:
            self._write_session(conn, session)

    def _write_session(self, conn: sqlite3.Connection, session: Session) -> None:
        handoff = {name: getattr(session, name) for name in HANDOFF_FIELDS}
        session.updated_at = utc_now()
        conn.execute(
            "UPDATE sessions SET title = ?, state = ?, active_agent = ?, created_at = ?,"
            " updated_at = ?, current_need = ?, current_need_set_at = ?, escalation_brief = ?,"
            " last_local_summary = ?, last_claude_summary = ?, handoff = ? WHERE id = ?",
            (
                session.title,
                session.state.value,
                session.active_agent.value,
                iso(session.created_at),
                iso(session.updated_at),
                session.current_need,
                session.current_need_set_at,
                session.escalation_brief,
                session.last_local_summary,
                session.last_claude_summary,
                json.dumps(handoff),
                session.id,
            ),
        )

    # ---- turns --------------------------------------------------------------------------

    def begin_turn(self, session: Session, user_record: TurnRecord) -> None:
        """Claim the session for this process and store the user's message, marked `error`
        until `finish_turn` says otherwise. Raises `SessionClaimed` when another live
        process holds the session (two editor windows on one folder)."""
        with self.transaction() as conn:
            claim = conn.execute(
                "SELECT pid, process_start FROM running_turns WHERE session_id = ?",
                (session.id,),
            ).fetchone()
            if (
                claim is not None
                and claim["pid"] != os.getpid()
                and process_alive(claim["pid"], claim["process_start"])
            ):
                raise SessionClaimed(
                    f"session {session.id} is running a turn in another milk-lsp process "
                    f"(pid {claim['pid']})"
                )
            # No live process runs a turn here: requests to cancel earlier turns are moot.
            conn.execute("DELETE FROM cancel_requests WHERE session_id = ?", (session.id,))
            conn.execute(
                "INSERT OR REPLACE INTO running_turns"
                " (session_id, turn_id, pid, process_start, started_at) VALUES (?, ?, ?, ?, ?)",
                (
                    session.id,
                    user_record.turn_id,
                    os.getpid(),
                    process_start(os.getpid()),
                    iso(utc_now()),
                ),
            )
            row = conn.execute(
                "SELECT turn_count FROM sessions WHERE id = ?", (session.id,)
            ).fetchone()
            if row is None:
                raise StorageError(f"session {session.id} no longer exists")
            session.turn_count = _turns_stored(conn, session.id, row["turn_count"]) + 1
            user_record.position = _last_position(conn, session.id) + 1
            user_record.status = RecordStatus.ERROR
            self._insert_record(conn, session.id, user_record)
            session.record_count = user_record.position
            if not session.title:
                session.title = _title_from(user_record.text)
            conn.execute(
                "UPDATE sessions SET record_count = ?, turn_count = ?, title = ?, updated_at = ?"
                " WHERE id = ?",
                (
                    session.record_count,
                    session.turn_count,
                    session.title,
                    iso(utc_now()),
                    session.id,
                ),
            )

    def finish_turn(
        self,
        session: Session,
        turn_id: str,
        status: RecordStatus,
        answers: Sequence[TurnRecord],
        rebuild_bricks: BrickBuilder | None = None,
        on_positions: Callable[[Session], None] | None = None,
        info: dict[str, Any] | None = None,
        *,
        budget_chars: int = DEFAULT_BRICK_BUDGET_CHARS,
        route: TurnRoute | None = None,
    ) -> None:
        """Store the answers and the final status, rebuild the bricks, save the session.

        The bricks are rebuilt here, inside the transaction, by `bricks.rebuild_bricks` with
        `budget_chars` (`rebuild_bricks` replaces it, for tests). `info` is how the turn
        ended (`turn_info`), kept so a reloaded chat shows it; `route` where it went, for
        the routing numbers (`turn_routes`).

        `on_positions` runs after the answers have their positions and before the bricks
        are rebuilt, so that the caller can update counters that depend on them.
        """
        with self.transaction() as conn:
            row = conn.execute("SELECT id FROM sessions WHERE id = ?", (session.id,)).fetchone()
            if row is None:
                raise StorageError(f"session {session.id} was deleted during the turn")
            position = _last_position(conn, session.id)
            for answer in answers:
                position += 1
                answer.position = position
                answer.status = status
                self._insert_record(conn, session.id, answer)
            conn.execute(
                "UPDATE records SET status = ? WHERE session_id = ? AND turn_id = ?",
                (status.value, session.id, turn_id),
            )
            session.record_count = position
            conn.execute(
                "UPDATE sessions SET record_count = ? WHERE id = ?", (position, session.id)
            )
            if on_positions is not None:
                on_positions(session)
            if info is not None:
                _write_turn_info(conn, session.id, turn_id, info)
            if route is not None:
                write_route(conn, session, turn_id, route)
            _release_claim(conn, session.id, turn_id)
            reader = StoreReader(conn, self.path)
            if rebuild_bricks is None:
                local, claude = bricks.rebuild_bricks(reader, session, budget_chars)
            else:
                local, claude = rebuild_bricks(reader, session)
            session.last_local_summary = local
            session.last_claude_summary = claude
            session.bricks_built = True
            self._write_session(conn, session)

    def rebuild_bricks(self, session: Session, budget_chars: int) -> None:
        """Render both bricks again from the records and save them (a turn was undone:
        what it did is no longer presented as standing)."""
        with self.transaction() as conn:
            local, claude = bricks.rebuild_bricks(
                StoreReader(conn, self.path), session, budget_chars
            )
            session.last_local_summary = local
            session.last_claude_summary = claude
            session.bricks_built = True
            self._write_session(conn, session)

    def release_turn(self, session_id: str, turn_id: str) -> None:
        """Give up this process's claim on a session (when `finish_turn` could not run)."""
        with self.transaction() as conn:
            _release_claim(conn, session_id, turn_id)

    # ---- how turns ended ---------------------------------------------------------------

    def turn_infos(self, session_id: str, turn_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The stored `info` of those turns (turns without one, or unreadable, are left out)."""
        found: dict[str, dict[str, Any]] = {}
        for start in range(0, len(turn_ids), 500):
            chunk = list(turn_ids[start : start + 500])
            marks = ",".join("?" * len(chunk))
            rows = self.read(
                "SELECT turn_id, info FROM turn_info"
                f" WHERE session_id = ? AND turn_id IN ({marks})",
                [session_id, *chunk],
            )
            for row in rows:
                info = _json_object(row["info"])
                if info is not None:
                    found[str(row["turn_id"])] = info
        return found

    def turn_infos_after(self, session_id: str, turn_id: str) -> list[dict[str, Any]]:
        """The infos of the session's turns stored after `turn_id`, oldest first."""
        rows = self.read(
            "SELECT info FROM turn_info WHERE session_id = ? AND rowid >"
            " (SELECT rowid FROM turn_info WHERE session_id = ? AND turn_id = ?) ORDER BY rowid",
            (session_id, session_id, turn_id),
        )
        return [info for info in (_json_object(row["info"]) for row in rows) if info is not None]

    def workspace_turn_infos(self, workspace: str) -> Iterator[dict[str, Any]]:
        """The infos of every stored turn of the workspace's sessions (for pruning the kept
        copies of files that no turn refers to any more)."""
        rows = self.read(
            "SELECT turn_info.info FROM turn_info JOIN sessions"
            " ON sessions.id = turn_info.session_id WHERE sessions.workspace = ?",
            (workspace,),
        )
        for row in rows:
            info = _json_object(row["info"])
            if info is not None:
                yield info

    def set_turn_info(self, session_id: str, turn_id: str, info: dict[str, Any]) -> None:
        """Replace a turn's info; one marked `undone` (by `milk/turn/undo`) marks its routing
        row too, so that the numbers count its local edits as undone."""
        with self.transaction() as conn:
            _write_turn_info(conn, session_id, turn_id, info)
            if info.get("undone") is True:
                conn.execute(
                    "UPDATE turn_routes SET undone = 1 WHERE session_id = ? AND turn_id = ?",
                    (session_id, turn_id),
                )

    def _insert_record(self, conn: sqlite3.Connection, session_id: str, record: TurnRecord) -> None:
        conn.execute(
            "INSERT INTO records (session_id, position, turn_id, role, agent, text, tool_calls,"
            " status, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                session_id,
                record.position,
                record.turn_id,
                record.role.value,
                record.agent.value,
                record.text,
                json.dumps([tool_call_dict(call) for call in record.tool_calls]),
                record.status.value,
                iso(record.created_at),
            ),
        )

    def recent_records(self, session_id: str, limit: int) -> list[TurnRecord]:
        """The newest `limit` records, oldest first."""
        rows = self.read(
            "SELECT * FROM records WHERE session_id = ? ORDER BY position DESC LIMIT ?",
            (session_id, limit),
        )
        return list(records_of(reversed(rows)))

    def recent_turn_records(self, session_id: str, turn_limit: int) -> list[TurnRecord]:
        """All records of the newest `turn_limit` turns, oldest first."""
        rows = self.read(
            "SELECT * FROM records WHERE session_id = ? AND position >= coalesce(("
            " SELECT position FROM records WHERE session_id = ? AND role = 'user'"
            " ORDER BY position DESC LIMIT 1 OFFSET ?), 0) ORDER BY position",
            (session_id, session_id, max(turn_limit - 1, 0)),
        )
        return list(records_of(rows))

    def reader(self) -> StoreReader:
        return StoreReader(self._conn, self.path)

    # ---- percepts -----------------------------------------------------------------------

    def percepts(self, workspace: str) -> list[str]:
        rows = self.read(
            "SELECT text FROM percepts WHERE workspace = ? ORDER BY rowid", (workspace,)
        )
        return [str(row["text"]) for row in rows]

    def add_percepts(self, workspace: str, texts: Sequence[str], agent: Agent) -> int:
        """Remember facts for the workspace; returns how many were new."""
        added = 0
        with self.transaction() as conn:
            for text in texts:
                cursor = conn.execute(
                    "INSERT OR IGNORE INTO percepts (workspace, text, agent, created_at)"
                    " VALUES (?, ?, ?, ?)",
                    (workspace, text, agent.value, iso(utc_now())),
                )
                added += cursor.rowcount
        return added


def _locked(exc: BaseException) -> bool:
    """SQLite's "database is locked", raised as is or as the cause of a `StorageError`."""
    cause = exc if isinstance(exc, sqlite3.OperationalError) else exc.__cause__
    return isinstance(cause, sqlite3.OperationalError) and "locked" in str(cause)


def _write_turn_info(
    conn: sqlite3.Connection, session_id: str, turn_id: str, info: dict[str, Any]
) -> None:
    conn.execute(
        "INSERT INTO turn_info (session_id, turn_id, info) VALUES (?, ?, ?)"
        " ON CONFLICT (session_id, turn_id) DO UPDATE SET info = excluded.info",
        (session_id, turn_id, json.dumps(info, ensure_ascii=False)),
    )


def _json_object(raw: Any) -> dict[str, Any] | None:
    """A stored JSON object, or None (logged) when the row cannot be read."""
    try:
        value = json.loads(raw)
    except (TypeError, ValueError):
        logger.warning("a turn_info row cannot be read; it is left out")
        return None
    return value if isinstance(value, dict) else None


def _release_claim(conn: sqlite3.Connection, session_id: str, turn_id: str) -> None:
    """Drop the turn's claim on the session and any request to cancel that turn."""
    conn.execute(
        "DELETE FROM running_turns WHERE session_id = ? AND turn_id = ?", (session_id, turn_id)
    )
    conn.execute(
        "DELETE FROM cancel_requests WHERE session_id = ? AND turn_id = ?", (session_id, turn_id)
    )


def _last_position(conn: sqlite3.Connection, session_id: str) -> int:
    """The position of the session's last record. Taken from the records themselves (not
    the session's `record_count`, which a damaged row may get wrong), so a new record never
    collides with a stored one."""
    row = conn.execute(
        "SELECT max(position) FROM records WHERE session_id = ? AND typeof(position) = 'integer'",
        (session_id,),
    ).fetchone()
    return int(row[0] or 0)


def _turns_stored(conn: sqlite3.Connection, session_id: str, turn_count: Any) -> int:
    """The session's `turn_count`, or when that is damaged, its user records counted."""
    if type(turn_count) is int and turn_count >= 0:
        return turn_count
    row = conn.execute(
        "SELECT count(*) FROM records WHERE session_id = ? AND role = 'user'", (session_id,)
    ).fetchone()
    return int(row[0])


def _title_from(text: str) -> str:
    line = " ".join(text.split())
    return line[:60] + ("…" if len(line) > 60 else "")
