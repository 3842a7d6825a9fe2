"""End to end: the last protocol holes of issue 21, against the real server over stdio.

* A header block the body cannot be framed by (two `Content-Length` lines that disagree, only a
  `Content-Type`) is refused and skipped; the request after it still answers, once.
* `initialize` takes odd optional parts (ignored, each named in a `window/logMessage` warning)
  and a workspace folder no path can be made of (skipped with a warning); `milk/status` and a
  chat turn work after each.
* A `tool_result` output is at most 2,000 characters, the cut note included.
* A handed-off turn's text updates add up to `TurnResult.text` (the real Claude Code CLI on the
  Messages-API stand-in).
* When the editor goes away mid-turn the server exits within a second, without tracebacks.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import threading
import time
from typing import Any

import pytest

from tests.e2e import test_hostile_client as hostile
from tests.e2e.conftest import Env, Harness, request
from tests.e2e.test_hostile_client import (
    INVALID_REQUEST,
    PARSE_ERROR,
    RawServer,
    request_bytes,
)
from tests.fakes.anthropic_api import FakeAnthropicAPI
from tests.fakes.openai_server import FakeOpenAIServer

pytestmark = pytest.mark.e2e

raw_server = hostile.raw
"""The hostile-client tests' fixture: a `RawServer`, closed and checked afterwards."""

WARNING = 2  # LSP MessageType.Warning
TOOL_OUTPUT_WIRE_CHARS = 2000  # milk_lsp.engine.turn.TOOL_OUTPUT_WIRE_CHARS
EXIT_SECONDS = 1.0
EXIT_SLACK_SECONDS = 3.0
"""What the exit test allows on a loaded machine (the target is `EXIT_SECONDS`)."""


# ---- framing -----------------------------------------------------------------------------------


def test_header_blocks_that_cannot_frame_a_body_are_skipped_and_serving_goes_on(
    raw_server: RawServer,
) -> None:
    raw = raw_server
    raw.initialize()
    body = request_bytes("twice")
    # Two lengths that disagree, either way round: reading the larger one would swallow the
    # next request and wait for bytes that never come.
    for first, second in ((len(body), len(body) + 500), (len(body) + 500, len(body) - 10)):
        raw.write(b"Content-Length: %d\r\nContent-Length: %d\r\n\r\n" % (first, second) + body)
        raw.expect_error("twice", PARSE_ERROR, "2 different Content-Length headers")
        raw.assert_serving()
    # The same length twice is one length.
    raw.write(b"Content-Length: %d\r\nContent-Length: %d\r\n\r\n" % (len(body), len(body)) + body)
    assert "sessions" in raw.response("twice")["result"]
    # Only a Content-Type line, with a body, or with none and the next request right after it
    # (one write): the refusal never carries the next request's id, which answers once.
    content_type = b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n"
    raw.write(content_type + request_bytes("typed"))
    raw.expect_error("typed", INVALID_REQUEST, "no Content-Length")
    raw.assert_serving()
    after = request_bytes("after-type")
    raw.write(content_type + b"Content-Length: %d\r\n\r\n" % len(after) + after)
    raw.expect_error(None, INVALID_REQUEST, "no Content-Length")
    assert "sessions" in raw.response("after-type")["result"]
    raw.assert_serving()


# ---- initialize ----------------------------------------------------------------------------------


def log_warnings(raw: RawServer) -> list[str]:
    return [
        n["params"]["message"]
        for n in raw.notifications
        if n["method"] == "window/logMessage" and n["params"]["type"] == WARNING
    ]


