"""What a file-changing tool call would do, as whole texts before and after.

A permission question for an edit shows the user the change itself, not the tool's JSON:
the local `edit_file` computes its own texts; Claude's `Edit`, `MultiEdit`, `Write` and
`NotebookEdit` are applied here to the current text (the editor's buffer when it has the
file) exactly as Claude Code would apply them. Only files inside the workspace are read.
"""

from __future__ import annotations

import asyncio
import difflib
import json
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from milk_lsp.workspace.confined import read_text_inside
from milk_lsp.workspace.paths import shown_path, uri_to_path

PREVIEW_MAX_CHARS = 200_000
"""Each side of an edit is cut to this many characters, a closing line saying how much was
cut included."""

DIFF_MESSAGE_MAX_LINES = 40
"""A unified diff in a `window/showMessageRequest` message is cut here."""

READ_MAX_BYTES = 4 * 1024 * 1024
"""Files larger than this are not read for a preview (the question shows the input only)."""

DIFF_COUNT_MAX_LINES = 20_000
"""Above this many lines, added/removed are counted as a multiset difference."""

CLAUDE_EDIT_TOOLS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})


@dataclass(frozen=True)
class FileEdit:
    """One file a tool would change: `before` None for a new file, `after` None for a
    deleted one."""

    path: Path
    before: str | None
    after: str | None


ReadText = Callable[[Path], Awaitable[str | None]]
"""The current text of a workspace file (the editor's buffer, else the disk), None if absent."""


async def claude_edits(
    tool: str, tool_input: dict[str, Any], workspace: Path, read: ReadText
) -> list[FileEdit]:
    """The file edit a Claude file tool asks for, or none when it cannot be previewed (a
    path outside the workspace, an unreadable or binary file, text the edit does not find)."""
    if tool not in CLAUDE_EDIT_TOOLS:
        return []
    raw_path = tool_input.get("notebook_path" if tool == "NotebookEdit" else "file_path")
    if not isinstance(raw_path, str) or not raw_path:
        return []
    path = _inside(workspace, raw_path)
    if path is None:
        return []
    before = await read(path)
    if before is None and await asyncio.to_thread(path.exists):
        return []  # there, but too large or not text: the question shows the input only
    after = _apply(tool, tool_input, before)
    if after is None or after == before:
        return []
    return [FileEdit(path, before, after)]


def _inside(workspace: Path, raw_path: str) -> Path | None:
    root = workspace.resolve()
    candidate = Path(raw_path)
    if not candidate.is_absolute():
        candidate = root / candidate
    try:
        resolved = candidate.resolve()
    except (OSError, RuntimeError):
        return None
    return resolved if resolved.is_relative_to(root) else None


def _apply(tool: str, tool_input: dict[str, Any], before: str | None) -> str | None:
    if tool == "Write":
        content = tool_input.get("content")
        return content if isinstance(content, str) else None
    if tool == "NotebookEdit":
        return _notebook_edit(tool_input, before)
    if before is None:
        return None
    if tool == "Edit":
        return _replace(before, tool_input)
    edits = tool_input.get("edits")
    if not isinstance(edits, list):
        return None
    text: str | None = before
    for edit in edits:
        if text is None or not isinstance(edit, dict):
            return None
        text = _replace(text, edit)
    return text


def _replace(text: str, edit: dict[str, Any]) -> str | None:
    old, new = edit.get("old_string"), edit.get("new_string")
    if not isinstance(old, str) or not isinstance(new, str) or not old or old not in text:
        return None
    if edit.get("replace_all") is True:
        return text.replace(old, new)
    return text.replace(old, new, 1)


