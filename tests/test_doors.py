"""Each front door names its own settings and its way to Claude (issue 20 item 13).

The door of an LSP client comes from `initialize`; the unreachable-model message of the real
HTTP client (against a closed port) and the hand-off failure advice are worded per door.
"""

from __future__ import annotations

import socket

import pytest

from milk_lsp import doors
from milk_lsp.agents.base import FailureReason, LocalGaveUp, LocalSignal
from milk_lsp.agents.claude.cli import not_found_message
from milk_lsp.agents.claude.command import ClaudeSettings
from milk_lsp.agents.local.client import LocalClient, LocalSettings
from milk_lsp.engine.local import handoff

MILK = {"milk": {"requestPermission": True}}

BASE_URL = {
    "vscode": "the milk.local.baseUrl setting",
    "nvim": "settings = { ['local'] = { baseUrl = … } } in require('milk').setup()",
    # issue 31: a plain-LSP user sets milk in config.json or initializationOptions (docs/editors)
    "lsp": "local.baseUrl in milk's config.json (",
    "terminal": "--base-url (or local.baseUrl in milk's config.json)",
    "acp": "local.baseUrl in milk's config.json",
}
ESCALATE = {
    "vscode": "the Escalate button",
    "nvim": ":MilkEscalate",
    "lsp": "the milk.escalate command",
    "terminal": "--route claude",
    "acp": "/escalate",
}
ALL = [doors.VSCODE, doors.NVIM, doors.LSP, doors.TERMINAL, doors.ACP]


@pytest.mark.parametrize(
    ("name", "experimental", "door"),
    [
        ("Visual Studio Code", MILK, doors.VSCODE),
        ("code-server", MILK, doors.VSCODE),
        ("Neovim", MILK, doors.NVIM),
        ("Neovim :checkhealth milk", MILK, doors.NVIM),
        ("milk-lsp chat", MILK, doors.TERMINAL),
        ("Neovim", None, doors.LSP),  # plain Neovim, without milk's plugin
        ("Emacs", {}, doors.LSP),
        (None, MILK, doors.LSP),
        ("Visual Studio Code", {"milk": "yes"}, doors.LSP),
    ],
)
def test_the_door_of_a_client_comes_from_initialize(
    name: str | None, experimental: object, door: doors.Door
) -> None:
    assert doors.door_for_client(name, experimental) is door


def test_nested_keys_are_named_as_each_door_sets_them() -> None:
    assert doors.NVIM.setting("claude.path") == (
        "settings = { claude = { path = … } } in require('milk').setup()"
    )
    assert doors.NVIM.setting("route") == "settings = { route = … } in require('milk').setup()"
    assert doors.TERMINAL.setting("local.maxToolRounds") == (
        "local.maxToolRounds in milk's config.json"
    )
    assert doors.VSCODE.setting("local.model") == "the milk.local.model setting"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("door", ALL, ids=lambda d: d.name)
async def test_the_unreachable_model_message_names_the_doors_setting(door: doors.Door) -> None:
    base = f"http://127.0.0.1:{free_port()}/v1"
    client = LocalClient(LocalSettings(base_url=base, connect_timeout_seconds=2, door=door))
    try:
        reachable, _, message = await client.probe()
    finally:
        await client.aclose()
    assert not reachable and message is not None
    assert "connection refused" in message
    assert f"start Ollama/llama-server or set {BASE_URL[door.name]}" in message
    if door is not doors.VSCODE:
        assert BASE_URL["vscode"] not in message  # VS Code's words, elsewhere wrong


@pytest.mark.parametrize("door", ALL, ids=lambda d: d.name)
def test_the_hand_off_failure_advice_names_the_doors_way_to_claude(door: doors.Door) -> None:
    gave_up = LocalGaveUp(LocalSignal.EMPTY_REPLY, "the local model returned an empty reply")
    reason, message = handoff.failure(gave_up, "Hand-off to Claude is off (local.handOff).", door)
    assert reason is FailureReason.LOCAL_FAILED
    assert message.endswith(f"To go on, {door.escalate}, or rephrase and try again.")
    assert ESCALATE[door.name] in message
    assert "(Escalate)" not in message
    rounds = LocalGaveUp(LocalSignal.ROUND_LIMIT, "20 tool rounds used")
    _, advice = handoff.failure(rounds, "", door)
    assert door.setting("local.maxToolRounds") in advice and ESCALATE[door.name] in advice


def test_the_claude_not_found_message_names_the_doors_setting() -> None:
    settings = ClaudeSettings(path="/nowhere/claude")
    assert "--claude-path" in not_found_message(settings, doors.TERMINAL)
    assert "the milk.claude.path setting" in not_found_message(settings, doors.VSCODE)
    assert "claude = { path = … }" in not_found_message(settings, doors.NVIM)
