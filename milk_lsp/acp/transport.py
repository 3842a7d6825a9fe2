"""Newline-delimited JSON-RPC on stdio, as the message transport of the ACP SDK's `Connection`.

Why not the SDK's own stdio framing: it drops a line that is not JSON without an answer, and
it queues every outgoing message for a writer task, so an update sent from the engine's
synchronous code could reach the client after the response of the request it belongs to.
Here a message is written at once, in call order (`write`), and every request that cannot
be read still gets its error: lines are parsed by `milk_lsp.jsonrpc.messages` (not JSON, not UTF-8,
nested too deep, not a request), and a line over `MAX_LINE_BYTES` is skipped and answered
with the id read from its first bytes. Outgoing JSON is strict (`jsonrpc.dumps_strict`).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from milk_lsp.jsonrpc import messages as jsonrpc
from milk_lsp.jsonrpc.framing import PREFIX_BYTES, READ_CHUNK_BYTES

logger = logging.getLogger(__name__)

MAX_LINE_BYTES = 64 * 1024 * 1024
"""Longest message taken, as on the LSP side (`framing.MAX_MESSAGE_BYTES`)."""


class StdioTransport:
    """`acp`'s `Transport` (send / receive / close of decoded messages) over two streams."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._pending = bytearray()
        self._scanned = 0
        """Bytes of `_pending` already searched for a newline."""

    def write(self, message: dict[str, Any]) -> None:
        """Write one message now (no await): messages leave in the order they are written."""
        if self._writer.is_closing():
            logger.debug("client gone; dropped %s", message.get("method") or message.get("id"))
            return
        text, replaced = jsonrpc.dumps_strict(message, default=str)
        if replaced:
            logger.warning("a non-finite number in an outgoing message was sent as null")
        self._writer.write(text.encode("utf-8") + b"\n")

    async def send(self, message: dict[str, Any]) -> None:
        self.write(message)
        await self._writer.drain()

    async def receive(self) -> dict[str, Any] | None:
        """The next message the SDK can dispatch; None at the end of the input."""
        while True:
            line = await self._read_line()
            if line is None:
                return None
            if isinstance(line, _TooLong):
                self._answer(jsonrpc.invalid_from_prefix(line.prefix, line.reason))
                continue
            if not line.strip():
                continue
            message = self._message(jsonrpc.parse_message(line.strip()))
            if message is not None:
                return message

    async def close(self) -> None:
        if not self._writer.is_closing():
            self._writer.close()

    def _message(self, parsed: jsonrpc.Message) -> dict[str, Any] | None:
        match parsed:
            case jsonrpc.Request(id=msg_id, method=method, params=params):
                return {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}
            case jsonrpc.Notification(method=method, params=params):
                return {"jsonrpc": "2.0", "method": method, "params": params}
            case jsonrpc.Response(id=msg_id, result=result, error=error):
                if error is not None:
                    return {"jsonrpc": "2.0", "id": msg_id, "error": error}
                return {"jsonrpc": "2.0", "id": msg_id, "result": result}
            case jsonrpc.Invalid(kind="response", id=msg_id) if msg_id is not None:
                # Our request gets an answer it can fail on, instead of waiting forever.
                error = {"code": parsed.code, "message": f"invalid response: {parsed.message}"}
                return {"jsonrpc": "2.0", "id": msg_id, "error": error}
            case jsonrpc.Invalid():
                self._answer(parsed)
        return None

    def _answer(self, invalid: jsonrpc.Invalid) -> None:
        if invalid.kind == "notification" or invalid.kind == "response":
            logger.warning("ignored an unreadable %s: %s", invalid.kind, invalid.message)
            return
        logger.warning("answered an unreadable message with %d: %s", invalid.code, invalid.message)
        error = {"code": invalid.code, "message": invalid.message}
        self.write({"jsonrpc": "2.0", "id": invalid.id, "error": error})

    async def _read_line(self) -> bytes | _TooLong | None:
        """The next line without its newline; `_TooLong` for one over the limit (dropped,
        its first bytes kept); None at the end of the input."""
        skipped: bytes | None = None
        while True:
            newline = self._pending.find(b"\n", self._scanned)
            if newline >= 0:
                line = bytes(self._pending[:newline])
                del self._pending[: newline + 1]
                self._scanned = 0
                if skipped is not None:
                    return _TooLong(skipped, f"the message is longer than {MAX_LINE_BYTES} bytes")
                return line
            self._scanned = len(self._pending)
            if skipped is None and len(self._pending) > MAX_LINE_BYTES:
                skipped = bytes(self._pending[:PREFIX_BYTES])
            if skipped is not None:
                self._pending.clear()
                self._scanned = 0
            chunk = await self._reader.read(READ_CHUNK_BYTES)
            if not chunk:  # the input ended: a last line without its newline still counts
                last = bytes(self._pending)
                self._pending.clear()
                return last if last.strip() and skipped is None else None
            self._pending += chunk


class _TooLong:
    def __init__(self, prefix: bytes, reason: str) -> None:
        self.prefix = prefix
        self.reason = reason
