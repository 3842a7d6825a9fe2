"""The local agent's workspace tools: read, list, search and edit files, and run commands.

Everything stays inside the workspace folder: every path argument is resolved (symlinks and
`..` included) and refused when it leaves the folder. Edits and commands ask the user first
through the `AgentHost`; an edit of a file open in the editor goes through the editor, so its
unsaved text and undo history are kept. Tool failures, bad arguments included, come back as
error outcomes for the model to read, never as exceptions. `escalate_to_claude` is not here:
the local agent owns it. Running an approved command (process group, timeout, output cap) is
`milk_lsp.agents.commands`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import stat
import tempfile
import threading
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from milk_lsp.agents.base import (
    AgentHost,
    EditRejected,
    PermissionOption,
    PermissionRequest,
)
from milk_lsp.agents.commands import CommandNotStarted, run_shell
from milk_lsp.sessions.model import Agent

logger = logging.getLogger(__name__)

MAX_LIST_ENTRIES = 1000
MAX_SEARCH_MATCHES = 200
MAX_SEARCH_LINE_CHARS = 300
MAX_SEARCH_FILE_BYTES = 2_000_000
"""Bigger files are skipped by search_text: they are data or generated, rarely what is sought."""
MAX_READ_FILE_BYTES = 10_000_000
BINARY_SNIFF_BYTES = 8192
"""A NUL byte in this many leading bytes marks a file as binary (what git and grep do)."""
SKIPPED_DIRS = frozenset(
    {".git", "node_modules", ".venv", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"}
)
MAX_COMMAND_TIMEOUT_SECONDS = 3600.0

READ_FILE = "read_file"
LIST_DIRECTORY = "list_directory"
SEARCH_TEXT = "search_text"
EDIT_FILE = "edit_file"
RUN_COMMAND = "run_command"


@dataclass(frozen=True)
class ToolOutcome:
    """What a tool call returns to the model."""

    output: str
    is_error: bool = False
    denied: bool = False
    """The user refused permission; the call did nothing."""


class OutsideWorkspace(ValueError):
    """A path argument leads outside the workspace folder."""


class _ToolFailed(Exception):
    """The call cannot be done; the message tells the model why."""


class _BadArgument(_ToolFailed):
    """An argument is missing or has the wrong type."""


def resolve_in_workspace(root: Path, path: str) -> Path:
    """The real path of `path` (relative to `root` unless absolute), refused outside `root`.

    Symlinks and `..` are resolved first, so neither can lead out of the workspace. The
    path need not exist.
    """
    if "\x00" in path:
        raise ValueError("the path contains a NUL character")
    real_root = root.resolve()
    candidate = Path(path)
    if not candidate.is_absolute():
        candidate = real_root / candidate
    try:
        real = candidate.resolve()
    except RuntimeError as exc:  # a symlink loop (Python < 3.13)
        raise ValueError(f"cannot resolve {path}: {exc}") from exc
    if not real.is_relative_to(real_root):
        raise OutsideWorkspace(f"{path} is outside the workspace folder")
    return real


class WorkspaceTools:
    """The tools the local model may call, bound to one workspace folder and one turn's host.

    Paths handed to the host are resolved real paths.
    """

    names: frozenset[str] = frozenset(
        {READ_FILE, LIST_DIRECTORY, SEARCH_TEXT, EDIT_FILE, RUN_COMMAND}
    )

    def __init__(
        self,
        root: Path,
        host: AgentHost,
        *,
        command_timeout_seconds: float = 60.0,
        output_cap_chars: int = 20000,
    ) -> None:
        self._root = root.resolve()
        self._host = host
        self._command_timeout_seconds = command_timeout_seconds
        self._output_cap_chars = output_cap_chars
        self._handlers: dict[str, Callable[[str, _Arguments], Awaitable[ToolOutcome]]] = {
            READ_FILE: self._read_file,
            LIST_DIRECTORY: self._list_directory,
            SEARCH_TEXT: self._search_text,
            EDIT_FILE: self._edit_file,
            RUN_COMMAND: self._run_command,
        }

    def specs(self) -> list[dict[str, Any]]:
        """The OpenAI `tools` entries for these tools."""
        return _tool_specs(self._command_timeout_seconds)

    async def call(self, tool_call_id: str, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        """Run one tool call; every failure becomes an error outcome."""
        handler = self._handlers.get(name)
        if handler is None:
            known = ", ".join(_TOOL_ORDER)
            return ToolOutcome(f"Unknown tool {name!r}. The tools are: {known}.", is_error=True)
        untrusted: object = arguments  # parsed from the model's JSON: any shape
        if not isinstance(untrusted, dict):
            return ToolOutcome(f"Bad arguments for {name}: expected a JSON object.", is_error=True)
        try:
            return await handler(tool_call_id, _Arguments(arguments))
        except _BadArgument as exc:
            return ToolOutcome(f"Bad arguments for {name}: {exc}", is_error=True)
        except (_ToolFailed, ValueError) as exc:
            return ToolOutcome(str(exc), is_error=True)
        except OSError as exc:
            return ToolOutcome(f"{name} failed: {exc}", is_error=True)
        except Exception as exc:
            logger.exception("tool %s failed", name)
            return ToolOutcome(f"{name} failed unexpectedly: {exc!r}", is_error=True)

    # --- tools ------------------------------------------------------------------------

    async def _read_file(self, tool_call_id: str, args: _Arguments) -> ToolOutcome:
        raw_path = args.text("path")
        start_line = args.integer("start_line", minimum=1)
        end_line = args.integer("end_line", minimum=1)
        if start_line is not None and end_line is not None and end_line < start_line:
            raise _BadArgument("end_line must not be less than start_line")
        path = await self._resolve(raw_path)
        shown = self._display(path)
        text = self._host.open_document_text(path)
        if text is None:
            text = await asyncio.to_thread(_read_text, path, shown, strict=False)
            if text is None:
                raise _ToolFailed(f"File not found: {shown}")
        if start_line is None and end_line is None:
            if not text:
                return ToolOutcome(f"({shown} is empty)")
            return ToolOutcome(
                _cap(text, self._output_cap_chars, "read further with start_line/end_line")
            )
        lines = _split_lines(text)
        if not lines:
            return ToolOutcome(f"({shown} is empty)")
        first = start_line or 1
        if first > len(lines):
            raise _ToolFailed(f"start_line {first} is past the end of {shown} ({len(lines)} lines)")
        last = min(end_line or len(lines), len(lines))
        body = "".join(lines[first - 1 : last])
        note = f"[{shown}: lines {first}-{last} of {len(lines)}]"
        body = _cap(body, self._output_cap_chars, "ask for fewer lines")
        separator = "" if body.endswith("\n") else "\n"
        return ToolOutcome(f"{body}{separator}{note}")

    async def _list_directory(self, tool_call_id: str, args: _Arguments) -> ToolOutcome:
        path = await self._resolve(args.text("path", default=".", allow_empty=True) or ".")
        shown = self._display(path)
        entries = await asyncio.to_thread(_list_entries, path, shown)
        if not entries:
            return ToolOutcome(f"({shown} is empty)")
        listing = "\n".join(entries[:MAX_LIST_ENTRIES])
        if len(entries) > MAX_LIST_ENTRIES:
            listing += f"\n[... {len(entries) - MAX_LIST_ENTRIES} more entries]"
        return ToolOutcome(_cap(listing, self._output_cap_chars, "list a subdirectory"))

    async def _search_text(self, tool_call_id: str, args: _Arguments) -> ToolOutcome:
        pattern = args.text("pattern", allow_empty=False, strip=False)
        raw_path = args.text("path", default=".", allow_empty=True) or "."
        use_regex = args.flag("regex", default=False)
        try:
            compiled = re.compile(pattern if use_regex else re.escape(pattern))
        except re.error as exc:
            raise _BadArgument(f"pattern is not a valid regular expression: {exc}") from exc
        base = await self._resolve(raw_path)
        stop = threading.Event()
        try:
            found, complete = await asyncio.to_thread(self._search, base, compiled, stop)
        finally:
            stop.set()  # a cancelled search stops its thread too
        if not found:
            return ToolOutcome(f"No matches for {pattern!r} in {self._display(base)}.")
        listing = "\n".join(found)
        if not complete:
            listing += f"\n[stopped after {MAX_SEARCH_MATCHES} matches; narrow the search]"
        return ToolOutcome(_cap(listing, self._output_cap_chars, "narrow the search"))

    async def _edit_file(self, tool_call_id: str, args: _Arguments) -> ToolOutcome:
        path = await self._resolve(args.text("path"))
        old_text = args.text("old_text", allow_empty=True, strip=False)
        new_text = args.text("new_text", allow_empty=True, strip=False)
        if old_text == new_text and old_text:
            raise _BadArgument("old_text and new_text are the same; there is nothing to change")
        shown = self._display(path)
        current, _ = await self._text_for_edit(path, shown)
        new_full_text = _replace_once(current, old_text, new_text, shown)
        if current is None:
            description = f"Create {shown} ({_count_lines(new_full_text)} lines)"
        else:
            description = (
                f"Edit {shown}: replace {_count_lines(old_text)} line(s)"
                f" with {_count_lines(new_text)} line(s)"
            )
        if not await self._ask(tool_call_id, EDIT_FILE, args.raw, description):
            return _denied(EDIT_FILE)
        # The text may have changed while the user was deciding: apply to what is there now.
        current, in_editor = await self._text_for_edit(path, shown)
        new_full_text = _replace_once(current, old_text, new_text, shown)
        verb = "Created" if current is None else "Edited"
        if in_editor:
            try:
                if await self._host.apply_edit(path, new_full_text):
                    return ToolOutcome(f"{verb} {shown} in the editor (not saved yet).")
            except EditRejected as exc:
                return ToolOutcome(f"The editor rejected the edit of {shown}: {exc}", is_error=True)
        await asyncio.to_thread(_write_atomically, path, new_full_text)
        return ToolOutcome(f"{verb} {shown}.")

    async def _run_command(self, tool_call_id: str, args: _Arguments) -> ToolOutcome:
        command = args.text("command")
        timeout = args.number("timeout_seconds")
        if timeout is None:
            timeout = self._command_timeout_seconds
        elif timeout <= 0:
            raise _BadArgument("timeout_seconds must be positive")
        timeout = min(timeout, MAX_COMMAND_TIMEOUT_SECONDS)
        description = f"Run in {self._root}: {command}"
        if not await self._ask(tool_call_id, RUN_COMMAND, args.raw, description):
            return _denied(RUN_COMMAND)
        try:
            result = await run_shell(command, self._root, timeout, self._output_cap_chars)
        except CommandNotStarted as exc:
            raise _ToolFailed(str(exc)) from exc
        text = result.output or "(no output)"
        return ToolOutcome(f"{text.rstrip()}\n[{result.status}]", is_error=result.failed)

    # --- helpers ----------------------------------------------------------------------

    async def _resolve(self, path: str) -> Path:
        return await asyncio.to_thread(resolve_in_workspace, self._root, path)

    def _display(self, path: Path) -> str:
        return path.relative_to(self._root).as_posix()

    async def _ask(
        self, tool_call_id: str, tool: str, arguments: dict[str, Any], description: str
    ) -> bool:
        answer = await self._host.request_permission(
            PermissionRequest(
                agent=Agent.LOCAL,
                tool_call_id=tool_call_id,
                tool=tool,
                input=arguments,
                description=description,
            )
        )
        return answer in (PermissionOption.ALLOW_ONCE, PermissionOption.ALLOW_SESSION)

    async def _text_for_edit(self, path: Path, shown: str) -> tuple[str | None, bool]:
        """The file's current text (None when it does not exist) and whether the editor has it."""
        text = self._host.open_document_text(path)
        if text is not None:
            return text, True
        return await asyncio.to_thread(_read_text, path, shown, strict=True), False

    def _search(
        self, base: Path, pattern: re.Pattern[str], stop: threading.Event
    ) -> tuple[list[str], bool]:
        """Matching `file:line: text` lines under `base`, and False when the cap cut them."""
        if base.is_file():
            files: Iterator[Path] = iter([base])
        elif base.is_dir():
            files = _walk_files(base, self._root, stop)
        else:
            raise _ToolFailed(f"Path not found: {self._display(base)}")
        found: list[str] = []
        for file in files:
            for number, line in _search_file(file, pattern):
                text = line.strip()[:MAX_SEARCH_LINE_CHARS]
                found.append(f"{file.relative_to(self._root).as_posix()}:{number}: {text}")
                if len(found) >= MAX_SEARCH_MATCHES:
                    return found, False
        return found, True


