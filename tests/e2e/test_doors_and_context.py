"""End to end: the real server words its messages for the client it talks to (issue 20 item
13), and notices a model server that silently cut the prompt (issue 22 item 1).

The door comes from `initialize` (`clientInfo.name`, `experimental.milk`); the unreachable
model and the hand-off failure advice are read from the `TurnResult`. The scripted model
server reports far fewer prompt tokens than milk sent, as Ollama does when a prompt is longer
than its context: the turn ends `error` as `context_overflow`, its notice naming the cut and
the fix. Answering Ollama's `/api/version`, `/api/ps` and `/api/show` with a small context,
`milk/status` and `milk-lsp doctor` warn before any turn.
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import ClientServerConfig

from tests.e2e.conftest import Env, Harness, MilkClient, make_client, request
from tests.fakes.openai_server import FakeOpenAIServer

pytestmark = pytest.mark.e2e

CLIENTS = {
    "vscode": ("Visual Studio Code", True),
    "nvim": ("Neovim", True),
    "terminal": ("milk-lsp chat", True),
    "lsp": ("Emacs", False),
}
BASE_URL = {
    "vscode": "set the milk.local.baseUrl setting",
    "nvim": "set settings = { ['local'] = { baseUrl = … } } in require('milk').setup()",
    "terminal": "set --base-url (or local.baseUrl in milk's config.json)",
    "lsp": "set local.baseUrl in milk's config.json (",
}
ESCALATE = {
    "vscode": "ask Claude (the Escalate button)",
    "nvim": "ask Claude (:MilkEscalate, or :Milk! {text})",
    "terminal": "ask Claude (milk-lsp chat --route claude)",
    "lsp": "ask Claude (the milk.escalate command)",
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def start_as(
    harness: Harness, env: Env, name: str, milk: bool, settings: dict[str, Any]
) -> MilkClient:
    """The real server, initialized by a client naming itself `name`."""
    config = ClientServerConfig(
        server_command=[sys.executable, "-m", "milk_lsp"],
        client_factory=make_client,
        server_env=env.server_env(),
    )
    client = await config.start()
    assert isinstance(client, MilkClient)
    harness.clients.append(client)
    caps = types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(configuration=False, apply_edit=True)
    )
    if milk:
        caps.experimental = {"milk": {"requestPermission": True}}
    uri = env.workspace.as_uri()
    client.init_result = await client.initialize_session(
        types.InitializeParams(
            capabilities=caps,
            client_info=types.ClientInfo(name=name),
            root_uri=uri,
            workspace_folders=[types.WorkspaceFolder(uri=uri, name="workspace")],
            initialization_options=settings,
        )
    )
    return client


async def chat(client: MilkClient, env: Env, text: str) -> dict[str, Any]:
    params = {"workspaceFolder": env.workspace.as_uri(), "text": text, "route": "local"}
    result: dict[str, Any] = await asyncio.wait_for(request(client, "milk/chat", params), 60)
    return result


@pytest.mark.parametrize("door", list(CLIENTS))
async def test_each_door_names_its_own_setting_and_way_to_claude(
    harness: Harness, env: Env, openai: FakeOpenAIServer, door: str
) -> None:
    name, milk = CLIENTS[door]
    down = {**env.settings["local"], "baseUrl": f"http://127.0.0.1:{free_port()}/v1"}
    client = await start_as(harness, env, name, milk, {**env.settings, "local": down})
    result = await chat(client, env, "hello")
    assert result["stopReason"] == "error", result
    assert result["error"]["reason"] == "local_unreachable"
    assert BASE_URL[door] in result["error"]["message"], result["error"]
    if door == "lsp":  # the file the server reads, as the user finds it
        assert f"config.json ({env.root}/config/milk/config.json)" in result["error"]["message"]
    if door != "vscode":
        assert "milk.local.baseUrl setting" not in result["error"]["message"]
    await harness.stop(client)

    openai.enqueue({"text": ""})  # an empty reply: the local part failed, nothing to hand on
    client = await start_as(harness, env, name, milk, env.settings)
    result = await chat(client, env, "hello")
    assert result["stopReason"] == "error", result
    assert result["error"]["data"]["signal"] == "empty_reply"
    message = result["error"]["message"]
    assert f"To go on, {ESCALATE[door]}, or rephrase and try again." in message, message


async def test_a_prompt_the_server_cut_ends_the_turn_as_context_overflow(
    harness: Harness, env: Env, openai: FakeOpenAIServer
) -> None:
    (env.workspace / "notes.md").write_text("word " * 4000)
    # The server says it read 900 prompt tokens of the ~2,400 milk sent (Ollama's cut).
    openai.enqueue({"text": "I see only a fragment.", "usage": {"prompt_tokens": 900}})
    client = await start_as(harness, env, "Neovim", True, env.settings)
    params = {
        "workspaceFolder": env.workspace.as_uri(),
        "text": "summarise the attached notes",
        "route": "local",
        "context": [{"uri": (env.workspace / "notes.md").as_uri()}],
    }
    result = await asyncio.wait_for(request(client, "milk/chat", params), 60)
    assert result["stopReason"] == "error", result  # never a quiet end_turn
    assert result["error"]["data"]["signal"] == "context_overflow"
    message = result["error"]["message"]
    assert "read only 900 tokens" in message and "dropped its start" in message, message
    assert "--ctx-size" in message  # not Ollama: the generic server fix
    notices = [u for u in client.turn_updates(result["turnId"]) if u["kind"] == "notice"]
    assert any("read only 900 tokens" in n["message"] for n in notices), notices


async def test_an_ollama_cut_names_ollamas_fix_in_the_doors_words(
    harness: Harness, env: Env, openai: FakeOpenAIServer
) -> None:
    openai.ollama = {"version": "0.12.3"}
    (env.workspace / "notes.md").write_text("word " * 4000)
    openai.enqueue({"text": "A fragment.", "usage": {"prompt_tokens": 2048}})
    client = await start_as(harness, env, "milk-lsp chat", True, env.settings)
    params = {
        "workspaceFolder": env.workspace.as_uri(),
        "text": "summarise the attached notes",
        "route": "local",
        "context": [{"uri": (env.workspace / "notes.md").as_uri()}],
    }
    result = await asyncio.wait_for(request(client, "milk/chat", params), 60)
    assert result["error"]["data"]["signal"] == "context_overflow", result
    message = result["error"]["message"]
    assert "Ollama 0.12.3 read only 2048 tokens" in message, message
    assert "OLLAMA_CONTEXT_LENGTH=16384" in message and "PARAMETER num_ctx 16384" in message
    assert "set --model (or local.model in milk's config.json) to it" in message


async def test_a_prompt_the_server_read_whole_is_not_reported(
    harness: Harness, env: Env, openai: FakeOpenAIServer
) -> None:
    (env.workspace / "notes.md").write_text("word " * 4000)
    openai.enqueue({"text": "The notes repeat one word."})  # usage counted from the request
    client = await start_as(harness, env, "Neovim", True, env.settings)
    params = {
        "workspaceFolder": env.workspace.as_uri(),
        "text": "summarise the attached notes",
        "route": "local",
        "context": [{"uri": (env.workspace / "notes.md").as_uri()}],
    }
    result = await asyncio.wait_for(request(client, "milk/chat", params), 60)
    assert result["stopReason"] == "end_turn", result


async def test_status_and_doctor_warn_of_a_small_ollama_context_before_any_turn(
    harness: Harness, env: Env, openai: FakeOpenAIServer
) -> None:
    openai.ollama = {
        "version": "0.12.3",
        "parameters": 'num_ctx 2048\nstop "<|im_end|>"',
    }
    client = await start_as(harness, env, "Visual Studio Code", True, env.settings)
    status = await request(client, "milk/status", {})
    local = status["local"]
    assert local["server"] == "ollama 0.12.3" and local["contextTokens"] == 2048, local
    warning = local["contextWarning"]
    assert "context of 2048 tokens (num_ctx in its Modelfile)" in warning, warning
    assert "OLLAMA_CONTEXT_LENGTH" in warning and "the milk.local.model setting" in warning
    assert openai.requests == []  # no turn ran

    openai.ollama["loaded"] = [
        {"name": "fake-model", "model": "fake-model", "context_length": 4096}
    ]
    status = await request(client, "milk/status", {})
    assert status["local"]["contextTokens"] == 4096
    assert "(loaded now (ollama ps))" in status["local"]["contextWarning"]

    doctor = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "milk_lsp", "doctor", "--base-url", openai.base_url,
         "--model", "fake-model", "--storage-dir", str(env.storage),
         "--claude-path", str(env.root / "no-claude-here")],
        env=env.server_env(), capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert "✓ local model server (ollama 0.12.3)" in doctor.stdout, doctor.stdout
    assert "! context: Ollama 0.12.3 runs fake-model with a context of 4096" in doctor.stdout
    assert "set --model (or local.model in milk's config.json)" in doctor.stdout


async def test_status_says_nothing_of_context_for_a_big_enough_ollama_or_another_server(
    harness: Harness, env: Env, openai: FakeOpenAIServer
) -> None:
    client = await start_as(harness, env, "Neovim", True, env.settings)
    local = (await request(client, "milk/status", {}))["local"]
    assert "server" not in local and "contextWarning" not in local, local
    openai.ollama = {"version": "0.12.3", "parameters": "num_ctx 32768"}
    await harness.stop(client)
    client = await start_as(harness, env, "Neovim", True, env.settings)
    local = (await request(client, "milk/status", {}))["local"]
    assert local["contextTokens"] == 32768 and "contextWarning" not in local, local
