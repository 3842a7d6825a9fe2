"""Summary bricks (ADR 0029): milk-original §9 cases 1-8 adapted, and the budget invariants."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from milk_lsp.sessions import bricks
from milk_lsp.sessions.bricks import (
    DEFAULT_BUDGET_CHARS,
    MAX_RECORDS_READ,
    TOOL_RESULT_CAP_CHARS,
    ends_with_question,
    is_empty_claude_run,
    render_brick,
)
from milk_lsp.sessions.model import Agent, RecordStatus, Role, ToolCallRecord, TurnRecord

LOCAL, CLAUDE = Agent.LOCAL, Agent.CLAUDE
OK, CANCELLED, ERROR = RecordStatus.OK, RecordStatus.CANCELLED, RecordStatus.ERROR
GREP = '[Tool: grep] {"pattern":"foo"}\n'
READ_A = '[Tool: read] {"path":"a"}\n[Tool result] text\n'


def user(turn: str, text: str, agent: Agent = LOCAL, status: RecordStatus = OK) -> TurnRecord:
    return TurnRecord(turn_id=turn, role=Role.USER, agent=agent, text=text, status=status)


def reply(
    turn: str,
    text: str,
    agent: Agent = LOCAL,
    calls: Sequence[ToolCallRecord] = (),
    status: RecordStatus = OK,
) -> TurnRecord:
    return TurnRecord(
        turn_id=turn,
        role=Role.ASSISTANT,
        agent=agent,
        text=text,
        tool_calls=list(calls),
        status=status,
    )


def call(
    name: str = "grep",
    input: dict[str, Any] | None = None,
    output: str | None = "ok",
    is_error: bool = False,
) -> ToolCallRecord:
    return ToolCallRecord(
        tool_call_id=f"id-{name}",
        name=name,
        input={"pattern": "foo"} if input is None else input,
        output=output,
        is_error=is_error,
    )


def grep(output: str) -> ToolCallRecord:
    return call("grep", {"pattern": "foo"}, output)


def brick(records: Sequence[TurnRecord], agent: Agent = LOCAL, budget: int = 12000) -> str:
    """Render from a chronological list, handing the records over newest first like the store."""
    return render_brick(reversed(records), agent, budget)


def after_last_answer(records: Sequence[TurnRecord], agent: Agent) -> list[TurnRecord]:
    """The store's slice: the records after `agent`'s last assistant record (all when none)."""
    positions = [i for i, r in enumerate(records) if r.role == Role.ASSISTANT and r.agent == agent]
    return list(records[positions[-1] + 1 :]) if positions else list(records)


class Guarded(Iterator[TurnRecord]):
    """An iterator that fails the test when read past `limit` items."""

    def __init__(self, records: Iterable[TurnRecord], limit: int) -> None:
        self._records = iter(records)
        self._limit = limit
        self.read = 0

    def __next__(self) -> TurnRecord:
        if self.read >= self._limit:
            raise AssertionError(f"read past {self._limit} records")
        self.read += 1
        return next(self._records)


def qa_pairs_newest_first(count: int) -> Iterator[TurnRecord]:
    for i in range(count, 0, -1):
        yield reply(f"t{i}", f"answer {i}")
        yield user(f"t{i}", f"turn {i}")


# --- §9 cases 1-8 --------------------------------------------------------------------------


def test_local_only_session() -> None:
    """#1: a local Q/A gives the pinned local brick and no Claude brick."""
    history = [user("t1", "fix typo"), reply("t1", "done")]
    assert brick(history) == "User: fix typo\nAssistant (local): done\n"
    claude_slice = after_last_answer(history, LOCAL)
    assert brick(claude_slice, CLAUDE) == ""
    assert is_empty_claude_run(reversed(claude_slice))


def test_local_brick_covers_only_turns_since_claude() -> None:
    """#2: the slice after Claude's last answer holds only the new local turn."""
    history = [
        user("t1", "old local turn"),
        reply("t1", "old answer"),
        user("t2", "hard one", CLAUDE),
        reply("t2", "solved", CLAUDE),
        user("t3", "new local turn"),
        reply("t3", "new answer"),
    ]
    got = brick(after_last_answer(history, CLAUDE))
    assert got == "User: new local turn\nAssistant (local): new answer\n"


