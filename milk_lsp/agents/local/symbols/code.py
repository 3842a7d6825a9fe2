"""Symbols by name in the other languages milk parses (JavaScript, TypeScript, Go, Rust,
Java, …), from the code package's tree-sitter definitions: `symbols.python`, for them.

A definition is named by its dotted path: `Class.method` (a Go method by its receiver type,
`Reader.Read`; a Rust one by its `impl`'s type, `Version.parse`; `::` and `#` work as `.`),
`outer.inner` for a named function inside another. A shorter path is enough when only one
definition's path ends so (`inner`, `parse`). There are no parameter defaults here.

What is replaced mirrors Python's decorators: a definition's span starts at the doc comments
and attributes (decorators, annotations) just above it and at the statement holding only it
(`export`, `const … =`, Go's `type`). New text that does not begin with a comment or attribute
keeps those it has (as Python's decorators stay under new text without them; Python's
docstring is inside the function, a doc comment here above it); new text without the
`export`/`const` keeps that too. A definition not there yet goes at the end of its class,
`impl` or interface, or, for a function or a Go method, at the end of the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from milk_lsp.agents.local.replace import EditDoesNotApply
from milk_lsp.agents.local.symbols.qualified import without_module
from milk_lsp.agents.local.symbols.span import SymbolSpan, dedent, reindent
from milk_lsp.code import Language, syntax_problems
from milk_lsp.code.parse import Body, Extent, bodies, extents

_WORD = re.compile(r"[\w$]+|\S")
_DECORATOR_NAME = re.compile(r"@[\w.$:]*")
_KEYWORDS = re.compile(r"[\w$\s]*")
_OPENERS = {"(": ")", "[": "]", "{": "}"}


@dataclass(frozen=True)
class _Named:
    """A definition and the dotted path that names it."""

    path: tuple[str, ...]
    extent: Extent


def find_code_symbol(text: str, symbol: str, where: str, language: Language) -> SymbolSpan:
    """The span of `symbol` in `text`: the definition with its doc comments, attributes and
    `export` (see the module's docstring); `EditDoesNotApply` naming the file's symbols."""
    named, hits = _lookup(text, symbol, where, language)
    return _span(text, _one(hits, named, symbol, where), symbol)


def replace_code_symbol(
    text: str, symbol: str, new_text: str, where: str, language: Language
) -> tuple[str, SymbolSpan]:
    """The whole new text with `symbol` replaced by `new_text` (indented as it is), and the
    span replaced; a definition not there yet is added (the span is then where it went)."""
    named, hits = _lookup(text, symbol, where, language)
    if not hits:
        added = _insert(text, _parts(symbol), new_text, language)
        if added is None:
            raise EditDoesNotApply(_missing(where, symbol, named))
        return added
    found = _one(hits, named, symbol, where)
    new = dedent(new_text)
    code, commented, decorated = _head_end(new, language)
    levels = found.extent.levels
    level = _level(text, levels, _first_word(new[code:]), found.extent.definition.name)
    start, end = levels[level]
    indent = _indent(text, start)
    if code:  # the new text brings comments or attributes: they replace those there
        attributes = _attributes_start(found.extent)
        kept = text[attributes if commented and not decorated else levels[0][0] : start]
        new = new[:code] + kept.replace("\n" + indent, "\n") + new[code:]
        start = found.extent.heads[0][0] if found.extent.heads and commented else attributes
        indent = _indent(text, start)
    elif level == len(levels) - 1 and len(levels) == 1:
        new = _without_keywords(new, text[start:end], found.extent.definition.name)
    if new.endswith(";") and text.startswith(";", end):
        new = new[:-1]
    body = reindent(new, indent)[len(indent) :]
    span = SymbolSpan(
        symbol,
        found.extent.definition.kind,
        start,
        end,
        _line_of(text, start),
        _line_of(text, max(start, end - 1)),
        indent,
    )
    return text[:start] + body + text[end:], span


def _lookup(
    text: str, symbol: str, where: str, language: Language
) -> tuple[list[_Named], list[_Named]]:
    """Every named definition of `text`, and those `symbol` names: the one whose path it is,
    else each whose path ends with it."""
    parts = _parts(symbol)
    if not parts:
        raise EditDoesNotApply("symbol must name a function, class, method or variable")
    named = _named(text, language)
    for wanted in [parts, *without_module(parts, where)]:
        exact = [one for one in named if one.path == wanted]
        hits = exact or [one for one in named if one.path[-len(wanted) :] == wanted]
        if hits:
            return named, hits
    return named, []


def _parts(symbol: str) -> tuple[str, ...]:
    dotted = symbol.strip().removesuffix("()").replace("::", ".").replace("#", ".")
    return tuple(part for part in dotted.split(".") if part)


def _named(text: str, language: Language) -> list[_Named]:
    """The definitions with their paths: the definitions around one (by span), then its
    container (class, `impl` type, receiver) when that is not the innermost of them."""
    found: list[_Named] = []
    around: list[_Named] = []
    for extent in extents(text, language):
        definition = extent.definition
        while around and not _inside(extent, around[-1].extent):
            around.pop()
        path = around[-1].path if around else ()
        if definition.container and definition.container != (path[-1] if path else None):
            path = (*path, definition.container)
        one = _Named((*path, definition.name), extent)
        found.append(one)
        around.append(one)
    return found


def _inside(inner: Extent, outer: Extent) -> bool:
    a, b = inner.definition, outer.definition
    return b.start <= a.start and a.end <= b.end and (a.start, a.end) != (b.start, b.end)


def _one(hits: list[_Named], named: list[_Named], symbol: str, where: str) -> _Named:
    if not hits:
        raise EditDoesNotApply(_missing(where, symbol, named))
    if len(hits) > 1:
        lines = ", ".join(str(hit.extent.definition.first_line) for hit in hits)
        paths = list(dict.fromkeys(".".join(hit.path) for hit in hits))
        which = f" name one of {', '.join(paths)}, or" if len(paths) == len(hits) else ""
        raise EditDoesNotApply(
            f"{where} has {len(hits)} definitions named {symbol!r} (lines {lines}):{which}"
            " give old_text instead, copied from the one to change."
        )
    return hits[0]


def _missing(where: str, symbol: str, named: list[_Named]) -> str:
    names = list(dict.fromkeys(".".join(one.path) for one in named))
    if not names:
        return f"{where} has no {symbol!r}; milk finds no definitions in it."
    return f"{where} has no {symbol!r}. Its symbols are: {', '.join(names[:40])}."


def _span(text: str, found: _Named, symbol: str) -> SymbolSpan:
    """The whole definition: from its first doc comment or attribute, if any."""
    extent = found.extent
    code, end = extent.levels[0]
    start = extent.heads[0][0] if extent.heads else code
    indent = _indent(text, start)
    first, last = _line_of(text, start), _line_of(text, max(start, end - 1))
    if start == code:
        return SymbolSpan(symbol, extent.definition.kind, start, end, first, last, indent)
    kind = extent.definition.kind
    return SymbolSpan(symbol, kind, start, end, first, last, indent, code, _line_of(text, code))


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _first_word(text: str) -> str:
    found = _WORD.search(text)
    return found.group() if found else ""


def _level(text: str, levels: tuple[tuple[int, int], ...], word: str, name: str) -> int:
    """Which of the statements holding a definition new text starting with `word` replaces:
    the innermost starting with that word (`export`, `const`, `type`); else, when the
    definition itself starts with its name (`x = …`, Go's `Reader struct`), the statement
    around it (the new text has its own `let`); else the definition itself."""
    words = [_first_word(text[start:end]) for start, end in levels]
    same = [number for number, first in enumerate(words) if first == word]
    if same:
        return same[-1]
    if len(levels) > 1 and words[-1] == name and word != name:
        return len(levels) - 2
    return len(levels) - 1


def _without_keywords(new: str, old: str, name: str) -> str:
    """New text for a definition that starts with its name and shares its statement (one of
    Go's `type (…)` group, `const a = 1, b = 2`), without the keywords it begins with."""
    if _first_word(old) != name or _first_word(new) == name:
        return new
    at = re.search(rf"(?<![\w$]){re.escape(name)}(?![\w$])", new.split("\n", 1)[0])
    if at is None or not _KEYWORDS.fullmatch(new, 0, at.start()):
        return new
    return new[at.start() :]


def _attributes_start(extent: Extent) -> int:
    """Where a definition's attributes after its doc comments start (its code when none)."""
    heads = extent.heads
    last_comment = max((n for n, (_, comment) in enumerate(heads) if comment), default=-1)
    rest = heads[last_comment + 1 :]
    return rest[0][0] if rest else extent.levels[0][0]


def _indent(text: str, offset: int) -> str:
    """The indentation of the line `offset` is on."""
    line = text[text.rfind("\n", 0, offset) + 1 : offset + 1]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _head_end(text: str, language: Language) -> tuple[int, bool, bool]:
    """Where the code of new text starts after the comments and attributes it begins with
    (0 when it begins with none), and whether comments and attributes are among them."""
    at, commented, decorated = 0, False, False
    hashes = language.name in ("ruby", "bash", "php")
    brackets = language.name in ("csharp", "cpp", "c")
    while True:
        code = len(text) - len(text[at:].lstrip())
        rest = text[code:]
        if (
            rest.startswith("//")
            or (hashes and rest.startswith("#") and rest[1:2] != "[")
            or (language.name == "lua" and rest.startswith("--"))
        ):
            newline = text.find("\n", code)
            at, commented = (len(text) if newline < 0 else newline + 1), True
        elif rest.startswith("/*"):
            close = text.find("*/", code + 2)
            at, commented = (len(text) if close < 0 else close + 2), True
        elif rest.startswith("@"):
            name = _DECORATOR_NAME.match(text, code)
            after = name.end() if name else code + 1
            at = _balanced(text, after) if text[after : after + 1] == "(" else after
            decorated = True
        elif rest.startswith(("#[", "#![")) or (brackets and rest.startswith("[")):
            at, decorated = _balanced(text, text.index("[", code)), True
        else:
            return (code if at else 0), commented, decorated


def _balanced(text: str, at: int) -> int:
    """The end of the bracketed text opening at `at` (strings not considered)."""
    closing: list[str] = []
    for number in range(at, len(text)):
        char = text[number]
        if char in _OPENERS:
            closing.append(_OPENERS[char])
        elif closing and char == closing[-1]:
            closing.pop()
            if not closing:
                return number + 1
    return len(text)


def _insert(
    text: str, parts: tuple[str, ...], new_text: str, language: Language
) -> tuple[str, SymbolSpan] | None:
    """Add a definition that is not there yet at the end of its container (class, `impl`,
    interface), or of the file for a function or a Go method; None when there is no such
    container, its closing line cannot be found, or the result does not define `parts` once
    or parses worse."""
    if not parts:
        return None
    source = dedent(new_text)
    if len(parts) == 1 or _receivers(language, text, parts[-2]):
        head, tail, indent, gap = text.rstrip(), "", "", "\n"
    else:
        body = _container(bodies(text, language), parts[-2])
        if body is None:
            return None
        close_line = text.rfind("\n", 0, body.close) + 1
        if text[close_line : body.close].strip():
            return None  # `class A {}` on one line
        opening_end = text.find("\n", body.open)
        inside = text[opening_end + 1 : close_line] if 0 <= opening_end < close_line else ""
        members = [line for line in inside.split("\n") if line.strip()]
        if members:
            indent, gap = members[-1][: len(members[-1]) - len(members[-1].lstrip(" \t"))], "\n"
        else:
            opening = text[text.rfind("\n", 0, body.start) + 1 : body.start + 1]
            indent, gap = opening[: len(opening) - len(opening.lstrip(" \t"))] + _unit(text), ""
        head, tail = text[:close_line].rstrip(), text[close_line:]
    block = reindent(source, indent)
    lead = f"{head}\n{gap}" if head else ""
    added = f"{lead}{block}\n{tail}"
    hits = [one for one in _named(added, language) if one.path[-len(parts) :] == parts]
    if (
        len(hits) != 1
        or (hits[0].extent.definition.kind == "method" and len(hits[0].path) == 1)
        or len(syntax_problems(added, language)) > len(syntax_problems(text, language))
    ):
        return None  # not that one definition, a method outside of a class, or broken
    first = lead.count("\n") + 1
    span = SymbolSpan(".".join(parts), "added", 0, 0, first, first + block.count("\n"), indent)
    return added, span


def _receivers(language: Language, text: str, owner: str) -> bool:
    """Whether a method of `owner` is declared outside of it, anywhere (Go's receivers),
    and the file defines `owner`."""
    if not any(rule.receiver for rule in language.definitions):
        return False
    return any(one.path[-1] == owner for one in _named(text, language))


def _container(found: list[Body], name: str) -> Body | None:
    """The container called `name` a new member goes in: an inherent Rust `impl` before one
    of a trait."""
    named = [body for body in found if body.name == name and body.close >= 0]
    return next((body for body in named if not body.trait), named[0] if named else None)


def _unit(text: str) -> str:
    """One level of indentation as the file has it."""
    if re.search(r"^\t", text, re.MULTILINE):
        return "\t"
    widths = [len(m.group()) for m in re.finditer(r"^ +(?=\S)", text, re.MULTILINE)]
    return " " * min(widths, default=4)
