"""SQLite storage: sessions per folder, turns in one transaction, migrations, two processes."""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from milk_lsp.config import MilkConfig
from milk_lsp.sessions.model import (
    Agent,
    RecordStatus,
    Role,
    SessionState,
    ToolCallRecord,
    TurnRecord,
)
from milk_lsp.sessions.schema import SCHEMA_VERSION
from milk_lsp.sessions.service import Sessions
from milk_lsp.sessions.store import (
    SessionClaimed,
    SessionStore,
    StorageError,
    StoreReader,
)


def _no_bricks(reader: StoreReader, session) -> tuple[str, str]:
    return session.last_local_summary, session.last_claude_summary


def _store(tmp_path: Path) -> SessionStore:
    return SessionStore(tmp_path / "db" / "sessions.sqlite3")


def _turn(
    store: SessionStore,
    session,
    text: str,
    answer: str,
    agent: Agent = Agent.LOCAL,
    status: RecordStatus = RecordStatus.OK,
    calls=None,
) -> str:
    turn_id = f"t-{session.turn_count + 1}"
    store.begin_turn(session, TurnRecord(turn_id, Role.USER, agent, text))
    reply = TurnRecord(turn_id, Role.ASSISTANT, agent, answer, tool_calls=calls or [])
    store.finish_turn(session, turn_id, status, [reply], _no_bricks)
    return turn_id


def test_sessions_per_workspace_most_recent_first(tmp_path: Path) -> None:
    store = _store(tmp_path)
    a1 = store.create_session("/ws/a", "first")
    store.create_session("/ws/b", "other")
    a2 = store.create_session("/ws/a", "second")
    _turn(store, a1, "hi", "hello")
    listed = store.list_sessions(["/ws/a"])
    assert [s.id for s in listed] == [a1.id, a2.id]
    assert len(store.list_sessions(None)) == 3
    assert store.list_sessions([]) == []


def test_turn_round_trip_with_tool_calls(tmp_path: Path) -> None:
    store = _store(tmp_path)
    session = store.create_session("/ws", "")
    call = ToolCallRecord("c1", "read_file", {"path": "a.py"}, "print(1)", False)
    turn_id = _turn(store, session, "read a.py", "it prints 1", calls=[call])
    records = store.recent_turn_records(session.id, 10)
    assert [(r.role, r.status) for r in records] == [
        (Role.USER, RecordStatus.OK),
        (Role.ASSISTANT, RecordStatus.OK),
    ]
    assert records[1].tool_calls == [call]
    assert {r.turn_id for r in records} == {turn_id}
    loaded = store.get_session(session.id)
    assert loaded is not None
    assert (loaded.turn_count, loaded.record_count, loaded.title) == (1, 2, "read a.py")


def test_crash_between_begin_and_finish_leaves_no_ok_record(tmp_path: Path) -> None:
    store = _store(tmp_path)
    session = store.create_session("/ws", "")
    _turn(store, session, "one", "answer one")
    store.begin_turn(session, TurnRecord("t-crash", Role.USER, Agent.LOCAL, "two"))
    store.close()  # the process dies here
    reopened = _store(tmp_path)
    records = reopened.recent_turn_records(session.id, 10)
    assert [r.text for r in records] == ["one", "answer one", "two"]
    assert records[-1].status is RecordStatus.ERROR
    assert all(r.status is RecordStatus.OK for r in records[:2])


def test_failed_finish_rolls_back_the_whole_turn(tmp_path: Path) -> None:
    store = _store(tmp_path)
    session = store.create_session("/ws", "")
    store.begin_turn(session, TurnRecord("t1", Role.USER, Agent.LOCAL, "q"))

    def broken(reader, session):
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        store.finish_turn(
            session,
            "t1",
            RecordStatus.OK,
            [TurnRecord("t1", Role.ASSISTANT, Agent.LOCAL, "a")],
            broken,
        )
    records = store.recent_turn_records(session.id, 10)
    assert [(r.text, r.status) for r in records] == [("q", RecordStatus.ERROR)]