class _Arguments:
    """Typed access to a tool call's JSON arguments; a bad one raises `_BadArgument`.

    Lenient where small models often slip: numbers and booleans may come as strings.
    """

    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw

    def text(
        self,
        name: str,
        *,
        default: str | None = None,
        allow_empty: bool = False,
        strip: bool = True,
    ) -> str:
        value = self.raw.get(name)
        if value is None:
            if default is None:
                raise _BadArgument(f"missing required argument {name!r}")
            return default
        if not isinstance(value, str):
            raise _BadArgument(f"{name!r} must be a string, not {_json_type(value)}")
        if not allow_empty and not (value.strip() if strip else value):
            raise _BadArgument(f"{name!r} must not be empty")
        return value

    def integer(self, name: str, *, minimum: int) -> int | None:
        value = self.raw.get(name)
        if value is None:
            return None
        if isinstance(value, str):
            with contextlib.suppress(ValueError):
                value = int(value.strip())
        elif isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool):
            raise _BadArgument(f"{name!r} must be an integer, not {_json_type(value)}")
        if value < minimum:
            raise _BadArgument(f"{name!r} must be at least {minimum}")
        return value

    def number(self, name: str) -> float | None:
        value = self.raw.get(name)
        if value is None:
            return None
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                pass
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise _BadArgument(f"{name!r} must be a number, not {_json_type(value)}")
        return float(value)

    def flag(self, name: str, *, default: bool) -> bool:
        value = self.raw.get(name)
        if value is None:
            return default
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        if not isinstance(value, bool):
            raise _BadArgument(f"{name!r} must be true or false, not {_json_type(value)}")
        return value


