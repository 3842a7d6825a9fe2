"""Real tasks on a real project with a real small model: how often a turn ends right.

Opt-in and slow (tens of minutes on 2 cores); not a test and not in CI.

The project (`--project`) is python-slugify 8.0.4 (`bench/real_tasks_slugify.py`, 15 tasks),
humanize 4.12.3 (`bench/real_tasks_humanize.py`, 13 tasks), the JavaScript package cross-env
7.0.3 from npm (`bench/real_tasks_crossenv.py`, 15 tasks, questions in five human languages,
edits checked with `node --check`), the Go module google/uuid 1.3.0 as Debian ships it
(`bench/real_tasks_uuid.py`, 12 tasks, questions in five human languages, edits checked by the
diff and by `go build`, `go vet` and `go test`; needs Debian's `golang-go`, installed when
missing and run as root), the JavaScript package dotenv 16.4.5 from npm
(`bench/real_tasks_dotenv.py`, 12 tasks written before any run and never tuned to, questions
in five human languages, edits in three), the JavaScript package ini 5.0.0 from npm
(`bench/real_tasks_ini.py`, 12 tasks on its one file `lib/ini.js`, held out like dotenv:
questions in six human languages, edits in four, each edit also run in node) or the
JavaScript package semver 7.8.6 from npm (`bench/real_tasks_semver.py`, 12 tasks on its 50
small CommonJS files, held out like ini: questions in six human languages, edits in five, each
on one file and also run in node), pinned by sha256
and unpacked afresh before every task (`bench/real_tasks_suite.py` fetches and checks). Each
task is a new session of the REAL milk-lsp (`python -m milk_lsp` over stdio, driven like an editor;
every permission question answered `allow_once`), one `milk/chat` with route `auto` and
`local.handOff: "auto"`, so a local failure may be handed to Claude without asking. Claude
is the real Claude Code CLI (bundled in the claude-agent-sdk wheel) on the Messages-API
stand-in `tests.fakes.anthropic_api`, which answers a canned text: a task handed to Claude
counts by the hand-off, not by Claude's answer.

The model is any OpenAI-compatible endpoint (`--base-url`, `--model`), or the pinned
Qwen2.5-Coder-1.5B (`--model-size 1.5b`, the default) or 0.5B started on xllamacpp with the
model's own chat template (`bench/_llama.py`). A recording proxy between milk-lsp and the
model server reads llama.cpp's `timings` of every call: `prompt_n`, the prompt tokens it
evaluated, and `cache_n`, those it reused from its cache.

Per task it prints the verdict (right locally / handed to Claude / wrong / reported failure /
timeout), whether a wrong result was silent (the turn ended `end_turn` without being right),
the tools called, seconds and prompt tokens evaluated and cached, the tokens generated, the
replies milk ended early and why, and for a task handed to Claude the seconds until Claude
started; then the totals, with the share of the time generating spent in replies that ran to
the server's cap (`--n-predict`) and in replies milk ended. Before the
tasks it measures the prefix cache: session A turn 1 (cold), A turn 2, then a new session B
turn 1 in the same workspace and a session C turn 1 in a second workspace folder; target B1
and C1 <= 15 % of A1's evaluated prompt tokens. After the tasks it prints `milk/stats` of the
tasks' workspace: milk's own routing numbers for the run.

    .venv/bin/python bench/real_tasks.py
        [--project slugify|humanize|crossenv|uuid|dotenv|ini|semver]
        [--model-size 1.5b|0.5b] [--tasks a,b] [--strategies guided,agent]
        [--base-url URL --model M] [--server-tree DIR] [--json out.json]

`--strategies guided,agent` runs every task once per `local.strategy` (issue 38: `auto`,
`guided`, `agent`), side by side in one run against the same model server: one server per
strategy (its own workspace, storage and Claude stand-in home, `local.strategy` set in the
initializationOptions beside `local.handOff`), each task in a fresh session on a freshly laid
out workspace, the strategies taking turns task by task so that neither gets the quieter half
of the run. Per strategy it prints the totals above, then one table: right locally, silent
failures, needless hand-offs, median seconds per task, prompt tokens evaluated, and the ratio
of the guided median seconds to the agent's. Without it, `local.strategy` is not sent: the
server's default. The prefix-cache measurement runs on the first strategy's server.

With `--strategies`, the pinned model's server gets one slot per strategy (`--slots`): llama.cpp
gives a request the slot whose cached prompt it shares most, so each strategy keeps its own
prompt cache, as it would for a user who runs one strategy, rather than the two evicting each
other's task by task.

`--advise` runs the project's multi-step tasks on the advisor route instead
(`bench/real_tasks_advisor.py`): the share of plan steps done locally, silent failures, and
Claude's cost against the same requests on Claude alone.

`--server-tree DIR` runs the server from another source tree (e.g. a git worktree of an
older commit), to compare before and after a change with the same benchmark.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._harness import REPO, FakeProcess, MilkLsp, Scratch
from bench._llama import MODELS, LlamaProcess, ModelCall, TimingsProxy
from bench.escalation import claude_env
from bench.real_tasks_advisor import advisor_totals, run_advisor_task
from bench.real_tasks_crossenv import CROSSENV
from bench.real_tasks_dotenv import DOTENV
from bench.real_tasks_humanize import HUMANIZE
from bench.real_tasks_ini import INI
from bench.real_tasks_semver import SEMVER
from bench.real_tasks_slugify import SLUGIFY
from bench.real_tasks_suite import Project, Task, fetch_project, lay_out
from bench.real_tasks_uuid import UUID
from milk_lsp.agents.claude.cli import bundled_cli_path

CLAUDE_REPLY = "Claude Code (the stand-in) took this task over."
CACHE_TURNS = (
    ("A1", "A", "Hello! In one sentence, what can you help me with in this project?"),
    ("A2", "A", "Thanks. In one word: which programming language is this project written in?"),
    ("B1", "B", "Hi! In one sentence, what kinds of tasks can you do here?"),
    ("C1", "C", "Hello! In one sentence, what can you help me with in this project?"),
)
"""C is a session in a second workspace folder (the same project laid out elsewhere): its
first turn should find the prefix cached too (system prompt and tool specs are the same bytes
for every workspace)."""
RIGHT = ("right locally", "handed to Claude")
PROJECTS: dict[str, Project] = {
    "slugify": SLUGIFY,
    "humanize": HUMANIZE,
    "crossenv": CROSSENV,
    "uuid": UUID,
    "dotenv": DOTENV,
    "ini": INI,
    "semver": SEMVER,
}
STRATEGIES = ("auto", "guided", "agent")
"""The values of `local.strategy` (milk_lsp/config.py `LocalConfig.strategy`)."""
DEFAULT = "default"
"""The label of a run that sends no `local.strategy`: the server's default."""


