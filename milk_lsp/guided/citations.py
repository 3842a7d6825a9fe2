"""How checked citations read in an answer's text: a block every door shows as it is (a
terminal prints it, Neovim's `gF` follows its lines) and the doors that make links find by
its first line (`SOURCES_HEADING`; protocol.md, the `citations` update)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

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


def is_sources_block(delta: str) -> bool:
    """Whether a text delta is the block `sources_block` made (sent as one delta), which a
    door that renders the `citations` update as links leaves out of the text."""
    return delta.startswith((f"\n\n{SOURCES_HEADING}", f"\n\n{PROPOSED_HEADING}"))


def wire_place(citation: Mapping[str, Any]) -> str:
    """`path:line(-end)` of one citation of the `citations` update."""
    line, end = int(citation.get("line") or 0), int(citation.get("endLine") or 0)
    span = f"{line}-{end}" if end > line else str(line)
    return f"{citation.get('path')}:{span}"


def markdown_sources(update: Mapping[str, Any]) -> str:
    """The `citations` update as the sources block with Markdown links to each place."""
    parts: list[str] = []
    citations = update.get("citations") or []
    if citations:
        lines = "\n".join(
            f"- [{wire_place(cited)}]({cited.get('uri')}#L{cited.get('line')})"
            for cited in citations
        )
        parts.append(f"{SOURCES_HEADING}\n{lines}")
    proposed = update.get("proposed") or []
    if proposed:
        lines = "\n".join(f"- {item.get('path')} (not in the workspace yet)" for item in proposed)
        parts.append(f"{PROPOSED_HEADING}\n{lines}")
    return "".join(f"\n\n{part}" for part in parts) + ("\n" if parts else "")