def _denied(tool: str) -> ToolOutcome:
    return ToolOutcome(f"The user denied {tool}.", is_error=True, denied=True)


def _read_text(path: Path, shown: str, *, strict: bool) -> str | None:
    """A text file's content, or None when it does not exist.

    `strict` refuses text that is not UTF-8 (for edits, which must not mangle bytes);
    otherwise bad bytes are shown as U+FFFD.
    """
    try:
        info = path.stat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISDIR(info.st_mode):
        raise _ToolFailed(f"{shown} is a directory; use list_directory to see what it holds")
    if not stat.S_ISREG(info.st_mode):
        raise _ToolFailed(f"{shown} is not a regular file")
    if info.st_size > MAX_READ_FILE_BYTES:
        raise _ToolFailed(f"{shown} is too large ({info.st_size} bytes); use search_text on it")
    data = path.read_bytes()
    if b"\x00" in data[:BINARY_SNIFF_BYTES]:
        raise _ToolFailed(f"{shown} is a binary file, not text")
    try:
        return data.decode("utf-8", "strict" if strict else "replace")
    except UnicodeDecodeError as exc:
        raise _ToolFailed(f"{shown} is not UTF-8 text; it cannot be edited safely") from exc


def _list_entries(path: Path, shown: str) -> list[str]:
    if not path.exists():
        raise _ToolFailed(f"Directory not found: {shown}")
    if not path.is_dir():
        raise _ToolFailed(f"{shown} is a file, not a directory; use read_file")
    entries: list[str] = []
    with os.scandir(path) as scan:
        for entry in scan:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            entries.append(entry.name + ("/" if is_dir else ""))
    return sorted(entries)


