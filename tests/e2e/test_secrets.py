"""End to end: a model server that echoes the API key in its error body. The key must not
reach the updates, the turn result or the log file (issue: redact configured secrets)."""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import Env, Harness, request
from tests.fakes.openai_server import FakeOpenAIServer

pytestmark = pytest.mark.e2e

KEY = "sk-local-0123456789abcdef"


async def test_an_echoed_api_key_is_redacted_everywhere(
    harness: Harness, env: Env, openai: FakeOpenAIServer
) -> None:
    echo = {"error": {"message": f"bad credentials: Authorization: Bearer {KEY}"}}
    openai.enqueue({"status": 401, "body": echo})
    env.settings["local"]["apiKey"] = KEY
    client = await harness.start()
    result = await request(client, "milk/chat", {"text": "hi", "route": "local"})
    assert result["stopReason"] == "error"
    assert "bad credentials" in result["error"]["message"]
    assert KEY not in json.dumps(result)
    assert "[redacted]" in result["error"]["message"]
    assert KEY not in json.dumps(client.updates)
    assert any("[redacted]" in json.dumps(u) for u in client.updates)
    await harness.stop(client)
    logs = "".join(p.read_text() for p in (env.root / "logs").glob("milk-lsp.log*"))
    assert "bad credentials" in logs, "the failure is logged"
    assert KEY not in logs
