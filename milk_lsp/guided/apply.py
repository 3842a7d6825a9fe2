"""Edits of one checked shape (path, exact old text, new text) applied and verified by milk:
through the workspace tools (the user's permission for each, the parse check after each),
then the project's own check before and after (`project_check`) and `local.checkCommand`.
A failed check puts the files back and says why, mechanically. Shared by the guided local
turn (the model's edits) and the advisor (Claude's plan steps and step answers), so an edit
is judged the same way whoever wrote it.

A rename the model began is finished by milk (`renamed`, `rest_of_rename`). A small model
asked to rename a definition "with all its uses" renames the definition and stops (google/
uuid's `xtob`: one edit, then `go vet` says "undeclared name: xtob"; the repair got the same
edit back). Which name becomes which is in the model's own edit: its new text is its old
text with one identifier replaced by another. The other places are mechanical: each line
still holding the old name as a whole identifier, when there are few (`USES_MAX`), gets the
same replacement, as an edit of its own through the tools (the user's permission, each file
parsed after it, the project's check after all). No word of the request is read.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from milk_lsp.agents.base import (
    AgentEvent,
    LocalGaveUp,
    LocalSignal,
    NoticeEvent,
    ToolCallEvent,
    ToolResultEvent,
    ToolStatus,
)
from milk_lsp.agents.local.judge.checks import broken_by_edit
from milk_lsp.agents.local.judge.edit_intent import (
    edits_elsewhere,
    line_rank,
    unmade_change,
    unwritten_member,
)
from milk_lsp.agents.local.replace import EditDoesNotApply, replace_once
from milk_lsp.agents.local.tool_specs import EDIT_FILE
from milk_lsp.agents.local.tools import WorkspaceTools
from milk_lsp.guided.locate import IDENTIFIER, USES_MAX, Locator, whole_word
from milk_lsp.guided.project_check import CheckOutcome, ProjectCheck, run_check
from milk_lsp.guided.shape import Edit
from milk_lsp.text import blank_space_only

MAX_APPLIED = 8
"""Edits of one reply applied at most."""


@dataclass
class Applied:
    """How applying went: the mechanical problems (empty: every edit applied and checked),
    the hand-off signal they amount to, and whether the user denied an edit."""

    problems: list[str] = field(default_factory=list)
    signal: LocalSignal = LocalSignal.FAILED_EDIT
    denied: bool = False
    places: list[tuple[str, int]] = field(default_factory=list)
    """Where what the request writes stands, when the edits missed it (`held_places`)."""


PLACES_SHOWN = 6
"""Lines a repair request shows where the request's texts stand."""


def held_places(
    request: str, edited: dict[str, tuple[str | None, str | None]], names: Sequence[str] = ()
) -> list[tuple[str, int]]:
    """Where, in the edited files as they were, what the request writes stands, best first
    (`edit_intent.line_rank`). Shown in the repair request of edits that missed the place:
    the same one-line edit came back twice, greedily, when the repair said only where the
    edit was not. The first line of a definition the request names comes first: cross-env's
    "a JSDoc comment for parseCommand" was put twice above the function calling it."""
    from milk_lsp.code import definitions, language_for  # off start-up

    rank = line_rank(request, names)
    heads = {
        (path, found.first_line)
        for path, (before, _) in edited.items()
        if before and (language := language_for(path)) is not None
        for found in definitions(before, language)
        if found.name in names
    }
    ranked = [
        (-3 if (path, number) in heads else -rank(line), path, number)
        for path, (before, _) in edited.items()
        for number, line in enumerate((before or "").split("\n"), 1)
    ]
    best = sorted(ranked, key=lambda place: place[0])  # stable: in file order within a rank
    return [(path, number) for score, path, number in best if score < 0][:PLACES_SHOWN]


REPEAT_LINES = 2
"""An added line standing this close to its edit's old text is there already."""
_BLANKS = re.compile(r"\s+")