def _walk_files(base: Path, root: Path, stop: threading.Event) -> Iterator[Path]:
    """Files under `base` in a stable order, without tool and dependency folders or symlinks
    that lead out of the workspace; stops early once `stop` is set."""
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS)
        for name in sorted(filenames):
            if stop.is_set():
                return
            file = Path(dirpath, name)
            if file.is_symlink():
                try:
                    if not file.resolve().is_relative_to(root):
                        continue
                except (OSError, RuntimeError):
                    continue
            yield file


def _search_file(file: Path, pattern: re.Pattern[str]) -> list[tuple[int, str]]:
    """Matching (line number, line) pairs of a text file; binary, huge or unreadable: none."""
    try:
        if file.stat().st_size > MAX_SEARCH_FILE_BYTES:
            return []
        data = file.read_bytes()
    except OSError:
        return []
    if b"\x00" in data[:BINARY_SNIFF_BYTES]:
        return []
    lines = _split_lines(data.decode("utf-8", "replace"))
    return [(number, line) for number, line in enumerate(lines, 1) if pattern.search(line)]


def _split_lines(text: str) -> list[str]:
    """Lines with their endings, split at `\\n` only (as editors number them)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _count_lines(text: str) -> int:
    return len(_split_lines(text))


def _replace_once(current: str | None, old_text: str, new_text: str, shown: str) -> str:
    """The new whole text, or a `_ToolFailed` saying why the edit cannot apply."""
    if current is None:
        if old_text:
            raise _ToolFailed(
                f"File not found: {shown}. To create it, call edit_file with an empty old_text."
            )
        return new_text
    if not old_text:
        if current:
            raise _ToolFailed(
                f"{shown} already exists and is not empty: old_text must quote the text to replace."
            )
        return new_text
    count = current.count(old_text)
    if count == 0 and "\r\n" in current and "\n" in old_text and "\r\n" not in old_text:
        # The model writes `\n`; a CRLF file needs its own line endings on both sides.
        crlf_old = old_text.replace("\n", "\r\n")
        if current.count(crlf_old):
            old_text, count = crlf_old, current.count(crlf_old)
            new_text = new_text.replace("\r\n", "\n").replace("\n", "\r\n")
    if count != 1:
        hint = (
            "it must match the file exactly, whitespace and indentation included"
            if count == 0
            else "include more of the surrounding lines so that it matches exactly once"
        )
        raise _ToolFailed(f"old_text occurs {count} times in {shown}; {hint}.")
    return current.replace(old_text, new_text, 1)


def _write_atomically(path: Path, text: str) -> None:
    """Write through a temp file in the same directory and a rename, keeping the file mode."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_current_umask()
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temp_name = tempfile.mkstemp(
        dir=path.parent, prefix=f".{path.name}.", suffix=".milk-tmp"
    )
    temp_path = Path(temp_name)
    try:
        with os.fdopen(descriptor, "wb") as temp_file:
            temp_file.write(text.encode("utf-8"))
            temp_file.flush()
            os.fsync(temp_file.fileno())
        temp_path.chmod(mode)
        temp_path.replace(path)
    except BaseException:
        temp_path.unlink(missing_ok=True)
        raise


