"""`local.provider` resolution and the embedded model's pre-flight checks (no model loads
here: tests/real_model/test_embedded.py runs the engine itself)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from milk_lsp import embedded
from milk_lsp.agents.base import FailureReason
from milk_lsp.config import LocalConfig, MilkConfig, merge_settings
from milk_lsp.embedded import (
    EmbeddedServer,
    EmbeddedSettings,
    LocalModelError,
    choose_provider,
    endpoint_answers,
    model_problem,
    resolve_provider,
)
from tests.fakes.openai_server import FakeOpenAIServer


def local_settings(raw: dict[str, object]) -> LocalConfig:
    config, problems = merge_settings(MilkConfig(), {"local": raw}, "test")
    assert problems == []
    return config.local


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.fixture
def gguf(tmp_path: Path) -> Path:
    path = tmp_path / "m.gguf"
    path.write_bytes(b"GGUF" + bytes(60))
    return path


def test_defaults() -> None:
    cfg = LocalConfig()
    assert cfg.provider == "auto"
    assert cfg.model_path is None
    assert cfg.context_size == 8192
    assert cfg.max_reply_tokens == 2048
    assert cfg.idle_stop_seconds == 600
    assert 1 <= cfg.threads <= 8


@pytest.mark.parametrize(
    ("raw", "installed", "answers", "expected"),
    [
        ({}, True, False, "openai"),  # no model configured: as before
        ({"modelPath": "/m.gguf"}, True, False, "embedded"),
        ({"modelPath": "/m.gguf"}, True, True, "openai"),  # something answers there
        ({"modelPath": "/m.gguf"}, False, False, "openai"),  # engine not installed
        ({"modelPath": "/m.gguf", "baseUrl": "http://h/v1"}, True, False, "openai"),
        ({"modelPath": "", "provider": "auto"}, True, False, "openai"),
        ({"provider": "embedded"}, False, True, "embedded"),  # explicit wins, errors later
        ({"provider": "openai", "modelPath": "/m.gguf"}, True, False, "openai"),
    ],
)
def test_choose_provider(
    raw: dict[str, object], installed: bool, answers: bool, expected: str
) -> None:
    cfg = local_settings(raw)
    assert choose_provider(cfg, installed=installed, endpoint_answers=answers) == expected


async def test_endpoint_answers_any_http_reply_but_not_a_closed_port() -> None:
    with FakeOpenAIServer() as server:
        assert await endpoint_answers(server.base_url) is True
        assert await endpoint_answers(server.base_url + "/nowhere") is True  # a 404 answers
    assert await endpoint_answers(closed_port_url()) is False


async def test_auto_probes_the_default_endpoint(gguf: Path) -> None:
    # base_url not among the fields set: as if it were the default, at a port we control
    silent = LocalConfig.model_construct(
        _fields_set={"model_path"}, base_url=closed_port_url(), model_path=str(gguf)
    )
    assert await resolve_provider(silent) == "embedded"
    with FakeOpenAIServer() as server:
        answering = LocalConfig.model_construct(
            _fields_set={"model_path"}, base_url=server.base_url, model_path=str(gguf)
        )
        assert await resolve_provider(answering) == "openai"


async def test_an_explicit_base_url_is_never_probed_away(gguf: Path) -> None:
    cfg = local_settings({"baseUrl": closed_port_url(), "modelPath": str(gguf)})
    assert await resolve_provider(cfg) == "openai"


def test_model_problems(tmp_path: Path, gguf: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert model_problem(str(gguf)) is None
    missing = model_problem(str(tmp_path / "nope.gguf"))
    assert missing is not None and missing.reason is FailureReason.LOCAL_UNREACHABLE
    assert "does not exist" in missing.message and "local.modelPath" in missing.message
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    wrong = model_problem(str(text))
    assert wrong is not None and wrong.reason is FailureReason.LOCAL_FAILED
    assert "not a GGUF" in wrong.message
    unset = model_problem("")
    assert unset is not None and "local.modelPath" in unset.message
    monkeypatch.setattr(embedded, "engine_installed", lambda: False)  # cannot uninstall here
    absent = model_problem(str(gguf))
    assert absent is not None and absent.reason is FailureReason.LOCAL_UNREACHABLE
    assert "milk-lsp[embedded]" in absent.message


async def test_a_missing_model_fails_every_waiter_without_a_process(tmp_path: Path) -> None:
    cfg = local_settings({"modelPath": str(tmp_path / "gone.gguf"), "provider": "embedded"})
    server = EmbeddedServer(EmbeddedSettings.of(cfg))
    for _ in range(2):
        with pytest.raises(LocalModelError, match="does not exist"):
            await server.acquire()
        assert server.state == "failed" and server.pid is None
    await server.aclose()


def test_model_path_tilde_is_expanded() -> None:
    cfg = local_settings({"modelPath": "~/m.gguf"})
    assert EmbeddedSettings.of(cfg).model_path == str(Path("~/m.gguf").expanduser())
