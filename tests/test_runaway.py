"""Runaway replies ended as they stream (issue 30, item 1): a complete call written as text
and what follows it, a reply repeating itself, chat-template markup."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from milk_lsp.agents.base import LocalGaveUp, LocalSignal, NoticeEvent, TurnDone, UsageEvent
from milk_lsp.agents.local.agent import LocalAgent
from milk_lsp.agents.local.reply.runaway import RunawayWatch, Stop, repeating_period
from tests.fakes.openai_server import FakeOpenAIServer
from tests.test_local_agent import StandInTools, collect, settings_for, text_of

OFFERED = ("read_file", "list_dir")
READ_A = '{"name": "read_file", "arguments": {"path": "a.py"}}'


def stream(watch: RunawayWatch, text: str, size: int = 4) -> tuple[Stop | None, int]:
    """Feed `text` in pieces of `size`; the stop and how much had been fed by then."""
    for at in range(0, len(text), size):
        stop = watch.feed(text[at : at + size])
        if stop is not None:
            return stop, at + size
    return None, len(text)


@pytest.mark.parametrize(
    "call",
    [
        f"```json\n{READ_A}\n```",
        f"<tool_call>\n{READ_A}\n</tool_call>",
        READ_A,
        f"Let me look.\n{READ_A}",
    ],
)
def test_text_after_a_complete_written_call_ends_the_reply_at_the_call(call: str) -> None:
    text = call + "\nThe file a.py contains the function. " * 50
    stop, fed = stream(RunawayWatch(OFFERED), text)
    assert stop is not None and stop.call
    assert text[: stop.keep].rstrip().endswith(("}}", "```", "</tool_call>"))
    assert READ_A in text[: stop.keep]
    assert fed - len(call) <= 16  # ended within a few tokens of the call's end


def test_calls_written_one_after_another_are_all_kept() -> None:
    two = f"<tool_call>\n{READ_A}\n</tool_call>\n<tool_call>\n{READ_A}\n</tool_call>"
    assert stream(RunawayWatch(OFFERED), two) == (None, len(two))
    stop, _ = stream(RunawayWatch(OFFERED), two + "\nNow I know. " * 20)
    assert stop is not None and stop.keep == len(two)


@pytest.mark.parametrize(
    "text",
    [
        "```python\n" + "\n".join(f"assert f({n}) == {n * n}" for n in range(120)) + "\n```",
        "| a | b |\n|---|---|\n" + "".join(f"| {n} | {n * 2} |\n" for n in range(100)),
        "=" * 60 + "\nTitle\n" + "=" * 60 + "\nSome text that goes on and on.",
    ],
)
def test_a_reply_that_does_not_run_away_is_read_to_its_end(text: str) -> None:
    assert stream(RunawayWatch(OFFERED), text) == (None, len(text))


def test_a_long_call_s_repeated_text_is_not_a_loop() -> None:
    lines = "".join(f"    row_{n} = compute({n})\\n" + "    check()\\n" * 40 for n in range(12))
    text = '{"name": "read_file", "arguments": {"path": "' + lines + '"}}'
    assert stream(RunawayWatch(OFFERED), text, 500) == (None, len(text))


def test_a_call_whose_text_loops_on_and_on_is_ended_inside_it() -> None:
    """Measured (crossenv bench): an argument written on to the server's cap."""
    text = '{"name": "read_file", "arguments": {"path": "' + "src/a.js" * 1000 + '"}}'
    stop, fed = stream(RunawayWatch(OFFERED), text, 16)
    assert stop is not None and not stop.call
    assert "inside a tool call" in stop.why
    assert fed < 2000 + 200


@pytest.mark.parametrize("blank", ["\n", " ", "\n\n  \t"])
def test_a_written_call_then_blank_space_runs_the_call_and_ends_the_reply(blank: str) -> None:
    """Measured (crossenv bench): a call written as text, then newlines to the cap."""
    text = f"```json\n{READ_A}\n```" + blank * 3000
    stop, fed = stream(RunawayWatch(OFFERED), text)
    assert stop is not None and stop.call, stop
    assert stop.keep == len(f"```json\n{READ_A}\n```")
    assert fed < 240 + 96 + 100