@dataclass
class Lane:
    """One strategy's server, with its own scratch root, workspace and rows."""

    strategy: str  # a STRATEGIES value, or DEFAULT
    scratch: Scratch
    milk: MilkLsp
    turns: Turns | None = None
    rows: list[dict[str, Any]] = field(default_factory=list)


class Turns:
    """Sends `milk/chat` turns with a deadline and keeps every `milk/update` by session."""

    def __init__(self, milk: MilkLsp, workspace: Path, timeout: float, n_predict: int) -> None:
        self.milk, self.workspace, self.timeout = milk, workspace, timeout
        self.n_predict = n_predict
        """The server's reply cap: a reply of that many tokens ran to it."""
        self.updates: dict[str, list[dict[str, Any]]] = {}
        self.arrived: dict[int, float] = {}
        """`time.perf_counter()` when each update (by `id`) arrived."""
        milk.on_update = self._keep

    def _keep(self, update: dict[str, Any]) -> None:
        self.arrived[id(update)] = time.perf_counter()
        self.updates.setdefault(str(update.get("sessionId")), []).append(update)

    def seconds_to_claude(self, session_id: str, turn_id: str | None) -> float | None:
        """From the turn's start to its `escalated` update (None: Claude never started)."""
        mine = [u for u in self.updates.get(session_id, []) if u.get("turnId") == turn_id]
        started = next((u for u in mine if u.get("kind") == "turn_started"), None)
        handed = next((u for u in mine if u.get("kind") == "escalated"), None)
        if started is None or handed is None:
            return None
        return round(self.arrived[id(handed)] - self.arrived[id(started)], 1)

    async def new_session(self, workspace: Path | None = None) -> str:
        folder = workspace or self.workspace
        info = await self.milk.request("milk/session/new", {"workspaceFolder": folder.as_uri()})
        return str(info["sessionId"])

    async def chat(
        self, session_id: str, text: str, route: str = "auto"
    ) -> tuple[dict[str, Any], bool, float]:
        """(TurnResult, timed out?, seconds); a timed-out turn is cancelled with `milk/cancel`."""
        started = time.perf_counter()
        params = {"sessionId": session_id, "text": text, "route": route}
        pending = asyncio.ensure_future(self.milk.request("milk/chat", params))
        done, _ = await asyncio.wait({pending}, timeout=self.timeout)
        if not done:
            await self.milk.request("milk/cancel", {"sessionId": session_id})
            await asyncio.wait({pending}, timeout=60)
        seconds, timed_out = time.perf_counter() - started, not done
        if not pending.done():
            pending.cancel()
            return {"stopReason": "cancelled", "text": ""}, timed_out, seconds
        failed = pending.exception()
        if failed is not None:  # the request itself was refused: a reported failure
            error = {"reason": "request", "message": repr(failed)}
            return {"stopReason": "error", "error": error}, timed_out, seconds
        return dict(pending.result()), timed_out, seconds

    def local_text(self, session_id: str, turn_id: str | None) -> str:
        """What the local model showed the user in a turn (before any hand-off)."""
        return "".join(
            str(u.get("delta", ""))
            for u in self.updates.get(session_id, [])
            if u.get("kind") == "text"
            and u.get("agent") == "local"
            and (turn_id is None or u.get("turnId") == turn_id)
        )

    def trace(self, session_id: str, turn_id: str | None) -> list[dict[str, Any]]:
        """Each call of a turn with its input, last status and result (cut), for the JSON:
        what the model actually sent is what explains a verdict."""
        calls: dict[str, dict[str, Any]] = {}
        for update in self.updates.get(session_id, []):
            if turn_id is not None and update.get("turnId") != turn_id:
                continue
            call_id = str(update.get("toolCallId"))
            if update.get("kind") == "tool_call":
                entry = calls.setdefault(call_id, {"name": update.get("name")})
                entry |= {"input": update.get("input"), "status": update.get("status")}
            elif update.get("kind") == "tool_result" and call_id in calls:
                calls[call_id]["output"] = str(update.get("output", ""))[:600]
        return list(calls.values())

    def tools(self, session_id: str, turn_id: str | None) -> list[str]:
        """The tools called in a turn, in order; failed or denied calls marked."""
        calls: dict[str, str] = {}
        marks: dict[str, str] = {}
        for update in self.updates.get(session_id, []):
            if turn_id is not None and update.get("turnId") != turn_id:
                continue
            call_id = str(update.get("toolCallId"))
            if update.get("kind") == "tool_call":
                by_milk = call_id.startswith(("milk-read-", "milk-look-"))  # milk's own reads
                calls.setdefault(call_id, ("milk:" if by_milk else "") + str(update.get("name")))
                if update.get("status") in ("failed", "denied"):
                    marks[call_id] = f" ({update.get('status')})"
            elif update.get("kind") == "tool_result" and update.get("isError"):
                marks.setdefault(call_id, " (error)")
        return [name + marks.get(call_id, "") for call_id, name in calls.items()]


