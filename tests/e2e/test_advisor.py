"""End to end, the advisor route (issues 32 and 39): the REAL Claude Code CLI on the
Messages-API stand-in plans from milk's brief in one request without tools; milk applies
the step whose old text is in its file once, the local model (a real HTTP server, scripted)
does the others, and breaks the file in one, which Claude then fixes in ONE fresh request,
its answer applied by milk. One turn, the steps and who did each; undo puts every file back;
a bad plan fails clearly with nothing changed; a cancel leaves no process or temp file."""

from __future__ import annotations

import asyncio
import json
import shutil
from typing import Any

import pytest

from milk_lsp.agents.claude.cli import bundled_cli_path
from milk_lsp.engine.advisor.brief import PLAN_SYSTEM, STEP_SYSTEM
from tests.e2e.conftest import Env, Harness, MilkClient, request
from tests.e2e.test_escalation import no_leftovers
from tests.fakes.anthropic_api import BUILTIN_PROMPT_ENDINGS, FakeAnthropicAPI, user_text

pytestmark = [pytest.mark.e2e, pytest.mark.claude]

if bundled_cli_path() is None:  # pragma: no cover - the wheel always ships it
    pytest.skip("claude-agent-sdk's bundled CLI is missing", allow_module_level=True)

FILES = {
    "alpha.py": "ALPHA = 1\n",
    "beta.py": "BETA = 2\nBETA_TOO = 2\n",
    "gamma.py": "GAMMA = 3\nGAMMA_TOO = 3\n",
}
ASK = "Multiply ALPHA, BETA and GAMMA by ten."


def step(path: str, old: str, new: str, why: str) -> dict[str, str]:
    return {"path": path, "old_text": old, "new_text": new, "why": why}


PLAN = {
    "steps": [
        step("alpha.py", "ALPHA = 1", "ALPHA = 10", "ALPHA times ten"),  # once: milk does it
        step("beta.py", "= 2\n", "= 20\n", "BETA times ten"),  # twice: the local model
        step("gamma.py", "= 3\n", "= 30\n", "GAMMA times ten"),
    ]
}
FIXED = {"steps": [step("beta.py", "BETA = 2\n", "BETA = 20\n", "BETA times ten")]}


def edit(path: str, old: str, new: str) -> dict[str, Any]:
    return {
        "tool_calls": [
            {"name": "edit_file", "arguments": {"path": path, "old_text": old, "new_text": new}}
        ]
    }


async def advisor_client(harness: Harness, env: Env) -> tuple[MilkClient, str]:
    for name, text in FILES.items():
        (env.workspace / name).write_text(text)
    client = await harness.start()
    session = await request(client, "milk/session/new", {"workspaceFolder": env.workspace.as_uri()})
    return client, session["sessionId"]


def system_text(body: dict[str, Any]) -> str:
    return "\n".join(b["text"] for b in body["system"] if isinstance(b, dict))


def assert_brief_request(body: dict[str, Any], system: str) -> None:
    """A request without tools, with milk's system prompt and not Claude Code's, fresh."""
    assert body["tools"] == []
    sent = system_text(body)
    assert system.strip() in sent
    assert not any(ending in sent for ending in BUILTIN_PROMPT_ENDINGS)
    users = [m for m in body["messages"] if m["role"] == "user"]
    assert len(users) == 1  # no earlier conversation replayed
    assert len(json.dumps(body["system"])) < 2000