def test_an_answer_then_blank_space_is_ended_after_the_answer() -> None:
    text = "It is in src/a.js." + " " * 4000
    stop, _ = stream(RunawayWatch(OFFERED), text)
    assert stop is not None and not stop.call and stop.keep == len("It is in src/a.js.")


@pytest.mark.parametrize(
    "loop",
    ["I will read the file now.\n", "- use `parse` to parse\n", "!!!!!!!!", "好的，我来看看。"],
)
def test_a_reply_repeating_itself_is_ended_after_its_first_copy(loop: str) -> None:
    text = "The answer:\n" + loop * 400
    stop, fed = stream(RunawayWatch(OFFERED), text)
    assert stop is not None and not stop.call
    assert fed < 240 + 2 * len(loop) + 96 + 20  # soon after it repeats
    kept = text[: stop.keep]  # to the end of the first copy of the block that repeats
    assert kept.startswith("The answer:\n") and len(kept) < len("The answer:\n") + 2 * len(loop)


@pytest.mark.parametrize("token", ["<|im_start|>", "<|eot_id|>", "<end_of_turn>", "<|im_end|>"])
def test_chat_template_markup_ends_the_reply_before_it(token: str) -> None:
    text = f"The answer is 4.{token}user\nThanks!{token}assistant\nYou are welcome."
    stop, _ = stream(RunawayWatch(OFFERED), text, 3)
    assert stop is not None and text[: stop.keep] == "The answer is 4."


def test_the_repeating_period_is_the_block_s_length() -> None:
    assert repeating_period("intro " + "abcdefghij" * 30) == 10
    assert repeating_period("no loop here at all, just words " * 2) is None


# ---- the agent: the request ends, the call runs, the turn goes on ---------------------------


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


async def test_a_written_call_then_2000_tokens_of_repetition_is_ended_and_run(
    server: FakeOpenAIServer,
) -> None:
    """The issue's case: a complete text-written call followed by 2,000 tokens of a loop.
    The request ends within 200 tokens (events of about one token) of the call's end, the
    call runs, and the next reply ends the turn."""
    call = f"```json\n{READ_A}\n```"
    runaway = call + "\nI will now read the file a.py." * 285  # about 2,000 tokens
    server.enqueue(
        {"text": runaway, "chunk_chars": 4, "delay": 0.001},
        {"text": "a.py holds x = 1"},
    )
    agent = LocalAgent(settings_for(server))
    tools = StandInTools()
    try:
        events = await collect(agent, tools)
    finally:
        await agent.aclose()
    assert [(name, args) for _, name, args in tools.calls] == [("read_file", {"path": "a.py"})]
    assert events[-1] == TurnDone()
    assert text_of(events) == "a.py holds x = 1"  # neither the call nor the loop shown
    notices = [event.message for event in events if isinstance(event, NoticeEvent)]
    assert any("ended the local model's reply early" in notice for notice in notices), notices
    assert server.wait_for_disconnects(1)
    call_events = len(call) // 4 + 2  # the role's event, the call's text
    assert server.events_sent[0] <= call_events + 200, server.events_sent
    assert server.events_sent[0] < len(runaway) // 4  # not the whole reply
    first, second = server.requests
    assert first["max_tokens"] == 2048
    sent_back = second["messages"][-2]
    assert sent_back["role"] == "assistant"
    assert "I will now read" not in json.dumps(sent_back)


