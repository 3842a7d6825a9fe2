"""What a source file defines, and where its syntax is broken, in any language of
`languages.LANGUAGES`, through ast-grep's bundled tree-sitter grammars (offline). For edits
by symbol, `extents` gives a definition's whole text (with its doc comments, attributes and
`export`) and `bodies` where a class or `impl` ends.

ast-grep-py is imported on first use, not with this module: a server that never parses never
pays for it. Each question is one parse and one ast-grep search run in Rust; Python only
visits the nodes found. Nothing here raises for any text: a parser failure gives [] (logged
at debug level), as does a language whose rules the bundled grammar rejects.

Offsets are character offsets into the `str` given (ast-grep-py reports positions in
characters, not UTF-8 bytes); lines and columns are 1-based.
"""

from __future__ import annotations

import difflib
import functools
import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from milk_lsp.code.languages import USE_NAMES, DefinitionRule, Language, language_for

if TYPE_CHECKING:
    from ast_grep_py import Config, SgNode

__all__ = [
    "Body",
    "Definition",
    "Extent",
    "SyntaxProblem",
    "added_at_heads",
    "bodies",
    "bound_and_used",
    "definitions",
    "extents",
    "syntax_problems",
]

_log = logging.getLogger(__name__)
_T = TypeVar("_T")

SNIPPET_CHARS = 40
HEAD_LINES = 3
"""A definition's head: its first lines, where a docstring or a signature's end is."""


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


@dataclass(frozen=True, slots=True)
class Extent:
    """A definition's whole text, for replacing it: beyond its node, the comments and
    attributes just above it and the statements that hold only it (`export`, `const … =`,
    Go's `type`)."""

    definition: Definition
    heads: tuple[tuple[int, bool], ...]
    """Where each doc comment (True) or attribute, decorator or annotation (False) before its
    code starts, in source order: those just above it (no blank line between) and those it
    begins with."""
    levels: tuple[tuple[int, int], ...]
    """(start, end) of the code of each statement holding only the definition, outermost
    first and its own node last; a start is after the node's own decorators."""


@dataclass(frozen=True, slots=True)
class Body:
    """A container (class, `impl`, interface, Ruby class), for adding a member at its end."""

    name: str
    start: int
    end: int
    open: int
    """Where its members may begin: its body's opening brace, else its name."""
    close: int
    """Where the `}` or `end` closing it is; -1 when it has none."""
    trait: bool
    """A Rust `impl Trait for Type`, where no other method belongs."""


_NAME = re.compile(r"[~$@]?[^\W\d]\w*[?!]?")
_QUALIFIER = re.compile(r"\s*(?:::|->|[.:\\])\s*")
_IDENTIFIER = re.compile(r"[^\W\d]\w*")
_DECORATORS = frozenset(
    {
        "decorator",
        "annotation",
        "marker_annotation",
        "attribute",
        "attribute_item",
        "attribute_list",
        "attribute_declaration",
    }
)
"""Node kinds of attributes, decorators and annotations (JavaScript, Java, Rust, C#, …)."""
_KEYWORDS = re.compile(r"[\w$\s]*")
"""What a statement holding only a definition may have before it: `export default`, `const`."""
_TRAILER = re.compile(r"[\s;,]*")
_CLOSERS = frozenset({"}", "end"})
_PROBLEMS: Config = {"rule": {"any": [{"kind": "ERROR"}, {"regex": "^$"}]}}
"""ERROR nodes, and zero-width ones (a leaf the parser inserted: tree-sitter's MISSING)."""


def definitions(text: str, language: Language) -> list[Definition]:
    """The functions, methods, types and top-level constants and variables `text` defines,
    in source order; [] when it cannot be parsed at all."""
    return _guarded(lambda: _definitions(text, language), language, [])


def extents(text: str, language: Language) -> list[Extent]:
    """Each definition of `definitions` with the comments, attributes and wrapping statements
    that are part of its text; [] when `text` cannot be parsed at all."""
    return _guarded(lambda: _extents(text, language), language, [])


