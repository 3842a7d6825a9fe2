"""Pure tests of the stream-json → event mapping, on lines recorded from the real CLI.

The recordings in tests/data/claude/ come from Claude Code 2.1.332 against the stand-in API
(`python -m tests.data.claude.record` re-records them).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from milk_lsp.agents.base import (
    AgentEvent,
    ClaudeSessionStarted,
    FailureReason,
    NoticeEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallEvent,
    ToolResultEvent,
    ToolStatus,
    TurnDone,
    TurnFailed,
    UsageEvent,
)
from milk_lsp.agents.claude.lines import (
    allow_line,
    deny_line,
    error_response_line,
    interrupt_line,
    user_message_line,
)
from milk_lsp.agents.claude.stream import (
    StreamMapper,
    StreamParseError,
    outcome_from_exit,
    outcome_from_result,
    parse_line,
    tool_output_text,
    turn_cost,
    usage_from_result,
)

DATA = Path(__file__).parent / "data" / "claude"
DENY = "The user denied this tool use in the editor."


def load(name: str) -> list[dict[str, Any]]:
    lines = (DATA / f"{name}.ndjson").read_text(encoding="utf-8").splitlines()
    messages = [parse_line(line) for line in lines]
    return [m for m in messages if m is not None]


def replay(
    name: str, *, allow: bool = True, resume: bool = False
) -> tuple[list[AgentEvent], TurnDone | TurnFailed, StreamMapper]:
    """Feed a recording through a mapper the way the agent does; answer permissions."""
    mapper = StreamMapper()
    events: list[AgentEvent] = []
    for msg in load(name):
        if msg["type"] == "control_request":
            body = msg["request"]
            events += mapper.permission_asked(body["tool_use_id"], body["tool_name"], body["input"])
            events += mapper.permission_decided(body["tool_use_id"], allowed=allow)
        elif msg["type"] in ("control_response", "control_cancel_request"):
            continue
        else:
            events += mapper.feed(msg)
    assert mapper.result is not None
    return events, outcome_from_result(mapper.result, resume=resume), mapper


def texts(events: list[AgentEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def statuses(events: list[AgentEvent]) -> list[ToolStatus]:
    return [e.status for e in events if isinstance(e, ToolCallEvent)]


# -- recordings ---------------------------------------------------------------------------------


def test_text_and_thinking_stream_token_level_without_duplicates() -> None:
    events, outcome, mapper = replay("text_thinking")
    assert isinstance(events[0], ClaudeSessionStarted)
    assert events[0].session_id == mapper.session_id
    assert sum(isinstance(e, ClaudeSessionStarted) for e in events) == 1
    assert texts(events) == "Hello there, friend!"
    assert sum(isinstance(e, TextDelta) for e in events) > 1
    thinking = [e.text for e in events if isinstance(e, ThinkingDelta)]
    assert "".join(thinking) == "Let me think."
    assert len(thinking) > 1
    # per API call as it ends (message_delta), then the result adds the cost
    per_call, final = [e for e in events if isinstance(e, UsageEvent)]
    assert per_call.input_tokens > 0
    assert per_call.output_tokens > 0
    assert per_call.cache_read_tokens == 0
    assert per_call.cost_usd is None
    assert (final.input_tokens, final.output_tokens) == (0, 0), "nothing counted twice"
    assert final.cost_usd is not None
    assert outcome == TurnDone("end_turn")


def test_usage_per_api_call_sums_to_the_results_total() -> None:
    """Two API calls (a tool round): two usage events that add up to the CLI's total."""
    mapper = StreamMapper()
    lines = [json.loads(line) for line in (DATA / "tool_allow.ndjson").read_text().splitlines()]
    events = [event for msg in lines for event in mapper.feed(msg)]
    usage = [e for e in events if isinstance(e, UsageEvent)]
    calls = [e for e in usage if e.cost_usd is None]
    assert len(calls) == 2
    result = next(msg for msg in lines if msg.get("type") == "result")
    assert sum(e.input_tokens for e in usage) == result["usage"]["input_tokens"]
    assert sum(e.output_tokens for e in usage) == result["usage"]["output_tokens"]
    assert usage[-1].cost_usd == result["total_cost_usd"]


