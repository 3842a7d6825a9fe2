"""Configuration: PROTOCOL.md's table, its four sources and how a bad value is handled.

Sources, later wins: defaults < `config.json` < `initializationOptions` < `workspace/
configuration` (section `milk`). Each source merges key by key; an unknown key is reported
and ignored, a value of the wrong type is reported by its dotted key and the key keeps its
previous value. The unit tests drive `merge_settings` in the server's order; two tests start
the real server and read the merged result back through `milk/status`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from lsprotocol.converters import get_converter
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import register_lsp_features

from milk_lsp.config import (
    ClaudeConfig,
    LocalConfig,
    MilkConfig,
    SettingProblem,
    default_data_dir,
    load_user_file,
    merge_settings,
)

SECRET = "sk-milk-test-SECRET-0123456789"


def merged(*sources: Any) -> tuple[MilkConfig, list[SettingProblem]]:
    """Merge the sources in order over the defaults, as the server does."""
    config = MilkConfig()
    problems: list[SettingProblem] = []
    for number, raw in enumerate(sources):
        config, found = merge_settings(config, raw, f"source {number}")
        problems += found
    return config, problems


# ---- defaults ------------------------------------------------------------------------------


def test_defaults_are_protocol_md_table(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    config = MilkConfig()
    assert config.local.base_url == "http://127.0.0.1:11434/v1"
    assert config.local.model is None
    assert config.local.api_key is None
    assert config.local.max_tool_rounds == 20
    assert config.claude.path is None
    assert config.claude.allowed_tools == []
    assert config.claude.add_dirs == []
    assert config.claude.model is None
    assert config.claude.skip_permissions is False
    assert config.context_budget_chars == 12000
    assert config.route == "auto"
    assert config.storage_dir is None
    assert default_data_dir() == tmp_path / "data" / "milk"
    assert config.storage_path() == tmp_path / "data" / "milk" / "sessions.sqlite3"


def test_defaults_are_not_shared_between_configs() -> None:
    first, second = MilkConfig(), MilkConfig()
    first.claude.allowed_tools.append("Bash")
    assert second.claude.allowed_tools == []
    assert ClaudeConfig().allowed_tools == []


# ---- merge order ---------------------------------------------------------------------------


def test_later_sources_win_key_by_key() -> None:
    file = {"local": {"baseUrl": "http://file/v1", "model": "file-model"}, "route": "local"}
    init = {"local": {"model": "init-model"}, "claude": {"path": "/init/claude"}}
    workspace = {"claude": {"path": "/ws/claude"}, "contextBudgetChars": 500}
    config, problems = merged(file, init, workspace)
    assert problems == []
    assert config.local.base_url == "http://file/v1"  # only the file set it
    assert config.local.model == "init-model"  # init over file
    assert config.claude.path == "/ws/claude"  # workspace over init
    assert config.route == "local"  # file over defaults
    assert config.context_budget_chars == 500
    assert config.local.max_tool_rounds == 20  # nobody set it: the default


def test_merge_leaves_the_input_config_untouched() -> None:
    before = MilkConfig()
    after, _ = merge_settings(before, {"local": {"model": "m"}, "route": "claude"}, "x")
    assert before.local.model is None and before.route == "auto"
    assert after.local.model == "m" and after.route == "claude"


@pytest.mark.parametrize("raw", [None, {}, {"local": None}, {"claude": None}])
def test_empty_sources_change_nothing(raw: Any) -> None:
    base, _ = merged({"local": {"model": "kept"}})
    config, problems = merge_settings(base, raw, "workspace settings")
    assert problems == []
    assert config == base


# ---- the config file -----------------------------------------------------------------------


def test_config_file_accepts_snake_case_keys(tmp_path: Path) -> None:
    file = tmp_path / "config.json"
    file.write_text(
        json.dumps(
            {
                "local": {"base_url": "http://snake/v1", "max_tool_rounds": 7, "api_key": SECRET},
                "claude": {
                    "skip_permissions": True,
                    "allowed_tools": ["Read"],
                    "add_dirs": ["/x"],
                    "permission_timeout_seconds": 5,
                },
                "context_budget_chars": 900,
                "storage_dir": str(tmp_path / "store"),
            }
        )
    )
    data, error = load_user_file(file)
    assert error is None
    config, problems = merged(data)
    assert problems == []
    assert config.local.base_url == "http://snake/v1"
    assert config.local.max_tool_rounds == 7
    assert config.local.api_key == SECRET
    assert config.claude.skip_permissions is True
    assert config.claude.allowed_tools == ["Read"]
    assert config.claude.add_dirs == ["/x"]
    assert config.claude.permission_timeout_seconds == 5
    assert config.context_budget_chars == 900
    assert config.storage_path() == tmp_path / "store" / "sessions.sqlite3"


def test_camel_case_keys_work_in_every_source() -> None:
    config, problems = merged(
        {"local": {"baseUrl": "http://camel/v1", "maxToolRounds": 3}, "contextBudgetChars": 10}
    )
    assert problems == []
    assert (config.local.base_url, config.local.max_tool_rounds) == ("http://camel/v1", 3)
    assert config.context_budget_chars == 10


def test_invalid_json_in_config_file_is_reported(tmp_path: Path) -> None:
    file = tmp_path / "config.json"
    file.write_text('{\n  "local": {"baseUrl": "http://x/v1",}\n}\n')
    data, error = load_user_file(file)
    assert data is None
    assert error is not None
    assert str(file) in error
    assert "not valid JSON" in error
    assert "line 2" in error


def test_missing_config_file_is_not_an_error(tmp_path: Path) -> None:
    assert load_user_file(tmp_path / "absent.json") == (None, None)


def test_unreadable_config_file_is_reported(tmp_path: Path) -> None:
    data, error = load_user_file(tmp_path)  # a directory
    assert data is None
    assert error is not None and "cannot read" in error and str(tmp_path) in error


def test_config_file_location_follows_milk_config_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    file = tmp_path / "elsewhere.json"
    file.write_text('{"route": "claude"}')
    monkeypatch.setenv("MILK_CONFIG_FILE", str(file))
    assert load_user_file() == ({"route": "claude"}, None)


def test_config_file_default_location_is_the_platformdirs_config_dir(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("MILK_CONFIG_FILE", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    (tmp_path / "milk").mkdir()
    (tmp_path / "milk" / "config.json").write_text('{"route": "local"}')
    assert load_user_file() == ({"route": "local"}, None)


# ---- unknown keys --------------------------------------------------------------------------


def test_unknown_keys_are_reported_as_unknown_and_the_rest_applies() -> None:
    config, problems = merged(
        {
            "bogus": 1,
            "local": {"bogus": 2, "model": "m"},
            "claude": {"nonsense": True, "model": "opus"},
            "route": "local",
        }
    )
    by_key = {p.key: p for p in problems}
    assert set(by_key) == {"bogus", "local.bogus", "claude.nonsense"}
    assert all(p.unknown for p in problems)
    assert all("unknown" in p.message for p in problems)
    assert (config.local.model, config.claude.model, config.route) == ("m", "opus", "local")


def test_unknown_snake_case_key_is_reported_under_some_spelling_of_it() -> None:
    _, problems = merged({"local": {"bogus_key": 1}})
    assert len(problems) == 1 and problems[0].unknown
    assert problems[0].key in ("local.bogus_key", "local.bogusKey")


# ---- wrong types and values ----------------------------------------------------------------

PREVIOUS = {
    "local": {"baseUrl": "http://prev/v1", "model": "prev-model", "maxToolRounds": 9},
    "claude": {
        "allowedTools": ["Read"],
        "skipPermissions": False,
        "permissionTimeoutSeconds": 30,
        "path": "/prev/claude",
    },
    "contextBudgetChars": 777,
    "route": "local",
    "storageDir": "/prev/store",
}

BAD_VALUES: list[tuple[dict[str, Any], str, Callable[[MilkConfig], Any], Any]] = [
    ({"local": {"baseUrl": 5}}, "local.baseUrl", lambda c: c.local.base_url, "http://prev/v1"),
    ({"local": {"baseUrl": ""}}, "local.baseUrl", lambda c: c.local.base_url, "http://prev/v1"),
    ({"local": {"baseUrl": None}}, "local.baseUrl", lambda c: c.local.base_url, "http://prev/v1"),
    ({"local": {"model": ["a"]}}, "local.model", lambda c: c.local.model, "prev-model"),
    (
        {"local": {"maxToolRounds": "many"}},
        "local.maxToolRounds",
        lambda c: c.local.max_tool_rounds,
        9,
    ),
    ({"local": {"maxToolRounds": 0}}, "local.maxToolRounds", lambda c: c.local.max_tool_rounds, 9),
    (
        {"local": {"maxToolRounds": 2.5}},
        "local.maxToolRounds",
        lambda c: c.local.max_tool_rounds,
        9,
    ),
    (
        {"local": {"requestTimeoutSeconds": -1}},
        "local.requestTimeoutSeconds",
        lambda c: c.local.request_timeout_seconds,
        120.0,
    ),
    ({"claude": {"path": 3}}, "claude.path", lambda c: c.claude.path, "/prev/claude"),
    (
        {"claude": {"allowedTools": "Bash"}},
        "claude.allowedTools",
        lambda c: c.claude.allowed_tools,
        ["Read"],
    ),
    ({"claude": {"addDirs": [1, 2]}}, "claude.addDirs", lambda c: c.claude.add_dirs, []),
    (
        {"claude": {"skipPermissions": "perhaps"}},
        "claude.skipPermissions",
        lambda c: c.claude.skip_permissions,
        False,
    ),
    (
        {"claude": {"permissionTimeoutSeconds": 0}},
        "claude.permissionTimeoutSeconds",
        lambda c: c.claude.permission_timeout_seconds,
        30,
    ),
    ({"contextBudgetChars": -1}, "contextBudgetChars", lambda c: c.context_budget_chars, 777),
    ({"contextBudgetChars": "lots"}, "contextBudgetChars", lambda c: c.context_budget_chars, 777),
    ({"route": "sideways"}, "route", lambda c: c.route, "local"),
    ({"storage_dir": {"a": 1}}, "storageDir", lambda c: c.storage_dir, "/prev/store"),
]


@pytest.mark.parametrize(
    ("raw", "dotted", "read", "previous"),
    BAD_VALUES,
    ids=[case[1] + "=" + json.dumps(case[0]) for case in BAD_VALUES],
)
def test_wrong_value_is_reported_by_dotted_key_and_previous_value_kept(
    raw: dict[str, Any], dotted: str, read: Callable[[MilkConfig], Any], previous: Any
) -> None:
    base, problems = merged(PREVIOUS)
    assert problems == []
    config, problems = merge_settings(base, raw, "workspace settings")
    assert [p.key for p in problems] == [dotted]
    assert problems[0].unknown is False
    assert problems[0].message
    assert read(config) == previous
    # Nothing else moved.
    assert config.model_dump() == base.model_dump()


def test_a_bad_value_keeps_the_value_in_force_when_merging_over_a_base() -> None:
    """Workspace settings merge over defaults+file+init (the base); a bad value keeps what
    was in force before (the previous workspace value), not the base's."""
    base, _ = merged({"local": {"model": "init-model"}})
    in_force, _ = merge_settings(base, {"local": {"model": "ws-model"}}, "workspace settings")
    config, problems = merge_settings(
        base, {"local": {"model": 5}, "route": "claude"}, "workspace settings", in_force
    )
    assert [p.key for p in problems] == ["local.model"]
    assert config.local.model == "ws-model"
    assert config.route == "claude"
    # A key the new workspace settings leave out falls back to the base.
    config, problems = merge_settings(base, {}, "workspace settings", in_force)
    assert problems == [] and config.local.model == "init-model"


