"""Read first, by construction: the code a request names goes into the turn before the
model's first request, as an attachment does.

A small model asked to change a file guesses the text it edits (`def _now(self):` for
`def _now() -> dt.datetime:`) instead of reading it, and a failed edit's hint rarely rescues
it. So before the first model request milk reads what the request names itself: a file it
names by path (whole when small; else the regions of the names the request gives), or the
one file that defines a name it gives (that definition's lines). The model then copies from
text it has in front of it. What milk read is shown as its own `read_file` calls, so the
user sees what the model was given.
"""

from __future__ import annotations

import ast
import logging
import re
import uuid
from dataclasses import dataclass
from typing import Protocol

from milk_lsp.agents.base import ToolCallEvent, ToolResultEvent, ToolStatus
from milk_lsp.agents.local.judge.asked import asked
from milk_lsp.agents.local.replace import EditDoesNotApply, split_lines
from milk_lsp.agents.local.symbols import find_symbol
from milk_lsp.agents.local.tool_specs import READ_FILE
from milk_lsp.text import fence_for
from milk_lsp.workspace.index import WorkspaceIndex

logger = logging.getLogger(__name__)

WHOLE_FILE_CHARS = 9000
"""A named file up to this size goes in whole (about 2,500 tokens); a bigger one by regions."""
REGION_CONTEXT_LINES = 2
"""Lines shown before and after a definition's own."""
REGION_MAX_LINES = 120
READ_FIRST_FILES = 2
READ_FIRST_CHARS = 14000
"""All that read-first adds to a turn, at most (the local model's context is small)."""
READ_FIRST_LEAD = "milk read the code the request names (its current text; copy old_text from it):"


class FileTexts(Protocol):
    """Where milk reads a file's current text (`tools.WorkspaceTools`: the editor's unsaved
    text first)."""

    async def text_of(self, path: str) -> str | None: ...


@dataclass(frozen=True)
class ReadFirst:
    """What milk read for the turn: the text for the model and the calls to show."""

    text: str
    events: tuple[ToolCallEvent | ToolResultEvent, ...]
    paths: tuple[str, ...]


@dataclass(frozen=True)
class _Piece:
    path: str
    arguments: dict[str, object]
    label: str
    body: str


_PATHLIKE = re.compile(r"/|\.[A-Za-z]{1,4}\b")
"""A token naming a file (`slugify/slugify.py`): its words are no names to change."""
_WORD = re.compile(r"[A-Za-z_][\w.]*\w|[A-Za-z_]")


_QUOTED = re.compile(r'"([^"\n]{3,120})"|(?<![\w\'])\'([^\'\n]{3,120})\'(?!\w)')


def quoted_texts(request: str) -> list[str]:
    """The texts the request quotes ("Slug string"), in its order: where a file has one,
    that line is what the request is about (the new text it quotes is not in the file)."""
    found = (first or second for first, second in _QUOTED.findall(request))
    return list(dict.fromkeys(text for text in found if text.strip()))


def focus_names(request: str, index: WorkspaceIndex) -> list[str]:
    """The names the request gives that this workspace defines, in the order it gives
    them: the definitions it names (`asked`, in any language), then any word a file here
    defines."""
    names = [name.split(".")[-1].removesuffix("()") for name in asked(request, index).names]
    words = " ".join(token for token in request.split() if not _PATHLIKE.search(token))
    names += [
        word
        for word in _WORD.findall(words)
        if (len(word) >= 5 or not word.islower()) and index.has_definition(word)
    ]  # a short plain word ("to", "of") that some file defines is no name the request gives
    return list(dict.fromkeys(name for name in names if index.has_definition(name)))


async def read_first(
    request: str,
    index: WorkspaceIndex,
    tools: FileTexts,
    *,
    lead: str = READ_FIRST_LEAD,
    max_chars: int = READ_FIRST_CHARS,
    id_prefix: str = "milk-read",
) -> ReadFirst | None:
    """Read the files and definitions the change request `request` names (None when it
    names none that exist): the lines of the names it gives in the file it names (or, with
    no path, in the one file defining a name); a named file without them whole when small.
    `lead` opens the text for the model, `max_chars` bounds what is read, `id_prefix` starts
    the calls' ids. milk's own look reads a question's definitions so (`milk-look`)."""
    names = focus_names(request, index)
    quoted = quoted_texts(request)
    named_files = list(asked(request, index).files)
    files = list(dict.fromkeys(named_files))[:READ_FIRST_FILES]
    if not files:
        for name in names:
            definers = index.definers(name, limit=2)
            if len(definers) == 1 and definers[0] not in files:
                files.append(definers[0])
        files = files[:READ_FIRST_FILES]
    pieces: list[_Piece] = []
    for path in files:
        text = await tools.text_of(path)
        if text is None:
            continue
        pieces += _pieces(path, text, names, quoted, whole=path in named_files)
    used, kept = 0, []
    for piece in pieces:
        used += len(piece.body)
        if used > max_chars:
            break
        kept.append(piece)
    if not kept:
        return None
    blocks = []
    for piece in kept:
        fence = fence_for(piece.body)
        blocks.append(f"{piece.label}:\n{fence}\n{piece.body}\n{fence}")
    paths = tuple(dict.fromkeys(piece.path for piece in kept))
    return ReadFirst("\n\n".join([lead, *blocks]), _shown_calls(kept, paths, id_prefix), paths)


