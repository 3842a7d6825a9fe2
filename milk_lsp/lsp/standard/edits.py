"""The edits that bring a client's open transcript in step with milk's (pure).

milk keeps the body (what it wrote) and the client keeps the document (what the user sees
and may type into). `plan_edits` compares the client's text before the marker with what
milk last wrote there, and answers with the next batch: an insertion at the end of the
body (and the clearing of a question milk took), nothing, a wait for the client to report
milk's last edit, or, when they differ otherwise, a replacement of the whole document that
keeps the user's question area. Positions are in the client's units (`lsp.positions`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from milk_lsp.lsp.positions import Encoding, position_at
from milk_lsp.lsp.standard.transcript import join_document, split_document


@dataclass(frozen=True)
class Edit:
    """A text edit in the client's position units (LSP `TextEdit`)."""

    start: tuple[int, int]
    end: tuple[int, int]
    new_text: str


@dataclass(frozen=True)
class Plan:
    """What one batch sends: `edit` (these edits), `replace` (the whole document), `none`,
    or `wait` (the client has not reported milk's last edit yet)."""

    kind: Literal["edit", "replace", "none", "wait"]
    edits: list[Edit] = field(default_factory=list)


def plan_edits(
    client_text: str,
    confirmed: str | None,
    body: str,
    taken: str | None,
    encoding: Encoding,
    *,
    force: bool = False,
) -> Plan:
    """The next batch for an open transcript.

    `confirmed` is the body as the client had it after milk's last applied edit (None: not
    known, replace); `taken` is the question milk took from the question area and must clear.
    """
    text = client_text.replace("\r\n", "\n")
    split = split_document(text)
    if split is not None and confirmed is not None and not force:
        client_body, question = split
        if client_body == confirmed and body.startswith(confirmed):
            edits = []
            if len(body) > len(confirmed):
                at = position_at(text, len(confirmed), encoding)
                edits.append(Edit(at, at, body[len(confirmed) :]))
            clear = _clear_edit(text, question, taken, encoding)
            if clear is not None:
                edits.append(clear)
            return Plan("edit", edits) if edits else Plan("none")
        if confirmed.startswith(client_body) and body.startswith(confirmed):
            return Plan("wait")
    question = split[1] if split is not None else _leftover(text, body)
    question = without(question, taken)
    end = position_at(text, len(text), encoding)
    return Plan("replace", [Edit((0, 0), end, join_document(body, question))])


def _clear_edit(text: str, question: str, taken: str | None, encoding: Encoding) -> Edit | None:
    if taken is None or not question:
        return None
    start = len(text) - len(question)
    if question.strip() == taken.strip():
        end = len(text)
    elif question.startswith(taken):
        end = start + len(taken)
    else:  # the user rewrote it meanwhile: theirs now
        return None
    return Edit(position_at(text, start, encoding), position_at(text, end, encoding), "")


def without(question: str, taken: str | None) -> str:
    """The question area once the `taken` question is cleared from it."""
    if taken is None:
        return question
    if question.strip() == taken.strip():
        return ""
    return question[len(taken) :] if question.startswith(taken) else question


def _leftover(text: str, body: str) -> str:
    """With the marker gone: what the client has beyond milk's body is taken as the
    user's question, so a resynchronisation never drops their words."""
    common = 0
    for ours, theirs in zip(body, text, strict=False):
        if ours != theirs:
            break
        common += 1
    return text[common:].strip("\n") if common == len(body) else ""
