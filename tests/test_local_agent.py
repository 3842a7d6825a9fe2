"""The local agent: lenient tool-call merging, and whole turns against the scripted server.

Merging is tested on the three streams recorded from real servers (tests/data/openai/*.sse)
and on synthetic shapes; turns run against `tests.fakes.openai_server` on a real loopback
socket (a few use `httpx.MockTransport` for shapes the fake does not produce).
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import aclosing
from pathlib import Path
from typing import Any

import httpx
import pytest

from milk_lsp.agents.base import (
    AgentEvent,
    EscalationRequested,
    FailureReason,
    LocalGaveUp,
    LocalSignal,
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
from milk_lsp.agents.local.agent import (
    ESCALATE_TOOL_NAME,
    LocalAgent,
    LocalModelError,
    LocalSettings,
)
from milk_lsp.agents.local.reply.tool_calls import (
    MergedToolCall,
    TextCallGate,
    merge_tool_call_deltas,
    parse_text_tool_calls,
    parse_tool_arguments,
)
from milk_lsp.agents.local.rounds import Outcome
from tests.fakes.openai_server import FakeOpenAIServer

DATA = Path(__file__).parent / "data" / "openai"
LLAMACPP_TOOL = DATA / "llamacpp-b11549-qwen2.5-coder-1.5b-tool-stream.sse"
LLAMACPP_TEXT = DATA / "llamacpp-b11549-smollm2-135m-text-stream.sse"
LLAMA_CPP_PYTHON_TOOL = DATA / "llama-cpp-python-0.3.36-chatml-function-calling-tool-stream.sse"

MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a test."},
    {"role": "user", "content": "Read src/main.py"},
]


# -- helpers ---------------------------------------------------------------------------------


def recorded_chunks(path: Path) -> list[dict[str, Any]]:
    """The JSON chunks of a recorded stream (test-side reading of the `data:` lines)."""
    chunks = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("data: ") and line != "data: [DONE]":
            chunks.append(json.loads(line[len("data: ") :]))
    return chunks


def tool_fragments(chunks: list[dict[str, Any]]) -> list[Any]:
    fragments: list[Any] = []
    for chunk in chunks:
        for choice in chunk.get("choices") or []:
            fragments.extend((choice.get("delta") or {}).get("tool_calls") or [])
    return fragments


class StandInTools:
    """Stands in for `WorkspaceTools`: records calls, answers from a table."""

    names = frozenset({"read_file", "list_dir", "write_file"})

    def __init__(self, answers: dict[str, Callable[[dict[str, Any]], Outcome]] | None = None):
        self.calls: list[tuple[str, str, dict[str, Any]]] = []
        self.answers = answers or {}

    def specs(self) -> list[dict[str, Any]]:
        return [
            {
                "type": "function",
                "function": {
                    "name": name,
                    "description": f"{name} (stand-in)",
                    "parameters": {"type": "object", "properties": {}},
                },
            }
            for name in sorted(self.names)
        ]

    async def call(self, tool_call_id: str, name: str, arguments: dict[str, Any]) -> Outcome:
        self.calls.append((tool_call_id, name, arguments))
        answer = self.answers.get(name)
        if answer is not None:
            return answer(arguments)
        return Outcome(f"{name} output for {json.dumps(arguments, sort_keys=True)}")


async def collect(
    agent: LocalAgent,
    tools: StandInTools | None = None,
    *,
    offer_escalation: bool = False,
    messages: list[dict[str, Any]] | None = None,
    cut_short: bool = False,
) -> list[AgentEvent]:
    async with aclosing(
        agent.run(
            messages or list(MESSAGES),
            tools,
            offer_escalation=offer_escalation,
            cut_short=cut_short,
        )
    ) as events:
        return [event async for event in events]


def text_of(events: list[AgentEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def tool_events(events: list[AgentEvent]) -> list[tuple[str, Any]]:
    """(kind, detail) for tool events, in order: ("call", (name, status)) / ("result", error)."""
    out: list[tuple[str, Any]] = []
    for event in events:
        if isinstance(event, ToolCallEvent):
            out.append(("call", (event.name, event.status)))
        elif isinstance(event, ToolResultEvent):
            out.append(("result", event.is_error))
    return out


def failure(events: list[AgentEvent]) -> TurnFailed:
    assert isinstance(events[-1], TurnFailed), events
    assert not any(isinstance(e, TurnDone) for e in events)
    return events[-1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def settings_for(server: FakeOpenAIServer, **overrides: Any) -> LocalSettings:
    values: dict[str, Any] = {"base_url": server.base_url, "read_timeout_seconds": 5.0}
    values.update(overrides)
    return LocalSettings(**values)


def mock_agent(body: bytes | str, content_type: str = "text/event-stream") -> LocalAgent:
    data = body.encode() if isinstance(body, str) else body

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": content_type}, content=data)

    return LocalAgent(
        LocalSettings(base_url="http://model.test/v1", model="m"),
        transport=httpx.MockTransport(handler),
    )


def sse(*chunks: Any, done: bool = True) -> str:
    lines = [f"data: {c if isinstance(c, str) else json.dumps(c)}\n\n" for c in chunks]
    return "".join(lines) + ("data: [DONE]\n\n" if done else "")


def delta(d: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": d, "finish_reason": finish}]}


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture
async def agent(server: FakeOpenAIServer) -> AsyncIterator[LocalAgent]:
    local = LocalAgent(settings_for(server))
    yield local
    await local.aclose()


# -- merging (pure) --------------------------------------------------------------------------


def test_merge_llamacpp_recorded_stream() -> None:
    calls = merge_tool_call_deltas(tool_fragments(recorded_chunks(LLAMACPP_TOOL)))
    assert calls == [
        MergedToolCall(
            id="kXyyxgcmlmf4C77vnfJnaO0muXOHLz2k",
            name="read_file",
            arguments='{"path": "src/main.py"}',
            index=0,
        )
    ]


def test_merge_llama_cpp_python_takes_repeated_id_and_name_once() -> None:
    calls = merge_tool_call_deltas(tool_fragments(recorded_chunks(LLAMA_CPP_PYTHON_TOOL)))
    assert len(calls) == 1
    assert calls[0].name == "read_file"
    assert calls[0].id == "call__0_read_file_cmpl-4523a3b9-95e5-4e44-b1bf-7f455e48f19a"
    assert parse_tool_arguments(calls[0].arguments) == ({"path": "src/main.py"}, "")


def test_merge_text_recorded_stream_has_no_calls() -> None:
    assert merge_tool_call_deltas(tool_fragments(recorded_chunks(LLAMACPP_TEXT))) == []


def test_merge_ollama_whole_call_in_one_fragment() -> None:
    fragments = [
        {
            "id": "call_ab12",
            "index": 0,
            "type": "function",
            "function": {"name": "read_file", "arguments": '{"path":"a.py"}'},
        }
    ]
    assert merge_tool_call_deltas(fragments) == [
        MergedToolCall("call_ab12", "read_file", '{"path":"a.py"}', 0)
    ]


def test_merge_interleaved_indexes() -> None:
    fragments = [
        {"index": 0, "id": "a", "function": {"name": "read_file", "arguments": '{"pa'}},
        {"index": 1, "id": "b", "function": {"name": "list_dir", "arguments": '{"path"'}},
        {"index": 0, "function": {"arguments": 'th":"x"}'}},
        {"index": 1, "function": {"arguments": ':"."}'}},
    ]
    assert [(c.id, c.name, c.arguments) for c in merge_tool_call_deltas(fragments)] == [
        ("a", "read_file", '{"path":"x"}'),
        ("b", "list_dir", '{"path":"."}'),
    ]


def test_merge_without_index_falls_back_to_id_then_order() -> None:
    fragments = [
        {"id": "a", "function": {"name": "read_file", "arguments": "{"}},
        {"id": "b", "function": {"name": "list_dir", "arguments": "{}"}},
        {"id": "a", "function": {"arguments": "}"}},
        # neither index nor id: continues the latest call...
        {"function": {"name": "write_file", "arguments": '{"x"'}},
        {"function": {"arguments": ": 1}"}},
        # ...unless it names a function while the latest one has a name already
        {"function": {"name": "read_file", "arguments": "{}"}},
    ]
    assert [(c.id, c.name, c.arguments) for c in merge_tool_call_deltas(fragments)] == [
        ("a", "read_file", "{}"),
        ("b", "list_dir", "{}"),
        ("", "write_file", '{"x": 1}'),
        ("", "read_file", "{}"),
    ]


def test_merge_new_id_at_a_taken_index_is_a_new_call() -> None:
    fragments = [
        {"index": 0, "id": "a", "function": {"name": "read_file", "arguments": "{}"}},
        {"index": 0, "id": "b", "function": {"name": "list_dir", "arguments": "{}"}},
    ]
    assert [c.id for c in merge_tool_call_deltas(fragments)] == ["a", "b"]


def test_merge_repeated_name_is_never_concatenated() -> None:
    fragments = [
        {"index": 0, "id": "a", "function": {"name": "read_file", "arguments": '{"p'}},
        {"index": 0, "id": "a", "function": {"name": "read_file", "arguments": '":1}'}},
    ]
    [call] = merge_tool_call_deltas(fragments)
    assert (call.name, call.arguments) == ("read_file", '{"p":1}')


def test_merge_argument_object_and_junk_entries() -> None:
    fragments = [
        "junk",
        None,
        {"index": 0, "function": {"name": "read_file", "arguments": {"path": "a.py"}}},
        {"index": 1, "function": {"arguments": "{}"}},
    ]
    calls = merge_tool_call_deltas(fragments)
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [
        ("read_file", {"path": "a.py"}),
        ("", {}),
    ]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("", {}),
        ("  ", {}),
        ('{"path": "a.py"}', {"path": "a.py"}),
        ('"{\\"path\\": \\"a.py\\"}"', {"path": "a.py"}),
        ('{"path": "a.py"', None),
        ("[1, 2]", None),
        ("read a.py", None),
    ],
)
def test_parse_tool_arguments(raw: str, expected: dict[str, Any] | None) -> None:
    value, why = parse_tool_arguments(raw)
    assert value == expected
    assert bool(why) == (expected is None)


# -- turns against the scripted server -------------------------------------------------------


async def test_plain_text_turn(server: FakeOpenAIServer, agent: LocalAgent) -> None:
    server.enqueue({"text": "Hello, world", "chunk_chars": 3, "reasoning": "think"})
    messages = list(MESSAGES)
    events = await collect(agent, messages=messages)
    assert text_of(events) == "Hello, world"
    assert sum(isinstance(e, TextDelta) for e in events) == 4
    assert "".join(e.text for e in events if isinstance(e, ThinkingDelta)) == "think"
    usage = [e for e in events if isinstance(e, UsageEvent)]
    assert len(usage) == 1
    assert usage[0].output_tokens > 0
    assert usage[0].cache_read_tokens == 0
    assert events[-1] == TurnDone()
    [body] = server.requests
    assert body["model"] == "fake-model"  # resolved from GET /models
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["messages"] == MESSAGES
    assert "tools" not in body
    assert "temperature" not in body  # unset: the server's default
    assert messages == MESSAGES


async def test_configured_temperature_goes_with_every_request(server: FakeOpenAIServer) -> None:
    local = LocalAgent(settings_for(server, temperature=0.0))
    try:
        server.enqueue(
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.py"}, "id": "c1"}]},
            {"text": "done"},
        )
        events = await collect(local, StandInTools())
    finally:
        await local.aclose()
    assert events[-1] == TurnDone()
    assert [body["temperature"] for body in server.requests] == [0.0, 0.0]


async def test_bearer_token_and_configured_model(server: FakeOpenAIServer) -> None:
    local = LocalAgent(settings_for(server, api_key="sk-test", model="my-model"))
    try:
        events = await collect(local)
    finally:
        await local.aclose()
    assert events[-1] == TurnDone()
    [record] = [r for r in server.records if r["method"] == "POST"]
    assert record["headers"]["authorization"] == "Bearer sk-test"
    assert record["body"]["model"] == "my-model"
    assert not any(r["path"].endswith("/models") for r in server.records)
    assert "sk-test" not in repr(local.settings)


async def test_replayed_recorded_streams(server: FakeOpenAIServer, agent: LocalAgent) -> None:
    server.enqueue(
        {"replay": "tests/data/openai/llamacpp-b11549-qwen2.5-coder-1.5b-tool-stream.sse"},
        {"replay": str(LLAMA_CPP_PYTHON_TOOL)},
        {"replay": "tests/data/openai/llamacpp-b11549-smollm2-135m-text-stream.sse"},
    )
    tools = StandInTools()
    events = await collect(agent, tools)
    assert [(name, args) for _, name, args in tools.calls] == [
        ("read_file", {"path": "src/main.py"}),
        ("read_file", {"path": "src/main.py"}),
    ]
    assert text_of(events).startswith("Hello! I'm here to help")
    assert [(e.input_tokens, e.output_tokens) for e in events if isinstance(e, UsageEvent)] == [
        (175, 27),
        (33, 12),
    ]
    # finish_reason "length" on the final reply is worth a notice
    assert any(isinstance(e, NoticeEvent) and "token limit" in e.message for e in events)
    assert events[-1] == TurnDone()
    second = server.requests[1]["messages"]
    assert second[-2]["tool_calls"][0]["id"] == "kXyyxgcmlmf4C77vnfJnaO0muXOHLz2k"
    assert second[-1]["tool_call_id"] == "kXyyxgcmlmf4C77vnfJnaO0muXOHLz2k"


async def test_multi_round_tool_turn(server: FakeOpenAIServer, agent: LocalAgent) -> None:
    server.enqueue(
        {
            "text": "Let me look.",
            "tool_calls": [
                {"name": "read_file", "arguments": {"path": "a.py"}, "id": "c1"},
                {"name": "list_dir", "arguments": {"path": "."}, "id": "c2"},
            ],
        },
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "b.py"}, "id": "c3"}]},
        {"text": "All done."},
    )
    tools = StandInTools()
    events = await collect(agent, tools)

    assert [(tid, name) for tid, name, _ in tools.calls] == [
        ("c1", "read_file"),
        ("c2", "list_dir"),
        ("c3", "read_file"),
    ]
    assert tool_events(events) == [
        ("call", ("read_file", ToolStatus.RUNNING)),
        ("call", ("read_file", ToolStatus.COMPLETED)),
        ("result", False),
        ("call", ("list_dir", ToolStatus.RUNNING)),
        ("call", ("list_dir", ToolStatus.COMPLETED)),
        ("result", False),
        ("call", ("read_file", ToolStatus.RUNNING)),
        ("call", ("read_file", ToolStatus.COMPLETED)),
        ("result", False),
    ]
    assert text_of(events) == "Let me look.\n\nAll done.", "each reply its own paragraph"
    assert sum(isinstance(e, UsageEvent) for e in events) == 3
    assert events[-1] == TurnDone()

    first, second, third = server.requests
    names = [spec["function"]["name"] for spec in first["tools"]]
    assert names == [*sorted(StandInTools.names), "finish"]
    tail = second["messages"][len(MESSAGES) :]
    assert tail[0]["role"] == "assistant"
    assert tail[0]["content"] == "Let me look."
    assert [c["id"] for c in tail[0]["tool_calls"]] == ["c1", "c2"]
    assert json.loads(tail[0]["tool_calls"][0]["function"]["arguments"]) == {"path": "a.py"}
    assert tail[1] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": 'read_file output for {"path": "a.py"}',
    }
    assert tail[2]["tool_call_id"] == "c2"
    assert [m["role"] for m in third["messages"][len(MESSAGES) :]] == [
        "assistant",
        "tool",
        "tool",
        "assistant",
        "tool",
    ]


@pytest.mark.parametrize("style", ["ollama", "repeat_names", "llamacpp"])
async def test_tool_call_styles(server: FakeOpenAIServer, agent: LocalAgent, style: str) -> None:
    server.enqueue(
        {
            "style": style,
            "chunk_chars": 2,
            "tool_calls": [
                {"name": "read_file", "arguments": {"path": "src/main.py"}},
                {"name": "list_dir", "arguments": {"path": "src"}},
            ],
        },
        {"text": "done"},
    )
    tools = StandInTools()
    events = await collect(agent, tools)
    assert [(name, args) for _, name, args in tools.calls] == [
        ("read_file", {"path": "src/main.py"}),
        ("list_dir", {"path": "src"}),
    ]
    assert text_of(events) == "done"
    assert events[-1] == TurnDone()


async def test_missing_and_repeated_ids_get_unique_ones(
    server: FakeOpenAIServer, agent: LocalAgent
) -> None:
    server.enqueue(
        {
            "style": "ollama",
            "index": False,
            "tool_calls": [
                {"name": "read_file", "arguments": {"path": "a"}, "id": None},
                {"name": "read_file", "arguments": {"path": "b"}, "id": None},
            ],
        },
        {"tool_calls": [{"name": "list_dir", "arguments": {}, "id": "same"}]},
        {"tool_calls": [{"name": "list_dir", "arguments": {}, "id": "same"}]},
        {"text": "ok"},
    )
    tools = StandInTools()
    events = await collect(agent, tools)
    ids = [tid for tid, _, _ in tools.calls]
    assert len(ids) == 4
    assert len(set(ids)) == 4
    assert ids[0].startswith("call_")
    assert ids[2] == "same"
    assert ids[3] != "same"
    result_ids = [e.tool_call_id for e in events if isinstance(e, ToolResultEvent)]
    assert result_ids == ids
    # the ids sent back to the model match the ones the tools saw
    last = server.requests[-1]["messages"]
    sent = [m["tool_call_id"] for m in last if m["role"] == "tool"]
    assert sent == ids


async def test_invalid_json_arguments_get_an_error_result(
    server: FakeOpenAIServer, agent: LocalAgent
) -> None:
    server.enqueue(
        {"tool_calls": [{"name": "read_file", "arguments": '{"path": "a.py"', "id": "bad"}]},
        {"text": "sorry"},
    )
    tools = StandInTools()
    events = await collect(agent, tools)
    assert tools.calls == []
    assert tool_events(events) == [("call", ("read_file", ToolStatus.FAILED)), ("result", True)]
    [result] = [e for e in events if isinstance(e, ToolResultEvent)]
    assert "not valid JSON" in result.output
    assert events[-1] == TurnDone()
    messages = server.requests[1]["messages"]
    assert messages[-2]["tool_calls"][0]["function"]["arguments"] == "{}"
    assert messages[-1]["tool_call_id"] == "bad"
    assert "not valid JSON" in messages[-1]["content"]


async def test_unknown_denied_and_raising_tools(
    server: FakeOpenAIServer, agent: LocalAgent
) -> None:
    def boom(arguments: dict[str, Any]) -> Outcome:
        raise RuntimeError("disk on fire")

    tools = StandInTools(
        {
            "write_file": lambda a: Outcome("the user denied write_file", True, True),
            "list_dir": boom,
        }
    )
    server.enqueue(
        {
            "tool_calls": [
                {"name": "rm_rf", "arguments": {}},
                {"name": "write_file", "arguments": {"path": "a"}},
                {"name": "list_dir", "arguments": {}},
            ]
        },
        {"text": "ok"},
    )
    events = await collect(agent, tools)
    assert tool_events(events) == [
        ("call", ("rm_rf", ToolStatus.FAILED)),
        ("result", True),
        ("call", ("write_file", ToolStatus.RUNNING)),
        ("call", ("write_file", ToolStatus.DENIED)),
        ("result", True),
        ("call", ("list_dir", ToolStatus.RUNNING)),
        ("call", ("list_dir", ToolStatus.FAILED)),
        ("result", True),
    ]
    outputs = [e.output for e in events if isinstance(e, ToolResultEvent)]
    assert "no tool named 'rm_rf'" in outputs[0]
    assert outputs[1] == "the user denied write_file"
    assert "disk on fire" in outputs[2]
    assert events[-1] == TurnDone()


async def test_escalation_call_ends_the_local_part(
    server: FakeOpenAIServer, agent: LocalAgent
) -> None:
    server.enqueue(
        {
            "text": "This needs Claude.",
            "tool_calls": [
                {"name": ESCALATE_TOOL_NAME, "arguments": {"reason": "big refactor"}, "id": "e1"},
                {"name": "read_file", "arguments": {"path": "a.py"}, "id": "r1"},
            ],
        },
        {"text": "never sent"},
    )
    tools = StandInTools()
    events = await collect(agent, tools, offer_escalation=True)
    assert [name for _, name, _ in tools.calls] == ["read_file"]  # other calls run first
    assert tool_events(events) == [
        ("call", ("read_file", ToolStatus.RUNNING)),
        ("call", ("read_file", ToolStatus.COMPLETED)),
        ("result", False),
        ("call", (ESCALATE_TOOL_NAME, ToolStatus.COMPLETED)),
    ]
    assert events[-1] == EscalationRequested(reason="big refactor", tool_call_id="e1")
    assert not any(isinstance(e, TurnDone | TurnFailed) for e in events)
    [body] = server.requests  # no further model call
    specs = {spec["function"]["name"]: spec for spec in body["tools"]}
    assert ESCALATE_TOOL_NAME in specs
    assert specs[ESCALATE_TOOL_NAME]["function"]["parameters"]["required"] == ["reason"]
    assert server.pending() == 1


async def test_escalation_not_offered(server: FakeOpenAIServer, agent: LocalAgent) -> None:
    server.enqueue(
        {"tool_calls": [{"name": ESCALATE_TOOL_NAME, "arguments": {"reason": "x"}}]},
        {"text": "fine, I'll do it"},
    )
    events = await collect(agent, StandInTools(), offer_escalation=False)
    assert not any(isinstance(e, EscalationRequested) for e in events)
    assert tool_events(events) == [
        ("call", (ESCALATE_TOOL_NAME, ToolStatus.FAILED)),
        ("result", True),
    ]
    assert events[-1] == TurnDone()
    assert all(
        spec["function"]["name"] != ESCALATE_TOOL_NAME for spec in server.requests[0]["tools"]
    )


async def test_max_tool_rounds_exceeded(server: FakeOpenAIServer) -> None:
    server.enqueue({"tool_calls": [{"name": "read_file", "arguments": {"path": "a"}}], "repeat": 5})
    local = LocalAgent(settings_for(server, max_tool_rounds=2))
    tools = StandInTools()
    try:
        events = await collect(local, tools)
    finally:
        await local.aclose()
    gave_up = events[-1]
    assert isinstance(gave_up, LocalGaveUp), events
    assert gave_up.signal is LocalSignal.ROUND_LIMIT
    assert "2 rounds" in gave_up.detail
    assert "local.maxToolRounds" in gave_up.detail
    assert len(gave_up.tried) == 2
    assert len(tools.calls) == 2
    assert len(server.requests) == 3


async def test_escalation_still_honoured_past_the_round_limit(server: FakeOpenAIServer) -> None:
    server.enqueue(
        {"tool_calls": [{"name": "read_file", "arguments": {}}]},
        {"tool_calls": [{"name": ESCALATE_TOOL_NAME, "arguments": {"reason": "stuck"}}]},
    )
    local = LocalAgent(settings_for(server, max_tool_rounds=1))
    try:
        events = await collect(local, StandInTools(), offer_escalation=True)
    finally:
        await local.aclose()
    assert isinstance(events[-1], EscalationRequested)
    assert events[-1].reason == "stuck"


async def test_concurrent_turns_share_nothing(server: FakeOpenAIServer, agent: LocalAgent) -> None:
    server.enqueue({"text": "one", "delay": 0.01}, {"text": "two", "delay": 0.01})
    first, second = await asyncio.gather(collect(agent), collect(agent))
    assert sorted([text_of(first), text_of(second)]) == ["one", "two"]
    assert first[-1] == second[-1] == TurnDone()


# -- failures --------------------------------------------------------------------------------


@pytest.mark.parametrize("model", [None, "m"])
async def test_refused_port_is_unreachable(model: str | None) -> None:
    base_url = f"http://127.0.0.1:{free_port()}/v1"
    local = LocalAgent(LocalSettings(base_url=base_url, model=model))
    try:
        events = await collect(local)
    finally:
        await local.aclose()
    failed = failure(events)
    assert failed.reason is FailureReason.LOCAL_UNREACHABLE
    assert base_url in failed.message
    assert "connection refused" in failed.message
    assert "local.baseUrl" in failed.message


async def test_invalid_base_url_is_unreachable() -> None:
    local = LocalAgent(LocalSettings(base_url="ftp://nowhere/v1", model="m"))
    try:
        failed = failure(await collect(local))
    finally:
        await local.aclose()
    assert failed.reason is FailureReason.LOCAL_UNREACHABLE
    assert "local.baseUrl" in failed.message


async def test_http_500_quotes_the_error_body(server: FakeOpenAIServer, agent: LocalAgent) -> None:
    server.enqueue({"status": 500, "body": {"error": {"message": "model exploded", "code": 500}}})
    failed = failure(await collect(agent))
    assert failed.reason is FailureReason.LOCAL_FAILED
    assert "HTTP 500" in failed.message
    assert "model exploded" in failed.message


async def test_http_error_plain_body_is_shortened(
    server: FakeOpenAIServer, agent: LocalAgent
) -> None:
    server.enqueue({"status": 401, "body": "nope " * 500})
    failed = failure(await collect(agent))
    assert "HTTP 401" in failed.message
    assert "local.apiKey" in failed.message
    assert len(failed.message) < 500


async def test_stall_past_read_timeout(server: FakeOpenAIServer) -> None:
    server.enqueue({"stall": 10, "text": "late"})
    local = LocalAgent(settings_for(server, read_timeout_seconds=0.3, model="m"))
    try:
        failed = failure(await collect(local))
    finally:
        await local.aclose()
    assert failed.reason is FailureReason.LOCAL_FAILED
    assert "0.3 s" in failed.message
    assert "timeout" in failed.message
    assert server.wait_for_disconnects(1)


async def test_dropped_connection_mid_stream(server: FakeOpenAIServer, agent: LocalAgent) -> None:
    server.enqueue({"text": "abcdefghijkl", "chunk_chars": 2, "cut_after": 3})
    events = await collect(agent)
    failed = failure(events)
    assert failed.reason is FailureReason.LOCAL_FAILED
    assert "dropped" in failed.message
    assert text_of(events) == "abcd"  # role chunk, "ab", "cd", then the drop


async def test_malformed_sse(server: FakeOpenAIServer, agent: LocalAgent) -> None:
    server.enqueue({"malformed": True})
    failed = failure(await collect(agent))
    assert failed.reason is FailureReason.LOCAL_FAILED
    assert "malformed stream" in failed.message


async def test_stream_ending_without_done_or_finish_reason() -> None:
    local = mock_agent(sse(delta({"role": "assistant", "content": "hi"}), done=False))
    try:
        failed = failure(await collect(local))
    finally:
        await local.aclose()
    assert failed.reason is FailureReason.LOCAL_FAILED
    assert "malformed stream" in failed.message


async def test_stream_with_finish_reason_but_no_done_is_fine() -> None:
    local = mock_agent(sse(delta({"content": "hi"}, "stop"), done=False))
    try:
        events = await collect(local)
    finally:
        await local.aclose()
    assert text_of(events) == "hi"
    assert events[-1] == TurnDone()


async def test_error_object_mid_stream() -> None:
    local = mock_agent(sse(delta({"content": "x"}), {"error": {"message": "context overflow"}}))
    try:
        failed = failure(await collect(local))
    finally:
        await local.aclose()
    assert "context overflow" in failed.message


async def test_reasoning_field_variants_and_empty_reply_notice() -> None:
    local = mock_agent(
        sse(
            delta({"reasoning": "a"}),
            delta({"thinking": "b"}),
            delta({"reasoning_content": "c", "reasoning": "c"}),
            delta({}, "stop"),
        )
    )
    try:
        events = await collect(local)
    finally:
        await local.aclose()
    assert [e.text for e in events if isinstance(e, ThinkingDelta)] == ["a", "b", "c"]
    gave_up = events[-1]
    assert isinstance(gave_up, LocalGaveUp)
    assert gave_up.signal is LocalSignal.EMPTY_REPLY
    assert "only reasoning" in gave_up.detail


async def test_server_that_ignores_stream_true() -> None:
    completion = {
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "whole answer"},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2},
    }
    local = mock_agent(json.dumps(completion), "application/json")
    try:
        events = await collect(local)
    finally:
        await local.aclose()
    assert text_of(events) == "whole answer"
    assert UsageEvent(input_tokens=10, output_tokens=2) in events
    assert events[-1] == TurnDone()


async def test_no_models_listed() -> None:
    with FakeOpenAIServer(models=[]) as server:
        local = LocalAgent(settings_for(server))
        try:
            failed = failure(await collect(local))
            assert await local.probe() == (True, None, failed.message)
        finally:
            await local.aclose()
    assert failed.reason is FailureReason.LOCAL_FAILED
    assert "local.model" in failed.message


# -- cancellation --------------------------------------------------------------------------


async def test_closing_the_generator_closes_the_stream(
    server: FakeOpenAIServer, agent: LocalAgent
) -> None:
    server.enqueue({"text": "x" * 200, "chunk_chars": 1, "delay": 0.02})
    async with aclosing(agent.run(list(MESSAGES), None, offer_escalation=False)) as events:
        async for event in events:
            if isinstance(event, TextDelta):
                break
    assert server.wait_for_disconnects(1)
    assert server.wait_until_idle()


async def test_cancelled_consumer_leaves_no_open_stream(
    server: FakeOpenAIServer, agent: LocalAgent
) -> None:
    server.enqueue({"text": "y" * 200, "chunk_chars": 1, "delay": 0.02})
    started = asyncio.Event()

    async def consume() -> None:
        async with aclosing(agent.run(list(MESSAGES), None, offer_escalation=False)) as events:
            async for event in events:
                if isinstance(event, TextDelta):
                    started.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(started.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert server.wait_for_disconnects(1)
    assert server.wait_until_idle()


async def test_cancel_while_a_tool_runs(server: FakeOpenAIServer, agent: LocalAgent) -> None:
    server.enqueue({"tool_calls": [{"name": "read_file", "arguments": {}}]}, {"text": "after"})
    entered = asyncio.Event()

    class SlowTools(StandInTools):
        async def call(self, tool_call_id: str, name: str, arguments: dict[str, Any]) -> Outcome:
            entered.set()
            await asyncio.sleep(30)
            raise AssertionError("not reached")

    seen: list[AgentEvent] = []

    async def consume() -> None:
        async with aclosing(
            agent.run(list(MESSAGES), SlowTools(), offer_escalation=False)
        ) as events:
            async for event in events:
                seen.append(event)

    task = asyncio.create_task(consume())
    await asyncio.wait_for(entered.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(server.requests) == 1
    assert not any(isinstance(e, TurnDone | TurnFailed) for e in seen)


# -- models and probe ------------------------------------------------------------------------


async def test_list_models_and_probe(server: FakeOpenAIServer, agent: LocalAgent) -> None:
    assert await agent.list_models() == ["fake-model"]
    assert await agent.probe() == (True, "fake-model", None)
    configured = LocalAgent(settings_for(server, model="mine"))
    try:
        assert await configured.probe() == (True, "mine", None)
    finally:
        await configured.aclose()


async def test_probe_unreachable() -> None:
    base_url = f"http://127.0.0.1:{free_port()}/v1"
    local = LocalAgent(LocalSettings(base_url=base_url))
    try:
        reachable, model, error = await local.probe()
        with pytest.raises(LocalModelError) as info:
            await local.list_models()
    finally:
        await local.aclose()
    assert (reachable, model) == (False, None)
    assert error is not None
    assert base_url in error
    assert info.value.reason is FailureReason.LOCAL_UNREACHABLE


# -- tool calls written as text --------------------------------------------------------------

OFFERED = frozenset({"read_file", "list_dir", ESCALATE_TOOL_NAME})
READ_A = '{"name": "read_file", "arguments": {"path": "a.py"}}'
TEXT_CALL_SHAPES = {
    "fence": f"```json\n{READ_A}\n```",
    "fence-no-lang": f"\n```\n{READ_A}\n```\n",
    "bare": READ_A,
    "bare-parameters-string": '{"name": "read_file", "parameters": "{\\"path\\": \\"a.py\\"}"}',
    "tool_call-tag": f"<tool_call>\n{READ_A}\n</tool_call>",
    "bracket-tag": f"[tool_call]{READ_A}[/tool_call]",
    "tag-unclosed": f"<tool_call>\n{READ_A}",
    # Qwen2.5-Coder-1.5B on bench/real_tasks: the tag its chat template puts around the specs
    "tools-tag": f"<tools>\n{READ_A}\n</tools>",
    "llama-style": '{"type": "function", "name": "read_file", "parameters": {"path": "a.py"}}',
    # Qwen2.5-Coder-1.5B on bench/real_tasks: the tool's name and a Python dict
    "named-dict": "read_file {'path': 'a.py'}",
    "named-json": 'read_file: {"path": "a.py"}',
    "named-keywords": "read_file(path='a.py')",
    "named-backticks-dict": "`read_file`({'path': 'a.py'})",
}
NOT_TEXT_CALLS = {
    "not-offered": '{"name": "rm_rf", "arguments": {"path": "/"}}',
    "prose-before": f"Sure, here it is: {READ_A}",
    "prose-after": f"{READ_A}\nThat reads the file.",
    "prose-after-fence": f"```json\n{READ_A}\n```\nThis reads a.py.",
    "python-fence": f"```python\n{READ_A}\n```",
    "no-arguments": '{"name": "read_file"}',
    "both-argument-keys": '{"name": "read_file", "arguments": {}, "parameters": {}}',
    "arguments-not-an-object": '{"name": "read_file", "arguments": "a.py"}',
    "other-keys": '{"name": "read_file", "arguments": {}, "description": "x"}',
    "data-json": '{"compilerOptions": {"strict": true}}',
    "empty-list": "[]",
    "list-with-a-stranger": f'[{READ_A}, {{"name": "nope", "arguments": {{}}}}]',
    "markdown-link": "[read_file](docs/read_file.md) reads a file.",
    "mismatched-tags": f"<tool_call>{READ_A}[/tool_call]",
    "plain": "Hello there",
    "named-then-prose": "read_file {'path': 'a.py'} reads the file.",
    "named-with-code": "read_file(path=open('a.py').name)",
    "named-positional": "read_file('a.py')",
    "named-not-offered": "rm_rf(path='/')",
    "named-set": "read_file({'a.py'})",
    "named-alone": "read_file",
    "named-in-prose": "read_file reads a file.",
}


@pytest.mark.parametrize("text", list(TEXT_CALL_SHAPES.values()), ids=list(TEXT_CALL_SHAPES))
def test_parse_text_tool_calls_shapes(text: str) -> None:
    assert parse_text_tool_calls(text, OFFERED) == [
        MergedToolCall(id="", name="read_file", arguments='{"path": "a.py"}')
    ]


def test_parse_text_tool_calls_several() -> None:
    list_b = '{"name": "list_dir", "arguments": {"path": "b"}}'
    expected = [("read_file", {"path": "a.py"}), ("list_dir", {"path": "b"})]
    for text in (
        f"[{READ_A}, {list_b}]",
        f"```json\n[{READ_A},\n {list_b}]\n```",
        f"{READ_A}\n{list_b}",
        f"<tool_call>\n{READ_A}\n</tool_call>\n<tool_call>\n{list_b}\n</tool_call>",
        f"[tool_call]{READ_A}[/tool_call] [tool_call]{list_b}[/tool_call]",
    ):
        calls = parse_text_tool_calls(text, OFFERED)
        assert calls is not None, text
        assert [(c.name, json.loads(c.arguments)) for c in calls] == expected


def test_parse_text_tool_calls_takes_line_breaks_inside_strings_as_written() -> None:
    """The 1.5B model copies a file's lines into old_text with real line breaks (invalid
    JSON, strictly): the call is still the call it wrote."""
    text = '```json\n{"name": "read_file", "arguments": {"path": "a.py\n  b"}}\n```'
    [call] = parse_text_tool_calls(text, OFFERED) or []
    assert json.loads(call.arguments) == {"path": "a.py\n  b"}


@pytest.mark.parametrize("text", list(NOT_TEXT_CALLS.values()), ids=list(NOT_TEXT_CALLS))
def test_parse_text_tool_calls_rejects(text: str) -> None:
    assert parse_text_tool_calls(text, OFFERED) is None


def test_parse_text_tool_calls_only_offered_names() -> None:
    escalate = f'{{"name": "{ESCALATE_TOOL_NAME}", "arguments": {{"reason": "big"}}}}'
    assert parse_text_tool_calls(escalate, OFFERED) is not None
    assert parse_text_tool_calls(escalate, {"read_file"}) is None
    assert parse_text_tool_calls(READ_A, set()) is None


def gate_run(text: str, size: int) -> tuple[list[str], TextCallGate]:
    gate = TextCallGate(OFFERED)
    shown = [gate.feed(text[i : i + size]) for i in range(0, len(text), size)]
    return shown, gate


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 64])
def test_gate_holds_every_call_shape_whole(size: int) -> None:
    for text in [*TEXT_CALL_SHAPES.values(), f"[{READ_A}, {READ_A}]", f"{READ_A}\n{READ_A}"]:
        shown, gate = gate_run(text, size)
        assert not any(shown), (text, size)
        assert gate.holding
        assert gate.held == text


@pytest.mark.parametrize("size", [1, 3, 7])
def test_gate_releases_what_cannot_be_a_call_early(size: int) -> None:
    cases = {
        # text -> the characters it takes to tell (everything so far is shown then)
        "Hello there, a plain answer": 1,
        "  \n\tIndented plain text": 5,
        "```python\nprint('hi')\n```\n": 4,  # "```p" is no known info string
        "<b>bold</b> text": 2,
        '{"compilerOptions": {"strict": true, "target": "es2022"}}': 19,  # the first key
        '{"name": "rm_rf", "arguments": {"path": "/"}}': 16,  # the tool name
        f"{READ_A} and then some prose": len(READ_A) + 2,
        "[1] footnote style": 3,
    }
    for text, at_most in cases.items():
        shown, gate = gate_run(text, size)
        assert not gate.holding, text
        assert "".join(shown) == text
        first = next(i for i, piece in enumerate(shown) if piece)
        assert first == (at_most - 1) // size, (text, first)
        # after the release, every piece passes straight through
        assert all(shown[first + 1 :]), text


def test_gate_gives_up_on_long_text() -> None:
    text = '{"name": "read_file", "arguments": {"path": "' + "x" * 9000 + '"}}'
    shown, gate = gate_run(text, 100)
    assert not gate.holding
    assert "".join(shown) == text
    first = next(i for i, piece in enumerate(shown) if piece)
    assert (first + 1) * 100 == 8200  # the first piece past 8 KiB (8192)


def text_call_agent(server: FakeOpenAIServer, **overrides: Any) -> LocalAgent:
    return LocalAgent(settings_for(server, **overrides))


@pytest.mark.parametrize(
    "text", list(TEXT_CALL_SHAPES.values()), ids=[f"shape-{k}" for k in TEXT_CALL_SHAPES]
)
async def test_text_tool_call_is_run(
    server: FakeOpenAIServer, agent: LocalAgent, text: str
) -> None:
    server.enqueue({"text": text, "chunk_chars": 3}, {"text": "a.py holds x = 1"})
    tools = StandInTools()
    events = await collect(agent, tools)

    assert [(name, args) for _, name, args in tools.calls] == [("read_file", {"path": "a.py"})]
    assert tool_events(events) == [
        ("call", ("read_file", ToolStatus.RUNNING)),
        ("call", ("read_file", ToolStatus.COMPLETED)),
        ("result", False),
    ]
    # the JSON was never shown: the only text is the next reply's answer
    assert [e.text for e in events if isinstance(e, TextDelta)] == [
        "a.p",
        "y h",
        "old",
        "s x",
        " = ",
        "1",
    ]
    notices = [e for e in events if isinstance(e, NoticeEvent)]
    assert [n.severity for n in notices] == ["info"]
    assert "local.textToolCalls" in notices[0].message
    assert events[-1] == TurnDone()

    call_id = tools.calls[0][0]
    assert call_id.startswith("call_")
    assert [e.tool_call_id for e in events if isinstance(e, ToolResultEvent)] == [call_id]
    first, second = server.requests
    assert first["messages"] == MESSAGES
    assistant, tool = second["messages"][len(MESSAGES) :]
    assert assistant["role"] == "assistant"
    assert assistant["content"] == ""
    assert [c["id"] for c in assistant["tool_calls"]] == [call_id]
    assert assistant["tool_calls"][0]["function"]["name"] == "read_file"
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"path": "a.py"}
    assert tool == {
        "role": "tool",
        "tool_call_id": call_id,
        "content": 'read_file output for {"path": "a.py"}',
    }


async def test_text_tool_calls_over_several_rounds(
    server: FakeOpenAIServer, agent: LocalAgent
) -> None:
    list_b = '{"name": "list_dir", "arguments": {"path": "b"}}'
    server.enqueue(
        {"text": f"<tool_call>\n{READ_A}\n</tool_call>\n<tool_call>\n{list_b}\n</tool_call>"},
        {"text": f"```json\n{list_b}\n```", "chunk_chars": 1},
        {"text": "done"},
    )
    tools = StandInTools()
    events = await collect(agent, tools)
    assert [(name, args) for _, name, args in tools.calls] == [
        ("read_file", {"path": "a.py"}),
        ("list_dir", {"path": "b"}),
        ("list_dir", {"path": "b"}),
    ]
    assert len({tid for tid, _, _ in tools.calls}) == 3
    assert text_of(events) == "done"
    assert sum(isinstance(e, NoticeEvent) for e in events) == 1  # once per turn
    assert events[-1] == TurnDone()
    roles = [m["role"] for m in server.requests[2]["messages"][len(MESSAGES) :]]
    assert roles == ["assistant", "tool", "tool", "assistant", "tool"]


async def test_text_escalation_call(server: FakeOpenAIServer, agent: LocalAgent) -> None:
    server.enqueue(
        {
            "text": f'```json\n{{"name": "{ESCALATE_TOOL_NAME}", "arguments": {{"reason": "big"}}}}\n```'
        },
        {"text": "never sent"},
    )
    events = await collect(agent, StandInTools(), offer_escalation=True)
    assert not any(isinstance(e, TextDelta) for e in events)
    assert isinstance(events[-1], EscalationRequested)
    assert events[-1].reason == "big"
    assert events[-1].tool_call_id.startswith("call_")
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    "text",
    [
        NOT_TEXT_CALLS["data-json"],
        "```python\nconfig = {'name': 'reader', 'arguments': {}}\n```",
    ],
    ids=["data-json", "python-fence"],
)
async def test_text_that_is_not_a_call_stays_text(
    server: FakeOpenAIServer, agent: LocalAgent, text: str
) -> None:
    server.enqueue({"text": text, "chunk_chars": 3}, {"text": "never sent"})
    tools = StandInTools()
    events = await collect(agent, tools, offer_escalation=False)
    assert text_of(events) == text
    assert tools.calls == []
    assert tool_events(events) == []
    assert not any(isinstance(e, NoticeEvent) for e in events)
    assert events[-1] == TurnDone()
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("overrides", "tools"),
    [({"text_tool_calls": False}, StandInTools()), ({}, None)],
    ids=["setting-off", "no-tools-offered"],
)
async def test_text_calls_stay_text_when_off_or_nothing_offered(
    server: FakeOpenAIServer, overrides: dict[str, Any], tools: StandInTools | None
) -> None:
    text = f"```json\n{READ_A}\n```"
    server.enqueue({"text": text, "chunk_chars": 3}, {"text": "never sent"})
    local = text_call_agent(server, **overrides)
    try:
        events = await collect(local, tools)
    finally:
        await local.aclose()
    # exactly as before the fallback existed: every chunk shown as it came
    assert [e.text for e in events if isinstance(e, TextDelta)] == [
        text[i : i + 3] for i in range(0, len(text), 3)
    ]
    assert tool_events(events) == []
    # ...but a call left as text is a failure milk can see, never a quiet end_turn
    assert isinstance(events[-1], LocalGaveUp)
    assert events[-1].signal is LocalSignal.UNRUNNABLE_CALL
    assert len(server.requests) == 1
    assert LocalSettings().text_tool_calls is True


@pytest.mark.parametrize(
    "text",
    ["Plain words stream as they come, chunk by chunk.", "```python\nprint('streams too')\n```"],
    ids=["prose", "python-fence"],
)
async def test_text_still_streams_with_the_fallback_on(
    server: FakeOpenAIServer, agent: LocalAgent, text: str
) -> None:
    server.enqueue({"text": text, "chunk_chars": 4, "delay": 0.05})
    shown: list[str] = []
    while_streaming: list[int] = []
    async with aclosing(agent.run(list(MESSAGES), StandInTools(), offer_escalation=False)) as run:
        async for event in run:
            if isinstance(event, TextDelta):
                shown.append(event.text)
                if server.open_streams:
                    while_streaming.append(len(shown))
    assert "".join(shown) == text
    # every chunk is its own delta (the python fence is held for its first two chunks only)
    assert len(shown) >= len(text) // 4 - 1
    assert len(while_streaming) >= 5
    assert while_streaming[0] <= 1


async def test_structured_calls_win_over_text_that_looks_like_one(
    server: FakeOpenAIServer, agent: LocalAgent
) -> None:
    list_b = '{"name": "list_dir", "arguments": {"path": "b"}}'
    server.enqueue(
        {
            "text": f"```json\n{list_b}\n```",
            "tool_calls": [{"name": "read_file", "arguments": {"path": "a.py"}, "id": "s1"}],
        },
        {"text": "ok"},
    )
    tools = StandInTools()
    events = await collect(agent, tools)
    assert [(tid, name) for tid, name, _ in tools.calls] == [("s1", "read_file")]
    assert text_of(events) == f"```json\n{list_b}\n```\n\nok"
    assert not any(isinstance(e, NoticeEvent) for e in events)
    assistant = server.requests[1]["messages"][len(MESSAGES)]
    assert assistant["content"] == f"```json\n{list_b}\n```"


async def test_held_text_is_shown_when_the_stream_drops(
    server: FakeOpenAIServer, agent: LocalAgent
) -> None:
    server.enqueue({"text": READ_A, "chunk_chars": 3, "cut_after": 6})
    tools = StandInTools()
    events = await collect(agent, tools)
    assert failure(events).reason is FailureReason.LOCAL_FAILED
    assert text_of(events) == READ_A[:15]  # five content chunks after the role chunk
    assert tools.calls == []


async def test_long_text_call_is_shown_then_run(
    server: FakeOpenAIServer, agent: LocalAgent
) -> None:
    # 9,000 characters that do not repeat (a block repeated on and on is a runaway)
    path = "/".join(f"d{n}" for n in range(1800))
    text = '{"name": "read_file", "arguments": {"path": "' + path + '"}}'
    server.enqueue({"text": text, "chunk_chars": 500}, {"text": "done"})
    tools = StandInTools()
    events = await collect(agent, tools)
    assert text_of(events) == text + "\n\ndone"
    assert [name for _, name, _ in tools.calls] == ["read_file"]
    assert events[-1] == TurnDone()


async def test_the_listed_model_is_looked_up_once_and_again_after_a_failure(
    server: FakeOpenAIServer,
) -> None:
    server.enqueue({"text": "one"}, {"text": "two"}, {"status": 500}, {"text": "four"})
    local = LocalAgent(settings_for(server, model=None))

    def model_lookups() -> int:
        return sum(1 for r in server.records if r["path"].endswith("/models"))

    try:
        await collect(local)
        await collect(local)
        assert model_lookups() == 1, "not fetched on every turn"
        assert isinstance((await collect(local))[-1], TurnFailed)
        server.models = ["another-model"]
        await collect(local)
    finally:
        await local.aclose()
    assert model_lookups() == 2, "a failed turn refreshes the model"
    assert server.requests[-1]["model"] == "another-model"


# -- finish: the model's explicit end of its turn (issue 29) ----------------------------------


def finish(outcome: str, summary: str, text: str = "") -> dict[str, Any]:
    reply: dict[str, Any] = {
        "tool_calls": [{"name": "finish", "arguments": {"outcome": outcome, "summary": summary}}]
    }
    if text:
        reply["text"] = text
    return reply


async def test_finish_answered_ends_the_turn_with_the_text_before_it(
    server: FakeOpenAIServer, agent: LocalAgent
) -> None:
    server.enqueue(finish("answered", "said what a.py does", text="a.py prints hello."))
    events = await collect(agent, StandInTools())
    assert text_of(events) == "a.py prints hello."
    assert events[-1] == TurnDone()
    assert len(server.requests) == 1


async def test_finish_with_no_text_shows_its_summary_as_the_answer(
    server: FakeOpenAIServer, agent: LocalAgent
) -> None:
    server.enqueue(finish("answered", "a.py prints hello"))
    events = await collect(agent, StandInTools())
    assert text_of(events) == "a.py prints hello"
    assert events[-1] == TurnDone()


async def test_finish_changed_with_no_file_changed_is_edit_not_made(
    server: FakeOpenAIServer, agent: LocalAgent
) -> None:
    """Said in a call, not in words: no language's wording decides it."""
    server.enqueue(
        finish("changed", "inc gibt jetzt null zurück", text="Erledigt."),
        finish("changed", "inc gibt jetzt null zurück", text="Erledigt."),
    )
    tools = StandInTools()
    tools.names = frozenset({*tools.names, "edit_file"})
    events = await collect(agent, tools)
    ended = events[-1]
    assert isinstance(ended, LocalGaveUp), ended
    assert ended.signal is LocalSignal.EDIT_NOT_MADE
    assert len(server.requests) == 2, "one request to make the change, then the verdict"
    assert server.requests[1]["messages"][-1]["content"].startswith("milk: the user asked")


