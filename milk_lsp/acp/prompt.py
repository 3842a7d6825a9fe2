"""A `session/prompt`'s content blocks as milk's message: text, attachments and a command.

Text blocks are joined as written; a mentioned file (an embedded text resource or a resource
link) stands in the text as `@path` and becomes an attachment, which milk appends to the
message the agents see (as `milk/chat`'s `context` does). Images, audio and binary resources
are refused with an error naming the block: milk's agents take text, and milk says so in its
prompt capabilities. A prompt starting with one of `COMMANDS` is that command.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp.schema import (
    AudioContentBlock,
    BlobResourceContents,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
)

from milk_lsp import wire
from milk_lsp.workspace.paths import uri_to_path

ContentBlock = (
    TextContentBlock
    | ImageContentBlock
    | AudioContentBlock
    | ResourceContentBlock
    | EmbeddedResourceContentBlock
)

COMMANDS: dict[str, tuple[str, str]] = {
    "escalate": (
        "Hand this session to Claude Code now, with milk's context of what happened so far",
        "what Claude should do (optional)",
    ),
    "local": (
        "Take the session back from Claude: this message (or, without one, every message) "
        "goes to the local model",
        "message for the local model (optional)",
    ),
    "advise": (
        "Claude Code writes a plan; the local model carries it out step by step, and Claude "
        "does the steps it cannot",
        "what to plan and do",
    ),
    "context": (
        "Show exactly what Claude would receive if the session escalated now",
        "a reason, to preview an escalation by the local model (optional)",
    ),
    "new": (
        "Over ACP, a new session is a new chat: says how to start one",
        "",
    ),
    "undo": (
        "Take back the files the last turn with changes changed (edits and commands alike)",
        "force, to undo even files changed since (optional)",
    ),
}
"""Slash commands: name → (description, input hint)."""
UNOFFERED = frozenset({"new"})
"""Commands understood when typed but not advertised (`/new`: see `commands`)."""


class PromptError(ValueError):
    """A prompt milk cannot take; `field` is where, in the request's params."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class Link:
    """A resource link to a file, read through the client when it can."""

    field: str
    uri: str
    path: Path | None


@dataclass
class Prompt:
    text: str
    """What the user wrote, mentions as `@path`."""
    embedded: list[tuple[wire.ContextItem, Path | None]] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    command: str | None = None
    argument: str = ""
    """The text after the command."""


def read_prompt(blocks: Sequence[ContentBlock], workspace: Path) -> Prompt:
    pieces: list[tuple[str, bool]] = []
    prompt = Prompt("")
    for index, block in enumerate(blocks):
        where = f"prompt[{index}]"
        if isinstance(block, TextContentBlock):
            _join(pieces, block.text, mention=False)
        elif isinstance(block, ImageContentBlock | AudioContentBlock):
            raise PromptError(
                where,
                f"{block.type} content is not supported: milk's models take text "
                f"(promptCapabilities.{block.type} is false)",
            )
        elif isinstance(block, EmbeddedResourceContentBlock):
            resource = block.resource
            if isinstance(resource, BlobResourceContents):
                raise PromptError(
                    f"{where}.resource",
                    "binary (blob) resources are not supported: embed text resources",
                )
            item = context_item(f"{where}.resource", resource.uri, resource.text)
            path = uri_to_path(resource.uri)
            prompt.embedded.append((item, path))
            _join(pieces, "@" + _label(resource.uri, path, workspace), mention=True)
        else:
            path = uri_to_path(block.uri)
            context_item(f"{where}.uri", block.uri, None)
            prompt.links.append(Link(f"{where}.uri", block.uri, path))
            _join(pieces, "@" + _label(block.name or block.uri, path, workspace), mention=True)
    prompt.text = "".join(text for text, _ in pieces).strip()
    if not prompt.text:
        raise PromptError("prompt", "the prompt has no text")
    command = _COMMAND.match(prompt.text)
    if command is not None and command[1] in COMMANDS:
        prompt.command = command[1]
        prompt.argument = (command[2] or "").strip()
    return prompt


_COMMAND = re.compile(r"/([a-z]+)(?:\s+(.*))?\Z", re.DOTALL)


def context_item(field: str, uri: str, text: str | None) -> wire.ContextItem:
    """An attachment, checked like `milk/chat`'s `context` (errors name `field`)."""
    raw: dict[str, Any] = {"uri": uri} if text is None else {"uri": uri, "text": text}
    try:
        return wire.parse(wire.ContextItem, raw)
    except wire.ParamsError as exc:
        detail = str(exc).removeprefix("invalid params: ")
        raise PromptError(field, detail) from None


def _label(name: str, path: Path | None, workspace: Path) -> str:
    if path is not None:
        try:
            return str(path.relative_to(workspace))
        except ValueError:
            return str(path)
    return name


def _join(pieces: list[tuple[str, bool]], text: str, *, mention: bool) -> None:
    """Append text, with a space between a mention and the words around it."""
    if pieces and text:
        before, was_mention = pieces[-1]
        if (
            (mention or was_mention)
            and before
            and not before[-1].isspace()
            and not text[0].isspace()
        ):
            pieces.append((" ", False))
    pieces.append((text, mention))
