"""Escalation context size against the length of the session, and against the full transcript.

For sessions of 10, 100, 1,000 and 10,000 realistic local turns (a question, a few tool calls
with real-sized results: files read, searches, directory listings, commands, edits; an answer)
this builds the session in a scratch SQLite database (bulk insert, like bench/bookkeeping.py),
then runs the engine's real end-of-turn path
(`begin_turn` + `finish_turn`, which rebuilds the bricks) for the last turns so the bricks
are current, and asks the engine what the next escalation would send:
`engine.claude.plan(session, by_agent=False)` -> len(context_file) + len(user_message_prefix).

Two situations per length:

* first: the user escalates a session that never went to Claude (static + need + local brick);
* fresh: a session of the same length with a Claude turn every 50 turns, the last one just
  before 8 local turns, so the next escalation starts a new Claude conversation carrying both
  bricks (static + need + prior Claude summary + local brick), the largest kind of context.

Plus a worst case: a fresh start by the local agent (with a brief) where both bricks are cut
to exactly their budget, to check the bound itself.

Each is compared with the bound 2 x budget + static (two bricks of `context_budget_chars`
plus the static block) and with the naive hand-off, the full transcript of the same session
(every message with every tool call and its whole result; also shown text only, without tool
results). Target at 10,000 turns: within the bound and >= 100x smaller than the transcript.

    .venv/bin/python bench/context_size.py [--sizes 10,100,1000,10000] [--seed 7]

(about 30 s, most of it building the 10,000-turn sessions).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from milk_lsp.config import MilkConfig
from milk_lsp.engine import Engine
from milk_lsp.prompts.context import ContextMode, build_static
from milk_lsp.sessions.model import (
    Agent,
    RecordStatus,
    Role,
    Session,
    ToolCallRecord,
    TurnRecord,
)
from milk_lsp.sessions.store import SessionStore

SIZES = (10, 100, 1_000, 10_000)
CLAUDE_EVERY = 50
"""One turn in this many (in the bulk part) is a Claude escalation."""
TAIL_LOCAL_TURNS = 8
"""Local turns after the last Claude turn (FRESH_START_LOCAL_TURNS: the next start is fresh)."""
PERCEPTS = (
    "The user prefers small, reviewable commits with a one-line summary.",
    "Tests run with `pytest -q`; the e2e suite needs the fake model server.",
    "The parser must stay pure Python (no C extensions) for the plugin build.",
)
NEED = "Make the config parser accept nested tables and report the line of a bad key."

_WORD_TEXT = (
    "parser config table key value line error token lexer nested section report file test "
    "function return module import class field default schema loader check raise case path "
    "update fix handle input output string list dict index offset buffer scan read write"
)
_WORDS = _WORD_TEXT.split()


class _Quiet:
    def send_update(self, payload: object) -> None: ...


def _prose(rng: random.Random, chars: int) -> str:
    words: list[str] = []
    size = 0
    while size < chars:
        word = rng.choice(_WORDS)
        words.append(word)
        size += len(word) + 1
    return " ".join(words)[:chars]


def _code(rng: random.Random, chars: int) -> str:
    lines: list[str] = []
    size = 0
    n = 0
    while size < chars:
        n += 1
        a, b = rng.choice(_WORDS), rng.choice(_WORDS)
        line = rng.choice(
            (
                f"def {a}_{b}(self, {b}: str) -> int:",
                f"    {a} = self.{b}.get({b!r}, None)",
                f"    if {a} is None:",
                f"        raise ValueError(f'bad {b} at line {{{n}}}')",
                f"    return len({a}) + {n}",
                f"# {a} {b}: see issue {n}",
                "",
            )
        )
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)[:chars]


def _tool_call(rng: random.Random, i: int, j: int) -> ToolCallRecord:
    kind = rng.choices(
        ("read_file", "search_text", "list_directory", "run_command", "edit_file"),
        weights=(5, 3, 2, 2, 2),
    )[0]
    path = f"src/pkg/{rng.choice(_WORDS)}_{rng.randrange(40)}.py"
    if kind == "read_file":
        return ToolCallRecord(f"c{i}_{j}", kind, {"path": path}, _code(rng, rng.randint(800, 6000)))
    if kind == "search_text":
        pattern = rng.choice(_WORDS)
        hits = "\n".join(
            f"{path}:{rng.randrange(1, 400)}: {_prose(rng, 60)}" for _ in range(rng.randint(3, 20))
        )
        return ToolCallRecord(f"c{i}_{j}", kind, {"pattern": pattern}, hits)
    if kind == "list_directory":
        listing = "\n".join(f"{rng.choice(_WORDS)}_{k}.py" for k in range(rng.randint(5, 30)))
        return ToolCallRecord(f"c{i}_{j}", kind, {"path": "src/pkg"}, listing)
    if kind == "run_command":
        failed = rng.random() < 0.3
        output = "\n".join(
            f"tests/test_{rng.choice(_WORDS)}.py::{rng.choice(_WORDS)} "
            f"{'FAILED' if failed and k == 0 else 'PASSED'}"
            for k in range(rng.randint(5, 60))
        )
        return ToolCallRecord(
            f"c{i}_{j}", kind, {"command": "pytest -q tests/"}, output, is_error=failed
        )
    old, new = _prose(rng, 40), _prose(rng, 50)
    return ToolCallRecord(
        f"c{i}_{j}", kind, {"path": path, "old": old, "new": new}, f"edited {path} (1 change)"
    )


def _turn(
    rng: random.Random, i: int, agent: Agent
) -> list[tuple[str, str, str, list[dict[str, Any]]]]:
    """(role, agent, text, tool calls) rows of one turn."""
    calls: list[ToolCallRecord] = []
    for j in range(rng.choice((0, 1, 1, 2, 2, 3, 4))):
        call = _tool_call(rng, i, j)
        calls.append(call)
        if call.name == "read_file" and rng.random() < 0.15:  # a model re-reading a file
            calls += [
                ToolCallRecord(f"{call.tool_call_id}r{k}", call.name, call.input, call.output)
                for k in range(rng.randint(1, 3))
            ]
    if agent is Agent.CLAUDE:
        calls += [_tool_call(rng, i, 10 + k) for k in range(rng.randint(2, 6))]
    question = f"turn {i}: {_prose(rng, rng.randint(60, 250))}?"
    answer = _prose(rng, rng.randint(150, 900) * (3 if agent is Agent.CLAUDE else 1))
    wire = [
        {
            "id": c.tool_call_id,
            "name": c.name,
            "input": c.input,
            "output": c.output,
            "isError": c.is_error,
        }
        for c in calls
    ]
    return [("user", agent.value, question, []), ("assistant", agent.value, answer, wire)]


def fill(
    store: SessionStore, workspace: str, turns: int, rng: random.Random, *, with_claude: bool
) -> str:
    """A session with `turns` - 1 - TAIL_LOCAL_TURNS turns, inserted in bulk."""
    session = store.create_session(workspace, f"{turns} turns", "k3x9q2")
    bulk = max(0, turns - 1 - TAIL_LOCAL_TURNS)
    rows = []
    position = 0
    for i in range(bulk):
        claude = with_claude and i % CLAUDE_EVERY == CLAUDE_EVERY - 1
        agent = Agent.CLAUDE if claude else Agent.LOCAL
        for role, who, text, calls in _turn(rng, i, agent):
            position += 1
            rows.append(
                (
                    session.id,
                    position,
                    f"t{i}",
                    role,
                    who,
                    text,
                    json.dumps(calls),
                    "ok",
                    "2026-11-30T00:00:00Z",
                )
            )
    with store._transaction() as conn:
        conn.executemany("INSERT INTO records VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        conn.execute(
            "UPDATE sessions SET record_count = ?, turn_count = ? WHERE id = ?",
            (position, bulk, session.id),
        )
    return session.id


def real_turn(engine: Engine, session: Session, agent: Agent, i: int, rng: random.Random) -> None:
    """One turn through the engine's real end-of-turn path (records + brick rebuild + save)."""
    turn_id = str(uuid.uuid4())
    (_, _, question, _), (_, _, answer, calls) = _turn(rng, i, agent)
    engine.sessions.store.begin_turn(session, TurnRecord(turn_id, Role.USER, agent, question))
    record = TurnRecord(
        turn_id,
        Role.ASSISTANT,
        agent,
        answer,
        [ToolCallRecord(c["id"], c["name"], c["input"], c["output"], c["isError"]) for c in calls],
    )
    engine.sessions.store.finish_turn(
        session, turn_id, RecordStatus.OK, [record], budget_chars=engine.config.context_budget_chars
    )


