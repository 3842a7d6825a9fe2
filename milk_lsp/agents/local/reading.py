"""What the read and search tools read: a confined file's text (regular, not binary, not
too large, UTF-8 or shown with replacement characters), a folder's entries, a line matcher
(literal, or a regular expression bounded in time), and a tool result capped with a hint.
Each refusal is a `ToolFailed` or `BadArgument` whose words the model can act on."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable

from milk_lsp.agents.local.reply.tool_arguments import BadArgument, ToolFailed
from milk_lsp.workspace.confined import ConfinedRoot, Parts, read_all, shown

MAX_READ_FILE_BYTES = 10_000_000
BINARY_SNIFF_BYTES = 8192
"""A NUL byte in this many leading bytes marks a file as binary (what git and grep do)."""

Matcher = Callable[[str, float], bool]
"""Whether a line matches, given the seconds the match may take."""


def read_text(confined: ConfinedRoot, parts: Parts, *, strict: bool) -> str | None:
    """A text file's content, or None when it does not exist.

    `strict` refuses text that is not UTF-8 (for edits, which must not mangle bytes);
    otherwise bad bytes are shown as U+FFFD.
    """
    where = shown(parts)
    try:
        fd = confined.open_file_for_read(parts)
    except FileNotFoundError:
        return None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise ToolFailed(f"{where} is a directory; use list_directory to see what it holds")
        if not stat.S_ISREG(info.st_mode):
            raise ToolFailed(f"{where} is not a regular file")
        if info.st_size > MAX_READ_FILE_BYTES:
            raise ToolFailed(f"{where} is too large ({info.st_size} bytes); use search_text on it")
        data = read_all(fd)
    finally:
        os.close(fd)
    if b"\x00" in data[:BINARY_SNIFF_BYTES]:
        raise ToolFailed(f"{where} is a binary file, not text")
    try:
        return data.decode("utf-8", "strict" if strict else "replace")
    except UnicodeDecodeError as exc:
        raise ToolFailed(f"{where} is not UTF-8 text; it cannot be edited safely") from exc


def list_entries(confined: ConfinedRoot, parts: Parts) -> list[str]:
    try:
        entries = confined.list_dir(parts)
    except FileNotFoundError as exc:
        raise ToolFailed(f"Directory not found: {shown(parts)}") from exc
    except NotADirectoryError as exc:
        raise ToolFailed(f"{shown(parts)} is a file, not a directory; use read_file") from exc
    return sorted(name + ("/" if is_dir else "") for name, is_dir in entries)


def literal_matcher(pattern: str) -> Matcher:
    return lambda line, _seconds: pattern in line


def regex_matcher(pattern: str) -> Matcher:
    """A matcher for a Python regular expression, each match bounded in time.

    The `regex` package, not `re`: `re` can neither be interrupted nor timed out, and it
    holds the GIL while it matches, so a catastrophic pattern would stall the server even
    from a thread. `regex` takes a timeout and lets other threads run while it matches.
    """
    import regex  # only regex searches need it

    try:
        compiled = regex.compile(pattern)
    except regex.error as exc:
        raise BadArgument(f"pattern is not a valid regular expression: {exc}") from exc
    return lambda line, seconds: compiled.search(line, timeout=seconds) is not None


def cap(text: str, cap_chars: int, hint: str) -> str:
    if len(text) <= cap_chars:
        return text
    return f"{text[:cap_chars]}\n[... truncated at {cap_chars} of {len(text)} characters; {hint}]"
