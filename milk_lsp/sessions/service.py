"""`Sessions`: the sessions of the open workspaces, for the doors and the turn's parts.

The one home of storage errors: every call runs the store in a worker thread (one
session's disk never stalls another's stream; the store is thread-safe) and leaves as
`EngineError(storage_failed)` when SQLite or the disk fails. The store opens lazily (start-up
stays quick) and again when `storageDir` changes.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from milk_lsp.config import MilkConfig
from milk_lsp.errors import EngineError, storage_failed
from milk_lsp.sessions.bricks import local_brick_with
from milk_lsp.sessions.elsewhere import LiveUpdate
from milk_lsp.sessions.model import (
    Agent,
    RecordStatus,
    Session,
    TurnRecord,
    generate_nonce,
    turn_ids,
)
from milk_lsp.sessions.stats import TurnRoute, build_stats, today
from milk_lsp.sessions.store import SessionClaimed, SessionStore, StorageError
from milk_lsp.wire import RequestErrorReason, Stats
from milk_lsp.workspace.paths import path_to_uri, uri_to_path

logger = logging.getLogger(__name__)

T = TypeVar("T")


class Sessions:
    """Sessions, records and turn infos, async and with one error mapping."""

    def __init__(self, config: Callable[[], MilkConfig], store: SessionStore | None = None):
        """`config` gives the current settings (the storage path and the brick budget)."""
        self._config = config
        self._store = store
        self._opening = threading.Lock()  # requests run in worker threads: open one store
        self.workspaces: list[str] = []
        self.watched: set[str] = set()
        """Folders of sessions a door has open besides `workspaces` (ACP's session cwd)."""

    # ---- the store ------------------------------------------------------------------

    @property
    def store(self) -> SessionStore:
        """The store, opened on first use; `EngineError(storage_failed)` when it cannot be."""
        with self._opening:
            if self._store is None:
                try:
                    self._store = SessionStore(self._config().storage_path())
                except StorageError as exc:
                    raise storage_failed(exc) from exc
            return self._store

    def settings_changed(self, old: MilkConfig, new: MilkConfig) -> None:
        """A new `storageDir` closes the store; the next call opens the new one."""
        with self._opening:
            if old.storage_path() != new.storage_path() and self._store is not None:
                store, self._store = self._store, None
                store.close()

    def close(self) -> None:
        if self._store is not None:
            self._store.close()

    async def _call(self, action: Callable[[SessionStore], T]) -> T:
        return await asyncio.to_thread(self.call_now, action)

    def call_now(self, action: Callable[[SessionStore], T]) -> T:
        """`action` on the store in this thread, its failure as `storage_failed` (for code
        that already runs in a worker thread). `OSError` is the belt to `StorageError`."""
        try:
            return action(self.store)
        except (StorageError, OSError) as exc:
            raise storage_failed(exc) from exc

    # ---- workspaces -----------------------------------------------------------------

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

    # ---- sessions -------------------------------------------------------------------

    async def new(self, workspace_uri: str | None, title: str | None) -> Session:
        workspace = self.resolve_workspace(workspace_uri)
        return await self._call(
            lambda store: store.create_session(workspace, title or "", generate_nonce())
        )

    async def of_workspace(self, workspace_uri: str | None) -> list[Session]:
        """The sessions of a workspace folder (of all open ones when None), newest first."""
        if workspace_uri is None:
            folders = self.workspaces or None
            return await self._call(lambda store: store.list_sessions(folders))
        workspace = self.resolve_workspace(workspace_uri)
        return await self._call(lambda store: store.list_sessions([workspace]))

    async def get(self, session_id: str) -> Session:
        return await asyncio.to_thread(self.get_now, session_id)

    def get_now(self, session_id: str) -> Session:
        """`get` on the caller's thread: for the few reads a synchronous callback makes
        (what ACP shows of a session after a turn: its mode and title), one indexed row."""
        session = self.call_now(lambda store: store.get_session(session_id))
        if session is None:
            raise EngineError(
                RequestErrorReason.SESSION_NOT_FOUND, f"no session with id {session_id}"
            )
        return session

    async def for_chat(self, session_id: str | None, workspace_uri: str | None) -> Session:
        """The session a chat names, else the workspace's newest, else a new one."""
        if session_id is not None:
            return await self.get(session_id)
        workspace = self.resolve_workspace(workspace_uri)
        sessions = await self._call(lambda store: store.list_sessions([workspace]))
        if sessions:
            return sessions[0]
        return await self.new(path_to_uri(workspace), None)

    async def delete(self, session_id: str) -> None:
        await self._call(lambda store: store.delete_session(session_id))

    async def save(self, session: Session) -> None:
        await self._call(lambda store: store.save_session(session))

    def save_now(self, session: Session) -> None:
        """`save` on the event loop's thread: for the few saves a caller must see done
        before it goes on without awaiting (a reserved conversation id)."""
        self.call_now(lambda store: store.save_session(session))

    # ---- records and how turns ended -------------------------------------------------

    async def records(self, session_id: str, turn_limit: int) -> list[TurnRecord]:
        """The records of the session's newest `turn_limit` turns, oldest first."""
        return await self._call(lambda store: store.recent_turn_records(session_id, turn_limit))

    async def turn_infos(
        self, session_id: str, records: Sequence[TurnRecord]
    ) -> dict[str, dict[str, Any]]:
        """How the turns of `records` ended (`turnInfo`), by turn id."""
        ids = turn_ids(list(records))
        return await self._call(lambda store: store.turn_infos(session_id, ids))

    async def turn_info(self, session_id: str, turn_id: str) -> dict[str, Any] | None:
        infos = await self._call(lambda store: store.turn_infos(session_id, [turn_id]))
        return infos.get(turn_id)

    async def turn_infos_after(self, session_id: str, turn_id: str) -> list[dict[str, Any]]:
        return await self._call(lambda store: store.turn_infos_after(session_id, turn_id))

    async def set_turn_info(self, session_id: str, turn_id: str, info: dict[str, Any]) -> None:
        await self._call(lambda store: store.set_turn_info(session_id, turn_id, info))

    async def percepts(self, workspace: str) -> list[str]:
        return await self._call(lambda store: store.percepts(workspace))

    def local_brick(self, session: Session, pending: Sequence[TurnRecord]) -> str:
        """The local brick with `pending` (records not stored yet) in front: before a
        hand-off, Claude must see what the local agent did in this very turn."""
        budget = self._config().context_budget_chars
        return self.call_now(
            lambda store: local_brick_with(pending, store.reader(), session, budget)
        )

    async def rebuild_bricks(self, session: Session) -> None:
        """Both bricks rendered again from the stored records (after an undo)."""
        budget = self._config().context_budget_chars
        await self._call(lambda store: store.rebuild_bricks(session, budget))

    # ---- a turn's two writes ---------------------------------------------------------

    async def begin_turn(self, session: Session, user_record: TurnRecord) -> None:
        """Store the user's message and claim the session; `session_busy` when another live
        process runs a turn there."""
        try:
            await self._call(lambda store: store.begin_turn(session, user_record))
        except SessionClaimed as exc:
            raise EngineError(
                RequestErrorReason.SESSION_BUSY, f"{exc}; cancel it there or wait"
            ) from exc
        except EngineError as exc:
            raise storage_failed(exc, "could not store the message") from exc

    async def finish_turn(
        self,
        session: Session,
        turn_id: str,
        status: RecordStatus,
        answers: Sequence[TurnRecord],
        percepts: Sequence[tuple[Agent, str]],
        info: dict[str, Any] | None,
        route: TurnRoute | None = None,
    ) -> None:
        """The turn's percepts, answers, final status, info and route, the session with its
        bricks rebuilt (in the store's transaction), and the claim released."""
        budget = self._config().context_budget_chars

        def write(store: SessionStore) -> None:
            for agent in (Agent.LOCAL, Agent.CLAUDE):
                texts = [text for who, text in percepts if who is agent]
                if texts:
                    store.add_percepts(session.workspace_folder, texts, agent)
            store.finish_turn(
                session, turn_id, status, answers, info=info, budget_chars=budget, route=route
            )

        await self._call(write)

    async def release_turn(self, session_id: str, turn_id: str) -> None:
        """Give up the session's claim after a failed save (never leave it claimed); a
        failure here is logged: this process's own claim does not block its next turn, and
        others see it until this process ends."""
        try:
            await self._call(lambda store: store.release_turn(session_id, turn_id))
        except EngineError as exc:
            logger.error("turn %s: could not release the session: %s", turn_id, exc)

    # ---- the routing numbers ---------------------------------------------------------

    async def stats(self, workspace_uri: str | None) -> Stats:
        """`milk/stats`: the figures of a workspace folder (the first one when None)."""
        workspace = self.resolve_workspace(workspace_uri)
        limit = self._config().claude.budget_usd
        return await self._call(lambda store: stats_of(store, workspace, limit))

    async def claude_spent_today(self, workspace: str) -> float:
        """What Claude cost the workspace today (local date), for the budget."""
        return await self._call(lambda store: store.routes.claude_spent(workspace, today()))

    # ---- other server processes on the store -----------------------------------------

    async def request_cancel(self, session_id: str) -> str | None:
        """Ask another process to cancel the session's turn; its turn id, if one runs."""
        return await self._call(lambda store: store.elsewhere.request_cancel(session_id))

    async def turn_claimed(self, session_id: str, turn_id: str) -> bool:
        return await self._call(lambda store: store.elsewhere.turn_claimed(session_id, turn_id))

    async def cancel_requested(self, session_id: str, turn_id: str) -> bool:
        return await self._call(lambda store: store.elsewhere.cancel_requested(session_id, turn_id))

    async def publish_live(self, origin: str, updates: list[tuple[str, dict[str, Any]]]) -> None:
        """This process's turn updates, for the doors of the other processes."""
        await self._call(lambda store: store.elsewhere.publish(origin, updates))

    @property
    def shown_folders(self) -> list[str]:
        """The folders whose turns this process shows: its workspaces and `watched`."""
        return sorted({*self.workspaces, *self.watched})

    async def live_watch(self, origin: str) -> None:
        """This process shows the turns of its folders (the others then write theirs)."""
        workspaces = self.shown_folders
        await self._call(lambda store: store.elsewhere.watch(origin, workspaces))

    async def live_unwatch(self, origin: str) -> None:
        await self._call(lambda store: store.elsewhere.unwatch(origin))

    async def live_watched(self, origin: str, workspace: str) -> bool:
        return await self._call(lambda store: store.elsewhere.watched(origin, workspace))

    async def live_start(self) -> int:
        return await self._call(lambda store: store.elsewhere.live_start())

    async def live_after(self, after_id: int, origin: str) -> tuple[int, list[LiveUpdate]]:
        """Other processes' updates on this server's workspace folders since `after_id`, and
        the last id read."""
        workspaces = self.shown_folders
        return await self._call(
            lambda store: store.elsewhere.live_after(after_id, origin, workspaces)
        )


def stats_of(store: SessionStore, workspace: str, limit_usd: float | None) -> Stats:
    """A workspace's figures straight from a store (`milk-lsp stats` reads it so too);
    `workspace` is a resolved absolute path."""
    day = today()
    return build_stats(
        path_to_uri(workspace),
        store.routes.route_groups(workspace),
        store.routes.claude_totals(workspace),
        store.routes.claude_spent(workspace, day),
        limit_usd,
        day,
        store.routes.advisor_totals(workspace),
    )
