"""Read access to the stored records, handed to the brick rebuild inside a turn's
transaction (`StoreReader`): paged, newest first, with the turns the user undid. Also what
a read or write of the database raises (`StorageError`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from milk_lsp.sessions.model import Agent, TurnRecord
from milk_lsp.sessions.rows import record_from_row

PAGE_RECORDS = 64


class StorageError(RuntimeError):
    """The database could not be read or written (disk full, locked, corrupt)."""


class StoreReader:
    """Read access handed to the brick rebuild inside `finish_turn`'s transaction."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self._conn = conn
        self._path = path

    def _rows(self, sql: str, args: Sequence[Any]) -> list[sqlite3.Row]:
        try:
            return self._conn.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise StorageError(f"could not read {self._path}: {exc}") from exc

    def last_assistant_position(self, session_id: str, agent: Agent) -> int:
        rows = self._rows(
            "SELECT max(position) FROM records WHERE session_id = ? AND role = 'assistant'"
            " AND agent = ? AND typeof(position) = 'integer'",
            (session_id, agent.value),
        )
        return int(rows[0][0] or 0)

    def undone_turns(self, session_id: str) -> frozenset[str]:
        """The session's turns the user undid (their `turn_info` says so)."""
        rows = self._rows(
            "SELECT turn_id FROM turn_info WHERE session_id = ?"
            " AND json_valid(info) AND json_extract(info, '$.undone') = 1",
            (session_id,),
        )
        return frozenset(str(row[0]) for row in rows)

    def records_newest_first(self, session_id: str, after_position: int) -> Iterator[TurnRecord]:
        """Records with position > after_position, newest first, fetched a page at a time."""
        upper = None
        while True:
            if upper is None:
                rows = self._rows(
                    "SELECT * FROM records WHERE session_id = ? AND position > ?"
                    " ORDER BY position DESC LIMIT ?",
                    (session_id, after_position, PAGE_RECORDS),
                )
            else:
                rows = self._rows(
                    "SELECT * FROM records WHERE session_id = ? AND position > ? AND position < ?"
                    " ORDER BY position DESC LIMIT ?",
                    (session_id, after_position, upper, PAGE_RECORDS),
                )
            if not rows:
                return
            yield from records_of(rows)
            upper = rows[-1]["position"]


def records_of(rows: Iterable[sqlite3.Row]) -> Iterator[TurnRecord]:
    """The records of readable rows; a row that cannot be shown at all is left out."""
    for row in rows:
        record = record_from_row(row)
        if record is not None:
            yield record
