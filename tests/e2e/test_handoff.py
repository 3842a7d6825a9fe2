"""End to end: hand-off on failure. The real server, the scripted model failing in each way
milk can see, and the REAL Claude Code CLI on the Messages-API stand-in taking over.

For every signal on route `auto` with `local.handOff: "auto"`, the same turn continues with
Claude: `escalated.by` is `fallback`, `escalated.signal` names the signal (its reason says
what happened in words), and the brief of what the local agent tried reaches Claude's
appended system text. The ask names a function of the workspace, so the model is made to look
first: the scripts start with a look where the signal does not come from the first reply. `"off"`, a kept local answer and
route `local` end the turn `error` instead of a quiet `end_turn`, with the local text kept.
"""

from __future__ import annotations

import asyncio
import socket
from dataclasses import dataclass, field
from typing import Any

import pytest
from lsprotocol import types

from milk_lsp.guided.ask import INTENT_PROBES
from tests.e2e.conftest import Env, Harness, MilkClient, request
from tests.e2e.test_escalation import (
    escalated_update,
    no_leftovers,
    session_of,
)
from tests.e2e.test_guided import intent, reply, size, words
from tests.fakes.anthropic_api import FakeAnthropicAPI, appended_system_text
from tests.fakes.openai_server import FakeOpenAIServer

pytestmark = [pytest.mark.e2e, pytest.mark.claude]

