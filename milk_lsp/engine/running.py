"""Turns running here and in the other server processes on the same store.

`RunningTurns`: one task per session. `milk/cancel` and `$/cancelRequest` stop a turn at
once; a turn run by another server process on the same store (a second editor window, the
terminal) is cancelled through a request in the store, which the process running it polls
for while the turn runs.

`LiveFeed`: every door sees every turn on its workspace folders live, whichever door
started it. This process's turn updates go to the store in small batches; the other
processes' are read back twice a second and relayed to this client, marked `elsewhere`.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Coroutine
from contextlib import suppress
from typing import Any

from milk_lsp.doors import Door
from milk_lsp.errors import EngineError
from milk_lsp.sessions.service import Sessions
from milk_lsp.wire import TurnResult, build_update

logger = logging.getLogger(__name__)

CANCEL_POLL_SECONDS = 0.5
"""How often a running turn looks for a cancel asked by another server process."""
FOREIGN_CANCEL_WAIT_SECONDS = 10.0
"""How long `milk/cancel` waits for another process to end the turn it was asked to cancel."""
FOREIGN_CANCEL_POLL_SECONDS = 0.2
LIVE_FLUSH_SECONDS = 0.2
"""How long a turn's updates gather before they are written for the other processes."""
LIVE_POLL_SECONDS = 0.4
"""How often the other processes' updates are looked for."""
LIVE_WATCHER_SECONDS = 0.5
"""How often a running turn nobody else watches looks again for a door that does."""


