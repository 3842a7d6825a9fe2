"""`local.provider` resolution and the embedded model's pre-flight checks (no model loads
here: tests/real_model/test_embedded.py runs the engine itself)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from milk_lsp import wire
from milk_lsp.agents.base import FailureReason
from milk_lsp.config import LocalConfig, MilkConfig, merge_settings
from milk_lsp.engine.status import describe
from milk_lsp.local_model import embedded
from milk_lsp.local_model.download import QWEN_CODER_0_5B, QWEN_CODER_1_5B, hub_installed
from milk_lsp.local_model.embedded import (
    EmbeddedServer,
    EmbeddedSettings,
    LocalModelError,
    choose_provider,
    endpoint_answers,
    memory_problem,
    model_problem,
    planned_model,
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
    assert cfg.model_repo is None and cfg.model_file is None
    assert cfg.context_size == 8192
    assert cfg.max_reply_tokens == 2048
    assert cfg.idle_stop_seconds == 600
    assert 1 <= cfg.threads <= 8


@pytest.mark.parametrize(
    ("raw", "installed", "answers", "downloadable", "expected"),
    [
        ({}, True, False, False, "openai"),  # no model and no way to get one: as before
        ({}, True, False, True, "embedded"),  # the default model, downloaded
        ({}, True, True, True, "openai"),  # something answers on the default endpoint
        ({}, False, False, True, "openai"),  # engine not installed
        ({"modelPath": "/m.gguf"}, True, False, False, "embedded"),
        ({"modelPath": "/m.gguf"}, True, True, False, "openai"),  # something answers there
        ({"modelPath": "/m.gguf"}, False, False, True, "openai"),  # engine not installed
        ({"modelPath": "/m.gguf", "baseUrl": "http://h/v1"}, True, False, True, "openai"),
        ({"baseUrl": "http://h/v1"}, True, False, True, "openai"),  # a server was named
        ({"modelPath": "", "provider": "auto"}, True, False, False, "openai"),
        ({"modelRepo": "a/b", "modelFile": "m.gguf"}, True, False, True, "embedded"),
        ({"provider": "embedded"}, False, True, False, "embedded"),  # explicit wins, errors later
        ({"provider": "openai", "modelPath": "/m.gguf"}, True, False, True, "openai"),
    ],
)
def test_choose_provider(
    raw: dict[str, object], installed: bool, answers: bool, downloadable: bool, expected: str
) -> None:
    cfg = local_settings(raw)
    chosen = choose_provider(
        cfg, installed=installed, endpoint_answers=answers, downloadable=downloadable
    )
    assert chosen == expected


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


@pytest.mark.skipif(
    not (embedded.engine_installed() and hub_installed()),
    reason="needs xllamacpp and huggingface_hub installed (the embedded extra)",
)
async def test_with_the_extra_and_nothing_answering_auto_downloads_the_default_model() -> None:
    # nothing set: the default endpoint (here a closed port we control) stays silent
    silent = LocalConfig.model_construct(_fields_set=set(), base_url=closed_port_url())
    assert await resolve_provider(silent) == "embedded"
    planned = planned_model(EmbeddedSettings.of(silent))
    assert planned.source in (QWEN_CODER_1_5B, QWEN_CODER_0_5B)
    assert planned.problem is None and planned.size == planned.source.size


def embedded_status(**local: object) -> wire.Status:
    fields: dict[str, object] = {"base_url": "", "reachable": True, "provider": "embedded"}
    return wire.Status(
        version="0",
        local=wire.LocalStatus.model_validate({**fields, **local}),
        claude=wire.ClaudeStatus(path="/bin/claude", found=True, version="2.0"),
        storage="/tmp/s.sqlite3",
    )


@pytest.mark.parametrize(
    ("local", "line", "problems"),
    [
        (
            {
                "model_path": "/m/q.gguf",
                "model": "q",
                "model_bytes": 98_000_000,
                "load_state": "stopped",
            },
            "✓ embedded model /m/q.gguf (98 MB): stopped, loads on the first local turn",
            0,
        ),
        (
            {
                "model_path": "/m/q.gguf",
                "model": "q",
                "model_bytes": 98_000_000,
                "load_state": "running",
                "base_url": "http://127.0.0.1:5/v1",
                "load_seconds": 0.4,
                "memory_bytes": 250_000_000,
            },
            "✓ embedded model /m/q.gguf (98 MB) running at http://127.0.0.1:5/v1 "
            "(loaded in 0.4 s), 250 MB in memory",
            0,
        ),
        (
            {
                "model": "qwen2.5-coder-1.5b-instruct-q4_k_m",
                "model_bytes": 1_117_320_768,
                "load_state": "stopped",
            },
            "✓ embedded model qwen2.5-coder-1.5b-instruct-q4_k_m (1117 MB, not downloaded yet): "
            "stopped, downloaded from the Hugging Face Hub and loaded on the first local turn",
            0,
        ),
        (
            {
                "model_path": "/m/gone.gguf",
                "reachable": False,
                "load_state": "failed",
                "error": "the model file /m/gone.gguf does not exist",
            },
            "✗ embedded model /m/gone.gguf (size unknown): the model file /m/gone.gguf does "
            "not exist",
            1,
        ),
    ],
)
def test_doctor_describes_the_embedded_engine(
    local: dict[str, object], line: str, problems: int
) -> None:
    lines, count = describe(embedded_status(**local), "config file: none")
    assert lines[2] == line, lines
    assert count == problems
    if problems:
        assert lines[3].strip().startswith("fix:") and "local.modelPath" in lines[3]


def test_a_model_that_does_not_fit_in_memory_is_refused_with_what_to_do(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF" + b"\0" * (1024 * 1024))
    gib = 1024**3
    assert memory_problem(str(model), 4096, 8 * gib) is None
    assert memory_problem(str(model), 4096, None) is None  # unknown: not refused
    problem = memory_problem(str(model), 8192, 256 * 1024**2)
    assert problem is not None
    assert "not enough memory" in problem.message
    assert "local.contextSize 8192" in problem.message and "local.modelPath" in problem.message
