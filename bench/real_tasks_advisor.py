"""The advisor route on real tasks (issues 32 and 39): `bench/real_tasks.py --advise`.

Each multi-step task of the project (`Project.advisor_tasks`: a rename across files, a new
parameter with its uses, a docstring pass) is one `milk/chat` on route `advise` in a new
session of the real server, the project unpacked afresh. The Claude stand-in plays Claude as
the advisor asks it to (issue 39): the plan request, one tool-less request with milk's brief,
is answered with the task's steps as exact replacements (JSON); a step handed back to Claude
is one fresh request, answered with that step's edit in the same shape (a replace-all step
as one edit per line, each widened until it occurs once). Each step the local side marked
done is checked on the files (one that is not is a silent failure), and the workspace at
the end is checked for every step. Then the same request goes to Claude alone (route
`claude`): it reads the files and makes every step's edit, one tool call each, as Claude
Code does.

The stand-in counts each request's tokens from its size (`usage: "measured"`: 4 characters a
token, a start shared with an earlier request read from the prompt cache), so the two routes'
Claude costs, as the real CLI prices them, compare like with like.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from bench._harness import FakeProcess
from bench._llama import TimingsProxy
from bench.real_tasks_suite import AdvisorTask, ClaudeEdit, lay_out

CLAUDE_REPLY = "Claude Code (the stand-in) took this task over."


async def run_advisor_task(
    task: AdvisorTask, turns: Any, proxy: TimingsProxy, sdist: Path, api: FakeProcess
) -> dict[str, Any]:
    """One task on route `advise`, then the same request on Claude alone; its row."""
    lay_out(sdist, turns.workspace)
    api.script(
        [
            _measured({"text": json.dumps(_plan(task))}),
            *(
                {
                    "when": text[:60],
                    "then": [_measured({"text": json.dumps(_step_answer(edit, turns.workspace))})],
                }
                for text, _, edit in task.steps
            ),
            {**_done(), "repeat": 100_000},
        ]
    )
    api.call("DELETE", "/_requests")
    session_id = await turns.new_session()
    proxy.label, start = task.name, len(proxy.calls)
    started = time.perf_counter()
    result, timed_out, seconds = await turns.chat(session_id, task.prompt, route="advise")
    calls = proxy.since(start)
    steps = []
    for (text, check, _), shown in zip(task.steps, result.get("plan") or [], strict=False):
        problem = check(turns.workspace)
        done_locally = shown.get("status") == "completed" and shown.get("agent") == "local"
        steps.append(
            {
                "step": text[:80],
                "status": shown.get("status"),
                "agent": shown.get("agent"),
                "check": problem or "done",
                "silent": done_locally and bool(problem),
            }
        )
    advisor_cost = float((result.get("usage") or {}).get("costUsd") or 0.0)
    why = [  # why each step Claude did was not the local model's (the hand-off reasons)
        str(u.get("reason"))
        for u in turns.updates.get(session_id, [])
        if u.get("kind") == "escalated" and u.get("by") == "fallback"
    ]
    trace = turns.trace(session_id, result.get("turnId"))
    unmade = [problem for _, check, _ in task.steps if (problem := check(turns.workspace))]
    advisor_requests = _sizes(api.call("GET", "/_requests"))
    api.call("DELETE", "/_requests")
    lay_out(sdist, turns.workspace)
    api.script(
        [
            *_reads(task.files, turns.workspace),
            *(call for _, _, edit in task.steps for call in _edit(edit, turns.workspace)),
            {**_done(), "repeat": 100_000},
        ]
    )
    alone, _, _ = await turns.chat(await turns.new_session(), task.prompt, route="claude")
    alone_cost = float((alone.get("usage") or {}).get("costUsd") or 0.0)
    alone_unmade = [problem for _, check, _ in task.steps if (problem := check(turns.workspace))]
    alone_requests = _sizes(api.call("GET", "/_requests"))
    row = {
        "task": task.name,
        "kind": "advise",
        "stopReason": result.get("stopReason"),
        "timedOut": timed_out,
        "steps": steps,
        "stepsPlanned": len(task.steps),
        "stepsLocal": sum(s["status"] == "completed" and s["agent"] == "local" for s in steps),
        "stepsClaude": sum(s["status"] == "completed" and s["agent"] == "claude" for s in steps),
        "stepsFailed": len(task.steps) - sum(s["status"] == "completed" for s in steps),
        "silent": sum(s["silent"] for s in steps),
        "claudeRequests": {"advisor": advisor_requests, "alone": alone_requests},
        "endedAsAsked": not unmade,
        "notMade": unmade,
        "aloneEndedAsAsked": not alone_unmade,
        "seconds": round(seconds, 1),
        "modelCalls": len(calls),
        "generated": sum(c.generated for c in calls),
        "claudeCostUsd": round(advisor_cost, 6),
        "claudeAloneCostUsd": round(alone_cost, 6),
        "wallSeconds": round(time.perf_counter() - started, 1),
        "handedOffBecause": why,
        "trace": trace,
    }
    marks = " ".join(
        f"{n}:{'L' if s['agent'] == 'local' else 'C'}{'' if s['status'] == 'completed' else '✗'}"
        f"{'!' if s['silent'] else ''}"
        for n, s in enumerate(steps, 1)
    )
    print(
        f"{task.name:<20} {row['stopReason']!s:<9} {row['seconds']:>6.1f} {len(calls):>5} "
        f"{row['generated']:>6}  steps {marks or '-'}  Claude ${advisor_cost:.4f} "
        f"(alone ${alone_cost:.4f}){'' if not unmade else '  NOT AS ASKED: ' + unmade[0]}",
        flush=True,
    )
    for route, sizes in (("advisor", advisor_requests), ("alone", alone_requests)):
        print(
            f"    {route:<7} {len(sizes)} Claude requests; tokens sent (tools + system +"
            f" messages): {' '.join(f'{t}+{y}+{m}' for t, y, m in sizes)}",
            flush=True,
        )
    return row


def _sizes(requests: list[dict[str, Any]]) -> list[tuple[int, int, int]]:
    """Each conversation request's tools, system prompt and messages, in tokens (4
    characters a token, as the stand-in counts them)."""

    def tokens(body: dict[str, Any], key: str) -> int:
        return len(json.dumps(body.get(key))) // 4

    return [
        (tokens(r["body"], "tools"), tokens(r["body"], "system"), tokens(r["body"], "messages"))
        for r in requests
        if r.get("main")
    ]


def _plan(task: AdvisorTask) -> dict[str, Any]:
    """The plan as Claude writes it for milk's brief: each step an exact replacement (a
    replace-all one, a rename's, with `replace_all`, as milk's system prompt offers)."""
    return {
        "steps": [
            {"path": edit.path, "old_text": edit.old, "new_text": edit.new, "why": text}
            | ({"replace_all": True} if edit.every else {})
            for text, _, edit in task.steps
        ]
    }


def _step_answer(edit: ClaudeEdit, workspace: Path) -> dict[str, Any]:
    """Claude's answer to a step handed back: the step's edit, or for a replace-all one
    edit per line holding the old text, each widened by the lines after it until it occurs
    once in the file (as laid out: the failed local attempt was put back)."""
    if not edit.every:
        return {"steps": [{"path": edit.path, "old_text": edit.old, "new_text": edit.new}]}
    text = (workspace / edit.path).read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    steps, covered = [], -1
    for number, line in enumerate(lines):
        if edit.old not in line or number <= covered:
            continue
        end = number + 1
        while text.count("".join(lines[number:end])) > 1 and end < len(lines):
            end += 1
        old = "".join(lines[number:end])
        covered = end - 1
        steps.append(
            {"path": edit.path, "old_text": old, "new_text": old.replace(edit.old, edit.new)}
        )
    return {"steps": steps}


def _measured(call: dict[str, Any]) -> dict[str, Any]:
    return {**call, "usage": "measured"}


def _done() -> dict[str, Any]:
    return _measured({"text": CLAUDE_REPLY})


def _reads(paths: list[str], workspace: Path) -> list[dict[str, Any]]:
    """Claude Code reading each file (one Read call per response, as it works)."""
    return [
        _measured({"tool_use": {"name": "Read", "input": {"file_path": str(workspace / p)}}})
        for p in paths
    ]


def _edit(edit: ClaudeEdit, workspace: Path) -> list[dict[str, Any]]:
    """Claude Code's Edit call making the step."""
    change = {
        "file_path": str(workspace / edit.path),
        "old_string": edit.old,
        "new_string": edit.new,
        "replace_all": edit.every,
    }
    return [_measured({"tool_use": {"name": "Edit", "input": change}})]