def worst_case(engine: Engine, workspace: str, rng: random.Random) -> tuple[int, int, int]:
    """Both bricks at their budget and an agent escalation with a brief: (chars, local, claude)."""
    store = engine.sessions.store
    sid = fill(store, workspace, 40, rng, with_claude=False)
    session = store.get_session(sid)
    assert session is not None
    session.current_need, session.current_need_set_at = NEED, session.record_count + 1
    turn_id = str(uuid.uuid4())
    store.begin_turn(session, TurnRecord(turn_id, Role.USER, Agent.CLAUDE, "refactor the parser"))
    huge = TurnRecord(
        turn_id,
        Role.ASSISTANT,
        Agent.CLAUDE,
        _prose(rng, 3 * engine.config.context_budget_chars),
        [_tool_call(rng, 0, k) for k in range(12)],
    )
    store.finish_turn(
        session, turn_id, RecordStatus.OK, [huge], budget_chars=engine.config.context_budget_chars
    )
    for k in range(TAIL_LOCAL_TURNS - 1):
        real_turn(engine, session, Agent.LOCAL, 2 * 10**6 + k, rng)
    turn_id = str(uuid.uuid4())  # a last local answer pasting a long file: cut to the budget
    store.begin_turn(session, TurnRecord(turn_id, Role.USER, Agent.LOCAL, "show me the file"))
    long = TurnRecord(
        turn_id, Role.ASSISTANT, Agent.LOCAL, _code(rng, 3 * engine.config.context_budget_chars)
    )
    store.finish_turn(
        session, turn_id, RecordStatus.OK, [long], budget_chars=engine.config.context_budget_chars
    )
    session.claude_session_id = str(uuid.uuid4())
    session.local_turns_since_claude = TAIL_LOCAL_TURNS
    session.escalation_brief = "The user needs " + _prose(rng, 280)
    plan = asyncio.run(engine.claude.plan(session, by_agent=True))
    assert plan.mode is ContextMode.FRESH
    chars = len(plan.context_file) + len(plan.user_message_prefix)
    return chars, len(session.last_local_summary), len(session.last_claude_summary)