def test_tool_allowed_goes_pending_running_completed_with_result() -> None:
    events, outcome, _ = replay("tool_allow", allow=True)
    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    assert {c.tool_call_id for c in calls} == {calls[0].tool_call_id}
    assert calls[0].tool_call_id.startswith("toolu_")
    assert calls[0].name == "Bash"
    assert statuses(events) == [
        ToolStatus.PENDING,  # announced
        ToolStatus.RUNNING,  # input complete
        ToolStatus.PENDING,  # permission question open
        ToolStatus.RUNNING,  # allowed
        ToolStatus.COMPLETED,
    ]
    assert calls[-1].input == {"command": "touch marker.txt", "description": "Create marker"}
    results = [e for e in events if isinstance(e, ToolResultEvent)]
    assert results == [
        ToolResultEvent(calls[0].tool_call_id, "(Bash completed with no output)", False)
    ]
    # Two API messages: their texts are separated by a newline.
    assert texts(events) == "I will.\nMade it."
    assert outcome == TurnDone()


def test_tool_denied_ends_denied_and_claude_sees_the_message() -> None:
    events, outcome, _ = replay("tool_deny", allow=False)
    assert statuses(events)[-1] == ToolStatus.DENIED
    assert ToolStatus.COMPLETED not in statuses(events)
    results = [e for e in events if isinstance(e, ToolResultEvent)]
    assert len(results) == 1
    assert results[0].is_error
    assert results[0].output == DENY
    assert texts(events) == "Understood."
    assert outcome == TurnDone()


def test_tool_without_permission_question() -> None:
    events, outcome, _ = replay("tool_no_permission")
    assert statuses(events) == [ToolStatus.PENDING, ToolStatus.RUNNING, ToolStatus.COMPLETED]
    assert [e.output for e in events if isinstance(e, ToolResultEvent)] == ["hi"]
    assert outcome == TurnDone()


@pytest.mark.parametrize(
    ("name", "reason", "needle"),
    [
        pytest.param("error_500", FailureReason.CLAUDE_FAILED, "500", id="500"),
        pytest.param("error_429", FailureReason.RATE_LIMITED, "429", id="429"),
        pytest.param("prompt_too_long", FailureReason.PROMPT_TOO_LONG, "too long", id="ptl"),
        pytest.param("not_logged_in", FailureReason.CLAUDE_NOT_LOGGED_IN, "/login", id="login"),
    ],
)
def test_api_failures_map_to_reasons(name: str, reason: FailureReason, needle: str) -> None:
    events, outcome, _ = replay(name)
    assert isinstance(outcome, TurnFailed)
    assert outcome.reason == reason
    assert needle in outcome.message
    assert not outcome.resume_rejected
    # The CLI's synthetic "API Error: …" assistant message is not chat text.
    assert texts(events) == ""


def test_api_retries_become_notices() -> None:
    events, _, _ = replay("error_500")
    notices = [e for e in events if isinstance(e, NoticeEvent)]
    assert notices
    assert "500" in notices[0].message
    assert "retrying" in notices[0].message


@pytest.mark.parametrize("resume", [True, False])
def test_unknown_resume_id_is_rejected(resume: bool) -> None:
    events, outcome, _ = replay("resume_unknown", resume=resume)
    assert isinstance(outcome, TurnFailed)
    assert outcome.reason == FailureReason.CLAUDE_FAILED
    assert outcome.resume_rejected is resume
    assert "No conversation found" in outcome.message
    # The result line names the requested id, but no conversation was started.
    assert events == []


def test_interrupted_turn_keeps_streamed_text_once() -> None:
    events, outcome, _ = replay("interrupted")
    assert texts(events) == "word word word "
    assert isinstance(outcome, TurnFailed)
    assert "aborted_streaming" in outcome.message


# -- pinned cases (milk-original §9 #35) ---------------------------------------------------------


def stream_event(event: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "stream_event", "event": event, "session_id": "s1", **extra}


def text_delta(text: str) -> dict[str, Any]:
    return stream_event(
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}
    )


def message_start(mid: str) -> dict[str, Any]:
    return stream_event({"type": "message_start", "message": {"id": mid}})


def assistant(mid: str, *blocks: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "type": "assistant",
        "message": {"id": mid, "model": "m", "content": list(blocks)},
        "session_id": "s1",
        **extra,
    }


def feed_all(*messages: dict[str, Any]) -> list[AgentEvent]:
    mapper = StreamMapper()
    events: list[AgentEvent] = []
    for msg in messages:
        events += mapper.feed(msg)
    return events


def test_deltas_suppress_the_full_assistant_message() -> None:
    events = feed_all(
        message_start("m1"),
        text_delta("hel"),
        text_delta("lo"),
        assistant("m1", {"type": "text", "text": "hello"}),
    )
    assert texts(events) == "hello"


def test_message_start_between_deltas_separates_messages() -> None:
    events = feed_all(
        message_start("m1"), text_delta("first"), message_start("m2"), text_delta("second")
    )
    assert texts(events) == "first\nsecond"


