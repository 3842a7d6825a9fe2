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
    NoticeEvent,
    ToolCallEvent,
    TurnDone,
    TurnFailed,
)
from milk_lsp.agents.local.agent import LocalAgent
from milk_lsp.agents.local.judge.watch import (
    MAKE_THE_CHANGE,
    NUDGE,
    Grounded,
    Look,
    Nudge,
    TurnWatch,
)
from milk_lsp.agents.local.reply.written import embedded_call
from milk_lsp.guided.answers import ASK_TO_LOOK, ASKED_TO_LOOK_NOTICE, LOOKED_NOTICE
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


def test_embedded_call_with_code_quotes_left_unescaped_is_the_call_it_spells() -> None:
    """Qwen2.5-Coder-1.5B on bench/real_tasks (humanize's now-docstring): an edit_file call
    as a ```json block whose new_text holds a docstring's triple quotes unescaped."""
    offered = {"edit_file"}
    text = (
        '```json\n{\n  "name": "edit_file",\n  "arguments": {\n    "path": "t.py",\n'
        '    "old_text": "def _now():\\n    return 1",\n'
        '    "new_text": "def _now():\\n    """Now.""" \\n    d = {"a": [1]}\\n    return 1"\n'
        "  }\n}\n```"
    )
    found = embedded_call(text, offered)
    assert found is not None and found.call.name == "edit_file"
    assert json.loads(found.call.arguments)["new_text"] == (
        'def _now():\n    """Now.""" \n    d = {"a": [1]}\n    return 1'
    )
    assert embedded_call(text.replace('"old_text"', "old_text"), offered) is None  # no object


async def test_an_edit_repeated_after_it_was_made_ends_the_turn_as_done(
    server: FakeOpenAIServer,
) -> None:
    """Qwen2.5-Coder-1.5B on bench/real_tasks (humanize's now-docstring): the right edit,
    then the same call twice more although milk said it was made inside `_now`. The change
    is in place: the turn ends done, not as a loop (`repeated_call`) handed to Claude. Its
    junk edit of a docstring elsewhere, repeated (number-parse), stays a loop."""
    edit = {"name": "edit_file", "arguments": {"path": "a.py", "old_text": "x", "new_text": "y"}}
    made = "a.py already has new_text (line 1) and no longer has old_text: this edit was made"
    for inside, ends_done in ((", inside x as the request asks", True), ("", False)):
        tools = EditTools()
        answers = iter(
            [
                Outcome("Edited a.py: lines 1-1."),
                Outcome(f"{made} already{inside}; nothing to do.", made_already=bool(inside)),
            ]
        )
        tools.answers["edit_file"] = lambda args, answers=answers: next(answers)
        server.enqueue({"tool_calls": [edit]}, {"tool_calls": [edit]}, {"tool_calls": [edit]})
        local = LocalAgent(settings_for(server))
        try:
            events = await collect_change(local, tools)
        finally:
            await local.aclose()
        assert len(tools.calls) == 2  # the third was not run
        if not ends_done:  # made elsewhere than what the request names: still a loop
            gave_up(events, LocalSignal.REPEATED_CALL)
            continue
        assert events[-1] == TurnDone(), events
        notices = " ".join(e.message for e in events if isinstance(e, NoticeEvent))
        assert "The local model made its edit of a.py and then repeated it; milk ended" in notices


def test_a_turn_with_its_edit_made_is_judged_by_the_edit_not_the_words() -> None:
    """humanize's precision: the right edit, then an answer quoting the edited function;
    what the words name is not checked against the workspace (the edit is the evidence)."""
    watch = TurnWatch(frozenset({"edit_file"}), cut_short=True)
    edit = {"path": "n.py", "old_text": "p=2", "new_text": "p=3"}
    watch.after_call("edit_file", edit, is_error=False, denied=False, output="Edited n.py.")
    unfounded = Grounded(claims=2, problems=("`NumberOrString` is in none of the lines",))
    assert (
        watch.final_reply("I edited scientific in n.py.", reasoned=False, grounded=unfounded)
        is None
    )
    asked = TurnWatch(frozenset({"edit_file"}), cut_short=True)  # no edit: the answer is judged
    repair = asked.final_reply("It is in n.py.", reasoned=False, grounded=unfounded)
    assert isinstance(repair, Nudge) and "NumberOrString" in repair.text  # sent back once
    verdict = asked.final_reply("It is in n.py.", reasoned=False, grounded=unfounded)
    assert isinstance(verdict, LocalGaveUp) and verdict.signal is LocalSignal.UNGROUNDED_ANSWER


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
    # the reply was ended after its first call (`runaway`): the plan's rest never came
    assert "milk ran the call you wrote and ended your reply there" in tool_message["content"]