async def test_claude_plans_from_a_brief_milk_and_the_local_model_do_claude_fixes_one_step(
    harness: Harness, claude_env: Env, api: FakeAnthropicAPI, openai
) -> None:
    env = claude_env
    client, session_id = await advisor_client(harness, env)
    client.permission_answers.extend(["allow_once"] * 8)
    api.enqueue({"text": json.dumps(PLAN)}, {"text": json.dumps(FIXED)})
    openai.set_script(
        [
            edit("beta.py", "BETA = 2", "BETA = (20"),  # does not parse
            {"text": "Step 2 done."},
            edit("gamma.py", "GAMMA = 3", "GAMMA = 30"),
            {"text": "Step 3 done."},
        ]
    )
    result = await request(
        client, "milk/chat", {"sessionId": session_id, "text": ASK, "route": "advise"}
    )
    assert result["stopReason"] == "end_turn", result
    assert [(s["status"], s["agent"], s.get("byMilk")) for s in result["plan"]] == [
        ("completed", "local", True),
        ("completed", "claude", None),
        ("completed", "local", None),
    ]
    assert [s["content"] for s in result["plan"]] == [
        "`alpha.py`: ALPHA times ten",
        "`beta.py`: BETA times ten",
        "`gamma.py`: GAMMA times ten",
    ]
    want = {
        "alpha.py": "ALPHA = 10\n",
        "beta.py": "BETA = 20\nBETA_TOO = 2\n",
        "gamma.py": "GAMMA = 30\nGAMMA_TOO = 3\n",
    }
    for name, text in want.items():
        assert (env.workspace / name).read_text() == text, name

    # two Claude requests in all: the plan, then step 2 alone; each without tools, with
    # milk's own system prompt, fresh (no conversation resumed)
    plan_request, step_request = [r["body"] for r in api.main_requests()]
    assert_brief_request(plan_request, PLAN_SYSTEM)
    assert_brief_request(step_request, STEP_SYSTEM)
    brief = user_text({"body": plan_request})
    assert brief.startswith(f"The request:\n{ASK}")
    for located in ("1| ALPHA = 1", "1| BETA = 2", "2| GAMMA_TOO = 3"):
        assert located in brief, located  # the located lines, numbered
    asked = user_text({"body": step_request})
    assert "Step 2 of the plan" in asked and "1| BETA = 2" in asked
    assert "Why it failed:" in asked and "beta.py" in asked
    assert "ALPHA = 1" not in asked and "GAMMA" not in asked.split("\n", 1)[1]  # its file only

    updates = client.turn_updates(result["turnId"])
    escalations = [u for u in updates if u["kind"] == "escalated"]
    assert [(u["by"], u["mode"]) for u in escalations] == [("user", "brief"), ("fallback", "brief")]
    plans = [u["steps"] for u in updates if u["kind"] == "plan"]
    assert plans[0] == [{"content": s["content"], "status": "pending"} for s in result["plan"]]
    assert [u["kind"] for u in updates].count("turn_ended") == 1
    notices = [u["message"] for u in updates if u["kind"] == "notice"]
    assert any(n.startswith("Claude cost $") and "on the plan" in n for n in notices)
    # the plan request's JSON is not shown as text; the plan is, in words
    assert '"old_text"' not in result["text"] and "1. `alpha.py`: ALPHA times ten" in result["text"]

    got = await request(client, "milk/session/get", {"sessionId": session_id})
    [info] = got["turnInfo"]
    assert [s.get("byMilk") for s in info["plan"]] == [True, None, None]
    stats = await request(client, "milk/stats", {"workspaceFolder": env.workspace.as_uri()})
    advisor = stats["advisor"]
    assert (advisor["stepsLocal"], advisor["stepsClaude"], advisor["stepsByMilk"]) == (2, 1, 1)
    assert stats["claudeCostUsd"] == pytest.approx(
        advisor["planCostUsd"] + advisor["stepsCostUsd"], abs=1e-6
    )
    assert "2 done locally (1 of them applied by milk itself), 1 by Claude" in stats["text"]
    await request(client, "milk/turn/undo", {"sessionId": session_id, "turnId": result["turnId"]})
    for name, text in FILES.items():
        assert (env.workspace / name).read_text() == text, name