def test_budget_drops_the_oldest_units() -> None:
    """#4: budget 60 on three pairs keeps exactly the newest pair."""
    history = [
        user("t1", "turn one"),
        reply("t1", "answer one"),
        user("t2", "turn two"),
        reply("t2", "answer two"),
        user("t3", "turn three"),
        reply("t3", "answer three"),
    ]
    assert brick(history, budget=60) == "User: turn three\nAssistant (local): answer three\n"
    full = brick(history)
    assert brick(history, budget=len(full)) == full
    assert brick(history, budget=len(full) - 1) == full.removeprefix("User: turn one\n")


@pytest.mark.parametrize(
    ("history", "expected"),
    [
        pytest.param(
            [
                user("t1", "search"),
                reply("t1", "", calls=[grep("r1")]),
                reply("t1", "", calls=[grep("r2")]),
                reply("t1", "", calls=[grep("r3")]),
            ],
            f"User: search\n{GREP}  [2 more grep calls collapsed]\n[Tool result] r3\n",
            id="pinned-5-across-records",
        ),
        pytest.param(
            [
                user("t1", "search"),
                reply("t1", "found", calls=[grep("r1"), grep("r2"), grep("r3")]),
            ],
            f"User: search\n{GREP}  [2 more grep calls collapsed]\n[Tool result] r3\n"
            "Assistant (local): found\n",
            id="within-one-record",
        ),
        pytest.param(
            [
                user("t1", "search"),
                reply("t1", "", calls=[grep("r1")]),
                user("t2", "again"),
                reply("t2", "", calls=[grep("r2")]),
            ],
            f"User: search\n{GREP}[Tool result] r1\nUser: again\n{GREP}[Tool result] r2\n",
            id="user-line-breaks-run",
        ),
        pytest.param(
            [
                user("t1", "s"),
                reply("t1", "first", calls=[grep("r1")]),
                reply("t1", "", calls=[grep("r2")]),
            ],
            f"User: s\n{GREP}[Tool result] r1\nAssistant (local): first\n{GREP}[Tool result] r2\n",
            id="text-line-breaks-run",
        ),
        pytest.param(
            [
                user("t1", "s"),
                reply(
                    "t1",
                    "",
                    calls=[
                        call("grep", {"pattern": "foo"}, "r1"),
                        call("grep", {"pattern": "bar"}, "r2"),
                        call("read", {"pattern": "bar"}, "r3"),
                    ],
                ),
            ],
            f"User: s\n{GREP}[Tool result] r1\n"
            '[Tool: grep] {"pattern":"bar"}\n[Tool result] r2\n'
            '[Tool: read] {"pattern":"bar"}\n[Tool result] r3\n',
            id="same-name-other-input-not-collapsed",
        ),
        pytest.param(
            [user("t1", "s"), reply("t1", "", calls=[grep(f"r{i}") for i in range(12)])],
            f"User: s\n{GREP}  [11 more grep calls collapsed]\n[Tool result] r11\n",
            id="count-is-run-length-minus-one",
        ),
        pytest.param(
            [
                user("t1", "s"),
                reply(
                    "t1",
                    "",
                    calls=[call("ls", {"b": 1, "a": 2}, "x"), call("ls", {"a": 2, "b": 1}, "y")],
                ),
            ],
            'User: s\n[Tool: ls] {"a":2,"b":1}\n  [1 more ls calls collapsed]\n[Tool result] y\n',
            id="key-order-does-not-matter",
        ),
    ],
)
def test_collapse(history: list[TurnRecord], expected: str) -> None:
    """#5 improved per P12: one call line, the marker, then the last result of the run."""
    assert brick(history) == expected


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        pytest.param("a" * 500, "[Tool result] " + "a" * 500 + "\n", id="exactly-500-kept"),
        pytest.param(
            "a" * 500 + "b",
            "[Tool result] " + "a" * 500 + "\n... (truncated)\n",
            id="501-truncated",
        ),
        pytest.param("é" * 600, "[Tool result] " + "é" * 500 + "\n... (truncated)\n", id="chars"),
        pytest.param("", "[Tool result] \n", id="empty-output"),
        pytest.param(None, "[Tool result] (no result)\n", id="never-returned"),
        pytest.param("\x1b[31mred\x1b[0m done", "[Tool result] red done\n", id="ansi-stripped"),
    ],
)
def test_tool_result_rendering(output: str | None, expected: str) -> None:
    """#6: results are cut at 500 characters; exactly 500 is not cut."""
    assert TOOL_RESULT_CAP_CHARS == 500
    history = [reply("t1", "", calls=[call("read", {"path": "a.py"}, output)])]
    assert brick(history) == '[Tool: read] {"path":"a.py"}\n' + expected


