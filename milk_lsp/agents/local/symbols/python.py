"""Symbols by name in Python (and the dispatch to `code` for the other languages).

A small model rewrites a whole small function ("add a docstring to `_now`") far more reliably
than it copies an exact `old_text`. `find_symbol` locates, with the standard `ast` module, a
function, class, method (`Class.method`, nested functions as `outer.inner`), a module-level
assignment or a parameter's default (`function.parameter`), as a span of the file's text;
`replace_symbol` puts new text there (re-indented to the symbol's own indentation) or, for a
function, class or method that does not exist yet, adds it at the end of its module or class.

A file of another language milk parses (JavaScript, Go, Rust, Java, …; `where` names it) goes
to `symbols.code`, which does the same with tree-sitter definitions (functions, types and
methods; no parameter defaults).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from milk_lsp.agents.local.replace import EditDoesNotApply, split_lines
from milk_lsp.agents.local.symbols.qualified import without_module
from milk_lsp.agents.local.symbols.span import SymbolSpan, dedent, reindent

if TYPE_CHECKING:
    from milk_lsp.code import Language

_Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def parse_module(text: str, where: str) -> ast.Module:
    """The module's tree; a file that does not parse cannot be edited by symbol."""
    try:
        return ast.parse(text)
    except SyntaxError as exc:
        raise EditDoesNotApply(
            f"{where} does not parse as Python (line {exc.lineno}: {exc.msg}), so symbol cannot"
            " be used; use old_text instead."
        ) from exc


def find_symbol(text: str, symbol: str, where: str) -> SymbolSpan:
    """The span of `symbol` in the source `text` of the file `where` (Python unless its
    extension is another language milk parses), or `EditDoesNotApply` saying which names
    the file has."""
    language = code_language(where)
    if language is not None:
        from milk_lsp.agents.local.symbols.code import find_code_symbol

        return find_code_symbol(text, symbol, where, language)
    tree = parse_module(text, where)
    parts = [part for part in symbol.strip().removesuffix("()").split(".") if part]
    if not parts:
        raise EditDoesNotApply("symbol must name a function, class, method or variable")
    found = _lookup(tree, parts)
    for rest in [] if found else without_module(parts, where):
        found = _lookup(tree, list(rest))
        if found is not None:
            break
    if found is None:
        raise EditDoesNotApply(
            f"{where} has no {symbol!r}. Its symbols are: {', '.join(symbol_names(tree)[:40])}."
        )
    return _span(text, found, symbol)


def symbol_names(tree: ast.Module) -> list[str]:
    """The names a model may give as `symbol`: definitions (dotted inside classes and
    functions) and module-level variables."""
    names: list[str] = []

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, _Definition):
                names.append(prefix + node.name)
                visit(node.body, f"{prefix}{node.name}.")
            elif not prefix:
                names.extend(_assigned_names(node))

    visit(tree.body, "")
    return names


def code_language(where: str) -> Language | None:
    """The language of the file `where` when milk parses it and it is not Python (whose
    symbols `ast` reads, defaults and assignments too); None otherwise."""
    from milk_lsp.code import language_for  # off start-up

    language = language_for(where)
    return None if language is None or language.name == "python" else language


def symbols_work_for(path: str) -> bool:
    """Whether a symbol can address a definition in the file at `path`: one of a language
    milk parses."""
    from milk_lsp.code import language_for

    return language_for(path) is not None


def symbol_line_range(text: str, symbol: str, where: str = "the file") -> tuple[int, int] | None:
    """1-based first and last line of `symbol` in `text` (Python unless `where` names a file
    of another language), None when it is not there (or the text does not parse)."""
    try:
        span = find_symbol(text, symbol, where)
    except EditDoesNotApply:
        return None
    return span.first_line, span.last_line


def replace_symbol(text: str, symbol: str, new_text: str, where: str) -> tuple[str, SymbolSpan]:
    """The whole new text with `symbol` replaced by `new_text` (indented as the symbol is),
    and the span it replaced. A function, class or method not in the file yet is added at
    the end of its module or class (the span is then where it went)."""
    language = code_language(where)
    if language is not None:
        from milk_lsp.agents.local.symbols.code import replace_code_symbol

        return replace_code_symbol(text, symbol, new_text, where, language)
    try:
        span = find_symbol(text, symbol, where)
    except EditDoesNotApply:
        added = _insert(text, symbol, new_text, where)
        if added is None:
            raise
        return added
    if span.kind == "default":
        body = new_text.strip()
    elif span.def_start >= 0 and not new_text.lstrip().startswith("@"):
        # new text without decorators replaces the definition under them, which stay
        span = SymbolSpan(
            span.name,
            span.kind,
            span.def_start,
            span.end,
            span.def_line,
            span.last_line,
            span.indent,
        )
        body = reindent(new_text.strip("\n"), span.indent)[len(span.indent) :]
    else:
        body = reindent(new_text.strip("\n"), span.indent)[len(span.indent) :]
    return text[: span.start] + body + text[span.end :], span


