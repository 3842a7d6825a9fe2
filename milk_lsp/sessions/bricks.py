"""Summary bricks (ADR 0029): one agent's records since the hand-off, rendered within a budget.

Pure functions over `TurnRecord`s. The store hands in the records after the boundary, newest
first, as a lazy iterable; these functions read only as far as they need, so the cost of a
rebuild does not grow with the length of the session.

Rendering, one unit per record (each line ends in `\\n`)::

    User: <text>
    [Tool: <name>] <input as compact JSON, keys sorted>
    [Tool result] <output>              ([Tool error] when the call failed,
                                         "(no result)" when it never returned)
    Assistant (<agent>): <text>         (after that record's tool calls)

- A result over `TOOL_RESULT_CAP_CHARS` characters keeps its first 500 and gets
  `\\n... (truncated)`. ANSI escape sequences are removed from texts and outputs.
- An assistant record with tool calls and no text prints no `Assistant` line.
- A record of a turn that did not end ok carries its status: `Assistant (local) [cancelled]: …`,
  or `User [error]: …` on a user record whose turn got no answer. Only one record of a turn
  carries it (the answer when there is one).
- Collapse (ADR 0029, improved per P12): consecutive calls with the same name *and* the same
  input, within and across records, print the first call line, then
  `  [N more <name> calls collapsed]` (N = run length - 1), then the result of the run's last
  call. The original compared names only and printed every result after the run.
- Budget (characters): units are taken newest first and the oldest are dropped, so the brick
  never exceeds the budget. When the newest unit alone is over budget it is cut
  (head + `\\n... [cut N chars] ...\\n` + tail) to exactly the budget rather than emptying the
  brick (P6).
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Container, Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol

from milk_lsp.sessions.model import Agent, RecordStatus, Role, ToolCallRecord, TurnRecord

DEFAULT_BUDGET_CHARS = 12000
"""Per-brick budget (`contextBudgetChars`)."""
TOOL_RESULT_CAP_CHARS = 500
EMPTY_CLAUDE_TEXT_CHARS = 200
"""A Claude run with less assistant text than this and no tool calls is "empty"."""
MAX_RECORDS_READ = 5000
"""Records read at most per call, so a long run of tiny records cannot make a rebuild unbounded."""

_TRUNCATED = "\n... (truncated)"
_NO_RESULT = "(no result)"
# CSI (colours, cursor moves) and OSC (titles, hyperlinks) sequences from terminal output.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?")


UNDONE_MARK = " [undone by the user: the files it changed were put back]"
"""How a turn the user undid reads in a brick: its edits are no longer in the files."""


def render_brick(
    records_newest_first: Iterable[TurnRecord],
    agent: Agent,
    budget_chars: int,
    undone: Container[str] = (),
) -> str:
    """Render `agent`'s brick from the records after its boundary, newest first.

    Parameters
    ----------
    records_newest_first
        The slice after the boundary (local brick: after Claude's last assistant record;
        Claude brick: after the local agent's last one), newest first. Read lazily: reading
        stops at the first unit that no longer fits, or after `MAX_RECORDS_READ` records.
    agent
        The agent whose brick this is.
    budget_chars
        Budget in characters (Python `len`); `<= 0` gives `""`.
    undone
        The turns the user undid (`milk/turn/undo`): each of their lines says so.
    """
    if budget_chars <= 0:
        return ""
    window = _Window()
    for record, marked in _brick_records(records_newest_first, agent):
        mark = window.mark()
        window.add_unit(record, agent, marked, record.turn_id in undone)
        if window.size > budget_chars:
            if mark.item_count == 0:
                return _cut_to_budget(window.render(), budget_chars)
            window.rollback(mark)
            break
    return window.render()


def is_empty_claude_run(records_newest_first: Iterable[TurnRecord]) -> bool:
    """Whether the slice after the local agent's last answer is an empty Claude run.

    Empty means no tool calls on Claude's assistant records (Q3: the original looked at user
    records) and under `EMPTY_CLAUDE_TEXT_CHARS` characters of Claude assistant text in all.
    An empty run leaves `last_claude_summary` as it was. Reading stops as soon as the answer
    is known; after `MAX_RECORDS_READ` records with no evidence either way the run counts as
    empty.
    """
    text_chars = 0
    for record in itertools.islice(records_newest_first, MAX_RECORDS_READ):
        if record.role != Role.ASSISTANT or record.agent != Agent.CLAUDE:
            continue
        if record.tool_calls:
            return False
        text_chars += len(record.text)
        if text_chars >= EMPTY_CLAUDE_TEXT_CHARS:
            return False
    return True


def ends_with_question(text: str) -> bool:
    """Whether the last non-blank line of `text`, without trailing blanks, ends in `?`."""
    for line in reversed(text.splitlines()):
        stripped = line.rstrip(" \t\r")
        if stripped:
            return stripped.endswith("?")
    return False


# --- private helpers ---------------------------------------------------------------------


def _brick_records(
    records_newest_first: Iterable[TurnRecord], agent: Agent
) -> Iterator[tuple[TurnRecord, bool]]:
    """Yield the records that belong to `agent`'s brick, newest first, with their status flag.

    A turn's records are stored user first, so newest first its answers come before its user
    record: when the user record arrives, every answer of its turn has been seen.
    """
    answered_by_agent: set[str] = set()
    answered: set[str] = set()
    for record in itertools.islice(records_newest_first, MAX_RECORDS_READ):
        failed = record.status != RecordStatus.OK
        if record.role == Role.ASSISTANT:
            answered.add(record.turn_id)
            if record.agent == agent:
                answered_by_agent.add(record.turn_id)
                yield record, failed
        elif record.turn_id in answered_by_agent:
            yield record, False
        elif record.turn_id not in answered and record.agent == agent:
            yield record, failed


@dataclass
class _Run:
    """A run of identical consecutive tool calls, rendered as one call, a marker, one result."""

    key: tuple[str, str]
    call_line: str
    result_line: str
    """The result of the run's newest call."""
    count: int = 1

    def size(self) -> int:
        return len(self.call_line) + len(self._marker()) + len(self.result_line)

    def render(self) -> str:
        return self.call_line + self._marker() + self.result_line

    def _marker(self) -> str:
        if self.count < 2:
            return ""
        return f"  [{self.count - 1} more {self.key[0]} calls collapsed]\n"