def needless_hand_off(task: Task, turns: Turns, session_id: str, result: dict[str, Any]) -> bool:
    """A question handed to Claude although the local model's answer shown before the
    hand-off was already right: Claude money spent for nothing."""
    if task.kind != "question" or not result.get("escalated"):
        return False
    local = turns.local_text(session_id, result.get("turnId"))
    return bool(local.strip()) and task.check(turns.workspace, local)[0]


def sums(calls: list[ModelCall]) -> tuple[int, int]:
    return sum(c.prompt_n for c in calls), sum(c.cache_n for c in calls)


def judge(task: Task, workspace: Path, result: dict[str, Any], timed_out: bool) -> dict[str, Any]:
    right, seen = task.check(workspace, str(result.get("text", "")))
    stop = result.get("stopReason")
    if timed_out:
        verdict = "timeout"
    elif result.get("escalated"):
        verdict = "handed to Claude"
    elif right and stop == "end_turn":
        verdict = "right locally"
    elif stop == "end_turn":
        verdict = "wrong"
    else:
        verdict = "reported failure"
    return {
        "verdict": verdict,
        "silent": verdict == "wrong",
        "check": seen,
        "stopReason": stop,
        "escalated": result.get("escalated"),
        "error": result.get("error"),
    }


async def run_task(
    task: Task, turns: Turns, proxy: TimingsProxy, sdist: Path, strategy: str | None = None
) -> dict[str, Any]:
    """One task in a new session on a freshly laid out workspace; `strategy` labels the row
    and its printed line (the server's `local.strategy`, set when it started)."""
    lay_out(sdist, turns.workspace)
    session_id = await turns.new_session()
    proxy.label = f"{strategy}/{task.name}" if strategy else task.name
    start = len(proxy.calls)
    result, timed_out, seconds = await turns.chat(session_id, task.prompt)
    calls = proxy.since(start)
    prompt_n, cache_n = sums(calls)
    updates = turns.updates.get(session_id, [])
    ended = [
        str(u.get("message", "")).split(": ", 1)[-1]
        for u in updates
        if u.get("kind") == "notice"
        and "ended the local model's reply early" in str(u.get("message"))
    ]
    row = {
        "task": task.name,
        **({"strategy": strategy} if strategy else {}),
        "kind": task.kind,
        **judge(task, turns.workspace, result, timed_out),
        "needless": needless_hand_off(task, turns, session_id, result),
        "tools": turns.tools(session_id, result.get("turnId")),
        "trace": turns.trace(session_id, result.get("turnId")),
        "seconds": round(seconds, 1),
        "modelCalls": len(calls),
        "callsUntimed": sum(not c.timings for c in calls),
        "promptEvaluated": prompt_n,
        "promptCached": cache_n,
        "generated": sum(c.generated for c in calls),
        "generatingSeconds": round(sum(c.generating_seconds for c in calls), 1),
        "promptSeconds": round(sum(c.prompt_seconds for c in calls), 1),
        "callSeconds": [round(c.seconds, 1) for c in calls],
        "repliesAtCap": sum(c.generated >= turns.n_predict for c in calls),
        "secondsAtCap": round(
            sum(c.generating_seconds for c in calls if c.generated >= turns.n_predict), 1
        ),
        "repliesEnded": ended,
        "notices": [str(u.get("message", "")) for u in updates if u.get("kind") == "notice"],
        "secondsEnded": round(sum(c.generating_seconds for c in calls if c.ended_by_client), 1),
        "secondsToClaude": turns.seconds_to_claude(session_id, result.get("turnId")),
    }
    # a task the local model did not get right keeps its whole reply (the JSON is where
    # its failure is read)
    reply = str(result.get("text", ""))
    row["reply"] = reply if row["verdict"] != "right locally" else reply[:400]
    lane = f"{strategy:<8} " if strategy else ""
    print(
        f"{lane}{task.name:<20} {task.kind:<8} {row['verdict']:<17} "
        f"{'SILENT' if row['silent'] else 'NEEDLESS' if row['needless'] else '':<8} "
        f"{row['seconds']:>6.1f} {len(calls):>5} {prompt_n:>7} {cache_n:>7} "
        f"{row['generated']:>6} {len(ended):>5}  {', '.join(row['tools']) or '-'}",
        flush=True,
    )
    for why in ended:
        print(f"{'':<20} ^ milk ended a reply: {why}", flush=True)
    if row["secondsToClaude"] is not None:
        print(f"{'':<20} ^ Claude started after {row['secondsToClaude']:.1f} s", flush=True)
    if row["verdict"] not in RIGHT:
        why = row["error"] or row["check"]
        said = " ".join(row["reply"].split())[:160]
        print(f"{'':<20} ^ {row['stopReason']}: {why}; reply: {said!r}", flush=True)
    return row


