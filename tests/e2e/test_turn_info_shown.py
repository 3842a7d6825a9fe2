"""End to end (issue 20): a reloaded chat shows what the live one did. The stored turn info
keeps the badge's reason, the turn's notices and the model of a turn whose local part said
nothing (it failed at once), so `milk/session/get` carries them."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import Env, MilkClient, request
from tests.fakes.openai_server import FakeOpenAIServer

pytestmark = pytest.mark.e2e


async def test_a_failed_turn_keeps_its_model_reason_and_notices(
    client: MilkClient, env: Env, openai: FakeOpenAIServer
) -> None:
    openai.enqueue({"text": "hello there"})
    first = await request(client, "milk/chat", {"text": "say hello", "route": "local"})
    assert first["stopReason"] == "end_turn", first
    openai.enqueue({"status": 500, "body": "the model server crashed"})
    # route auto (the local model may hand off; local.handOff is off in these tests)
    failed = await request(client, "milk/chat", {"text": "again?", "sessionId": first["sessionId"]})
    assert failed["stopReason"] == "error", failed
    live = {
        u["kind"]: u for u in client.turn_updates(failed["turnId"]) if u["kind"] == "turn_started"
    }
    got = await request(client, "milk/session/get", {"sessionId": first["sessionId"]})
    infos = {info["turnId"]: info for info in got["turnInfo"]}
    ok, bad = infos[first["turnId"]], infos[failed["turnId"]]
    assert ok["model"] == "fake-model"
    assert ok["routeReason"] == "user chose the local agent"
    # the failed turn's local part said nothing: its badge still names the model
    assert bad["model"] == "fake-model", bad
    assert bad["routeReason"] == live["turn_started"]["reason"]
    assert "notices" not in bad or all(n["severity"] != "error" for n in bad["notices"])


async def test_notices_are_kept_with_the_turn(
    client: MilkClient, env: Env, openai: FakeOpenAIServer
) -> None:
    # a reply cut at its token limit: milk says so in a warning notice
    openai.enqueue({"text": "Hello, this is a reply", "finish_reason": "length"})
    result = await request(client, "milk/chat", {"text": "hm", "route": "local"})
    shown = [
        {"severity": u["severity"], "message": u["message"]}
        for u in client.turn_updates(result["turnId"])
        if u["kind"] == "notice" and u["severity"] != "error"
    ]
    assert shown, "the cut reply gives a notice"
    got = await request(client, "milk/session/get", {"sessionId": result["sessionId"]})
    [info] = [i for i in got["turnInfo"] if i["turnId"] == result["turnId"]]
    assert info["notices"] == shown