async def test_claude_may_ask_once_for_more_code(
    harness: Harness, claude_env: Env, api: FakeAnthropicAPI, openai
) -> None:
    env = claude_env
    (env.workspace / "util.py").write_text("def helper():\n    return 'old'\n")
    client, session_id = await advisor_client(harness, env)
    client.permission_answers.extend(["allow_once"] * 2)
    plan = {"steps": [step("util.py", "return 'old'", "return 'new'", "new helper")]}
    api.enqueue({"text": '{"needs": ["helper"]}'}, {"text": json.dumps(plan)})
    result = await request(
        client, "milk/chat", {"sessionId": session_id, "text": "Change ALPHA.", "route": "advise"}
    )
    assert result["stopReason"] == "end_turn", result
    assert (env.workspace / "util.py").read_text() == "def helper():\n    return 'new'\n"
    first, second = [r["body"] for r in api.main_requests()]
    assert "return 'old'" not in user_text({"body": first})
    asked = user_text({"body": second})
    assert "You asked for: helper" in asked and "2|     return 'old'" in asked
    assert openai.requests == []  # milk applied the one step itself


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        ("I would multiply them.", "not a JSON object"),
        (json.dumps({"steps": [step("alpha.py", "ALPHA = 7", "ALPHA = 70", "x")]}), "not in"),
    ],
)
async def test_a_plan_milk_cannot_use_fails_clearly_and_changes_nothing(
    harness: Harness, claude_env: Env, api: FakeAnthropicAPI, openai, reply: str, why: str
) -> None:
    env = claude_env
    client, session_id = await advisor_client(harness, env)
    api.enqueue({"text": reply})
    result = await request(
        client, "milk/chat", {"sessionId": session_id, "text": ASK, "route": "advise"}
    )
    assert result["stopReason"] == "error"
    assert why in result["error"]["message"] and "No file was changed" in result["error"]["message"]
    for name, text in FILES.items():
        assert (env.workspace / name).read_text() == text, name
    kinds = [u["kind"] for u in client.turn_updates(result["turnId"])]
    assert kinds.count("turn_ended") == 1 and "plan" not in kinds
    assert len(api.main_requests()) == 1 and openai.requests == []


async def test_cancel_during_the_plan_request_kills_claude_and_removes_its_files(
    harness: Harness, claude_env: Env, api: FakeAnthropicAPI, openai
) -> None:
    env = claude_env
    client, session_id = await advisor_client(harness, env)
    api.enqueue({"text": json.dumps(PLAN), "stall": 30})
    chat = asyncio.ensure_future(
        request(client, "milk/chat", {"sessionId": session_id, "text": ASK, "route": "advise"})
    )
    for _ in range(200):
        if api.main_requests():
            break
        await asyncio.sleep(0.05)
    assert api.main_requests()
    assert await request(client, "milk/cancel", {"sessionId": session_id}) == {"cancelled": True}
    result = await asyncio.wait_for(chat, 10)
    assert result["stopReason"] == "cancelled"
    await no_leftovers(env)
    for name, text in FILES.items():
        assert (env.workspace / name).read_text() == text, name


async def test_cancel_mid_step_stops_the_step_and_leaves_no_process(
    harness: Harness, claude_env: Env, api: FakeAnthropicAPI, openai
) -> None:
    env = claude_env
    client, session_id = await advisor_client(harness, env)
    client.permission_answers.extend(["allow_once"] * 3)
    api.enqueue({"text": json.dumps(PLAN)})
    openai.set_script([{"text": "Working on step 2 slowly", "stall": 30, "stall_after": 1}])
    chat = asyncio.ensure_future(
        request(client, "milk/chat", {"sessionId": session_id, "text": ASK, "route": "advise"})
    )
    await client.wait_for_update(
        lambda u: u["kind"] == "plan" and u["steps"][1]["status"] == "in_progress", 60
    )
    for _ in range(100):
        if openai.open_streams:
            break
        await asyncio.sleep(0.05)
    assert await request(client, "milk/cancel", {"sessionId": session_id}) == {"cancelled": True}
    result = await asyncio.wait_for(chat, 10)
    assert result["stopReason"] == "cancelled"
    assert [s["status"] for s in result["plan"]] == ["completed", "in_progress", "pending"]
    assert openai.wait_for_disconnects(1, timeout=5)
    assert (env.workspace / "alpha.py").read_text() == "ALPHA = 10\n"  # step 1 stays
    assert (env.workspace / "gamma.py").read_text() == FILES["gamma.py"]
    assert await request(client, "milk/cancel", {"sessionId": session_id}) == {"cancelled": False}
    await no_leftovers(env)


