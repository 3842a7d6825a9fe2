"""The store under faults: a full disk (a real SQLITE_FULL) and damaged rows (raw SQL).

The full disk runs two ways: an 8 MB tmpfs filled up where the machine lets us mount one (root in a
sandbox), and SQLite's `PRAGMA max_page_count` on the store's own connection, which makes
real SQLite answer SQLITE_FULL at a chosen size anywhere.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from milk_lsp.sessions.model import (
    Agent,
    RecordStatus,
    Role,
    Session,
    SessionState,
    ToolCallRecord,
    TurnRecord,
)
from milk_lsp.sessions.rows import EPOCH
from milk_lsp.sessions.store import SessionStore, StorageError, StoreReader

BIG_ANSWER = "y" * 1_500_000
HEADROOM = 96 * 1024


def _no_bricks(reader: StoreReader, session: Session) -> tuple[str, str]:
    return session.last_local_summary, session.last_claude_summary


def mount_tmpfs(where: Path, size: str) -> bool:
    """Mount a tmpfs of `size` at `where`; False when the machine does not allow it."""
    where.mkdir(parents=True, exist_ok=True)
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(where)],
            capture_output=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def unmount(where: Path) -> None:
    subprocess.run(["umount", "-l", str(where)], capture_output=True, timeout=10)


def fill(folder: Path, leave: int) -> Path:
    """Take all of the file system's free space but `leave` bytes; returns the filler."""
    stats = os.statvfs(folder)
    free = stats.f_bavail * stats.f_frsize
    filler = folder / "filler"
    with filler.open("ab") as out:
        out.write(b"\0" * max(free - leave, 0))
    return filler


class FullDisk:
    """Makes the store's storage full, then frees it again, by one of two mechanisms."""

    def __init__(self, mechanism: str, folder: Path) -> None:
        self.mechanism = mechanism
        self.folder = folder
        self._filler: Path | None = None

    def fill(self, store: SessionStore, leave: int) -> None:
        if self.mechanism == "tmpfs":
            self._filler = fill(self.folder, leave)
            return
        conn = store._conn  # the limit is per connection: it must be the store's own
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages + leave // page_size}")

    def free(self, store: SessionStore) -> None:
        if self._filler is not None:
            self._filler.unlink()
            self._filler = None
        else:
            store._conn.execute("PRAGMA max_page_count = 1073741823")