def _shown_calls(
    kept: list[_Piece], paths: tuple[str, ...], id_prefix: str
) -> tuple[ToolCallEvent | ToolResultEvent, ...]:
    """One `read_file` call per file milk read, as the user sees it: a file read in several
    regions is one call naming its `lines` ("4-12, 40-44"), its result each region under
    its lines, rather than a row per region."""
    prefix = f"{id_prefix}-{uuid.uuid4().hex[:8]}"
    events: list[ToolCallEvent | ToolResultEvent] = []
    for number, path in enumerate(paths):
        of_file = [piece for piece in kept if piece.path == path]
        arguments, body = of_file[0].arguments, of_file[0].body
        if len(of_file) > 1:
            spans = [
                f"{piece.arguments['start_line']}-{piece.arguments['end_line']}"
                for piece in of_file
            ]
            arguments = {"path": path, "lines": ", ".join(spans)}
            body = "\n\n".join(
                f"lines {span}:\n{piece.body}" for span, piece in zip(spans, of_file, strict=True)
            )
        call_id = f"{prefix}-{number}"
        events.append(ToolCallEvent(call_id, READ_FILE, arguments, ToolStatus.COMPLETED))
        events.append(ToolResultEvent(call_id, body, False))
    return tuple(events)


def _pieces(
    path: str, text: str, names: list[str], quoted: list[str], *, whole: bool
) -> list[_Piece]:
    """The lines of the names the file defines and of the texts the request quotes (a small
    model edits the right place more often when it sees only that; a module-level name
    brings the lines that use it, for a rename), else the whole file when wanted and not
    large."""
    lines = split_lines(text)
    if path.endswith((".py", ".pyi")):
        ranges = _ranges(text, lines, names)
    else:
        ranges = _code_ranges(path, text, lines, names)
    for number, line in enumerate(lines, 1):
        if any(literal in line for literal in quoted):
            ranges.append((max(1, number - 1), min(len(lines), number + 1)))
    spans = _merged(ranges)
    if not spans:
        if whole and len(text) <= WHOLE_FILE_CHARS:
            label = f"{path} ({len(lines)} lines)"
            return [_Piece(path, {"path": path}, label, text.rstrip("\n"))]
        return []
    pieces = []
    for first, last in spans:
        body = "".join(lines[first - 1 : last]).rstrip("\n")
        label = f"{path}, lines {first}-{last} of {len(lines)}"
        arguments: dict[str, object] = {"path": path, "start_line": first, "end_line": last}
        pieces.append(_Piece(path, arguments, label, body))
    return pieces


def _ranges(text: str, lines: list[str], names: list[str]) -> list[tuple[int, int]]:
    """Line ranges: each named definition (two lines around), and for a module-level name
    each line that uses it (one line around)."""
    ranges: list[tuple[int, int]] = []
    for name in dict.fromkeys(names):
        try:
            span = find_symbol(text, name, "the file")
        except EditDoesNotApply:
            continue
        first = max(1, span.first_line - REGION_CONTEXT_LINES)
        last = min(len(lines), span.last_line + REGION_CONTEXT_LINES, first + REGION_MAX_LINES - 1)
        ranges.append((first, last))
        if span.kind == "assignment":
            for number in _lines_using(text, lines, name):
                ranges.append((max(1, number - 1), min(len(lines), number + 1)))
    return ranges


def _code_ranges(path: str, text: str, lines: list[str], names: list[str]) -> list[tuple[int, int]]:
    """`_ranges` for a file of another language the code package parses (JavaScript, Go,
    Rust, …): each named definition (`Class.method` by its container too), and for a
    module-level constant or variable each line that names it."""
    from milk_lsp.code import definitions, language_for  # off start-up

    language = language_for(path)
    if language is None or not names:
        return []
    found = definitions(text, language)
    ranges: list[tuple[int, int]] = []
    for name in dict.fromkeys(names):
        *owner, bare = name.removesuffix("()").split(".")
        for definition in found:
            if definition.name != bare or (owner and definition.container != owner[-1]):
                continue
            first = max(1, definition.first_line - REGION_CONTEXT_LINES)
            last = min(
                len(lines),
                definition.last_line + REGION_CONTEXT_LINES,
                first + REGION_MAX_LINES - 1,
            )
            ranges.append((first, last))
            if definition.kind in ("constant", "variable"):
                word = re.compile(rf"(?<![\w.$]){re.escape(bare)}(?![\w$])")
                ranges += [
                    (max(1, number - 1), min(len(lines), number + 1))
                    for number, line in enumerate(lines, 1)
                    if word.search(line)
                ]
    return ranges


def _lines_using(text: str, lines: list[str], name: str) -> list[int]:
    """The lines whose code names `name` (Python's `ast`: not the prose of a docstring or a
    comment that has the word, "decimal suffixes (kB, MB)" for `suffixes`); by the word
    when the file does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        word = re.compile(rf"(?<![\w.]){re.escape(name)}(?!\w)")
        return [number for number, line in enumerate(lines, 1) if word.search(line)]
    found = {
        node.lineno
        for node in ast.walk(tree)
        if (isinstance(node, ast.Name) and node.id == name)
        or (isinstance(node, ast.Global) and name in node.names)
    }
    return sorted(found)


def _merged(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for first, last in sorted(ranges):
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    return merged
