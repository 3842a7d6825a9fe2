"""`TurnHost`: the `AgentHost` an agent gets for one turn.

Permission questions go to the user through the turn (with the edits previewed), editor
documents are read through the client, and edits applied in an unsaved buffer are recorded
on the turn, since undo's disk checkpoint cannot see them.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from milk_lsp.agents.base import (
    PermissionOption,
    PermissionRequest,
    PermissionTimedOut,
    ToolCallEvent,
    ToolStatus,
)
from milk_lsp.engine.turn import Turn
from milk_lsp.sessions.model import Agent
from milk_lsp.workspace.edit_preview import FileEdit, capped, claude_edits, read_limited

logger = logging.getLogger(__name__)


class TurnHost:
    """The `AgentHost` of one turn: permission questions, editor documents, edits."""

    def __init__(self, turn: Turn, permission_timeout_seconds: float) -> None:
        self._turn = turn
        self._timeout = permission_timeout_seconds

    async def request_permission(self, request: PermissionRequest) -> PermissionOption:
        turn = self._turn
        if request.tool in turn.allowed_tools:
            return PermissionOption.ALLOW_ONCE
        params: dict[str, Any] = {
            "sessionId": turn.session_id,
            "turnId": turn.turn_id,
            "agent": request.agent.value,
            "toolCallId": request.tool_call_id,
            "tool": request.tool,
            "input": request.input,
            "description": request.description or None,
            "options": [option.value for option in request.options],
        }
        edits = await self._edits(request)
        if edits:
            params["edits"] = edits
        turn.bridge.progress_report(turn.progress_token, "waiting for your permission")
        local = request.agent is Agent.LOCAL
        if local:  # Claude's agent reports its own statuses; the local loop leaves it to us
            self._status(request, ToolStatus.PENDING)
        try:
            with turn.local_clock.paused() if turn.local_clock else nullcontext():
                answer = await turn.ask(params, self._timeout)
        except asyncio.CancelledError:
            # The turn was cancelled with the question open: the question is withdrawn
            # (the bridge cancels the client request) and the call counts as denied.
            self._status(request, ToolStatus.DENIED)
            raise
        except PermissionTimedOut:
            if local:
                self._status(request, ToolStatus.DENIED)
            raise
        try:
            option = PermissionOption(answer)
        except ValueError:
            option = PermissionOption.DENY
        if option is PermissionOption.ALLOW_SESSION:
            turn.allowed_tools.add(request.tool)
        if local and option is not PermissionOption.DENY:
            self._status(request, ToolStatus.RUNNING)
        return option

    async def _edits(self, request: PermissionRequest) -> list[dict[str, Any]]:
        """The request's file edits as `milk/requestPermission` carries them (Claude's file
        tools are previewed here from their input and the current text)."""
        edits = list(request.edits)
        workspace = self._turn.workspace
        if not edits and request.agent is Agent.CLAUDE and workspace is not None:
            try:
                edits = await claude_edits(request.tool, request.input, workspace, self._read)
            except Exception:  # a preview must never stop the question from being asked
                logger.warning("no preview for %s", request.tool, exc_info=True)
        return [_edit_wire(edit) for edit in edits]

    async def _read(self, path: Path) -> str | None:
        text = await self._turn.bridge.read_document(path)
        if text is not None:
            return text
        return await read_limited(self._turn.workspace or path.parent, path)

    def _status(self, request: PermissionRequest, status: ToolStatus) -> None:
        if not self._turn.parts:  # no agent is speaking: nothing to attach the call to
            return
        self._turn.apply(
            ToolCallEvent(request.tool_call_id, request.tool, dict(request.input), status)
        )

    def open_document_text(self, path: Path) -> str | None:
        return self._turn.bridge.open_document_text(path)

    async def read_document(self, path: Path) -> str | None:
        return await self._turn.bridge.read_document(path)

    async def apply_edit(self, path: Path, new_text: str) -> bool:
        before = await self._read(path)
        applied = await self._turn.bridge.apply_edit(path, new_text)
        if applied:  # undo needs it: the disk checkpoint does not see an unsaved buffer
            first = self._turn.editor_edits.get(path)
            self._turn.editor_edits[path] = (before if first is None else first[0], new_text)
        return applied


def _edit_wire(edit: FileEdit) -> dict[str, Any]:
    before, cut_before = capped(edit.before)
    after, cut_after = capped(edit.after)
    wire_edit: dict[str, Any] = {"uri": edit.path.as_uri()}
    if before is not None:
        wire_edit["before"] = before
    if after is not None:
        wire_edit["after"] = after
    if cut_before or cut_after:
        wire_edit["truncated"] = True
    return wire_edit