def test_past_tense_mentions_of_tools_are_not_described_calls() -> None:
    watch = TurnWatch(frozenset({"read_file"}), cut_short=True)
    watch.after_call("read_file", {"path": "a.py"}, is_error=False, denied=False, output="x")
    assert watch.final_reply("I used read_file on a.py: it defines main().", reasoned=False) is None
    assert watch.final_reply("You can use read_file to see a.py.", reasoned=False) is None
    nudge = watch.final_reply("Now: read_file(path='b.py')", reasoned=False)
    assert isinstance(nudge, Nudge) and nudge.text == NUDGE


async def test_tool_markup_written_as_the_answer_is_a_signal(
    server: FakeOpenAIServer, agent: LocalAgent
) -> None:
    server.enqueue(
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.py"}}]},
        {"text": "<tool_response> a.py:1: X = 1 </tool_response>"},
    )
    events = await collect(agent, StandInTools(), cut_short=True)
    assert "tool-call markup" in gave_up(events, LocalSignal.UNRUNNABLE_CALL).detail


async def test_a_change_asked_for_and_not_made_gets_one_nudge_then_is_a_signal(
    server: FakeOpenAIServer,
) -> None:
    server.enqueue(
        {"tool_calls": [finish_call("change", "answered", "Replace the name in a.py.")]},
        {"tool_calls": [finish_call("change", "answered", "Do it with your editor.")]},
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
        {"tool_calls": [finish_call("change", "answered", "Sure, I will rename it.")]},
        {"tool_calls": [edit]},
        {"text": "Renamed."},
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
    )
    return [event async for event in run]


def finish_call(intent: str, outcome: str, answer: str, **more: Any) -> dict[str, Any]:
    """The model's `finish` call: what it read the request as, how it ended, its answer."""
    arguments = {"intent": intent, "outcome": outcome, "answer": answer, **more}
    return {"name": "finish", "arguments": arguments}


def test_milk_tags_and_repeated_fragments_are_not_an_answer() -> None:
    watch = TurnWatch(frozenset({"read_file"}), cut_short=True)
    watch.after_call("read_file", {"path": "a.py"}, is_error=False, denied=False, output="x")
    stuck = watch.final_reply(
        "### ### ### ### ### ### ### ### <milk:percept:n>x</milk:percept:n>", reasoned=False
    )
    assert isinstance(stuck, LocalGaveUp) and stuck.signal is LocalSignal.EMPTY_REPLY


# ---- looking first, and judging the answer by evidence (issue 17) -------------------------


class ScriptedJudge:
    """An `AnswerJudge` that reports what it was given: `missing` for every answer, and
    milk's own look as `looked`."""

    def __init__(
        self, missing: tuple[str, ...] = (), looked: str | None = "milk looked: x"
    ) -> None:
        self.missing = missing
        self.looked = looked
        self.judged: list[tuple[str, list[str]]] = []
        self.looks = 0

    def judge(self, answer: str, tool_outputs: Any, *, looked: bool, finish: Any) -> Grounded:
        self.judged.append((answer, list(tool_outputs)))
        return Grounded(len(self.missing) or 1, self.missing)

    async def look(self) -> Look:
        self.looks += 1
        if self.looked is None:
            return Look(ASK_TO_LOOK, ASKED_TO_LOOK_NOTICE, found=False)
        return Look(self.looked, LOOKED_NOTICE, found=True)


async def run_judged(
    agent: LocalAgent, judge: ScriptedJudge, *, look_first: bool, cut_short: bool = True
) -> list[Any]:
    run = agent.run(
        [{"role": "user", "content": "what does greet return?"}],
        StandInTools(),
        offer_escalation=False,
        cut_short=cut_short,
        look_first=look_first,
        judge=judge,
    )
    return [event async for event in run]


async def test_a_workspace_question_requires_a_tool_call_first(
    server: FakeOpenAIServer, agent: LocalAgent
) -> None:
    server.enqueue({"tool_calls": [READ_A]}, {"text": "greet returns 'hello'."})
    judge = ScriptedJudge()
    events = await run_judged(agent, judge, look_first=True)
    assert events[-1] == TurnDone()
    assert server.requests[0]["tool_choice"] == "required"
    assert "tool_choice" not in server.requests[1], "only the first request is made to look"
    assert text_of(events) == "greet returns 'hello'.", "shown once"
    assert judge.looks == 0
    assert judge.judged[-1][1][0].startswith("read_file output"), "the read is evidence"