def test_tool_error_and_json_rendering() -> None:
    history = [
        user("t1", "run it"),
        reply(
            "t1",
            "it failed",
            calls=[call("bash", {"cmd": "make", "note": "ünïcode"}, "boom", is_error=True)],
        ),
    ]
    assert brick(history) == (
        "User: run it\n"
        '[Tool: bash] {"cmd":"make","note":"ünïcode"}\n'
        "[Tool error] boom\n"
        "Assistant (local): it failed\n"
    )


@pytest.mark.parametrize(
    ("history", "expected"),
    [
        pytest.param(
            [user("t1", "go", status=CANCELLED), reply("t1", "partial", status=CANCELLED)],
            "User: go\nAssistant (local) [cancelled]: partial\n",
            id="answer-carries-marker",
        ),
        pytest.param(
            [user("t1", "go", status=ERROR)],
            "User [error]: go\n",
            id="unanswered-user-carries-marker",
        ),
        pytest.param(
            [
                user("t1", "go", status=CANCELLED),
                reply("t1", "", calls=[grep("r")], status=CANCELLED),
            ],
            f"User: go\n{GREP}[Tool result] r\nAssistant (local) [cancelled]: \n",
            id="marker-line-even-without-text",
        ),
        pytest.param(
            [user("t1", "go"), reply("t1", "")],
            "User: go\nAssistant (local): \n",
            id="empty-answer-without-tools",
        ),
        pytest.param(
            [user("t1", "go"), reply("t1", "\x1b[1mbold\x1b[0m and \x1b]8;;http://x\x07link")],
            "User: go\nAssistant (local): bold and link\n",
            id="ansi-stripped-from-text",
        ),
    ],
)
def test_record_rendering(history: list[TurnRecord], expected: str) -> None:
    assert brick(history) == expected


def test_claude_brick_covers_only_the_last_claude_run() -> None:
    """#7: after a local answer the Claude slice is empty; a long Claude reply fills it."""
    claude_then_local = [
        user("t1", "q", CLAUDE),
        reply("t1", "a", CLAUDE),
        user("t2", "q2"),
        reply("t2", "a2"),
    ]
    claude_slice = after_last_answer(claude_then_local, LOCAL)
    assert claude_slice == []
    assert brick(claude_slice, CLAUDE) == ""
    assert is_empty_claude_run(reversed(claude_slice))

    long_reply = "x" * 200
    local_then_claude = [user("t1", "q"), reply("t1", "a"), user("t2", "q2", CLAUDE)]
    local_then_claude.append(reply("t2", long_reply, CLAUDE))
    claude_slice = after_last_answer(local_then_claude, LOCAL)
    assert brick(claude_slice, CLAUDE) == f"User: q2\nAssistant (claude): {long_reply}\n"
    assert not is_empty_claude_run(reversed(claude_slice))


@pytest.mark.parametrize(
    ("history", "local_brick", "claude_brick"),
    [
        pytest.param(
            [user("t1", "for claude", CLAUDE)],
            "",
            "User: for claude\n",
            id="unanswered-user-goes-to-its-agent",
        ),
        pytest.param(
            [user("t1", "asked local"), reply("t1", "claude answered", CLAUDE)],
            "",
            "User: asked local\nAssistant (claude): claude answered\n",
            id="user-follows-the-answering-agent",
        ),
        pytest.param(
            [user("t1", "hi"), reply("t1", "escalating"), reply("t1", "fixed", CLAUDE)],
            "User: hi\nAssistant (local): escalating\n",
            "User: hi\nAssistant (claude): fixed\n",
            id="self-escalated-turn-in-both",
        ),
        pytest.param(
            [user("t1", "a", CLAUDE), reply("t1", "b", CLAUDE), user("t2", "c"), reply("t2", "d")],
            "User: c\nAssistant (local): d\n",
            "User: a\nAssistant (claude): b\n",
            id="other-agents-turns-left-out",
        ),
    ],
)
def test_which_records_belong_to_a_brick(
    history: list[TurnRecord], local_brick: str, claude_brick: str
) -> None:
    """#8 adapted: user records follow the agent that answered them, else their own tag."""
    assert brick(history, LOCAL) == local_brick
    assert brick(history, CLAUDE) == claude_brick


