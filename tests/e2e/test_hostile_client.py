"""End to end: a hostile (or broken) client writing raw bytes to the real server over stdio.

Every request with an id gets an answer with the right error code and that id, and the
server keeps serving: after each bad message, a good request still answers. One server
process serves a whole group of cases.
"""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import sys
import threading
import time
from typing import Any

import pytest

from tests.e2e.conftest import Env
from tests.fakes.openai_server import FakeOpenAIServer

pytestmark = pytest.mark.e2e

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
SERVER_NOT_INITIALIZED = -32002
REQUEST_FAILED = -32803
MAX_MESSAGE_BYTES = 64 * 1024 * 1024  # milk_lsp.jsonrpc.framing.MAX_MESSAGE_BYTES


def strict_json(body: bytes) -> Any:
    """Parse as strict JSON: NaN and Infinity are not JSON."""

    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    return json.loads(body.decode("utf-8"), parse_constant=refuse)


class RawServer:
    """`python -m milk_lsp` driven with hand-written bytes; reads its output strictly."""

    def __init__(self, env: Env) -> None:
        self.env = env
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "milk_lsp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env.server_env(),
            cwd=env.root,
        )
        self.inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.bodies: list[bytes] = []
        """Every body the server wrote, raw."""
        self.not_strict: list[bytes] = []
        """Bodies that were not strict JSON (there must be none)."""
        self.notifications: list[dict[str, Any]] = []
        self.stderr: list[bytes] = []
        self.sent = 0
        self.exit_sent = False
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    # ---- the server's output ---------------------------------------------------------------

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    self.inbox.put(None)
                    return
                if line == b"\r\n":
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            assert length is not None, "a header block without Content-Length"
            body = out.read(length)
            self.bodies.append(body)
            try:
                self.inbox.put(strict_json(body))
            except ValueError:
                self.not_strict.append(body)
                self.inbox.put(json.loads(body))

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line)

    def next_message(self, timeout: float) -> dict[str, Any]:
        message = self.inbox.get(timeout=timeout)
        assert message is not None, "the server closed its output: " + self.stderr_text()
        return message

    def response(self, msg_id: Any, timeout: float = 15.0) -> dict[str, Any]:
        """The response with `msg_id`; notifications are kept, server requests answered."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                message = self.next_message(max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no response with id {msg_id!r}") from None
            if "method" not in message and message.get("id") == msg_id:
                return message
            if "method" in message and "id" in message:
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            elif "method" in message:
                self.notifications.append(message)
            else:
                raise AssertionError(f"unexpected response {message} while waiting for {msg_id}")

    def stderr_text(self) -> str:
        return b"".join(self.stderr).decode("utf-8", "replace")[-3000:]

    # ---- writing -------------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()
        self.sent += 1

    def send_body(self, body: bytes) -> None:
        self.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def send(self, message: Any) -> None:
        self.exit_sent = self.exit_sent or message.get("method") == "exit"
        self.send_body(json.dumps(message).encode())

    def call(self, method: str, params: Any = None, msg_id: Any = "call") -> dict[str, Any]:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self.response(msg_id)

    def initialize(self, settings: dict[str, Any] | None = None) -> dict[str, Any]:
        uri = self.env.workspace.as_uri()
        answer = self.call(
            "initialize",
            {
                "processId": None,
                "capabilities": {},
                "rootUri": uri,
                "workspaceFolders": [{"uri": uri, "name": "workspace"}],
                "initializationOptions": self.env.settings if settings is None else settings,
            },
            msg_id="init",
        )
        assert "result" in answer, answer
        self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        return answer

    # ---- checks --------------------------------------------------------------------------

    def expect_error(self, msg_id: Any, code: int, *words: str) -> dict[str, Any]:
        answer = self.response(msg_id)
        assert "error" in answer, answer
        assert answer["error"]["code"] == code, answer
        for word in words:
            assert word in answer["error"]["message"], answer
        return answer["error"]

    def assert_serving(self) -> None:
        """A good request still answers, and the process is alive."""
        answer = self.call("milk/session/list", {}, msg_id=f"alive-{self.sent}")
        assert "sessions" in answer.get("result", {}), answer
        assert self.proc.poll() is None

    def close(self) -> int:
        with contextlib.suppress(Exception):
            self.call("shutdown", msg_id="shutdown")
            self.send({"jsonrpc": "2.0", "method": "exit"})
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        try:
            return self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
            raise AssertionError("the server did not exit after exit") from None


@pytest.fixture
def raw(env: Env) -> Any:
    server = RawServer(env)
    yield server
    assert server.not_strict == []
    if server.proc.poll() is None:
        code = server.close()
        assert code == 0, server.stderr_text()
    elif not server.exit_sent or server.proc.returncode != 0:
        pytest.fail(f"the server died ({server.proc.returncode}): {server.stderr_text()}")


def request_bytes(msg_id: Any, method: str = "milk/session/list", params: Any = None) -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params or {}}
    ).encode()


# ---- framing ---------------------------------------------------------------------------------


def test_absurd_and_oversized_lengths_are_refused_and_the_server_keeps_serving(
    raw: RawServer,
) -> None:
    raw.initialize()
    # A header claiming 10^12 bytes (pygls: MemoryError), then 10^23 (OverflowError); the
    # body that follows is short, and the next message comes right after it.
    for msg_id, length in (("tera", b"1000000000000"), ("huge", b"99999999999999999999999")):
        raw.write(b"Content-Length: " + length + b"\r\n\r\n" + request_bytes(msg_id))
        error = raw.expect_error(msg_id, INVALID_REQUEST, "too large", length.decode())
        assert str(MAX_MESSAGE_BYTES) in error["message"]
        raw.assert_serving()
    # A real message one byte over the limit: its id (sent first) is answered, its body skipped.
    head = b'{"jsonrpc":"2.0","id":"over","method":"milk/session/new","params":{"title":"'
    body = head + b"x" * (MAX_MESSAGE_BYTES + 1 - len(head) - 3) + b'"}}'
    assert len(body) == MAX_MESSAGE_BYTES + 1
    raw.send_body(body)
    raw.expect_error("over", INVALID_REQUEST, "too large")
    raw.assert_serving()
    # Bytes outside any message, and a header block without Content-Length.
    # (stray bytes are reported when the next message shows where they end)
    raw.write(b"hello, this is not a message\r\n")
    raw.send_body(request_bytes("after-junk"))
    raw.expect_error(None, INVALID_REQUEST, "outside any message")
    assert "result" in raw.response("after-junk")
    raw.write(b"Content-Type: application/json\r\n\r\n" + request_bytes("nolength"))
    raw.expect_error("nolength", INVALID_REQUEST, "no Content-Length")
    raw.assert_serving()
    raw.write(b"Content-Length: twelve\r\n\r\n" + request_bytes("nan-length"))
    raw.expect_error("nan-length", INVALID_REQUEST, "not a number")
    raw.assert_serving()
    # A lowercase header and bare \n line ends are taken as they are.
    body = request_bytes("lower")
    raw.write(b"content-length: %d\n\n" % len(body) + body)
    assert "result" in raw.response("lower")
    print(f"\nserver alive after {raw.sent} messages, 8 of them hostile framing")


# ---- envelopes ---------------------------------------------------------------------------------


def test_malformed_messages_get_an_answer_with_their_id(raw: RawServer) -> None:
    raw.initialize()
    cases: list[tuple[str, bytes, int, str]] = [
        (
            "no-params",
            b'{"jsonrpc":"2.0","id":"no-params","method":"milk/session/list"}',
            0,
            "",
        ),
        (
            "jsonrpc-member",
            b'{"jsonrpc":"2.0","id":"jsonrpc-member","method":"milk/session/list",'
            b'"params":{"jsonrpc":"2.0"}}',
            0,
            "",
        ),
        (
            "nested-message",
            b'{"jsonrpc":"2.0","id":"nested-message","method":"milk/session/list",'
            b'"params":{"x":{"jsonrpc":"2.0","id":1,"method":"exit"}}}',
            0,
            "",
        ),
        (
            "deep",
            b'{"jsonrpc":"2.0","id":"deep","method":"milk/session/list","params":{"a":'
            + b"[" * 5000
            + b"]" * 5000
            + b"}}",
            INVALID_REQUEST,
            "nested deeper",
        ),
        (
            "deep-id-last",
            b'{"jsonrpc":"2.0","method":"milk/session/list","params":{"a":'
            + b"[" * 5000
            + b"]" * 5000
            + b'},"id":"deep-id-last"}',
            INVALID_REQUEST,
            "nested deeper",
        ),
        (
            "utf8",
            b'{"jsonrpc":"2.0","id":"utf8","method":"milk/session/new","params":{"title":"\xff\xfe"}}',
            PARSE_ERROR,
            "UTF-8",
        ),
        (
            "json",
            b'{"jsonrpc":"2.0","id":"json","method":"milk/session/list","params":{oops}}',
            PARSE_ERROR,
            "not valid JSON",
        ),
        (
            "nan-in",
            b'{"jsonrpc":"2.0","id":"nan-in","method":"milk/session/list","params":{"x":NaN}}',
            PARSE_ERROR,
            "NaN",
        ),
        (
            "old-jsonrpc",
            b'{"jsonrpc":"1.0","id":"old-jsonrpc","method":"milk/session/list"}',
            INVALID_REQUEST,
            "jsonrpc",
        ),
        (
            "method-number",
            b'{"jsonrpc":"2.0","id":"method-number","method":5}',
            INVALID_REQUEST,
            "method",
        ),
        (
            "params-string",
            b'{"jsonrpc":"2.0","id":"params-string","method":"milk/session/list","params":"x"}',
            INVALID_REQUEST,
            "params",
        ),
        ("no-method", b'{"jsonrpc":"2.0","id":"no-method"}', INVALID_REQUEST, "no method"),
        (
            "unknown-method",
            b'{"jsonrpc":"2.0","id":"unknown-method","method":"milk/nope","params":{}}',
            -32601,
            "",
        ),
    ]
    for msg_id, body, code, words in cases:
        raw.send_body(body)
        if code:
            raw.expect_error(msg_id, code, words)
        else:
            answer = raw.response(msg_id)
            assert "sessions" in answer["result"], (msg_id, answer)
        raw.assert_serving()
    # Without a readable id, the answer carries `"id": null` (JSON-RPC's rule).
    for body, code in (
        (b"[1, 2]", INVALID_REQUEST),
        (b'"just a string"', INVALID_REQUEST),
        (b"", PARSE_ERROR),
        (b'{"jsonrpc":"2.0","id":1.5,"method":"milk/session/list"}', INVALID_REQUEST),
        (b"\xff\xfe\x00garbage", PARSE_ERROR),
    ):
        raw.send_body(body)
        raw.expect_error(None, code)
        raw.assert_serving()
    # A notification is never answered, even a malformed one; a response is never answered.
    raw.send_body(b'{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":{"x":[]}}}')
    raw.send_body(b'{"jsonrpc":"2.0","method":"milk/nothing","params":[1]}')
    raw.send_body(b'{"jsonrpc":"2.0","id":"never-asked","result":{"jsonrpc":"2.0"}}')
    raw.send_body(b'{"jsonrpc":"2.0","id":"never-asked-2","error":"bad"}')
    raw.assert_serving()  # and the first answer after them is this one
    print(f"\nserver alive after {raw.sent} messages, {len(cases) + 9} of them malformed")


def test_requests_before_initialize_and_malformed_initialize(raw: RawServer) -> None:
    raw.send({"jsonrpc": "2.0", "id": "early", "method": "milk/status", "params": {}})
    raw.expect_error("early", SERVER_NOT_INITIALIZED)
    raw.send({"jsonrpc": "2.0", "id": "early-list", "method": "milk/session/list"})
    raw.expect_error("early-list", SERVER_NOT_INITIALIZED)
    # Only params that are missing or not an object are refused (since issue 21, invalid
    # optional parts are ignored: tests/e2e/test_hardening.py).
    bad_inits: list[tuple[Any, str]] = [
        (None, "params: required"),
        ([], "params: must be an object"),
    ]
    for n, (params, field) in enumerate(bad_inits):
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": n, "method": "initialize"}
        if params is not None:
            message["params"] = params
        raw.send(message)
        raw.expect_error(n, INVALID_PARAMS, field)
    raw.send({"jsonrpc": "2.0", "id": "init-null", "method": "initialize", "params": None})
    raw.expect_error("init-null", INVALID_PARAMS, "params: required")
    # Still not initialized; then a good initialize works and so does everything after it.
    raw.send({"jsonrpc": "2.0", "id": "still-early", "method": "milk/session/list"})
    raw.expect_error("still-early", SERVER_NOT_INITIALIZED)
    answer = raw.initialize()
    assert answer["result"]["capabilities"]["experimental"]["milk"]["protocolVersion"] == 1
    raw.assert_serving()
    # After shutdown, requests are refused (-32600), and exit still ends the process with 0.
    raw.call("shutdown", msg_id="bye")
    raw.send({"jsonrpc": "2.0", "id": "late", "method": "milk/session/list", "params": {}})
    raw.expect_error("late", INVALID_REQUEST, "shutting down")
    raw.send({"jsonrpc": "2.0", "method": "exit"})
    assert raw.proc.wait(15) == 0


# ---- params the wire models bound ---------------------------------------------------------------


def test_out_of_range_params_answer_invalid_params_naming_the_field(
    raw: RawServer, env: Env
) -> None:
    raw.initialize()
    folder = env.workspace.as_uri()
    created = raw.call("milk/session/new", {"workspaceFolder": folder, "title": "t"}, "new")
    session_id = created["result"]["sessionId"]
    cases: list[tuple[str, dict[str, Any], str]] = [
        ("milk/session/get", {"sessionId": session_id, "limit": 10**20}, "limit"),
        ("milk/session/new", {"workspaceFolder": "file:///" + "a" * 6000}, "workspaceFolder"),
        ("milk/session/list", {"workspaceFolder": "file:///" + "a" * 6000}, "workspaceFolder"),
        ("milk/session/new", {"workspaceFolder": folder, "title": "x\ud800y"}, "title"),
        ("milk/session/get", {"sessionId": "\udc00"}, "sessionId"),
        ("milk/session/new", {"workspaceFolder": folder + "/\ud83d"}, "workspaceFolder"),
        ("milk/session/new", {"workspaceFolder": folder, "title": "a\x00b"}, "title"),
        ("milk/session/delete", {"sessionId": "s" * 300}, "sessionId"),
        ("milk/chat", {"text": "hi", "context": [{"uri": "file:///x\x00"}]}, "context.0.uri"),
        ("milk/chat", {"text": "bad \udfff"}, "text"),
    ]
    for n, (method, params, field) in enumerate(cases):
        raw.send({"jsonrpc": "2.0", "id": n, "method": method, "params": params})
        raw.expect_error(n, INVALID_PARAMS, f"{field}:")
        raw.assert_serving()
    # A path component too long for the file system is no folder (not an internal error).
    answer = raw.call("milk/session/new", {"workspaceFolder": "file:///tmp/" + "a" * 300}, "long")
    assert answer["error"]["code"] == REQUEST_FAILED, answer
    assert answer["error"]["data"]["reason"] == "workspace_unknown"
    # A valid surrogate pair (an emoji) is fine.
    answer = raw.call("milk/session/new", {"workspaceFolder": folder, "title": "ok 😀"}, "emoji")
    assert answer["result"]["title"] == "ok 😀"
    raw.assert_serving()


def test_a_storage_dir_with_a_nul_is_one_reported_setting_problem(raw: RawServer, env: Env) -> None:
    raw.initialize({**env.settings, "storageDir": str(env.root / "st\x00orage")})
    for n in range(3):  # storage works (the previous value, the default dir under the test's
        # XDG_DATA_HOME), it does not fail every request with -32603
        assert "result" in raw.call("milk/session/list", {}, f"list-{n}")
    created = raw.call("milk/session/new", {"workspaceFolder": env.workspace.as_uri()}, "new")
    assert "result" in created, created
    assert (env.root / "data" / "milk" / "sessions.sqlite3").is_file()
    shown = [
        n["params"]["message"]
        for n in raw.notifications
        if n["method"] == "window/showMessage" and "storageDir" in n["params"]["message"]
    ]
    assert len(shown) == 1, raw.notifications
    assert "NUL" in shown[0]


# ---- strict JSON out -------------------------------------------------------------------------------


def test_a_nan_tool_argument_from_the_model_is_sent_as_strict_json(
    raw: RawServer, openai: FakeOpenAIServer
) -> None:
    openai.enqueue(
        {"tool_calls": [{"name": "read_file", "arguments": '{"path": NaN}'}]},
        {"text": "done"},
    )
    raw.initialize()
    answer = raw.call("milk/chat", {"text": "read it", "route": "local"}, "chat")
    assert answer["result"]["stopReason"] == "end_turn", answer
    updates = [n["params"] for n in raw.notifications if n["method"] == "milk/update"]
    calls = [u for u in updates if u["kind"] == "tool_call"]
    assert calls and calls[0]["input"] == {"path": None}, updates
    assert updates[-1]["kind"] == "turn_ended"
    # Every body the server wrote parsed as strict JSON.
    assert raw.not_strict == []
    # The stored turn (read back from SQLite, where Python's json kept the NaN) is strict too.
    got = raw.call("milk/session/get", {"sessionId": answer["result"]["sessionId"]}, "get")
    stored = [c for t in got["result"]["turns"] for c in t.get("toolCalls") or []]
    assert stored and stored[0]["input"] == {"path": None}, got