def test_one_bad_value_does_not_throw_away_the_others() -> None:
    config, problems = merged(
        {"local": {"model": "good", "maxToolRounds": "bad", "baseUrl": "http://good/v1"}}
    )
    assert [p.key for p in problems] == ["local.maxToolRounds"]
    assert config.local.model == "good"
    assert config.local.base_url == "http://good/v1"
    assert config.local.max_tool_rounds == 20


def test_a_boolean_is_not_taken_for_a_number() -> None:
    _, problems = merged({"local": {"maxToolRounds": True}})
    assert [p.key for p in problems] == ["local.maxToolRounds"]


@pytest.mark.parametrize("section", [[], "text", 5, True])
def test_a_section_that_is_not_an_object_is_reported(section: Any) -> None:
    base, _ = merged({"local": {"model": "kept"}})
    config, problems = merge_settings(base, {"local": section, "route": "claude"}, "init")
    assert [(p.key, p.unknown) for p in problems] == [("local", False)]
    assert "object" in problems[0].message
    assert config.local.model == "kept"
    assert config.route == "claude", "the other keys of the source still apply"


@pytest.mark.parametrize("raw", [[], "text", 5, True])
def test_settings_that_are_not_an_object_are_reported(raw: Any) -> None:
    base, _ = merged({"route": "local"})
    config, problems = merge_settings(base, raw, "initializationOptions")
    assert [p.key for p in problems] == ["initializationOptions"]
    assert "object" in problems[0].message
    assert config == base


