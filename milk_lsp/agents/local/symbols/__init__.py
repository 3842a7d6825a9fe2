"""Symbols by name, for edits a small model can address without quoting text: Python's with
`ast` (`python`), the other languages milk parses with tree-sitter (`code`), and where a
symbol's text is (`span`)."""

from milk_lsp.agents.local.symbols.python import (
    find_symbol,
    replace_symbol,
    symbol_line_range,
    symbols_work_for,
)
from milk_lsp.agents.local.symbols.span import SymbolSpan

__all__ = [
    "SymbolSpan",
    "find_symbol",
    "replace_symbol",
    "symbol_line_range",
    "symbols_work_for",
]
