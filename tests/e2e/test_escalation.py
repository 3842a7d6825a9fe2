"""End to end: escalation through the server to the REAL Claude Code CLI (the SDK's bundled
binary) talking to the Messages-API stand-in on 127.0.0.1; asserts what the API received."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from milk_lsp.agents.claude.cli import bundled_cli_path
from tests.e2e.conftest import Env, Harness, MilkClient, request
from tests.fakes.anthropic_api import FakeAnthropicAPI, appended_system_text, user_text

pytestmark = [pytest.mark.e2e, pytest.mark.claude]

CLAUDE = bundled_cli_path()
if CLAUDE is None:  # pragma: no cover - the wheel always ships it
    pytest.skip("claude-agent-sdk's bundled CLI is missing", allow_module_level=True)

LONG_REPLY = "Claude looked at the parser and fixed the off-by-one in the tokenizer loop. " * 4


@pytest.fixture
async def claude_client(harness: Harness, claude_env: Env) -> MilkClient:
    return await harness.start()


def leftovers(env: Env) -> tuple[list[str], list[int]]:
    """Temp files left in TMPDIR and CLI processes still running for this test."""
    files = [p.name for p in (env.root / "tmp").iterdir() if p.name.startswith("milk")]
    marker = str(env.root).encode()
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if marker in cmdline and b"claude" in cmdline:
            pids.append(int(proc.name))
    return files, pids


async def no_leftovers(env: Env) -> None:
    for _ in range(50):
        files, pids = leftovers(env)
        if not files and not pids:
            return
        await asyncio.sleep(0.1)
    assert leftovers(env) == ([], [])


async def session_of(client: MilkClient, env: Env) -> str:
    info = await request(client, "milk/session/new", {"workspaceFolder": env.workspace.as_uri()})
    return info["sessionId"]


def escalated_update(client: MilkClient, turn_id: str) -> dict[str, Any]:
    [update] = [u for u in client.turn_updates(turn_id) if u["kind"] == "escalated"]
    return update


async def test_user_escalation_first_then_resume_and_returning(
    claude_client: MilkClient, claude_env: Env, api: FakeAnthropicAPI, openai
) -> None:
    client, env = claude_client, claude_env
    session_id = await session_of(client, env)
    openai.enqueue(
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "hello.py"}}]},
        {"text": "local looked at hello.py"},
    )
    await request(client, "milk/chat", {"sessionId": session_id, "text": "look at hello.py"})

    # first escalation by the user
    preview = await request(client, "milk/context", {"sessionId": session_id})
    assert preview["mode"] == "first"
    assert preview["userMessagePrefix"] == ""
    assert "--session-id" in " ".join(preview["argv"])
    assert "<context-file>" in " ".join(preview["argv"])
    api.enqueue({"text": LONG_REPLY, "chunk_chars": 20})
    result = await request(
        client,
        "milk/escalate",
        {"sessionId": session_id, "text": "fix the parser", "reason": "hard"},
    )
    assert result["stopReason"] == "end_turn", result
    assert result["agent"] == "claude"
    assert result["escalated"] == {"by": "user", "reason": "hard"}
    assert result["text"] == LONG_REPLY
    assert result["usage"]["inputTokens"] > 0
    esc = escalated_update(client, result["turnId"])
    assert (esc["mode"], esc["by"]) == ("first", "user")
    assert esc["contextChars"] == preview["chars"]["contextFile"]
    deltas = [u for u in client.turn_updates(result["turnId"]) if u["kind"] == "text"]
    assert len(deltas) > 1 and all(d["agent"] == "claude" for d in deltas)
    first = api.main_requests()[-1]
    assert appended_system_text(first) == preview["contextFile"]
    assert user_text(first) == "fix the parser"
    assert "[Escalation brief" not in preview["contextFile"]
    assert "local looked at hello.py" in preview["contextFile"]
    info = (await request(client, "milk/session/get", {"sessionId": session_id}))["session"]
    [previewed_id] = [a.split("=", 1)[1] for a in preview["argv"] if a.startswith("--session-id=")]
    assert info["claudeSessionId"] == previewed_id  # the preview showed the argv that ran
    assert info["activeAgent"] == "claude"
    await no_leftovers(env)

    # the user keeps talking to Claude: resumed, nothing new -> no block
    preview = await request(client, "milk/context", {"sessionId": session_id})
    assert preview["mode"] == "resume"
    assert preview["userMessagePrefix"] == ""
    api.enqueue({"text": "Anything else?"})
    result = await request(client, "milk/chat", {"sessionId": session_id, "text": "thanks"})
    assert result["agent"] == "claude"
    turn_started = client.turn_updates(result["turnId"])[0]
    assert turn_started["agent"] == "claude"
    resumed = api.main_requests()[-1]
    assert user_text(resumed) == "thanks"
    assert user_text(first) in [  # the prior conversation came back with --resume
        t for m in resumed["body"]["messages"] for t in _texts(m)
    ]
    # static prefix byte-identical at the API across the session's escalations
    assert appended_system_text(resumed) == appended_system_text(first)

    # Claude asked a question: the next auto turn goes back to Claude (waiting)
    info = (await request(client, "milk/session/get", {"sessionId": session_id}))["session"]
    assert info["state"] == "escalation_waiting"

    # back to local, then returning: the block carries the local summary
    openai.enqueue({"text": "local ran the tests: 3 failures"})
    local = await request(
        client, "milk/chat", {"sessionId": session_id, "text": "run tests", "route": "local"}
    )
    assert local["agent"] == "local"
    preview = await request(client, "milk/context", {"sessionId": session_id})
    assert preview["mode"] == "returning"
    prefix = preview["userMessagePrefix"]
    assert prefix.startswith("<milk-context>\n") and prefix.endswith("</milk-context>\n\n")
    assert "local ran the tests: 3 failures" in prefix
    api.enqueue({"text": "Fixed them."})
    result = await request(
        client, "milk/chat", {"sessionId": session_id, "text": "fix them", "route": "claude"}
    )
    assert escalated_update(client, result["turnId"])["mode"] == "returning"
    returning = api.main_requests()[-1]
    assert user_text(returning) == prefix + "fix them"
    assert appended_system_text(returning) == appended_system_text(first)
    # unchanged block is not sent again
    preview = await request(client, "milk/context", {"sessionId": session_id})
    assert preview["userMessagePrefix"] == ""
    await no_leftovers(env)


def _texts(message: dict[str, Any]) -> list[str]:
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    return [b.get("text", "") for b in content or [] if isinstance(b, dict)]


async def test_agent_escalation_carries_the_brief(
    claude_client: MilkClient, claude_env: Env, api: FakeAnthropicAPI, openai
) -> None:
    client, env = claude_client, claude_env
    session_id = await session_of(client, env)
    preview = await request(
        client, "milk/context", {"sessionId": session_id, "reason": "stuck on nil pointer"}
    )
    assert "stuck on nil pointer" in preview["contextFile"]
    openai.enqueue(
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "hello.py"}}]},
        {
            "text": "Let me hand this over.",
            "tool_calls": [
                {"name": "escalate_to_claude", "arguments": {"reason": "stuck on nil pointer"}}
            ],
        },
    )
    api.enqueue({"text": LONG_REPLY})
    result = await request(client, "milk/chat", {"sessionId": session_id, "text": "fix auth.go"})
    assert result["stopReason"] == "end_turn", result
    assert result["agent"] == "claude"
    assert result["escalated"] == {"by": "agent", "reason": "stuck on nil pointer"}
    assert result["text"].startswith("Let me hand this over.")
    assert result["text"].endswith(LONG_REPLY)
    kinds = client.kinds(result["turnId"])
    assert kinds.count("turn_started") == 1 and kinds[-1] == "turn_ended"
    esc = escalated_update(client, result["turnId"])
    assert (esc["by"], esc["mode"]) == ("agent", "first")
    sent = appended_system_text(api.main_requests()[-1])
    assert "stuck on nil pointer" in sent
    assert "[Escalation brief" in sent
    # what the local agent did in this very turn reaches Claude
    assert "[Tool: read_file]" in sent
    assert "hello.py" in sent
    assert "Assistant (local): Let me hand this over." in sent
    assert "User: fix auth.go" in sent
    assert "fix auth.go" in sent.split("[Current user goal]", 1)[1]  # the ask became the goal
    assert user_text(api.main_requests()[-1]) == "fix auth.go"
    got = await request(client, "milk/session/get", {"sessionId": session_id})
    assert [(t["role"], t["agent"]) for t in got["turns"]] == [
        ("user", "local"),
        ("assistant", "local"),
        ("assistant", "claude"),
    ]
    assert len(got["turns"][1]["toolCalls"]) == 2  # read_file and the escalation itself
    assert got["bricks"]["escalationBrief"] == ""  # delivered, then cleared
    assert LONG_REPLY.strip()[:40] in got["bricks"]["lastClaudeSummary"]
    # a user escalation afterwards does not carry a brief
    preview = await request(client, "milk/context", {"sessionId": session_id})
    assert "[Escalation brief" not in preview["contextFile"] + preview["userMessagePrefix"]


CLI_MAIN = 'import argparse\n\nparser = argparse.ArgumentParser(description="Slug string")\n'
EDIT_DESCRIPTION = {
    "tool_calls": [
        {
            "name": "edit_file",
            "arguments": {
                "path": "cli.py",
                "old_text": 'description="Slug string"',
                "new_text": 'description="Make a slug from text"',
            },
        }
    ]
}
ESCALATE_AFTER_THE_EDIT = {
    "text": "Running it fails with an ImportError; Claude should fix the import.",
    "tool_calls": [{"name": "escalate_to_claude", "arguments": {"reason": ""}}],
}


async def test_an_escalation_after_the_spelled_out_change_was_made_goes_to_claude(
    claude_client: MilkClient, claude_env: Env, api: FakeAnthropicAPI, openai
) -> None:
    """bench/real_tasks (slugify cli-description): the right edit made, then the model
    escalated. Whether the request asked for more than that change only its words could
    tell (issue 38 reads none), so the model's own call stands: Claude takes over, from the
    files as the edit left them. A needless hand-off costs Claude a turn; a turn ended
    locally on half of a request would be a silent failure."""
    client, env = claude_client, claude_env
    (env.workspace / "cli.py").write_text(CLI_MAIN)
    client.permission_answers.append("allow_once")
    openai.enqueue(EDIT_DESCRIPTION, ESCALATE_AFTER_THE_EDIT)
    api.enqueue({"text": "Claude checked it."})
    ask = 'In cli.py change the ArgumentParser description from "Slug string" to "Make a slug from text".'
    result = await request(client, "milk/chat", {"text": ask})
    assert result["stopReason"] == "end_turn", result
    assert result["agent"] == "claude" and result["escalated"]["by"] == "agent", result
    assert 'description="Make a slug from text"' in (env.workspace / "cli.py").read_text()


async def test_an_escalation_after_one_of_several_asked_changes_goes_to_claude(
    claude_client: MilkClient, claude_env: Env, api: FakeAnthropicAPI, openai
) -> None:
    client, env = claude_client, claude_env
    (env.workspace / "cli.py").write_text(CLI_MAIN)
    client.permission_answers.append("allow_once")
    openai.enqueue(EDIT_DESCRIPTION, ESCALATE_AFTER_THE_EDIT)
    api.enqueue({"text": "Claude added the test."})
    ask = (
        'In cli.py change the ArgumentParser description from "Slug string" to "Make a slug'
        ' from text" and add a test for it.'
    )
    result = await request(client, "milk/chat", {"text": ask})
    assert result["stopReason"] == "end_turn", result
    assert result["agent"] == "claude", result
    assert result["escalated"]["by"] == "agent"


async def test_fresh_start_carries_the_prior_summary(
    claude_client: MilkClient, claude_env: Env, api: FakeAnthropicAPI, openai
) -> None:
    client, env = claude_client, claude_env
    session_id = await session_of(client, env)
    api.enqueue({"text": LONG_REPLY})
    first = await request(client, "milk/escalate", {"sessionId": session_id, "text": "start"})
    assert first["stopReason"] == "end_turn"
    first_static = appended_system_text(api.main_requests()[-1])
    assert "[Prior escalation session summary]" not in first_static
    for i in range(8):
        openai.enqueue({"text": f"local step {i}"})
        await request(
            client, "milk/chat", {"sessionId": session_id, "text": f"step {i}", "route": "local"}
        )
    preview = await request(client, "milk/context", {"sessionId": session_id})
    assert preview["mode"] == "fresh"
    assert "[Prior escalation session summary]" in preview["contextFile"]
    api.enqueue({"text": "fresh start ok"})
    result = await request(client, "milk/escalate", {"sessionId": session_id, "text": "again"})
    assert escalated_update(client, result["turnId"])["mode"] == "fresh"
    sent = appended_system_text(api.main_requests()[-1])
    assert sent == preview["contextFile"]
    assert sent.startswith(first_static.split("\n\n[Current")[0][:200])
    sent_texts = [t for m in api.main_requests()[-1]["body"]["messages"] for t in _texts(m)]
    assert "start" not in sent_texts  # a new conversation, not the old one resumed


TOUCH = {"name": "Bash", "input": {"command": "touch marker.txt", "description": "Create marker"}}


@pytest.mark.parametrize("answer", ["allow_once", "deny"])
async def test_claude_permission_round_trip(
    claude_client: MilkClient, claude_env: Env, api: FakeAnthropicAPI, answer: str
) -> None:
    client, env = claude_client, claude_env
    session_id = await session_of(client, env)
    client.permission_answers.append(answer)
    api.enqueue({"tool_use": TOUCH}, {"text": "done with the tool"})
    result = await request(client, "milk/escalate", {"sessionId": session_id, "text": "touch"})
    assert result["stopReason"] == "end_turn", result
    [asked] = client.permission_requests
    assert (asked["agent"], asked["tool"]) == ("claude", "Bash")
    assert asked["input"]["command"] == "touch marker.txt"
    assert asked["description"]
    updates = client.turn_updates(result["turnId"])
    calls = [u for u in updates if u["kind"] == "tool_call"]
    assert calls and all(c["toolCallId"] == asked["toolCallId"] for c in calls)
    followup = api.main_requests()[-1]["body"]["messages"][-1]
    results = [b for b in followup["content"] if b.get("type") == "tool_result"]
    assert results
    if answer == "allow_once":
        assert (env.workspace / "marker.txt").exists()
        assert calls[-1]["status"] == "completed"
    else:
        assert not (env.workspace / "marker.txt").exists()
        assert "denied" in str(results[0].get("content")).lower()
        assert calls[-1]["status"] == "denied"
    await no_leftovers(env)


async def test_allow_for_session_and_message_request_fallback(
    harness: Harness, claude_env: Env, api: FakeAnthropicAPI
) -> None:
    client = await harness.start(milk_permission=False)
    session_id = await session_of(client, claude_env)
    client.message_answers.append("Allow for this session")
    api.enqueue({"tool_use": TOUCH}, {"text": "first done"}, {"tool_use": TOUCH}, {"text": "again"})
    await request(client, "milk/escalate", {"sessionId": session_id, "text": "one"})
    result = await request(
        client, "milk/chat", {"sessionId": session_id, "text": "two", "route": "claude"}
    )
    assert result["stopReason"] == "end_turn", result
    assert len(client.message_requests) == 1
    assert [a.title for a in client.message_requests[0].actions] == [
        "Allow once",
        "Allow for this session",
        "Deny",
    ]
    statuses = [
        u["status"] for u in client.turn_updates(result["turnId"]) if u["kind"] == "tool_call"
    ]
    assert statuses[-1] == "completed"


async def test_cancel_mid_stream_then_resume(
    claude_client: MilkClient, claude_env: Env, api: FakeAnthropicAPI
) -> None:
    client, env = claude_client, claude_env
    session_id = await session_of(client, env)
    api.enqueue({"text": "first reply"})
    await request(client, "milk/escalate", {"sessionId": session_id, "text": "hi"})
    claude_id = (await request(client, "milk/session/get", {"sessionId": session_id}))["session"][
        "claudeSessionId"
    ]
    api.enqueue({"text": "partial words " * 50, "chunk_chars": 8, "delay": 0.05})
    chat = asyncio.ensure_future(
        request(client, "milk/chat", {"sessionId": session_id, "text": "long", "route": "claude"})
    )
    await client.wait_for_update(
        lambda u: u["kind"] == "text" and u["delta"].startswith("part"), 60
    )
    assert await request(client, "milk/cancel", {"sessionId": session_id}) == {"cancelled": True}
    result = await chat
    assert result["stopReason"] == "cancelled"
    assert result["text"].startswith("partial")
    await no_leftovers(env)
    api.enqueue({"text": "resumed fine"})
    result = await request(
        client, "milk/chat", {"sessionId": session_id, "text": "go on", "route": "claude"}
    )
    assert result["stopReason"] == "end_turn", result
    got = await request(client, "milk/session/get", {"sessionId": session_id})
    assert got["session"]["claudeSessionId"] == claude_id
    assert escalated_update(client, result["turnId"])["mode"] in ("resume", "returning")


async def test_cancel_while_permission_is_open(
    claude_client: MilkClient, claude_env: Env, api: FakeAnthropicAPI
) -> None:
    client, env = claude_client, claude_env
    session_id = await session_of(client, env)
    client.permission_answers.append("hang")
    api.enqueue({"tool_use": TOUCH}, {"text": "x"})
    chat = asyncio.ensure_future(
        request(client, "milk/escalate", {"sessionId": session_id, "text": "run"})
    )
    for _ in range(300):
        if client.permission_requests:
            break
        await asyncio.sleep(0.1)
    assert client.permission_requests
    assert await request(client, "milk/cancel", {"sessionId": session_id}) == {"cancelled": True}
    result = await chat
    assert result["stopReason"] == "cancelled"
    await no_leftovers(env)


async def test_cli_killed_mid_stream(
    claude_client: MilkClient, claude_env: Env, api: FakeAnthropicAPI
) -> None:
    client, env = claude_client, claude_env
    session_id = await session_of(client, env)
    api.enqueue({"text": "streaming " * 100, "chunk_chars": 5, "delay": 0.05})
    chat = asyncio.ensure_future(
        request(client, "milk/escalate", {"sessionId": session_id, "text": "go"})
    )
    await client.wait_for_update(lambda u: u["kind"] == "text", 60)
    _, pids = leftovers(env)
    assert pids
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    result = await chat
    assert result["stopReason"] == "error"
    assert result["error"]["reason"] == "claude_failed"
    await no_leftovers(env)
    got = await request(client, "milk/session/get", {"sessionId": session_id})
    assert [t["status"] for t in got["turns"]] == ["error", "error"]


async def test_unknown_resume_id_falls_back_to_a_fresh_start(
    claude_client: MilkClient, claude_env: Env, api: FakeAnthropicAPI
) -> None:
    client, env = claude_client, claude_env
    session_id = await session_of(client, env)
    api.enqueue({"text": LONG_REPLY})
    await request(client, "milk/escalate", {"sessionId": session_id, "text": "hi"})
    shutil.rmtree(env.root / "home" / ".claude" / "projects")  # Claude forgets the conversation
    api.enqueue({"text": "fresh again"})
    result = await request(
        client, "milk/chat", {"sessionId": session_id, "text": "more", "route": "claude"}
    )
    assert result["stopReason"] == "end_turn", result
    notices = [u["message"] for u in client.turn_updates(result["turnId"]) if u["kind"] == "notice"]
    assert any("fresh" in n for n in notices)
    sent = appended_system_text(api.main_requests()[-1])
    assert "[Milk current-need tracking]" in sent  # never an instruction-less session
    assert "[Prior escalation session summary]" in sent
    assert user_text(api.main_requests()[-1]) == "more"


@pytest.mark.parametrize(
    ("script", "reason"),
    [
        pytest.param({"status": 500, "repeat": 10}, "claude_failed", id="500"),
        pytest.param({"error": "prompt_too_long"}, "prompt_too_long", id="prompt-too-long"),
    ],
)
async def test_api_failures_end_the_turn(
    claude_client: MilkClient, claude_env: Env, api: FakeAnthropicAPI, script, reason
) -> None:
    client, env = claude_client, claude_env
    session_id = await session_of(client, env)
    api.enqueue(script)
    result = await asyncio.wait_for(
        request(client, "milk/escalate", {"sessionId": session_id, "text": "go"}), 90
    )
    assert result["stopReason"] == "error"
    assert result["error"]["reason"] == reason
    await no_leftovers(env)
    got = await request(client, "milk/session/get", {"sessionId": session_id})
    assert got["turns"][0]["status"] == "error"


async def test_missing_binary(harness: Harness, env: Env) -> None:
    client = await harness.start()
    session_id = await session_of(client, env)
    result = await request(client, "milk/escalate", {"sessionId": session_id, "text": "go"})
    assert result["stopReason"] == "error"
    assert result["error"]["reason"] == "claude_not_found"
    assert "claude.path" in result["error"]["message"]
    with pytest.raises(JsonRpcException) as caught:
        await request(client, "milk/escalate", {"sessionId": "nope"})
    assert caught.value.data == {"reason": "session_not_found"}
