"""The hardened reading and writing of messages: framing, envelopes, strict JSON, dispatch.

`FrameReader` reads real byte streams (BytesIO, and an OS pipe fed by a thread for a 64 MiB
skip); `MilkProtocol` runs inside a real pygls LanguageServer whose writer is a buffer.
"""

from __future__ import annotations

import asyncio
import io
import json
import math
import os
import threading
import time
from typing import Any

import pytest
from lsprotocol import types
from lsprotocol.converters import get_converter
from pygls.lsp.server import LanguageServer

from milk_lsp import wire
from milk_lsp.config import MilkConfig, merge_settings
from milk_lsp.jsonrpc import messages as jsonrpc
from milk_lsp.jsonrpc.framing import (
    MAX_HEADER_LINE_BYTES,
    MAX_MESSAGE_BYTES,
    PREFIX_BYTES,
    Frame,
    FrameReader,
    Rejected,
)
from milk_lsp.lsp.protocol import MilkProtocol


def framed(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def read_all(data: bytes, **kwargs: Any) -> list[Frame | Rejected]:
    reader = FrameReader(io.BytesIO(data), **kwargs)
    frames: list[Frame | Rejected] = []
    while (frame := reader.next()) is not None:
        frames.append(frame)
    return frames


REQUEST = b'{"jsonrpc":"2.0","id":7,"method":"milk/status","params":{}}'


# ---- framing ---------------------------------------------------------------------------------


def test_frames_are_read_with_any_header_spelling_and_line_end() -> None:
    data = (
        framed(b"{}")
        + b"\r\n"  # a stray blank line between messages
        + b"content-length: 2\nContent-Type: application/vscode-jsonrpc; charset=utf-8\n\n[]"
        + b"Content-Length:3\r\n\r\n123"
    )
    assert read_all(data) == [Frame(b"{}"), Frame(b"[]"), Frame(b"123")]


@pytest.mark.parametrize(
    ("length", "words"),
    [
        (b"1000000000000", "too large"),
        (b"99999999999999999999999", "too large"),
        (b"9" * 5000, "5000 digits"),  # more digits than int() takes
        (b"%d" % (MAX_MESSAGE_BYTES + 1), "too large"),
        (b"12abc", "not a number"),
        (b"-5", "not a number"),
    ],
)
def test_a_refused_length_keeps_the_prefix_and_the_next_message_is_found(
    length: bytes, words: str
) -> None:
    data = b"Content-Length: " + length + b"\r\n\r\n" + REQUEST + framed(b'{"next":1}')
    rejected, after = read_all(data)
    assert isinstance(rejected, Rejected) and words in rejected.reason
    assert rejected.prefix.startswith(REQUEST)
    assert jsonrpc.invalid_from_prefix(rejected.prefix, rejected.reason).id == 7
    assert after == Frame(b'{"next":1}')


def test_an_honest_oversized_message_is_skipped_whole() -> None:
    body = b'{"id":"big","x":"' + b"y" * 3000 + b'"}'
    data = framed(body) + framed(b"{}")
    rejected, after = read_all(data, max_body=1000)
    assert isinstance(rejected, Rejected)
    assert jsonrpc.invalid_from_prefix(rejected.prefix, rejected.reason).id == "big"
    assert after == Frame(b"{}")


def test_stray_bytes_are_reported_once_with_their_start() -> None:
    junk = b'{"jsonrpc":"2.0","id":3,"method":"x"}'  # a body sent without any header
    data = junk + b"\r\nmore junk\r\n" + framed(b"{}")
    rejected, after = read_all(data)
    assert isinstance(rejected, Rejected) and "outside any message" in rejected.reason
    assert rejected.prefix.startswith(junk)
    assert after == Frame(b"{}")
    # at the end of the stream too
    assert read_all(framed(b"{}") + b"trailing") == [
        Frame(b"{}"),
        Rejected("8 bytes arrived outside any message (no Content-Length)", b"trailing"),
    ]


def test_a_header_block_without_length_is_refused_and_its_body_skipped() -> None:
    data = b"Content-Type: x\r\n\r\n" + REQUEST + framed(b"{}")
    rejected, after = read_all(data)
    assert isinstance(rejected, Rejected) and "no Content-Length" in rejected.reason
    assert after == Frame(b"{}")


def test_a_header_block_without_a_body_never_takes_the_next_requests_id() -> None:
    # Only a Content-Type line, and the next request right after it: the refusal is the
    # header block's (no id), and the request is read as it is (issue 21).
    rejected, after = read_all(
        b"Content-Type: application/vscode-jsonrpc\r\n\r\n" + framed(REQUEST)
    )
    assert isinstance(rejected, Rejected) and "no Content-Length" in rejected.reason
    assert rejected.prefix == b""
    assert jsonrpc.invalid_from_prefix(rejected.prefix, rejected.reason).id is None
    assert after == Frame(REQUEST)


def test_two_different_lengths_are_refused_as_a_parse_error_and_the_next_message_is_read() -> None:
    for first, second in ((len(REQUEST), len(REQUEST) + 500), (len(REQUEST) + 500, 3)):
        data = b"Content-Length: %d\r\nContent-Length: %d\r\n\r\n" % (first, second)
        rejected, after = read_all(data + REQUEST + framed(b'{"next":1}'))
        assert isinstance(rejected, Rejected), (first, second)
        assert "2 different Content-Length headers" in rejected.reason
        assert rejected.code == jsonrpc.PARSE_ERROR
        invalid = jsonrpc.invalid_from_prefix(rejected.prefix, rejected.reason, rejected.code)
        assert (invalid.id, invalid.code) == (7, jsonrpc.PARSE_ERROR)
        assert after == Frame(b'{"next":1}')
    # The same length twice is one length.
    twice = b"Content-Length: %d\r\ncontent-length: %d\r\n\r\n" % (len(REQUEST), len(REQUEST))
    assert read_all(twice + REQUEST + framed(b"{}")) == [Frame(REQUEST), Frame(b"{}")]


def test_a_body_longer_than_its_length_resynchronises_on_the_next_header() -> None:
    data = b"Content-Length: 2\r\n\r\n{}EXTRA BYTES" + framed(b"[1]")
    first, junk, after = read_all(data)
    assert first == Frame(b"{}")
    assert isinstance(junk, Rejected) and junk.prefix == b"EXTRA BYTES"
    assert after == Frame(b"[1]")


def test_an_over_long_line_is_skipped_in_pieces_and_a_header_across_pieces_is_found() -> None:
    for offset in range(-20, 20, 3):  # the header straddles the piece boundary somewhere
        junk = b"z" * (MAX_HEADER_LINE_BYTES - 256 + offset)
        rejected, after = read_all(junk + framed(b"{}"))
        assert isinstance(rejected, Rejected), offset
        assert len(rejected.prefix) == min(len(junk), PREFIX_BYTES)
        assert after == Frame(b"{}"), offset


def test_the_end_of_the_stream_inside_a_message_ends_reading() -> None:
    assert read_all(b"Content-Length: 10\r\n\r\n{}") == []
    assert read_all(b"Content-Length: 10\r\n") == []
    assert read_all(b"") == []


def test_skipping_64_mib_through_a_pipe_is_quick_and_the_next_message_is_read() -> None:
    size = MAX_MESSAGE_BYTES + 1
    read_fd, write_fd = os.pipe()
    head = b'{"jsonrpc":"2.0","id":"over","method":"x","params":{"t":"'
    body = head + b"x" * (size - len(head) - 3) + b'"}}'

    def feed() -> None:
        with os.fdopen(write_fd, "wb") as out:
            out.write(framed(body) + framed(REQUEST))

    threading.Thread(target=feed, daemon=True).start()
    with os.fdopen(read_fd, "rb") as stream:
        reader = FrameReader(stream)
        started = time.perf_counter()
        rejected = reader.next()
        after = reader.next()
        took = time.perf_counter() - started
    assert isinstance(rejected, Rejected)
    assert jsonrpc.invalid_from_prefix(rejected.prefix, rejected.reason).id == "over"
    assert after == Frame(REQUEST)
    print(f"\nskipped a {size} byte message in {took:.2f} s")
    assert took < 30


# ---- envelopes ---------------------------------------------------------------------------------


def parse(body: str | bytes) -> jsonrpc.Message:
    return jsonrpc.parse_message(body.encode() if isinstance(body, str) else body)


def test_the_kind_is_decided_by_top_level_keys_only() -> None:
    assert parse('{"jsonrpc":"2.0","id":1,"method":"m"}') == jsonrpc.Request(1, "m", None)
    nested = '{"jsonrpc":"2.0","id":"a","method":"m","params":{"jsonrpc":"2.0","id":2,"result":3}}'
    assert parse(nested) == jsonrpc.Request("a", "m", {"jsonrpc": "2.0", "id": 2, "result": 3})
    assert parse('{"jsonrpc":"2.0","method":"n","params":[1]}') == jsonrpc.Notification("n", [1])
    assert parse('{"jsonrpc":"2.0","id":5,"result":null}') == jsonrpc.Response(5, None, None)
    error = {"code": 1, "message": "m"}
    assert parse(json.dumps({"jsonrpc": "2.0", "id": 5, "error": error})) == jsonrpc.Response(
        5, None, error
    )


@pytest.mark.parametrize(
    ("body", "code", "msg_id", "kind"),
    [
        ("[]", jsonrpc.INVALID_REQUEST, None, "unknown"),
        ("3", jsonrpc.INVALID_REQUEST, None, "unknown"),
        ('{"jsonrpc":"2.0","id":true,"method":"m"}', jsonrpc.INVALID_REQUEST, None, "request"),
        ('{"jsonrpc":"2.0","id":null,"method":"m"}', jsonrpc.INVALID_REQUEST, None, "request"),
        ('{"id":1,"method":"m"}', jsonrpc.INVALID_REQUEST, 1, "request"),
        ('{"jsonrpc":"2.0","id":1,"method":[]}', jsonrpc.INVALID_REQUEST, 1, "request"),
        ('{"jsonrpc":"2.0","id":1,"method":"m","params":5}', jsonrpc.INVALID_REQUEST, 1, "request"),
        (
            '{"jsonrpc":"2.0","method":"m","params":"x"}',
            jsonrpc.INVALID_REQUEST,
            None,
            "notification",
        ),
        ('{"jsonrpc":"2.0","id":1}', jsonrpc.INVALID_REQUEST, 1, "request"),
        ('{"jsonrpc":"2.0"}', jsonrpc.INVALID_REQUEST, None, "unknown"),
        ('{"jsonrpc":"2.0","id":1,"result":1,"error":{}}', jsonrpc.INVALID_REQUEST, 1, "response"),
        ('{"jsonrpc":"2.0","id":1,"error":{"code":"x"}}', jsonrpc.INVALID_REQUEST, 1, "response"),
        ('{"jsonrpc":"2.0","result":1}', jsonrpc.INVALID_REQUEST, None, "response"),
        ('{"jsonrpc":"2.0","id":9,"method":"m","params":{', jsonrpc.PARSE_ERROR, 9, "request"),
        ('{"jsonrpc":"2.0","id":9,"method":"m","params":[NaN]}', jsonrpc.PARSE_ERROR, 9, "request"),
        ('{"jsonrpc":"2.0","id":9,"result":Infinity}', jsonrpc.PARSE_ERROR, 9, "response"),
        (
            '{"jsonrpc":"2.0","id":9,"method":"m","params":[' + "1" * 5000 + "]}",
            jsonrpc.PARSE_ERROR,
            9,
            "request",
        ),
        ("", jsonrpc.PARSE_ERROR, None, "unknown"),
    ],
)
def test_invalid_messages_keep_their_id_and_kind(
    body: str, code: int, msg_id: Any, kind: str
) -> None:
    message = parse(body)
    assert isinstance(message, jsonrpc.Invalid), message
    assert (message.code, message.id, message.kind) == (code, msg_id, kind), message


def test_invalid_utf8_and_deep_nesting_still_yield_the_id() -> None:
    bad = parse(b'{"jsonrpc":"2.0","id":"u","method":"m","params":{"t":"\xff"}}')
    assert bad == jsonrpc.Invalid(
        jsonrpc.PARSE_ERROR, "the message is not valid UTF-8 (byte 54)", "u", "request"
    )
    deep = '{"jsonrpc":"2.0","method":"m","params":' + "[" * 5000 + "]" * 5000 + ',"id":"d"}'
    message = parse(deep)
    assert isinstance(message, jsonrpc.Invalid)
    assert (message.code, message.id) == (jsonrpc.INVALID_REQUEST, "d")

    # at the limit it parses (the message and params objects are two levels); one more does not
    def nested(depth: int) -> str:
        inner = "[" * (depth - 2) + "]" * (depth - 2)
        return '{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":' + inner + "}}"

    assert isinstance(parse(nested(jsonrpc.MAX_JSON_DEPTH)), jsonrpc.Request)
    assert isinstance(parse(nested(jsonrpc.MAX_JSON_DEPTH + 1)), jsonrpc.Invalid)
    # brackets inside strings do not count
    assert isinstance(
        parse('{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":"' + "[" * 500 + '"}}'),
        jsonrpc.Request,
    )


def test_top_level_members_stop_where_the_text_stops_being_json() -> None:
    text = '{"a": {"x": "}"}, "b" : [1, [2]], "id": "7", "c": tru'
    members = jsonrpc.top_level_members(text)
    assert members == {
        "a": jsonrpc.COMPOSITE,
        "b": jsonrpc.COMPOSITE,
        "id": "7",
        "c": jsonrpc.UNREADABLE,
    }
    assert jsonrpc.top_level_members('["id", 1]') == {}
    assert jsonrpc.top_level_members('{"id": 1, "params": {"cut') == {
        "id": 1,
        "params": jsonrpc.UNREADABLE,
    }


def test_outgoing_json_is_strict_with_non_finite_numbers_as_null() -> None:
    text, replaced = jsonrpc.dumps_strict({"a": [1.5, math.nan], "b": math.inf}, str)
    assert (json.loads(text), replaced) == ({"a": [1.5, None], "b": None}, True)
    assert jsonrpc.dumps_strict({"a": 1}, str) == ('{"a": 1}', False)


# ---- the protocol inside a real pygls server ----------------------------------------------------


class Sink:
    """The server's writer: keeps every message it sends, parsed as strict JSON."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    def write(self, data: bytes) -> None:
        header, _, body = data.partition(b"\r\n\r\n")
        assert int(header.split(b"\r\n")[0].split(b":")[1]) == len(body)
        self.messages.append(json.loads(body, parse_constant=_refuse))

    def close(self) -> None:
        pass


def _refuse(name: str) -> Any:
    raise AssertionError(f"{name} sent")


@pytest.fixture
def sink() -> Any:
    server = LanguageServer("t", "0", protocol_cls=MilkProtocol, converter_factory=get_converter)

    @server.feature("test/echo")
    def echo(ls: LanguageServer, params: Any) -> Any:
        return {"params": params}

    out = Sink()
    server.protocol.set_writer(out)
    out.protocol = server.protocol  # type: ignore[attr-defined]
    return out


def feed(sink: Sink, message: Any) -> dict[str, Any]:
    protocol: MilkProtocol = sink.protocol  # type: ignore[attr-defined]
    body = message if isinstance(message, bytes) else json.dumps(message).encode()
    before = len(sink.messages)
    protocol.handle_frame(Frame(body))
    assert len(sink.messages) == before + 1, sink.messages[before:]
    return sink.messages[-1]


def initialize(sink: Sink) -> None:
    answer = feed(
        sink, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"capabilities": {}}}
    )
    assert answer["result"]["capabilities"]["experimental"] == {"milk": {"protocolVersion": 1}}


def test_requests_before_initialize_get_server_not_initialized(sink: Sink) -> None:
    answer = feed(sink, {"jsonrpc": "2.0", "id": 1, "method": "test/echo"})
    assert answer["error"]["code"] == jsonrpc.SERVER_NOT_INITIALIZED and answer["id"] == 1
    for params, field in ((None, "params: required"), ([], "params: must be an object")):
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": "i", "method": "initialize"}
        if params is not None:
            message["params"] = params
        answer = feed(sink, message)
        assert answer["error"]["code"] == jsonrpc.INVALID_PARAMS, answer
        assert field in answer["error"]["message"], answer
    initialize(sink)
    assert feed(sink, {"jsonrpc": "2.0", "id": 2, "method": "test/echo"})["result"] == {
        "params": None
    }


@pytest.mark.parametrize(
    ("params", "ignored"),
    [
        (
            {"capabilities": {"window": 5}},
            ["capabilities.window ignored (invalid value for type, expected Optional, got 5)"],
        ),
        (
            {"capabilities": {}, "workspaceFolders": "nope"},
            ['workspaceFolders ignored (must be an array, got "nope")'],
        ),
        (
            {"capabilities": {"experimental": {"milk": "yes", "other": 1}}},
            ['capabilities.experimental.milk ignored (must be an object, got "yes")'],
        ),
        (
            {"capabilities": {"experimental": {"milk": {"requestPermission": "yes"}}}},
            [
                "capabilities.experimental.milk.requestPermission ignored (must be true or "
                'false, got "yes")'
            ],
        ),
        ({}, ["capabilities ignored (required field missing; taken as {})"]),
        (
            {"capabilities": 5, "processId": "x", "trace": "loud"},
            [
                "capabilities ignored (invalid value for type, expected ClientCapabilities, "
                "got 5; taken as {})",
                'processId ignored (invalid value for type, expected Optional, got "x")',
                'trace ignored (invalid value for type, expected Optional, got "loud")',
            ],
        ),
        (
            {
                "capabilities": {"textDocument": {"hover": {"contentFormat": ["x", "markdown"]}}},
                "workspaceFolders": [
                    {"name": "no uri"},
                    {"uri": "file:///w", "name": "w"},
                    {"uri": "file:///v", "name": 5, "extra": True},
                ],
            },
            [
                "capabilities.textDocument.hover.contentFormat.0 ignored (invalid value for "
                'type, expected MarkupKind, got "x")',
                "workspaceFolders.0 ignored (uri: required field missing)",
            ],
        ),
    ],
)
def test_initialize_leaves_out_what_it_cannot_take_with_a_warning_naming_it(
    sink: Sink, params: dict[str, Any], ignored: list[str]
) -> None:
    # Issue 21: only params that are missing or not an object are refused.
    protocol: MilkProtocol = sink.protocol  # type: ignore[attr-defined]
    message = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
    protocol.handle_frame(Frame(json.dumps(message).encode()))
    *warnings, answer = sink.messages
    assert answer["result"]["capabilities"]["experimental"] == {"milk": {"protocolVersion": 1}}
    assert [w["method"] for w in warnings] == ["window/logMessage"] * len(ignored)
    assert [w["params"] for w in warnings] == [
        {"type": types.MessageType.Warning.value, "message": f"milk: initialize: {words}"}
        for words in ignored
    ]
    assert feed(sink, {"jsonrpc": "2.0", "id": 2, "method": "test/echo"})["result"] == {
        "params": None
    }


def test_params_reach_the_handler_as_plain_json_whatever_their_shape(sink: Sink) -> None:
    initialize(sink)
    shaped = {"jsonrpc": "2.0", "id": 1, "method": "exit", "x": {"jsonrpc": "2.0", "result": 1}}
    answer = feed(sink, {"jsonrpc": "2.0", "id": "e", "method": "test/echo", "params": shaped})
    assert answer == {"jsonrpc": "2.0", "id": "e", "result": {"params": shaped}}


def test_malformed_messages_are_answered_with_their_id_or_null(sink: Sink) -> None:
    initialize(sink)
    assert feed(sink, b'{"jsonrpc":"2.0","id":4,"method":"test/echo",')["id"] == 4
    answer = feed(sink, b"[1]")
    assert answer == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": jsonrpc.INVALID_REQUEST,
            "message": "the message must be a JSON object: a batch (an array) is not supported",
        },
    }
    protocol: MilkProtocol = sink.protocol  # type: ignore[attr-defined]
    protocol.handle_frame(Rejected("too large", b'{"jsonrpc":"2.0","id":"r","method":"x","par'))
    assert sink.messages[-1]["id"] == "r"


def test_a_malformed_response_fails_the_pending_request_instead_of_leaving_it(
    sink: Sink,
) -> None:
    initialize(sink)
    protocol: MilkProtocol = sink.protocol  # type: ignore[attr-defined]
    future = protocol.send_request(types.WINDOW_SHOW_MESSAGE_REQUEST, None, msg_id="q")
    sent = len(sink.messages)
    protocol.handle_frame(Frame(b'{"jsonrpc":"2.0","id":"q","result":1,"error":{}}'))
    assert len(sink.messages) == sent  # a response is never answered
    with pytest.raises(Exception, match="malformed"):
        future.result(timeout=1)


def test_after_shutdown_requests_are_refused(sink: Sink) -> None:
    initialize(sink)
    assert feed(sink, {"jsonrpc": "2.0", "id": "s", "method": "shutdown"})["result"] is None
    answer = feed(sink, {"jsonrpc": "2.0", "id": "late", "method": "test/echo"})
    assert answer["error"]["code"] == jsonrpc.INVALID_REQUEST and answer["id"] == "late"


def test_a_notification_with_nan_goes_out_as_strict_json(sink: Sink) -> None:
    protocol: MilkProtocol = sink.protocol  # type: ignore[attr-defined]
    protocol.notify(wire.UPDATE, {"kind": "tool_call", "input": {"path": math.nan}})
    assert sink.messages[-1]["params"]["input"] == {"path": None}


# ---- bounds of params and settings --------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "raw", "field"),
    [
        (wire.SessionGetParams, {"sessionId": "s", "limit": 10**20}, "limit"),
        (wire.SessionNewParams, {"workspaceFolder": "file:///" + "a" * 6000}, "workspaceFolder"),
        (wire.SessionNewParams, {"title": "\ud800"}, "title"),
        (wire.SessionNewParams, {"title": "a\x00"}, "title"),
        (wire.SessionIdParams, {"sessionId": "\udfff"}, "sessionId"),
        (wire.ChatParams, {"text": "t", "context": [{"uri": "file:///\ud800"}]}, "context.0.uri"),
        (
            wire.ChatParams,
            {"text": "t", "context": [{"uri": "u", "text": "\ud800"}]},
            "context.0.text",
        ),
    ],
)
def test_out_of_range_params_are_invalid_params_naming_the_field(
    model: type[wire.WireModel], raw: dict[str, Any], field: str
) -> None:
    with pytest.raises(wire.ParamsError, match=f"invalid params: {field}: "):
        wire.parse(model, raw)


def test_text_may_hold_a_nul_and_an_emoji() -> None:
    parsed = wire.parse(wire.ChatParams, {"text": "a\x00b 😀"})
    assert parsed.text == "a\x00b 😀"


def test_a_setting_with_a_nul_or_lone_surrogate_keeps_its_previous_value() -> None:
    before = MilkConfig(storage_dir="/good")
    merged, problems = merge_settings(
        before, {"storageDir": "/bad\x00", "claude": {"path": "\ud800"}}, "test"
    )
    assert merged.storage_dir == "/good" and merged.claude.path is None
    assert [p.key for p in problems] == ["storageDir", "claude.path"]
    assert all("NUL" in p.message for p in problems)


# ---- nudging -------------------------------------------------------------------------------------


@pytest.fixture
def quick_nudges(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(MilkProtocol, "NUDGE_DELAYS", (0.05, 0.1, 0.2))


def nudges(sink: Sink) -> list[dict[str, Any]]:
    return [m for m in sink.messages if m.get("method") == wire.NUDGE]


async def test_output_after_a_response_is_followed_by_nudges_once_quiet(
    sink: Sink, quick_nudges: None
) -> None:
    initialize(sink)
    feed(sink, {"jsonrpc": "2.0", "id": 1, "method": "test/echo"})
    protocol: MilkProtocol = sink.protocol  # type: ignore[attr-defined]
    protocol.send_request(types.WINDOW_SHOW_MESSAGE_REQUEST, None, msg_id="q")
    for _ in range(5):  # output goes on: no nudge yet
        await asyncio.sleep(0.02)
        protocol.notify(wire.UPDATE, {"kind": "text"})
    assert nudges(sink) == []
    await asyncio.sleep(0.6)
    assert nudges(sink) == [{"jsonrpc": "2.0", "method": wire.NUDGE, "params": {}}] * 3
    quiet = len(sink.messages)
    protocol.notify(wire.UPDATE, {"kind": "text"})  # no response since: nothing owed
    await asyncio.sleep(0.2)
    assert len(sink.messages) == quiet + 1


async def test_a_response_with_nothing_after_it_is_not_nudged(
    sink: Sink, quick_nudges: None
) -> None:
    initialize(sink)
    feed(sink, {"jsonrpc": "2.0", "id": 1, "method": "test/echo"})
    await asyncio.sleep(0.3)
    assert nudges(sink) == []