def advisor_totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    planned = sum(r["stepsPlanned"] for r in rows)
    local = sum(r["stepsLocal"] for r in rows)
    cost = sum(r["claudeCostUsd"] for r in rows)
    alone = sum(r["claudeAloneCostUsd"] for r in rows)
    out = {
        "steps": planned,
        "stepsLocal": local,
        "stepsClaude": sum(r["stepsClaude"] for r in rows),
        "stepsFailed": sum(r["stepsFailed"] for r in rows),
        "silentSteps": sum(r["silent"] for r in rows),
        "shareLocal": round(local / planned, 3) if planned else None,
        "claudeCostUsd": round(cost, 6),
        "claudeAloneCostUsd": round(alone, 6),
        "costRatio": round(cost / alone, 2) if alone else None,
        "endedAsAsked": sum(r["endedAsAsked"] for r in rows),
        "aloneEndedAsAsked": sum(r["aloneEndedAsAsked"] for r in rows),
    }
    print(
        f"\nsteps done locally: {local}/{planned}"
        f" ({100 * (out['shareLocal'] or 0):.0f} %); by Claude: {out['stepsClaude']}; "
        f"failed: {out['stepsFailed']}; silent failures (a step marked done locally that the "
        f"files do not show): {out['silentSteps']} (target 0)\n"
        f"tasks that ended as asked: advisor {out['endedAsAsked']}/{len(rows)}, Claude alone "
        f"{out['aloneEndedAsAsked']}/{len(rows)}\n"
        f"Claude cost on advisor turns ${cost:.4f} against ${alone:.4f} for the same requests "
        f"on Claude alone (tokens measured by the stand-in): ratio {out['costRatio']}"
    )
    return out