async def test_a_server_that_ignores_tool_choice_gets_milks_own_look_and_is_remembered(
    server: FakeOpenAIServer, agent: LocalAgent
) -> None:
    server.enqueue({"text": "It returns 42."}, {"text": "greet returns 'hello'."})
    judge = ScriptedJudge()
    events = await run_judged(agent, judge, look_first=True)
    assert events[-1] == TurnDone()
    assert "It returns 42." not in text_of(events), "the unlooked answer is never shown"
    assert text_of(events) == "greet returns 'hello'."
    assert judge.looks == 1
    assert server.requests[1]["messages"][-1] == {"role": "user", "content": "milk looked: x"}
    notices = [e.message for e in events if isinstance(e, NoticeEvent)]
    assert any("milk looked in the workspace" in n for n in notices)
    # the next turn with the same model: milk looks before the first request, no tool_choice
    server.enqueue({"text": "Still 'hello'."})
    events = await run_judged(agent, judge, look_first=True)
    assert events[-1] == TurnDone()
    assert "tool_choice" not in server.requests[2]
    assert server.requests[2]["messages"][-1] == {"role": "user", "content": "milk looked: x"}
    assert judge.looks == 2


async def test_a_server_that_refuses_tool_choice_is_asked_again_without_it(
    server: FakeOpenAIServer, agent: LocalAgent
) -> None:
    server.enqueue(
        {"status": 400, "body": {"error": {"message": "tool_choice 'required' is not supported"}}},
        {"text": "greet returns 'hello'."},
    )
    judge = ScriptedJudge()
    events = await run_judged(agent, judge, look_first=True)
    assert events[-1] == TurnDone(), events
    assert "tool_choice" not in server.requests[1]
    assert judge.looks == 1


async def test_a_context_overflow_is_not_taken_for_a_refused_tool_choice(
    server: FakeOpenAIServer, agent: LocalAgent
) -> None:
    server.enqueue({"status": 400, "body": {"error": {"message": "exceeds the context size"}}})
    events = await run_judged(agent, ScriptedJudge(), look_first=True)
    assert isinstance(events[-1], TurnFailed), events


async def test_a_general_question_is_not_made_to_look(
    server: FakeOpenAIServer, agent: LocalAgent
) -> None:
    server.enqueue({"text": "Use `items[::-1]`."})
    judge = ScriptedJudge()
    events = await run_judged(agent, judge, look_first=False)
    assert events[-1] == TurnDone()
    assert "tool_choice" not in server.requests[0] and len(server.requests) == 1
    assert text_of(events) == "Use `items[::-1]`."


@pytest.mark.parametrize("cut_short", [True, False])
async def test_an_answer_naming_what_nothing_backs_is_ungrounded_on_both_routes(
    server: FakeOpenAIServer, agent: LocalAgent, cut_short: bool
) -> None:
    server.enqueue(
        {"tool_calls": [READ_A]},
        {"text": "It is in `src/app.py`."},
        {"text": "It is in `src/app.py`, really."},
    )
    missing = ("src/app.py is not in the workspace",)
    events = await run_judged(
        agent, ScriptedJudge(missing=missing), look_first=True, cut_short=cut_short
    )
    last = gave_up(events, LocalSignal.UNGROUNDED_ANSWER)
    assert "src/app.py" in last.detail
    assert len(server.requests) == 3, "one repair, then the hand-off signal"
    repair = server.requests[2]["messages"][-1]["content"]
    assert "src/app.py is not in the workspace" in repair and "finish" in repair


async def test_claims_after_only_failed_looks_are_ungrounded(
    server: FakeOpenAIServer, agent: LocalAgent
) -> None:
    tools = StandInTools({"read_file": lambda args: Outcome("error: no such file", is_error=True)})
    server.enqueue({"tool_calls": [READ_A]}, {"text": "It is defined in a.py."})
    run = agent.run(
        [{"role": "user", "content": "where is main?"}],
        tools,
        offer_escalation=False,
        cut_short=True,
        judge=ScriptedJudge(),
    )
    events = [event async for event in run]
    last = gave_up(events, LocalSignal.UNGROUNDED_ANSWER)
    assert "failed or found nothing" in last.detail