def test_records_newest_first_pages_and_boundary(tmp_path: Path) -> None:
    store = _store(tmp_path)
    session = store.create_session("/ws", "")
    for i in range(100):
        _turn(store, session, f"q{i}", f"a{i}")
    reader = store.reader()
    texts = [r.text for r in reader.records_newest_first(session.id, 150)]
    assert texts == [f"{kind}{i}" for i in range(99, 74, -1) for kind in ("a", "q")]
    assert reader.last_assistant_position(session.id, Agent.LOCAL) == 200
    assert reader.last_assistant_position(session.id, Agent.CLAUDE) == 0


def test_session_fields_round_trip(tmp_path: Path) -> None:
    store = _store(tmp_path)
    session = store.create_session("/ws", "t", nonce="abc123")
    session.current_need = "fix the parser"
    session.current_need_set_at = 3
    session.claude_session_id = "sid-1"
    session.state = SessionState.ESCALATION_WAITING
    session.local_turns_since_claude = 4
    session.user_escalated = True
    store.save_session(session)
    loaded = store.get_session(session.id)
    assert loaded is not None
    for name in (
        "current_need",
        "current_need_set_at",
        "claude_session_id",
        "state",
        "local_turns_since_claude",
        "user_escalated",
        "escalation_nonce",
    ):
        assert getattr(loaded, name) == getattr(session, name), name


def test_percepts_per_workspace_without_duplicates(tmp_path: Path) -> None:
    store = _store(tmp_path)
    assert store.add_percepts("/ws", ["uses pytest", "uses pytest", "tabs"], Agent.LOCAL) == 2
    assert store.add_percepts("/ws", ["tabs"], Agent.CLAUDE) == 0
    assert store.percepts("/ws") == ["uses pytest", "tabs"]
    assert store.percepts("/other") == []


def test_delete_session(tmp_path: Path) -> None:
    store = _store(tmp_path)
    session = store.create_session("/ws", "")
    _turn(store, session, "q", "a")
    assert store.delete_session(session.id)
    assert store.get_session(session.id) is None
    assert store.recent_records(session.id, 10) == []
    assert not store.delete_session(session.id)


def test_v1_database_from_before_bricks_migrates(tmp_path: Path) -> None:
    """A session stored before the brick columns existed loads with empty bricks."""
    path = tmp_path / "db" / "sessions.sqlite3"
    path.parent.mkdir()
    from milk_lsp.sessions import schema

    conn = sqlite3.connect(path)
    conn.executescript(schema.MIGRATIONS[1])
    conn.execute(
        "INSERT INTO sessions (id, workspace, title, created_at, updated_at, turn_count,"
        " record_count) VALUES ('old', '/ws', 'old one', '2026-01-01T00:00:00Z',"
        " '2026-01-01T00:00:00Z', 1, 2)"
    )
    conn.execute(
        "INSERT INTO records VALUES ('old', 1, 't1', 'user', 'local', 'fix typo', '[]', 'ok',"
        " '2026-01-01T00:00:00Z')"
    )
    conn.execute(
        "INSERT INTO records VALUES ('old', 2, 't1', 'assistant', 'local', 'done', '[]', 'ok',"
        " '2026-01-01T00:00:00Z')"
    )
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    store = SessionStore(path)
    version = store._conn.execute("PRAGMA user_version").fetchone()[0]
    assert version == SCHEMA_VERSION
    session = store.get_session("old")
    assert session is not None
    assert not session.bricks_built
    assert (session.current_need, session.last_local_summary, session.escalation_nonce) == (
        "",
        "",
        "",
    )
    assert [r.text for r in store.recent_turn_records("old", 5)] == ["fix typo", "done"]


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "sessions.sqlite3"
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()
    with pytest.raises(StorageError, match="newer milk-lsp"):
        SessionStore(path)


def test_unwritable_location_is_a_storage_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StorageError):
        SessionStore(blocker / "sub" / "sessions.sqlite3")


