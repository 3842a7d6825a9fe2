"""The scripted OpenAI-compatible fake itself: its CLI, control endpoints and raw shapes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

from milk_lsp.guided.ask import INTENT_PROBES
from tests.fakes.openai_server import FakeOpenAIServer

REPO = Path(__file__).resolve().parents[1]


def data_lines(text: str) -> list[Any]:
    out: list[Any] = []
    for line in text.splitlines():
        if line.startswith("data: "):
            payload = line[len("data: ") :]
            out.append(payload if payload == "[DONE]" else json.loads(payload))
    return out


def client() -> httpx.Client:
    # verify=False: plain http on loopback; skips loading the CA bundle (~0.1 s per client)
    return httpx.Client(timeout=5, verify=False)


def stream(base_url: str, **body: Any) -> list[Any]:
    request = {"model": "m", "messages": [], "stream": True, **body}
    with client() as http:
        response = http.post(f"{base_url}/chat/completions", json=request)
    assert response.headers["content-type"] == "text/event-stream"
    return data_lines(response.text)


def test_text_stream_has_the_llamacpp_shape() -> None:
    with FakeOpenAIServer([{"text": "abcdef", "chunk_chars": 4, "reasoning": "r"}]) as server:
        events = stream(server.base_url, stream_options={"include_usage": True})
    assert events[0]["choices"][0]["delta"] == {"role": "assistant", "content": None}
    assert events[1]["choices"][0]["delta"] == {"reasoning_content": "r"}
    assert [e["choices"][0]["delta"]["content"] for e in events[2:4]] == ["abcd", "ef"]
    assert events[4]["choices"][0]["finish_reason"] == "stop"
    assert events[5]["choices"] == []
    assert events[5]["usage"]["completion_tokens"] > 0
    assert events[6] == "[DONE]"


def test_usage_chunk_only_when_asked() -> None:
    with FakeOpenAIServer() as server:
        events = stream(server.base_url)
    assert not any(isinstance(e, dict) and "usage" in e for e in events)


def test_tool_call_styles_on_the_wire() -> None:
    call = {"name": "read_file", "arguments": {"path": "a.py"}, "id": "x1"}
    with FakeOpenAIServer() as server:
        server.enqueue(
            {"tool_calls": [call], "chunk_chars": 5},
            {"tool_calls": [call], "style": "ollama"},
            {"tool_calls": [call], "style": "repeat_names"},
        )
        llamacpp = stream(server.base_url)
        ollama = stream(server.base_url)
        repeat = stream(server.base_url)
    first = llamacpp[1]["choices"][0]["delta"]["tool_calls"][0]
    assert first == {
        "index": 0,
        "id": "x1",
        "type": "function",
        "function": {"name": "read_file", "arguments": "{"},
    }
    assert "id" not in llamacpp[2]["choices"][0]["delta"]["tool_calls"][0]
    assert llamacpp[-2]["choices"][0]["finish_reason"] == "tool_calls"
    whole = ollama[1]["choices"][0]
    assert whole["finish_reason"] == "stop"
    assert json.loads(whole["delta"]["tool_calls"][0]["function"]["arguments"]) == {"path": "a.py"}
    fragments = [
        e["choices"][0]["delta"]["tool_calls"][0]
        for e in repeat
        if isinstance(e, dict) and e["choices"] and e["choices"][0]["delta"].get("tool_calls")
    ]
    assert len(fragments) > 2
    assert all(f["function"]["name"] == "read_file" and f["id"] == "x1" for f in fragments)


def test_replay_is_verbatim() -> None:
    path = REPO / "tests/data/openai/llamacpp-b11549-smollm2-135m-text-stream.sse"
    script = [{"replay": "tests/data/openai/" + path.name}]
    with FakeOpenAIServer(script) as server, client() as http:
        response = http.post(f"{server.base_url}/chat/completions", json={"stream": True})
    assert response.text == path.read_text(encoding="utf-8")


def test_plain_completion_status_and_records() -> None:
    with FakeOpenAIServer(model="tiny") as server:
        server.enqueue({"status": 503, "body": "loading"}, {"text": "hello"})
        http = client()
        failed = http.post(f"{server.base_url}/chat/completions", json={"messages": []})
        plain = http.post(
            f"{server.base_url}/chat/completions",
            json={"messages": [], "stream": False},
            headers={"Authorization": "Bearer k"},
        )
        models = http.get(f"{server.base_url}/models").json()
        http.close()
        assert server.records[-2]["headers"]["authorization"] == "Bearer k"
        assert len(server.requests) == 2
    assert (failed.status_code, failed.text) == (503, "loading")
    body = plain.json()
    assert body["object"] == "chat.completion"
    assert body["choices"][0]["message"]["content"] == "hello"
    assert models == {
        "object": "list",
        "data": [{"id": "tiny", "object": "model", "owned_by": "fake"}],
    }


def test_cli_ready_line_and_control_endpoints(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "from file"}]))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.openai_server", "--script", str(script)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("READY http://127.0.0.1:")
        base_url = line.split()[1]
        assert base_url.endswith("/v1")
        root = base_url.removesuffix("/v1")
        with client() as http:
            first = http.post(f"{base_url}/chat/completions", json={"stream": False})
            assert first.json()["choices"][0]["message"]["content"] == "from file"
            scripted = http.post(f"{root}/_script", json=[{"text": "a"}, {"text": "b"}])
            assert scripted.json() == {"ok": True, "queued": 2}
            assert http.get(f"{root}/_state").json() == {
                "pending": 2,
                "disconnects": 0,
                "openStreams": 0,
            }
            http.post(f"{base_url}/chat/completions", json={"stream": False, "n": 1})
            recorded = http.get(f"{root}/_requests").json()
            assert recorded == [{"stream": False}, {"stream": False, "n": 1}]
            assert http.delete(f"{root}/_requests").json() == {"ok": True}
            assert http.get(f"{root}/_requests").json() == []
    finally:
        proc.terminate()
        proc.wait(timeout=5)
        if proc.stdout is not None:
            proc.stdout.close()


def test_an_unscripted_intent_request_is_answered_apart_from_the_script() -> None:
    intent = {"type": "json_schema", "json_schema": {"name": "milk_intent", "schema": {}}}

    def said(events: list[Any]) -> str:
        return "".join(
            e["choices"][0]["delta"].get("content") or ""
            for e in events
            if isinstance(e, dict) and e.get("choices")
        )

    with FakeOpenAIServer([{"text": "the loop's reply"}]) as server:
        first = said(stream(server.base_url, response_format=intent))
        second = said(stream(server.base_url))
        server.enqueue({"text": '{"intent": "change"}'})
        scripted = said(stream(server.base_url, response_format=intent))
        requests, every = server.requests, server.all_requests
    assert json.loads(first) == {"intent": "question"}  # the script's reply left for the loop
    assert second == "the loop's reply"
    assert json.loads(scripted) == {"intent": "change"}  # a scripted intent is the script's
    assert len(every) == 3 and every[0]["response_format"] == intent
    assert requests == every[1:]


def test_milk_s_probes_of_the_model_s_reading_are_answered_apart_from_the_script() -> None:
    intent = {"type": "json_schema", "json_schema": {"name": "milk_intent", "schema": {}}}
    with FakeOpenAIServer([{"text": '{"intent": "change"}'}]) as server:
        readings = []
        for reads in (True, False):
            server.reads_intent = reads
            for text, _ in INTENT_PROBES:
                messages = [{"role": "user", "content": text}]
                events = stream(server.base_url, response_format=intent, messages=messages)
                said = "".join(
                    e["choices"][0]["delta"].get("content") or ""
                    for e in events
                    if isinstance(e, dict) and e.get("choices")
                )
                readings.append(json.loads(said)["intent"])
        assert server.pending() == 1 and server.requests == []
    assert readings == [meant for _, meant in INTENT_PROBES] + ["change", "change"]