@pytest.mark.parametrize(
    ("shape", "named"),
    [
        ({"capabilities": {"window": 5}}, "capabilities.window ignored"),
        (
            {"capabilities": {"experimental": {"milk": "yes"}}},
            "capabilities.experimental.milk ignored",
        ),
        ({"capabilities": {}, "workspaceFolders": "nope"}, "workspaceFolders ignored"),
        (
            {
                "capabilities": {},
                "workspaceFolders": [{"uri": "file:///tmp/x\ud800", "name": "odd"}],
            },
            "workspace folder workspaceFolders.0 (file:///tmp/x\\ud800) is skipped",
        ),
    ],
    ids=["window-5", "experimental-milk-yes", "folders-nope", "lone-surrogate-folder"],
)
def test_initialize_ignores_what_it_cannot_take_and_the_server_works(
    raw_server: RawServer, env: Env, openai: FakeOpenAIServer, shape: dict[str, Any], named: str
) -> None:
    raw = raw_server
    workspace = {"uri": env.workspace.as_uri(), "name": "workspace"}
    params: dict[str, Any] = {"processId": None, "initializationOptions": env.settings, **shape}
    if isinstance(params.get("workspaceFolders"), list):
        params["workspaceFolders"] = [*params["workspaceFolders"], workspace]
    elif "workspaceFolders" in params:
        params["rootUri"] = workspace["uri"]  # the folder when workspaceFolders is left out
    else:
        params["workspaceFolders"] = [workspace]
    answer = raw.call("initialize", params, msg_id="init")
    assert "result" in answer, answer
    assert answer["result"]["capabilities"]["experimental"]["milk"]["protocolVersion"] == 1
    assert [w for w in log_warnings(raw) if named in w], raw.notifications
    raw.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    status = raw.call("milk/status", {}, msg_id="status")
    assert status["result"]["local"]["reachable"] is True, status
    openai.enqueue({"text": "Hello from the local model."})
    chat = raw.call("milk/chat", {"text": "hi there", "route": "local"}, msg_id="chat")
    assert chat["result"]["stopReason"] == "end_turn", chat
    assert chat["result"]["text"] == "Hello from the local model."
    session = raw.call("milk/session/get", {"sessionId": chat["result"]["sessionId"]}, "get")
    assert session["result"]["session"]["workspaceFolder"] == env.workspace.as_uri()


# ---- tool output on the wire -------------------------------------------------------------------


def test_a_cut_tool_output_is_at_most_2000_characters_note_included(
    raw_server: RawServer, env: Env, openai: FakeOpenAIServer
) -> None:
    raw = raw_server
    big = "".join(f"line {n:05d} of the big file\n" for n in range(400))[:10_000]
    (env.workspace / "big.txt").write_text(big)
    pattern = "p" * (5 * 1024 * 1024)  # a 5 MB argument, which the tool's answer repeats
    openai.enqueue(
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "big.txt"}}]},
        {
            "tool_calls": [{"name": "search_text", "arguments": {"pattern": pattern}}],
            "chunk_chars": 64 * 1024,  # (the default 3 would be 1.7 million events)
        },
        {"text": "done"},
    )
    raw.initialize()
    answer = raw.call("milk/chat", {"text": "read big.txt", "route": "local"}, "chat")
    assert answer["result"]["stopReason"] == "end_turn", json.dumps(answer)[:3000]
    results = [
        n["params"]
        for n in raw.notifications
        if n["method"] == "milk/update" and n["params"]["kind"] == "tool_result"
    ]
    # The stored record keeps all of it; the wire has its start and how much was cut.
    got = raw.call("milk/session/get", {"sessionId": answer["result"]["sessionId"]}, "get")
    stored = [c["output"] for t in got["result"]["turns"] for c in t.get("toolCalls") or []]
    assert stored[0] == big and len(stored[1]) > len(pattern)
    assert len(results) == 2, results
    for result, whole in zip(results, stored, strict=True):
        output = result["output"]
        assert len(output) == TOOL_OUTPUT_WIRE_CHARS, len(output)
        kept, _, note = output.rpartition("\n… (cut: ")
        assert whole.startswith(kept)
        assert note == f"{len(whole) - len(kept)} more characters)\n"


# ---- the text of a handed-off turn ------------------------------------------------------------------


@pytest.mark.claude
async def test_the_text_updates_of_a_handed_off_turn_add_up_to_its_text(
    harness: Harness, claude_env: Env, api: FakeAnthropicAPI, openai: FakeOpenAIServer
) -> None:
    client = await harness.start()
    openai.enqueue(
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "hello.py"}}]},
        {
            "text": "I will look into it.",
            "tool_calls": [
                {"name": "escalate_to_claude", "arguments": {"reason": "needs the whole repo"}}
            ],
        },
    )
    api.enqueue({"text": "ACC-1 is fixed: greet now says hello."})
    result = await request(client, "milk/chat", {"text": "fix ACC-1"})
    assert result["stopReason"] == "end_turn", result
    assert result["agent"] == "claude" and result["escalated"]["by"] == "agent"
    assert result["text"] == "I will look into it.\n\nACC-1 is fixed: greet now says hello."
    texts = [u for u in client.turn_updates(result["turnId"]) if u["kind"] == "text"]
    assert "".join(u["delta"] for u in texts) == result["text"]
    breaks = [u for u in texts if u["delta"] == "\n\n"]
    assert [u["agent"] for u in breaks] == ["claude"]
    # The stored turn reads back as the user saw it.
    got = await request(client, "milk/session/get", {"sessionId": result["sessionId"]})
    answers = [t["text"] for t in got["turns"] if t["role"] == "assistant" and t["text"]]
    assert "\n\n".join(answers) == result["text"]