async def test_a_hand_off_to_the_advisor_tells_claude_what_the_local_model_tried(
    harness: Harness, claude_env: Env, api: FakeAnthropicAPI, openai
) -> None:
    env = claude_env
    env.settings["local"]["handOff"] = "advise"
    client, session_id = await advisor_client(harness, env)
    client.permission_answers.extend(["allow_once"] * 2)
    openai.set_script([{"tool_calls": [{"name": "multiply_everything", "arguments": {}}]}])
    api.enqueue({"text": json.dumps({"steps": [PLAN["steps"][0]]})})
    ask = "Multiply ALPHA by ten."
    result = await request(client, "milk/chat", {"sessionId": session_id, "text": ask})
    assert result["stopReason"] == "end_turn", result
    assert result["escalated"]["by"] == "fallback"
    assert [(s["status"], s.get("byMilk")) for s in result["plan"]] == [("completed", True)]
    assert (env.workspace / "alpha.py").read_text() == "ALPHA = 10\n"
    [plan_request] = [r["body"] for r in api.main_requests()]
    assert_brief_request(plan_request, PLAN_SYSTEM)
    brief = user_text({"body": plan_request})
    assert brief.startswith(f"The request:\n{ask}\n\nWhat the local model already tried:\n")
    assert "multiply_everything" in brief  # the call it tried
    assert "1| ALPHA = 1" in brief


async def test_a_folder_where_plans_cost_more_hands_off_to_claude_code_instead(
    harness: Harness, claude_env: Env, api: FakeAnthropicAPI, openai
) -> None:
    """Issue 39, point 3: three advisor turns that cost Claude more than its turns alone
    here turn the next `handOff: "advise"` hand-off to Claude Code proper, saying why; the
    estimate is shown before each plan and the real figure after."""
    env = claude_env
    env.settings["local"]["handOff"] = "advise"
    client, session_id = await advisor_client(harness, env)

    async def chat(text: str, **extra: Any) -> dict[str, Any]:
        params = {"sessionId": session_id, "text": text, **extra}
        answer: dict[str, Any] = await request(client, "milk/chat", params)
        assert answer["stopReason"] == "end_turn", answer
        return answer

    api.enqueue({"text": "Hi.", "usage": {"input_tokens": 50}})
    await chat("say hi", route="claude")
    for power in range(3):
        old, new = f"ALPHA = {10**power}", f"ALPHA = {10 ** (power + 1)}"
        client.permission_answers.append("allow_once")
        api.enqueue(
            {
                "text": json.dumps({"steps": [step("alpha.py", old, new, "ALPHA times ten")]}),
                "usage": {"input_tokens": 400_000},
            }
        )
        advised = await chat("Multiply ALPHA by ten.", route="advise")
        notices = [
            u["message"] for u in client.turn_updates(advised["turnId"]) if u["kind"] == "notice"
        ]
        assert any(n.startswith("Claude cost $") for n in notices), notices  # the real figure
        if power:
            assert any(n.startswith("Before Claude's plan: advisor turns") for n in notices)
    assert (env.workspace / "alpha.py").read_text() == "ALPHA = 1000\n"
    stats = await request(client, "milk/stats", {"workspaceFolder": env.workspace.as_uri()})
    assert stats["advisor"]["saves"] is False, stats["advisor"]

    openai.set_script([{"tool_calls": [{"name": "multiply_everything", "arguments": {}}]}])
    api.enqueue({"text": "Claude Code multiplied it."})
    result = await chat("Multiply ALPHA by ten once more.")
    assert result["escalated"]["by"] == "fallback"
    assert result["escalated"].get("mode") != "brief", result["escalated"]
    assert "plan" not in result or not result["plan"]
    notices = [u["message"] for u in client.turn_updates(result["turnId"]) if u["kind"] == "notice"]
    assert any("rather than as a plan" in n for n in notices), notices
    assert api.main_requests()[-1]["body"]["tools"], "Claude Code proper, with its tools"
    await no_leftovers(env)


GO_MOD = "module example.com/calc\n\ngo 1.19\n"
GO_A = "package calc\n\nfunc addOne(n int) int {\n\treturn n + 1\n}\n"
GO_B = "package calc\n\nfunc AddTwo(n int) int {\n\treturn addOne(addOne(n))\n}\n"
RENAME_DEFINITION = step("a.go", "func addOne(", "func incr(", "rename the definition")
RENAME_USES = step("b.go", "addOne(addOne(n))", "incr(incr(n))", "rename its uses")


