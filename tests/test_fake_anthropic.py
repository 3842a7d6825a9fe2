"""The Messages-API stand-in's conditional answers and measured usage, which the advisor
bench's cost comparison rests on (bench/real_tasks_advisor.py)."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from tests.fakes.anthropic_api import FakeAnthropicAPI

TOOLS = [{"name": "Read", "description": "read", "input_schema": {"type": "object"}}]


def _ask(api: FakeAnthropicAPI, messages: list[dict[str, Any]], system: str = "") -> dict[str, Any]:
    """One streamed conversation request; its text and final usage."""
    body = {"model": "m", "stream": True, "tools": TOOLS, "system": system, "messages": messages}
    request = urllib.request.Request(
        f"{api.base_url}/v1/messages",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        events = [
            json.loads(line[6:])
            for line in response.read().decode().splitlines()
            if line.startswith("data: ")
        ]
    text = "".join(e["delta"].get("text", "") for e in events if e["type"] == "content_block_delta")
    usage = next(e["usage"] for e in events if e["type"] == "message_delta")
    return {"text": text, "usage": usage}


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def test_a_when_entry_waits_for_its_request_then_answers_it_and_the_next() -> None:
    script = [
        {"when": "step 2", "then": [{"text": "two-a"}, {"text": "two-b"}]},
        {"text": "plan"},
        {"text": "other", "repeat": 10},
    ]
    with FakeAnthropicAPI(script) as api:
        assert _ask(api, [_user("make a plan")])["text"] == "plan"
        assert _ask(api, [_user("do step 1")])["text"] == "other"
        assert _ask(api, [_user("do step 2 now")])["text"] == "two-a"
        tool_result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x"}]}
        assert _ask(api, [_user("do step 2 now"), tool_result])["text"] == "two-b"
        assert _ask(api, [_user("do step 2 again")])["text"] == "other"


def test_of_several_when_entries_the_one_named_last_in_the_request_answers() -> None:
    script = [
        {"when": "step one", "then": [{"text": "did one"}]},
        {"when": "step two", "then": [{"text": "did two"}]},
        {"text": "other", "repeat": 10},
    ]
    with FakeAnthropicAPI(script) as api:
        said = "<context>step one was done</context> Now do step two"
        assert _ask(api, [_user(said)])["text"] == "did two"
        assert _ask(api, [_user("step one, please")])["text"] == "did one"


def test_measured_usage_counts_the_request_and_reads_a_shared_start_from_the_cache() -> None:
    system = "You are Claude Code. " * 400  # about 2,000 tokens
    with FakeAnthropicAPI([{"text": "a", "usage": "measured", "repeat": 3}]) as api:
        first = _ask(api, [_user("hello")], system)["usage"]
        longer = _ask(api, [_user("hello"), _user("x" * 4000)], system)["usage"]
        other = _ask(api, [_user("hi")], "short")["usage"]
    assert first["cache_read_input_tokens"] == 0 and first["input_tokens"] > 2000
    assert longer["cache_read_input_tokens"] >= 2000
    assert 1000 <= longer["input_tokens"] <= 1100  # only the new message is new input
    assert other["cache_read_input_tokens"] == 0 and other["input_tokens"] < 100