CLAUDE_ANSWER = "Claude took over and finished it."
READ = {"name": "read_file", "arguments": {"path": "hello.py"}}
BAD_EDIT = {
    "name": "edit_file",
    "arguments": {"path": "hello.py", "old_text": "def hello():", "new_text": "def hi():"},
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


ASK = "rename greet to hello_world"


def finish_call(intent: str, outcome: str, answer: str) -> dict[str, Any]:
    """A reply ending the turn with `finish`: the model's intent, outcome and answer."""
    arguments = {"intent": intent, "outcome": outcome, "answer": answer}
    return {"tool_calls": [{"name": "finish", "arguments": arguments}]}


@dataclass(frozen=True)
class Case:
    """How the scripted model makes one signal happen."""

    script: list[dict[str, Any]]
    local: dict[str, Any] = field(default_factory=dict)
    """Extra `local.*` settings."""
    ask: str = ASK
    reason: str = "local_failed"
    """`error.reason` when the failure is not handed off."""


def unreachable() -> dict[str, Any]:
    return {"baseUrl": f"http://127.0.0.1:{free_port()}/v1"}


SIGNALS: dict[str, Case] = {
    "round_limit": Case(
        [
            {"tool_calls": [{"name": "list_directory", "arguments": {"path": f"d{n}"}}]}
            for n in range(4)
        ],
        {"maxToolRounds": 2},
        reason="tool_rounds_exceeded",
    ),
    "repeated_call": Case([{"tool_calls": [READ], "repeat": 4}]),
    "unknown_tool": Case([{"tool_calls": [{"name": "design_plugin_system", "arguments": {}}]}]),
    "unrunnable_call": Case(
        [
            {"tool_calls": [READ]},
            {"text": 'Plan:\n```json\n{"name": "design_plugin_system", "arguments": {}}\n```'},
        ]
    ),
    "described_call": Case(
        [
            {"tool_calls": [READ]},
            {"text": "Next you would run search_text(pattern='greet') to find it."},
            {"text": "Just run search_text(pattern='greet') yourself."},
        ]
    ),
    "ungrounded_answer": Case(
        [
            {"tool_calls": [{"name": "search_text", "arguments": {"pattern": "greet_user"}}]},
            {"text": "It is defined in `src/greeting.py` as `greet_user()`."},
        ],
        ask="what does greet return?",
    ),
    "edit_not_made": Case(
        [  # the model says (`finish`) it was asked for a change, and answers in words
            {"tool_calls": [READ]},
            finish_call("change", "answered", "Sure, rename it in your editor."),
            finish_call("change", "answered", "It is easy to do by hand."),
        ]
    ),
    "failed_edit": Case([{"tool_calls": [BAD_EDIT]}, {"text": "Run sed yourself to rename it."}]),
    "empty_reply": Case([{"tool_calls": [READ]}, {"text": ""}]),
    # issue 30: a reply slower than the local part's budget (about 4 tokens a second)
    "time_budget": Case(
        [
            {"tool_calls": [READ]},
            {"text": "hello.py greets. " * 40, "chunk_chars": 4, "delay": 0.25},
        ],
        {"turnBudgetSeconds": 2},
    ),
    "model_unreachable": Case([], reason="local_unreachable"),
    "model_error": Case([{"status": 500, "body": "the server crashed"}]),
    "context_overflow": Case(
        [
            {
                "status": 400,
                "body": {"error": {"message": "the request exceeds the available context size"}},
            }
        ]
    ),
}


async def start(harness: Harness, env: Env, hand_off: str, **local: Any) -> MilkClient:
    env.settings["local"].update({"handOff": hand_off, **local})
    return await harness.start()


async def chat(client: MilkClient, env: Env, text: str, **extra: Any) -> dict[str, Any]:
    session_id = await session_of(client, env)
    result: dict[str, Any] = await request(
        client, "milk/chat", {"sessionId": session_id, "text": text, **extra}
    )
    return result


def local_settings(signal: str) -> dict[str, Any]:
    case = SIGNALS[signal]
    return {**case.local, **(unreachable() if signal == "model_unreachable" else {})}


@pytest.mark.parametrize("signal", list(SIGNALS))
async def test_each_signal_hands_the_turn_to_claude(
    signal: str,
    harness: Harness,
    claude_env: Env,
    api: FakeAnthropicAPI,
    openai: FakeOpenAIServer,
) -> None:
    case = SIGNALS[signal]
    openai.enqueue(*case.script)
    api.enqueue({"text": CLAUDE_ANSWER})
    client = await start(harness, claude_env, "auto", **local_settings(signal))
    client.permission_answers = ["allow_once"] * 4
    result = await chat(client, claude_env, case.ask)
    assert result["stopReason"] == "end_turn", result
    assert result["agent"] == "claude"
    assert result["escalated"]["by"] == "fallback"
    assert result["escalated"]["signal"] == signal, result["escalated"]
    assert signal not in result["escalated"]["reason"], "the words name no signal id"
    assert result["text"].endswith(CLAUDE_ANSWER)
    update = escalated_update(client, result["turnId"])
    assert update["by"] == "fallback" and update["reason"] == result["escalated"]["reason"]
    appended = appended_system_text(api.main_requests()[-1])
    assert "[Escalation brief from the local agent]" in appended
    assert f"milk handed it to you ({signal})" in appended
    assert f"The user asked: {case.ask}" in appended
    kinds = client.kinds(result["turnId"])
    assert kinds[-1] == "turn_ended" and kinds.count("turn_ended") == 1
    # issue 31: the local progress ends at the hand-off and Claude's has its own title
    begun = [
        report.title
        for reports in client.progress_reports.values()
        for report in reports
        if isinstance(report, types.WorkDoneProgressBegin)
    ]
    assert begun == ["milk: local", "milk: Claude"], begun
    await no_leftovers(claude_env)


@pytest.mark.parametrize("mode", ["off", "ask-deny"])
@pytest.mark.parametrize("signal", list(SIGNALS))
async def test_each_signal_not_handed_off_ends_error_naming_it(
    signal: str,
    mode: str,
    harness: Harness,
    claude_env: Env,
    api: FakeAnthropicAPI,
    openai: FakeOpenAIServer,
) -> None:
    """`off`, or `ask` answered "Keep the local answer": never a quiet end_turn."""
    case = SIGNALS[signal]
    openai.enqueue(*case.script)
    client = await start(
        harness, claude_env, "off" if mode == "off" else "ask", **local_settings(signal)
    )
    # the hand-off question is declined (the failed edit fails before any question)
    client.permission_answers = ["deny"]
    result = await chat(client, claude_env, case.ask)
    assert result["stopReason"] == "error", result
    assert result["error"]["reason"] == case.reason, result["error"]
    assert result.get("escalated") is None
    assert result["error"]["data"]["signal"] == signal, result["error"]
    assert signal not in result["error"]["message"], "the words name no signal id"
    # declined: "kept" only when the local model said something to keep (issue 20)
    why = ["local.handOff"] if mode == "off" else ["You kept the local answer", "You chose not"]
    if signal not in ("model_unreachable", "model_error", "context_overflow"):
        assert any(w in result["error"]["message"] for w in why), result["error"]
    asked = [q for q in client.permission_requests if q["tool"] == "hand_off_to_claude"]
    assert len(asked) == (0 if mode == "off" else 1)
    assert api.main_requests() == []
    kinds = client.kinds(result["turnId"])
    assert kinds[-2:] == ["notice", "turn_ended"]


async def test_unreachable_model_hands_off(
    harness: Harness, claude_env: Env, api: FakeAnthropicAPI
) -> None:
    api.enqueue({"text": CLAUDE_ANSWER})
    client = await start(harness, claude_env, "auto", baseUrl=f"http://127.0.0.1:{free_port()}/v1")
    result = await chat(client, claude_env, "what does hello.py do?")
    assert result["stopReason"] == "end_turn", result
    assert result["escalated"]["signal"] == "model_unreachable"
    assert "connection refused" in appended_system_text(api.main_requests()[-1])


async def test_tried_calls_reach_claude(
    harness: Harness, claude_env: Env, api: FakeAnthropicAPI, openai: FakeOpenAIServer
) -> None:
    openai.enqueue({"tool_calls": [READ], "repeat": 4})
    api.enqueue({"text": CLAUDE_ANSWER})
    client = await start(harness, claude_env, "auto")
    result = await chat(client, claude_env, "what does hello.py do?")
    assert result["escalated"]["by"] == "fallback"
    appended = appended_system_text(api.main_requests()[-1])
    assert 'read_file {"path": "hello.py"} → ok' in appended
    # the local part is kept in the turn, under its own agent
    calls = [u for u in client.turn_updates(result["turnId"]) if u["kind"] == "tool_call"]
    assert {u["agent"] for u in calls} == {"local"}


async def test_off_ends_error_with_the_local_text_kept(
    harness: Harness, claude_env: Env, api: FakeAnthropicAPI, openai: FakeOpenAIServer
) -> None:
    openai.enqueue(
        {"tool_calls": [BAD_EDIT]},
        {"text": "Run sed yourself."},
        {"text": "I cannot make this edit."},  # after milk asked once more for the edit
    )
    client = await start(harness, claude_env, "off")
    client.permission_answers = ["allow_once"]
    result = await chat(client, claude_env, "rename greet")
    assert result["stopReason"] == "error", result
    assert result["error"]["reason"] == "local_failed"
    assert result["error"]["data"]["signal"] == "failed_edit"
    assert "local.handOff" in result["error"]["message"]
    assert result["text"] == "Run sed yourself.\n\nI cannot make this edit."
    assert result.get("escalated") is None
    assert api.main_requests() == []
    notices = [u for u in client.turn_updates(result["turnId"]) if u["kind"] == "notice"]
    assert notices[-1]["severity"] == "error"
    assert any("milk asked the model to redo its edit of" in n["message"] for n in notices)


async def test_ask_deny_keeps_the_local_answer_and_ends_error(
    harness: Harness, claude_env: Env, api: FakeAnthropicAPI, openai: FakeOpenAIServer
) -> None:
    openai.enqueue({"tool_calls": [READ]}, {"text": ""})
    client = await start(harness, claude_env, "ask")
    client.permission_answers = ["deny"]
    result = await chat(client, claude_env, "what does hello.py do?")
    assert result["stopReason"] == "error"
    assert result["error"]["reason"] == "local_failed"
    assert result["error"]["data"]["signal"] == "empty_reply"
    # only tool calls ran: there is no local answer to keep, and the question says so
    assert "You chose not to hand it to Claude" in result["error"]["message"]
    [question] = client.permission_requests
    assert question["tool"] == "hand_off_to_claude"
    assert question["localAnswer"] is False
    assert [o["label"] for o in question["options"]] == ["Hand to Claude", "Don't hand off"]
    assert [o["optionId"] for o in question["options"]] == ["allow_once", "deny"]
    assert "could not finish" in question["description"]
    assert api.main_requests() == []
    # the session stays readable and the stored turn is marked failed
    got = await request(client, "milk/session/get", {"sessionId": result["sessionId"]})
    assert got["turns"][-1]["status"] == "error"


async def test_ask_offers_keeping_only_an_answer_there_is(
    harness: Harness, claude_env: Env, api: FakeAnthropicAPI, openai: FakeOpenAIServer
) -> None:
    """Issue 20: with a local answer, "Keep the local answer" is offered and says so; the
    question is in words (the reason and what each choice does)."""
    openai.enqueue(*SIGNALS["ungrounded_answer"].script)
    client = await start(harness, claude_env, "ask")
    client.permission_answers = ["deny"]
    result = await chat(client, claude_env, SIGNALS["ungrounded_answer"].ask)
    assert result["stopReason"] == "error"
    assert "You kept the local answer" in result["error"]["message"]
    [question] = client.permission_requests
    assert question["localAnswer"] is True
    assert [o["label"] for o in question["options"]] == ["Hand to Claude", "Keep the local answer"]
    assert question["description"].startswith("The local model could not finish: ")
    assert "Hand this turn to Claude Code" in question["description"]
    assert "ungrounded_answer" not in question["description"]


async def test_ask_allow_hands_off(
    harness: Harness, claude_env: Env, api: FakeAnthropicAPI, openai: FakeOpenAIServer
) -> None:
    openai.enqueue({"tool_calls": [{"name": "nope_tool", "arguments": {}}]})
    api.enqueue({"text": CLAUDE_ANSWER})
    client = await start(harness, claude_env, "ask")
    client.permission_answers = ["allow_once"]
    result = await chat(client, claude_env, "what does hello.py do?")
    assert result["stopReason"] == "end_turn", result
    assert result["escalated"]["by"] == "fallback"
    assert result["escalated"]["signal"] == "unknown_tool"


async def test_ask_through_show_message_request(
    harness: Harness, claude_env: Env, api: FakeAnthropicAPI, openai: FakeOpenAIServer
) -> None:
    openai.enqueue({"tool_calls": [READ]}, {"text": ""})
    api.enqueue({"text": CLAUDE_ANSWER})
    claude_env.settings["local"]["handOff"] = "ask"
    client = await harness.start(milk_permission=False)
    client.message_answers = ["Hand to Claude"]
    result = await chat(client, claude_env, "what does hello.py do?")
    assert result["escalated"]["by"] == "fallback", result
    [shown] = client.message_requests
    assert [a.title for a in shown.actions] == ["Hand to Claude", "Don't hand off"]
    assert shown.message.startswith("The local model could not finish")


async def test_cancel_during_the_question_leaves_nothing_running(
    harness: Harness, claude_env: Env, api: FakeAnthropicAPI, openai: FakeOpenAIServer
) -> None:
    openai.enqueue({"tool_calls": [READ]}, {"text": ""})
    client = await start(harness, claude_env, "ask")
    client.permission_answers = ["hang"]
    session_id = await session_of(client, claude_env)
    chat_task = asyncio.ensure_future(
        request(client, "milk/chat", {"sessionId": session_id, "text": "what is hello.py?"})
    )
    await client.wait_for_update(lambda u: u["kind"] == "turn_started")
    for _ in range(100):
        if client.permission_requests:
            break
        await asyncio.sleep(0.05)
    assert client.permission_requests, "the hand-off question was asked"
    assert await request(client, "milk/cancel", {"sessionId": session_id}) == {"cancelled": True}
    result = await asyncio.wait_for(chat_task, 10)
    assert result["stopReason"] == "cancelled"
    assert api.main_requests() == []
    await no_leftovers(claude_env)


async def test_a_local_part_past_its_budget_stops_its_stream_and_names_the_budget(
    harness: Harness, claude_env: Env, api: FakeAnthropicAPI, openai: FakeOpenAIServer
) -> None:
    """Route local: the turn ends `error` naming the budget and its setting; the model's
    stream is closed at the deadline, not read to its end; the time the user took to answer
    a permission question (longer than the budget) did not count."""
    slow = {"text": "hello.py greets. " * 40, "chunk_chars": 4, "delay": 0.25}
    good_edit = {
        "name": "edit_file",
        "arguments": {"path": "hello.py", "old_text": "'hello'", "new_text": "'hi'"},
    }
    openai.enqueue({"tool_calls": [good_edit]}, slow)
    client = await start(harness, claude_env, "auto", turnBudgetSeconds=3)
    client.permission_answers = ["slow_allow_once"]
    client.permission_delay_seconds = 4.0
    started = asyncio.get_running_loop().time()
    result = await chat(client, claude_env, "make greet return 'hi'", route="local")
    took = asyncio.get_running_loop().time() - started
    assert result["stopReason"] == "error", result
    assert result["error"]["data"]["signal"] == "time_budget", result["error"]
    assert "3 s, local.turnBudgetSeconds" in result["error"]["message"]
    assert openai.wait_for_disconnects(1)  # the stream was closed at the deadline
    assert took < 4.0 + 3.0 + 5.0, took  # not the ~40 s the slow reply would take
    assert api.main_requests() == []
    progress = [m for m in client.progress_messages() if m.startswith("local model: ")]
    assert progress and progress[-1].endswith(" tokens"), client.progress_messages()
    assert client.permission_requests, "the edit was asked for (and answered after 4 s)"
    # the 4 s answer did not count: the edit ran and the model was asked again
    assert len(openai.requests) == 2, "the budget ran out while the user was answering"
    await no_leftovers(claude_env)


async def test_route_local_never_hands_off_but_reports_the_failure(
    harness: Harness, claude_env: Env, api: FakeAnthropicAPI, openai: FakeOpenAIServer
) -> None:
    openai.enqueue({"tool_calls": [READ], "repeat": 4}, {"text": ""})
    client = await start(harness, claude_env, "auto")
    result = await chat(client, claude_env, "what does hello.py do?", route="local")
    # four identical calls are not cut short on route local; the empty end is reported
    calls = [
        u
        for u in client.turn_updates(result["turnId"])
        if u["kind"] == "tool_call" and u["status"] == "completed"
    ]
    assert len(calls) == 4
    assert result["stopReason"] == "error"
    assert result["error"]["reason"] == "local_failed"
    assert result["error"]["data"]["signal"] == "empty_reply"
    # issue 31: the user is told at the third identical call, once
    warned = [
        u["message"]
        for u in client.turn_updates(result["turnId"])
        if u["kind"] == "notice" and "the same call 3 times" in u["message"]
    ]
    assert warned == [
        'The local model made the same call 3 times: read_file {"path": "hello.py"}. It may be'
        " stuck; cancel the turn or send it to Claude."
    ]
    assert api.main_requests() == []


async def test_route_local_round_limit_keeps_its_reason(
    harness: Harness, claude_env: Env, api: FakeAnthropicAPI, openai: FakeOpenAIServer
) -> None:
    openai.enqueue({"tool_calls": [READ], "repeat": 5})
    client = await start(harness, claude_env, "auto", maxToolRounds=2)
    result = await chat(client, claude_env, "what does hello.py do?", route="local")
    assert result["stopReason"] == "error"
    assert result["error"]["reason"] == "tool_rounds_exceeded"
    assert "local.maxToolRounds" in result["error"]["message"]


async def test_no_claude_ends_error_naming_the_signal(
    harness: Harness, env: Env, openai: FakeOpenAIServer
) -> None:
    openai.enqueue({"tool_calls": [{"name": "nope_tool", "arguments": {}}]})
    client = await start(harness, env, "auto")
    result = await chat(client, env, "what does hello.py do?")
    assert result["stopReason"] == "error"
    assert result["error"]["reason"] == "local_failed"
    assert result["error"]["data"]["signal"] == "unknown_tool"
    assert "Claude Code was not found" in result["error"]["message"]


async def test_a_good_local_turn_is_untouched(
    harness: Harness, claude_env: Env, api: FakeAnthropicAPI, openai: FakeOpenAIServer
) -> None:
    openai.enqueue(
        {"tool_calls": [READ]}, {"text": "`hello.py` defines `greet()`, returning `'hello'`."}
    )
    client = await start(harness, claude_env, "auto")
    result = await chat(client, claude_env, "what does hello.py do?")
    assert result["stopReason"] == "end_turn"
    assert result.get("escalated") is None
    assert client.permission_requests == []
    assert api.main_requests() == []


RETURN_ASK = "make greet return a list of its greetings"
"""A change with no old text written in it: only the model's reading says it is one."""


async def test_the_agent_loop_asks_the_intent_first_and_a_change_answered_in_words_is_not_made(
    harness: Harness, claude_env: Env, api: FakeAnthropicAPI, openai: FakeOpenAIServer
) -> None:
    """Issue 38: the agent loop asks what the request asks for, as a guided turn does; a
    change it then answers in words, nothing changed, is the change not made (uuid's
    "change the error message…" had ended `end_turn` with steps to do it by hand)."""
    openai.enqueue(
        intent("change"),
        {"tool_calls": [READ]},
        {"text": "Change `return 'hello'` to `return ['hello']` in `greet`."},
        {"text": "You can make that edit yourself."},  # after milk asked for the change
    )
    api.enqueue({"text": CLAUDE_ANSWER})
    client = await start(harness, claude_env, "auto", strategy="agent")
    client.permission_answers = ["allow_once"] * 2
    result = await chat(client, claude_env, RETURN_ASK)
    asked = openai.requests[0]
    assert asked["response_format"]["json_schema"]["name"] == "milk_intent"
    assert [m["role"] for m in asked["messages"]] == ["system", "user"]  # the request alone
    assert asked["messages"][-1]["content"] == RETURN_ASK
    assert "tools" in openai.requests[1]  # then the loop
    assert result["stopReason"] == "end_turn", result
    assert result["escalated"]["signal"] == "edit_not_made", result["escalated"]
    assert result["text"].endswith(CLAUDE_ANSWER)


async def test_the_agent_loop_leaves_a_question_answered_in_words_alone(
    harness: Harness, claude_env: Env, api: FakeAnthropicAPI, openai: FakeOpenAIServer
) -> None:
    """The same words read as a question: answered from the file, the answer stands."""
    openai.enqueue(
        intent("question"),
        {"tool_calls": [READ]},
        {"text": "`greet` in `hello.py` returns 'hello'."},
    )
    client = await start(harness, claude_env, "auto", strategy="agent")
    result = await chat(client, claude_env, "what does greet return?")
    assert result["stopReason"] == "end_turn", result
    assert result.get("escalated") is None
    assert api.main_requests() == []
    assert len(openai.requests) == 3


async def test_a_model_that_reads_every_request_as_a_change_is_not_relied_on(
    harness: Harness, claude_env: Env, api: FakeAnthropicAPI, openai: FakeOpenAIServer
) -> None:
    """milk tries the model's reading once (a plain question, a plain change); read alike,
    as SmolLM2-135M reads them, the model's reading of requests decides nothing, and the
    user is told once."""
    openai.reads_intent = False
    openai.enqueue(
        {"tool_calls": [READ]},
        {"text": "`greet` in `hello.py` returns 'hello'."},
        {"tool_calls": [READ]},
        {"text": "`greet` in `hello.py` has no parameters."},
    )
    client = await start(harness, claude_env, "auto", strategy="agent")
    result = await chat(client, claude_env, "what does greet return?")
    again = await chat(client, claude_env, "does greet take parameters?")
    for turn in (result, again):
        assert turn["stopReason"] == "end_turn", turn
        assert turn.get("escalated") is None
    probes = [
        body["messages"][-1]["content"]
        for body in openai.all_requests
        if body.get("response_format", {}).get("json_schema", {}).get("name") == "milk_intent"
    ]
    assert probes == [text for text, _ in INTENT_PROBES]  # once, and no request read after
    notices = [u["message"] for u in client.turn_updates(result["turnId"]) if u["kind"] == "notice"]
    assert any("does not rely on fake-model's reading" in n for n in notices), notices
    assert api.main_requests() == []


WIDE_ASK = "Teile hello.py auf in lib/greet.py, lib/farewell.py und tests/test_greet.py, mit Tests."
"""Claude-sized by what it locates: a file here and three new ones (issue 38: no word of
"the whole project" decides)."""


async def test_a_claude_sized_change_reaches_claude_before_the_local_model(
    harness: Harness, claude_env: Env, api: FakeAnthropicAPI, openai: FakeOpenAIServer
) -> None:
    """Issues 30, 38: a change reaching several files goes to Claude at once (route auto,
    `handOff: "auto"`): no local request, the user told why, Claude told milk sent it."""
    api.enqueue({"text": CLAUDE_ANSWER})
    client = await start(harness, claude_env, "auto")
    result = await chat(client, claude_env, WIDE_ASK)
    assert result["stopReason"] == "end_turn", result
    assert result["agent"] == "claude"
    assert result["escalated"]["by"] == "fallback"
    assert result["escalated"]["signal"] == "wide_request"
    assert "3 new files" in result["escalated"]["reason"], result["escalated"]
    assert openai.requests == [], "the local model was never asked"
    notices = [u for u in client.turn_updates(result["turnId"]) if u["kind"] == "notice"]
    assert any("before the local model started" in n["message"] for n in notices), notices
    appended = appended_system_text(api.main_requests()[-1])
    assert "milk handed this request to you before the local model tried it" in appended
    assert f"The user asked: {WIDE_ASK}" in appended
    stats = await request(client, "milk/stats", {"workspaceFolder": claude_env.workspace.as_uri()})
    assert stats["total"]["handedOffBySignal"] == {"wide_request": 1}, stats
    assert "a request reaching too much of the workspace" in stats["text"]
    await no_leftovers(claude_env)


async def test_a_guided_turn_hands_a_claude_sized_change_off_once_read_as_a_change(
    harness: Harness, claude_env: Env, api: FakeAnthropicAPI, openai: FakeOpenAIServer
) -> None:
    """Issue 38: the guided turn asks its one small intent request first; a change reaching
    several files then goes to Claude, with no request carrying code."""
    api.enqueue({"text": CLAUDE_ANSWER})
    openai.enqueue(intent("change"))
    client = await start(harness, claude_env, "auto", strategy="guided")
    result = await chat(client, claude_env, WIDE_ASK)
    assert result["stopReason"] == "end_turn", result
    assert result["agent"] == "claude"
    assert result["escalated"]["signal"] == "wide_request"
    assert [body["response_format"]["json_schema"]["name"] for body in openai.requests] == [
        "milk_intent"
    ]
    notices = [u["message"] for u in client.turn_updates(result["turnId"]) if u["kind"] == "notice"]
    assert any("milk handed this change to Claude: the request reaches" in n for n in notices)
    await no_leftovers(claude_env)


MANY_ASK = "把整个项目从回调改成 async/await，所有模块都要改，并为每个公开函数补上测试。"
"""Claude-sized, and naming no file or definition: nothing located says so (Chinese: port the
whole project from callbacks to async/await, every module, tests for each public function)."""


async def test_a_change_the_local_model_sizes_many_goes_to_claude_before_any_code(
    harness: Harness, claude_env: Env, api: FakeAnthropicAPI, openai: FakeOpenAIServer
) -> None:
    """The intent request also asks the size of a change; "many" (several files, new
    files, a design) is Claude-sized as a wide reach is: the bench's Claude-sized requests
    that named one file had been done locally, partly, and ended as done."""
    api.enqueue({"text": CLAUDE_ANSWER})
    openai.enqueue(intent("change"), size("many"))
    client = await start(harness, claude_env, "auto", strategy="guided")
    result = await chat(client, claude_env, MANY_ASK)
    assert result["stopReason"] == "end_turn", result
    assert result["agent"] == "claude"
    assert result["escalated"]["signal"] == "wide_request"
    assert "reads it as a change of many places" in result["escalated"]["reason"]
    asked = [body["response_format"]["json_schema"] for body in openai.requests]
    assert [shape["name"] for shape in asked] == ["milk_intent", "milk_size"]  # no code sent
    assert asked[1]["schema"]["properties"]["size"]["enum"] == ["one place", "one file", "many"]
    assert [m["role"] for m in openai.requests[1]["messages"]] == ["system", "user"]
    await no_leftovers(claude_env)


@pytest.mark.parametrize(
    ("replies", "hand_off", "asked"),
    [
        ((intent("change"), size("one file")), "auto", ["milk_intent", "milk_size"]),
        ((intent("question"),), "auto", ["milk_intent"]),  # a question is never sized
        ((intent("change"),), "ask", ["milk_intent"]),  # nor a change Claude is not sent
        ((intent("change"),), "off", ["milk_intent"]),
    ],
)
async def test_a_change_stays_local_when_small_or_hand_off_is_not_automatic(
    replies: tuple[dict[str, Any], ...],
    hand_off: str,
    asked: list[str],
    harness: Harness,
    claude_env: Env,
    api: FakeAnthropicAPI,
    openai: FakeOpenAIServer,
) -> None:
    # a request holding no word of the code: the model names what to look for, then answers
    openai.enqueue(*replies, words("async", "callback"), reply(kind="escalate", reason="too big"))
    client = await start(harness, claude_env, hand_off, strategy="guided")
    client.permission_answers = ["deny"]
    result = await chat(client, claude_env, MANY_ASK)
    names = [body["response_format"]["json_schema"]["name"] for body in openai.requests]
    assert names == [*asked, "milk_words", "milk_guided_reply"], "asked with the code"
    assert (result.get("escalated") or {}).get("signal") != "wide_request", result


WIDE_QUESTION = "Welche Datei definiert greet: hello.py, lib/greet.py oder tests/test_greet.py?"
"""It names three files, but asks a question: the local model answers it."""


async def test_a_guided_question_naming_several_files_is_answered_locally(
    harness: Harness, claude_env: Env, api: FakeAnthropicAPI, openai: FakeOpenAIServer
) -> None:
    openai.enqueue(
        intent("question"),
        reply(
            answer="`greet` is defined in hello.py; lib/greet.py does not exist.",
            citations=[{"path": "hello.py", "line": 1, "quote": "def greet():"}],
            proposed=[],
        ),
    )
    client = await start(harness, claude_env, "auto", strategy="guided")
    result = await chat(client, claude_env, WIDE_QUESTION)
    assert result["stopReason"] == "end_turn", result
    assert result["agent"] == "local"
    assert result.get("escalated") is None
    assert api.main_requests() == []
    assert "hello.py:1" in result["text"]


@pytest.mark.parametrize(
    ("hand_off", "route"), [("ask", "auto"), ("off", "auto"), ("auto", "local")]
)
async def test_a_claude_sized_change_stays_local_unless_hand_off_is_automatic(
    hand_off: str,
    route: str,
    harness: Harness,
    claude_env: Env,
    api: FakeAnthropicAPI,
    openai: FakeOpenAIServer,
) -> None:
    """Asked first, hand-off off, or the user's own route `local`: the local model tries."""
    openai.enqueue({"text": "I cannot port a whole project."})
    client = await start(harness, claude_env, hand_off)
    client.permission_answers = ["deny"]
    result = await chat(client, claude_env, WIDE_ASK, route=route)
    assert len(openai.requests) >= 1, "the local model was asked"
    assert (result.get("escalated") or {}).get("signal") != "wide_request", result
    assert api.main_requests() == []
