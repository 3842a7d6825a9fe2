"""The real milk-lsp over LSP against a real llama.cpp server with a real model.

Plumbing only, never wording: the model's answer may change with the llama.cpp build, the
thread count or the CPU. See tests/real_model/README.md for cost and how to skip.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import Harness, MilkClient, request
from tests.real_model.conftest import LlamaServer

pytestmark = pytest.mark.real_model

TURN_SECONDS = 180.0
MILK_TOOLS = {"read_file", "list_directory", "search_text", "edit_file", "run_command"}


async def chat(client: MilkClient, params: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = await asyncio.wait_for(
        request(client, "milk/chat", params), TURN_SECONDS
    )
    return result


async def get_json(url: str) -> Any:
    async with httpx.AsyncClient(timeout=10) as http:
        response = await http.get(url)
        response.raise_for_status()
        return response.json()


def turn_updates(client: MilkClient, turn_id: str) -> list[dict[str, Any]]:
    updates = client.turn_updates(turn_id)
    assert [u["seq"] for u in updates] == list(range(1, len(updates) + 1))
    kinds = [u["kind"] for u in updates]
    assert kinds[0] == "turn_started" and kinds.count("turn_started") == 1, kinds
    assert kinds[-1] == "turn_ended" and kinds.count("turn_ended") == 1, kinds
    return updates


def with_strategy(harness: Harness, strategy: str) -> dict[str, Any]:
    """The harness's settings with `local.strategy` set (`auto` guides these small models)."""
    settings = dict(harness.env.settings)
    settings["local"] = {**settings["local"], "strategy": strategy}
    return settings


async def test_a_guided_turn_gets_a_reply_in_the_shape_from_the_real_model(
    smollm2_harness: Harness, smollm2_server: LlamaServer
) -> None:
    """`local.strategy` auto guides SmolLM2 (135M): llama.cpp constrains the reply to the JSON
    schema, so it parses, and the turn ends checked: done, or failed with the signal, never
    as if a wrong answer were right (plumbing only; what a model this small says is
    anyone's guess)."""
    client = await smollm2_harness.start()
    result = await chat(client, {"text": "What does greet in hello.py return?"})
    updates = turn_updates(client, result["turnId"])
    notices = [u["message"] for u in updates if u["kind"] == "notice"]
    assert any(m.startswith("milk guides this local turn: smollm2") for m in notices), notices
    assert not any("not a JSON object" in m or "not in the shape" in m for m in notices)
    reads = [u for u in updates if u["kind"] == "tool_call"]
    assert any(u["input"].get("path") == "hello.py" for u in reads), reads  # located
    if result["stopReason"] == "end_turn":
        deltas = [u["delta"] for u in updates if u["kind"] == "text"]
        assert "".join(deltas) == result["text"] and result["text"].strip()
    else:
        checked = ("ungrounded_answer", "no_answer", "edit_not_made", "failed_edit")
        assert result["error"]["data"]["signal"] in checked, result  # a check milk made
        assert not [u for u in updates if u["kind"] == "citations"]


async def test_llama_cpp_keeps_a_guided_edits_old_text_to_the_lines_shown(
    smollm2_server: LlamaServer,
) -> None:
    """The guided change's schema, as milk sends it, on the real llama.cpp: each edit names
    one of the files shown, and its old text is whole lines shown of that file, whatever
    the model would rather write (made to give edits here, so the reply has some)."""
    from milk_lsp.guided.shape import old_texts, parse_reply, response_format

    lines = {
        "hello.py": ("def greet():", "    return 'hello'"),
        "src/shout.js": ("function shout(text) {", "  return text.toUpperCase()", "}"),
    }
    shown = {path: old_texts([file_lines]) for path, file_lines in lines.items()}
    shape = response_format("change", list(shown), shown)
    schema = shape["json_schema"]["schema"]
    schema["properties"]["kind"] = {"type": "string", "enum": ["edits"]}
    schema["properties"]["answer"] = {"type": "string", "maxLength": 40}
    assert "citations" not in schema["properties"]  # a change cites nothing
    schema["properties"]["edits"]["minItems"] = 1
    code = "\n\n".join(
        f"--- {path}\n" + "\n".join(f"{n}| {line}" for n, line in enumerate(file_lines, 1))
        for path, file_lines in lines.items()
    )
    body = {
        "messages": [
            {"role": "system", "content": "Reply with edits as JSON: path, old_text, new_text."},
            {"role": "user", "content": f"{code}\n\nMake shout add three exclamation marks."},
        ],
        "max_tokens": 1200,
        "temperature": 0,
        "response_format": shape,
    }
    async with httpx.AsyncClient(timeout=TURN_SECONDS) as http:
        response = await http.post(f"{smollm2_server.base_url}/chat/completions", json=body)
    response.raise_for_status()
    reply = parse_reply(response.json()["choices"][0]["message"]["content"])
    assert reply.edits, reply
    for edit in reply.edits:
        assert edit.path in shown, edit
        assert edit.old_text in shown[edit.path], edit


