"""An escalation turn through milk-lsp against a bare `claude -p`, and the static prefix at the API.

Both parts run the REAL Claude Code CLI (the binary bundled in the claude-agent-sdk wheel,
`milk_lsp.agents.claude.cli.bundled_cli_path()`) against the Messages-API stand-in
(`tests.fakes.anthropic_api`, its own process on 127.0.0.1), with a throwaway HOME and
TMPDIR, a fake ANTHROPIC_API_KEY and CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1.

1. Time. The stand-in answers every conversation request with a short paced reply (200
   characters in 20 chunks, 10 ms before each). N runs of each, interleaved (order
   alternating), after one warm-up of each:

   * milk-lsp: the real server over stdio (pygls `LanguageClient`), a new session each run,
     `milk/escalate` timed from the request to its result (context planned, context file
     written, the CLI spawned with milk's argv, its stream mapped to `milk/update`s, the CLI
     reaped, the turn and bricks stored);
   * bare: `claude -p PROMPT --output-format stream-json --verbose` with the same binary,
     environment and cwd, timed from spawn to exit with stdout read to EOF.

   Prints both medians and the ratio (target <= 1.15x), the phases of each, and the CPU
   each path used per turn (the CLI's, and milk-lsp's own; on a loaded machine the CPU
   figures are steadier than wall time).

2. Static prefix. A 20-turn session through the server mixing local turns (with a tool call,
   need and percept tags), user escalations (`milk/escalate`), resumed Claude turns (one with
   a permission-asked Bash call), a return to Claude after local turns, an escalation by the
   local agent (`escalate_to_claude`) and a fresh start after 8 local turns. From the
   stand-in's recorded requests it takes the text appended to the system prompt of every
   Claude API request, cuts its static block (everything before the first dynamic header),
   and reports the share of escalations (and of requests) whose static block is
   byte-identical to the first escalation's (target 100 %), cross-checked against
   `milk_lsp.prompts.context.build_static(nonce, percepts)`.

    .venv/bin/python bench/escalation.py [--runs 10]

(about 40 s on an idle 2-core machine; the CLI's start-up dominates each turn).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import resource
import signal
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._harness import (
    REPO,
    FakeProcess,
    MilkLsp,
    Scratch,
    expect,
    paired_ratio,
    process_cpu,
)
from milk_lsp.agents.claude.cli import bundled_cli_path
from milk_lsp.agents.claude.command import ClaudeSettings, build_env
from milk_lsp.config import MilkConfig
from milk_lsp.prompts import context as ctx
from tests.fakes.anthropic_api import appended_system_text

REPLY = ("The tokenizer skipped the last character of each line; fixed the loop bound. " * 3)[:200]
PACED = {"text": REPLY, "chunk_chars": 10, "delay": 0.01}
PROMPT = "Fix the off-by-one in the tokenizer loop."
DYNAMIC_HEADERS = (
    ctx.BRIEF_HEADER,
    ctx.NEED_HEADER,
    ctx.STALE_NEED_HEADER,
    ctx.PRIOR_SUMMARY_HEADER,
    ctx.LOCAL_SUMMARY_HEADER,
)
TOUCH = {"name": "Bash", "input": {"command": "touch marker.txt", "description": "Create marker"}}


def claude_env(scratch: Scratch, api: FakeProcess) -> dict[str, str]:
    return {
        "HOME": str(scratch.root / "home"),
        "TMPDIR": str(scratch.root / "tmp"),
        "ANTHROPIC_BASE_URL": api.origin,
        "ANTHROPIC_API_KEY": "sk-ant-fake",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
    }


def static_block(appended: str) -> str:
    """The static block of an appended text: everything before the first dynamic header."""
    cut = len(appended)
    for header in DYNAMIC_HEADERS:
        at = appended.find("\n\n" + header)
        if at >= 0:
            cut = min(cut, at + 1)  # the static block ends in "\n"; the file adds one more
    return appended[:cut]


# -- part 1: time ------------------------------------------------------------------------------


async def bare_claude(cli: str, scratch: Scratch, env: dict[str, str]) -> dict[str, float]:
    """One bare turn: seconds from spawn to its first line, its result line, and its exit."""
    started = time.perf_counter()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    marks: dict[str, float] = {}
    proc = await asyncio.create_subprocess_exec(
        cli,
        "-p",
        PROMPT,
        "--output-format",
        "stream-json",
        "--verbose",
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        cwd=str(scratch.workspace),
        env=env,
        start_new_session=True,
        limit=1 << 24,
    )
    try:
        assert proc.stdout is not None
        async with asyncio.timeout(120):
            while line := await proc.stdout.readline():
                marks.setdefault("first line", time.perf_counter() - started)
                if b'"type":"result"' in line:
                    marks["result"] = time.perf_counter() - started
            await proc.wait()
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
    marks["total"] = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    marks["cli cpu"] = (after.ru_utime + after.ru_stime) - (children.ru_utime + children.ru_stime)
    expect(proc.returncode == 0 and "result" in marks, f"claude -p exited {proc.returncode}")
    return marks


async def milk_escalation(milk: MilkLsp, scratch: Scratch) -> dict[str, float]:
    """One escalation: seconds from the request to each `milk/update` kind and to the result."""
    session = await milk.request(
        "milk/session/new", {"workspaceFolder": scratch.workspace.as_uri()}
    )
    marks: dict[str, float] = {}

    def on_update(update: dict[str, Any]) -> None:
        at = time.perf_counter() - started
        kind = str(update.get("kind"))
        marks.setdefault(f"first {kind}", at)
        marks[f"last {kind}"] = at

    milk.on_update = on_update
    own, children = process_cpu(milk.pid)
    started = time.perf_counter()
    result = await milk.request(
        "milk/escalate", {"sessionId": session["sessionId"], "text": PROMPT}
    )
    marks["total"] = time.perf_counter() - started
    own_after, children_after = process_cpu(milk.pid)
    marks["server cpu"], marks["cli cpu"] = own_after - own, children_after - children
    milk.on_update = None
    expect(result["stopReason"] == "end_turn" and result["text"] == REPLY, result)
    return marks


def _phases(runs: list[dict[str, float]], spans: list[tuple[str, str, str]]) -> str:
    parts = []
    for label, start, end in spans:
        values = [
            r[end] - (r[start] if start else 0.0)
            for r in runs
            if end in r and (not start or start in r)
        ]
        if values:
            parts.append(f"{label} {statistics.median(values) * 1000:.0f}")
    return ", ".join(parts)


async def timing(
    args: argparse.Namespace, cli: str, scratch: Scratch, api: FakeProcess, milk: MilkLsp
) -> None:
    # The environment milk-lsp gives the CLI (its own, plus the overrides, minus nested-session
    # variables, retries bounded), so both run the binary under the same conditions.
    env = build_env(ClaudeSettings(), scratch.workspace, base=milk.env)
    api.script([{**PACED, "repeat": 10_000}])
    warm = (await milk_escalation(milk, scratch), await bare_claude(cli, scratch, env))
    ours: list[dict[str, float]] = []
    bare: list[dict[str, float]] = []
    for i in range(args.runs):
        if i % 2 == 0:
            ours.append(await milk_escalation(milk, scratch))
            bare.append(await bare_claude(cli, scratch, env))
        else:
            bare.append(await bare_claude(cli, scratch, env))
            ours.append(await milk_escalation(milk, scratch))
    requests = api.call("GET", "/_requests")
    main = [r for r in requests if r["main"]]
    api.call("DELETE", "/_requests")
    t_ours = [r["total"] for r in ours]
    t_bare = [r["total"] for r in bare]
    m_ours, m_bare = statistics.median(t_ours), statistics.median(t_bare)
    print(
        f"reply: {len(REPLY)} chars in 20 chunks, 10 ms before each; {args.runs} runs each, "
        f"interleaved, after one warm-up each (milk {warm[0]['total'] * 1000:.0f} ms, bare "
        f"{warm[1]['total'] * 1000:.0f} ms)"
    )
    print(
        f"bare claude -p (spawn -> exit):              median {m_bare * 1000:.0f} ms "
        f"(min {min(t_bare) * 1000:.0f}, max {max(t_bare) * 1000:.0f})"
    )
    print(
        f"milk-lsp milk/escalate (request -> result):  median {m_ours * 1000:.0f} ms "
        f"(min {min(t_ours) * 1000:.0f}, max {max(t_ours) * 1000:.0f})"
    )
    print(
        f"{paired_ratio('milk-lsp / bare', t_ours, t_bare, 1.15)}; "
        f"{len(main)} conversation requests, {len(requests) - len(main)} side requests "
        f"at the stand-in for {2 * (args.runs + 1)} turns"
    )
    cpu = [
        sum(r[key] for r in runs) / len(runs)
        for runs, key in ((bare, "cli cpu"), (ours, "cli cpu"), (ours, "server cpu"))
    ]
    print(
        f"CPU per turn (user + sys, means): bare CLI {cpu[0] * 1000:.0f} ms; via milk-lsp CLI "
        f"{cpu[1] * 1000:.0f} ms + milk-lsp server {cpu[2] * 1000:.0f} ms "
        f"(CPU ratio {(cpu[1] + cpu[2]) / cpu[0]:.3f}x; load-independent, unlike wall time)"
    )
    print(
        "  bare phases (ms, medians): "
        + _phases(
            bare,
            [
                ("spawn->first line", "", "first line"),
                ("->result line", "first line", "result"),
                ("->exit", "result", "total"),
            ],
        )
    )
    print(
        "  milk phases (ms, medians): "
        + _phases(
            ours,
            [
                ("request->turn_started", "", "first turn_started"),
                ("->escalated", "first turn_started", "first escalated"),
                ("->first text", "first escalated", "first text"),
                ("->last text", "first text", "last text"),
                ("->usage", "last text", "first usage"),
                ("->turn_ended", "last text", "first turn_ended"),
                ("->result", "first turn_ended", "total"),
            ],
        )
    )


# -- part 2: the static prefix over a 20-turn session -------------------------------------------


async def session(
    args: argparse.Namespace, scratch: Scratch, api: FakeProcess, model: FakeProcess, milk: MilkLsp
) -> None:
    escalated: list[dict[str, Any]] = []
    milk.on_update = lambda u: escalated.append(u) if u.get("kind") == "escalated" else None
    sid = (await milk.request("milk/session/new", {"workspaceFolder": scratch.workspace.as_uri()}))[
        "sessionId"
    ]
    preview = await milk.request("milk/context", {"sessionId": sid})
    found = re.search(r"<milk:need:([a-z0-9]+)>", preview["contextFile"])
    expect(found is not None, "no nonce in the context preview")
    nonce = found.group(1) if found else ""

    def need(text: str) -> str:
        return f"<milk:need:{nonce}>{text}</milk:need:{nonce}>"

    fact = "The project formats with ruff, line length 100."
    percept = f"<milk:percept:{nonce}>{fact}</milk:percept:{nonce}>"
    claude_text = (
        "Claude read the tokenizer, found the loop stopping one short, changed the "
        "bound and ran the tests, which pass now. "
    )

    def local(text: str, **extra: Any) -> dict[str, Any]:
        return {"text": text, "chunk_chars": 8, **extra}

    # (what, method, params, local model script, API script)
    turns: list[tuple[str, str, dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]] = [
        (
            "local",
            "milk/chat",
            {"text": "what does the tokenizer do?"},
            [
                local(
                    f"{need('Fix the tokenizer off-by-one')} It splits lines into tokens. {percept}"
                )
            ],
            [],
        ),
        (
            "local + tool",
            "milk/chat",
            {"text": "read hello.py"},
            [
                {"tool_calls": [{"name": "read_file", "arguments": {"path": "hello.py"}}]},
                local("hello.py defines greet()."),
            ],
            [],
        ),
        (
            "user escalation",
            "milk/escalate",
            {"text": "please fix the tokenizer", "reason": "hard"},
            [],
            [{"text": claude_text * 2, "chunk_chars": 40}],
        ),
        (
            "claude resumed",
            "milk/chat",
            {"text": "and the edge case with tabs"},
            [],
            [{"text": claude_text, "chunk_chars": 40}],
        ),
        (
            "claude resumed + Bash",
            "milk/chat",
            {"text": "make a marker file"},
            [],
            [
                {"tool_use": TOUCH},
                {"text": "Created marker.txt in the workspace.", "chunk_chars": 40},
            ],
        ),
        (
            "local",
            "milk/chat",
            {"text": "run the linter", "route": "local"},
            [local("The linter reports no problems.")],
            [],
        ),
        (
            "local + tool",
            "milk/chat",
            {"text": "list the folder"},
            [
                {"tool_calls": [{"name": "list_directory", "arguments": {"path": "."}}]},
                local("There are hello.py and marker.txt."),
            ],
            [],
        ),
        (
            "claude returning",
            "milk/chat",
            {"text": "now add a test", "route": "claude"},
            [],
            [
                {
                    "text": f"{need('Add a regression test for the tokenizer')} " + claude_text,
                    "chunk_chars": 40,
                }
            ],
        ),
        (
            "claude resumed",
            "milk/chat",
            {"text": "name it test_tokenizer_tabs"},
            [],
            [{"text": "Renamed the test as asked; it passes.", "chunk_chars": 40}],
        ),
        (
            "local",
            "milk/chat",
            {"text": "summarise the diff", "route": "local"},
            [local("Two files changed: the tokenizer and its test.")],
            [],
        ),
        (
            "agent escalation",
            "milk/chat",
            {"text": "the parser crashes on nested tables"},
            [
                {
                    "text": "Handing this over.",
                    "tool_calls": [
                        {
                            "name": "escalate_to_claude",
                            "arguments": {
                                "reason": "nested tables crash the parser; I could not find why"
                            },
                        }
                    ],
                }
            ],
            [{"text": claude_text * 2, "chunk_chars": 40}],
        ),
        *[
            (
                "local",
                "milk/chat",
                {"text": f"local step {k}"},
                [local(f"Done with local step {k}.")],
                [],
            )
            for k in range(8)
        ],
        (
            "user escalation (fresh)",
            "milk/escalate",
            {"text": "review everything so far"},
            [],
            [{"text": claude_text, "chunk_chars": 40}],
        ),
    ]
    assert len(turns) == 20
    rows = []
    for what, method, params, local_script, api_script in turns:
        model.script(local_script)
        api.script(api_script)
        api.call("DELETE", "/_requests")
        before = len(escalated)
        result = await milk.request(method, {"sessionId": sid, **params})
        expect(result["stopReason"] == "end_turn", (what, result))
        requests = [r for r in api.call("GET", "/_requests") if r["main"]]
        mode = escalated[before]["mode"] if len(escalated) > before else ""
        by = escalated[before]["by"] if len(escalated) > before else ""
        sent = escalated[before]["contextChars"] if len(escalated) > before else 0
        rows.append(
            (what, result["agent"], mode, by, [appended_system_text(r) for r in requests], sent)
        )

    path = MilkConfig(storage_dir=str(scratch.storage)).storage_path()
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        percepts = [row[0] for row in db.execute("SELECT text FROM percepts ORDER BY rowid")]
    finally:
        db.close()
    expected = ctx.build_static(nonce, percepts)

    escalations = [row for row in rows if row[4]]
    first = static_block(escalations[0][4][0])
    same_turns = sum(all(static_block(a) == first for a in row[4]) for row in escalations)
    all_requests = [a for row in escalations for a in row[4]]
    same_requests = sum(static_block(a) == first for a in all_requests)
    print(
        "turn | what                     | agent  | mode      | by    | milk context "
        "| API requests | appended at API | static identical"
    )
    for n, (what, agent, mode, by, appended, sent) in enumerate(rows, 1):
        ident = (
            ("yes" if all(static_block(a) == first for a in appended) else "NO") if appended else ""
        )
        sizes = ",".join(f"{len(a):,}" for a in appended)
        print(
            f"{n:>4} | {what:<24} | {agent:<6} | {mode:<9} | {by:<5} | {sent or '':>12} | "
            f"{len(appended) or '':>12} | {sizes:>15} | {ident}"
        )
    print(
        f"static block {len(first):,} chars (nonce {nonce}, {len(percepts)} percept); equals "
        f"build_static(nonce, percepts): {'yes' if first == expected else 'NO'}"
    )
    print(
        f"escalations with a byte-identical static prefix: {same_turns}/{len(escalations)} = "
        f"{100 * same_turns / len(escalations):.0f}% (target 100%); API requests: "
        f"{same_requests}/{len(all_requests)} = {100 * same_requests / len(all_requests):.0f}%"
    )
    start_text, replayed, same_as_start = "", 0, 0
    for row in escalations:  # compare each resumed turn with its conversation's opening request
        if row[2] in ("first", "fresh"):
            start_text = row[4][0]
        else:
            replayed += 1
            same_as_start += all(a == start_text for a in row[4])
    print(
        f"resumed/returning escalations whose whole appended text at the API equals their "
        f"conversation's first request: {same_as_start}/{replayed} (milk passes the static "
        f"block alone as the file on these turns; 'milk context' counts file + <milk-context>)"
    )
    modes = sorted({row[2] for row in escalations})
    print(
        f"modes covered: {', '.join(modes)}; escalated by: "
        f"{', '.join(sorted({row[3] for row in escalations}))}; "
        f"permission questions answered: {len(milk.permission_requests)}"
    )


async def run(args: argparse.Namespace, cli: str) -> None:
    scratch = Scratch("milk-bench-esc-")
    api = model = None
    milk: MilkLsp | None = None
    try:
        api = FakeProcess("tests.fakes.anthropic_api")
        model = FakeProcess("tests.fakes.openai_server")
        settings = {
            "local": {"baseUrl": model.url, "model": "fake-model", "requestTimeoutSeconds": 30},
            "storageDir": str(scratch.storage),
            "claude": {"path": cli},
        }
        milk = MilkLsp(scratch, settings, claude_env(scratch, api))
        await milk.start()
        print(
            f"claude CLI {args.version} ({cli}); "
            f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
        )
        started = time.perf_counter()
        await timing(args, cli, scratch, api, milk)
        print(f"(part 1 took {time.perf_counter() - started:.0f} s)")
        started = time.perf_counter()
        await session(args, scratch, api, model, milk)
        print(
            f"(part 2 took {time.perf_counter() - started:.0f} s); load average "
            f"{os.getloadavg()[0]:.1f}"
        )
    finally:
        try:
            if milk is not None:
                await milk.stop()
        finally:
            for fake in (api, model):
                if fake is not None:
                    fake.close()
            leftovers = sorted(p.name for p in (scratch.root / "tmp").iterdir())
            scratch.close()
        if leftovers:
            print(
                f"note: the CLI runs left {len(leftovers)} entries in their TMPDIR "
                f"({', '.join(leftovers[:5])}); removed with the scratch root"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="timed escalations of each kind")
    args = parser.parse_args()
    cli = bundled_cli_path()
    if cli is None:
        raise SystemExit("the claude-agent-sdk wheel's bundled claude CLI is missing")
    version = subprocess.run([cli, "--version"], capture_output=True, text=True, timeout=60)
    args.version = version.stdout.strip()
    asyncio.run(run(args, cli))


if __name__ == "__main__":
    os.chdir(REPO)
    main()
