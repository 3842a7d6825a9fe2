"""`local.checkCommand` after the local model's edits: run as milk's own `run_command` call,
before the turn counts as done; what failed is told to the model once (the agent loop), then
is the `check_failed` signal."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Protocol

from milk_lsp.agents.base import AgentEvent, NoticeEvent, ToolCallEvent, ToolResultEvent, ToolStatus


@dataclass(frozen=True)
class CheckRun:
    """One run of `local.checkCommand`: the command as run and what it gave."""

    command: str
    output: str
    failed: bool = False
    denied: bool = False
    """The user did not allow it: no failure of the edits."""


class EditCheck(Protocol):
    """`local.checkCommand` after the local edits (`WorkspaceTools` is one)."""

    def pending_check(self) -> str | None: ...

    async def check_edits(self, tool_call_id: str) -> CheckRun | None: ...


CHECK_OUTPUT_CHARS = 1500
"""Of a failed check's output, what the model and Claude's brief get."""


async def run_check(check: EditCheck, call_id: str) -> AsyncGenerator[AgentEvent | str, None]:
    """Run the check as milk's own `run_command` call (shown as one); ends with the failure
    in words (a str) when it failed. A check the user did not allow is no failure."""
    command = check.pending_check() or ""
    yield ToolCallEvent(call_id, "run_command", {"command": command}, ToolStatus.RUNNING)
    run = await check.check_edits(call_id)
    if run is None:
        return
    if run.denied:
        status = ToolStatus.DENIED
    else:
        status = ToolStatus.FAILED if run.failed else ToolStatus.COMPLETED
    yield ToolCallEvent(call_id, "run_command", {"command": run.command}, status)
    yield ToolResultEvent(call_id, run.output, run.failed)
    if run.denied:
        yield NoticeEvent("info", f"the check after the local edits was not run: {run.command}")
    elif run.failed:
        yield NoticeEvent(
            "info",
            f"milk ran the check after the local edits ({run.command}): it failed, and the "
            "model was told what it found",
        )
        yield f"`{run.command}` said:\n{_tail(run.output, CHECK_OUTPUT_CHARS)}"
    else:
        yield NoticeEvent("info", f"milk ran the check after the local edits: {run.command} passed")


def check_message(failed: str) -> str:
    return (
        f"milk ran the check after your edits and it failed. {failed}\n\nFix what it "
        "reports with edit_file, then say in one sentence what you changed."
    )


def _tail(text: str, most: int) -> str:
    return text if len(text) <= most else "…" + text[-most:]