async def test_a_looping_answer_is_ended_and_asked_for_once_more(
    server: FakeOpenAIServer,
) -> None:
    """A final reply milk ended as it ran on may be a plan or half an answer (semver's
    range-cache-size: "To answer this question, I need to find …", then blank space on and
    on, ended the turn as done): the model is asked once for its answer, and the next reply
    is judged as any is."""
    server.enqueue(
        {"text": "x = 1 is in a.py.\n" + "And so on and so forth.\n" * 300, "delay": 0.001},
        {"text": "x = 1 is in a.py."},
    )
    agent = LocalAgent(settings_for(server))
    try:
        events = await collect(agent, StandInTools())
    finally:
        await agent.aclose()
    assert events[-1] == TurnDone()
    assert server.wait_for_disconnects(1)
    assert server.events_sent[0] < 300 * 24 // 3
    asked = server.requests[1]["messages"][-1]
    assert asked["role"] == "user" and "ran on and milk ended it" in asked["content"]
    assert "it repeated itself" in asked["content"]
    notices = [event.message for event in events if isinstance(event, NoticeEvent)]
    assert any("for its answer again" in notice for notice in notices), notices
    # the server's usage never came for the ended reply: milk's estimate stands in for it
    usage = [event for event in events if isinstance(event, UsageEvent)]
    assert len(usage) == 2 and usage[0].input_tokens > 0 and usage[0].output_tokens > 0


@pytest.mark.parametrize(
    "runaway",
    [
        "Чтобы ответить, мне нужно найти класс `Range`.\n" + "Я ищу дальше.\n" * 300,
        "To answer this I need to find the `Range` class." + " " * 3000,
    ],
)
async def test_a_reply_that_runs_on_twice_is_no_answer(
    server: FakeOpenAIServer, runaway: str
) -> None:
    server.enqueue({"text": runaway, "delay": 0.001}, {"text": runaway, "delay": 0.001})
    agent = LocalAgent(settings_for(server))
    try:
        events = await collect(agent, StandInTools())
    finally:
        await agent.aclose()
    gave_up = events[-1]
    assert isinstance(gave_up, LocalGaveUp), events[-1]
    assert gave_up.signal == LocalSignal.NO_ANSWER
    assert gave_up.detail.startswith("the local model's reply ran on again"), gave_up.detail
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    "call",
    [
        "search_text {'pattern': 'commandConvert'}",
        'read_file({"path": "a.py"})',
        "`read_file` {'path': 'a.py'}",
    ],
)
def test_a_call_written_as_the_tool_s_name_is_ended_at_its_arguments(call: str) -> None:
    """crossenv's where-command-live: milk's look copied as text, with made-up results
    after it, to the server's cap."""
    text = call + ":\nsrc/command.js:4: module.exports = commandConvert\n" * 20
    stop, _ = stream(RunawayWatch((*OFFERED, "search_text")), text)
    assert stop is not None and stop.call and text[: stop.keep] == call


def test_a_call_of_a_tool_not_offered_ends_the_reply_too_without_a_run() -> None:
    """crossenv's sigint-code-de: a call of a tool the turn did not offer, then a made-up
    `<tool_response>` with a whole file, to the cap."""
    call = '{{"name": "edit_file", "arguments": {"path": "src/index.js", "old_text": "a"}}'
    text = call + "\n\nThe file's text is:\n" + "const x = require('y')\n" * 40
    stop, fed = stream(RunawayWatch(OFFERED), text)
    assert stop is not None and not stop.call and fed < len(call) + 16
    assert text[: stop.keep].endswith('"a"}}')


def test_a_made_up_tool_response_ends_the_reply_before_it() -> None:
    text = 'I read it.\n<tool_response>\nThe file says "x".\n</tool_response>'
    stop, _ = stream(RunawayWatch(OFFERED), text, 3)
    assert stop is not None and text[: stop.keep] == "I read it.\n"


def test_an_example_call_of_another_api_inside_an_answer_is_read_to_its_end() -> None:
    text = (
        'Tools are called as JSON: {"name": "get_weather", "arguments": {"city": "Oslo"}} is '
        "what the model sends, and the client answers with the result in the next message; "
        "see `dispatch()` in server.py, which looks the name up in its table and calls it."
    )
    assert stream(RunawayWatch(OFFERED), text) == (None, len(text))