class RunningTurns:
    def __init__(self, sessions: Sessions) -> None:
        self._sessions = sessions
        self._running: dict[str, asyncio.Task[TurnResult]] = {}
        self._background: set[asyncio.Task[Any]] = set()

    def is_busy(self, session_id: str) -> bool:
        task = self._running.get(session_id)
        return task is not None and not task.done()

    async def run(
        self, session_id: str, turn_id: str, turn: Coroutine[Any, Any, TurnResult]
    ) -> TurnResult:
        """Run `turn` as the session's task; a cancel of the caller cancels the turn, which
        still ends properly (stored, `turn_ended`) before this returns."""
        task = asyncio.create_task(turn)
        self._running[session_id] = task
        watch = self.spawn(self._watch_cancel(session_id, turn_id, task))
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            task.cancel()
            with suppress(asyncio.CancelledError):
                await task
            raise
        finally:
            watch.cancel()
            if self._running.get(session_id) is task:
                del self._running[session_id]

    def spawn(self, work: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Background work the server keeps a reference to until it ends (pruning, polls)."""
        task = asyncio.create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    async def cancel(self, session_id: str) -> bool:
        task = self._running.get(session_id)
        if task is None or task.done():
            return await self._cancel_elsewhere(session_id)
        task.cancel()
        with suppress(asyncio.CancelledError):
            await asyncio.shield(task)
        return True

    async def _cancel_elsewhere(self, session_id: str) -> bool:
        """Cancel the session's turn run by another server process on the same store: ask
        through the store, then wait until its claim is gone. False when no other live
        process runs a turn there, or it did not end in time."""
        turn_id = await self._sessions.request_cancel(session_id)
        if turn_id is None:
            return False
        loop = asyncio.get_running_loop()
        deadline = loop.time() + FOREIGN_CANCEL_WAIT_SECONDS
        while loop.time() < deadline:
            if not await self._sessions.turn_claimed(session_id, turn_id):
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
                requested = await self._sessions.cancel_requested(session_id, turn_id)
            except EngineError as exc:
                if not failed:  # once per turn: the poll runs twice a second
                    logger.warning("turn %s: cannot look for cancel requests: %s", turn_id, exc)
                failed = True
                continue
            if requested:
                task.cancel()
                return

    async def aclose(self) -> None:
        """Cancel every running turn and wait for each to end (stored as cancelled)."""
        for task in list(self._running.values()):
            task.cancel()
        for task in list(self._running.values()):
            with suppress(asyncio.CancelledError, Exception):
                await task


class LiveFeed:
    """This process's turn updates published to the store; the other processes' relayed.

    A running turn's updates are written only while another live process watches its
    folder (`live_watchers`); until then they wait in memory, and a door that starts
    watching mid-turn gets the turn from its first update. With one door open, a turn adds
    no writes (a full disk is not filled faster by updates nobody reads)."""

    def __init__(
        self,
        sessions: Sessions,
        relay: Callable[[dict[str, Any]], None],
        door: Callable[[], Door],
        running: RunningTurns,
    ) -> None:
        """`relay` sends another process's update to this client; `door` names this
        process's front door in the turns it publishes."""
        self._sessions = sessions
        self._relay = relay
        self._door = door
        self._running = running
        self.origin = uuid.uuid4().hex
        """This process's mark on what it publishes (its own updates are not relayed)."""
        self._pending: list[tuple[str, dict[str, Any]]] = []
        self._unwatched: dict[tuple[str, str], list[tuple[str, dict[str, Any]]]] = {}
        """By (session, turn): updates of running turns nobody else watches yet."""
        self._watchers_seen: dict[str, tuple[float, bool]] = {}
        """By folder: when the store was last asked whether another door shows it, and
        its answer."""
        self._flushing: asyncio.Task[None] | None = None
        self._watching: asyncio.Task[None] | None = None
        self._warned: set[str] = set()
        self._writing = asyncio.Lock()  # one batch at a time: the store keeps their order

    # ---- this process's turns ---------------------------------------------------------

    def publish(self, workspace: str, update: dict[str, Any]) -> None:
        """Queue one update of a turn run here; written within `LIVE_FLUSH_SECONDS` when
        another door watches the folder."""
        if update.get("kind") == "turn_started":
            update = {**update, "door": self._door().name}
        self._pending.append((workspace, update))
        if self._flushing is None or self._flushing.done():
            self._flushing = self._running.spawn(self._flush_soon())

    async def _flush_soon(self) -> None:
        """Flush after a moment; while turns wait for a watcher, look again now and then."""
        await asyncio.sleep(LIVE_FLUSH_SECONDS)
        await self.flush()
        while self._unwatched or self._pending:
            await asyncio.sleep(LIVE_FLUSH_SECONDS if self._pending else LIVE_WATCHER_SECONDS)
            await self.flush()

    async def flush(self) -> None:
        """Write what is queued for the folders another door watches (the server's shutdown
        waits for this)."""
        async with self._writing:
            while self._pending or self._unwatched:
                batch, self._pending = self._pending, []
                for workspace, update in batch:
                    turn = (str(update.get("sessionId")), str(update.get("turnId")))
                    self._unwatched.setdefault(turn, []).append((workspace, update))
                ready: list[tuple[str, dict[str, Any]]] = []
                for turn, updates in list(self._unwatched.items()):
                    ended = updates[-1][1].get("kind") == "turn_ended"
                    watched = await self._watched(updates[0][0])
                    if watched:
                        ready += updates
                    if watched or ended:  # nobody to show an ended turn to: it goes
                        del self._unwatched[turn]
                if ready:
                    try:
                        await self._sessions.publish_live(self.origin, ready)
                    except EngineError as exc:
                        self._warn_once("publish", "cannot show this turn in other doors: %s", exc)
                if not self._pending:
                    return

    async def _watched(self, workspace: str) -> bool:
        """Whether another door shows `workspace`, asked of the store at most every
        `LIVE_WATCHER_SECONDS` (a streaming turn flushes five times a second)."""
        now = asyncio.get_running_loop().time()
        known = self._watchers_seen.get(workspace)
        if known is not None and now - known[0] < LIVE_WATCHER_SECONDS:
            return known[1]
        try:
            watched = await self._sessions.live_watched(self.origin, workspace)
        except EngineError as exc:
            self._warn_once("publish", "cannot show this turn in other doors: %s", exc)
            watched = False
        self._watchers_seen[workspace] = (now, watched)
        return watched

    # ---- the other processes' turns ---------------------------------------------------

    def watch(self) -> None:
        """Start relaying the other processes' updates (once; the server calls this when
        its client is ready)."""
        if self._watching is None:
            self._watching = self._running.spawn(self._relay_forever())

    async def _relay_forever(self) -> None:
        after: int | None = None
        told: list[str] | None = None
        while True:
            folders = self._sessions.shown_folders
            if folders and folders != told:
                try:  # the other processes write their turns of these folders from now on
                    await self._sessions.live_watch(self.origin)
                    told = folders
                except EngineError as exc:
                    self._warn_once("watch", "cannot see turns run by other doors: %s", exc)
            await asyncio.sleep(LIVE_POLL_SECONDS)
            if not folders:
                continue
            try:
                if after is None:
                    after = await self._sessions.live_start()
                after, updates = await self._sessions.live_after(after, self.origin)
            except EngineError as exc:
                self._warn_once("watch", "cannot see turns run by other doors: %s", exc)
                continue
            for update in updates:
                try:  # a newer or older milk-lsp may have written it: the contract decides
                    shown = build_update({**update.payload, "elsewhere": True})
                except ValueError as exc:
                    logger.info("another door's update not shown: %s", exc)
                    continue
                self._relay(shown)

    def _warn_once(self, what: str, message: str, exc: EngineError) -> None:
        if what not in self._warned:
            self._warned.add(what)
            logger.warning(message, exc)

    async def aclose(self) -> None:
        if self._watching is not None:
            self._watching.cancel()
            with suppress(EngineError):
                await self._sessions.live_unwatch(self.origin)
        await self.flush()
