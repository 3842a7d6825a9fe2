"""End-to-end harness: the real `milk-lsp` over stdio, driven by a pytest-lsp client.

Each test gets its own storage, config and log dirs, a workspace folder, and the scripted
OpenAI-compatible server; tests that escalate also get the Anthropic stand-in and the real
Claude Code CLI bundled in the claude-agent-sdk wheel.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import pytest_asyncio
from lsprotocol import types
from lsprotocol.converters import get_converter
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

from milk_lsp.agents.claude.cli import bundled_cli_path
from tests.fakes.anthropic_api import FakeAnthropicAPI
from tests.fakes.openai_server import FakeOpenAIServer

if TYPE_CHECKING:
    from tests.e2e.standard_editor import Editors

UPDATE = "milk/update"
REQUEST_PERMISSION = "milk/requestPermission"


class MilkClient(LanguageClient):
    """A pytest-lsp client that collects `milk/update`s and answers permission questions."""

    def __init__(self) -> None:
        super().__init__(converter_factory=get_converter)
        self.updates: list[dict[str, Any]] = []
        self.permission_requests: list[dict[str, Any]] = []
        self.permission_answers: list[str] = []
        """Answers given in order; "hang" leaves the question open; "slow_<answer>" gives
        <answer> after `permission_delay_seconds` (a user who takes their time)."""
        self.permission_delay_seconds = 0.0
        self.message_requests: list[Any] = []
        self.message_answers: list[str | None] = []
        self.applied_edits: list[Any] = []
        self.apply_edits = True
        """How `workspace/applyEdit` is answered, once `apply_edit_answers` is used up."""
        self.apply_edit_answers: list[bool] = []
        """Answers given in order first (e.g. the edit applied, then its undo refused)."""
        self.progress_create_delay = 0.0
        """Seconds before `window/workDoneProgress/create` is answered."""
        self.update_event = asyncio.Event()
        self.init_result: types.InitializeResult | None = None

    def turn_updates(self, turn_id: str) -> list[dict[str, Any]]:
        return [u for u in self.updates if u.get("turnId") == turn_id]

    def progress_messages(self) -> list[str]:
        """Every `message` of the work-done progress reports, in order per token."""
        return [
            message
            for reports in self.progress_reports.values()
            for report in reports
            if isinstance(message := getattr(report, "message", None), str)
        ]

    def kinds(self, turn_id: str) -> list[str]:
        return [u["kind"] for u in self.turn_updates(turn_id)]

    async def wait_for_update(self, predicate: Any, seconds: float = 20.0) -> dict[str, Any]:
        update: dict[str, Any] = await first_arrival(
            self.updates, self.update_event, predicate, seconds
        )
        return update


async def first_arrival(
    items: list[Any], arrived: asyncio.Event, predicate: Any, seconds: float
) -> Any:
    """The first of `items`, already there or arriving (`arrived` is set on each append),
    that `predicate` accepts; TimeoutError after `seconds`."""

    async def scan() -> Any:
        seen = 0
        while True:
            for item in items[seen:]:
                if predicate(item):
                    return item
            seen = len(items)
            arrived.clear()
            await arrived.wait()

    return await asyncio.wait_for(scan(), seconds)


def make_client() -> MilkClient:
    client = MilkClient()
    features = dict(DEFAULT_CLIENT_FEATURES)
    create_progress = features.pop(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
    register_lsp_features(client, features)

    @client.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
    async def on_create_progress(
        ls: MilkClient, params: types.WorkDoneProgressCreateParams
    ) -> None:
        await asyncio.sleep(ls.progress_create_delay)
        create_progress(ls, params)

    @client.feature(UPDATE)
    def on_update(ls: MilkClient, params: Any) -> None:
        ls.updates.append(params)
        ls.update_event.set()

    @client.feature(REQUEST_PERMISSION)
    async def on_permission(ls: MilkClient, params: Any) -> dict[str, str]:
        ls.permission_requests.append(params)
        answer = ls.permission_answers.pop(0) if ls.permission_answers else "deny"
        if answer == "hang":
            await asyncio.sleep(3600)
        if answer.startswith("slow_"):
            await asyncio.sleep(ls.permission_delay_seconds)
            answer = answer.removeprefix("slow_")
        return {"optionId": answer}

    @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def on_message_request(
        ls: MilkClient, params: types.ShowMessageRequestParams
    ) -> types.MessageActionItem | None:
        ls.message_requests.append(params)
        answer = ls.message_answers.pop(0) if ls.message_answers else None
        return None if answer is None else types.MessageActionItem(title=answer)

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def on_apply_edit(
        ls: MilkClient, params: types.ApplyWorkspaceEditParams
    ) -> types.ApplyWorkspaceEditResult:
        ls.applied_edits.append(params)
        applied = ls.apply_edit_answers.pop(0) if ls.apply_edit_answers else ls.apply_edits
        if not applied:
            return types.ApplyWorkspaceEditResult(applied=False, failure_reason="file is read-only")
        return types.ApplyWorkspaceEditResult(applied=True)

    return client


@dataclass
class Env:
    """Per-test folders and settings for the server."""

    root: Path
    workspace: Path
    storage: Path
    settings: dict[str, Any] = field(default_factory=dict)
    extra_env: dict[str, str] = field(default_factory=dict)

    def server_env(self) -> dict[str, str]:
        return {
            **self._base_env(),
            **self.extra_env,
        }

    def _base_env(self) -> dict[str, str]:
        return {
            **os.environ,
            "XDG_CONFIG_HOME": str(self.root / "config"),
            "XDG_DATA_HOME": str(self.root / "data"),
            "XDG_STATE_HOME": str(self.root / "state"),
            "MILK_LOG_DIR": str(self.root / "logs"),
            "MILK_CONFIG_FILE": str(self.root / "config" / "milk" / "config.json"),
            "PYTHONUNBUFFERED": "1",
        }


@pytest.fixture
def openai() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
def env(tmp_path: Path, openai: FakeOpenAIServer) -> Env:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "hello.py").write_text("def greet():\n    return 'hello'\n")
    storage = tmp_path / "storage"
    settings = {
        "local": {"baseUrl": openai.base_url, "model": "fake-model", "requestTimeoutSeconds": 5},
        "storageDir": str(storage),
        "claude": {"path": str(tmp_path / "no-claude-here")},
    }
    return Env(tmp_path, workspace, storage, settings)


class Harness:
    """Starts (and restarts) real servers for one test."""

    def __init__(self, env: Env) -> None:
        self.env = env
        self.clients: list[MilkClient] = []

    async def start(
        self,
        *,
        capabilities: types.ClientCapabilities | None = None,
        milk_permission: bool = True,
        settings: dict[str, Any] | None = None,
        workspace_config: Any = None,
    ) -> MilkClient:
        config = ClientServerConfig(
            server_command=[sys.executable, "-m", "milk_lsp"],
            client_factory=make_client,
            server_env=self.env.server_env(),
        )
        client = await config.start()
        assert isinstance(client, MilkClient)
        self.clients.append(client)
        caps = capabilities or types.ClientCapabilities(
            window=types.WindowClientCapabilities(work_done_progress=True),
            workspace=types.WorkspaceClientCapabilities(configuration=True, apply_edit=True),
        )
        if milk_permission:
            caps.experimental = {"milk": {"requestPermission": True}}
        if workspace_config is not None:
            client.set_configuration(workspace_config, section="milk")
        uri = self.env.workspace.as_uri()
        client.init_result = await client.initialize_session(
            types.InitializeParams(
                capabilities=caps,
                root_uri=uri,
                workspace_folders=[types.WorkspaceFolder(uri=uri, name="workspace")],
                initialization_options=settings if settings is not None else self.env.settings,
            )
        )
        return client

    async def stop(self, client: MilkClient) -> None:
        if client in self.clients:
            self.clients.remove(client)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(client.shutdown_session(), 10)
        await client.stop()

    async def close(self) -> None:
        for client in list(self.clients):
            await self.stop(client)


@pytest_asyncio.fixture
async def harness(env: Env) -> AsyncIterator[Harness]:
    harness = Harness(env)
    yield harness
    await harness.close()


@pytest_asyncio.fixture
async def client(harness: Harness) -> MilkClient:
    return await harness.start()


@pytest_asyncio.fixture
async def editors(env: Env) -> AsyncIterator[Editors]:
    """Plain LSP editors (`tests.e2e.standard_editor`) on route local: the scripted replies
    need no checking by milk."""
    from tests.e2e.standard_editor import Editors  # it imports this module

    env.settings["route"] = "local"
    started = Editors(env)
    yield started
    await started.close()


async def request(client: MilkClient, method: str, params: Any, msg_id: Any = None) -> Any:
    return await client.protocol.send_request_async(method, params, msg_id=msg_id)


# ---- the real Claude Code CLI on the Messages-API stand-in ----------------------------------


@pytest.fixture
def api() -> Iterator[FakeAnthropicAPI]:
    with FakeAnthropicAPI() as fake:
        yield fake


@pytest.fixture
def claude_env(env: Env, api: FakeAnthropicAPI) -> Env:
    for name in ("home", "tmp"):
        (env.root / name).mkdir(exist_ok=True)
    env.extra_env.update(
        {
            "HOME": str(env.root / "home"),
            "TMPDIR": str(env.root / "tmp"),
            "ANTHROPIC_BASE_URL": api.base_url,
            "ANTHROPIC_API_KEY": "sk-ant-fake",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
        }
    )
    env.settings["claude"] = {"path": bundled_cli_path()}
    return env
