"""Hand-off signals of the local tool loop, against the scripted model server.

Each signal ends the local part with a `LocalGaveUp` the engine can hand to Claude; with
`cut_short` (route auto) mid-turn signals stop the loop at once, without it (route local)
the model gets its error results and goes on.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from milk_lsp.agents.base import LocalGaveUp, LocalSignal, ToolCallEvent, TurnDone
from milk_lsp.agents.local import LocalAgent
from milk_lsp.agents.local_watch import NUDGE, TurnWatch, embedded_call
from tests.fakes.openai_server import FakeOpenAIServer
from tests.test_local_agent import Outcome, StandInTools, collect, settings_for, text_of

READ_A = {"name": "read_file", "arguments": {"path": "a.py"}}


class EditTools(StandInTools):
    """Stand-in tools with an `edit_file` that fails while `old_text` is "guess"."""

    names = frozenset({"read_file", "list_dir", "edit_file"})

    def __init__(self) -> None:
        super().__init__(
            {
                "edit_file": lambda args: (
                    Outcome("error: old_text was not found in a.py", is_error=True)
                    if args.get("old_text") == "guess"
                    else Outcome("edited a.py")
                )
            }
        )


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture
async def agent(server: FakeOpenAIServer) -> AsyncIterator[LocalAgent]:
    local = LocalAgent(settings_for(server))
    yield local
    await local.aclose()


def gave_up(events: list[Any], signal: LocalSignal) -> LocalGaveUp:
    last = events[-1]
    assert isinstance(last, LocalGaveUp), events
    assert last.signal is signal, last
    return last


async def test_third_identical_call_stops_the_loop_on_auto(
    server: FakeOpenAIServer, agent: LocalAgent
) -> None:
    server.enqueue({"tool_calls": [READ_A], "repeat": 5})
    tools = StandInTools()
    events = await collect(agent, tools, cut_short=True)
    last = gave_up(events, LocalSignal.REPEATED_CALL)
    assert "3 times" in last.detail and "read_file" in last.detail
    assert len(tools.calls) == 2, "the third identical call is not run"
    assert len(last.tried) == 2
    shown = [e for e in events if isinstance(e, ToolCallEvent)]
    assert shown[-1].status.value == "failed", "the cut call is shown as not run"


async def test_route_local_lets_repeats_run_until_the_round_limit(
    server: FakeOpenAIServer,
) -> None:
    server.enqueue({"tool_calls": [READ_A], "repeat": 5})
    local = LocalAgent(settings_for(server, max_tool_rounds=4))
    tools = StandInTools()
    try:
        events = await collect(local, tools, cut_short=False)
    finally:
        await local.aclose()
    gave_up(events, LocalSignal.ROUND_LIMIT)
    assert len(tools.calls) == 4


async def test_a_tool_that_was_not_offered_stops_the_loop_on_auto(
    server: FakeOpenAIServer, agent: LocalAgent
) -> None:
    server.enqueue(
        {"tool_calls": [{"name": "design_plugin_system", "arguments": {}}]}, {"text": "x"}
    )
    events = await collect(agent, StandInTools(), cut_short=True)
    last = gave_up(events, LocalSignal.UNKNOWN_TOOL)
    assert "design_plugin_system" in last.detail
    assert len(server.requests) == 1


async def test_on_route_local_an_unknown_tool_gets_its_error_and_the_loop_goes_on(
    server: FakeOpenAIServer, agent: LocalAgent
) -> None:
    server.enqueue(
        {"tool_calls": [{"name": "design_plugin_system", "arguments": {}}]},
        {"text": "Here is my answer."},
    )
    events = await collect(agent, StandInTools(), cut_short=False)
    assert events[-1] == TurnDone()
    assert "no tool named" in json.dumps(server.requests[1]["messages"][-1])


async def test_a_described_call_gets_one_nudge_then_is_a_signal(
    server: FakeOpenAIServer, agent: LocalAgent
) -> None:
    prose = "You can use the `read_file` function with the path a.py to see it."
    server.enqueue({"text": prose}, {"text": "Then call read_file on a.py yourself."})
    events = await collect(agent, StandInTools(), cut_short=True)
    gave_up(events, LocalSignal.DESCRIBED_CALL)
    assert len(server.requests) == 2
    assert server.requests[1]["messages"][-1] == {"role": "user", "content": NUDGE}


async def test_the_nudge_can_fix_the_turn(server: FakeOpenAIServer, agent: LocalAgent) -> None:
    server.enqueue(
        {"text": "I will call read_file on a.py."},
        {"tool_calls": [READ_A]},
        {"text": "a.py holds the entry point."},
    )
    tools = StandInTools()
    events = await collect(agent, tools, cut_short=True)
    assert events[-1] == TurnDone()
    assert [name for _, name, _ in tools.calls] == ["read_file"]


async def test_a_failed_edit_left_unfixed_is_a_signal(
    server: FakeOpenAIServer, agent: LocalAgent
) -> None:
    edit = {
        "name": "edit_file",
        "arguments": {"path": "a.py", "old_text": "guess", "new_text": "y"},
    }
    server.enqueue({"tool_calls": [edit]}, {"text": "Run sed yourself to change it."})
    events = await collect(agent, EditTools(), cut_short=False)
    last = gave_up(events, LocalSignal.FAILED_EDIT)
    assert "a.py" in last.detail and "not found" in last.detail
    assert any("edit_file" in line and "error" in line for line in last.tried)


async def test_a_failed_edit_redone_right_ends_well(
    server: FakeOpenAIServer, agent: LocalAgent
) -> None:
    bad = {"name": "edit_file", "arguments": {"path": "a.py", "old_text": "guess", "new_text": "y"}}
    good = {
        "name": "edit_file",
        "arguments": {"path": "a.py", "old_text": "x = 1", "new_text": "y"},
    }
    server.enqueue({"tool_calls": [bad]}, {"tool_calls": [good]}, {"text": "Changed x."})
    events = await collect(agent, EditTools(), cut_short=True)
    assert events[-1] == TurnDone()


async def test_a_denied_edit_is_the_users_choice_not_a_failure(
    server: FakeOpenAIServer, agent: LocalAgent
) -> None:
    edit = {"name": "edit_file", "arguments": {"path": "a.py", "old_text": "x", "new_text": "y"}}
    tools = EditTools()
    tools.answers["edit_file"] = lambda args: Outcome("denied", is_error=True, denied=True)
    server.enqueue({"tool_calls": [edit]}, {"text": "You declined the edit."})
    events = await collect(agent, tools, cut_short=True)
    assert events[-1] == TurnDone()


async def test_a_call_in_prose_and_a_fence_is_run(
    server: FakeOpenAIServer, agent: LocalAgent
) -> None:
    text = f"To answer, I read the file:\n```json\n{json.dumps(READ_A)}\n```\nLet me check."
    server.enqueue({"text": text}, {"text": "a.py defines main()."})
    tools = StandInTools()
    events = await collect(agent, tools, cut_short=True)
    assert events[-1] == TurnDone()
    assert [(name, args) for _, name, args in tools.calls] == [("read_file", {"path": "a.py"})]
    assert text_of(events).endswith("a.py defines main().")


async def test_an_invented_tool_written_as_text_is_a_signal(
    server: FakeOpenAIServer, agent: LocalAgent
) -> None:
    text = '```json\n{"name": "design_plugin_system", "arguments": {"scope": "all"}}\n```'
    server.enqueue({"text": text})
    events = await collect(agent, StandInTools(), cut_short=True)
    last = gave_up(events, LocalSignal.UNRUNNABLE_CALL)
    assert "design_plugin_system" in last.detail


async def test_an_empty_reply_is_a_signal(server: FakeOpenAIServer, agent: LocalAgent) -> None:
    server.enqueue({"text": ""})
    events = await collect(agent, StandInTools(), cut_short=False)
    gave_up(events, LocalSignal.EMPTY_REPLY)


def test_embedded_call_needs_exactly_one_runnable_call() -> None:
    offered = {"read_file", "list_dir"}
    one = f"Sure: {json.dumps(READ_A)} then I answer."
    two = f"{json.dumps(READ_A)} and {json.dumps({'name': 'list_dir', 'arguments': {}})}"
    call = embedded_call(one, offered)
    assert call is not None and call.name == "read_file"
    assert embedded_call(two, offered) is None
    assert embedded_call('{"name": "rm_rf", "arguments": {}}', offered) is None
    assert embedded_call("no call here", offered) is None


def test_past_tense_mentions_of_tools_are_not_described_calls() -> None:
    watch = TurnWatch(frozenset({"read_file"}), cut_short=True)
    assert watch.final_reply("I used read_file on a.py: it defines main().", reasoned=False) is None
    assert watch.final_reply("You can use read_file to see a.py.", reasoned=False) == "nudge"
