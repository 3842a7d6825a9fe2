"""How each front door names its settings and its way to Claude, for messages the user reads.

"Set the milk.local.baseUrl setting" is right in VS Code and wrong everywhere else: a
Neovim user sets `local = { baseUrl = … }` in `setup()`, a terminal user passes
`--base-url`, an ACP client has no settings UI at all. One `Door` is chosen per connection
(the LSP server from `initialize`, ACP and the terminal know themselves) and handed to the
parts that word messages, so each message names the user's own way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

DoorName = Literal["vscode", "nvim", "lsp", "terminal", "acp"]

_TERMINAL_FLAGS = {
    "local.baseUrl": "--base-url",
    "local.model": "--model",
    "claude.path": "--claude-path",
    "storageDir": "--storage-dir",
}
"""Settings the terminal commands take as flags (`milk_lsp.cli._add_setting_flags`)."""


@dataclass(frozen=True)
class Door:
    """One front door's words: `setting(key)` names where a setting is set, `escalate` how
    to ask Claude instead, `undo` how to put a turn's files back."""

    name: DoorName
    escalate: str
    undo: str
    _flags: dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    def setting(self, key: str) -> str:
        """Where the user sets `key` (a dotted name as in docs/configuration.md)."""
        if self.name == "vscode":
            return f"the milk.{key} setting"
        if self.name == "nvim":
            return f"{_lua_path(key)} in require('milk').setup()"
        if self.name == "lsp":  # as docs/editors/ tells plain-LSP users to set them
            shown = _config_file_shown()
            return f"{key} in milk's config.json ({shown}) or in the server's initializationOptions"
        flag = self._flags.get(key)
        if flag is not None:
            return f"{flag} (or {key} in milk's config.json)"
        return f"{key} in milk's config.json"


def _config_file_shown() -> str:
    """Where milk's config.json is, `~` for the home folder."""
    from pathlib import Path

    from milk_lsp.config import config_file  # off start-up

    path = config_file()
    try:
        return "~/" + path.relative_to(Path.home()).as_posix()
    except ValueError:
        return str(path)


def _lua_path(key: str) -> str:
    """`local.baseUrl` → `settings = { ['local'] = { baseUrl = … } }`."""
    parts = key.split(".")
    inner = f"{parts[-1]} = …"
    for part in reversed(parts[:-1]):
        name = f"['{part}']" if part == "local" else part  # `local` is a Lua keyword
        inner = f"{name} = {{ {inner} }}"
    return f"settings = {{ {inner} }}"


VSCODE = Door(
    "vscode",
    escalate="ask Claude (the Escalate button)",
    undo="Undo under the turn (or milk: Undo Last Turn)",
)
NVIM = Door("nvim", escalate="ask Claude (:MilkEscalate, or :Milk! {text})", undo=":MilkUndo")
LSP = Door(
    "lsp",
    escalate="ask Claude (the milk.escalate command)",
    undo="the milk.undo command",
)
TERMINAL = Door(
    "terminal",
    escalate="ask Claude (milk-lsp chat --route claude)",
    undo="milk-lsp undo",
    _flags=_TERMINAL_FLAGS,
)
ACP = Door("acp", escalate="ask Claude (/escalate)", undo="/undo")

TERMINAL_CLIENT_NAME = "milk-lsp chat"
"""The `clientInfo.name` the terminal client (`milk_lsp.terminal.chat`) sends."""


def door_for_client(client_name: str | None, experimental: Any) -> Door:
    """The door of an LSP client, from `initialize`: milk's own clients advertise
    `experimental.milk` and name themselves in `clientInfo`; any other client is a plain
    LSP editor, whose settings are `milk.*` and whose way to Claude is `milk.escalate`."""
    milk = experimental.get("milk") if isinstance(experimental, dict) else None
    if not isinstance(milk, dict):
        return LSP
    name = (client_name or "").lower()
    if name == TERMINAL_CLIENT_NAME:
        return TERMINAL
    if "neovim" in name or name.startswith("nvim"):
        return NVIM
    if "code" in name or "cursor" in name or "windsurf" in name:
        return VSCODE  # Visual Studio Code, code-server, VSCodium, Code - OSS and forks
    return LSP