def test_stores_opening_a_new_database_at_once_all_open(tmp_path: Path) -> None:
    """Two connections creating the database together: SQLite refuses one at once ("locked",
    its deadlock rule) and the opening tries again, so `milk/stats` beside another request
    on a fresh install does not fail (the VS Code install e2e saw it)."""
    failures: list[BaseException] = []

    def open_store(path: Path) -> None:
        try:
            SessionStore(path).close()
        except BaseException as exc:  # collected for the assertion
            failures.append(exc)

    for attempt in range(60):
        path = tmp_path / f"db{attempt}" / "sessions.sqlite3"
        threads = [threading.Thread(target=open_store, args=(path,)) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    assert failures == []


def test_the_service_opens_one_store_for_concurrent_requests(tmp_path: Path) -> None:
    config = MilkConfig.model_validate({"storageDir": str(tmp_path / "storage")})
    sessions = Sessions(lambda: config)
    with ThreadPoolExecutor(4) as pool:
        stores = list(pool.map(lambda _: sessions.store, range(8)))
    assert all(store is stores[0] for store in stores)
    sessions.close()


def _writer(path: str, session_id: str, worker: int, count: int) -> None:
    """Writes `count` turns on one session; waits while the other process holds it."""
    store = SessionStore(Path(path))
    session = store.get_session(session_id)
    assert session is not None
    for i in range(count):
        turn_id = f"w{worker}-{i}"
        while True:
            try:
                store.begin_turn(
                    session, TurnRecord(turn_id, Role.USER, Agent.LOCAL, f"q {worker} {i}")
                )
                break
            except SessionClaimed:
                time.sleep(0.001)
        store.finish_turn(
            session,
            turn_id,
            RecordStatus.OK,
            [TurnRecord(turn_id, Role.ASSISTANT, Agent.LOCAL, f"a {worker} {i}")],
            _no_bricks,
        )
    store.close()


def test_two_processes_on_one_database(tmp_path: Path) -> None:
    """Two server processes on one session: turns never interleave, none is lost."""
    store = _store(tmp_path)
    session = store.create_session("/ws", "")
    path = str(store.path)
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_writer, args=(path, session.id, n, 25)) for n in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    records = store.recent_records(session.id, 1000)
    assert len(records) == 100
    assert [r.position for r in records] == list(range(1, 101))
    # The session is claimed for a whole turn: each question is followed by its own answer.
    for user, answer in zip(records[::2], records[1::2], strict=True):
        assert (user.role, answer.role) == (Role.USER, Role.ASSISTANT)
        assert user.turn_id == answer.turn_id
        assert user.status is answer.status is RecordStatus.OK
    loaded = store.get_session(session.id)
    assert loaded is not None and loaded.turn_count == 50


def test_a_claim_counts_only_while_its_process_lives(tmp_path: Path) -> None:
    from milk_lsp.system.orphans import process_start as _process_start

    store = _store(tmp_path)
    session = store.create_session("/ws", "")
    other = os.getppid()  # a live process that is not us

    def claim(pid: int, start: str) -> None:
        with store.transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO running_turns VALUES (?, 'other-turn', ?, ?, 'now')",
                (session.id, pid, start),
            )

    claim(other, _process_start(other))
    with pytest.raises(SessionClaimed, match=f"pid {other}"):
        store.begin_turn(session, TurnRecord("t1", Role.USER, Agent.LOCAL, "q"))
    claim(other, "1")  # the pid was reused by a process started at another time
    store.begin_turn(session, TurnRecord("t2", Role.USER, Agent.LOCAL, "q"))
    claim(2**22 + 7, "")  # a process that no longer exists
    store.begin_turn(session, TurnRecord("t3", Role.USER, Agent.LOCAL, "q"))
    assert [r.turn_id for r in store.recent_records(session.id, 10)] == ["t2", "t3"]


