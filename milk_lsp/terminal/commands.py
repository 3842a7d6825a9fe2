"""The slash commands of `milk-lsp chat`, the same in the loop and as a one-shot message.

A message is a command when its first word is `/` and a name, and nothing else: `/undo`,
`/escalate fix it`. A path is not (`/etc/hosts is what?` goes to the model as it is), and
`//` sends a message that starts with `/` (`//undo` sends "/undo").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from milk_lsp.terminal.printer import ChatPrinter

COMMANDS = {
    "undo": "take back the files the session's last turn with changes changed",
    "escalate": "ask Claude: /escalate [text] (no text: Claude carries on with the goal)",
    "local": "send the next message (or /local text) to the local model",
    "advise": "/advise text: Claude writes a plan, the local model carries it out",
    "new": "start a new session in this folder; the following messages go there",
    "context": "show what Claude would get if the session went to it now",
    "help": "this list",
    "quit": "leave (so does Ctrl-D)",
}
"""Name → what it does, in the order /help lists them."""

_COMMAND = re.compile(r"/([A-Za-z][\w-]*)(?:\s+(.*))?", re.DOTALL)


@dataclass(frozen=True)
class Command:
    name: str
    """Lower case; maybe not one of `COMMANDS` (then the list is shown, nothing sent)."""
    text: str
    """What follows the name, stripped ("" when nothing)."""

    @property
    def known(self) -> bool:
        return self.name in COMMANDS


def parse(line: str) -> Command | None:
    """The command `line` is, or None for a message."""
    match = _COMMAND.fullmatch(line.strip())
    if match is None:
        return None
    return Command(match.group(1).lower(), (match.group(2) or "").strip())


def message_text(line: str) -> str:
    """A message as the model gets it: `//…` loses its first slash."""
    stripped = line.strip()
    return stripped[1:] if stripped.startswith("//") else stripped


def help_lines() -> list[str]:
    width = max(len(name) for name in COMMANDS) + 1
    lines = [f"  /{name:<{width}} {words}" for name, words in COMMANDS.items()]
    lines.append("  (//text sends a message that starts with /; Ctrl-C cancels a turn)")
    return lines


def unknown(command: Command, printer: ChatPrinter) -> None:
    """An unknown slash word: the list of commands, and nothing sent."""
    printer.say(f"unknown command /{command.name}; nothing was sent. The commands:", "warning")
    for line in help_lines():
        printer.err.write(line + "\n")
    printer.err.flush()


def show_help(printer: ChatPrinter) -> None:
    printer.show("Type a message to send it, or a command:")
    for line in help_lines():
        printer.show(line)
