"""The LSP base protocol's framing (`Content-Length` headers), read defensively.

pygls 2 reads a `Content-Length` and then `stdin.read(length)`: a header claiming 10^12 bytes
dies in a MemoryError, 10^23 in an OverflowError, and the server exits. Here a length above
`MAX_MESSAGE_BYTES` is refused without reading it as one block: the reader returns `Rejected`
(with the first bytes that arrived, so the request's id can still be answered) and then skips
everything up to the next `Content-Length` header. A JSON body cannot hold such a header (a
raw line break is not allowed inside a JSON string), so the next message is found whether the
refused one really was that long or the header lied. Bytes outside any message are skipped
the same way and reported once per run.

A header block the body cannot be framed by is refused the same way: one without
`Content-Length` (only a `Content-Type`, say), and one with two `Content-Length` lines that
disagree (where the body ends cannot be told; reading either length could swallow the next
message and wait for bytes that never come). The first bytes kept to find the refused
message's id end where the next message's `Content-Length` header starts, so a refused header
block that had no body never takes the id of the request after it.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import BinaryIO

from milk_lsp.jsonrpc.messages import INVALID_REQUEST, PARSE_ERROR

logger = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""Largest body taken; a bigger one is refused and skipped, and the server keeps serving."""
MAX_HEADER_LINE_BYTES = 8 * 1024
"""A longer "header line" is not a header: it is skipped piece by piece."""
PREFIX_BYTES = 64 * 1024
"""How much of a refused message (or of stray bytes) is kept to look for its id."""
READ_CHUNK_BYTES = 64 * 1024
_OVERLAP_BYTES = 256
"""Kept from a skipped piece, so a header cut across two pieces is still found."""
_MAX_LENGTH_DIGITS = 15

_HEADER = re.compile(rb"([A-Za-z0-9-]+)[ \t]*:[ \t]*(.*?)[ \t]*")
_LENGTH_AT_LINE_END = re.compile(rb"Content-Length[ \t]*:[ \t]*([0-9]+)[ \t]*$", re.IGNORECASE)
_NEXT_LENGTH_HEADER = re.compile(rb"Content-Length[ \t]*:[ \t]*[0-9]+[ \t]*\r?\n", re.IGNORECASE)
"""Where the next message starts in bytes read ahead (a JSON body holds no raw line break)."""


@dataclass(frozen=True)
class Frame:
    body: bytes


@dataclass(frozen=True)
class Rejected:
    """A message refused before its body was read, or bytes that were not a message."""

    reason: str
    prefix: bytes
    """The first bytes of it (up to `PREFIX_BYTES`), to read its id from."""
    code: int = INVALID_REQUEST
    """The JSON-RPC error it is answered with."""