def crossed_edits(edits: Sequence[Edit], texts: Mapping[str, str | None]) -> list[str]:
    """What makes a reply's edits other than one batch: they are copied from the files as
    milk showed them, so two changing the same lines, or one adding a line its file holds
    right there, leave a file unlike what either says. dotenv's quiet-option got six edits:
    the first and the last on one line, `if (process.env.DOTENV_CONFIG_ENCODING != null) {`
    (the last then replaced the first's result), five copying the line below their own.
    `texts`: each edited file's text before; the problems in words, empty when none."""
    problems: list[str] = []
    spans: dict[str, list[tuple[int, int]]] = {}
    for edit in edits:
        text = texts.get(edit.path)
        if not text or not edit.old_text or text.count(edit.old_text) != 1:
            continue  # a new file, or an old text the edit tool itself narrows or refuses
        start = text.find(edit.old_text)
        end = start + len(edit.old_text)
        if any(start < e and s < end for s, e in spans.get(edit.path, [])):
            first = edit.old_text.strip().split("\n")[0][:80]
            problems.append(
                f"two edits change the same lines of {edit.path} (`{first}`): give each"
                " place one edit, copied from the file as shown"
            )
        spans.setdefault(edit.path, []).append((start, end))
        lines = text.split("\n")
        first_line, last_line = text.count("\n", 0, start), text.count("\n", 0, end)
        near = {
            _plain(line)
            for line in lines[max(0, first_line - REPEAT_LINES) : last_line + REPEAT_LINES + 1]
        }
        kept = {_plain(line) for line in edit.old_text.split("\n")}
        for line in edit.new_text.split("\n"):
            plain = _plain(line)
            if plain not in kept and plain in near and len(plain) >= 8 and _LETTER.search(plain):
                problems.append(
                    f"the edit of {edit.path} adds `{line.strip()[:80]}`, which the file"
                    " already has right there: add only what is new"
                )
                break
    return problems


_LETTER = re.compile(r"[^\W\d_]")


def _plain(line: str) -> str:
    """A line compared without its blanks and a statement's closing `;`."""
    return _BLANKS.sub(" ", line).strip().rstrip(";").rstrip()


def call_id(kind: str) -> str:
    return f"{kind}-{secrets.token_hex(4)}"


async def apply_edits(
    tools: WorkspaceTools,
    edits: Sequence[Edit],
    applied: Applied,
    *,
    limit: int = MAX_APPLIED,
    root: Path,
    check: ProjectCheck | None,
    progress: Callable[[str], None],
    request: str | None = None,
    names: Sequence[str] = (),
    files: Sequence[str] = (),
    whose: str = "the local edits",
    locator: Locator | None = None,
) -> AsyncGenerator[AgentEvent, None]:
    """Apply `edits`, then check them; on a failure put the files back and leave the
    reasons in `applied.problems`. `request`: the user's words, whose named places (`names`,
    its definitions; `files`, the files it names) the edits must touch (None: no such
    check); `whose`: the edits as the notices name them;
    `locator`: the workspace's definitions and the files holding a name, to finish a
    rename of a definition an edit began (`rename`; None: edits are applied as given).
    A denied edit yields `LocalGaveUp`."""
    baseline = await check_before(tools, check, root, whose, progress)
    arguments: list[dict[str, Any]] = [
        {"path": edit.path, "old_text": edit.old_text, "new_text": edit.new_text}
        | ({"replace_all": True} if edit.replace_all else {})
        for edit in edits[:limit]
    ]
    fitted = await _fitted(tools, arguments)
    if fitted:
        yield NoticeEvent(
            "info",
            f"milk fitted {whose} to the file: {'; '.join(fitted)} (as written, the file"
            " would not parse; fitted, it does)",
        )
    async for event in _apply_all(tools, arguments, applied):
        yield event
    if _denied(applied):
        return
    if not applied.problems and locator is not None:
        for old, new in dict.fromkeys(
            pair
            for edit in arguments
            if (pair := renamed(edit["old_text"], edit["new_text"]))
            and locator.index.has_definition(pair[0])
        ):
            texts = {path: await tools.text_of(path) for path in locator.holders(old)}
            rest = rest_of_rename(old, new, {p: t for p, t in texts.items() if t is not None})
            if rest:
                yield NoticeEvent(
                    "info",
                    f"milk renamed the other uses of {old} to {new}, as the local model's edit"
                    f" renamed it ({len(rest)} more edit{'s' if len(rest) > 1 else ''})",
                )
            async for event in _apply_all(tools, rest, applied):
                yield event
            if _denied(applied):
                return
    edited = {path: (was, await tools.text_of(path)) for path, was in tools.texts_before()}
    if not applied.problems and all(was == now for was, now in edited.values()):
        applied.problems.append(
            f"{whose} changed no file (each was already as its edit would leave it, or the"
            " edits put it back): make the change the request asks"
        )
        applied.signal = LocalSignal.EDIT_NOT_MADE
    if not applied.problems and (blank := blank_space_only(edited)) is not None:
        applied.problems.append(f"{blank}: make the change the request asks")
        applied.signal = LocalSignal.EDIT_NOT_MADE
    if not applied.problems and request is not None:
        away = (
            unmade_change(request, edited)
            or (unwritten_member(request, edited, locator.index) if locator else None)
            or edits_elsewhere(request, edited, names, files)
        )
        if away is not None:
            applied.problems.append(f"{away}: make the change where the request says")
            applied.signal = LocalSignal.EDIT_NOT_MADE
            # the files the request writes are where it asks the change, edited or not
            where = {p: edited.get(p) or (await tools.text_of(p), None) for p in files}
            applied.places = held_places(request, where or edited, names)
    for path, problem in tools.broken_files().items():
        applied.problems.append(f"after the edits {path} is broken: {problem}")
        applied.signal = LocalSignal.EDIT_BROKE_FILE
    if not applied.problems and check is not None and baseline is not None:
        failed = await check_after(check, root, baseline, whose, progress)
        if failed is not None:
            applied.problems.append(failed)
            applied.signal = LocalSignal.CHECK_FAILED
        elif baseline.passed:
            yield NoticeEvent("info", f"milk checked {whose}: {check.command} passed")
    if not applied.problems and tools.pending_check() is not None:
        ran = await tools.check_edits(call_id("check"))
        if ran is not None and ran.failed:
            applied.problems.append(f"`{ran.command}` fails after the edits:\n{ran.output}")
            applied.signal = LocalSignal.CHECK_FAILED
    if applied.problems:
        restored = await tools.restore_edited()
        if restored:
            yield NoticeEvent(
                "info", f"milk put {', '.join(restored)} back: the edits did not pass its check"
            )