@dataclass(frozen=True)
class _Mark:
    item_count: int
    front_run_count: int
    size: int


class _Window:
    """The brick being built newest first; `items` is in reverse chronological order.

    Adding an older unit never shrinks the rendering (it adds lines, or lengthens the run at
    the front), so the first unit that overflows the budget ends the window.
    """

    def __init__(self) -> None:
        self.items: list[str | _Run] = []
        self.size = 0

    def mark(self) -> _Mark:
        front = self.items[-1] if self.items else None
        front_count = front.count if isinstance(front, _Run) else 0
        return _Mark(len(self.items), front_count, self.size)

    def rollback(self, mark: _Mark) -> None:
        del self.items[mark.item_count :]
        front = self.items[-1] if self.items else None
        if isinstance(front, _Run):
            front.count = mark.front_run_count
        self.size = mark.size

    def add_unit(self, record: TurnRecord, agent: Agent, marked: bool, undone: bool) -> None:
        status = f" [{record.status}]" if marked else ""
        status += UNDONE_MARK if undone else ""
        text = _clean(record.text)
        if record.role == Role.USER:
            self._add_line(f"User{status}: {text}\n")
            return
        if text or marked or not record.tool_calls:
            self._add_line(f"Assistant ({agent}){status}: {text}\n")
        for call in reversed(record.tool_calls):
            self._add_call(call)

    def render(self) -> str:
        return "".join(
            item if isinstance(item, str) else item.render() for item in reversed(self.items)
        )

    def _add_line(self, line: str) -> None:
        self.items.append(line)
        self.size += len(line)

    def _add_call(self, call: ToolCallRecord) -> None:
        arguments = json.dumps(
            call.input, separators=(",", ":"), sort_keys=True, ensure_ascii=False, default=str
        )
        key = (call.name, arguments)
        front = self.items[-1] if self.items else None
        if isinstance(front, _Run) and front.key == key:
            before = front.size()
            front.count += 1
            self.size += front.size() - before
            return
        run = _Run(key, f"[Tool: {call.name}] {arguments}\n", _result_line(call))
        self.items.append(run)
        self.size += run.size()


