"""Where a symbol's text is in a file, and the re-indenting of a model's new text for it:
shared by the Python symbols (`python`, `ast`) and those of other languages
(`code`, tree-sitter)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SymbolSpan:
    """Where a symbol's text is: `start`/`end` are offsets into the file's text, `first_line`
    and `last_line` 1-based; `indent` is the indentation its first line has."""

    name: str
    kind: str
    """function, class, method, assignment or default."""
    start: int
    end: int
    first_line: int
    last_line: int
    indent: str
    def_start: int = -1
    """For a decorated definition, where its `def`/`class` line's text starts (-1: none)."""
    def_line: int = 0


def dedent(text: str) -> str:
    """`text` without its blank first and last lines and its first line's indentation."""
    return reindent(text.strip("\n"), "")


def reindent(block: str, indent: str) -> str:
    """`block` with its first line's indentation made `indent`, the other lines shifted alike
    (a model's text for a method often comes without the class's indentation)."""
    lines = block.split("\n")
    first = next((line for line in lines if line.strip()), "")
    have = len(first) - len(first.lstrip(" \t"))
    out = []
    for line in lines:
        if not line.strip():
            out.append("")
            continue
        lead = len(line) - len(line.lstrip(" \t"))
        out.append(indent + line[min(have, lead) :])
    return "\n".join(out)