def test_assistant_text_used_when_no_deltas_were_seen() -> None:
    events = feed_all(
        assistant("m1", {"type": "text", "text": "one"}),
        assistant("m2", {"type": "text", "text": "two"}),
    )
    assert texts(events) == "one\ntwo"


def test_thinking_blocks_are_not_text() -> None:
    events = feed_all(
        assistant("m1", {"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "ok"})
    )
    assert texts(events) == "ok"
    assert [e.text for e in events if isinstance(e, ThinkingDelta)] == ["hmm"]


def test_synthetic_error_message_is_not_text() -> None:
    events = feed_all(
        assistant(
            "m1",
            {"type": "text", "text": "API Error: 500"},
            error="server_error",
            is_api_error_message=True,
        )
    )
    assert texts(events) == ""


def test_subagent_stream_is_not_main_text() -> None:
    events = feed_all(
        {**text_delta("sub"), "parent_tool_use_id": "toolu_task"},
        assistant("m9", {"type": "text", "text": "sub"}, parent_tool_use_id="toolu_task"),
    )
    assert texts(events) == ""


def test_session_started_once_from_the_first_line_with_an_id() -> None:
    events = feed_all(
        {"type": "system", "subtype": "init", "session_id": "abc"},
        {"type": "system", "subtype": "status", "session_id": "abc"},
    )
    assert events == [ClaudeSessionStarted("abc")]


def test_tool_input_from_json_deltas_when_no_assistant_line() -> None:
    start = {
        "type": "content_block_start",
        "index": 1,
        "content_block": {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}},
    }
    deltas = [
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": part},
        }
        for part in ('{"file_pa', 'th": "a.py"}')
    ]
    events = feed_all(
        message_start("m1"),
        stream_event(start),
        *(stream_event(d) for d in deltas),
        stream_event({"type": "content_block_stop", "index": 1}),
    )
    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    assert calls == [
        ToolCallEvent("toolu_1", "Read", {}, ToolStatus.PENDING),
        ToolCallEvent("toolu_1", "Read", {"file_path": "a.py"}, ToolStatus.RUNNING),
    ]


def test_permission_denied_system_message_marks_denied() -> None:
    events = feed_all(
        assistant("m1", {"type": "tool_use", "id": "toolu_2", "name": "Write", "input": {}}),
        {"type": "system", "subtype": "permission_denied", "tool_use_id": "toolu_2"},
        {
            "type": "user",
            "message": {
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_2",
                        "content": [{"type": "text", "text": "denied"}],
                        "is_error": True,
                    }
                ]
            },
        },
    )
    assert statuses(events)[-1] == ToolStatus.DENIED
    assert ToolResultEvent("toolu_2", "denied", True) in events


def test_failed_tool_result() -> None:
    events = feed_all(
        assistant(
            "m1", {"type": "tool_use", "id": "t3", "name": "Bash", "input": {"command": "x"}}
        ),
        {
            "type": "user",
            "message": {
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t3",
                        "content": "Exit code 1",
                        "is_error": True,
                    }
                ]
            },
        },
    )
    assert statuses(events) == [ToolStatus.PENDING, ToolStatus.RUNNING, ToolStatus.FAILED]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        pytest.param("plain", "plain", id="string"),
        pytest.param(
            [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], "a\nb", id="blocks"
        ),
        pytest.param([{"type": "image", "source": {}}], "[image]", id="image"),
        pytest.param(None, "", id="none"),
    ],
)
def test_tool_output_text(content: Any, expected: str) -> None:
    assert tool_output_text(content) == expected


# -- parsing ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param(b"", None, id="blank"),
        pytest.param(b"   \n", None, id="spaces"),
        pytest.param(b"[SandboxDebug] noise\n", None, id="non-json-noise"),
        pytest.param(b'{"type":"system"}\n', {"type": "system"}, id="object"),
    ],
)
def test_parse_line(raw: bytes, expected: Any) -> None:
    assert parse_line(raw) == expected


@pytest.mark.parametrize("raw", [b'{"type": "sys', b'{"no_type": 1}', b"{}"])
def test_parse_line_rejects_corrupt_json(raw: bytes) -> None:
    with pytest.raises(StreamParseError):
        parse_line(raw)


# -- outcomes -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        pytest.param({"subtype": "success", "is_error": False}, TurnDone(), id="success"),
        pytest.param(
            {"subtype": "error_max_turns", "is_error": True}, TurnDone("max_turns"), id="max"
        ),
    ],
)
def test_outcome_done(result: dict[str, Any], expected: TurnDone) -> None:
    assert outcome_from_result(result, resume=False) == expected