def _result_line(call: ToolCallRecord) -> str:
    label = "[Tool error]" if call.is_error else "[Tool result]"
    if call.output is None:
        return f"{label} {_NO_RESULT}\n"
    output = _clean(call.output)
    if len(output) > TOOL_RESULT_CAP_CHARS:
        output = output[:TOOL_RESULT_CAP_CHARS] + _TRUNCATED
    return f"{label} {output}\n"


def _clean(text: str) -> str:
    return _ANSI.sub("", text) if "\x1b" in text else text


def _cut_to_budget(text: str, budget: int) -> str:
    """Cut `text` to exactly `budget` characters: head, a marker naming the cut, tail.

    When even the marker does not fit, the head alone is kept.
    """
    if len(text) <= budget:
        return text
    removed = len(text) - budget
    while True:
        marker = f"\n... [cut {removed} chars] ...\n"
        keep = budget - len(marker)
        if keep < 0:
            return text[:budget]
        # `removed` only grows and is bounded by len(text), so this settles in a few steps.
        if len(text) - keep == removed:
            break
        removed = len(text) - keep
    head = keep // 2
    return text[:head] + marker + text[len(text) - (keep - head) :]


# -- rebuilding a session's bricks from its records ------------------------------------------


class RecordReader(Protocol):
    """The paged, newest-first reads a brick rebuild needs (the store's `StoreReader`)."""

    def last_assistant_position(self, session_id: str, agent: Agent) -> int: ...

    def undone_turns(self, session_id: str) -> frozenset[str]: ...

    def records_newest_first(
        self, session_id: str, after_position: int
    ) -> Iterator[TurnRecord]: ...


class BrickOwner(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def last_claude_summary(self) -> str: ...


def rebuild_bricks(reader: RecordReader, session: BrickOwner, budget: int) -> tuple[str, str]:
    """(local brick, Claude brick) after a turn: the local brick covers the local records
    since Claude last spoke; the Claude brick is re-rendered only when Claude spoke last (and
    not in an empty run), else it keeps its stored text. Reads only as far back as needed,
    so the cost is flat in the session's length."""
    claude_at = reader.last_assistant_position(session.id, Agent.CLAUDE)
    undone = reader.undone_turns(session.id)
    local = render_brick(
        reader.records_newest_first(session.id, claude_at), Agent.LOCAL, budget, undone
    )
    local_at = reader.last_assistant_position(session.id, Agent.LOCAL)
    claude = session.last_claude_summary
    if claude_at > local_at and not is_empty_claude_run(
        reader.records_newest_first(session.id, local_at)
    ):
        claude = render_brick(
            reader.records_newest_first(session.id, local_at), Agent.CLAUDE, budget, undone
        )
    return local, claude


def local_brick_with(
    pending: Iterable[TurnRecord], reader: RecordReader, session: BrickOwner, budget: int
) -> str:
    """The local brick with records not stored yet in front (the running turn's local part,
    before a hand-off)."""
    claude_at = reader.last_assistant_position(session.id, Agent.CLAUDE)
    stored = reader.records_newest_first(session.id, claude_at)
    undone = reader.undone_turns(session.id)
    return render_brick(itertools.chain(pending, stored), Agent.LOCAL, budget, undone)