def _lookup(tree: ast.Module, parts: list[str]) -> tuple[str, ast.AST, ast.AST | None] | None:
    """(kind, node, the definition holding it) for a dotted name."""
    body: list[ast.stmt] = tree.body
    holder: _Definition | None = None
    for number, part in enumerate(parts):
        last = number == len(parts) - 1
        definition = next((n for n in body if isinstance(n, _Definition) and n.name == part), None)
        if definition is not None:
            if last:
                kind = "class" if isinstance(definition, ast.ClassDef) else "function"
                if kind == "function" and isinstance(holder, ast.ClassDef):
                    kind = "method"
                return kind, definition, holder
            holder, body = definition, definition.body
            continue
        if not last:
            return None
        if isinstance(holder, ast.FunctionDef | ast.AsyncFunctionDef):
            default = _default_of(holder, part)
            if default is not None:
                return "default", default, holder
        assignment = next((n for n in body if part in _assigned_names(n)), None)
        if assignment is not None and (holder is None or isinstance(holder, ast.ClassDef)):
            return "assignment", assignment, holder
        if holder is None and len(parts) == 1:  # a bare name: a definition at any depth
            nested = _anywhere(tree, part)
            if nested is not None:
                return nested
        return None
    return None


def _anywhere(tree: ast.Module, name: str) -> tuple[str, ast.AST, ast.AST | None] | None:
    """The one definition called `name` anywhere in the module (None when none or several)."""
    hits: list[tuple[str, ast.AST, ast.AST | None]] = []

    def visit(body: list[ast.stmt], holder: _Definition | None) -> None:
        for node in body:
            if isinstance(node, _Definition):
                if node.name == name:
                    kind = "class" if isinstance(node, ast.ClassDef) else "function"
                    if kind == "function" and isinstance(holder, ast.ClassDef):
                        kind = "method"
                    hits.append((kind, node, holder))
                visit(node.body, node)

    visit(tree.body, None)
    return hits[0] if len(hits) == 1 else None


def _default_of(function: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> ast.expr | None:
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args]
    for argument, default in zip(
        positional[len(positional) - len(arguments.defaults) :], arguments.defaults, strict=True
    ):
        if argument.arg == name:
            return default
    for argument, kw_default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True):
        if argument.arg == name and kw_default is not None:
            return kw_default
    return None


def _assigned_names(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    return []


def _span(text: str, found: tuple[str, ast.AST, ast.AST | None], symbol: str) -> SymbolSpan:
    kind, node, _ = found
    starts = _line_starts(text)
    assert isinstance(node, ast.stmt | ast.expr)
    first = node.lineno
    if isinstance(node, _Definition) and node.decorator_list:
        first = min(first, *(d.lineno for d in node.decorator_list))
    last = node.end_lineno or node.lineno
    lines = split_lines(text)
    if kind == "default":
        start = starts[node.lineno - 1] + _char_offset(lines[node.lineno - 1], node.col_offset)
        end_col = node.end_col_offset or 0
        end = starts[last - 1] + _char_offset(lines[last - 1], end_col)
        indent = ""
    else:
        line = lines[first - 1]
        indent = line[: len(line) - len(line.lstrip(" \t"))]
        start = starts[first - 1] + len(indent)
        end = starts[last - 1] + len(lines[last - 1].rstrip("\r\n"))
        if first != node.lineno:  # decorated
            def_start = starts[node.lineno - 1] + len(indent)
            return SymbolSpan(symbol, kind, start, end, first, last, indent, def_start, node.lineno)
    return SymbolSpan(symbol, kind, start, end, first, last, indent)


def _insert(text: str, symbol: str, new_text: str, where: str) -> tuple[str, SymbolSpan] | None:
    """Add a new function, class or method (`Class.name`) at the end of its module or class;
    None when `new_text` is not that one definition or the class is not there."""
    source = dedent(new_text)
    parts = [part for part in symbol.strip().split(".") if part]
    try:
        added = ast.parse(source)
    except SyntaxError:
        return None
    if not (
        parts
        and len(added.body) == 1
        and isinstance(added.body[0], _Definition)
        and added.body[0].name == parts[-1]
    ):
        return None
    tree = parse_module(text, where)
    lines = split_lines(text)
    if len(parts) == 1:
        indent, after, gap = "", len(lines), "\n\n"
    else:
        holder = _lookup(tree, parts[:-1])
        if holder is None or not isinstance(holder[1], ast.ClassDef):
            return None
        cls = holder[1]
        body_line = lines[cls.body[0].lineno - 1]
        indent = body_line[: len(body_line) - len(body_line.lstrip(" \t"))]
        after, gap = cls.end_lineno or cls.lineno, "\n"
    head = "".join(lines[:after]).rstrip("\n")
    block = reindent(source, indent)
    new_head = f"{head}\n{gap}{block}\n" if head else f"{block}\n"
    first = new_head.count("\n") - block.count("\n")
    span = SymbolSpan(symbol, "added", 0, 0, first, first + block.count("\n"), indent)
    return new_head + "".join(lines[after:]), span


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for line in split_lines(text):
        starts.append(starts[-1] + len(line))
    return starts


def _char_offset(line: str, utf8_col: int) -> int:
    """`ast` columns count UTF-8 bytes; string offsets count characters."""
    return len(line.encode("utf-8")[:utf8_col].decode("utf-8", "ignore"))
