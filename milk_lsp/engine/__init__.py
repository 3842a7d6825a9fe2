"""The engine: sessions, routing and one turn from the user's text to the stored answer.

A turn: resolve the session (busy first), route it, store the user's message, run the
local agent and/or Claude while folding their events into `milk/update`s, then store the
answers, the rebuilt bricks and the session in one transaction. The engine owns the
running turns, so `milk/cancel` and `$/cancelRequest` stop them at once; a turn run by
another server process on the same store is cancelled through a request in the store, which
that process polls for while the turn runs.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from milk_lsp.agents.base import (
    FailureReason,
    TurnFailed,
)
from milk_lsp.agents.claude.agent import ClaudeAgent, ClaudeSettings
from milk_lsp.agents.claude.cli import resolve_cli
from milk_lsp.agents.local.stream import LocalModelError
from milk_lsp.changes.blobs import CheckpointUnavailable
from milk_lsp.changes.book import Before, ChangeBook, ChangeTexts, UndoConflict
from milk_lsp.changes.tracker import TurnChange
from milk_lsp.config import MilkConfig
from milk_lsp.engine.claude_part import EscalationBook, claude_prompt_for_escalate
from milk_lsp.engine.local_part import LocalBook
from milk_lsp.engine.routing import (
    Plan,
    Route,
    RoutingState,
    escalate_plan,
    next_route,
    route_turn,
)
from milk_lsp.engine.turn import ClientBridge, Turn
from milk_lsp.local_model.embedded import (
    EmbeddedServer,
    EmbeddedSettings,
    Provider,
    resolve_provider,
)
from milk_lsp.prompts import local as prompts
from milk_lsp.prompts.context import (
    generate_nonce,
)
from milk_lsp.sessions.bricks import local_brick_with, rebuild_bricks
from milk_lsp.sessions.model import (
    Agent,
    RecordStatus,
    Role,
    Session,
    SessionState,
    TurnRecord,
    turn_ids,
)
from milk_lsp.sessions.store import SessionClaimed, SessionStore, StorageError, StoreReader
from milk_lsp.system.redact import redact
from milk_lsp.system.redact import register as redact_register
from milk_lsp.wire import (
    ChangeSummary,
    ChatParams,
    Escalated,
    EscalateParams,
    NextRoute,
    RequestErrorReason,
    StopReason,
    TurnError,
    TurnResult,
    Usage,
)
from milk_lsp.workspace.paths import fill_attachments, path_to_uri, shown_path, uri_to_path

if TYPE_CHECKING:
    from milk_lsp.agents.local.agent import LocalAgent

logger = logging.getLogger(__name__)

T = TypeVar("T")

NEED_MAX_CHARS = 400
"""The need is one sentence; a runaway tag body must not swell every hand-off."""
BRIEF_MAX_CHARS = 1000
"""Cap on `escalate_to_claude(reason)`, which becomes the brief in Claude's context."""
PROGRESS_CREATE_SECONDS = 5.0
"""How long the client may take to accept a work-done progress token."""
CANCEL_POLL_SECONDS = 0.5
"""How often a running turn looks for a cancel asked by another server process."""
FOREIGN_CANCEL_WAIT_SECONDS = 10.0
"""How long `milk/cancel` waits for another process to end the turn it was asked to cancel."""
FOREIGN_CANCEL_POLL_SECONDS = 0.2
UNDO_LOOKBACK_TURNS = 50
"""How far back "undo the last turn" looks for a turn with changes."""