async def test_status_reports_the_real_endpoint(
    smollm2_harness: Harness, smollm2_server: LlamaServer
) -> None:
    listed = await get_json(f"{smollm2_server.base_url}/models")
    assert smollm2_server.model in [m["id"] for m in listed["data"]]
    client = await smollm2_harness.start()
    status = await request(client, "milk/status", {})
    assert status["local"]["baseUrl"] == smollm2_server.base_url
    assert status["local"]["reachable"] is True, status
    assert status["local"].get("error") is None, status
    # local.model is unset, so this is the first model the endpoint lists
    assert status["local"]["model"] == smollm2_server.model


async def test_chat_turn_streams_from_the_real_model(
    smollm2_harness: Harness, smollm2_server: LlamaServer
) -> None:
    # SmolLM2's template has no tools (llama.cpp reports supports_tools: false and drops
    # them): milk still offers its tools and the turn must work without them.
    props = await get_json(f"{smollm2_server.root_url}/props")
    assert props["chat_template_caps"]["supports_tools"] is False

    client = await smollm2_harness.start(settings=with_strategy(smollm2_harness, "agent"))
    prompt = "Say hello in five words."
    result = await chat(client, {"text": prompt})
    assert result["stopReason"] == "end_turn", result
    assert result["agent"] == "local"
    assert result.get("error") is None, result

    updates = turn_updates(client, result["turnId"])
    deltas = [u["delta"] for u in updates if u["kind"] == "text"]
    assert len(deltas) >= 2, updates
    assert "".join(deltas) == result["text"]
    assert result["text"].strip(), "the model answered nothing"
    usage = [u for u in updates if u["kind"] == "usage"]
    assert usage, [
        (u["kind"], u.get("message") or u.get("delta")) for u in updates if u["kind"] != "text"
    ]
    # input tokens exclude the part llama.cpp reused from its prompt cache
    assert usage[-1]["inputTokens"] + (usage[-1].get("cacheReadTokens") or 0) > 0
    assert usage[-1]["outputTokens"] > 0
    assert not [u for u in updates if u["kind"] == "tool_call"]  # the template had no tools

    got = await request(client, "milk/session/get", {"sessionId": result["sessionId"]})
    assert [(t["role"], t["agent"], t["text"], t["status"]) for t in got["turns"]] == [
        ("user", "local", prompt, "ok"),
        ("assistant", "local", result["text"], "ok"),
    ]
    assert got["session"]["turnCount"] == 1

    # a second turn sends the stored history through the model's real chat template
    again = await chat(client, {"sessionId": result["sessionId"], "text": "Once more."})
    assert again["stopReason"] == "end_turn", again
    deltas = [u["delta"] for u in turn_updates(client, again["turnId"]) if u["kind"] == "text"]
    assert "".join(deltas) == again["text"]
    got = await request(client, "milk/session/get", {"sessionId": result["sessionId"]})
    assert [t["role"] for t in got["turns"]] == ["user", "assistant"] * 2
    assert got["session"]["turnCount"] == 2


async def test_qwen_coder_tool_call_reaches_the_local_agent(
    qwen_harness: Harness, qwen_coder_server: LlamaServer
) -> None:
    """Opt-in (MILK_REAL_MODEL_TOOLS=1): a structured tool call from a real model runs a tool.

    Qwen2.5-Coder calls the tool again after every result (it rarely answers), so the turn is
    capped at one tool round: it ends `end_turn` or with `tool_rounds_exceeded`.
    """
    settings = with_strategy(qwen_harness, "agent")
    settings["local"] = {**settings["local"], "maxToolRounds": 1}
    client = await qwen_harness.start(settings=settings)
    result = await chat(client, {"text": "Read the file hello.py."})
    updates = turn_updates(client, result["turnId"])
    # either it answers after the result, or it calls again and meets the one-round cap
    if result["stopReason"] != "end_turn":
        assert result["error"]["reason"] == "tool_rounds_exceeded", result
    calls = [u for u in updates if u["kind"] == "tool_call" and u["status"] == "completed"]
    assert calls, [u["kind"] for u in updates]
    assert {c["name"] for c in calls} <= MILK_TOOLS
    assert all(isinstance(c["input"], dict) and c["input"] for c in calls), calls
    results = {u["toolCallId"] for u in updates if u["kind"] == "tool_result"}
    assert {c["toolCallId"] for c in calls} == results