async def check_before(
    tools: WorkspaceTools,
    check: ProjectCheck | None,
    root: Path,
    whose: str,
    progress: Callable[[str], None],
) -> CheckOutcome | None:
    """The project's check run before `whose`, with the user's permission (None: no check
    here, or not allowed)."""
    if check is None:
        return None
    allowed = await tools.ask_to_run(
        call_id("check"),
        check.command,
        f"Run the project's check before and after {whose}: {check.command}",
    )
    if not allowed:
        return None
    progress(f"running {check.command} before {whose}…")
    return await run_check(check, root)


async def check_after(
    check: ProjectCheck,
    root: Path,
    baseline: CheckOutcome,
    whose: str,
    progress: Callable[[str], None],
) -> str | None:
    """The check run again after `whose`: the problem when it passed before and fails now
    (None: it passes, or it failed before and says nothing of the edits)."""
    if not baseline.passed:
        return None
    progress(f"running {check.command} after {whose}…")
    after = await run_check(check, root)
    if after.passed:
        return None
    return (
        f"`{check.command}` passed before the edits and fails after them:\n" + after.output[-1500:]
    )


async def _fitted(tools: WorkspaceTools, edits: list[dict[str, Any]]) -> list[str]:
    """Edits that would break their file's parse, fitted (in place, in `edits`) the first
    way of `_fits` whose file parses. A 1.5B model asked to change a default copied the
    signature and the two lines after it, and wrote back the signature alone. What was
    fitted, for a notice, one entry per edit; every check after the edits still runs."""
    texts: dict[str, str | None] = {}
    said: list[str] = []
    for edit in edits:
        path, old, new = edit["path"], edit["old_text"], edit["new_text"]
        if path not in texts:
            texts[path] = await tools.text_of(path)
        current = texts[path]
        if current is None or edit.get("replace_all"):
            continue
        try:
            texts[path] = replace_once(current, old, new, path).text
        except EditDoesNotApply:
            continue
        fits = _fits(old, new, path) if new.strip() else []
        if not fits or broken_by_edit(path, current, texts[path] or "") is None:
            continue  # parsed once, and only where a fit could help: the tool parses after
        for fitted, what in fits:
            after = replace_once(current, old, fitted, path).text
            if broken_by_edit(path, current, after) is None:
                edit["new_text"], texts[path] = fitted, after
                said.append(what)
                break
    return said


_CLOSERS = {")": "(", "]": "[", "}": "{"}


