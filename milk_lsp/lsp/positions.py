"""LSP positions in the client's units: UTF-8 bytes, UTF-16 code units or code points,
whichever the client and server agreed on (`positionEncoding`; UTF-16 by default)."""

from __future__ import annotations

from typing import Literal

from milk_lsp import wire

Encoding = Literal["utf-8", "utf-16", "utf-32"]


def units(text: str, encoding: Encoding) -> int:
    """The length of `text` in the client's position units."""
    if encoding == "utf-8":
        return len(text.encode("utf-8", "surrogatepass"))
    if encoding == "utf-32":
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def position_at(text: str, offset: int, encoding: Encoding) -> tuple[int, int]:
    """(line, character) of a character offset in `text` (`\\n` line endings)."""
    before = text[:offset]
    line = before.count("\n")
    return line, units(before[before.rfind("\n") + 1 :], encoding)


def range_text(text: str, range_: wire.Range, encoding: Encoding) -> str:
    """The text of a range given in the client's position units."""
    lines = text.splitlines(keepends=True)

    def offset(line: int, character: int) -> int:
        before = sum(len(item) for item in lines[:line])
        if line >= len(lines):
            return before
        return before + _chars(lines[line], character, encoding)

    start = offset(range_.start.line, range_.start.character)
    end = offset(range_.end.line, range_.end.character)
    return text[start:end]


def _chars(line: str, units: int, encoding: Encoding) -> int:
    """How many characters of `line` make `units` position units."""
    if encoding == "utf-32":
        return min(units, len(line))
    size = 0
    for index, char in enumerate(line):
        if size >= units:
            return index
        if encoding == "utf-8":
            size += len(char.encode("utf-8", "surrogatepass"))
        else:
            size += 2 if ord(char) > 0xFFFF else 1
    return len(line)