async def prefix_cache(turns: Turns, proxy: TimingsProxy, sdist: Path) -> dict[str, Any]:
    lay_out(sdist, turns.workspace)
    second = turns.workspace.parent / "second-workspace"
    second.mkdir(exist_ok=True)
    lay_out(sdist, second)
    print(f"prefix cache: {await proxy.erase_slots()}")
    sessions = {"A": await turns.new_session()}
    rows: dict[str, dict[str, Any]] = {}
    for label, session, text in CACHE_TURNS:
        if session not in sessions:
            sessions[session] = await turns.new_session(second if session == "C" else None)
        proxy.label, start = f"prefix-cache {label}", len(proxy.calls)
        result, timed_out, seconds = await turns.chat(sessions[session], text)
        calls = proxy.since(start)
        rows[label] = {
            "stopReason": "timeout" if timed_out else result.get("stopReason"),
            "seconds": round(seconds, 1),
            "calls": [{"prompt_n": c.prompt_n, "cache_n": c.cache_n} for c in calls],
            "tools": turns.tools(sessions[session], result.get("turnId")),
        }
        shown = "; ".join(f"evaluated {c.prompt_n}, cached {c.cache_n}" for c in calls)
        print(
            f"  {label}: {rows[label]['stopReason']}, {seconds:.1f} s, {len(calls)} model "
            f"call(s): {shown or 'no timings'}; tools: {', '.join(rows[label]['tools']) or '-'}"
        )
    first = {k: (v["calls"][0] if v["calls"] else None) for k, v in rows.items()}
    out: dict[str, Any] = {"turns": rows}
    if first["A1"] and first["B1"] and first["A1"]["prompt_n"]:
        ratio = first["B1"]["prompt_n"] / first["A1"]["prompt_n"]
        a1 = sum(c["prompt_n"] for c in rows["A1"]["calls"])
        b1 = sum(c["prompt_n"] for c in rows["B1"]["calls"])
        out |= {"ratioFirstCall": ratio, "ratioTurn": b1 / a1 if a1 else None}
        print(
            f"prefix cache ratio B1/A1 (prompt tokens evaluated by the first model call): "
            f"{first['B1']['prompt_n']}/{first['A1']['prompt_n']} = {100 * ratio:.1f} % "
            f"(target <= 15 %); whole turns: {b1}/{a1} = {100 * b1 / a1 if a1 else 0:.1f} %"
        )
    if first["A1"] and first["C1"] and first["A1"]["prompt_n"]:
        ratio = first["C1"]["prompt_n"] / first["A1"]["prompt_n"]
        out["ratioSecondWorkspace"] = ratio
        print(
            f"second workspace C1/A1 (prompt tokens evaluated by the first model call): "
            f"{first['C1']['prompt_n']}/{first['A1']['prompt_n']} = {100 * ratio:.1f} % "
            "(target <= 15 %)"
        )
    if first["A2"] and rows["A1"]["calls"]:
        last = rows["A1"]["calls"][-1]
        print(
            f"A2's first call evaluated {first['A2']['prompt_n']} tokens and reused "
            f"{first['A2']['cache_n']} (A1's last prompt was {last['prompt_n'] + last['cache_n']}"
            " tokens): later turns should evaluate only their new messages"
        )
    return out


