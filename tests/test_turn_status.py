"""A turn's status in words for `$/progress`, and the throttle (on a real event loop)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from milk_lsp.lsp.standard.progress import StatusThrottle, status_words


def call(name: str, tool_input: dict[str, Any], status: str = "running") -> dict[str, Any]:
    return {"kind": "tool_call", "name": name, "input": tool_input, "status": status}


@pytest.mark.parametrize(
    ("update", "words"),
    [
        ({"kind": "turn_started", "agent": "local"}, "thinking…"),
        ({"kind": "turn_started", "agent": "claude"}, "Claude: starting…"),
        ({"kind": "text", "delta": "x"}, "answering…"),
        ({"kind": "thinking", "delta": "x"}, "thinking…"),
        ({"kind": "escalated", "contextChars": 2500}, "sent to Claude (2.5k-char summary)"),
        (call("read_file", {"path": "main.py"}), "reading main.py"),
        (
            call("Read", {"file_path": "/a/very/long/path/that/goes/on/and/on/to/main.py"}),
            "reading main.py",
        ),
        (
            call("edit_file", {"path": "a.py"}, "pending"),
            "waiting for your permission: editing a.py",
        ),
        (call("Grep", {"pattern": "def  main"}), "searching for def main"),
        (call("run_command", {"command": "pytest -q"}), "running pytest -q"),
        (call("Bash", {"command": "x" * 80}), "running " + "x" * 39 + "…"),
        (call("Task", {"prompt": "p"}), "using Task"),
        (call("Bash", {}, "pending"), None),
        (call("Bash", {"command": "ls"}, "completed"), None),
        (call("Bash", {"command": "ls"}, "denied"), "Bash denied"),
        ({"kind": "usage"}, None),
        ({"kind": "turn_ended"}, None),
    ],
)
def test_status_words(update: dict[str, Any], words: str | None) -> None:
    assert status_words(update) == words


async def test_the_throttle_sends_few_and_never_loses_the_latest() -> None:
    sent: list[tuple[str, str]] = []
    throttle = StatusThrottle(lambda turn, message: sent.append((turn, message)), 0.1)
    for _ in range(1000):
        throttle.report("t", "answering…")
    assert sent == [("t", "answering…")]  # the same words again are not news
    throttle.report("t", "reading a.py")
    throttle.report("t", "reading b.py")
    assert sent == [("t", "answering…")]  # held back: too soon
    await asyncio.sleep(0.15)
    assert sent[-1] == ("t", "reading b.py")  # the latest, when the pause ended
    assert len(sent) == 2
    throttle.report("u", "thinking…")  # another turn has its own pace
    assert sent[-1] == ("u", "thinking…")
    throttle.report("t", "answering…")
    throttle.forget("t")  # ended: what was held back is dropped
    await asyncio.sleep(0.15)
    assert sent[-1] == ("u", "thinking…")
