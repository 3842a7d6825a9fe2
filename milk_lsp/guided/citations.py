"""How checked citations read in an answer's text: a block every door shows as it is (a
terminal prints it, Neovim's `gF` follows its lines) and the doors that make links find by
its first line (`SOURCES_HEADING`; protocol.md, the `citations` update)."""

from __future__ import annotations

from collections.abc import Sequence

from milk_lsp.agents.base import Cited

SOURCES_HEADING = "Sources (checked by milk):"
PROPOSED_HEADING = "Proposed, not in the workspace yet:"


def place(citation: Cited) -> str:
    """`path:line`, or `path:line-end` for several lines."""
    if citation.end_line > citation.line:
        return f"{citation.path}:{citation.line}-{citation.end_line}"
    return f"{citation.path}:{citation.line}"


def sources_block(citations: Sequence[Cited], proposed: Sequence[str]) -> str:
    """The text after an answer: its sources, then the files it proposes; "" for none."""
    parts: list[str] = []
    if citations:
        lines = "\n".join(f"- {place(citation)}" for citation in citations)
        parts.append(f"{SOURCES_HEADING}\n{lines}")
    if proposed:
        lines = "\n".join(f"- {path}" for path in proposed)
        parts.append(f"{PROPOSED_HEADING}\n{lines}")
    return "".join(f"\n\n{part}" for part in parts)