def bodies(text: str, language: Language) -> list[Body]:
    """The containers `text` defines (classes, `impl`s, interfaces), in source order; []
    when it cannot be parsed at all."""
    return _guarded(lambda: _bodies(text, language), language, [])


def syntax_problems(text: str, language: Language) -> list[SyntaxProblem]:
    """Every ERROR node and every missing token of the parse of `text`, in source order;
    [] for a text that parses cleanly (or cannot be parsed at all)."""
    return _guarded(lambda: _syntax_problems(text, language), language, [])


def added_at_heads(path: str, before: str | None, now: str | None, names: Iterable[str]) -> bool:
    """Whether `now` is `before` (the file `path`, in its language) with lines added only at
    the head of definitions of `names`: right above a definition's first line (a JSDoc, a
    Go or Rust doc comment) or, where documentation goes inside (`Language.docs_inside`),
    within its first `HEAD_LINES` before its last (a docstring under `def f(…):`); every
    line kept."""
    language = language_for(path)
    if language is None or not before or not now:
        return False
    wanted = set(names)
    inside = HEAD_LINES if language.docs_inside else 0
    spans = [
        (d.first_line, min(d.last_line, d.first_line + inside))
        for d in definitions(before, language)
        if d.name in wanted
    ]
    matcher = difflib.SequenceMatcher(None, before.split("\n"), now.split("\n"))
    added = [(tag, at) for tag, at, *_ in matcher.get_opcodes() if tag != "equal"]
    return bool(spans and added) and all(  # `at`: the insertion follows line `at`
        tag == "insert" and any(first - 1 <= at < end for first, end in spans) for tag, at in added
    )


def bound_and_used(text: str, language: Language) -> tuple[set[str], set[str]]:
    """The names `text` binds (`Language.bindings`) and the names it uses as values; two
    empty sets for a language without bindings or a text that cannot be parsed."""
    nothing: tuple[set[str], set[str]] = (set(), set())
    if not language.bindings:
        return nothing
    return _guarded(lambda: _bound_and_used(text, language), language, nothing)


def _bound_and_used(text: str, language: Language) -> tuple[set[str], set[str]]:
    root = _root(text, language)
    bound: set[str] = set()
    for kind, field in language.bindings:
        for node in root.find_all(kind=kind):
            holder = node.field(field) if field is not None else node
            if holder is None:
                continue
            if holder.kind() in language.bound_names:
                bound.add(holder.text())
            for name_kind in language.bound_names:
                bound.update(found.text() for found in holder.find_all(kind=name_kind))
    used = {found.text() for kind in USE_NAMES for found in root.find_all(kind=kind)}
    return bound, used


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
    return [definition for definition, _ in _defined(_root(text, language), language)]


def _defined(root: SgNode, language: Language) -> list[tuple[Definition, SgNode]]:
    """Each definition with the node defining it."""
    search, rules = _search(language)
    found: list[tuple[Definition, SgNode]] = []
    enclosing: list[tuple[int, bool, str | None]] = []
    """(end, whether a container, its name) of the definitions around the current node."""
    for node in root.find_all(search):
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
            definition = Definition(
                name,
                _refined(kind, rule, node, name, container),
                first_line,
                max(first_line, last_line),
                start,
                end,
                container,
            )
            found.append((definition, node))
    return found


def _refined(
    kind: str, rule: DefinitionRule, node: SgNode, name: str, container: str | None
) -> str:
    """`kind` made precise: a function of a class is a method, a variable holding a
    function is a function, one bound to an import call (`require`) an import, one named in
    capitals a constant."""
    if kind == "function" and container is not None:
        return "method"
    if kind != "variable":
        return kind
    value = node.field("value") if rule.function_values or rule.import_calls else None
    if value is not None and value.kind() in rule.function_values:
        return "function"
    if value is not None and rule.import_calls and value.kind() == "call_expression":
        called = value.field("function")
        if called is not None and called.text() in rule.import_calls:
            return "import"
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