async def go_client(harness: Harness, env: Env) -> tuple[MilkClient, str]:
    for name, text in {"go.mod": GO_MOD, "a.go": GO_A, "b.go": GO_B}.items():
        (env.workspace / name).write_text(text)
    client = await harness.start()
    client.permission_answers.extend(["allow_session"] * 8)
    session = await request(client, "milk/session/new", {"workspaceFolder": env.workspace.as_uri()})
    return client, session["sessionId"]


@pytest.mark.skipif(shutil.which("go") is None, reason="needs the Go toolchain (golang-go)")
async def test_a_go_rename_planned_a_file_a_step_is_checked_after_its_last_step(
    harness: Harness, claude_env: Env, api: FakeAnthropicAPI
) -> None:
    """Each step alone breaks the build (the definition renamed, its uses not yet): the
    project's check runs before the first step and after the last, not between."""
    client, session_id = await go_client(harness, claude_env)
    api.enqueue({"text": json.dumps({"steps": [RENAME_DEFINITION, RENAME_USES]})})
    result = await request(
        client,
        "milk/chat",
        {"sessionId": session_id, "text": "Rename addOne to incr.", "route": "advise"},
    )
    assert result["stopReason"] == "end_turn", result
    assert [(s["status"], s.get("byMilk")) for s in result["plan"]] == [("completed", True)] * 2
    assert "incr(incr(n))" in (claude_env.workspace / "b.go").read_text()
    notices = [u["message"] for u in client.turn_updates(result["turnId"]) if u["kind"] == "notice"]
    passed = "milk checked the plan's steps: go vet ./..., then go test -short ./... passed"
    assert passed in notices, notices
    assert len(api.main_requests()) == 1  # the plan only


@pytest.mark.skipif(shutil.which("go") is None, reason="needs the Go toolchain (golang-go)")
async def test_a_plan_that_fails_the_project_check_gets_one_fix_from_claude(
    harness: Harness, claude_env: Env, api: FakeAnthropicAPI
) -> None:
    """The plan forgot the uses: after its last step `go vet` fails; Claude gets ONE fresh
    request with the check's output and the lines it names, and its fix makes it pass."""
    client, session_id = await go_client(harness, claude_env)
    api.enqueue(
        {"text": json.dumps({"steps": [RENAME_DEFINITION]})},
        {"text": json.dumps({"steps": [RENAME_USES]})},
    )
    result = await request(
        client,
        "milk/chat",
        {"sessionId": session_id, "text": "Rename addOne to incr.", "route": "advise"},
    )
    assert result["stopReason"] == "end_turn", result
    _, fix_request = [r["body"] for r in api.main_requests()]
    assert_brief_request(fix_request, STEP_SYSTEM)
    fix = user_text({"body": fix_request})
    assert "passed before the edits and fails after them" in fix, fix
    assert "b.go" in fix and "addOne(addOne(n))" in fix  # the lines the check names
    assert "incr(incr(n))" in (claude_env.workspace / "b.go").read_text()
    escalated = [u for u in client.turn_updates(result["turnId"]) if u["kind"] == "escalated"]
    assert escalated[-1]["reason"].startswith("the plan's steps fail the project's check")


async def test_a_replace_all_step_is_applied_by_milk_everywhere_in_its_file(
    harness: Harness, claude_env: Env, api: FakeAnthropicAPI, openai
) -> None:
    """A rename step Claude marks `replace_all`: milk replaces every occurrence itself, as
    one edit asked once; the local model is not asked."""
    client, session_id = await advisor_client(harness, claude_env)
    client.permission_answers.append("allow_once")
    every = {**step("beta.py", "= 2\n", "= 20\n", "BETA times ten"), "replace_all": True}
    api.enqueue({"text": json.dumps({"steps": [every]})})
    result = await request(
        client,
        "milk/chat",
        {"sessionId": session_id, "text": "Multiply BETA by ten.", "route": "advise"},
    )
    assert result["stopReason"] == "end_turn", result
    assert [(s["status"], s.get("byMilk")) for s in result["plan"]] == [("completed", True)]
    assert (claude_env.workspace / "beta.py").read_text() == "BETA = 20\nBETA_TOO = 20\n"
    assert openai.requests == []
    (plan_request,) = [r["body"] for r in api.main_requests()]
    assert '"replace_all": true' in system_text(plan_request)  # offered by milk's prompt
