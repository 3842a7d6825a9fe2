"""End to end, what Claude would be handed tells the truth (issue 39, point 4): a turn whose
edit the user undid is marked undone in the context, and the goal follows the latest
request whatever its wording."""

from __future__ import annotations

import json

import pytest

from milk_lsp.sessions.bricks import UNDONE_MARK
from tests.e2e.conftest import Env, Harness, request
from tests.fakes.openai_server import FakeOpenAIServer

pytestmark = pytest.mark.e2e


def guided(kind: str, answer: str, **fields: object) -> dict[str, str]:
    shape = {"kind": kind, "answer": answer, "citations": [], "proposed": [], "edits": []}
    shape.update(fields)
    return {"text": json.dumps({**shape, "reason": ""})}


async def test_an_undone_edit_is_not_presented_as_standing_and_the_goal_moves(
    env: Env, openai: FakeOpenAIServer, harness: Harness
) -> None:
    version = env.workspace / "version.py"
    version.write_text('__version__ = "1.2.2"\n')
    env.settings["local"]["strategy"] = "guided"
    client = await harness.start()
    client.permission_answers.append("allow_once")
    quote = {"path": "version.py", "line": 1, "quote": '__version__ = "1.2.2"'}
    edit = {"path": "version.py", "old_text": '"1.2.2"', "new_text": '"1.2.3"'}
    openai.enqueue(
        {"text": '{"intent": "question"}'},  # each guided turn first asks what is asked
        guided("answer", "It is `1.2.2`.", citations=[quote]),
        {"text": '{"intent": "change"}'},
        guided("edits", "I changed `__version__` to 1.2.3.", edits=[edit]),
    )
    first = await request(client, "milk/chat", {"text": "Which version is this?"})
    sid = first["sessionId"]
    assert first["stopReason"] == "end_turn", first
    bump = await request(
        client, "milk/chat", {"sessionId": sid, "text": "bump the version to 1.2.3"}
    )
    assert bump["stopReason"] == "end_turn", bump
    assert version.read_text() == '__version__ = "1.2.3"\n'
    needs = [u for u in client.turn_updates(bump["turnId"]) if u["kind"] == "need"]
    assert needs and needs[-1]["currentNeed"] == "bump the version to 1.2.3"

    before = await request(client, "milk/context", {"sessionId": sid})
    assert "I changed `__version__` to 1.2.3." in before["contextFile"]
    assert UNDONE_MARK not in before["contextFile"]
    await request(client, "milk/turn/undo", {"sessionId": sid, "turnId": bump["turnId"]})
    assert version.read_text() == '__version__ = "1.2.2"\n'
    after = await request(client, "milk/context", {"sessionId": sid})
    lines = [line for line in after["contextFile"].splitlines() if "1.2.3" in line]
    said = [line for line in lines if line.startswith(("User", "Assistant"))]
    assert said and all(UNDONE_MARK in line for line in said), lines
    assert any(line.startswith("Assistant (local)") and UNDONE_MARK in line for line in lines)
