"""End to end: Claude's file tools through the REAL Claude Code CLI on the Messages-API
stand-in — each permission question carries the whole-file diff milk computed, and the turn's
changes (a `Bash` command's included) are listed and undone byte for byte."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from milk_lsp.agents.claude.cli import bundled_cli_path
from tests.e2e.conftest import Env, Harness, MilkClient, request
from tests.fakes.anthropic_api import FakeAnthropicAPI

pytestmark = [pytest.mark.e2e, pytest.mark.claude]

if bundled_cli_path() is None:  # pragma: no cover - the wheel always ships it
    pytest.skip("claude-agent-sdk's bundled CLI is missing", allow_module_level=True)

NOTEBOOK = {
    "cells": [
        {
            "cell_type": "code",
            "id": "c1",
            "metadata": {},
            "source": "print(1)",
            "execution_count": None,
            "outputs": [],
        }
    ],
    "metadata": {},
    "nbformat": 4,
    "nbformat_minor": 5,
}


@pytest.fixture
async def claude_client(harness: Harness, claude_env: Env) -> MilkClient:
    return await harness.start()


def tool(name: str, **tool_input: Any) -> dict[str, Any]:
    return {"tool_use": {"name": name, "input": tool_input}}


async def escalate(client: MilkClient, env: Env, text: str) -> dict[str, Any]:
    session = await request(client, "milk/session/new", {"workspaceFolder": env.workspace.as_uri()})
    return await request(client, "milk/escalate", {"sessionId": session["sessionId"], "text": text})


def edits_asked(client: MilkClient, tool_name: str) -> list[dict[str, Any]]:
    asked = [q for q in client.permission_requests if q["tool"] == tool_name]
    assert asked, [q["tool"] for q in client.permission_requests]
    return asked[0]["edits"]


async def test_edit_and_write_carry_whole_file_diffs(
    claude_client: MilkClient, claude_env: Env, api: FakeAnthropicAPI
) -> None:
    client, env = claude_client, claude_env
    hello = env.workspace / "hello.py"
    original = hello.read_text()
    client.permission_answers.extend(["allow_once"] * 4)
    api.enqueue(
        tool("Read", file_path=str(hello)),
        tool("Edit", file_path=str(hello), old_string="'hello'", new_string="'hey'"),
        tool("Write", file_path=str(env.workspace / "notes.md"), content="# Notes\n"),
        {"text": "Edited and wrote."},
    )
    result = await escalate(client, env, "edit and write")
    assert result["stopReason"] == "end_turn", result
    assert edits_asked(client, "Edit") == [
        {"uri": hello.as_uri(), "before": original, "after": original.replace("'hello'", "'hey'")}
    ]
    assert edits_asked(client, "Write") == [
        {"uri": (env.workspace / "notes.md").as_uri(), "after": "# Notes\n"}
    ]
    assert hello.read_text() == original.replace("'hello'", "'hey'")
    assert sorted((Path(c["uri"]).name, c["kind"]) for c in result["changes"]) == [
        ("hello.py", "modified"),
        ("notes.md", "created"),
    ]
    await request(
        client, "milk/turn/undo", {"sessionId": result["sessionId"], "turnId": result["turnId"]}
    )
    assert hello.read_text() == original
    assert not (env.workspace / "notes.md").exists()


async def test_notebook_edit_carries_its_diff_and_denied_changes_nothing(
    claude_client: MilkClient, claude_env: Env, api: FakeAnthropicAPI
) -> None:
    """(The bundled CLI has no MultiEdit tool any more; its preview is covered by
    tests/test_edit_preview.py.)"""
    client, env = claude_client, claude_env
    notebook = env.workspace / "book.ipynb"
    notebook.write_text(json.dumps(NOTEBOOK, indent=1) + "\n")
    client.permission_answers.append("deny")
    api.enqueue(
        tool("Read", file_path=str(notebook)),
        tool("NotebookEdit", notebook_path=str(notebook), cell_id="c1", new_source="print(2)"),
        {"text": "Denied."},
    )
    result = await escalate(client, env, "edit the notebook")
    assert result["stopReason"] == "end_turn", result
    [book] = edits_asked(client, "NotebookEdit")
    assert json.loads(book["before"]) == NOTEBOOK
    assert json.loads(book["after"])["cells"][0]["source"] == "print(2)"
    assert "changes" not in result  # denied: nothing changed, nothing to undo
    assert json.loads(notebook.read_text()) == NOTEBOOK


async def test_bash_changes_are_undone(
    claude_client: MilkClient, claude_env: Env, api: FakeAnthropicAPI
) -> None:
    client, env = claude_client, claude_env
    hello = env.workspace / "hello.py"
    original = hello.read_bytes()
    client.permission_answers.append("allow_once")
    api.enqueue(
        tool("Bash", command="rm hello.py && printf 'made\\n' > made.txt", description="shuffle"),
        {"text": "Shuffled."},
    )
    result = await escalate(client, env, "shuffle files")
    assert result["stopReason"] == "end_turn", result
    assert not hello.exists()
    assert sorted((Path(c["uri"]).name, c["kind"]) for c in result["changes"]) == [
        ("hello.py", "deleted"),
        ("made.txt", "created"),
    ]
    await request(
        client, "milk/turn/undo", {"sessionId": result["sessionId"], "turnId": result["turnId"]}
    )
    assert hello.read_bytes() == original
    assert not (env.workspace / "made.txt").exists()
