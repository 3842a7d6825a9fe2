"""The embedded engine end to end: the real milk-lsp over LSP starts llama.cpp itself.

`local.provider` embedded with `local.modelPath` on the pinned SmolLM2-135M GGUF (fetched
and checked as the rest of the tier; skipped the same way when unavailable). Each test
starts the model at most twice (~1 s each). Plumbing only, never wording.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from milk_lsp.system.orphans import EMBEDDED_RUN_ENV, environments, process_alive, token_owner
from tests.e2e.conftest import Env, Harness, MilkClient, request
from tests.real_model import fetch
from tests.real_model.conftest import THREADS, _prepare, local_env

pytestmark = pytest.mark.real_model

TURN_SECONDS = 120.0


@pytest.fixture(scope="session")
def smollm2_gguf() -> Path:
    return _prepare(fetch.SMOLLM2_135M)


def embedded_env(tmp_path: Path, model_path: Path, **local: Any) -> Env:
    return local_env(
        tmp_path,
        {
            "provider": "embedded",
            "modelPath": str(model_path),
            "threads": THREADS,
            "contextSize": 2048,
            "maxReplyTokens": 64,
            "temperature": 0,  # greedy: the same small model answers the same way each run
            # the engine's plumbing, not a strategy: `auto` would guide SmolLM2, whose
            # 64-token replies cannot hold the guided shape (test_real_model.py guides it)
            "strategy": "agent",
            **local,
        },
    )


@pytest_asyncio.fixture
async def harness(tmp_path: Path, smollm2_gguf: Path) -> AsyncIterator[Harness]:
    harness = Harness(embedded_env(tmp_path, smollm2_gguf))
    yield harness
    await harness.close()


def server_pid(client: MilkClient) -> int:
    server = client._server
    assert server is not None
    return server.pid


def engines_of(owner_pid: int) -> list[int]:
    """The pids of the embedded engine processes whose run token names this server."""
    found = []
    for pid, _start, environ in environments():
        for entry in environ.split(b"\0"):
            name, _, value = entry.decode("ascii", "replace").partition("=")
            owner = token_owner(value) if name == EMBEDDED_RUN_ENV else None
            if owner is not None and owner[0] == owner_pid:
                found.append(pid)
    return found


async def chat(client: MilkClient, params: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = await asyncio.wait_for(
        request(client, "milk/chat", params), TURN_SECONDS
    )
    return result


def answered(client: MilkClient, result: dict[str, Any]) -> None:
    """The turn ended `end_turn`; if not, the failure says why (error, notices)."""
    if result["stopReason"] == "end_turn":
        return
    notices = [u["message"] for u in client.turn_updates(result["turnId"]) if u["kind"] == "notice"]
    pytest.fail(
        f"the turn ended {result['stopReason']}: {result.get('error')}; notices: {notices}",
        pytrace=False,
    )


async def gone_within(pids: list[int], seconds: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        if not any(process_alive(pid, "") for pid in pids):
            return time.monotonic() - started
        await asyncio.sleep(0.05)
    pytest.fail(f"embedded engine {pids} still runs {seconds} s later", pytrace=False)


async def test_lazy_start_shared_by_sessions_and_status(
    harness: Harness, smollm2_gguf: Path
) -> None:
    client = await harness.start()
    status = (await request(client, "milk/status", {}))["local"]
    assert status["provider"] == "embedded"
    assert status["modelPath"] == str(smollm2_gguf)
    assert status["modelBytes"] == fetch.SMOLLM2_135M.size
    assert status["loadState"] == "stopped" and status["reachable"] is True, status
    assert engines_of(server_pid(client)) == []  # nothing starts before a local turn

    result = await chat(client, {"text": "Say hello in five words."})
    answered(client, result)
    assert result["text"].strip(), "the model answered nothing"
    updates = client.turn_updates(result["turnId"])
    deltas = [u["delta"] for u in updates if u["kind"] == "text"]
    assert "".join(deltas) == result["text"]
    notices = [u["message"] for u in updates if u["kind"] == "notice"]
    assert any("Loaded the embedded model" in n for n in notices), notices
    assert "loading model…" in progress_messages(client)
    engines = engines_of(server_pid(client))
    assert len(engines) == 1, engines

    other = await request(
        client, "milk/session/new", {"workspaceFolder": harness.env.workspace.as_uri()}
    )
    second = await chat(client, {"sessionId": other["sessionId"], "text": "Say hi."})
    answered(client, second)
    assert second["sessionId"] != result["sessionId"]
    assert engines_of(server_pid(client)) == engines  # one engine, shared
    notices = [u["message"] for u in client.turn_updates(second["turnId"]) if u["kind"] == "notice"]
    assert not any("Loaded the embedded model" in n for n in notices), notices

    status = (await request(client, "milk/status", {}))["local"]
    assert status["loadState"] == "running", status
    assert status["reachable"] is True and status["baseUrl"].startswith("http://127.0.0.1:")
    assert status["loadSeconds"] > 0
    assert status["model"] == Path(smollm2_gguf).stem
    assert status["memoryBytes"] > 50_000_000, status  # the engine holds the 98 MB model


async def test_idle_stop_then_restart_on_the_next_turn(tmp_path: Path, smollm2_gguf: Path) -> None:
    harness = Harness(embedded_env(tmp_path, smollm2_gguf, idleStopSeconds=1))
    try:
        client = await harness.start()
        first = await chat(client, {"text": "Say hi."})
        answered(client, first)
        engines = engines_of(server_pid(client))
        assert len(engines) == 1
        await gone_within(engines, 10.0)
        status = (await request(client, "milk/status", {}))["local"]
        assert status["loadState"] == "stopped", status
        again = await chat(client, {"text": "Say hi again."})
        answered(client, again)
        restarted = engines_of(server_pid(client))
        assert len(restarted) == 1 and restarted != engines
    finally:
        await harness.close()


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
async def test_the_engine_dies_with_the_server(harness: Harness, sig: signal.Signals) -> None:
    client = await harness.start()
    result = await chat(client, {"text": "Say hi."})
    answered(client, result)
    engines = engines_of(server_pid(client))
    assert len(engines) == 1
    os.kill(server_pid(client), sig)
    await gone_within(engines, 2.0)


@pytest.mark.parametrize(
    ("content", "reason", "says"),
    [
        (None, "local_unreachable", "does not exist"),
        (b"GGUF" + os.urandom(4096), "local_failed", "could not be loaded"),
        (b"not a model at all", "local_failed", "is not a GGUF model file"),
    ],
)
async def test_a_bad_model_file_ends_the_turn_with_what_to_do(
    tmp_path: Path, content: bytes | None, reason: str, says: str
) -> None:
    model = tmp_path / "model.gguf"
    if content is not None:
        model.write_bytes(content)
    harness = Harness(embedded_env(tmp_path, model))
    try:
        client = await harness.start()
        result = await chat(client, {"text": "Say hi."})
        assert result["stopReason"] == "error", result
        assert result["error"]["reason"] == reason, result
        assert says in result["error"]["message"] and str(model) in result["error"]["message"]
        assert client.kinds(result["turnId"])[-1] == "turn_ended"
        assert engines_of(server_pid(client)) == []  # a failed load leaves nothing running
        status = (await request(client, "milk/status", {}))["local"]
        assert status["reachable"] is False and status["error"], status
    finally:
        await harness.close()


def progress_messages(client: MilkClient) -> list[str | None]:
    return [
        getattr(report, "message", None)
        for reports in client.progress_reports.values()
        for report in reports
    ]


async def test_a_turn_cancelled_during_the_load_ends_and_the_load_serves_the_next(
    harness: Harness,
) -> None:
    client = await harness.start()
    session = await request(
        client, "milk/session/new", {"workspaceFolder": harness.env.workspace.as_uri()}
    )
    session_id = session["sessionId"]
    turn = asyncio.create_task(chat(client, {"sessionId": session_id, "text": "Say hi."}))
    deadline = time.monotonic() + 30
    while "loading model…" not in progress_messages(client):
        assert time.monotonic() < deadline and not turn.done(), "no 'loading model…' progress"
        await asyncio.sleep(0.02)
    assert await request(client, "milk/cancel", {"sessionId": session_id}) == {"cancelled": True}
    result = await turn
    assert result["stopReason"] == "cancelled", result
    assert client.kinds(result["turnId"])[-1] == "turn_ended"

    after = await chat(client, {"sessionId": session_id, "text": "Say hi."})
    answered(client, after)
    assert len(engines_of(server_pid(client))) == 1  # the load went on: one engine


def first_usage(client: MilkClient, result: dict[str, Any]) -> dict[str, Any]:
    """The turn's first `usage` update: its first model request's prompt, split into the
    tokens evaluated (`inputTokens`) and those read from the cache (`cacheReadTokens`)."""
    usage = [u for u in client.turn_updates(result["turnId"]) if u["kind"] == "usage"]
    assert usage, "the engine reported no usage"
    return usage[0]


async def test_the_prompt_cache_outlives_a_restart(tmp_path: Path, smollm2_gguf: Path) -> None:
    """Issue 30, item 4: after the engine stops (idle here, an editor restart alike), its
    first turn evaluates at most 15 % of the prompt tokens the cold start evaluated: milk's
    static prompt comes back from the slot saved after the first turn."""
    env = embedded_env(tmp_path, smollm2_gguf, idleStopSeconds=1)
    env.extra_env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    harness = Harness(env)
    try:
        client = await harness.start()
        first = await chat(client, {"text": "Say hi."})
        answered(client, first)
        cold = first_usage(client, first)
        assert cold["inputTokens"] > 200, cold  # milk's system prompt and tools, evaluated
        slots = list((tmp_path / "cache" / "milk-lsp" / "slots").glob("prefix-*.bin"))
        assert len(slots) == 1 and (slots[0].stat().st_mode & 0o777) == 0o600, slots
        await gone_within(engines_of(server_pid(client)), 10.0)
        again = await chat(client, {"text": "Say hello."})
        answered(client, again)
        warm = first_usage(client, again)
        assert warm["inputTokens"] <= 0.15 * cold["inputTokens"], (cold, warm)
        assert warm.get("cacheReadTokens", 0) >= 0.85 * cold["inputTokens"], (cold, warm)
    finally:
        await harness.close()
