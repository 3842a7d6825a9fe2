"""End to end: `milk/status` with `checkLogin` says whether Claude Code is logged in, as the
REAL Claude Code CLI's `auth status` reports it (issue 31: `:checkhealth milk` said "OK
found" while logged out). Without `checkLogin` nothing is run for it."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import Env, Harness, request

pytestmark = [pytest.mark.e2e, pytest.mark.claude]


async def test_a_key_in_the_environment_is_a_login(harness: Harness, claude_env: Env) -> None:
    client = await harness.start()
    status = await request(client, "milk/status", {"checkLogin": True})
    claude = status["claude"]
    assert claude["found"] is True
    assert claude["loggedIn"] is True, claude
    assert "API key" in claude["loginDetail"], claude


async def test_no_key_and_no_credentials_is_logged_out(harness: Harness, claude_env: Env) -> None:
    claude_env.extra_env.pop("ANTHROPIC_API_KEY")
    client = await harness.start()
    status = await request(client, "milk/status", {"checkLogin": True})
    assert status["claude"]["loggedIn"] is False, status["claude"]
    plain = await request(client, "milk/status", {})
    assert "loggedIn" not in plain["claude"], "only a health check pays for `auth status`"