# ---- a quiet exit ----------------------------------------------------------------------------------


class StdioClient:
    """The real server with plain pipes, read in this thread only, so both pipes can be closed
    at any moment the way an editor that quits closes them."""

    def __init__(self, env: Env) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "milk_lsp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env.server_env(),
            cwd=env.root,
        )
        self.stderr = bytearray()
        self._stderr_reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._stderr_reader.start()
        self._buffer = bytearray()
        self.messages: list[dict[str, Any]] = []

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr += line

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        body = json.dumps(message).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def wait_for(self, predicate: Any, seconds: float = 15.0) -> dict[str, Any]:
        """The first message from now on that `predicate` accepts; server requests answered."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + seconds
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while True:
                message = self._take()
                if message is not None:
                    self.messages.append(message)
                    if "method" in message and "id" in message:
                        self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
                    if predicate(message):
                        return message
                    continue
                left = deadline - time.monotonic()
                assert left > 0, f"nothing matching arrived: {self.messages[-3:]}"
                if selector.select(left):
                    chunk = os.read(fd, 65536)
                    assert chunk, "the server closed its output: " + self.stderr.decode()
                    self._buffer += chunk

    def _take(self) -> dict[str, Any] | None:
        head, sep, rest = bytes(self._buffer).partition(b"\r\n\r\n")
        if not sep:
            return None
        fields = dict(line.split(":", 1) for line in head.decode().split("\r\n"))
        length = int(fields["Content-Length"])
        if len(rest) < length:
            return None
        del self._buffer[: len(head) + len(sep) + length]
        parsed: dict[str, Any] = json.loads(rest[:length])
        return parsed

    def call(self, method: str, params: Any, msg_id: str) -> dict[str, Any]:
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return self.wait_for(lambda m: m.get("id") == msg_id and "method" not in m)


@pytest.mark.parametrize("closed", ["stdin", "stdin-and-stdout"])
def test_the_server_exits_quietly_and_at_once_when_the_editor_goes_away(
    env: Env, openai: FakeOpenAIServer, closed: str
) -> None:
    openai.enqueue({"text": "Working on it ", "stall": 30, "stall_after": 2})
    client = StdioClient(env)
    uri = env.workspace.as_uri()
    init = {
        "processId": None,
        "capabilities": {"window": {"workDoneProgress": True}},
        "workspaceFolders": [{"uri": uri, "name": "workspace"}],
        "initializationOptions": env.settings,
    }
    assert "result" in client.call("initialize", init, "init")
    client.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    assert "result" in client.call("milk/status", {}, "status")
    client.send({"jsonrpc": "2.0", "id": "chat", "method": "milk/chat", "params": {"text": "hi"}})
    client.wait_for(lambda m: m.get("params", {}).get("kind") == "text")  # mid-turn now
    assert client.proc.stdin is not None and client.proc.stdout is not None
    started = time.monotonic()
    client.proc.stdin.close()
    if closed == "stdin-and-stdout":
        client.proc.stdout.close()  # the turn's last updates meet a broken pipe
    code = client.proc.wait(15)
    took = time.monotonic() - started
    client._stderr_reader.join(5)
    stderr = client.stderr.decode("utf-8", "replace")
    log = (env.root / "logs" / "milk-lsp.log").read_text()
    print(f"\nexit {took:.2f} s after {closed} closed (target {EXIT_SECONDS} s)")
    assert code == 0, stderr
    assert took < EXIT_SLACK_SECONDS, f"exit took {took:.2f} s"
    for words in ("Traceback", "BrokenPipe", "cannot send a message", "the client is gone"):
        assert words not in stderr, stderr
        assert words not in log, log
    assert openai.wait_for_disconnects(1, 5), "the turn's model stream stayed open"