async def routing_numbers(milk: MilkLsp, workspace: Path) -> dict[str, Any]:
    """`milk/stats` of the tasks' workspace after the run: what milk itself counted (the
    prefix-cache turns of that folder included), to set beside the verdicts above."""
    try:
        stats = dict(await milk.request("milk/stats", {"workspaceFolder": workspace.as_uri()}))
    except Exception as exc:  # an older server tree (--server-tree) has no milk/stats
        print(f"\nmilk/stats: not answered ({exc!r})")
        return {}
    print(f"\nmilk/stats of the tasks' workspace:\n{stats.get('text', '')}")
    return stats


def server_source(milk_env: dict[str, str]) -> str:
    code = "import milk_lsp; print(milk_lsp.__file__, milk_lsp.__version__)"
    done = subprocess.run(
        [sys.executable, "-c", code], env=milk_env, cwd=REPO, capture_output=True, text=True
    )
    return (done.stdout or done.stderr).strip()


def tree_commit(tree: Path) -> str:
    done = subprocess.run(
        ["git", "-C", str(tree), "describe", "--always", "--dirty"], capture_output=True, text=True
    )
    return done.stdout.strip() or "not a git tree"


def totals(rows: list[dict[str, Any]], seconds: float) -> dict[str, Any]:
    count = {
        v: sum(r["verdict"] == v for r in rows)
        for v in (*RIGHT, "wrong", "reported failure", "timeout")
    }
    right = count["right locally"] + count["handed to Claude"]
    edits = [r for r in rows if r["kind"] == "edit"]
    out = {
        "tasks": len(rows),
        "endedRight": right,
        "endedRightPercent": round(100 * right / len(rows), 1) if rows else 0.0,
        **{k.replace(" ", "_"): v for k, v in count.items()},
        "silentFailures": sum(r["silent"] for r in rows),
        "silentFailuresOnEdits": sum(r["silent"] for r in edits),
        "needlessHandOffs": sum(r["needless"] for r in rows),
        "questions": sum(r["kind"] == "question" for r in rows),
        "questionsRightLocally": sum(
            r["kind"] == "question" and r["verdict"] == "right locally" for r in rows
        ),
        "editTasks": len(edits),
        "seconds": round(seconds, 1),
        "promptEvaluated": sum(r["promptEvaluated"] for r in rows),
        "promptCached": sum(r["promptCached"] for r in rows),
        "generated": sum(r["generated"] for r in rows),
        "generatingSeconds": round(sum(r["generatingSeconds"] for r in rows), 1),
        "repliesAtCap": sum(r["repliesAtCap"] for r in rows),
        "secondsAtCap": round(sum(r["secondsAtCap"] for r in rows), 1),
        "repliesEnded": sum(len(r["repliesEnded"]) for r in rows),
        "secondsEnded": round(sum(r["secondsEnded"] for r in rows), 1),
    }
    to_claude = sorted(
        r["secondsToClaude"]
        for r in rows
        if r["kind"] == "claude" and r["secondsToClaude"] is not None
    )
    out["medianSecondsToClaude"] = to_claude[len(to_claude) // 2] if to_claude else None
    print(
        f"\nended right: {right}/{len(rows)} = {out['endedRightPercent']} % (target >= 75 %): "
        f"{count['right locally']} right locally, {count['handed to Claude']} handed to Claude; "
        f"{count['wrong']} wrong, {count['reported failure']} reported failures, "
        f"{count['timeout']} timeouts"
    )
    print(
        f"silent failures on edit tasks: {out['silentFailuresOnEdits']}/{len(edits)} (target 0); "
        f"on all tasks: {out['silentFailures']}"
    )
    print(
        f"needless hand-offs (a question handed to Claude whose local answer was already "
        f"right): {out['needlessHandOffs']} (target 0); questions right locally: "
        f"{out['questionsRightLocally']}/{out['questions']}; all tasks right locally: "
        f"{count['right locally']}/{len(rows)}"
    )
    print(
        f"total {seconds:.0f} s for the tasks; prompt tokens evaluated {out['promptEvaluated']}, "
        f"reused from the cache {out['promptCached']}"
    )
    spent = out["generatingSeconds"] or 1.0
    at_cap, ended = 100 * out["secondsAtCap"] / spent, 100 * out["secondsEnded"] / spent
    print(
        f"generated {out['generated']} tokens in {out['generatingSeconds']:.0f} s; "
        f"{out['repliesAtCap']} replies ran to the server's cap ({at_cap:.0f} % of the time "
        f"generating; target 0), {out['repliesEnded']} ended early by milk ({ended:.0f} %); "
        f"median seconds until Claude started on Claude-sized tasks: "
        f"{out['medianSecondsToClaude']} (target <= 60)"
    )
    return out


def strategy_support(milk_env: dict[str, str]) -> bool:
    """Whether the server's tree has the `local.strategy` setting (an older tree ignores the
    key, reporting it as unknown: every lane then runs the server's one way)."""
    code = "from milk_lsp.config import LocalConfig; print('strategy' in LocalConfig.model_fields)"
    done = subprocess.run(
        [sys.executable, "-c", code], env=milk_env, cwd=REPO, capture_output=True, text=True
    )
    return done.stdout.strip() == "True"


def median(values: list[float]) -> float | None:
    return round(statistics.median(values), 1) if values else None


def side_by_side(lanes: list[Lane]) -> dict[str, Any]:
    """The strategies' numbers in columns, and guided's median seconds over agent's."""
    summary: dict[str, dict[str, Any]] = {}
    for lane in lanes:
        rows = lane.rows
        summary[lane.strategy] = {
            "tasks": len(rows),
            "rightLocally": sum(r["verdict"] == "right locally" for r in rows),
            "handedToClaude": sum(r["verdict"] == "handed to Claude" for r in rows),
            "silent": sum(r["silent"] for r in rows),
            "needlessHandOffs": sum(r["needless"] for r in rows),
            "reportedFailures": sum(r["verdict"] == "reported failure" for r in rows),
            "timeouts": sum(r["verdict"] == "timeout" for r in rows),
            "medianSeconds": median([r["seconds"] for r in rows]),
            "promptEvaluated": sum(r["promptEvaluated"] for r in rows),
            "promptCached": sum(r["promptCached"] for r in rows),
            "callsUntimed": sum(r.get("callsUntimed", 0) for r in rows),
            "generated": sum(r["generated"] for r in rows),
        }
    lines = (
        ("tasks", "tasks"),
        ("right locally", "rightLocally"),
        ("handed to Claude", "handedToClaude"),
        ("silent (wrong, end_turn)", "silent"),
        ("needless hand-offs", "needlessHandOffs"),
        ("reported failures", "reportedFailures"),
        ("timeouts", "timeouts"),
        ("median s per task", "medianSeconds"),
        ("prompt tokens evaluated", "promptEvaluated"),
        ("prompt tokens cached", "promptCached"),
        ("calls cut off, untimed", "callsUntimed"),
        ("tokens generated", "generated"),
    )
    print(f"\n{'side by side':<26}" + "".join(f"{lane.strategy:>10}" for lane in lanes))
    for label, key in lines:
        cells = "".join(
            f"{'-' if summary[lane.strategy][key] is None else summary[lane.strategy][key]:>10}"
            for lane in lanes
        )
        print(f"{label:<26}{cells}")
    print(
        "(a model call cut off before its end, a turn's timeout or milk ending the reply, "
        "brings no llama.cpp timings: its prompt tokens are not in the count above)"
    )
    out: dict[str, Any] = {"byStrategy": summary}
    guided, agent = summary.get("guided"), summary.get("agent")
    if guided and agent:
        g, a = guided["medianSeconds"], agent["medianSeconds"]
        ratio = round(g / a, 3) if g is not None and a else None
        out["guidedOverAgentMedianSeconds"] = ratio
        print(f"guided median s / agent median s: {g} / {a} = {ratio}")
    return out


async def run(args: argparse.Namespace) -> dict[str, Any]:
    project = PROJECTS[args.project]
    tasks = list(project.tasks)
    if args.tasks:
        wanted = args.tasks.split(",")
        known = [t.name for t in (project.advisor_tasks if args.advise else tasks)]
        unknown = set(wanted) - set(known)
        if unknown:
            raise SystemExit(f"unknown tasks {sorted(unknown)}; known: {known}")
        tasks = [t for t in tasks if t.name in wanted]
    strategies: list[str] = args.strategies or [DEFAULT]
    if args.advise and len(strategies) > 1:
        raise SystemExit("--advise runs on one server: give at most one --strategies value")
    cli = bundled_cli_path()
    if cli is None:
        raise SystemExit("the claude-agent-sdk wheel's bundled claude CLI is missing")
    if project.prepare is not None:
        project.prepare()
    sdist = fetch_project(project)
    scratch = Scratch("milk-bench-real-")
    llama: LlamaProcess | None = None
    api: FakeProcess | None = None
    proxy: TimingsProxy | None = None
    lanes: list[Lane] = []
    report: dict[str, Any] = {"args": vars(args)}
    try:
        if args.base_url:
            upstream, model, described = args.base_url.rstrip("/"), args.model, args.base_url
        else:
            llama = LlamaProcess(
                args.model_size,
                scratch.root / "logs",
                threads=args.threads,
                ctx=args.ctx,
                n_predict=args.n_predict,
                slots=args.slots or max(1, len(args.strategies or ())),
            )
            upstream, model = f"{llama.root_url}/v1", llama.model
            described = f"{llama.description}; loaded in {llama.load_seconds:.1f} s"
        parts = urlsplit(upstream)
        proxy = TimingsProxy(f"{parts.scheme}://{parts.netloc}")
        local: dict[str, Any] = {
            "baseUrl": await proxy.start() + parts.path,
            "requestTimeoutSeconds": args.turn_timeout,
            "handOff": "auto",
        }
        if model:
            local["model"] = model
        api = FakeProcess("tests.fakes.anthropic_api")
        api.script([{"text": CLAUDE_REPLY, "repeat": 100_000}])
        for strategy in strategies:
            # the first lane keeps the run's scratch (the model server's log is there too)
            root = scratch if not lanes else Scratch(f"milk-bench-real-{strategy}-")
            settings = {
                "local": local | ({} if strategy == DEFAULT else {"strategy": strategy}),
                "route": "auto",
                "storageDir": str(root.storage),
                "claude": {"path": cli},
            }
            env = claude_env(root, api)
            if args.server_tree:
                # no cwd on sys.path, the tree first: `-m milk_lsp` imports the tree's package
                env |= {"PYTHONSAFEPATH": "1", "PYTHONPATH": str(args.server_tree.resolve())}
            lanes.append(Lane(strategy, root, MilkLsp(root, settings, env)))
        source = server_source(lanes[0].milk.env)
        tree = args.server_tree or REPO
        print(f"model: {described}")
        print(f"milk-lsp server: {source} (tree {tree}, {tree_commit(tree)})")
        print(
            f"project: {project.name} {project.version} ({project.registry} {project.sdist}, "
            f"sha256 {project.sha256[:12]}…)"
        )
        supported = strategy_support(lanes[0].milk.env)
        if args.strategies:
            print(
                f"strategies: {', '.join(strategies)} (local.strategy); the server's tree "
                + ("has that setting" if supported else "has NO such setting: it ignores it")
            )
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores\n")
        report |= {
            "project": f"{project.name} {project.version}",
            "model": described,
            "server": source,
            "serverTree": tree_commit(tree),
            "strategySetting": supported,
        }
        for lane in lanes:
            await lane.milk.start()
            lane.turns = Turns(lane.milk, lane.scratch.workspace, args.turn_timeout, args.n_predict)
        first = lanes[0]
        assert first.turns is not None
        if not args.no_prefix_cache:
            if len(lanes) > 1:
                print(f"(prefix cache on the {first.strategy} server)")
            report["prefixCache"] = await prefix_cache(first.turns, proxy, sdist)
        started = time.perf_counter()
        if args.advise:
            print(f"\n{'task':<20} {'stop':<9} {'secs':>6} {'calls':>5} {'tokens':>6}  steps")
            wanted_advice = set(args.tasks.split(",")) if args.tasks else None
            advice = [
                await run_advisor_task(task, first.turns, proxy, sdist, api)
                for task in project.advisor_tasks
                if wanted_advice is None or task.name in wanted_advice
            ]
            report |= {"advisorTasks": advice, "advisorTotals": advisor_totals(advice)}
            report["stats"] = await routing_numbers(first.milk, first.scratch.workspace)
            return report
        lane_head = f"{'strategy':<8} " if args.strategies else ""
        print(
            f"\n{lane_head}{'task':<20} {'kind':<8} {'verdict':<17} {'silent':<8} {'secs':>6} "
            f"{'calls':>5} {'prompt':>7} {'cached':>7} {'tokens':>6} {'ended':>5}  tools"
        )
        label = (lambda lane: lane.strategy) if args.strategies else (lambda lane: None)
        for task in tasks:  # the strategies take turns, task by task
            for lane in lanes:
                assert lane.turns is not None
                lane.rows.append(await run_task(task, lane.turns, proxy, sdist, label(lane)))
        wall = time.perf_counter() - started
        per_strategy: dict[str, Any] = {}
        for lane in lanes:
            if len(lanes) > 1:
                print(f"\n== strategy {lane.strategy}")
            # side by side, the wall time is shared: each lane counts its own tasks' seconds
            seconds = wall if len(lanes) == 1 else sum(r["seconds"] for r in lane.rows)
            per_strategy[lane.strategy] = {
                "tasks": lane.rows,
                "totals": totals(lane.rows, seconds),
                "stats": await routing_numbers(lane.milk, lane.scratch.workspace),
            }
        if args.strategies:
            report |= {"strategies": per_strategy, "sideBySide": side_by_side(lanes)}
        if len(lanes) == 1:
            report |= per_strategy[first.strategy]
        print(f"load average {os.getloadavg()[0]:.1f} at the end")
        return report
    finally:
        try:
            for lane in lanes:
                try:
                    await lane.milk.stop()
                except Exception as exc:  # the other lanes still stop, the rest still closes
                    print(f"stopping the {lane.strategy} server: {exc!r}")
        finally:
            if proxy is not None:
                await proxy.close()
            for part in (api, llama):
                if part is not None:
                    part.close()
            for lane in lanes[1:]:
                lane.scratch.close()
            scratch.close()


def strategy_list(text: str) -> list[str]:
    """`--strategies`: comma-separated `local.strategy` values, each once, in order."""
    chosen = list(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    wrong = [name for name in chosen if name not in STRATEGIES]
    if wrong or not chosen:
        raise argparse.ArgumentTypeError(
            f"{', '.join(wrong) or 'nothing'}: choose from {', '.join(STRATEGIES)}"
        )
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", help="an existing OpenAI-compatible endpoint (…/v1)")
    parser.add_argument("--model", help="the model name to ask --base-url for")
    parser.add_argument("--project", choices=sorted(PROJECTS), default="slugify")
    parser.add_argument("--model-size", choices=sorted(MODELS), default="1.5b")
    parser.add_argument("--tasks", help="comma-separated task names (default: all)")
    parser.add_argument(
        "--strategies",
        type=strategy_list,
        help="comma-separated local.strategy values (auto, guided, agent): every task runs "
        "once per strategy, side by side (default: local.strategy not sent, the server's own)",
    )
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument(
        "--turn-timeout",
        type=float,
        default=360.0,
        help="seconds per turn: past milk's own local.turnBudgetSeconds (300), so a turn that"
        " runs to its budget is milk's hand-off, not the bench's timeout",
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--slots",
        type=int,
        help="model server slots, each with --ctx tokens and its own prompt cache (default: "
        "one per strategy, so each keeps its cache as a user running one strategy does)",
    )
    parser.add_argument("--ctx", type=int, default=8192)
    parser.add_argument("--n-predict", type=int, default=768, help="server-side reply cap")
    parser.add_argument("--server-tree", type=Path, help="run python -m milk_lsp from this tree")
    parser.add_argument("--no-prefix-cache", action="store_true", help="skip that measurement")
    parser.add_argument(
        "--advise",
        action="store_true",
        help="run the project's multi-step tasks on the advisor route instead (issue 32)",
    )
    args = parser.parse_args()
    report = asyncio.run(run(args))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, default=str) + "\n")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