@pytest.mark.parametrize(
    ("history", "empty"),
    [
        pytest.param([user("t1", "hi", CLAUDE), reply("t1", "ok", CLAUDE)], True, id="pinned-3"),
        pytest.param([], True, id="no-records"),
        pytest.param([reply("t1", "x" * 199, CLAUDE)], True, id="199-chars"),
        pytest.param([reply("t1", "x" * 200, CLAUDE)], False, id="200-chars"),
        pytest.param(
            [reply("t1", "x" * 100, CLAUDE), reply("t2", "y" * 100, CLAUDE)],
            False,
            id="chars-add-up",
        ),
        pytest.param([reply("t1", "", CLAUDE, calls=[grep("r")])], False, id="tool-call-q3"),
        pytest.param(
            [user("t1", "x" * 300, CLAUDE), reply("t1", "ok", CLAUDE)],
            True,
            id="user-text-not-counted",
        ),
        pytest.param([reply("t1", "x" * 300, LOCAL, calls=[grep("r")])], True, id="local-ignored"),
    ],
)
def test_is_empty_claude_run(history: list[TurnRecord], empty: bool) -> None:
    """#3 and Q3: tool calls are looked for on Claude's assistant records."""
    assert is_empty_claude_run(reversed(history)) is empty


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("What do you mean?", True, id="question"),
        pytest.param("What do you mean?  \t", True, id="trailing-blanks"),
        pytest.param("foo? bar", False, id="question-mark-mid-line"),
        pytest.param("foo?\nDone.", False, id="earlier-line"),
        pytest.param("foo\nWhat now?", True, id="last-line"),
        pytest.param("What now?\n\n  \n", True, id="trailing-blank-lines"),
        pytest.param("", False, id="empty"),
        pytest.param("?", True, id="only-mark"),
    ],
)
def test_ends_with_question(text: str, expected: bool) -> None:
    """Pinned #36."""
    assert ends_with_question(text) is expected


# --- budget ----------------------------------------------------------------------------------


def test_non_positive_budget_reads_nothing() -> None:
    assert brick([user("t1", "x")], budget=0) == ""
    assert render_brick(Guarded([user("t1", "x")], limit=0), LOCAL, -5) == ""
    assert DEFAULT_BUDGET_CHARS == 12000


def test_oversized_newest_unit_is_cut_not_dropped() -> None:
    """P6: one huge newest turn is cut to exactly the budget, head and tail kept."""
    text = "HEAD" + "x" * 20000 + "TAIL"
    history = [user("t1", "older"), reply("t1", "older answer"), reply("t2", text)]
    full_unit = f"Assistant (local): {text}\n"
    got = brick(history, budget=300)
    assert len(got) == 300
    assert got.startswith("Assistant (local): HEAD")
    assert got.endswith("TAIL\n")
    match = re.search(r"\n\.\.\. \[cut (\d+) chars\] \.\.\.\n", got)
    assert match is not None
    head, tail = got[: match.start()], got[match.end() :]
    assert full_unit.startswith(head)
    assert full_unit.endswith(tail)
    assert int(match.group(1)) == len(full_unit) - len(head) - len(tail)
    assert abs(len(head) - len(tail)) <= 1


@pytest.mark.parametrize("budget", [1, 5, 20])
def test_budget_smaller_than_cut_marker_keeps_the_head(budget: int) -> None:
    assert brick([reply("t1", "y" * 1000)], budget=budget) == "Assistant (local): yyyy"[:budget]


