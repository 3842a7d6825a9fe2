"""Waiting, in the main thread, for what the connection's loop does, for `milk-lsp chat`.

The main thread is where readline edits a line and where Ctrl-C arrives, so it does all
the waiting: permission questions that come meanwhile are handed to it and asked there,
and Ctrl-C is counted instead of raised while a turn runs (raised only while a question
reads its answer), so it never lands in the middle of the client's own work.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import queue
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any, TypeVar

from milk_lsp.terminal.printer import ChatPrinter

T = TypeVar("T")
QUESTION_POLL_SECONDS = 0.05
Question = tuple[dict[str, Any], concurrent.futures.Future[str]]


class GaveUp(KeyboardInterrupt):
    """A second Ctrl-C while a cancelled turn was still ending: the user wants out."""


class Waiter:
    """Waits for the connection's answers and asks its questions on the terminal."""

    def __init__(self, printer: ChatPrinter) -> None:
        self.printer = printer
        self._questions: queue.Queue[Question] = queue.Queue()
        self._sigints = 0
        self._asking = False

    def wait(
        self, future: concurrent.futures.Future[T], cancel: Callable[[], None] | None = None
    ) -> T:
        """Wait for `future`, asking the permission questions that come meanwhile. Ctrl-C
        calls `cancel` (a turn's `milk/cancel`; a second Ctrl-C raises `GaveUp`); without
        `cancel` it gives up waiting at once (KeyboardInterrupt)."""
        self._sigints = 0
        cancelling = False
        with self._counting_sigint():
            while True:
                if self._sigints and cancel is None:
                    raise KeyboardInterrupt
                if self._sigints and not cancelling and cancel is not None:
                    cancelling = True
                    cancel()
                elif self._sigints > 1:
                    raise GaveUp
                try:
                    params, answer = self._questions.get(timeout=QUESTION_POLL_SECONDS)
                except queue.Empty:
                    if future.done():
                        return future.result()
                    continue
                said = "deny" if cancelling else self._ask_here(params)
                if self._sigints and not cancelling and cancel is not None:
                    cancelling = True  # Ctrl-C at the question: cancel before the answer
                    cancel()
                with contextlib.suppress(concurrent.futures.InvalidStateError):
                    answer.set_result(said)

    @contextlib.contextmanager
    def _counting_sigint(self) -> Iterator[None]:
        """Ctrl-C counted instead of raised while a turn runs (raised only while a question
        reads its answer), so it never lands in the middle of the client's own work."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = signal.signal(signal.SIGINT, self._on_sigint)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)

    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        self._sigints += 1
        if self._asking:
            raise KeyboardInterrupt

    async def ask(self, params: dict[str, Any]) -> str:
        """`milk/requestPermission`, on the connection's loop: handed to the main thread."""
        answer: concurrent.futures.Future[str] = concurrent.futures.Future()
        self._questions.put((params, answer))
        return await asyncio.wrap_future(answer)

    def _ask_here(self, params: dict[str, Any]) -> str:
        """A question asked on the terminal; denied when stdin is not one, or on Ctrl-C."""
        if not sys.stdin.isatty():
            self.printer.denied_unasked(params)
            return "deny"
        text, keys = self.printer.question(params)
        question, choices = text.rsplit("\n", 1)
        self.printer.show(question)
        self._asking = True
        try:
            answer = input(f"{choices} > ")
        except (KeyboardInterrupt, EOFError):
            self.printer.show("")
            return "deny"
        finally:
            self._asking = False
        _forget_last_input()
        return keys.get(answer.strip().lower()[:1], "deny")

    def drop_questions(self) -> None:
        """Questions of a turn that ended before they were asked: denied."""
        while True:
            try:
                _, answer = self._questions.get_nowait()
            except queue.Empty:
                return
            with contextlib.suppress(concurrent.futures.InvalidStateError):
                answer.set_result("deny")


def _forget_last_input() -> None:
    """A question's answer (`o`, `d`) is no message worth recalling with ↑."""
    readline = sys.modules.get("readline")
    if readline is not None:
        with contextlib.suppress(Exception):
            length = readline.get_current_history_length()
            if length:
                readline.remove_history_item(length - 1)