@pytest.mark.parametrize(
    "markup", ["<tools></tools>", '<tool_call>{"name": "x"}</tool_call>', "<|im_start|>assistant"]
)
async def test_markup_as_the_answer_is_an_unrunnable_call(
    server: FakeOpenAIServer, agent: LocalAgent, markup: str
) -> None:
    from milk_lsp.agents.local.judge.markup import markup_answer

    class MarkupJudge(ScriptedJudge):
        def judge(self, answer: str, tool_outputs: Any, *, looked: bool, finish: Any) -> Grounded:
            return Grounded(0, (), markup_answer(answer))

    server.enqueue({"text": markup})
    events = await run_judged(agent, MarkupJudge(), look_first=False)
    gave_up(events, LocalSignal.UNRUNNABLE_CALL)


async def test_a_corrective_message_is_shown_as_one_quiet_line(
    server: FakeOpenAIServer, agent: LocalAgent
) -> None:
    server.enqueue(
        {"text": "You can use the read_file tool on a.py."},
        {"tool_calls": [READ_A]},
        {"text": "a.py holds the contents."},
    )
    events = await collect(agent, StandInTools(), cut_short=True)
    assert events[-1] == TurnDone()
    notices = [e for e in events if isinstance(e, NoticeEvent)]
    assert [n.severity for n in notices] == ["info"]
    assert "milk asked the model to make the tool call it described" in notices[0].message


@pytest.mark.parametrize("offer_escalation", [True, False])
async def test_finish_cannot_is_the_models_own_verdict(
    server: FakeOpenAIServer, agent: LocalAgent, offer_escalation: bool
) -> None:
    """The model says in `finish`, not in words, that it cannot: where Claude may take over
    that is an escalation with its reason, else the turn ends saying why."""
    server.enqueue(
        {"tool_calls": [READ_A]},
        {"tool_calls": [finish_call("question", "cannot", "Nothing here says.")]},
    )
    run = agent.run(
        [{"role": "user", "content": "what does greet return?"}],
        StandInTools(),
        offer_escalation=offer_escalation,
        cut_short=True,
        judge=ScriptedJudge(),
    )
    events = [event async for event in run]
    if offer_escalation:
        assert isinstance(events[-1], EscalationRequested)
        assert events[-1].reason == "Nothing here says."
    else:
        assert "Nothing here says." in gave_up(events, LocalSignal.NO_ANSWER).detail


async def test_a_long_answer_with_a_polite_cannot_is_an_answer(
    server: FakeOpenAIServer, agent: LocalAgent
) -> None:
    answer = (
        "I can't run the tests from here, but the failure is clear from the code: `greet` "
        "returns 'hello' while the test expects 'Hello'. "
        + "".join(f"Step {n}: change the literal in greet, line {n}. " for n in range(20))
    )
    server.enqueue({"tool_calls": [READ_A]}, {"text": answer})
    events = await run_judged(agent, ScriptedJudge(), look_first=True)
    assert events[-1] == TurnDone()


async def test_a_call_written_as_text_cut_at_the_token_limit_is_asked_again_shorter(
    server: FakeOpenAIServer,
) -> None:
    """humanize's size-format: the model wrote its edit_file call as text with the whole
    docstring in old_text and new_text, and the server stopped it at 768 tokens. The call
    could not run; milk asks once for a shorter call, and that one runs. A second cut call
    ends the turn as the unrunnable call it is."""
    start = '```json\n{"name": "edit_file", "arguments": {"path": "a.py", "old_text": "def x(\\n'
    cut = {"text": start + '    """Doc.\\n    ' * 40, "finish_reason": "length"}
    short = {"name": "edit_file", "arguments": {"path": "a.py", "old_text": "x", "new_text": "y"}}
    server.enqueue(cut, {"tool_calls": [short]}, {"text": "Changed x to y in a.py."})
    tools = EditTools()
    local = LocalAgent(settings_for(server))
    try:
        events = await collect_change(local, tools)
    finally:
        await local.aclose()
    assert events[-1] == TurnDone(), events
    assert [name for _, name, _ in tools.calls] == ["edit_file"]
    asked = server.requests[1]["messages"][-1]["content"]
    assert asked.startswith("milk: your reply was cut off at the token limit in the middle of")
    notices = [e.message for e in events if isinstance(e, NoticeEvent)]
    assert "the local model's edit_file call was cut off at its token limit; milk asked it" in (
        " ".join(notices)
    )
    server.enqueue(cut, cut)
    local = LocalAgent(settings_for(server))
    try:
        events = await collect_change(local, EditTools())
    finally:
        await local.aclose()
    gave_up(events, LocalSignal.UNRUNNABLE_CALL)
