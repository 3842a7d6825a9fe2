"""`local.checkCommand` after the local model's edits: run as milk's own `run_command` call,
before the turn counts as done; what failed is told to the model once (the agent loop), then
is the `check_failed` signal."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Protocol

from milk_lsp.agents.base import AgentEvent, NoticeEvent, ToolCallEvent, ToolResultEvent, ToolStatus


class ToolOutcomeLike(Protocol):
    @property
    def output(self) -> str: ...

    @property
    def is_error(self) -> bool: ...

    @property
    def denied(self) -> bool: ...


class EditCheck(Protocol):
    """`local.checkCommand` after the local edits (`WorkspaceTools` is one)."""

    def pending_check(self) -> str | None: ...

    async def check_edits(self, tool_call_id: str) -> CheckRunLike | None: ...


class CheckRunLike(Protocol):
    @property
    def command(self) -> str: ...

    @property
    def outcome(self) -> ToolOutcomeLike: ...


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
    outcome = run.outcome
    if outcome.denied:
        status = ToolStatus.DENIED
    else:
        status = ToolStatus.FAILED if outcome.is_error else ToolStatus.COMPLETED
    yield ToolCallEvent(call_id, "run_command", {"command": run.command}, status)
    yield ToolResultEvent(call_id, outcome.output, outcome.is_error)
    if outcome.denied:
        yield NoticeEvent("info", f"the check after the local edits was not run: {run.command}")
    elif outcome.is_error:
        yield NoticeEvent(
            "info",
            f"milk ran the check after the local edits ({run.command}): it failed, and the "
            "model was told what it found",
        )
        yield f"`{run.command}` said:\n{_tail(outcome.output, CHECK_OUTPUT_CHARS)}"
    else:
        yield NoticeEvent("info", f"milk ran the check after the local edits: {run.command} passed")


def check_message(failed: str) -> str:
    return (
        f"milk ran the check after your edits and it failed. {failed}\n\nFix what it "
        "reports with edit_file, then say in one sentence what you changed."
    )


def _tail(text: str, most: int) -> str:
    return text if len(text) <= most else "…" + text[-most:]