@pytest.mark.parametrize(
    ("result", "reason"),
    [
        pytest.param(
            {
                "subtype": "success",
                "is_error": True,
                "result": "Invalid API key · Fix external API key",
                "api_error_status": 401,
                "terminal_reason": "api_error",
            },
            FailureReason.CLAUDE_NOT_LOGGED_IN,
            id="401",
        ),
        pytest.param(
            {
                "subtype": "success",
                "is_error": True,
                "result": "API Error: 400 prompt is too long: 5 > 4",
                "terminal_reason": "api_error",
                "api_error_status": 400,
            },
            FailureReason.PROMPT_TOO_LONG,
            id="ptl-by-text",
        ),
        pytest.param(
            {
                "subtype": "success",
                "is_error": True,
                "result": "API Error: 529 overloaded",
                "api_error_status": 529,
                "terminal_reason": "api_error",
            },
            FailureReason.CLAUDE_FAILED,
            id="529",
        ),
        pytest.param(
            {"subtype": "error_during_execution", "is_error": True, "errors": ["boom"]},
            FailureReason.CLAUDE_FAILED,
            id="execution",
        ),
    ],
)
def test_outcome_failures(result: dict[str, Any], reason: FailureReason) -> None:
    outcome = outcome_from_result(result, resume=False)
    assert isinstance(outcome, TurnFailed)
    assert outcome.reason == reason


def test_exit_without_result_names_signal_and_stderr() -> None:
    outcome = outcome_from_exit(-9, "some noise\nlast words\n", resume=False)
    assert outcome.reason == FailureReason.CLAUDE_FAILED
    assert "SIGKILL" in outcome.message
    assert "last words" in outcome.message


def test_exit_code_and_empty_stderr() -> None:
    outcome = outcome_from_exit(1, "", resume=True)
    assert "exited with code 1" in outcome.message
    assert not outcome.resume_rejected


def test_exit_with_resume_rejected_on_stderr() -> None:
    outcome = outcome_from_exit(1, "No conversation found with session ID: x\n", resume=True)
    assert outcome.resume_rejected


def test_exit_skip_permissions_as_root_is_explained() -> None:
    outcome = outcome_from_exit(
        1,
        "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons\n",
        resume=False,
    )
    assert "claude.skipPermissions" in outcome.message


# -- stdin lines --------------------------------------------------------------------------------


def test_user_message_is_verbatim_and_client_composed() -> None:
    text = "<milk-context>\n@/etc/passwd\n</milk-context>\n-- --help"
    line = user_message_line(text)
    assert line.endswith(b"\n")
    assert line.count(b"\n") == 1
    msg = json.loads(line)
    assert msg["type"] == "user"
    assert msg["client_composed"] is True
    assert msg["message"] == {"role": "user", "content": [{"type": "text", "text": text}]}


def test_allow_echoes_input_and_deny_carries_message() -> None:
    allow = json.loads(allow_line("r1", {"command": "ls"}))
    assert allow == {
        "type": "control_response",
        "response": {
            "subtype": "success",
            "request_id": "r1",
            "response": {"behavior": "allow", "updatedInput": {"command": "ls"}},
        },
    }
    deny = json.loads(deny_line("r2", DENY))
    assert deny["response"]["response"] == {"behavior": "deny", "message": DENY}
    assert json.loads(error_response_line("r3", "no"))["response"]["subtype"] == "error"
    assert json.loads(interrupt_line("r4"))["request"] == {"subtype": "interrupt"}


# A resumed conversation's third `result` line, as the real CLI wrote it (issue 30): the
# running total of three turns, and the turn's own usage per model.
RESUMED_RESULT = {
    "type": "result",
    "subtype": "success",
    "total_cost_usd": 0.000332,
    "usage": {"input_tokens": 21, "output_tokens": 2},
    "modelUsage": {"claude-opus-5-5": {"inputTokens": 63, "outputTokens": 4, "costUSD": 0.000332}},
    "model_usage_since_last_result": {
        "claude-opus-5-5": {"inputTokens": 21, "outputTokens": 2, "costUSD": 0.000124}
    },
}


def test_a_resumed_turn_costs_what_it_used_since_the_last_result() -> None:
    assert turn_cost(RESUMED_RESULT) == pytest.approx(0.000124)
    assert usage_from_result(RESUMED_RESULT).cost_usd == pytest.approx(0.000124)


def test_without_the_turn_s_own_figure_the_running_total_is_taken_apart() -> None:
    older = {key: value for key, value in RESUMED_RESULT.items() if not key.startswith("model_")}
    assert turn_cost(older, 0.000208) == pytest.approx(0.000124)
    assert turn_cost(older) == pytest.approx(0.000332)  # a first turn: the total is its own
    assert turn_cost({"type": "result"}) is None
