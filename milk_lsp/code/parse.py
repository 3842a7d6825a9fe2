"""What a source file defines, and where its syntax is broken, in any language of
`languages.LANGUAGES`, through ast-grep's bundled tree-sitter grammars (offline).

ast-grep-py is imported on first use, not with this module: a server that never parses never
pays for it. Each question is one parse and one ast-grep search run in Rust; Python only
visits the nodes found. Nothing here raises for any text: a parser failure gives [] (logged
at debug level), as does a language whose rules the bundled grammar rejects.

Offsets are character offsets into the `str` given (ast-grep-py reports positions in
characters, not UTF-8 bytes); lines and columns are 1-based.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from milk_lsp.code.languages import DefinitionRule, Language

if TYPE_CHECKING:
    from ast_grep_py import Config, SgNode

__all__ = ["Definition", "SyntaxProblem", "definitions", "syntax_problems"]

_log = logging.getLogger(__name__)
_T = TypeVar("_T")

SNIPPET_CHARS = 40


@dataclass(frozen=True, slots=True)
class Definition:
    """A name a file defines, and the source that defines it."""

    name: str
    kind: str
    """"function", "method", "class", "interface", "struct", "enum", "trait", "type",
    "constant", "variable", "module" or "macro" (see `languages.DefinitionRule.kind`)."""
    first_line: int
    last_line: int
    """1-based, inclusive."""
    start: int
    end: int
    """Character offsets of the defining node in the text (`text[start:end]`)."""
    container: str | None
    """The class, `impl`, receiver type or table a method belongs to; None otherwise."""


@dataclass(frozen=True, slots=True)
class SyntaxProblem:
    """A place where the parser found no valid syntax, or had to assume a missing token."""

    line: int
    column: int
    """1-based, in characters."""
    text: str
    """The offending source, one line of at most 40 characters: the text the parser could
    not place, or, for a missing token, the line up to where it is missing."""


_NAME = re.compile(r"[~$@]?[^\W\d]\w*[?!]?")
_QUALIFIER = re.compile(r"\s*(?:::|->|[.:\\])\s*")
_IDENTIFIER = re.compile(r"[^\W\d]\w*")
_PROBLEMS: Config = {"rule": {"any": [{"kind": "ERROR"}, {"regex": "^$"}]}}
"""ERROR nodes, and zero-width ones (a leaf the parser inserted: tree-sitter's MISSING)."""


def definitions(text: str, language: Language) -> list[Definition]:
    """The functions, methods, types and top-level constants and variables `text` defines,
    in source order; [] when it cannot be parsed at all."""
    return _guarded(lambda: _definitions(text, language), language, [])


def syntax_problems(text: str, language: Language) -> list[SyntaxProblem]:
    """Every ERROR node and every missing token of the parse of `text`, in source order;
    [] for a text that parses cleanly (or cannot be parsed at all)."""
    return _guarded(lambda: _syntax_problems(text, language), language, [])


def _guarded(run: Callable[[], _T], language: Language, failed: _T) -> _T:
    try:
        return run()
    except Exception as error:
        _log.debug("parsing %s failed: %r", language.label, error)
    except BaseException as error:  # pyo3 turns a Rust panic into a BaseException
        if type(error).__name__ != "PanicException":
            raise
        _log.debug("the %s parser panicked: %r", language.label, error)
    return failed


def _root(text: str, language: Language) -> SgNode:
    from ast_grep_py import SgRoot

    return SgRoot(text, language.name).root()


@functools.cache
def _search(language: Language) -> tuple[Config, dict[str, DefinitionRule]]:
    """One ast-grep rule matching every definition node of `language`, and the rules by
    node kind."""
    rules = {rule.node: rule for rule in language.definitions}
    matches: list[dict[str, object]] = [
        {"kind": rule.node, **(rule.where or {})} for rule in rules.values()
    ]
    config: Config = {"rule": {"any": matches}}  # type: ignore[typeddict-item]
    return config, rules


def _definitions(text: str, language: Language) -> list[Definition]:
    search, rules = _search(language)
    found: list[Definition] = []
    enclosing: list[tuple[int, bool, str | None]] = []
    """(end, whether a container, its name) of the definitions around the current node."""
    for node in _root(text, language).find_all(search):
        rule = rules.get(node.kind())
        if rule is None:
            continue
        span = node.range()
        start, end = span.start.index, span.end.index
        while enclosing and enclosing[-1][0] <= start:
            enclosing.pop()
        outer = enclosing[-1][2] if enclosing and enclosing[-1][1] else None
        kind = rule.kind
        if rule.keyword is not None:
            keyword = node.field(rule.keyword)
            if keyword is not None:
                kind = rule.keyword_kinds.get(keyword.text(), kind)
        names = [split for named in _located(node, rule.name) if (split := _split(named.text()))]
        enclosing.append((end, rule.container, names[0][1] if names else None))
        if kind is None:
            continue
        if rule.receiver is not None and (receiver := node.field(rule.receiver)) is not None:
            outer = _last_identifier(receiver.text())
        first_line = span.start.line + 1
        last_line = span.end.line + (0 if span.end.column == 0 and end > start else 1)
        for qualifier, name in names:
            container = qualifier or outer
            found.append(
                Definition(
                    name,
                    _refined(kind, rule, node, name, container),
                    first_line,
                    max(first_line, last_line),
                    start,
                    end,
                    container,
                )
            )
    return found


def _refined(
    kind: str, rule: DefinitionRule, node: SgNode, name: str, container: str | None
) -> str:
    """`kind` made precise: a function of a class is a method, a variable holding a
    function is a function, one named in capitals a constant."""
    if kind == "function" and container is not None:
        return "method"
    if kind != "variable":
        return kind
    if rule.function_values:
        value = node.field("value")
        if value is not None and value.kind() in rule.function_values:
            return "function"
    return "constant" if len(name) > 1 and name.isupper() else "variable"


def _located(node: SgNode, path: tuple[str, ...]) -> list[SgNode]:
    """The nodes `path` leads to from `node` (see `DefinitionRule.name`)."""
    nodes = [node]
    for step in path:
        following: list[SgNode] = []
        for current in nodes:
            if step.startswith("+"):
                innermost = current
                while (inner := innermost.field(step[1:])) is not None:
                    innermost = inner
                if innermost is not current:
                    following.append(innermost)
            elif step.startswith(":"):
                following.extend(
                    child for child in current.named_children() if child.kind() == step[1:]
                )
            else:
                following.extend(current.field_children(step))
        nodes = following
    return nodes


def _split(text: str) -> tuple[str | None, str] | None:
    """(qualifier, name) of a defined name as written: `Cart::add` gives ("Cart", "add"),
    `M:size` ("M", "size"), `Counter<T>` (None, "Counter"); None when it is no name."""
    head = re.split(r"[<\[(]", text, maxsplit=1)[0].strip()
    parts = [part for part in _QUALIFIER.split(head) if part]
    if not parts or not _NAME.fullmatch(parts[-1]):
        return None
    qualifier = parts[-2] if len(parts) > 1 and _NAME.fullmatch(parts[-2]) else None
    return qualifier, parts[-1]


def _last_identifier(text: str) -> str | None:
    """The type a receiver names: `(s *Stack[T])` gives "Stack"."""
    found = _IDENTIFIER.findall(re.split(r"[<\[]", text, maxsplit=1)[0])
    return found[-1] if found else None


def _syntax_problems(text: str, language: Language) -> list[SyntaxProblem]:
    problems: list[SyntaxProblem] = []
    lines: list[str] | None = None
    for node in _root(text, language).find_all(_PROBLEMS):
        position = node.range().start
        if node.kind() == "ERROR":
            snippet = next((line.strip() for line in node.text().splitlines() if line.strip()), "")
            snippet = snippet[:SNIPPET_CHARS]
        elif node.is_leaf() and node.parent() is not None:  # not the root of an empty text
            lines = lines if lines is not None else text.splitlines()
            snippet = _before(lines, position.line, position.column)
        else:
            continue
        problems.append(SyntaxProblem(position.line + 1, position.column + 1, snippet))
    return problems


def _before(lines: list[str], line: int, column: int) -> str:
    """The source before a missing token: its line up to it, or the last line with text
    before it (a `}` missing at the end of a file); its last 40 characters."""
    before = lines[line][:column].strip() if line < len(lines) else ""
    while not before and line > 0:
        line -= 1
        before = lines[line].strip() if line < len(lines) else ""
    return before[-SNIPPET_CHARS:]
