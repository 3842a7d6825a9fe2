"""Workspace folders and attachments: URIs to paths, and the text of what the user attached."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import suppress
from pathlib import Path
from urllib.parse import unquote, urlparse

from milk_lsp.wire import ContextItem
from milk_lsp.workspace.confined import read_text_inside


def uri_to_path(uri: str) -> Path | None:
    """A `file://` URI (or a bare absolute path) as a path; None for other schemes."""
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        return Path(unquote(parsed.path))
    if parsed.scheme == "" and uri.startswith("/"):
        return Path(uri)
    return None


def path_to_uri(path: str) -> str:
    return Path(path).as_uri()


def shown_path(path: str | Path, workspace: str | Path | None) -> str:
    """A path as the user knows it: relative to the workspace folder when inside it."""
    if workspace is not None and Path(path).is_relative_to(workspace):
        return Path(path).relative_to(workspace).as_posix()
    return str(path)


def shown_uri(uri: str, workspace: str | Path | None) -> str:
    """A document URI as the user knows it (`shown_path`; other schemes as they are)."""
    path = uri_to_path(uri)
    return uri if path is None else shown_path(path, workspace)


def fill_attachments(
    items: Sequence[ContextItem],
    workspace: Path,
    open_text: Callable[[Path], str | None],
) -> list[ContextItem]:
    """Attachments without text get the editor's text, or the file's (inside the workspace
    only), cut to their range."""
    filled = []
    for item in items:
        if item.text is None:
            text = _attached_text(item, workspace, open_text)
            if text is not None and item.range is not None:
                text = _slice_range(text, item)
            item = item.model_copy(update={"text": text})
        filled.append(item)
    return filled


def _attached_text(
    item: ContextItem, workspace: Path, open_text: Callable[[Path], str | None]
) -> str | None:
    path = uri_to_path(item.uri)
    if path is None:
        return None
    text = open_text(path)
    if text is None:
        with suppress(OSError, UnicodeDecodeError):  # OSError: a name too long, say
            text = read_text_inside(workspace, path)
    return text


def _slice_range(text: str, item: ContextItem) -> str:
    """The text of a selection (LSP positions; the end is exclusive)."""
    assert item.range is not None
    lines = text.splitlines(keepends=True)
    start, end = item.range.start, item.range.end
    if start.line >= len(lines):
        return ""
    if start.line == end.line:
        return lines[start.line][start.character : end.character]
    picked = lines[start.line : end.line + 1]
    picked[0] = picked[0][start.character :]
    if end.line < len(lines):
        picked[-1] = picked[-1][: end.character]
    return "".join(picked)