def test_reads_only_what_the_budget_needs() -> None:
    """Rebuild cost does not grow with the session: 100 or 100,000 turns read the same."""
    reads = []
    for turns in (100, 100_000):
        records = Guarded(qa_pairs_newest_first(turns), limit=3)
        assert (
            render_brick(records, LOCAL, 60)
            == f"User: turn {turns}\nAssistant (local): answer {turns}\n"
        )
        reads.append(records.read)
    assert reads == [3, 3]

    records = Guarded(qa_pairs_newest_first(100_000), limit=2000)
    assert len(render_brick(records, LOCAL, DEFAULT_BUDGET_CHARS)) <= DEFAULT_BUDGET_CHARS
    assert records.read < 2000


def test_read_cap_bounds_a_run_of_tiny_records() -> None:
    """A run of identical collapsed calls grows by nothing; the read cap still stops it."""
    endless = (reply(f"t{i}", "", calls=[grep("r")]) for i in itertools.count())
    records = Guarded(endless, limit=MAX_RECORDS_READ)
    got = render_brick(records, LOCAL, DEFAULT_BUDGET_CHARS)
    assert records.read == MAX_RECORDS_READ
    assert got == f"{GREP}  [{MAX_RECORDS_READ - 1} more grep calls collapsed]\n[Tool result] r\n"


@pytest.mark.parametrize(
    ("older_calls", "expected"),
    [
        pytest.param(
            [grep("r1")],
            f"{GREP}[Tool result] r3\n{READ_A}",
            id="marker-would-appear",
        ),
        pytest.param(
            [call("ls", {}, "x"), grep("r1")],
            f"{GREP}  [1 more grep calls collapsed]\n[Tool result] r3\n{READ_A}",
            id="run-grows-but-other-lines-overflow",
        ),
    ],
)
def test_run_of_calls_crossing_the_budget_cut(
    older_calls: list[ToolCallRecord], expected: str
) -> None:
    """A unit that lengthens the newest run but does not fit leaves the run as it was."""
    history = [
        user("t1", "search"),
        reply("t1", "", calls=older_calls),
        reply("t1", "", calls=[grep("r2")]),
        reply("t1", "", calls=[grep("r3"), call("read", {"path": "a"}, "text")]),
    ]
    newest = f"{GREP}[Tool result] r3\n{READ_A}"
    with_r2 = f"{GREP}  [1 more grep calls collapsed]\n[Tool result] r3\n{READ_A}"
    assert brick(history[2:], budget=len(newest)) == newest
    budget = len(expected)
    assert brick(history, budget=budget) == expected
    assert brick(history, budget=len(with_r2) + 1000).endswith(with_r2.replace("1 more", "2 more"))


def test_is_empty_claude_run_stops_as_soon_as_it_knows() -> None:
    busy = itertools.chain([reply("t9", "", CLAUDE, calls=[grep("r")])], qa_pairs_newest_first(10))
    assert not is_empty_claude_run(Guarded(busy, limit=1))
    chatty = (reply(f"t{i}", "x" * 50, CLAUDE) for i in itertools.count())
    assert not is_empty_claude_run(Guarded(chatty, limit=4))
    quiet = (reply(f"t{i}", "", CLAUDE) for i in itertools.count())
    assert is_empty_claude_run(Guarded(quiet, limit=MAX_RECORDS_READ))


# --- property: the lazy renderer equals a plain chronological one, within budget ------------


def reference_units(records: Sequence[TurnRecord], agent: Agent) -> list[tuple[TurnRecord, bool]]:
    """The brick's records, oldest first, with their status flag (chronological reference)."""
    answered = {r.turn_id for r in records if r.role == Role.ASSISTANT}
    by_agent = {r.turn_id for r in records if r.role == Role.ASSISTANT and r.agent == agent}
    units: list[tuple[TurnRecord, bool]] = []
    for r in records:
        failed = r.status != OK
        if r.role == Role.ASSISTANT:
            if r.agent == agent:
                units.append((r, failed))
        elif r.turn_id in by_agent:
            units.append((r, False))
        elif r.turn_id not in answered and r.agent == agent:
            units.append((r, failed))
    return units


def reference_brick(records: Sequence[TurnRecord], agent: Agent, budget: int) -> str:
    """Chronological reference: select, render with collapse, drop the oldest until it fits."""
    units = reference_units(records, agent)
    if budget <= 0 or not units:
        return ""
    for start in range(len(units)):
        text = render_units(units[start:], agent)
        if len(text) <= budget:
            return text
    return bricks._cut_to_budget(render_units(units[-1:], agent), budget)