class EngineError(Exception):
    """A request that cannot be served; `reason` is PROTOCOL.md's RequestFailed reason."""

    def __init__(
        self, reason: RequestErrorReason, message: str, data: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.data = data or {}
        """More for the client than the reason (e.g. the files of an `undo_conflict`)."""


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
    ) -> None:
        """Collaborators not given are made from the settings when first needed (the store
        and the local agent lazily: start-up stays quick); tests pass their own."""
        self.config = config
        self.bridge = bridge
        self.workspaces: list[str] = []
        self._store: SessionStore | None = store
        self._local: LocalAgent | None = local
        self._embedded: EmbeddedServer | None = None
        """The embedded model's server (`local.provider` embedded), made on first use."""
        self.claude = claude or ClaudeAgent()
        self._running: dict[str, asyncio.Task[TurnResult]] = {}
        self._allowed_tools: dict[str, set[str]] = {}
        """Tools the user allowed for the rest of a session, per session id."""
        self._background: set[asyncio.Task[None]] = set()
        self.escalations = EscalationBook(self)
        self.locals = LocalBook(self)
        self.changes = ChangeBook(self)

    # ---- collaborators --------------------------------------------------------------

    @property
    def store(self) -> SessionStore:
        if self._store is None:
            try:
                self._store = SessionStore(self.config.storage_path())
            except StorageError as exc:
                raise EngineError(RequestErrorReason.STORAGE_FAILED, str(exc)) from exc
        return self._store

    @property
    def local(self) -> LocalAgent:
        if self._local is None:
            # httpx is imported on first use: start-up stays quick for the editor.
            from milk_lsp.agents.local.agent import LocalAgent, LocalSettings

            cfg = self.config.local
            redact_register(cfg.api_key)
            embedded = self._embedded if self._embedded and self._embedded.base_url else None
            self._local = LocalAgent(
                LocalSettings(
                    base_url=embedded.base_url if embedded and embedded.base_url else cfg.base_url,
                    model=embedded.alias if embedded else cfg.model,
                    api_key=cfg.api_key,
                    max_tool_rounds=cfg.max_tool_rounds,
                    read_timeout_seconds=cfg.request_timeout_seconds,
                    text_tool_calls=cfg.text_tool_calls,
                    temperature=cfg.temperature,
                )
            )
        return self._local

    async def local_provider(self) -> Provider:
        return await resolve_provider(self.config.local)

    @property
    def embedded(self) -> EmbeddedServer | None:
        """The embedded model's server if one was made (for `milk/status`)."""
        return self._embedded

    @asynccontextmanager
    async def local_model(self, turn: Turn) -> AsyncIterator[TurnFailed | None]:
        """Around a local part: the agent pointed at the provider's server, the embedded
        one started ("loading model…") and held while the part runs. A model that cannot
        start is yielded as the part's failure."""
        if await self.local_provider() != "embedded":
            if self._embedded is not None:  # auto found a server after all
                await self._point_local_at(self.config.local.base_url)
            yield None
            return
        if self._embedded is None:
            self._embedded = EmbeddedServer(EmbeddedSettings.of(self.config.local))
        server = self._embedded
        loading = server.state != "running"
        if loading:
            self.bridge.progress_report(turn.progress_token, "loading model…")
        failure: TurnFailed | None = None
        try:
            base_url = await server.acquire(
                lambda message: self.bridge.progress_report(turn.progress_token, message),
                turn.notice,
            )
        except LocalModelError as exc:
            failure = TurnFailed(exc.reason, exc.message)
        if failure is not None:
            yield failure
            return
        try:
            if loading and server.load_seconds is not None:
                turn.notice(
                    "info",
                    f"Loaded the embedded model {server.alias} in {server.load_seconds:.1f} s.",
                )
            await self._point_local_at(base_url)
            yield None
        finally:
            server.release()

    async def _point_local_at(self, base_url: str) -> None:
        """Drop the local agent when it talks to another server (the embedded one restarted
        on a new port, or the provider changed); the next use makes it afresh."""
        if self._local is not None and self._local.settings.base_url != base_url:
            await self._drop_local()

    async def _drop_local(self) -> None:
        """The next use makes the local agent afresh; the old one's client is closed now, or
        after the other turns still streaming through it."""
        local, self._local = self._local, None
        if local is None:
            return
        current = asyncio.current_task()
        running = [t for t in self._running.values() if not t.done() and t is not current]
        if running:
            closer = asyncio.create_task(_close_after(running, local))
            self._background.add(closer)
            closer.add_done_callback(self._background.discard)
        else:
            await local.aclose()

    def claude_settings(self) -> ClaudeSettings:
        cfg = self.config.claude
        return ClaudeSettings(
            path=cfg.path,
            model=cfg.model,
            allowed_tools=tuple(cfg.allowed_tools),
            add_dirs=tuple(cfg.add_dirs),
            skip_permissions=cfg.skip_permissions,
        )

    async def set_config(self, config: MilkConfig) -> None:
        """Take new settings; collaborators that depend on changed ones are rebuilt."""
        old = self.config
        self.config = config
        if old.local != config.local:
            await self._drop_local()
        embedded_changed = EmbeddedSettings.of(old.local) != EmbeddedSettings.of(config.local)
        if self._embedded is not None and (
            embedded_changed or old.local.provider != config.local.provider
        ):
            self._embedded.retire()  # stops now, or when the turns using it end
            self._embedded = None
        if old.storage_path() != config.storage_path() and self._store is not None:
            store, self._store = self._store, None
            store.close()

    async def aclose(self) -> None:
        for task in list(self._running.values()):
            task.cancel()
        for task in list(self._running.values()):
            with suppress(asyncio.CancelledError, Exception):
                await task
        if self._local is not None:
            await self._local.aclose()
        if self._embedded is not None:
            await self._embedded.aclose()
        if self._store is not None:
            self._store.close()

    # ---- workspaces and sessions ----------------------------------------------------

    def set_workspaces(self, folders: list[str]) -> None:
        self.workspaces = [str(Path(folder).resolve()) for folder in folders]

    def resolve_workspace(self, uri: str | None) -> str:
        """A workspace folder URI (or the first folder) as a resolved absolute path."""
        if uri is None:
            if not self.workspaces:
                raise EngineError(
                    RequestErrorReason.WORKSPACE_UNKNOWN,
                    "no workspace folder: open a folder in the editor or pass workspaceFolder",
                )
            return self.workspaces[0]
        path = uri_to_path(uri)
        try:
            found = path is not None and path.is_dir()
        except OSError:  # a name too long for the file system, say: no such folder
            found = False
        if path is None or not found:
            raise EngineError(
                RequestErrorReason.WORKSPACE_UNKNOWN, f"workspace folder not found: {uri}"
            )
        return str(path.resolve())

    def new_session(self, workspace_uri: str | None, title: str | None) -> Session:
        workspace = self.resolve_workspace(workspace_uri)
        return self.storage(
            lambda: self.store.create_session(workspace, title or "", generate_nonce())
        )

    def list_sessions(self, workspace_uri: str | None) -> list[Session]:
        if workspace_uri is None:
            return self.storage(lambda: self.store.list_sessions(self.workspaces or None))
        workspace = self.resolve_workspace(workspace_uri)
        return self.storage(lambda: self.store.list_sessions([workspace]))

    def get_session(self, session_id: str) -> Session:
        session = self.storage(lambda: self.store.get_session(session_id))
        if session is None:
            raise EngineError(
                RequestErrorReason.SESSION_NOT_FOUND, f"no session with id {session_id}"
            )
        return session

    def session_records(self, session_id: str, turn_limit: int) -> list[TurnRecord]:
        return self.storage(lambda: self.store.recent_turn_records(session_id, turn_limit))

    def turn_infos(self, session_id: str, records: list[TurnRecord]) -> dict[str, dict[str, Any]]:
        """How the turns of `records` ended (`turnInfo`), by turn id."""
        return self.storage(lambda: self.store.turn_infos(session_id, turn_ids(records)))

    def last_undoable_turn(self, session_id: str) -> str | None:
        """The newest of the session's recent turns that changed files and is not undone."""
        records = self.session_records(session_id, UNDO_LOOKBACK_TURNS)
        infos = self.turn_infos(session_id, records)
        for turn_id in reversed(turn_ids(records)):
            info = infos.get(turn_id) or {}
            if info.get("changes") and info.get("undone") is not True:
                return turn_id
        return None

    async def turn_changes(self, session_id: str, turn_id: str) -> tuple[list[ChangeTexts], bool]:
        """`milk/turn/changes`: the files the turn changed with their texts, and whether
        the turn was undone."""
        session = await asyncio.to_thread(self.get_session, session_id)
        try:
            return await self.changes.changes(session, turn_id)
        except LookupError:
            raise _unknown_turn(session_id, turn_id) from None

    async def turn_undo(self, session_id: str, turn_id: str, force: bool) -> list[str]:
        """`milk/turn/undo`: put back the files the turn changed; the paths restored."""
        if self.is_busy(session_id):
            raise _busy(session_id)
        session = await asyncio.to_thread(self.get_session, session_id)
        try:
            return await self.changes.undo(session, turn_id, force)
        except LookupError:
            raise _unknown_turn(session_id, turn_id) from None
        except UndoConflict as exc:
            uris = [Path(path).as_uri() for path in exc.paths]
            names = ", ".join(shown_path(path, session.workspace_folder) for path in exc.paths)
            raise EngineError(
                RequestErrorReason.UNDO_CONFLICT,
                f"{len(uris)} file(s) changed after the turn: {names}. Undo with force "
                "to put the turn's versions back anyway (the later changes are lost).",
                {"files": uris},
            ) from None
        except CheckpointUnavailable as exc:
            raise EngineError(RequestErrorReason.UNDO_UNAVAILABLE, f"cannot undo: {exc}") from None

    async def delete_session(self, session_id: str) -> None:
        workspace = self.get_session(session_id).workspace_folder
        await self.cancel(session_id)
        self.storage(lambda: self.store.delete_session(session_id))
        self._allowed_tools.pop(session_id, None)
        task = asyncio.create_task(asyncio.to_thread(self.changes.prune, workspace))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def is_busy(self, session_id: str) -> bool:
        task = self._running.get(session_id)
        return task is not None and not task.done()

    def storage(self, action: Callable[[], T]) -> T:
        """Run a store call, turning its failure into `storage_failed`. The store raises
        `StorageError` for every SQLite and disk failure; `OSError` is the belt to that."""
        try:
            return action()
        except (StorageError, OSError) as exc:
            raise EngineError(RequestErrorReason.STORAGE_FAILED, str(exc)) from exc

    async def stored(self, action: Callable[[], T]) -> T:
        """`storage`, run in a worker thread: a turn's store calls stay off the event loop,
        so one session's disk never stalls another's stream (the store is thread-safe)."""
        return await asyncio.to_thread(self.storage, action)

    # ---- turns ----------------------------------------------------------------------

    async def chat(self, params: ChatParams) -> TurnResult:
        if params.session_id is not None and self.is_busy(params.session_id):
            raise _busy(params.session_id)
        session = self._session_for_chat(params)
        if self.is_busy(session.id):
            raise _busy(session.id)
        plan = self._route(session, params.route or self.config.route)
        attached = fill_attachments(
            params.context, Path(session.workspace_folder), self.bridge.open_document_text
        )
        text = prompts.user_message(params.text, attached, session.workspace_folder)
        return await self._run(session, text, plan, display_text=params.text)

    async def escalate(self, params: EscalateParams) -> TurnResult:
        if self.is_busy(params.session_id):
            raise _busy(params.session_id)
        session = self.get_session(params.session_id)
        session.user_escalated = True
        reason = params.reason or "user asked"
        plan = escalate_plan(reason)
        text = params.text or claude_prompt_for_escalate(session.current_need)
        return await self._run(session, text, plan, display_text=params.text or text)

    async def cancel(self, session_id: str) -> bool:
        task = self._running.get(session_id)
        if task is None or task.done():
            return await self._cancel_elsewhere(session_id)
        task.cancel()
        with suppress(asyncio.CancelledError):
            await asyncio.shield(task)
        return True

    async def _cancel_elsewhere(self, session_id: str) -> bool:
        """Cancel the session's turn run by another server process on the same store (a
        second editor window): ask through the store, then wait until its claim is gone.
        False when no other live process runs a turn there, or it did not end in time."""
        turn_id = await self.stored(lambda: self.store.request_cancel(session_id))
        if turn_id is None:
            return False
        loop = asyncio.get_running_loop()
        deadline = loop.time() + FOREIGN_CANCEL_WAIT_SECONDS
        while loop.time() < deadline:
            if not await self.stored(lambda: self.store.turn_claimed(session_id, turn_id)):
                return True
            await asyncio.sleep(FOREIGN_CANCEL_POLL_SECONDS)
        logger.warning("turn %s of session %s did not end when cancelled", turn_id, session_id)
        return False

    async def _watch_cancel(
        self, session_id: str, turn_id: str, task: asyncio.Task[TurnResult]
    ) -> None:
        """Cancel the turn, as `cancel` does, once another process asked for it in the store."""
        failed = False
        while not task.done():
            await asyncio.sleep(CANCEL_POLL_SECONDS)
            try:
                store = self.store
                requested = await asyncio.to_thread(store.cancel_requested, session_id, turn_id)
            except (StorageError, EngineError, OSError) as exc:
                if not failed:  # once per turn: the poll runs twice a second
                    logger.warning("turn %s: cannot look for cancel requests: %s", turn_id, exc)
                failed = True
                continue
            if requested:
                task.cancel()
                return

    def _session_for_chat(self, params: ChatParams) -> Session:
        if params.session_id is not None:
            return self.get_session(params.session_id)
        workspace = self.resolve_workspace(params.workspace_folder)
        sessions = self.storage(lambda: self.store.list_sessions([workspace]))
        if sessions:
            return sessions[0]
        return self.new_session(path_to_uri(workspace), None)

    def _route(self, session: Session, requested: Route) -> Plan:
        current = RoutingState(
            session.state, session.user_escalated, bool(session.claude_session_id)
        )
        plan, after = route_turn(current, requested)
        session.state, session.user_escalated = after.state, after.user_escalated
        return plan

    async def _run(self, session: Session, text: str, plan: Plan, display_text: str) -> TurnResult:
        turn_id = str(uuid.uuid4())
        task = asyncio.create_task(self._turn(session, turn_id, text, plan, display_text))
        self._running[session.id] = task
        watch = asyncio.create_task(self._watch_cancel(session.id, turn_id, task))
        self._background.add(watch)
        watch.add_done_callback(self._background.discard)
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            task.cancel()
            with suppress(asyncio.CancelledError):
                await task
            raise
        finally:
            watch.cancel()
            if self._running.get(session.id) is task:
                del self._running[session.id]

    async def _turn(
        self, session: Session, turn_id: str, text: str, plan: Plan, display_text: str
    ) -> TurnResult:
        if not session.escalation_nonce:
            session.escalation_nonce = generate_nonce()
        user_record = TurnRecord(turn_id, Role.USER, plan.agent, display_text)
        turn = Turn(
            session.id,
            turn_id,
            session.escalation_nonce,
            self.bridge,
            on_need=lambda need: self._record_need(session, turn, user_record, need),
            workspace=Path(session.workspace_folder),
        )
        turn.allowed_tools = self._allowed_tools.setdefault(session.id, set())
        begin = asyncio.ensure_future(
            asyncio.to_thread(self.store.begin_turn, session, user_record)
        )
        checkpoint = asyncio.ensure_future(self.changes.before_turn(session))
        cancelled_at_start = False
        try:
            try:
                await asyncio.shield(begin)
            except asyncio.CancelledError:
                # Cancelled while the message was being stored: let the store finish, then
                # end the turn properly below (claimed, so it must send `turn_ended`).
                cancelled_at_start = True
                await _uncancellable(begin)
        except SessionClaimed as exc:
            checkpoint.cancel()
            if cancelled_at_start:
                raise asyncio.CancelledError from exc
            raise EngineError(
                RequestErrorReason.SESSION_BUSY, f"{exc}; cancel it there or wait"
            ) from exc
        except (StorageError, EngineError, OSError) as exc:
            checkpoint.cancel()
            if cancelled_at_start:
                raise asyncio.CancelledError from exc
            raise EngineError(
                RequestErrorReason.STORAGE_FAILED, f"could not store the message: {exc}"
            ) from exc
        try:  # the workspace as the turn found it: what undo goes back to
            before, warning = await asyncio.shield(checkpoint)
        except asyncio.CancelledError:
            cancelled_at_start = True
            before, warning = await _uncancellable(checkpoint)
        turn.update("turn_started", agent=plan.agent.value, route=plan.route, reason=plan.reason)
        if cancelled_at_start:
            return await self._finish(session, turn, "cancelled", None, before)
        if warning:
            turn.notice("warning", warning)
        if session.damaged:  # the end of this turn writes the session's fields back whole
            turn.notice("warning", _damaged_notice(session.damaged))
        title = "milk: Claude" if plan.agent is Agent.CLAUDE else "milk: local"
        stop: StopReason = "end_turn"
        escalated: Escalated | None = None
        try:
            with suppress(TimeoutError):  # a client that never answers gets no progress
                turn.progress_token = await asyncio.wait_for(
                    self.bridge.progress_begin(title), PROGRESS_CREATE_SECONDS
                )
            if plan.agent is Agent.LOCAL:
                outcome = await self.locals.run(session, turn, text, plan, display_text)
                hand_off = await self.locals.hand_off(turn, plan, outcome, display_text)
                if hand_off is not None:
                    escalated = Escalated(by=hand_off.by, reason=hand_off.reason)
                    session.escalation_brief = _cap(hand_off.brief, BRIEF_MAX_CHARS)
                    if not session.current_need:  # Claude gets at least the user's ask as goal
                        session.current_need = _cap(" ".join(display_text.split()), NEED_MAX_CHARS)
                        session.current_need_set_at = user_record.position
                        turn.update("need", currentNeed=session.current_need)
                    self._refresh_local_brick(session, turn)
                    self.bridge.progress_report(turn.progress_token, "escalating to Claude")
                    stop = await self.escalations.run(
                        session, turn, text, hand_off.by, hand_off.reason
                    )
                else:
                    stop = "error" if turn.failure else "end_turn"
            else:
                escalated = Escalated(by=plan.escalated_by or "user", reason=plan.escalation_reason)
                self.bridge.progress_report(turn.progress_token, "escalating to Claude")
                stop = await self.escalations.run(
                    session, turn, text, plan.escalated_by or "user", plan.escalation_reason
                )
        except asyncio.CancelledError:
            stop = "cancelled"
            turn.flush_text()
        except (EngineError, StorageError) as exc:
            storage = (
                isinstance(exc, StorageError) or exc.reason is RequestErrorReason.STORAGE_FAILED
            )
            reason = FailureReason.STORAGE_FAILED if storage else FailureReason.INTERNAL
            turn.failure = (reason, str(exc))
            stop = "error"
        except Exception as exc:  # a bug must end the turn, not the server
            logger.exception("turn %s failed", turn_id)
            turn.failure = (FailureReason.INTERNAL, f"internal error: {exc}")
            stop = "error"
        if turn.failure is not None and stop != "cancelled":
            stop = "error"
        return await self._finish(session, turn, stop, escalated, before)

    def _record_need(self, session: Session, turn: Turn, user: TurnRecord, need: str) -> None:
        need = _cap(" ".join(need.split()), NEED_MAX_CHARS)
        if not need or need == session.current_need:
            return
        session.current_need = need
        session.current_need_set_at = user.position
        if turn.part.agent is Agent.LOCAL:
            session.need_changed_since_claude = True
        turn.update("need", currentNeed=need)

    async def _finish(
        self,
        session: Session,
        turn: Turn,
        stop: StopReason,
        escalated: Escalated | None,
        before: Before | None,
    ) -> TurnResult:
        """Save the turn and end it. Whatever saving does, the turn ends: its failure gets
        the error notice, `turn_ended` and the progress end, and the claim is released."""
        last_agent = turn.parts[-1].agent if turn.parts else Agent.LOCAL
        if stop == "cancelled":
            turn.close_open_calls()
        if escalated is not None and stop == "error":
            # A failed escalation must not keep sending the session's turns to Claude.
            session.user_escalated = False
            if session.state is SessionState.ESCALATION_WAITING:
                session.state = SessionState.ROUTING
        changes = await _uncancellable(
            asyncio.to_thread(self.changes.after_turn, session, turn, before)
        )
        summaries = [_summary(change) for change in changes]
        if summaries:
            turn.update("changes", changes=[item.to_wire() for item in summaries])
        try:
            await _uncancellable(
                asyncio.to_thread(self._save, session, turn, stop, last_agent, escalated, changes)
            )
        except (StorageError, EngineError, OSError) as exc:
            logger.error("turn %s: storage failed: %s", turn.turn_id, exc)
            self._release(session, turn)
            turn.failure = (
                FailureReason.STORAGE_FAILED,
                f"the turn could not be saved: {exc}. Free disk space or check "
                f"{self.config.storage_path()}.",
            )
            stop = "error"
        except Exception as exc:  # a bug in saving must still end the turn
            logger.exception("turn %s: saving failed", turn.turn_id)
            self._release(session, turn)
            turn.failure = (FailureReason.INTERNAL, f"internal error saving the turn: {exc}")
            stop = "error"
        error = _turn_error(stop, turn)
        if error is not None:
            turn.notice("error", error.message)
        turn.update("turn_ended", agent=last_agent.value, stopReason=stop)
        self.bridge.progress_end(turn.progress_token, stop.replace("_", " "))
        return TurnResult(
            session_id=session.id,
            turn_id=turn.turn_id,
            agent=last_agent.value,
            stop_reason=stop,
            text=redact(turn.text),
            escalated=escalated,
            usage=_usage(turn),
            error=error,
            changes=summaries or None,
            next_route=self.next_route(session),
        )

    def next_route(self, session: Session) -> NextRoute:
        agent, reason = next_route(
            RoutingState(session.state, session.user_escalated, bool(session.claude_session_id))
        )
        return NextRoute(agent=agent.value, reason=reason)

    def _save(
        self,
        session: Session,
        turn: Turn,
        stop: StopReason,
        last_agent: Agent,
        escalated: Escalated | None,
        changes: list[TurnChange],
    ) -> None:
        """Store the turn's percepts and answers, its final status, how it ended (what a
        reloaded chat shows) and the session."""
        status = {
            "end_turn": RecordStatus.OK,
            "max_turns": RecordStatus.OK,
            "cancelled": RecordStatus.CANCELLED,
            "error": RecordStatus.ERROR,
        }[stop]
        answers = [part.record(turn.turn_id) for part in turn.parts if not part.is_empty]
        if session.state in (SessionState.LOCAL, SessionState.ESCALATION):
            session.state = SessionState.ROUTING
        session.active_agent = last_agent
        if turn.percepts:
            for agent in (Agent.LOCAL, Agent.CLAUDE):
                texts = [text for who, text in turn.percepts if who is agent]
                if texts:
                    self.store.add_percepts(session.workspace_folder, texts, agent)
        info: dict[str, Any] | None = None
        try:  # how the turn ended is for the reloaded view: a bug there must not lose the turn
            info = _turn_info(turn, stop, last_agent, escalated, changes)
            if turn.part_of(Agent.LOCAL) is not None and self._local is not None:
                model = self._local.model_in_use
                if model:
                    info["model"] = model
        except Exception:
            logger.exception("turn %s: its info is not stored", turn.turn_id)
        self.store.finish_turn(
            session, turn.turn_id, status, answers, self._rebuild_bricks, info=info
        )

    def _release(self, session: Session, turn: Turn) -> None:
        """Give up the session's claim after a failed save (never leave it claimed)."""
        try:
            self.store.release_turn(session.id, turn.turn_id)
        except (StorageError, EngineError, OSError) as exc:
            # This process's own claim does not block its next turn; others see it until
            # this process ends.
            logger.error("turn %s: could not release the session: %s", turn.turn_id, exc)

    def _rebuild_bricks(self, reader: StoreReader, session: Session) -> tuple[str, str]:
        return rebuild_bricks(reader, session, self.config.context_budget_chars)

    def _refresh_local_brick(self, session: Session, turn: Turn) -> None:
        """Before a hand-off: the local brick must include what the local agent did in this
        very turn (its answer is not stored yet), or Claude would not see it."""
        local_part = turn.part_of(Agent.LOCAL)
        pending = [] if local_part is None else [local_part.record(turn.turn_id)]
        session.last_local_summary = local_brick_with(
            pending, self.store.reader(), session, self.config.context_budget_chars
        )

    def claude_path(self) -> str | None:
        return resolve_cli(self.claude_settings()).path


