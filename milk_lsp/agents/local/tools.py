"""The local agent's workspace tools: read, list, search and edit files, and run commands.

Everything stays inside the workspace folder, races included: every path argument is resolved
(symlinks and `..` included) and refused when it leaves the folder, and files are then opened,
listed, searched and written one component at a time from a descriptor of the folder
(`milk_lsp.workspace.confined`), so a symlink swapped in meanwhile cannot lead out. A regex
search runs in a thread with a time bound (the `regex` package's timeouts), so a
catastrophic pattern cannot stall the server. Edits and commands ask the user first
through the `AgentHost`; an edit of a file open in the editor goes through the editor, so its
unsaved text and undo history are kept. Tool failures, bad arguments included, come back as
error outcomes for the model to read, never as exceptions. `escalate_to_claude` is not here:
the local agent owns it. Running an approved command (process group, timeout, output cap) is
`milk_lsp.agents.local.commands`; the names and JSON schemas the model sees are
`milk_lsp.agents.local.tool_specs`, and edit_file's matching is `milk_lsp.agents.local.replace`.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import shlex
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from milk_lsp.agents.base import (
    AgentHost,
    EditRejected,
    PermissionOption,
    PermissionRequest,
    PermissionTimedOut,
)
from milk_lsp.agents.local.commands import CommandNotStarted, run_shell
from milk_lsp.agents.local.edit_change import EditChange
from milk_lsp.agents.local.judge.checks import broken_by_edit
from milk_lsp.agents.local.judge.edit_check import CheckRun
from milk_lsp.agents.local.reading import (
    BINARY_SNIFF_BYTES,
    Matcher,
    cap,
    list_entries,
    literal_matcher,
    read_text,
    regex_matcher,
)
from milk_lsp.agents.local.replace import (
    EditDoesNotApply,
    already_made,
    split_lines,
)
from milk_lsp.agents.local.reply.tool_arguments import BadArgument, ToolArguments, ToolFailed
from milk_lsp.agents.local.run_hints import module_run_hint
from milk_lsp.agents.local.symbols import symbol_line_range, symbols_work_for
from milk_lsp.agents.local.tool_specs import (
    EDIT_FILE,
    LIST_DIRECTORY,
    MAX_SEARCH_MATCHES,
    READ_FILE,
    RUN_COMMAND,
    SEARCH_TEXT,
    TOOL_ORDER,
    tool_specs,
)
from milk_lsp.sessions.model import Agent
from milk_lsp.workspace.confined import (
    ConfinedRoot,
    Parts,
    shown,
)
from milk_lsp.workspace.confined import OutsideWorkspace as OutsideWorkspace
from milk_lsp.workspace.edit_preview import FileEdit

logger = logging.getLogger(__name__)

MAX_LIST_ENTRIES = 1000
MAX_SEARCH_LINE_CHARS = 300
MAX_SEARCH_FILE_BYTES = 2_000_000
"""Bigger files are skipped by search_text: they are data or generated, rarely what is sought."""
SKIPPED_DIRS = frozenset(
    {".git", "node_modules", ".venv", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"}
)
MAX_COMMAND_TIMEOUT_SECONDS = 3600.0
SEARCH_TIME_LIMIT_SECONDS = 5.0
"""One search_text call's time: the walk stops (with what it found) once it is spent, and each
regex match gets what is left of it as its timeout. `regex` counts that timeout in CPU time,
so on a busy machine one match can last longer by the clock."""


@dataclass(frozen=True)
class ToolOutcome:
    """What a tool call returns to the model."""

    output: str
    is_error: bool = False
    denied: bool = False
    """The user refused permission; the call did nothing."""
    made_already: bool = False
    """edit_file: the edit was made already, inside the definition the request names:
    evidence that the change is the one asked for (a repeat then ends the turn as done)."""


def resolve_in_workspace(root: Path, path: str) -> Path:
    """The real path of `path` (relative to `root` unless absolute), refused outside `root`.

    Symlinks and `..` are resolved first, so neither can lead out of the workspace. The
    path need not exist. Only a check: the tools open what it names through
    `ConfinedRoot`, which holds at the moment of use too.
    """
    confined = ConfinedRoot(root)
    return confined.real_path(confined.resolve(path))


class _SearchEnd(enum.Enum):
    """How a search ended."""

    COMPLETE = "complete"
    CAPPED = "capped"
    OUT_OF_TIME = "out_of_time"


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
        focus: Sequence[str] = (),
        check_command: str | None = None,
    ) -> None:
        """`focus`: the names the user's request gives (functions, classes), which narrow an
        edit whose old_text occurs several times to the one inside them; `check_command`:
        `local.checkCommand`, run by `check_edits`."""
        self._confined = ConfinedRoot(root)
        self._focus = tuple(focus)
        self._check_command = (check_command or "").strip()
        self._unchecked: dict[Parts, None] = {}
        """Files edited since the last run of the check command, in order."""
        self._before: dict[Parts, str | None] = {}
        """Each edited file's text before the turn's first edit of it."""
        self._broken: dict[Parts, str] = {}
        """Files an edit left broken, and why; a later edit that fixes one removes it."""
        self._first_edit: Callable[[], Awaitable[None]] | None = None
        self._root = self._confined.path
        self._host = host
        self._command_timeout_seconds = command_timeout_seconds
        self._output_cap_chars = output_cap_chars
        self._handlers: dict[str, Callable[[str, ToolArguments], Awaitable[ToolOutcome]]] = {
            READ_FILE: self._read_file,
            LIST_DIRECTORY: self._list_directory,
            SEARCH_TEXT: self._search_text,
            EDIT_FILE: self._edit_file,
            RUN_COMMAND: self._run_command,
        }

    def before_first_edit(self, hook: Callable[[], Awaitable[None]]) -> None:
        """Run `hook` once, right before the turn's first edit writes (the project's check
        then sees the files as the turn found them: its baseline)."""
        self._first_edit = hook

    def specs(self) -> list[dict[str, Any]]:
        """The OpenAI `tools` entries for these tools.

        The same bytes for every workspace and session (the local model server caches the
        prompt prefix they are part of): nothing here depends on the folder or the turn.
        """
        return tool_specs(self._command_timeout_seconds)

    async def call(self, tool_call_id: str, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        """Run one tool call; every failure becomes an error outcome."""
        handler = self._handlers.get(name)
        if handler is None:
            known = ", ".join(TOOL_ORDER)
            return ToolOutcome(f"Unknown tool {name!r}. The tools are: {known}.", is_error=True)
        untrusted: object = arguments  # parsed from the model's JSON: any shape
        if not isinstance(untrusted, dict):
            return ToolOutcome(f"Bad arguments for {name}: expected a JSON object.", is_error=True)
        try:
            return await handler(tool_call_id, ToolArguments(arguments))
        except BadArgument as exc:
            return ToolOutcome(f"Bad arguments for {name}: {exc}", is_error=True)
        except (ToolFailed, EditDoesNotApply, ValueError) as exc:
            return ToolOutcome(str(exc), is_error=True)
        except OSError as exc:
            return ToolOutcome(f"{name} failed: {exc}", is_error=True)
        except Exception as exc:
            logger.exception("tool %s failed", name)
            return ToolOutcome(f"{name} failed unexpectedly: {exc!r}", is_error=True)

    # --- tools ------------------------------------------------------------------------

    async def _read_file(self, tool_call_id: str, args: ToolArguments) -> ToolOutcome:
        raw_path = args.text("path")
        start_line = args.integer("start_line", minimum=1)
        end_line = args.integer("end_line", minimum=1)
        if start_line is not None and end_line is not None and end_line < start_line:
            raise BadArgument("end_line must not be less than start_line")
        parts = await self._resolve(raw_path)
        where = shown(parts)
        text = await self._host.read_document(self._confined.real_path(parts))
        if text is None:
            text = await asyncio.to_thread(read_text, self._confined, parts, strict=False)
            if text is None:
                raise ToolFailed(f"File not found: {where}")
        if start_line is None and end_line is None:
            if not text:
                return ToolOutcome(f"({where} is empty)")
            return ToolOutcome(
                cap(text, self._output_cap_chars, "read further with start_line/end_line")
            )
        lines = split_lines(text)
        if not lines:
            return ToolOutcome(f"({where} is empty)")
        first = start_line or 1
        if first > len(lines):
            raise ToolFailed(f"start_line {first} is past the end of {where} ({len(lines)} lines)")
        last = min(end_line or len(lines), len(lines))
        body = "".join(lines[first - 1 : last])
        note = f"[{where}: lines {first}-{last} of {len(lines)}]"
        body = cap(body, self._output_cap_chars, "ask for fewer lines")
        separator = "" if body.endswith("\n") else "\n"
        return ToolOutcome(f"{body}{separator}{note}")

    async def _list_directory(self, tool_call_id: str, args: ToolArguments) -> ToolOutcome:
        parts = await self._resolve(args.text("path", default=".", allow_empty=True) or ".")
        where = shown(parts)
        entries = await asyncio.to_thread(list_entries, self._confined, parts)
        if not entries:
            return ToolOutcome(f"({where} is empty)")
        listing = "\n".join(entries[:MAX_LIST_ENTRIES])
        if len(entries) > MAX_LIST_ENTRIES:
            listing += f"\n[... {len(entries) - MAX_LIST_ENTRIES} more entries]"
        return ToolOutcome(cap(listing, self._output_cap_chars, "list a subdirectory"))

    async def _search_text(self, tool_call_id: str, args: ToolArguments) -> ToolOutcome:
        pattern = args.text("pattern", allow_empty=False, strip=False)
        raw_path = args.text("path", default=".", allow_empty=True) or "."
        use_regex = args.flag("regex", default=False)
        matcher = regex_matcher(pattern) if use_regex else literal_matcher(pattern)
        parts, note = await self._resolve(raw_path), ""
        if parts and not await asyncio.to_thread(self._confined.real_path(parts).exists):
            # a made-up path (a small model copies a spec's example): the search is still asked
            note = f"{raw_path} does not exist; milk searched the whole workspace instead.\n"
            parts = ()
        stop = threading.Event()
        try:
            found, end = await asyncio.to_thread(self._search, parts, pattern, matcher, stop)
        finally:
            stop.set()  # a cancelled search stops its thread too (checked at every line)
        limit = f"{SEARCH_TIME_LIMIT_SECONDS:g} s"
        if not found:
            if end is _SearchEnd.OUT_OF_TIME:
                raise ToolFailed(
                    f"search_text found nothing for {pattern!r} in {shown(parts)} within {limit}"
                    " and stopped; search a smaller path or use a simpler pattern."
                )
            return ToolOutcome(f"{note}No matches for {pattern!r} in {shown(parts)}.")
        listing = note + "\n".join(found)
        if end is _SearchEnd.CAPPED:
            listing += f"\n[stopped after {MAX_SEARCH_MATCHES} matches; narrow the search]"
        elif end is _SearchEnd.OUT_OF_TIME:
            listing += (
                f"\n[stopped after {limit}; more matches may exist: search a smaller path or"
                " use a simpler pattern]"
            )
        return ToolOutcome(cap(listing, self._output_cap_chars, "narrow the search"))

    async def _edit_file(self, tool_call_id: str, args: ToolArguments) -> ToolOutcome:
        raw_path = args.text("path")
        parts = await self._resolve(raw_path)
        old_text = args.text("old_text", default="", allow_empty=True, strip=False)
        new_text = args.text("new_text", allow_empty=True, strip=False)
        symbol = args.text("symbol", default="", allow_empty=True).strip()
        every = args.flag("replace_all", default=False)
        if old_text == new_text and old_text:
            raise BadArgument("old_text and new_text are the same; there is nothing to change")
        where = shown(parts)
        change = EditChange(old_text, new_text, symbol, every, self._focus)
        current, _ = await self._text_for_edit(parts)
        made = None if current is None else already_made(current, old_text, new_text)
        if made is not None and not symbol:
            named = self._named_around(where, current or "", made)
            inside = f", inside {named} as the request asks" if named else ""
            return ToolOutcome(
                f"{where} already has new_text (line {made}) and no longer has old_text: this"
                f" edit was made already{inside}; nothing to change.{self._still_broken(parts)}",
                made_already=bool(named),
            )
        try:
            replaced = await asyncio.to_thread(change.apply, current, where)
        except EditDoesNotApply:
            redone = await asyncio.to_thread(self._redone, parts, change, current, where)
            if redone is None:
                raise
            return ToolOutcome(redone + self._still_broken(parts))
        if current is None:
            description = f"Create {where} ({_count_lines(replaced.text)} lines)"
        else:
            description = f"Edit {where}: lines {replaced.first_line}-{replaced.last_line}" + (
                f" ({symbol})" if symbol else ""
            )
        edit = FileEdit(self._confined.real_path(parts), current, replaced.text)
        if not await self._ask(tool_call_id, EDIT_FILE, args.raw, description, (edit,)):
            return _denied(EDIT_FILE)
        # The path and the text may have changed while the user was deciding: the write goes
        # to the file the user was asked about, with the edit applied to what is there now.
        now = await self._resolve(raw_path)
        if now != parts:
            raise ToolFailed(
                f"{raw_path} now leads to {shown(now)}, not to {where} as when permission was"
                " asked; nothing was written."
            )
        if self._first_edit is not None and not self._before:
            hook, self._first_edit = self._first_edit, None
            await hook()
        current, in_editor = await self._text_for_edit(parts)
        replaced = await asyncio.to_thread(change.apply, current, where)
        self._before.setdefault(parts, current)
        verb = "Created" if current is None else "Edited"
        written = await self._write(parts, replaced.text, in_editor)
        if isinstance(written, ToolOutcome):
            return written
        said = f"{verb} {where}{written}" + (
            "" if current is None else f": lines {replaced.first_line}-{replaced.last_line}"
        )
        if replaced.note:
            said += f" (matched {replaced.note})"
        self._unchecked[parts] = None
        problem = broken_by_edit(where, self._before[parts], replaced.text)
        if problem is None:
            self._broken.pop(parts, None)
            return ToolOutcome(said + ".")
        self._broken[parts] = problem
        return ToolOutcome(
            f"{said}. But {where} is broken now: {problem}. Fix it with edit_file (read_file"
            " shows the file as it is now); milk puts the file back as it was if it stays broken."
        )

    def _named_around(self, where: str, text: str, line: int) -> str | None:
        """The definition the request names that holds `line` of the file, if any (in
        every language the code package parses)."""
        if not symbols_work_for(where):
            return None
        for name in self._focus:
            lines = symbol_line_range(text, name, where)
            if lines is not None and lines[0] <= line <= lines[1]:
                return name
        return None

    async def text_of(self, path: str) -> str | None:
        """A file's current text as read_file sees it (the editor's unsaved text first);
        None when it is missing, outside the folder or not text."""
        try:
            parts = await self._resolve(path)
            text = await self._host.read_document(self._confined.real_path(parts))
            if text is None:
                text = await asyncio.to_thread(read_text, self._confined, parts, strict=False)
        except (OSError, ValueError, ToolFailed):
            return None
        return text

    def pending_check(self) -> str | None:
        """The `local.checkCommand` to run now (its `{files}` filled in with the files
        edited since it last ran, quoted for the shell), None when none is set or nothing
        new was edited."""
        if not self._check_command or not self._unchecked:
            return None
        files = " ".join(shlex.quote(shown(parts)) for parts in self._unchecked)
        return self._check_command.replace("{files}", files)

    def edited_files(self) -> list[str]:
        """The files this turn's edits wrote, in order."""
        return [shown(parts) for parts in self._before]

    def texts_before(self) -> list[tuple[str, str | None]]:
        """Each file this turn's edits wrote, with its text before the first (None: created)."""
        return [(shown(parts), text) for parts, text in self._before.items()]

    async def check_edits(self, tool_call_id: str) -> CheckRun | None:
        """Run `pending_check()`, asking the user first as `run_command` does."""
        command = self.pending_check()
        if command is None:
            return None
        self._unchecked.clear()
        arguments = {"command": command}
        description = f"Run the check after the local edits, in {self._root}: {command}"
        if not await self._ask(tool_call_id, RUN_COMMAND, arguments, description):
            return CheckRun(command, "The user did not allow the check.", True, True)
        try:
            result = await run_shell(
                command, self._root, self._command_timeout_seconds, self._output_cap_chars
            )
        except CommandNotStarted as exc:
            return CheckRun(command, str(exc), failed=True)
        text = (result.output or "(no output)").rstrip()
        return CheckRun(command, f"{text}\n[{result.status}]", failed=result.failed)

    async def ask_to_run(self, tool_call_id: str, command: str, description: str) -> bool:
        """Ask the user, as `run_command` does, whether milk may run `command` (a check it
        runs itself, with no shell)."""
        return await self._ask(tool_call_id, RUN_COMMAND, {"command": command}, description)

    def _still_broken(self, parts: Parts) -> str:
        problem = self._broken.get(parts)
        return f" But {shown(parts)} is still broken: {problem}." if problem else ""

    def _redone(
        self, parts: Parts, change: EditChange, current: str | None, where: str
    ) -> str | None:
        """For an edit that no longer applies because this turn's earlier edit changed that
        very text (small models redo an edit, or a variant of it): what the file reads there
        now, as no failure; None when that is not what happened."""
        before = self._before.get(parts)
        if current is None or before is None or before == current:
            return None
        try:
            was = change.apply(before, where)
        except EditDoesNotApply:
            return None
        lines = split_lines(current)
        first = max(1, was.first_line - 2)
        last = min(len(lines), was.last_line + 2)
        region = "".join(lines[first - 1 : last]).rstrip("\n")
        return (
            f"Nothing changed: old_text is text this turn's earlier edit of {where} already"
            f" replaced. Lines {first}-{last} now read:\n{region}\nIf the requested change"
            " is made, say so in one sentence; otherwise edit the text as it is now."
        )

    def broken_files(self) -> dict[str, str]:
        """Files a local edit of this turn left broken (see `checks`), with why."""
        return {shown(parts): problem for parts, problem in self._broken.items()}

    async def restore_broken(self) -> list[str]:
        """Put every file a local edit left broken back as it was before the turn's first
        edit of it (a created file is removed); the files put back."""
        return await self._put_back(list(self._broken))

    async def restore_edited(self) -> list[str]:
        """Put every file this turn's edits wrote back as it was before the turn (a created
        file is removed): for edits that did not make the change asked. The files put back."""
        return await self._put_back(list(self._before))

    async def _put_back(self, files: list[Parts]) -> list[str]:
        restored: list[str] = []
        for parts in files:
            before = self._before.get(parts)
            try:
                if before is None:
                    await asyncio.to_thread(self._confined.remove_file, parts)
                else:
                    _, in_editor = await self._text_for_edit(parts)
                    written = await self._write(parts, before, in_editor)
                    if isinstance(written, ToolOutcome):
                        continue
            except (OSError, ValueError, ToolFailed):
                logger.warning("could not put %s back", shown(parts), exc_info=True)
                continue
            self._broken.pop(parts, None)
            restored.append(shown(parts))
        return restored

    async def _write(self, parts: Parts, text: str, in_editor: bool) -> str | ToolOutcome:
        """Write through the editor when it has the file (" in the editor (not saved
        yet)"), else on disk (""); a rejection by the editor is the tool's outcome."""
        if in_editor:
            try:
                if await self._host.apply_edit(self._confined.real_path(parts), text):
                    return " in the editor (not saved yet)"
            except EditRejected as exc:
                return ToolOutcome(
                    f"The editor rejected the edit of {shown(parts)}: {exc}", is_error=True
                )
        await asyncio.to_thread(self._confined.atomic_write, parts, text.encode("utf-8"))
        return ""

    async def _run_command(self, tool_call_id: str, args: ToolArguments) -> ToolOutcome:
        command = args.text("command")
        timeout = args.number("timeout_seconds")
        if timeout is None:
            timeout = self._command_timeout_seconds
        elif timeout <= 0:
            raise BadArgument("timeout_seconds must be positive")
        timeout = min(timeout, MAX_COMMAND_TIMEOUT_SECONDS)
        description = f"Run in {self._root}: {command}"
        if not await self._ask(tool_call_id, RUN_COMMAND, args.raw, description):
            return _denied(RUN_COMMAND)
        try:
            result = await run_shell(command, self._root, timeout, self._output_cap_chars)
        except CommandNotStarted as exc:
            raise ToolFailed(str(exc)) from exc
        text = f"{(result.output or '(no output)').rstrip()}\n[{result.status}]"
        hint = result.failed and module_run_hint(command, result.output, self._is_package)
        return ToolOutcome(f"{text}\n{hint}" if hint else text, is_error=result.failed)

    def _is_package(self, folder: str) -> bool:
        """Whether the workspace folder `folder` (identifiers only) holds an `__init__.py`."""
        return (self._root / folder / "__init__.py").is_file()

    # --- helpers ----------------------------------------------------------------------

    async def _resolve(self, path: str) -> Parts:
        return await asyncio.to_thread(self._confined.resolve, path)

    async def _ask(
        self,
        tool_call_id: str,
        tool: str,
        arguments: dict[str, Any],
        description: str,
        edits: tuple[FileEdit, ...] = (),
    ) -> bool:
        try:
            answer = await self._host.request_permission(
                PermissionRequest(
                    agent=Agent.LOCAL,
                    tool_call_id=tool_call_id,
                    tool=tool,
                    input=arguments,
                    description=description,
                    edits=edits,
                )
            )
        except PermissionTimedOut:
            return False  # the host told the user; no answer is a deny
        return answer in (PermissionOption.ALLOW_ONCE, PermissionOption.ALLOW_SESSION)

    async def _text_for_edit(self, parts: Parts) -> tuple[str | None, bool]:
        """The file's current text (None when it does not exist) and whether the editor has it."""
        text = await self._host.read_document(self._confined.real_path(parts))
        if text is not None:
            return text, True
        return await asyncio.to_thread(read_text, self._confined, parts, strict=True), False

    def _search(
        self, parts: Parts, pattern: str, matcher: Matcher, stop: threading.Event
    ) -> tuple[list[str], _SearchEnd]:
        """Matching `file:line: text` lines under `parts`, and how the search ended."""
        deadline = time.monotonic() + SEARCH_TIME_LIMIT_SECONDS
        found: list[str] = []
        try:
            files = self._confined.walk(parts, stop, SKIPPED_DIRS, MAX_SEARCH_FILE_BYTES)
            for file, data in files:
                if time.monotonic() >= deadline:
                    return found, _SearchEnd.OUT_OF_TIME
                if b"\x00" in data[:BINARY_SNIFF_BYTES]:
                    continue
                for number, line in enumerate(split_lines(data.decode("utf-8", "replace")), 1):
                    left = deadline - time.monotonic()
                    if left <= 0 or stop.is_set():  # stopped: the caller is gone
                        return found, _SearchEnd.OUT_OF_TIME
                    try:
                        matched = matcher(line, left)
                    except TimeoutError as exc:
                        if found:
                            return found, _SearchEnd.OUT_OF_TIME
                        raise ToolFailed(
                            f"search_text stopped: the pattern {pattern!r} took too long to"
                            f" match (over {SEARCH_TIME_LIMIT_SECONDS:g} s, at {shown(file)} line"
                            f" {number}). Use a simpler pattern or a literal search"
                            " (regex=false)."
                        ) from exc
                    if matched:
                        text = line.strip()[:MAX_SEARCH_LINE_CHARS]
                        found.append(f"{shown(file)}:{number}: {text}")
                        if len(found) >= MAX_SEARCH_MATCHES:
                            return found, _SearchEnd.CAPPED
        except FileNotFoundError as exc:
            raise ToolFailed(f"Path not found: {shown(parts)}") from exc
        return found, _SearchEnd.COMPLETE


def _denied(tool: str) -> ToolOutcome:
    return ToolOutcome(f"The user denied {tool}.", is_error=True, denied=True)


def _count_lines(text: str) -> int:
    return len(split_lines(text))