class FrameReader:
    """Reads frames from a blocking binary stream (stdin); one `next()` call at a time."""

    def __init__(self, stream: BinaryIO, max_body: int = MAX_MESSAGE_BYTES) -> None:
        self._stream = stream
        self._max_body = max_body
        self._buffer = bytearray()
        self._eof = False
        self._headers: dict[bytes, list[bytes]] = {}
        """The header block read so far: each name (lowercase) with its values in order."""
        self._skipping = False
        """Skipping the body of a refused message: those bytes are not reported again."""
        self._junk = bytearray()
        self._junk_bytes = 0

    def next(self) -> Frame | Rejected | None:
        """The next frame, a `Rejected`, or None at the end of the stream."""
        while True:
            line = self._line()
            if line is None:
                return self._end_junk()
            if not line.endswith(b"\n"):  # a piece of an over-long line: not a header
                self._add_junk(line)
                continue
            text = line.rstrip(b"\r\n")
            if not text:
                if not self._headers:
                    continue  # a stray blank line
                headers, self._headers = self._headers, {}
                return self._body(headers)
            glued = _LENGTH_AT_LINE_END.search(text)
            header = _HEADER.fullmatch(text) if glued is None or glued.start() == 0 else None
            if header is not None:
                name, value = header.group(1).lower(), header.group(2)
            elif glued is not None:
                # A header right after bytes that were not a message (a body longer than
                # its Content-Length said, say): the message starts here.
                self._add_junk(text[: glued.start()])
                name, value = b"content-length", glued.group(1)
            else:
                self._add_junk(line)
                continue
            rejected = self._end_junk()
            self._headers.setdefault(name, []).append(value)
            if rejected is not None:
                return rejected

    # ---- bodies --------------------------------------------------------------------------

    def _body(self, headers: dict[bytes, list[bytes]]) -> Frame | Rejected | None:
        lengths = headers.get(b"content-length")
        if not lengths:
            return self._refuse("the message has no Content-Length header")
        if len(set(lengths)) > 1:
            shown = " and ".join(repr(value[:40].decode("ascii", "replace")) for value in lengths)
            return self._refuse(
                f"the message has {len(lengths)} different Content-Length headers ({shown}): "
                "where it ends cannot be told",
                PARSE_ERROR,
            )
        raw = lengths[0]
        if not raw.isdigit():
            return self._refuse(f"Content-Length is not a number: {raw[:40]!r}")
        if len(raw) > _MAX_LENGTH_DIGITS or int(raw) > self._max_body:
            shown = raw.decode() if len(raw) <= 40 else f"{raw[:20].decode()}… ({len(raw)} digits)"
            return self._refuse(
                f"the message is too large: Content-Length {shown} is over the limit of "
                f"{self._max_body} bytes"
            )
        body = self._take(int(raw))
        if body is None:
            logger.warning("the input ended inside a message of %s bytes", int(raw))
            return None
        return Frame(body)

    def _refuse(self, reason: str, code: int = INVALID_REQUEST) -> Rejected:
        """Refuse the message whose headers were just read; its body is skipped after."""
        self._skipping = True
        if not self._buffer and not self._eof:
            self._fill()  # the body's first bytes, to find its id in
        prefix = bytes(self._buffer[:PREFIX_BYTES])
        following = _NEXT_LENGTH_HEADER.search(prefix)
        if following is not None:  # the next message: its id is not this one's
            prefix = prefix[: following.start()]
        return Rejected(reason, prefix, code)

    def _take(self, size: int) -> bytes | None:
        parts = [bytes(self._buffer[:size])]
        del self._buffer[:size]
        missing = size - len(parts[0])
        while missing > 0:
            chunk = self._stream.read(missing)
            if not chunk:
                self._eof = True
                return None
            parts.append(chunk)
            missing -= len(chunk)
        return b"".join(parts)

    # ---- lines and stray bytes -----------------------------------------------------------

    def _line(self) -> bytes | None:
        """The next line with its line break, a piece of an over-long line (no line break),
        or what is left at the end of the stream; None when nothing is left."""
        while True:
            end = self._buffer.find(b"\n", 0, MAX_HEADER_LINE_BYTES)
            if end >= 0:
                return self._cut(end + 1)
            if len(self._buffer) >= MAX_HEADER_LINE_BYTES:
                return self._cut(MAX_HEADER_LINE_BYTES - _OVERLAP_BYTES)
            if self._eof:
                return self._cut(len(self._buffer)) if self._buffer else None
            self._fill()

    def _cut(self, size: int) -> bytes:
        piece = bytes(self._buffer[:size])
        del self._buffer[:size]
        return piece

    def _fill(self) -> None:
        read1 = getattr(self._stream, "read1", None)
        chunk = read1(READ_CHUNK_BYTES) if read1 is not None else self._stream.read(1)
        if chunk:
            self._buffer += chunk
        else:
            self._eof = True

    def _add_junk(self, data: bytes) -> None:
        if not data:
            return
        self._headers.clear()  # headers followed by stray bytes are no message
        if not self._skipping and len(self._junk) < PREFIX_BYTES:
            self._junk += data[: PREFIX_BYTES - len(self._junk)]
        self._junk_bytes += len(data)

    def _end_junk(self) -> Rejected | None:
        """A header (or the end) was reached: report the stray bytes before it, if any."""
        skipped, count = self._skipping, self._junk_bytes
        junk = bytes(self._junk)
        self._skipping, self._junk_bytes = False, 0
        self._junk.clear()
        if not count:
            return None
        if skipped:
            logger.info("skipped %s bytes of a refused message", count)
            return None
        logger.warning("skipped %s bytes that were not a message (no Content-Length)", count)
        return Rejected(f"{count} bytes arrived outside any message (no Content-Length)", junk)