# ---- the api key ---------------------------------------------------------------------------


def test_api_key_is_kept_out_of_repr_and_str() -> None:
    config, problems = merged({"local": {"apiKey": SECRET, "model": "m"}})
    assert problems == []
    assert config.local.api_key == SECRET
    for text in (
        repr(config),
        str(config),
        repr(config.local),
        str(config.local),
        f"{config}",
        f"{config.local!r}",
        repr(LocalConfig(api_key=SECRET)),
    ):
        assert SECRET not in text
    assert "model='m'" in repr(config.local)


def test_a_rejected_api_key_is_not_echoed() -> None:
    _, problems = merged({"local": {"apiKey": [SECRET]}})
    assert [p.key for p in problems] == ["local.apiKey"]
    assert SECRET not in problems[0].message


# ---- the real server: sources merged in order --------------------------------------------


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _client() -> LanguageClient:
    client = LanguageClient(converter_factory=get_converter)
    register_lsp_features(client)
    return client


async def _start(tmp_path: Path, file_settings: Any, init: Any, workspace: Any) -> LanguageClient:
    config_file = tmp_path / "config" / "milk" / "config.json"
    config_file.parent.mkdir(parents=True, exist_ok=True)
    config_file.write_text(json.dumps(file_settings))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "MILK_"))}
    env.update(
        {
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "XDG_DATA_HOME": str(tmp_path / "data"),
            "XDG_STATE_HOME": str(tmp_path / "state"),
            "XDG_CACHE_HOME": str(tmp_path / "cache"),
            "MILK_LOG_DIR": str(tmp_path / "logs"),
            "MILK_CONFIG_FILE": str(config_file),
        }
    )
    folder = tmp_path / "workspace"
    folder.mkdir(exist_ok=True)
    client = await ClientServerConfig(
        server_command=[sys.executable, "-m", "milk_lsp"], client_factory=_client, server_env=env
    ).start()
    assert isinstance(client, LanguageClient)
    client.set_configuration(workspace, section="milk")
    await client.initialize_session(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(
                workspace=types.WorkspaceClientCapabilities(configuration=True)
            ),
            root_uri=folder.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=folder.as_uri(), name="workspace")],
            initialization_options=init,
        )
    )
    return client


