"""The engine: what the doors ask of milk, independent of the wire.

`Engine` is the facade the four doors share, and the wiring diagram: it makes the parts and
hands each the few collaborators it uses (`Sessions`, `LocalModels`, `ChangeBook`, the two
agent parts, `RunningTurns`, `TurnRunner`). A request is routed here, then runs as the
session's task through `TurnRunner`, the turn's spine; the doors get sessions through
`engine.sessions` (async, with storage errors already mapped).
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from milk_lsp import wire
from milk_lsp.agents.claude.agent import ClaudeAgent
from milk_lsp.changes.book import ChangeBook, ChangeTexts
from milk_lsp.config import MilkConfig
from milk_lsp.doors import LSP, Door
from milk_lsp.engine import claude_part
from milk_lsp.engine.advisor import Advisor
from milk_lsp.engine.claude_part import ClaudePart, claude_prompt_for_escalate
from milk_lsp.engine.local.part import LocalPart
from milk_lsp.engine.routing import escalate_plan, plan_for
from milk_lsp.engine.runner import TurnRunner
from milk_lsp.engine.running import LiveFeed, RunningTurns
from milk_lsp.engine.status import collect_status
from milk_lsp.engine.turn import ClientBridge
from milk_lsp.errors import EngineError, busy
from milk_lsp.local_model.provider import LocalModels
from milk_lsp.prompts import local as prompts
from milk_lsp.prompts.local import claude_notes, demotion_summary
from milk_lsp.sessions.model import Session
from milk_lsp.sessions.service import Sessions
from milk_lsp.sessions.store import SessionStore
from milk_lsp.wire import ChatParams, EscalateParams, TurnResult
from milk_lsp.workspace.paths import fill_attachments

__all__ = ["Engine", "EngineError"]

if TYPE_CHECKING:  # httpx loads with the agent, on the first local turn
    from milk_lsp.agents.local.agent import LocalAgent


class Engine:
    """Sessions and turns, independent of the wire."""

    def __init__(
        self,
        config: MilkConfig,
        bridge: ClientBridge,
        *,
        store: SessionStore | None = None,
        local: LocalAgent | None = None,
        claude: ClaudeAgent | None = None,
        door: Door = LSP,
    ) -> None:
        """Collaborators not given are made from the settings when first needed (the store
        and the local agent lazily: start-up stays quick); tests pass their own."""
        self.config = config
        self.bridge = bridge
        self.door = door
        """How the front door names settings and the way to Claude (`milk_lsp.doors`); the
        LSP server sets it at `initialize`, before any turn."""
        settings = self._settings
        self.sessions = Sessions(settings, store)
        self.local_models = LocalModels(settings, local, door=self._door)
        self.changes = ChangeBook(settings, self.sessions, bridge)
        self.claude = ClaudePart(self.sessions, claude or ClaudeAgent(), self._door)
        self.running = RunningTurns(self.sessions)
        self.live = LiveFeed(self.sessions, bridge.send_update, self._door, self.running)
        """Every turn on this server's folders shown live in every door (`watch()` starts
        the relay of the other processes' turns)."""
        local_part = LocalPart(self.sessions, self.local_models, self.claude_path, self._door)
        advisor = Advisor(local_part, self.claude, self.sessions, self.claude_path)
        self._runner = TurnRunner(
            bridge, self.sessions, self.changes, local_part, self.claude, advisor, self.live.publish
        )

    def _settings(self) -> MilkConfig:
        return self.config

    def _door(self) -> Door:
        return self.door

    def claude_path(self) -> str | None:
        """The `claude` CLI the current settings run (None: not found)."""
        return claude_part.claude_path(self.config.claude)

    async def set_config(self, config: MilkConfig) -> None:
        """Take new settings; collaborators that depend on changed ones are rebuilt."""
        old, self.config = self.config, config
        await self.local_models.settings_changed(old, config)
        self.sessions.settings_changed(old, config)

    async def aclose(self) -> None:
        await self.running.aclose()
        await self.live.aclose()
        await self.local_models.aclose()
        self.sessions.close()

    # ---- turns ----------------------------------------------------------------------

    def is_busy(self, session_id: str) -> bool:
        return self.running.is_busy(session_id)

    async def chat(self, params: ChatParams) -> TurnResult:
        session = await self.sessions.for_chat(params.session_id, params.workspace_folder)
        if self.running.is_busy(session.id):
            raise busy(session.id)
        plan = plan_for(session, params.route or self.config.route)
        attached = fill_attachments(
            params.context, Path(session.workspace_folder), self.bridge.open_document_text
        )
        text = prompts.user_message(params.text, attached, session.workspace_folder)
        turn_id = str(uuid.uuid4())
        work = self._runner.run(session, turn_id, text, plan, params.text, self.config)
        return await self.running.run(session.id, turn_id, work)

    async def escalate(self, params: EscalateParams) -> TurnResult:
        if self.running.is_busy(params.session_id):
            raise busy(params.session_id)
        session = await self.sessions.get(params.session_id)
        session.user_escalated = True
        plan = escalate_plan(params.reason or "user asked")
        text = params.text or claude_prompt_for_escalate(session.current_need)
        turn_id = str(uuid.uuid4())
        work = self._runner.run(session, turn_id, text, plan, params.text or text, self.config)
        return await self.running.run(session.id, turn_id, work)

    async def cancel(self, session_id: str) -> bool:
        return await self.running.cancel(session_id)

    # ---- what the doors show --------------------------------------------------------

    async def status(self, *, check_login: bool = False) -> wire.Status:
        """`milk/status`: the local model's server and `claude` (its login too when
        `check_login`), checked now."""
        return await collect_status(
            self._settings, self.local_models, self.door, check_login=check_login
        )

    async def context_preview(self, session_id: str, reason: str | None) -> wire.ContextPreview:
        """`milk/context`: exactly what the next escalation would hand Claude."""
        session = await self.sessions.get(session_id)
        if self.is_busy(session_id):
            raise EngineError(
                wire.RequestErrorReason.SESSION_BUSY, f"session {session_id} is running a turn"
            )
        preview = await self.claude.preview(session, reason, self.config.claude)
        returning = demotion_summary(session.active_agent, session.last_claude_summary)
        preview.local_notes = claude_notes(returning) or None
        return preview

    async def turn_changes(self, session_id: str, turn_id: str) -> tuple[list[ChangeTexts], bool]:
        """`milk/turn/changes`: the files the turn changed with their texts, and whether
        the turn was undone."""
        session = await self.sessions.get(session_id)
        return await self.changes.changes(session, turn_id)

    async def turn_undo(self, session_id: str, turn_id: str, force: bool) -> list[str]:
        """`milk/turn/undo`: put back the files the turn changed; the paths restored."""
        if self.is_busy(session_id):
            raise busy(session_id)
        session = await self.sessions.get(session_id)
        restored = await self.changes.undo(session, turn_id, force)
        if restored:
            await self._drop_undone_need(session, turn_id)
            await self.sessions.rebuild_bricks(session)  # the turn's lines say it was undone
        return restored

    async def _drop_undone_need(self, session: Session, turn_id: str) -> None:
        """An undone turn's goal is no longer the session's: the goal before it comes back
        (`:MilkEscalate` with no text must not carry on with an undone request)."""
        info = await self.sessions.turn_info(session.id, turn_id) or {}
        need_set = info.get("needSet")
        if not isinstance(need_set, dict) or need_set.get("need") != session.current_need:
            return
        session.current_need = str(need_set.get("before") or "")
        session.current_need_set_at = int(need_set.get("beforeAt") or 0)
        await self.sessions.save(session)

    async def last_undoable_turn(self, session_id: str) -> str | None:
        return await self.changes.last_undoable_turn(session_id)

    async def delete_session(self, session_id: str) -> None:
        workspace = (await self.sessions.get(session_id)).workspace_folder
        await self.cancel(session_id)
        await self.sessions.delete(session_id)
        self._runner.forget(session_id)
        self.running.spawn(_prune(self.changes, workspace))


async def _prune(changes: ChangeBook, workspace: str) -> None:
    await asyncio.to_thread(changes.prune, workspace)
