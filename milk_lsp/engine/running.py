"""`RunningTurns`: one task per session, cancelled here or from another server process.

`milk/cancel` and `$/cancelRequest` stop a turn at once; a turn run by another server process
on the same store (a second editor window) is cancelled through a request in the store,
which the process running it polls for while the turn runs.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from contextlib import suppress
from typing import Any

from milk_lsp.errors import EngineError
from milk_lsp.sessions.service import Sessions
from milk_lsp.wire import TurnResult

logger = logging.getLogger(__name__)

CANCEL_POLL_SECONDS = 0.5
"""How often a running turn looks for a cancel asked by another server process."""
FOREIGN_CANCEL_WAIT_SECONDS = 10.0
"""How long `milk/cancel` waits for another process to end the turn it was asked to cancel."""
FOREIGN_CANCEL_POLL_SECONDS = 0.2


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