def _notebook_edit(tool_input: dict[str, Any], before: str | None) -> str | None:
    """Claude Code's NotebookEdit on the notebook's JSON: replace, insert after, or delete
    the cell with `cell_id` (insert with no id goes first)."""
    if before is None:
        return None
    try:
        notebook = json.loads(before)
    except ValueError:
        return None
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        return None
    mode = tool_input.get("edit_mode") or "replace"
    cell_id = tool_input.get("cell_id")
    source = tool_input.get("new_source")
    index = next(
        (i for i, cell in enumerate(cells) if isinstance(cell, dict) and cell.get("id") == cell_id),
        None,
    )
    if mode == "delete":
        if index is None:
            return None
        del cells[index]
    elif not isinstance(source, str):
        return None
    elif mode == "insert":
        cell_type = tool_input.get("cell_type") or "code"
        cell: dict[str, Any] = {"cell_type": cell_type, "metadata": {}, "source": source}
        if cell_type == "code":
            cell.update(execution_count=None, outputs=[])
        cells.insert(0 if index is None else index + 1, cell)
    else:
        if index is None:
            return None
        cells[index]["source"] = source
        if tool_input.get("cell_type"):
            cells[index]["cell_type"] = tool_input["cell_type"]
    return json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"


def capped(text: str | None, limit: int = PREVIEW_MAX_CHARS) -> tuple[str | None, bool]:
    """The text in at most `limit` characters: when longer, its start and a closing line
    saying how much was cut, that line counted in the limit (a limit too small for the line:
    the first `limit` characters)."""
    if text is None or len(text) <= limit:
        return text, False
    room = len(_cut_note(len(text)))  # the longest the note can be: it never says more
    if room >= limit:
        return text[:limit], True
    kept = limit - room
    while len(_cut_note(len(text) - kept - 1)) < limit - kept:  # a shorter number: keep more
        kept += 1
    return text[:kept] + _cut_note(len(text) - kept), True


def _cut_note(rest: int) -> str:
    return f"\n… (cut: {rest} more characters)\n"


def unified_diff(edit: FileEdit, label: str, max_lines: int = DIFF_MESSAGE_MAX_LINES) -> str:
    """A short unified diff of one edit, for clients that can only show a message."""
    before = (edit.before or "").splitlines()
    after = (edit.after or "").splitlines()
    lines = list(
        difflib.unified_diff(
            before,
            after,
            fromfile="/dev/null" if edit.before is None else _side("a", label),
            tofile="/dev/null" if edit.after is None else _side("b", label),
            lineterm="",
            n=2,
        )
    )
    if len(lines) > max_lines:
        lines = [*lines[:max_lines], f"… ({len(lines) - max_lines} more diff lines)"]
    return "\n".join(lines)


def _side(prefix: str, label: str) -> str:
    """`a/calc.py`; an absolute path (a file outside the workspace) as it is, not `a//…`."""
    return label if label.startswith("/") else f"{prefix}/{label}"


def wire_edit_diff(edit: dict[str, Any], workspace: str | Path | None = None) -> str:
    """The unified diff of one `edits` entry of a permission question (`{uri, before?,
    after?}`), for clients that show text: the standard door's transcript, the terminal.
    Its headers name the file as git does, relative to `workspace` (`a/calc.py`); a file
    outside it keeps its absolute path."""
    uri = str(edit.get("uri", ""))
    path = uri_to_path(uri)
    label = shown_path(path, workspace) if path is not None else uri
    before, after = edit.get("before"), edit.get("after")
    diff = unified_diff(
        FileEdit(
            Path(label),
            before if isinstance(before, str) else None,
            after if isinstance(after, str) else None,
        ),
        label,
    )
    return diff or f"{label}: no textual change"


def line_counts(before: str | None, after: str | None) -> tuple[int, int]:
    """Lines added and removed between two texts (a created file adds all its lines); a
    multiset count for long texts, where a real diff could take seconds."""
    added = removed = 0
    old = (before or "").splitlines()
    new = (after or "").splitlines()
    if len(old) + len(new) > DIFF_COUNT_MAX_LINES:
        old_count, new_count = Counter(old), Counter(new)
        return sum((new_count - old_count).values()), sum((old_count - new_count).values())
    for line in difflib.unified_diff(old, new, lineterm="", n=0):
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed


async def read_limited(workspace: Path, path: Path) -> str | None:
    """A workspace file's text for a preview (read confined, no symlink followed); None
    when absent, outside, too large or not text."""
    text = await asyncio.to_thread(read_text_inside, workspace, path, READ_MAX_BYTES)
    return None if text is None or "\0" in text else text
