"""`milk_lsp.acp.transport`: newline-delimited JSON-RPC over real pipes.

The transport reads from an asyncio reader on one OS pipe and writes to another; the test
plays the client at the other ends."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import AsyncIterator
from typing import Any

import pytest

from milk_lsp.acp import transport as transport_module
from milk_lsp.acp.transport import StdioTransport


class Pipes:
    def __init__(self, transport: StdioTransport, to_agent: int, from_agent: int) -> None:
        self.transport = transport
        self._to_agent = to_agent
        self._from_agent = from_agent
        self._received = b""

    async def send(self, data: bytes) -> None:
        """Write all of `data` (from a thread: a pipe holds only 64 KiB until read)."""
        view = memoryview(data)
        while view:
            written = await asyncio.to_thread(os.write, self._to_agent, view)
            view = view[written:]

    def end_input(self) -> None:
        os.close(self._to_agent)

    async def answer(self) -> dict[str, Any]:
        """The next message the transport wrote."""
        while b"\n" not in self._received:
            chunk = await asyncio.to_thread(os.read, self._from_agent, 65536)
            assert chunk, "the transport's output ended"
            self._received += chunk
        line, self._received = self._received.split(b"\n", 1)
        message: dict[str, Any] = json.loads(line)
        return message


@pytest.fixture
async def pipes() -> AsyncIterator[Pipes]:
    loop = asyncio.get_running_loop()
    in_read, in_write = os.pipe()
    out_read, out_write = os.pipe()
    reader = asyncio.StreamReader()
    read_transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(in_read, "rb", 0)
    )
    write_transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(out_write, "wb", 0)
    )
    writer = asyncio.StreamWriter(write_transport, protocol, None, loop)
    pipes = Pipes(StdioTransport(reader, writer), in_write, out_read)
    yield pipes
    await pipes.transport.close()
    read_transport.close()
    for fd in (in_write, out_read):
        with contextlib.suppress(OSError):
            os.close(fd)


async def test_requests_notifications_and_responses_reach_the_connection(pipes: Pipes) -> None:
    await pipes.send(b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"a": 1}}\n')
    await pipes.send(b'\n   \n{"jsonrpc": "2.0", "method": "session/cancel", "params": {}}\n')
    await pipes.send(b'{"jsonrpc": "2.0", "id": 0, "result": {"ok": true}}\n')
    await pipes.send(b'{"jsonrpc": "2.0", "id": 2, "method": "x"}')  # no newline, then the end
    pipes.end_input()
    got = [await pipes.transport.receive() for _ in range(5)]
    assert got == [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"a": 1}},
        {"jsonrpc": "2.0", "method": "session/cancel", "params": {}},
        {"jsonrpc": "2.0", "id": 0, "result": {"ok": True}},
        {"jsonrpc": "2.0", "id": 2, "method": "x", "params": None},
        None,
    ]


@pytest.mark.parametrize(
    ("line", "msg_id", "code"),
    [
        (b'{"jsonrpc": "2.0", "id": 4, "method": "a", "params": {', 4, -32700),
        (b"\xff\xfe", None, -32700),
        (b"[1, 2]", None, -32600),
        (b'{"jsonrpc": "1.0", "id": "x", "method": "a"}', "x", -32600),
        (b'{"jsonrpc": "2.0", "id": 5, "method": "a", "params": 3}', 5, -32600),
        (b'{"jsonrpc": "2.0", "id": 6, "method": "a", "params": {"n": NaN}}', 6, -32700),
    ],
)
async def test_unreadable_requests_are_answered(
    pipes: Pipes, line: bytes, msg_id: Any, code: int
) -> None:
    await pipes.send(line + b"\n" + b'{"jsonrpc": "2.0", "method": "after"}\n')
    message = await asyncio.wait_for(pipes.transport.receive(), 5)
    assert message == {"jsonrpc": "2.0", "method": "after", "params": None}
    answer = await asyncio.wait_for(pipes.answer(), 5)
    assert (answer["id"], answer["error"]["code"]) == (msg_id, code)
    assert answer["error"]["message"]


async def test_a_malformed_answer_to_our_request_fails_that_request(pipes: Pipes) -> None:
    await pipes.send(b'{"jsonrpc": "2.0", "id": 3, "error": "nope"}\n')
    message = await asyncio.wait_for(pipes.transport.receive(), 5)
    assert message is not None and message["id"] == 3
    assert message["error"]["code"] == -32600


async def test_a_line_over_the_limit_is_skipped_and_answered(
    pipes: Pipes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(transport_module, "MAX_LINE_BYTES", 100_000)
    big = b'{"jsonrpc": "2.0", "id": "big", "method": "a", "params": {"x": "' + b"y" * 300_000
    sending = asyncio.create_task(
        pipes.send(big + b'"}}\n{"jsonrpc": "2.0", "id": 9, "method": "next"}\n')
    )
    message = await asyncio.wait_for(pipes.transport.receive(), 10)
    await sending
    assert message == {"jsonrpc": "2.0", "id": 9, "method": "next", "params": None}
    answer = await asyncio.wait_for(pipes.answer(), 5)
    assert (answer["id"], answer["error"]["code"]) == ("big", -32600)
    assert "longer than 100000 bytes" in answer["error"]["message"]


async def test_writes_leave_in_order_as_strict_json(pipes: Pipes) -> None:
    pipes.transport.write({"jsonrpc": "2.0", "method": "first", "params": {"n": float("nan")}})
    await pipes.transport.send({"jsonrpc": "2.0", "id": 1, "result": {"text": "é\u2028"}})
    first, second = await pipes.answer(), await pipes.answer()
    assert first == {"jsonrpc": "2.0", "method": "first", "params": {"n": None}}
    assert second == {"jsonrpc": "2.0", "id": 1, "result": {"text": "é\u2028"}}
