"""End to end: how milk judges a local answer, through ACP (`milk-lsp acp` driven by the ACP
SDK's client). The suites, their rules and the case counts are in `test_judging.py`; here,
9 false-positive cases (general questions, an embedded `resource` block, a `resource_link`,
answers after a successful look; modes `auto` and `local`) and 2 miss cases on mode `local`.

A prompt's embedded resource and resource link are attachments (`milk/acp/prompt.py`): the
answer may name what they hold, also when the editor's buffer differs from the disk.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from acp import RequestError
from acp.schema import EmbeddedResourceContentBlock, ResourceContentBlock, TextResourceContents

from tests.e2e.acp_harness import Agent, RecordingClient, start_agent
from tests.e2e.conftest import Env
from tests.e2e.test_judging import (
    CALC,
    MILK_MESSAGE_STARTS,
    SIGNALS,
    assert_model_asked_as_scripted,
    assert_shown_once,
    call,
    populate,
    read,
    say,
)
from tests.fakes.openai_server import FakeOpenAIServer

pytestmark = pytest.mark.e2e

UNSAVED_CALC = CALC + "\n\ndef multiply(a, b):\n    return a * b\n"
"""calc.py as the editor has it: a function typed in and not saved."""
UNSAVED_CLI_NOTE = "# TODO: add a --digits alias of --precision\n"


@dataclass(frozen=True)
class Block:
    """A prompt block: `embedded` (its text given) or `link` (a resource link)."""

    kind: str
    path: str
    text: str = ""


@dataclass(frozen=True)
class AcpGood:
    ask: str
    script: list[dict[str, Any]]
    mode: str = "auto"
    blocks: tuple[Block, ...] = ()
    buffers: tuple[tuple[str, str], ...] = ()
    """The editor's buffers (what `fs/read_text_file` answers), by workspace path."""

    @property
    def answer(self) -> str:
        return str(self.script[-1]["text"])


GOOD: dict[str, AcpGood] = {
    "general-reverse-a-list": AcpGood(
        "How do I reverse a list in Python?",
        [say("Use `items[::-1]` or `list(reversed(items))`; `items.reverse()` works in place.")],
    ),
    "general-dict-on-mode-local": AcpGood(
        "How do I iterate over a dict's keys and values?",
        [say("Use `for key, value in data.items():`; `data.keys()` and `data.values()` too.")],
        mode="local",
    ),
    "small-talk": AcpGood("thanks, that helped!", [say("Glad it helped! Anything else?")]),
    "embedded-resource": AcpGood(
        "What does this file do?",
        [say("`calc.py` defines `add()` and `subtract()`, and `Calculator.add_value()` sums.")],
        blocks=(Block("embedded", "calc.py", CALC),),
    ),
    "embedded-resource-with-unsaved-text": AcpGood(
        "Is this new function right?",
        [say("Yes: `multiply(a, b)` returns `a * b`, like `add()` returns `a + b`.")],
        mode="local",
        blocks=(Block("embedded", "calc.py", UNSAVED_CALC),),
    ),
    "resource-link-read-from-disk": AcpGood(
        "What options does this take?",
        [say("`cli.py` takes `a` and `b`, `--precision` (default 2) and `--verbose`.")],
        blocks=(Block("link", "cli.py"),),
    ),
    "resource-link-read-from-the-editor": AcpGood(
        "What does the note at the top say?",
        [say("It plans a `--digits` alias of `--precision`, not written yet.")],
        blocks=(Block("link", "cli.py"),),
        buffers=(("cli.py", UNSAVED_CLI_NOTE + "import argparse\n"),),
    ),
    "read-then-quote": AcpGood(
        "What does greet in hello.py return?",
        [read("hello.py"), say("`greet()` returns `'hello'`: line 2 of `hello.py` is the return.")],
    ),
    "search-then-place-on-mode-local": AcpGood(
        "Where is subtract defined?",
        [
            call("search_text", pattern="subtract"),
            say("`subtract` is defined in `calc.py` at line 9: `def subtract(a, b):`."),
        ],
        mode="local",
    ),
}


