"""The verdicts over claims: whether a question is about this workspace, which names it
asks about, whether an answer is chat-template markup, and which claims nothing grounds."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from milk_lsp.agents.local.judge.grounding.asked import asked, near
from milk_lsp.agents.local.judge.grounding.claims import (
    LINE_PLACE,
    TEMPLATE,
    Claims,
    blank,
    code_spans,
    question_claims,
    split_fences,
)
from milk_lsp.agents.local.judge.grounding.hints import about_this_project

if TYPE_CHECKING:
    from milk_lsp.workspace.index import WorkspaceIndex


_TEMPLATE_BLOCK = re.compile(
    r"<(tools|tool_call|tool_calls|tool_response|tool_result|tool_use|function_calls?|"
    r"functions)>.*?</\1>|<function=[^>\n]{0,80}>.*?</function>|"
    r"\[(?:TOOL_CALLS|AVAILABLE_TOOLS|TOOL_RESULTS)\].*|"
    r"<\|(?:im_start|start_header_id)\|>\s*(?:system|user|assistant|tool|ipython)?",
    re.DOTALL,
)
_JSON_BLOCK = re.compile(r"[\[{].*[\]}]", re.DOTALL)
"""The arguments of a call whose closing tag never came."""


def about_workspace(question: str, index: WorkspaceIndex) -> bool:
    """Whether `question` is about this workspace: it names a path, a name or an option that
    exists here, a word of it stands for a definition or a file here (`asked`, in any human
    language), or it speaks of "this project" (a hint that only adds checks)."""
    claims = question_claims(question)
    return (
        about_this_project(question)
        or any(index.has_path(path) for path in claims.paths)
        or any(_indexed_name(index, name) for name in claims.names)
        or any(index.has_option(option) for option in claims.options)
        or bool(asked(question, index))
    )


def question_names(question: str, index: WorkspaceIndex) -> list[str]:
    """The code names a question asks about: those it writes as code, and its words that
    stand for a definition of this workspace, in any language and with a typo
    ("the default of naturalsize?", "Wo ist slugify definiert?")."""
    written = question_claims(question).names
    names = dict.fromkeys(asked(question, index).names)
    names.update(dict.fromkeys(name for name in written if _indexed_name(index, name)))
    names.update(dict.fromkeys(written))  # last: a typo of a name, or a name from elsewhere
    return list(names)


def markup_answer(answer: str) -> str | None:
    """A short description when `answer` is chat-template markup rather than an answer
    (`<tools></tools>`, `<tool_call>{...}</tool_call>`, `<|im_start|>assistant`); None
    otherwise, also for an answer that shows markup in code or around a real answer."""
    prose, _ = split_fences(answer)
    prose = blank(prose, [(start, end) for start, end, _ in code_spans(prose)])
    tags = list(dict.fromkeys(TEMPLATE.findall(prose)))
    if not tags:
        return None
    rest = _JSON_BLOCK.sub(" ", TEMPLATE.sub(" ", _TEMPLATE_BLOCK.sub(" ", prose)))
    solid, left = len("".join(prose.split())), len("".join(rest.split()))
    if len(re.findall(r"[A-Za-z]{2,}", rest)) >= 3 and left * 2 > solid:
        return None  # a real answer with a stray tag, or one that talks about tags
    shown = " ".join(tags[:3]) + (" …" if len(tags) > 3 else "")
    return f"chat-template markup instead of an answer ({shown})"


# --- the check ----------------------------------------------------------------------------


def ungrounded(
    claims: Claims, evidence: Sequence[str], index: WorkspaceIndex | None
) -> tuple[str, ...]:
    """The claims found neither in `evidence` (the turn's successful tool results, the
    attachments, the user's message) nor in `index`; () when all are grounded. A name that
    resolves nowhere, is near no name this workspace defines (`asked.near`) and is not put in
    one of its files (`Claims.placed`) is outside knowledge (`AbortController`,
    `or_insert_with`, `ReDoS`), not a claim. Without an index (no workspace folder) only the
    evidence grounds; an index not refreshed yet, or cut short at its file limit, proves no
    absence, so it then grounds every claim."""
    if not claims or (index is not None and (index.truncated or index.refreshed_at is None)):
        return ()
    text = "\n".join(evidence)
    placed = set(claims.placed)
    missing: list[str] = []
    checks: tuple[tuple[tuple[str, ...], Callable[[str], bool]], ...] = (
        (claims.paths, lambda path: _path_in(text, path) or _indexed_path(index, path)),
        (
            claims.names,
            lambda name: (
                _name_in(text, name)
                or _indexed_name(index, name)
                or (name not in placed and not near(name, index))
            ),
        ),
        (claims.options, lambda option: _token_in(text, option) or _indexed_option(index, option)),
    )
    for items, grounded in checks:
        missing.extend(item for item in items if not grounded(item))
    return tuple(missing)


def unbacked_claims(names: Sequence[str], values: Sequence[str]) -> str | None:
    """Why an answer is ungrounded, in words: the names nothing backs, else the values it
    states about the code that nothing backs; None when there are neither."""
    if names:
        return (
            f"the answer names {', '.join(names[:4])}, which milk found neither in what the "
            "local model looked at nor in the workspace"
        )
    if values:
        return (
            f"the answer states {', '.join(values[:4])} about the code, a value nothing the "
            "local model looked at shows"
        )
    return None


def _indexed_path(index: WorkspaceIndex | None, path: str) -> bool:
    return index is not None and index.has_path(path)


def _indexed_name(index: WorkspaceIndex | None, name: str) -> bool:
    """A name in the text of a file, or of a file or folder (`Makefile`, module `calc`).
    A dotted name whose lowercase head is no module, folder or name of this workspace
    belongs to another library (`pytest.approx`, `click.command`): it claims nothing here.
    One whose head is a module here must have its last part here (`hello.greet_everyone`)."""
    if index is None:
        return False
    parts = [part for part in name.removesuffix("()").split(".") if part]
    if len(parts) > 1:
        head = parts[0]
        module = index.has_path(head + ".py") or index.has_path(head + "/")
        if not module and not index.has_name(head) and head[:1].islower():
            return True  # a module of another library; a class (`ReportBuilder`) is checked
        if module:
            return index.has_name(parts[-1]) or index.has_path("/".join(parts) + ".py")
    return index.has_name(name) or index.has_path(name) or index.has_path(name + ".py")


def _indexed_option(index: WorkspaceIndex | None, option: str) -> bool:
    return index is not None and index.has_option(option)


def _token_in(text: str, token: str) -> bool:
    """Whether `token` occurs in `text` not as part of a longer name or option."""
    if not token or token not in text:
        return False
    pattern = rf"(?<![\w-]){re.escape(token)}(?![\w-])"
    return re.search(pattern, text) is not None


def _path_in(text: str, path: str) -> bool:
    """Whether the evidence shows `path`: whole, or each of its parts (a listing shows
    `src/` and then `app.py`)."""
    core = LINE_PLACE.sub("", path).removeprefix("./").rstrip("/")
    if _token_in(text, core):
        return True
    parts = [part for part in core.split("/") if part not in ("", ".")]
    return len(parts) > 1 and all(_token_in(text, part) for part in parts)


def shows_name(text: str, name: str) -> bool:
    """Whether `text` (what the model saw) shows the code name `name` (see `_name_in`)."""
    return _name_in(text, name)


def shows_line_of(text: str, path: str) -> bool:
    """Whether `text` shows a line of the file `path`, as a search hit does
    (`src/humanize/time.py:12: ...`)."""
    return re.search(rf"(?<![\w/.-]){re.escape(path)}:\d+", text) is not None


def _name_in(text: str, name: str) -> bool:
    """Whether the evidence shows `name`: whole, its last part (`calc.add` after reading
    calc.py), or as a module path (`pkg.mod` in `pkg/mod.py`)."""
    if _token_in(text, name):
        return True
    parts = name.split(".")
    if len(parts) == 1:
        return False
    return _token_in(text, parts[-1]) or "/".join(parts) in text