def _extents(text: str, language: Language) -> list[Extent]:
    return [_extent(text, d, node) for d, node in _defined(_root(text, language), language)]


def _extent(text: str, definition: Definition, node: SgNode) -> Extent:
    """Climb from `node` through the statements holding only it (their text before it only
    keywords, after it only `;`), then gather the comments and attributes just above."""
    heads = _inner_heads(node)
    levels = [(_code_start(node), _end(node))]
    top = node
    while not heads and (parent := top.parent()) is not None and parent.parent() is not None:
        members = [child for child in parent.named_children() if not _is_head(child)]
        if len(members) != 1 or _span(members[0]) != _span(top):
            break
        start, end = _code_start(parent), _end(parent)
        if not (
            _KEYWORDS.fullmatch(text, start, _start(top))
            and _TRAILER.fullmatch(text, _end(top), end)
        ):
            break
        if (start, end) != levels[0]:
            levels.insert(0, (start, end))
        heads = _inner_heads(parent)
        top = parent
    return Extent(definition, (*_heads_above(text, top), *heads), tuple(levels))


def _heads_above(text: str, node: SgNode) -> list[tuple[int, bool]]:
    """The comments and attributes right above `node`, each on its own line, no blank line
    between (a Ruby method's are before the body holding it)."""
    found: list[tuple[int, bool]] = []
    current, before = node, _start(node)
    while True:
        previous = current.prev()
        if previous is None:
            parent = current.parent()
            if parent is None or parent.parent() is None or _start(parent) != _start(current):
                break
            current = parent
            continue
        start, end = _span(previous)
        gap = text[end:before]
        line = text[text.rfind("\n", 0, start) + 1 : start]
        if not _is_head(previous) or gap.strip() or gap.count("\n") > 1 or line.strip():
            break
        found.insert(0, (start, "comment" in previous.kind()))
        current, before = previous, start
    return found


def _inner_heads(node: SgNode) -> list[tuple[int, bool]]:
    """The comments and attributes `node` begins with (in Java's `modifiers` too)."""
    found: list[tuple[int, bool]] = []
    code = _code_start(node)
    for child in node.children():
        inner = child.children() if child.kind() == "modifiers" else [child]
        found += [(_start(c), "comment" in c.kind()) for c in inner if _is_head(c)]
    return [head for head in found if head[0] < code]


def _code_start(node: SgNode) -> int:
    """Where `node`'s code begins, after the attributes and comments it begins with."""
    for child in node.children():
        if child.kind() == "modifiers":
            inner = next((c for c in child.children() if not _is_head(c)), None)
            if inner is not None:
                return _start(inner)
        elif not _is_head(child):
            return _start(child)
    return _start(node)


def _is_head(node: SgNode) -> bool:
    kind = node.kind()
    return kind in _DECORATORS or "comment" in kind


def _start(node: SgNode) -> int:
    return node.range().start.index


def _end(node: SgNode) -> int:
    return node.range().end.index


def _span(node: SgNode) -> tuple[int, int]:
    span = node.range()
    return span.start.index, span.end.index


def _bodies(text: str, language: Language) -> list[Body]:
    search, rules = _search(language)
    found: list[Body] = []
    for node in _root(text, language).find_all(search):
        rule = rules.get(node.kind())
        if rule is None or not rule.container:
            continue
        names = [split for named in _located(node, rule.name) if (split := _split(named.text()))]
        if not names:
            continue
        last = node
        while children := last.children():
            last = children[-1]
        closes = not last.is_named() and last.text() in _CLOSERS
        holder = last.parent() if closes else None
        opening = _start(holder) if holder is not None and _span(holder) != _span(node) else -1
        if opening < 0:
            named = _located(node, rule.name)
            opening = _end(named[0]) if named else _start(node)
        start, end = _span(node)
        trait = node.field("trait") is not None
        found.append(Body(names[0][1], start, end, opening, _start(last) if closes else -1, trait))
    return found


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