async def _close_after(turns: list[asyncio.Task[TurnResult]], local: LocalAgent) -> None:
    await asyncio.wait(turns)
    await local.aclose()


async def _uncancellable(work: Awaitable[T]) -> T:
    """Wait for `work` to the end even when the turn is cancelled meanwhile: a turn being
    saved must be saved, then end with `turn_ended` (the cancel is already its stop)."""
    future = asyncio.ensure_future(work)
    while True:
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            if future.done():
                return future.result()


def _usage(turn: Turn) -> Usage | None:
    if not turn.usage.seen:
        return None
    return Usage(
        input_tokens=turn.usage.input_tokens,
        output_tokens=turn.usage.output_tokens,
        cache_read_tokens=turn.usage.cache_read_tokens,
        cache_creation_tokens=turn.usage.cache_creation_tokens,
        cost_usd=turn.usage.cost_usd,
    )


def _turn_error(stop: StopReason, turn: Turn) -> TurnError | None:
    if stop != "error" or turn.failure is None:
        return None
    reason, message = turn.failure
    return TurnError(reason=reason.value, message=redact(message))


def _summary(change: TurnChange) -> ChangeSummary:
    return ChangeSummary(
        uri=Path(change.path).as_uri(),
        kind=change.kind,
        added=change.added,
        removed=change.removed,
    )