def transcript(store: SessionStore, session_id: str) -> tuple[int, int]:
    """The naive hand-off: (full transcript with tool calls and results, text only) in chars."""
    full = text = 0
    for record in store.recent_records(session_id, 10**9):
        line = f"{record.role.value} ({record.agent.value}): {record.text}\n"
        text += len(line)
        full += len(line)
        for call in record.tool_calls:
            full += len(
                f"[Tool: {call.name}] {json.dumps(call.input)}\n[Tool result] {call.output}\n"
            )
    return full, text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        default=",".join(str(s) for s in SIZES),
        help="comma-separated session lengths in turns",
    )
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="milk-bench-ctx-") as tmp:
        config = MilkConfig(storage_dir=tmp)
        engine = Engine(config, _Quiet())  # type: ignore[arg-type]
        store = engine.sessions.store
        workspace = str(Path(tmp) / "ws")
        store.add_percepts(workspace, list(PERCEPTS), Agent.LOCAL)
        budget = config.context_budget_chars
        static = len(build_static("k3x9q2", PERCEPTS))
        bound = 2 * budget + static
        rows = []
        for size in sizes:
            rng = random.Random(args.seed * 1_000_003 + size)
            started = time.perf_counter()
            sid = fill(store, workspace, size, rng, with_claude=False)
            session = store.get_session(sid)
            assert session is not None
            session.current_need, session.current_need_set_at = NEED, session.record_count + 1
            # "first": the tail is all local, no Claude conversation yet.
            for k in range(1 + TAIL_LOCAL_TURNS):
                real_turn(engine, session, Agent.LOCAL, 10**6 + k, rng)
            first = asyncio.run(engine.claude.plan(session, by_agent=False))
            assert first.mode is ContextMode.FIRST
            first_chars = len(first.context_file) + len(first.user_message_prefix)
            # "fresh": the same session where the turn before the 8 local ones was Claude's.
            sid2 = fill(store, workspace, size, rng, with_claude=True)
            session2 = store.get_session(sid2)
            assert session2 is not None
            session2.current_need, session2.current_need_set_at = NEED, session2.record_count + 1
            real_turn(engine, session2, Agent.CLAUDE, 10**6, rng)
            for k in range(TAIL_LOCAL_TURNS):
                real_turn(engine, session2, Agent.LOCAL, 10**6 + 1 + k, rng)
            session2.claude_session_id = str(uuid.uuid4())
            session2.local_turns_since_claude = TAIL_LOCAL_TURNS
            fresh = asyncio.run(engine.claude.plan(session2, by_agent=False))
            assert fresh.mode is ContextMode.FRESH, fresh.mode
            fresh_chars = len(fresh.context_file) + len(fresh.user_message_prefix)
            full, text_only = transcript(store, sid2)
            rows.append(
                (
                    size,
                    first_chars,
                    fresh_chars,
                    full,
                    text_only,
                    len(session2.last_local_summary),
                    len(session2.last_claude_summary),
                    time.perf_counter() - started,
                )
            )

        print(
            f"budget {budget:,} chars per brick, static block {static:,} chars, "
            f"bound 2 x budget + static = {bound:,} chars"
        )
        print(
            "   turns | context first | context fresh | within bound | full transcript "
            "| text only | (fresh) local brick | claude brick"
        )
        for size, first_chars, fresh_chars, full, text_only, local, claude, _ in rows:
            ok = "yes" if max(first_chars, fresh_chars) <= bound else "NO"
            print(
                f"{size:>8,} | {first_chars:>13,} | {fresh_chars:>13,} | {ok:>12} | "
                f"{full:>15,} | {text_only:>9,} | {local:>19,} | {claude:>12,}"
            )
        size, first_chars, fresh_chars, full, text_only, *_ = rows[-1]
        print(
            f"ratio full transcript / milk context at {size:,} turns: "
            f"{full / fresh_chars:,.0f}x (fresh, largest) / {full / first_chars:,.0f}x (first) "
            f"(target >= 100x); text-only transcript / fresh: {text_only / fresh_chars:,.0f}x"
        )
        small = rows[0]
        print(
            f"context growth {small[0]:,} -> {size:,} turns: "
            f"fresh {fresh_chars / small[2]:.2f}x, first {first_chars / small[1]:.2f}x; "
            f"transcript {full / small[3]:,.0f}x"
        )
        worst, local, claude = worst_case(engine, workspace, random.Random(args.seed))
        print(
            f"worst case (fresh start by the agent, both bricks cut to the budget: local "
            f"{local:,}, claude {claude:,}, a 295-char brief): {worst:,} chars, "
            f"{'within' if worst <= bound else 'OVER'} the bound by {abs(bound - worst):,} chars"
        )
        print("setup seconds per size: " + ", ".join(f"{r[0]:,}: {r[-1]:.1f}" for r in rows))


if __name__ == "__main__":
    main()