def render_units(units: Sequence[tuple[TurnRecord, bool]], agent: Agent) -> str:
    lines: list[tuple[str, Any, str]] = []  # (kind, collapse key, text)
    for r, failed in units:
        status = f" [{r.status}]" if failed else ""
        if r.role == Role.USER:
            lines.append(("line", None, f"User{status}: {r.text}\n"))
            continue
        for c in r.tool_calls:
            args = json.dumps(c.input, separators=(",", ":"), sort_keys=True)
            lines.append(("call", (c.name, args), bricks._result_line(c)))
        if r.text or failed or not r.tool_calls:
            lines.append(("line", None, f"Assistant ({agent}){status}: {r.text}\n"))
    out, i = [], 0
    while i < len(lines):
        kind, key, text = lines[i]
        if kind == "line":
            out.append(text)
            i += 1
            continue
        j = i
        while j + 1 < len(lines) and lines[j + 1][1] == key:
            j += 1
        out.append(f"[Tool: {key[0]}] {key[1]}\n")
        if j > i:
            out.append(f"  [{j - i} more {key[0]} calls collapsed]\n")
        out.append(lines[j][2])
        i = j + 1
    return "".join(out)


# The vocabulary histories are made of, weighted towards answers without text that repeat one
# call, so runs of calls (and runs that cross the budget cut) are common.
EVENTS = (
    "user",
    "user",
    "user-other-agent",
    "user-cancelled",
    "answer",
    "answer",
    "answer-other-agent",
    "answer-text",
    "answer-long",
    "grep",
    "grep",
    "grep",
    "grep-b",
    "read-error",
    "read-long",
    "read-no-result",
)


def build_history(events: Sequence[str], agent: Agent) -> list[TurnRecord]:
    """Records from events; events before the first user record make a slice that starts
    mid-turn, as the store's slices can. Several answers of one agent in a turn are not stored
    today, but they let runs of calls span records, which the lazy renderer must get right too.
    """
    other = CLAUDE if agent == LOCAL else LOCAL
    records: list[TurnRecord] = []
    turn, status = "t0", OK
    for n, event in enumerate(events):
        if event.startswith("user"):
            turn = f"t{n + 1}"
            status = CANCELLED if event == "user-cancelled" else OK
            who = other if event == "user-other-agent" else agent
            records.append(user(turn, "uv", who, status))
        elif event.startswith("answer") or not records or records[-1].role == Role.USER:
            who = other if event == "answer-other-agent" else agent
            text = {"answer-text": "xy", "answer-long": "w" * 300}.get(event, "")
            records.append(reply(turn, text, who, (), status))
        else:
            records[-1].tool_calls.append(
                {
                    "grep": grep("r"),
                    "grep-b": call("grep", {"pattern": "b"}, "rb"),
                    "read-error": call("read", {"p": 1}, "no such file", is_error=True),
                    "read-long": call("read", {"p": 1}, "z" * 520),
                    "read-no-result": call("read", {"p": 1}, None),
                }[event]
            )
    return records


@settings(max_examples=200, deadline=None)
@given(
    events=st.lists(st.sampled_from(EVENTS), max_size=30),
    agent=st.sampled_from(Agent),
    data=st.data(),
)
def test_brick_matches_reference_and_never_exceeds_budget(
    events: list[str], agent: Agent, data: st.DataObject
) -> None:
    records = build_history(events, agent)
    units = reference_units(records, agent)
    full = render_units(units, agent)
    # Budgets scaled to the history, and often right at a unit boundary, where a run of calls
    # crossing the cut must be rendered from its remaining calls only.
    boundaries = [len(render_units(units[k:], agent)) for k in range(len(units))] or [0]
    budget = data.draw(
        st.one_of(
            st.integers(-5, len(full) + 5),
            st.tuples(st.sampled_from(boundaries), st.integers(-1, 1)).map(sum),
        ),
        label="budget",
    )
    got = brick(records, agent, budget)
    assert len(got) <= max(budget, 0)
    assert got == reference_brick(records, agent, budget)
    if budget > 0 and full:
        assert got  # never empty because one unit is too big (P6)
