"""The local part's clock: its time budget, and the progress line that shows the time and
the tokens so far (issue 30).

A slow CPU user waited 15 minutes for one local turn, cut only by the client's own time-out:
nothing bounded it. `LocalClock.bounded` runs the local part under `local.turnBudgetSeconds`
(asyncio's timeout: at the deadline the part is cancelled, so its HTTP stream and tools stop
as on a cancel); the time the user takes to answer a permission question does not count
(`paused`). `LocalClock.saw` puts "local model: 12 s, 85 tokens" on the progress line, at
most once a second.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager

from milk_lsp.agents.base import AgentEvent, LocalGaveUp, LocalSignal, TextDelta, ThinkingDelta

PROGRESS_EVERY_SECONDS = 1.0


class LocalClock:
    """One local part's elapsed time, budget and streamed tokens."""

    def __init__(self, budget_seconds: float | None, progress: Callable[[str], None]) -> None:
        self.budget_seconds = budget_seconds
        self._progress = progress
        self._started = time.monotonic()
        self._paused_for = 0.0
        self._paused_at: float | None = None
        self._timeout: asyncio.Timeout | None = None
        self._left: float | None = None
        self.tokens = 0
        """Streamed pieces of text and reasoning (a server streams about one token each)."""
        self._shown_at = 0.0
        self.ran_out = False

    @property
    def elapsed(self) -> float:
        """Seconds the local part has run, not counting the user's answers."""
        paused = self._paused_for
        if self._paused_at is not None:
            paused += time.monotonic() - self._paused_at
        return time.monotonic() - self._started - paused

    @asynccontextmanager
    async def bounded(self) -> AsyncIterator[None]:
        """Run the body under the budget; past it the body is cancelled and `ran_out` set
        (no exception leaves: the caller asks `out_of_time`)."""
        if self.budget_seconds is None:
            yield
            return
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout_at(loop.time() + self.budget_seconds) as timeout:
                self._timeout = timeout
                yield
        except TimeoutError:
            self.ran_out = True
        finally:
            self._timeout = None

    @contextmanager
    def paused(self) -> Iterator[None]:
        """While the user answers a question: the budget and the clock stand still."""
        timeout = self._timeout
        if self._paused_at is not None:  # already paused (nested questions)
            yield
            return
        self._paused_at = time.monotonic()
        if timeout is not None and timeout.when() is not None:
            loop = asyncio.get_running_loop()
            self._left = max(0.0, (timeout.when() or 0.0) - loop.time())
            timeout.reschedule(None)
        try:
            yield
        finally:
            self._paused_for += time.monotonic() - self._paused_at
            self._paused_at = None
            if timeout is not None and self._left is not None and self._timeout is timeout:
                timeout.reschedule(asyncio.get_running_loop().time() + self._left)
            self._left = None

    def saw(self, event: AgentEvent) -> None:
        """Count a streamed piece and, at most once a second, show the time and tokens."""
        if isinstance(event, TextDelta | ThinkingDelta):
            self.tokens += 1
        now = time.monotonic()
        if now - self._shown_at >= PROGRESS_EVERY_SECONDS:
            self._shown_at = now
            self._progress(f"local model: {self.elapsed:.0f} s, {self.tokens} tokens")

    def out_of_time(self) -> LocalGaveUp:
        """The signal a part past its budget ends on."""
        return LocalGaveUp(
            LocalSignal.TIME_BUDGET,
            f"the local model took longer than the local part's time budget "
            f"({self.budget_seconds:.0f} s, local.turnBudgetSeconds) after "
            f"{self.tokens} streamed tokens",
        )
