"""Per-turn bookkeeping (record + bricks + persist) against the length of the session.

Builds sessions of 100, 10,000 and 100,000 turns in a scratch SQLite database, then times
the engine's real end-of-turn path (`begin_turn` + `finish_turn` with the brick rebuild)
on each, and prints the ratio of the longest to the shortest (target: <= 1.5x). For
contrast it also times the naive path the original used: render the whole history and
rewrite it (a JSON file per session).

    python bench/bookkeeping.py [--repeats 30]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from milk_lsp.config import MilkConfig
from milk_lsp.engine import Engine
from milk_lsp.sessions.model import (
    Agent,
    RecordStatus,
    Role,
    ToolCallRecord,
    TurnRecord,
)
from milk_lsp.sessions.store import SessionStore

SIZES = (100, 10_000, 100_000)


class _Quiet:
    def send_update(self, payload: object) -> None: ...


def fill(store: SessionStore, workspace: str, turns: int) -> str:
    """A session with `turns` local turns (each with a tool call), inserted in bulk."""
    session = store.create_session(workspace, f"{turns} turns", "abc123")
    rows = []
    position = 0
    for i in range(turns):
        turn_id = f"t{i}"
        call = {
            "id": f"c{i}",
            "name": "read_file",
            "input": {"path": f"src/mod{i % 50}.py"},
            "output": "x" * 300,
            "isError": False,
        }
        for role, text, calls in (
            ("user", f"question number {i} about the parser", "[]"),
            ("assistant", f"answer {i}: the parser handles case {i}.", json.dumps([call])),
        ):
            position += 1
            rows.append(
                (
                    session.id,
                    position,
                    turn_id,
                    role,
                    "local",
                    text,
                    calls,
                    "ok",
                    "2026-11-30T00:00:00Z",
                )
            )
    with store._transaction() as conn:
        conn.executemany("INSERT INTO records VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        conn.execute(
            "UPDATE sessions SET record_count = ?, turn_count = ? WHERE id = ?",
            (position, turns, session.id),
        )
    return session.id


def one_turn(engine: Engine, session_id: str) -> float:
    store = engine.sessions.store
    session = store.get_session(session_id)
    assert session is not None
    turn_id = str(uuid.uuid4())
    started = time.perf_counter()
    store.begin_turn(session, TurnRecord(turn_id, Role.USER, Agent.LOCAL, "one more question"))
    answer = TurnRecord(
        turn_id,
        Role.ASSISTANT,
        Agent.LOCAL,
        "one more answer",
        [ToolCallRecord("c", "read_file", {"path": "a.py"}, "y" * 800)],
    )
    store.finish_turn(
        session, turn_id, RecordStatus.OK, [answer], budget_chars=engine.config.context_budget_chars
    )
    return time.perf_counter() - started


def naive_turn(store: SessionStore, session_id: str, scratch: Path) -> float:
    """The original's path: load everything, render the whole transcript, rewrite the file."""
    started = time.perf_counter()
    records = store.recent_records(session_id, 10**9)
    transcript = "".join(f"{r.role.value}: {r.text}\n" for r in records)
    (scratch / "session.json").write_text(
        json.dumps({"history": [r.text for r in records], "summary": transcript[-12000:]})
    )
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=60)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        config = MilkConfig(storage_dir=tmp)
        engine = Engine(config, _Quiet())  # type: ignore[arg-type]
        ids = {size: fill(engine.sessions.store, "/bench", size) for size in SIZES}
        ours: dict[int, float] = {}
        naive: dict[int, float] = {}
        for size in SIZES:
            one_turn(engine, ids[size])  # warm the page cache
        # Interleaved rounds, so that noise on the machine hits every size alike.
        samples: dict[int, list[float]] = {size: [] for size in SIZES}
        for _ in range(args.repeats):
            for size in SIZES:
                samples[size].append(one_turn(engine, ids[size]))
        for size in SIZES:
            ours[size] = statistics.median(samples[size])
            naive[size] = statistics.median(
                naive_turn(engine.sessions.store, ids[size], Path(tmp)) for _ in range(3)
            )
        print("turns of history | milk-lsp per-turn bookkeeping | naive full rewrite")
        for size in SIZES:
            print(f"{size:>16,} | {ours[size] * 1000:>10.2f} ms | {naive[size] * 1000:>10.1f} ms")
        small, large = SIZES[0], SIZES[-1]
        print(
            f"ratio {large:,} / {small:,} turns: milk-lsp {ours[large] / ours[small]:.2f}x "
            f"(target <= 1.5x), naive {naive[large] / naive[small]:.0f}x"
        )
        session = engine.sessions.store.get_session(ids[large])
        assert session is not None
        print(
            f"bricks after a turn at {large:,}: local {len(session.last_local_summary)} chars "
            f"(budget {config.context_budget_chars})"
        )


if __name__ == "__main__":
    main()