async def _stop(client: LanguageClient) -> None:
    with contextlib.suppress(Exception):
        await asyncio.wait_for(client.shutdown_session(), 10)
    await client.stop()


async def _status_when(
    client: LanguageClient, done: Callable[[dict[str, Any]], bool], seconds: float = 20.0
) -> dict[str, Any]:
    """`milk/status` once `done` holds (workspace settings are pulled after `initialized`)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while True:
        status: dict[str, Any] = await client.protocol.send_request_async("milk/status", {})
        if done(status) or loop.time() > deadline:
            return status
        await asyncio.sleep(0.05)


@pytest.mark.e2e
async def test_server_merges_file_init_options_and_workspace_settings_in_order(
    tmp_path: Path,
) -> None:
    file_url = f"http://127.0.0.1:{_closed_port()}/v1"
    file_settings = {
        "local": {"base_url": file_url, "model": "file-model"},  # snake_case in the file
        "storage_dir": str(tmp_path / "file-store"),
        "claude": {"path": str(tmp_path / "file" / "claude")},
    }
    init = {
        "local": {"model": "init-model"},
        "claude": {"path": str(tmp_path / "init" / "claude")},
        "initBogus": True,
    }
    workspace = {"claude": {"path": str(tmp_path / "ws" / "claude")}, "local": {"model": 123}}
    client = await _start(tmp_path, file_settings, init, workspace)
    try:
        ws_claude = str(tmp_path / "ws" / "claude")
        status = await _status_when(client, lambda s: s["claude"].get("path") == ws_claude)
        assert status["local"]["baseUrl"] == file_url  # file over defaults
        assert status["local"]["model"] == "init-model"  # init over file; bad workspace value
        assert status["claude"]["path"] == ws_claude  # workspace over init
        assert status["storage"] == str(tmp_path / "file-store" / "sessions.sqlite3")
        assert status["local"]["reachable"] is False

        shown = [m.message for m in client.messages]
        assert any("local.model" in message for message in shown), shown
        logged = [m.message for m in client.log_messages]
        assert any("initBogus" in message for message in logged), logged
        assert not any("initBogus" in message for message in shown), "unknown keys are logged"

        # A change of the workspace settings is pulled again and applied.
        ws2_claude = str(tmp_path / "ws2" / "claude")
        client.set_configuration({"claude": {"path": ws2_claude}}, section="milk")
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
        status = await _status_when(client, lambda s: s["claude"].get("path") == ws2_claude)
        assert status["claude"]["path"] == ws2_claude
        assert status["local"]["baseUrl"] == file_url
    finally:
        await _stop(client)


@pytest.mark.e2e
async def test_a_workspace_setting_removed_reverts_to_the_earlier_sources(tmp_path: Path) -> None:
    file_settings = {"local": {"baseUrl": f"http://127.0.0.1:{_closed_port()}/v1"}}
    init = {"local": {"model": "init-model"}, "claude": {"path": str(tmp_path / "init")}}
    workspace = {"local": {"model": "ws-model"}, "claude": {"path": str(tmp_path / "ws")}}
    client = await _start(tmp_path, file_settings, init, workspace)
    try:
        status = await _status_when(client, lambda s: s["local"]["model"] == "ws-model")
        assert status["local"]["model"] == "ws-model"
        ws2 = str(tmp_path / "ws2")
        client.set_configuration({"claude": {"path": ws2}}, section="milk")
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
        status = await _status_when(client, lambda s: s["claude"].get("path") == ws2)
        assert status["claude"]["path"] == ws2
        assert status["local"]["model"] == "init-model"
    finally:
        await _stop(client)
