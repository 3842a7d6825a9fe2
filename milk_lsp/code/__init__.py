"""Reading code in every common language (ast-grep-py's bundled tree-sitter grammars,
offline): what a file defines, and where its syntax is broken. ast-grep-py is imported on
the first parse, never when this package is."""

from milk_lsp.code.languages import LANGUAGES, DefinitionRule, Language, language_for
from milk_lsp.code.parse import (
    Definition,
    SyntaxProblem,
    added_at_heads,
    bound_and_used,
    definitions,
    syntax_problems,
)

__all__ = [
    "LANGUAGES",
    "Definition",
    "DefinitionRule",
    "Language",
    "SyntaxProblem",
    "added_at_heads",
    "bound_and_used",
    "definitions",
    "language_for",
    "syntax_problems",
]