@pytest.fixture(params=["tmpfs", "max_page_count"])
def full_disk(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[FullDisk]:
    folder = tmp_path / "small"
    if request.param == "tmpfs":
        if not mount_tmpfs(folder, "8m"):
            pytest.skip("mounting a tmpfs is not permitted here (max_page_count covers it)")
        try:
            yield FullDisk("tmpfs", folder)
        finally:
            unmount(folder)
    else:
        folder.mkdir()
        yield FullDisk("max_page_count", folder)


def _raw(store: SessionStore) -> sqlite3.Connection:
    """A second, ordinary connection to the same file: what another tool would write with."""
    conn = sqlite3.connect(store.path, isolation_level=None)
    conn.row_factory = sqlite3.Row
    return conn


# ---- full disk -------------------------------------------------------------------------


def test_full_disk_at_the_end_of_a_turn_is_a_storage_error(full_disk: FullDisk) -> None:
    store = SessionStore(full_disk.folder / "db" / "sessions.sqlite3")
    session = store.create_session("/ws", "full")
    full_disk.fill(store, HEADROOM)
    store.begin_turn(session, TurnRecord("t-1", Role.USER, Agent.LOCAL, "write a lot"))
    answer = TurnRecord("t-1", Role.ASSISTANT, Agent.LOCAL, BIG_ANSWER)

    # before the fix: sqlite3.OperationalError "cannot rollback - no transaction is active"
    with pytest.raises(StorageError, match="database or disk is full"):
        store.finish_turn(session, "t-1", RecordStatus.OK, [answer], _no_bricks)

    # the store still works on the full disk: the claim can be given up, the session read
    store.release_turn(session.id, "t-1")
    with _raw(store) as raw:
        assert raw.execute("SELECT count(*) FROM running_turns").fetchone()[0] == 0
    records = store.recent_turn_records(session.id, 10)
    assert [(r.role, r.text, r.status) for r in records] == [
        (Role.USER, "write a lot", RecordStatus.ERROR)
    ]

    full_disk.free(store)
    session = store.get_session(session.id)
    assert session is not None
    store.begin_turn(session, TurnRecord("t-2", Role.USER, Agent.LOCAL, "again"))
    reply = TurnRecord("t-2", Role.ASSISTANT, Agent.LOCAL, BIG_ANSWER)
    store.finish_turn(session, "t-2", RecordStatus.OK, [reply], _no_bricks)
    records = store.recent_turn_records(session.id, 10)
    assert [(r.text[:5], r.status, r.position) for r in records] == [
        ("write", RecordStatus.ERROR, 1),
        ("again", RecordStatus.OK, 2),
        ("yyyyy", RecordStatus.OK, 3),
    ]


def test_full_disk_at_the_start_of_a_turn_stores_nothing(full_disk: FullDisk) -> None:
    store = SessionStore(full_disk.folder / "db" / "sessions.sqlite3")
    session = store.create_session("/ws", "full")
    full_disk.fill(store, 0)
    message = TurnRecord("t-1", Role.USER, Agent.LOCAL, "x" * 400_000)
    with pytest.raises(StorageError, match="database or disk is full"):
        store.begin_turn(session, message)
    full_disk.free(store)
    with _raw(store) as raw:  # rolled back whole: no claim, no record, no count
        assert raw.execute("SELECT count(*) FROM running_turns").fetchone()[0] == 0
        assert raw.execute("SELECT count(*) FROM records").fetchone()[0] == 0
    stored = store.get_session(session.id)
    assert stored is not None and stored.turn_count == 0


def test_a_closed_database_is_a_storage_error(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions.sqlite3")
    session = store.create_session("/ws")
    store.close()
    with pytest.raises(StorageError):
        store.list_sessions()
    with pytest.raises(StorageError):
        store.begin_turn(session, TurnRecord("t", Role.USER, Agent.LOCAL, "hi"))
    with pytest.raises(StorageError):
        list(store.reader().records_newest_first(session.id, 0))


# ---- damaged rows ----------------------------------------------------------------------


def _session_with_a_turn(store: SessionStore, workspace: str = "/ws") -> Session:
    session = store.create_session(workspace, "damaged")
    store.begin_turn(session, TurnRecord("t-1", Role.USER, Agent.LOCAL, "read a.py"))
    call = ToolCallRecord("c1", "read_file", {"path": "a.py"}, "print()")
    reply = TurnRecord("t-1", Role.ASSISTANT, Agent.LOCAL, "it prints", tool_calls=[call])
    store.finish_turn(session, "t-1", RecordStatus.OK, [reply], _no_bricks)
    return session


def test_damaged_session_fields_fall_back_to_defaults_and_are_named(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = SessionStore(tmp_path / "sessions.sqlite3")
    healthy = _session_with_a_turn(store)
    damaged = _session_with_a_turn(store)
    with _raw(store) as raw:
        raw.execute(
            "UPDATE sessions SET state = 'bogus', active_agent = 'robot',"
            " created_at = 'yesterday', turn_count = 'many', current_need = X'FF00',"
            " handoff = '{not json' WHERE id = ?",
            (damaged.id,),
        )
    with caplog.at_level(logging.WARNING):
        listed = store.list_sessions(["/ws"])
    assert {s.id for s in listed} == {healthy.id, damaged.id}
    got = next(s for s in listed if s.id == damaged.id)
    assert got.damaged == [
        "state",
        "activeAgent",
        "turnCount",
        "createdAt",
        "currentNeed",
        "handoff",
    ]
    assert got.state is SessionState.ROUTING and got.active_agent is Agent.LOCAL
    assert got.created_at == got.updated_at  # the readable time stands in for the other
    assert got.title == "damaged" and got.current_need == ""
    assert next(s for s in listed if s.id == healthy.id).damaged == []
    assert "'bogus'" in caplog.text and "'yesterday'" in caplog.text

    caplog.clear()
    with caplog.at_level(logging.WARNING):
        store.list_sessions(["/ws"])
    assert caplog.text == ""  # warned once per process, not on every list


def test_a_session_that_cannot_be_shown_is_left_out(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions.sqlite3")
    kept = store.create_session("/ws", "kept")
    with _raw(store) as raw:
        raw.execute(
            "INSERT INTO sessions (id, workspace, created_at, updated_at)"
            " VALUES (NULL, '/ws', 'x', 'x'), ('rel', 'not/absolute', 'x', 'x'),"
            " ('blob', X'00', 'x', 'x')"
        )
    assert [s.id for s in store.list_sessions()] == [kept.id]
    assert store.get_session("rel") is None


def test_a_turn_on_a_damaged_session_writes_it_back_whole(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions.sqlite3")
    session = _session_with_a_turn(store)
    with _raw(store) as raw:
        raw.execute(
            "UPDATE sessions SET state = 'bogus', created_at = 'yesterday',"
            " record_count = 'lots', turn_count = -3, handoff = '{\"claude_turn_count\": \"x\"}'"
            " WHERE id = ?",
            (session.id,),
        )
    loaded = store.get_session(session.id)
    assert loaded is not None
    assert loaded.damaged == ["state", "turnCount", "recordCount", "createdAt", "handoff"]
    store.begin_turn(loaded, TurnRecord("t-2", Role.USER, Agent.LOCAL, "more"))
    # positions follow the stored records, not the damaged count: no collision
    assert loaded.record_count == 3
    assert loaded.turn_count == 2  # the damaged count is recounted from the user records
    reply = TurnRecord("t-2", Role.ASSISTANT, Agent.LOCAL, "done")
    store.finish_turn(loaded, "t-2", RecordStatus.OK, [reply], _no_bricks)
    again = store.get_session(session.id)
    assert again is not None
    assert again.damaged == []
    assert (again.state, again.turn_count, again.record_count) == (SessionState.ROUTING, 2, 4)
    assert again.created_at == loaded.created_at


def test_damaged_records_keep_their_text(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions.sqlite3")
    session = _session_with_a_turn(store)
    store.begin_turn(session, TurnRecord("t-2", Role.USER, Agent.LOCAL, "second"))
    reply = TurnRecord("t-2", Role.ASSISTANT, Agent.LOCAL, "second answer")
    store.finish_turn(session, "t-2", RecordStatus.OK, [reply], _no_bricks)
    with _raw(store) as raw:
        raw.execute(
            "UPDATE records SET tool_calls = 'not json' WHERE position = 2 AND session_id = ?",
            (session.id,),
        )
        raw.execute(
            "UPDATE records SET created_at = 'yesterday', status = 'bogus', agent = 'robot'"
            " WHERE position = 3 AND session_id = ?",
            (session.id,),
        )
        raw.execute(
            "UPDATE records SET role = 'narrator' WHERE position = 4 AND session_id = ?",
            (session.id,),
        )
        raw.execute(
            'UPDATE records SET tool_calls = \'[{"id": "c", "output": 7}, 5]\''
            " WHERE position = 1 AND session_id = ?",
            (session.id,),
        )
    records = store.recent_turn_records(session.id, 10)
    assert [(r.position, r.text, r.damaged) for r in records] == [
        (1, "read a.py", ["toolCalls"]),
        (2, "it prints", ["toolCalls"]),
        (3, "second", ["agent", "status", "createdAt"]),
    ]  # position 4 (role unknown) is left out
    first, answer, second = records
    assert [(c.tool_call_id, c.output) for c in first.tool_calls] == [("c", "7")]
    assert answer.tool_calls == []
    assert (second.agent, second.status, second.created_at) == (
        Agent.LOCAL,
        RecordStatus.ERROR,
        EPOCH,
    )
    newest_first = list(store.reader().records_newest_first(session.id, 0))
    assert [r.position for r in newest_first] == [3, 2, 1]
    assert [r.position for r in store.recent_records(session.id, 10)] == [1, 2, 3]