def _fits(old: str, new: str, path: str) -> list[tuple[str, str]]:
    """New texts that fit the edit to its file, each with what it does in words: the
    closing brackets its end adds beyond the old text's left out (it wrote
    `if (x) { y = 130; }` for the two lines that open a block); the old lines past the new
    text's count kept (the model copied more lines than it wrote back)."""
    fits: list[tuple[str, str]] = []
    trimmed, dropped = new.rstrip(), 0
    while trimmed and trimmed[-1] in _CLOSERS:
        closer, opener = trimmed[-1], _CLOSERS[trimmed[-1]]
        if trimmed.count(closer) - trimmed.count(opener) <= old.count(closer) - old.count(opener):
            break
        trimmed, dropped = trimmed[:-1].rstrip(), dropped + 1
    if dropped:
        brackets = f"{dropped} closing bracket{'s' if dropped > 1 else ''}"
        fits.append((trimmed, f"left out {brackets} the edit added at its end in {path}"))
    old_lines, new_lines = old.split("\n"), new.split("\n")
    if len(old_lines) > len(new_lines):
        rest = len(old_lines) - len(new_lines)
        kept = new.rstrip("\n") + "\n" + "\n".join(old_lines[len(new_lines) :])
        fits.append((kept, f"kept {rest} line{'s' if rest > 1 else ''} of {path} the edit dropped"))
    return fits


def _denied(applied: Applied) -> bool:
    """Whether the user denied an edit (asked afresh after each batch of edits)."""
    return applied.denied


async def _apply_all(
    tools: WorkspaceTools, edits: Sequence[dict[str, Any]], applied: Applied
) -> AsyncGenerator[AgentEvent, None]:
    """`edits` in order, up to a denial (which puts every file back)."""
    for edit in edits:
        async for event in _apply(tools, edit, applied):
            yield event
        if applied.denied:
            return


async def _apply(
    tools: WorkspaceTools, arguments: dict[str, Any], applied: Applied
) -> AsyncGenerator[AgentEvent, None]:
    """One edit through the tools, shown as a call; a denial puts every file back."""
    edit_id = call_id("edit")
    yield ToolCallEvent(edit_id, EDIT_FILE, arguments, ToolStatus.RUNNING)
    outcome = await tools.call(edit_id, EDIT_FILE, arguments)
    status = (
        ToolStatus.DENIED
        if outcome.denied
        else ToolStatus.FAILED
        if outcome.is_error
        else ToolStatus.COMPLETED
    )
    yield ToolCallEvent(edit_id, EDIT_FILE, arguments, status)
    yield ToolResultEvent(edit_id, outcome.output, outcome.is_error or outcome.denied)
    if outcome.denied:
        await tools.restore_edited()
        applied.problems, applied.denied = [], True
        yield LocalGaveUp(
            LocalSignal.FAILED_EDIT, f"the user did not allow the edit of {arguments['path']}"
        )
    elif outcome.is_error:
        applied.problems.append(f"the edit of {arguments['path']} failed: {outcome.output}")
        applied.signal = LocalSignal.FAILED_EDIT


RENAME_CONTEXT_LINES = 3
"""Lines added around a use, each side, at most, until its old text is unique."""


def renamed(old_text: str, new_text: str) -> tuple[str, str] | None:
    """(old name, new name) when `new_text` is `old_text` with one identifier replaced by
    another wherever it stands; None for any other edit."""
    before, after = set(IDENTIFIER.findall(old_text)), set(IDENTIFIER.findall(new_text))
    gone, added = before - after, after - before
    if len(gone) != 1 or len(added) != 1:
        return None
    old, new = next(iter(gone)), next(iter(added))
    if whole_word(old).sub(new, old_text) != new_text:
        return None
    return old, new


def rest_of_rename(old: str, new: str, texts: dict[str, str]) -> list[dict[str, str]]:
    """The edits that rename the uses of `old` left in `texts` (path → text as it is now),
    each `{path, old_text, new_text}` with an old text found once in its file; none when
    there are more than `USES_MAX` uses or one cannot be made unique."""
    word = whole_word(old)
    places = [
        (path, number)
        for path, text in texts.items()
        for number, line in enumerate(text.splitlines())
        if word.search(line)
    ]
    if len(places) > USES_MAX:
        return []
    edits: list[dict[str, str]] = []
    taken: dict[str, int] = {}
    """Per file, the last line an edit of it already covers."""
    for path, number in places:
        if taken.get(path, -1) >= number:
            continue
        lines = texts[path].splitlines(keepends=True)
        for around in range(RENAME_CONTEXT_LINES + 1):
            first = max(taken.get(path, -1) + 1, number - around)
            last = min(len(lines) - 1, number + around)
            block = "".join(lines[first : last + 1])
            if texts[path].count(block) == 1:
                break
        else:
            return []
        edits.append({"path": path, "old_text": block, "new_text": word.sub(new, block)})
        taken[path] = last
    return edits