def test_cancel_request_reaches_only_a_live_foreign_claim_and_is_cleared(tmp_path: Path) -> None:
    from milk_lsp.system.orphans import process_start as _process_start

    store = _store(tmp_path)
    session = store.create_session("/ws", "")
    assert store.elsewhere.request_cancel(session.id) is None  # nothing runs
    assert store.elsewhere.request_cancel("no-such-session") is None
    # A turn of this very process is cancelled in-process, not through the store.
    store.begin_turn(session, TurnRecord("own", Role.USER, Agent.LOCAL, "q"))
    assert store.elsewhere.request_cancel(session.id) is None
    assert store.elsewhere.cancel_requested(session.id, "own") is False
    store.release_turn(session.id, "own")

    other = os.getppid()  # a live process that is not us

    def claim(turn_id: str, pid: int, start: str) -> None:
        with store.transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO running_turns VALUES (?, ?, ?, ?, 'now')",
                (session.id, turn_id, pid, start),
            )

    claim("theirs", other, _process_start(other))
    assert store.elsewhere.turn_claimed(session.id, "theirs")
    assert store.elsewhere.request_cancel(session.id) == "theirs"
    assert store.elsewhere.cancel_requested(session.id, "theirs")
    assert not store.elsewhere.cancel_requested(session.id, "another-turn")
    # The other process ends the turn: its claim and the request go together.
    store.finish_turn(session, "theirs", RecordStatus.CANCELLED, [], _no_bricks)
    assert not store.elsewhere.turn_claimed(session.id, "theirs")
    assert not store.elsewhere.cancel_requested(session.id, "theirs")

    claim("released", other, _process_start(other))
    assert store.elsewhere.request_cancel(session.id) == "released"
    store.release_turn(session.id, "released")
    assert not store.elsewhere.cancel_requested(session.id, "released")

    # A claim left by a process that has died: nothing to cancel, and not claimed.
    claim("dead", other, _process_start(other))
    assert store.elsewhere.request_cancel(session.id) == "dead"
    claim("dead", 2**22 + 7, "")
    assert store.elsewhere.request_cancel(session.id) is None
    assert not store.elsewhere.turn_claimed(session.id, "dead")
    # The next turn on the session drops the request that nobody will ever act on.
    store.begin_turn(session, TurnRecord("next", Role.USER, Agent.LOCAL, "q"))
    rows = store._conn.execute("SELECT count(*) FROM cancel_requests").fetchone()
    assert rows[0] == 0


def test_live_updates_reach_other_processes_in_order_and_never_their_writer(
    tmp_path: Path,
) -> None:
    """Issue 31: a turn's updates, written by one server process, read by another on the
    same folder from where its watcher starts; its own are skipped but counted as read."""
    path = tmp_path / "s.sqlite3"
    writer, reader = SessionStore(path), SessionStore(path)
    start = reader.elsewhere.live_start()
    updates = [
        ("/ws/a", {"sessionId": "s", "turnId": "t", "seq": n, "kind": "text", "delta": f"{n}"})
        for n in range(1, 4)
    ]
    writer.elsewhere.publish("writer", updates)
    writer.elsewhere.publish("writer", [("/ws/b", {"sessionId": "o", "turnId": "u", "seq": 1})])
    last, seen = reader.elsewhere.live_after(start, "reader", ["/ws/a"])
    assert [u.payload["delta"] for u in seen] == ["1", "2", "3"]  # another folder's: not
    assert reader.elsewhere.live_after(last, "reader", ["/ws/a"]) == (last, [])
    mine_last, mine = writer.elsewhere.live_after(start, "writer", ["/ws/a"])
    assert mine == [] and mine_last == last  # its own: read past, not relayed
    assert reader.elsewhere.live_after(start, "reader", []) == (start, [])


def test_a_turn_is_written_for_other_doors_only_while_one_watches_its_folder(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.sqlite3"
    mine, theirs = SessionStore(path), SessionStore(path)
    assert not mine.elsewhere.watched("me", "/ws/a")  # nobody else: nothing to write
    mine.elsewhere.watch("me", ["/ws/a"])
    assert not mine.elsewhere.watched("me", "/ws/a")  # its own watch does not count
    theirs.elsewhere.watch("them", ["/ws/a", "/ws/b"])
    assert mine.elsewhere.watched("me", "/ws/a") and mine.elsewhere.watched("me", "/ws/b")
    assert not mine.elsewhere.watched("me", "/ws/c")
    theirs.elsewhere.unwatch("them")
    assert not mine.elsewhere.watched("me", "/ws/a")