async def test_finish_cannot_escalates_where_claude_may_take_over(
    server: FakeOpenAIServer, agent: LocalAgent
) -> None:
    server.enqueue(finish("cannot", "needs a design decision across modules"))
    events = await collect(agent, StandInTools(), offer_escalation=True)
    assert isinstance(events[-1], EscalationRequested)
    assert events[-1].reason == "needs a design decision across modules"


async def test_finish_cannot_on_route_local_ends_saying_why(
    server: FakeOpenAIServer, agent: LocalAgent
) -> None:
    server.enqueue(finish("cannot", "no such function here"))
    events = await collect(agent, StandInTools())
    ended = events[-1]
    assert isinstance(ended, LocalGaveUp) and ended.signal is LocalSignal.NO_ANSWER
    assert "no such function here" in ended.detail


async def test_finish_beside_another_call_waits_for_its_result(
    server: FakeOpenAIServer, agent: LocalAgent
) -> None:
    server.enqueue(
        {
            "tool_calls": [
                {"name": "read_file", "arguments": {"path": "a.py"}},
                {"name": "finish", "arguments": {"outcome": "answered", "summary": "x"}},
            ]
        },
        {"text": "a.py prints hello."},
    )
    tools = StandInTools()
    events = await collect(agent, tools)
    assert [name for _, name, _ in tools.calls] == ["read_file"]
    assert text_of(events) == "a.py prints hello."
    assert events[-1] == TurnDone()


def test_a_written_call_with_code_s_own_backslashes_is_read_as_the_code() -> None:
    """crossenv's normalize-default: a regex copied into `old_text` with `\\$` and `\\w`
    as the code writes them (JSON knows no `\\$`); the call reads them as the code."""
    written = (
        '```json\n{"name": "edit_file", "arguments": {"path": "src/command.js", '
        '"old_text": "const re = /\\$(\\\\w+)|\\${(\\\\w+)}/g", "new_text": "x"}}\n```'
    )
    calls = parse_text_tool_calls(written, ["edit_file"])
    assert calls is not None
    assert json.loads(calls[0].arguments)["old_text"] == "const re = /\\$(\\w+)|\\${(\\w+)}/g"
    assert (
        parse_text_tool_calls('{"name": "edit_file", "arguments": {"a": "\\q"', ["edit_file"])
        is None
    )