def _current_umask() -> int:
    """The process umask, read without changing it (os.umask would race other threads)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    return 0o022


def _cap(text: str, cap_chars: int, hint: str) -> str:
    if len(text) <= cap_chars:
        return text
    return f"{text[:cap_chars]}\n[... truncated at {cap_chars} of {len(text)} characters; {hint}]"


def _json_type(value: object) -> str:
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string"}
    names.update({list: "an array", dict: "an object", type(None): "null"})
    return names.get(type(value), type(value).__name__)


def _function(
    name: str, description: str, properties: dict[str, Any], required: list[str]
) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            },
        },
    }


_PATH = {"type": "string", "description": "Path relative to the workspace folder."}
_TOOL_ORDER = (READ_FILE, LIST_DIRECTORY, SEARCH_TEXT, EDIT_FILE, RUN_COMMAND)


def _tool_specs(default_timeout_seconds: float) -> list[dict[str, Any]]:
    return [
        _function(
            READ_FILE,
            "Read a text file of the workspace. Gives the editor's unsaved text when the file is"
            " open. For long files, read a range with start_line and end_line (1-based,"
            " inclusive).",
            {
                "path": _PATH,
                "start_line": {"type": "integer", "minimum": 1, "description": "First line."},
                "end_line": {"type": "integer", "minimum": 1, "description": "Last line."},
            },
            ["path"],
        ),
        _function(
            LIST_DIRECTORY,
            "List a directory of the workspace, sorted; directories end with '/'.",
            {"path": {**_PATH, "default": "."}},
            [],
        ),
        _function(
            SEARCH_TEXT,
            "Search the text files under a path for a string (or a Python regular expression"
            " with regex=true). Returns 'file:line: text' lines, at most"
            f" {MAX_SEARCH_MATCHES}. Skips .git, node_modules, .venv and binary files.",
            {
                "pattern": {"type": "string", "description": "Text to find, case-sensitive."},
                "path": {**_PATH, "default": "."},
                "regex": {"type": "boolean", "default": False},
            },
            ["pattern"],
        ),
        _function(
            EDIT_FILE,
            "Replace old_text with new_text in a file. old_text must match the file exactly"
            " (whitespace and indentation included) and occur exactly once: include surrounding"
            " lines to make it unique. With an empty old_text, creates a new file holding"
            " new_text. The user is asked first.",
            {
                "path": _PATH,
                "old_text": {"type": "string", "description": "Exact text to replace."},
                "new_text": {"type": "string", "description": "Text to put in its place."},
            },
            ["path", "old_text", "new_text"],
        ),
        _function(
            RUN_COMMAND,
            "Run a shell command (sh -c) in the workspace folder and return its output (stdout"
            " and stderr together) and exit code. It gets no input. The user is asked first.",
            {
                "command": {"type": "string"},
                "timeout_seconds": {
                    "type": "number",
                    "description": "Stop the command after this many seconds"
                    f" (default {default_timeout_seconds:g}).",
                },
            },
            ["command"],
        ),
    ]