def prompt_blocks(env: Env, blocks: tuple[Block, ...]) -> list[Any]:
    made: list[Any] = []
    for block in blocks:
        uri = (env.workspace / block.path).as_uri()
        if block.kind == "embedded":
            made.append(
                EmbeddedResourceContentBlock(
                    type="resource", resource=TextResourceContents(uri=uri, text=block.text)
                )
            )
        else:
            made.append(ResourceContentBlock(type="resource_link", name=block.path, uri=uri))
    return made


async def session(agent: Agent, env: Env, mode: str) -> str:
    sid = await agent.new_session(env.workspace)
    if mode != "auto":
        await agent.conn.set_session_mode(session_id=sid, mode_id=mode)
    return sid


def notices(client: RecordingClient, sid: str) -> list[str]:
    return [
        u.content.text
        for u in client.of_kind("agent_thought_chunk", sid)
        if (u.field_meta or {}).get("milk", {}).get("kind") == "notice"
    ]


@pytest.mark.parametrize("case", list(GOOD.values()), ids=list(GOOD))
async def test_a_good_answer_over_acp_ends_the_prompt_as_it_is(
    case: AcpGood, env: Env, openai: FakeOpenAIServer
) -> None:
    populate(env.workspace)
    client = RecordingClient(buffers={str(env.workspace / p): t for p, t in case.buffers})
    openai.enqueue(*case.script)
    async with start_agent(env, client) as agent:
        sid = await session(agent, env, case.mode)
        result = await agent.say(sid, case.ask, *prompt_blocks(env, case.blocks))
        assert result.stop_reason == "end_turn"
        milk = result.field_meta["milk"]
        assert milk["agent"] == "local"
        assert "escalated" not in milk
        assert_model_asked_as_scripted(openai, case.script)
        assert_shown_once(client.text(sid), case.answer)
        assert client.text(sid, agent="claude") == ""
        assert notices(client, sid) == []
        assert client.permission_requests == []
        if case.blocks:  # the attachment reached the model with the question
            sent = openai.requests[0]["messages"][-1]["content"]
            assert f"@{case.blocks[0].path}" in sent and "Attached" in sent
            for _, text in case.buffers:  # read through the client: the editor's text
                assert text.splitlines()[0] in sent


BAD: dict[str, tuple[str, list[dict[str, Any]], str]] = {
    "markup-after-a-read": (
        "What does greet in hello.py return?",
        [read("hello.py"), say("<tools></tools>")],
        "unrunnable_call",
    ),
    "embedded-resource-then-a-missing-file": (
        "Where is this used?",
        [say("`add` is used by `src/report.py` and by `compute_total()`.")],
        "ungrounded_answer",
    ),
}


@pytest.mark.parametrize(("ask", "script", "signal"), BAD.values(), ids=list(BAD))
async def test_a_bad_answer_on_mode_local_fails_the_prompt_naming_what_happened(
    ask: str, script: list[dict[str, Any]], signal: str, env: Env, openai: FakeOpenAIServer
) -> None:
    populate(env.workspace)
    openai.enqueue(*script, script[-1])  # sent back once, the bad model says it again
    async with start_agent(env) as agent:
        sid = await session(agent, env, "local")
        blocks = [] if script[0].get("tool_calls") else [Block("embedded", "calc.py", CALC)]
        with pytest.raises(RequestError) as failed:
            await agent.say(sid, ask, *prompt_blocks(env, tuple(blocks)))
        assert failed.value.code == -32603
        data = failed.value.data
        assert data["reason"] == "local_failed" and data["stopReason"] == "error", data
        assert data["signal"] == signal, data
        for internal in SIGNALS:
            assert internal not in str(failed.value), "the words name no signal id"
        assert len(script) <= len(openai.requests) <= len(script) + 1
        said = [
            m["content"]
            for body in openai.requests
            for m in body["messages"]
            if m["role"] == "user" and str(m["content"]).startswith(MILK_MESSAGE_STARTS)
        ]
        # at most milk's one repair: its check's reasons, mechanically
        assert len(said) == len(openai.requests) - len(script), said
        assert all(text.startswith("milk: your answer was checked") for text in said), said
