"""Hand-off signals of the local tool loop, against the scripted model server.

Each signal ends the local part with a `LocalGaveUp` the engine can hand to Claude; with
`cut_short` (route auto) mid-turn signals stop the loop at once, without it (route local)
the model gets its error results and goes on.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from milk_lsp.agents.base import (
    EscalationRequested,
    LocalGaveUp,
    LocalSignal,
    ToolCallEvent,
    TurnDone,
)
from milk_lsp.agents.local.agent import LocalAgent
from milk_lsp.agents.local.watch import (
    LOOK_FIRST,
    MAKE_THE_CHANGE,
    NUDGE,
    Nudge,
    TurnWatch,
    asks_about_code,
    asks_for_change,
    embedded_call,
)
from tests import test_local_agent
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


# the scripted model server and an agent on it, as in the agent's own tests
server = test_local_agent.server
agent = test_local_agent.agent


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


@pytest.mark.parametrize("text", ["", "### ###", "```\n```"])
async def test_a_reply_without_words_is_an_empty_reply(
    server: FakeOpenAIServer, agent: LocalAgent, text: str
) -> None:
    server.enqueue({"text": text})
    events = await collect(agent, StandInTools(), cut_short=False)
    gave_up(events, LocalSignal.EMPTY_REPLY)


async def test_a_claim_about_the_code_made_without_looking_gets_one_look_first_nudge(
    server: FakeOpenAIServer, agent: LocalAgent
) -> None:
    server.enqueue(
        {"text": "It is defined in `src/smart_truncate.py`."},
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "slugify.py"}}]},
        {"text": "It is defined in slugify/slugify.py."},
    )
    tools = StandInTools()
    events = await collect(agent, tools, cut_short=True)
    assert events[-1] == TurnDone()
    assert server.requests[1]["messages"][-1] == {"role": "user", "content": LOOK_FIRST}
    assert [name for _, name, _ in tools.calls] == ["read_file"]


async def test_small_talk_and_checked_answers_get_no_nudge(
    server: FakeOpenAIServer, agent: LocalAgent
) -> None:
    server.enqueue({"text": "Hello! How can I help with this project?"})
    events = await collect(agent, StandInTools(), cut_short=True)
    assert events[-1] == TurnDone()
    assert len(server.requests) == 1


async def test_an_escalation_written_as_text_is_the_call(
    server: FakeOpenAIServer, agent: LocalAgent
) -> None:
    server.enqueue({"text": "escalate_to_claude"})
    events = await collect(agent, StandInTools(), offer_escalation=True, cut_short=True)
    assert isinstance(events[-1], EscalationRequested)
    shown = [e for e in events if isinstance(e, ToolCallEvent)]
    assert shown[-1].name == "escalate_to_claude" and shown[-1].status.value == "completed"


def test_embedded_call_takes_the_first_written_call_when_it_can_run() -> None:
    offered = {"read_file", "list_dir"}
    one = f"Sure: {json.dumps(READ_A)} then I answer."
    plan = f"{json.dumps(READ_A)} and {json.dumps({'name': 'list_dir', 'arguments': {}})}"
    found = embedded_call(one, offered)
    assert found is not None and found.call.name == "read_file" and found.written == 1
    found = embedded_call(plan, offered)
    assert found is not None and found.call.name == "read_file" and found.written == 2
    invented_first = f'{{"name": "rm_rf", "arguments": {{}}}} {json.dumps(READ_A)}'
    assert embedded_call(invented_first, offered) is None
    assert embedded_call('{"name": "rm_rf", "arguments": {}}', offered) is None
    assert embedded_call("no call here", offered) is None


async def test_a_plan_of_calls_runs_its_first_step_and_says_so(
    server: FakeOpenAIServer, agent: LocalAgent
) -> None:
    list_b = {"name": "list_dir", "arguments": {"path": "b"}}
    text = f"First:\n```json\n{json.dumps(READ_A)}\n```\nthen:\n```json\n{json.dumps(list_b)}\n```"
    server.enqueue({"text": text}, {"text": "a.py defines main()."})
    tools = StandInTools()
    events = await collect(agent, tools, cut_short=True)
    assert events[-1] == TurnDone()
    assert [name for _, name, _ in tools.calls] == ["read_file"]
    tool_message = server.requests[1]["messages"][-1]
    assert "milk ran only the first call you wrote; 1 more were not run" in tool_message["content"]


def test_past_tense_mentions_of_tools_are_not_described_calls() -> None:
    watch = TurnWatch(frozenset({"read_file"}), cut_short=True)
    watch.after_call("read_file", {"path": "a.py"}, is_error=False, denied=False, output="x")
    assert watch.final_reply("I used read_file on a.py: it defines main().", reasoned=False) is None
    assert watch.final_reply("You can use read_file to see a.py.", reasoned=False) == Nudge(NUDGE)


async def test_an_answer_still_unchecked_after_the_nudge_is_handed_off_on_auto(
    server: FakeOpenAIServer, agent: LocalAgent
) -> None:
    server.enqueue(
        {"text": "The default of max_length is 100."},
        {"text": "As I said, the default of max_length is 100."},
    )
    events = await collect(agent, StandInTools(), cut_short=True)
    gave_up(events, LocalSignal.UNCHECKED_ANSWER)


async def test_on_route_local_an_unchecked_answer_stands_after_the_nudge(
    server: FakeOpenAIServer, agent: LocalAgent
) -> None:
    server.enqueue(
        {"text": "The default of max_length is 100."},
        {"text": "The default of max_length is 100."},
    )
    events = await collect(agent, StandInTools(), cut_short=False)
    assert events[-1] == TurnDone()


async def test_tool_markup_written_as_the_answer_is_a_signal(
    server: FakeOpenAIServer, agent: LocalAgent
) -> None:
    server.enqueue(
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.py"}}]},
        {"text": "<tool_response> a.py:1: X = 1 </tool_response>"},
    )
    events = await collect(agent, StandInTools(), cut_short=True)
    assert "tool-call markup" in gave_up(events, LocalSignal.UNRUNNABLE_CALL).detail


def test_asks_for_change_reads_the_first_word() -> None:
    assert asks_for_change("Rename the constant NUMBERS_PATTERN to DIGIT_GROUPS")
    assert asks_for_change("add a docstring to slugify_params")
    assert not asks_for_change("how do I add a docstring?")
    assert not asks_for_change("where is smart_truncate defined?")


async def test_a_change_asked_for_and_not_made_gets_one_nudge_then_is_a_signal(
    server: FakeOpenAIServer,
) -> None:
    server.enqueue(
        {"text": "To rename it, replace the name in a.py."},
        {"text": "You can do it with your editor."},
    )
    local = LocalAgent(settings_for(server))
    try:
        events = await collect_change(local, EditTools())
    finally:
        await local.aclose()
    gave_up(events, LocalSignal.EDIT_NOT_MADE)
    assert server.requests[1]["messages"][-1]["content"] == MAKE_THE_CHANGE


async def test_a_change_made_after_the_nudge_ends_well(server: FakeOpenAIServer) -> None:
    edit = {
        "name": "edit_file",
        "arguments": {"path": "a.py", "old_text": "x = 1", "new_text": "y"},
    }
    server.enqueue(
        {"text": "Sure, I will rename it."}, {"tool_calls": [edit]}, {"text": "Renamed."}
    )
    local = LocalAgent(settings_for(server))
    try:
        events = await collect_change(local, EditTools())
    finally:
        await local.aclose()
    assert events[-1] == TurnDone()


async def collect_change(local: LocalAgent, tools: StandInTools) -> list[Any]:
    run = local.run(
        [{"role": "user", "content": "rename x"}],
        tools,
        offer_escalation=True,
        cut_short=True,
        change_requested=True,
    )
    return [event async for event in run]


def test_milk_tags_and_repeated_fragments_are_not_an_answer() -> None:
    watch = TurnWatch(frozenset({"read_file"}), cut_short=True)
    watch.after_call("read_file", {"path": "a.py"}, is_error=False, denied=False, output="x")
    stuck = watch.final_reply(
        "### ### ### ### ### ### ### ### <milk:percept:n>x</milk:percept:n>", reasoned=False
    )
    assert isinstance(stuck, LocalGaveUp) and stuck.signal is LocalSignal.EMPTY_REPLY


def test_asks_about_code() -> None:
    assert asks_about_code("What is the default of max_length?")
    assert asks_about_code("where is the parser defined?")
    assert asks_about_code("what does `slugify()` do")
    assert not asks_about_code("hi there")
    assert not asks_about_code("thanks, that helps")


async def test_a_question_about_the_code_answered_twice_without_looking_is_handed_off(
    server: FakeOpenAIServer, agent: LocalAgent
) -> None:
    server.enqueue({"text": "It is 100."}, {"text": "Sorry, I cannot tell without looking."})
    run = agent.run(
        [{"role": "user", "content": "what is the default of max_length?"}],
        StandInTools(),
        offer_escalation=True,
        cut_short=True,
        about_code=True,
    )
    events = [event async for event in run]
    gave_up(events, LocalSignal.UNCHECKED_ANSWER)
    assert server.requests[1]["messages"][-1]["content"] == LOOK_FIRST
