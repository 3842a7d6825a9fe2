"""Re-record the stream-json samples in this folder from the real CLI and the stand-in API.

    .venv/bin/python -m tests.data.claude.record [CLI_PATH]

Each scenario runs the CLI with the argv `milk_lsp.agents.claude.command.build_argv` makes, sends
the prompt the way the agent does, answers permission questions as the scenario says, and
writes the CLI's stdout lines to ``<scenario>.ndjson`` (scratch paths replaced by
``/tmp/milk-record``). Run it after upgrading the CLI, then run tests/test_claude_stream.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from milk_lsp.agents.claude.cli import resolve_cli
from milk_lsp.agents.claude.command import (
    ClaudeSettings,
    ClaudeTurnRequest,
    build_argv,
    build_env,
)
from milk_lsp.agents.claude.stream import (
    allow_line,
    deny_line,
    interrupt_line,
    user_message_line,
)
from tests.fakes.anthropic_api import FakeAnthropicAPI

HERE = Path(__file__).parent
PLACEHOLDER = "/tmp/milk-record"

TOUCH = {"name": "Bash", "input": {"command": "touch marker.txt", "description": "Create marker"}}
ECHO = {"name": "Bash", "input": {"command": "echo hi", "description": "Print hi"}}

SCENARIOS: dict[str, dict[str, Any]] = {
    "text_thinking": {"script": [{"thinking": "Let me think.", "text": "Hello there, friend!"}]},
    "tool_allow": {
        "script": [{"text": "I will.", "tool_use": TOUCH}, {"text": "Made it."}],
        "answer": "allow",
    },
    "tool_deny": {
        "script": [{"tool_use": TOUCH}, {"text": "Understood."}],
        "answer": "deny",
    },
    "tool_no_permission": {"script": [{"tool_use": ECHO}, {"text": "It printed hi."}]},
    "error_500": {"script": [{"status": 500, "repeat": 5}], "max_retries": 1},
    "error_429": {"script": [{"status": 429, "repeat": 5}], "max_retries": 1},
    "prompt_too_long": {"script": [{"error": "prompt_too_long"}]},
    "not_logged_in": {"script": [], "env": {"ANTHROPIC_API_KEY": ""}},
    "resume_unknown": {"script": [], "resume": True},
    "interrupted": {"script": [{"text": "word " * 30, "delay": 0.2}], "interrupt_after_deltas": 3},
}


async def record(name: str, scenario: dict[str, Any], cli: str, scratch: Path) -> None:
    ws = scratch / "ws"
    for sub in ("ws", "home", "tmp"):
        (scratch / sub).mkdir(parents=True, exist_ok=True)
    with FakeAnthropicAPI(scenario["script"]) as api:
        settings = ClaudeSettings(max_retries=scenario.get("max_retries", 2))
        request = ClaudeTurnRequest(
            workspace=ws,
            prompt="hello",
            context_file_text="",
            session_id=str(uuid.uuid4()),
            resume=bool(scenario.get("resume")),
            settings=settings,
        )
        env = build_env(
            settings,
            ws,
            {
                "HOME": str(scratch / "home"),
                "TMPDIR": str(scratch / "tmp"),
                "ANTHROPIC_BASE_URL": api.base_url,
                "ANTHROPIC_API_KEY": "sk-ant-fake",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                **scenario.get("env", {}),
            },
        )
        proc = await asyncio.create_subprocess_exec(
            *build_argv(request, cli, ""),
            cwd=ws,
            env=env,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=1 << 24,
        )
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(user_message_line(request.prompt))
        lines: list[str] = []
        deltas = 0
        while raw := await proc.stdout.readline():
            line = raw.decode().rstrip("\n")
            lines.append(line.replace(str(scratch), PLACEHOLDER))
            msg = json.loads(line)
            if msg["type"] == "control_request":
                body = msg["request"]
                if scenario.get("answer") == "allow":
                    proc.stdin.write(allow_line(msg["request_id"], body["input"]))
                else:
                    proc.stdin.write(
                        deny_line(msg["request_id"], "The user denied this tool use in the editor.")
                    )
            elif msg["type"] == "stream_event":
                if msg["event"].get("delta", {}).get("type") == "text_delta":
                    deltas += 1
                    if deltas == scenario.get("interrupt_after_deltas"):
                        proc.stdin.write(interrupt_line("milk-interrupt-1"))
                        proc.stdin.close()
            elif msg["type"] == "result" and not proc.stdin.is_closing():
                proc.stdin.close()
        stderr = (await proc.stderr.read()).decode() if proc.stderr else ""
        rc = await proc.wait()
    (HERE / f"{name}.ndjson").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{name}: rc={rc} lines={len(lines)} stderr={stderr.strip()[:120]!r}")


async def main(cli: str) -> None:
    for name, scenario in SCENARIOS.items():
        scratch = Path(tempfile.mkdtemp(prefix="milk-record-"))
        try:
            await record(name, scenario, cli, scratch)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    path = sys.argv[1] if len(sys.argv) > 1 else resolve_cli(ClaudeSettings()).path
    if not path:
        sys.exit("no claude CLI found")
    os.environ.pop("CLAUDECODE", None)
    asyncio.run(main(path))