def _turn_info(
    turn: Turn,
    stop: StopReason,
    last_agent: Agent,
    escalated: Escalated | None,
    changes: list[TurnChange],
) -> dict[str, Any]:
    """How the turn ended, stored with it (`milk/session/get` returns it as `turnInfo`)."""
    info: dict[str, Any] = {"agent": last_agent.value, "stopReason": stop}
    if escalated is not None:
        info["escalated"] = {**escalated.to_wire(), **(turn.escalation_shown or {})}
    error = _turn_error(stop, turn)
    if error is not None:
        info["error"] = error.to_wire()
    usage = _usage(turn)
    if usage is not None:
        info["usage"] = usage.to_wire()
    if changes:
        info["changes"] = [change.to_dict() for change in changes]
    return info


def _cap(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _damaged_notice(fields: list[str]) -> str:
    return (
        f"Part of this session's stored state could not be read ({', '.join(fields)}) and "
        "was replaced by defaults; this turn saves the session again."
    )


def _unknown_turn(session_id: str, turn_id: str) -> EngineError:
    return EngineError(
        RequestErrorReason.TURN_NOT_FOUND,
        f"no recorded turn {turn_id} in session {session_id} (turns from before milk kept"
        " changes cannot be reviewed or undone)",
    )


def _busy(session_id: str) -> EngineError:
    return EngineError(
        RequestErrorReason.SESSION_BUSY,
        f"session {session_id} is still running a turn; cancel it or wait",
    )
