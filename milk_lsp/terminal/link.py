"""The terminal client's connection: the real server as a subprocess, spoken to over LSP
as an editor speaks to it.

`connected()` is the connection for one asyncio task (`milk-lsp undo`). `Link` runs it on
an event loop in a thread of its own for `milk-lsp chat`: the main thread then stays free to
block in `input()`, the only place where readline edits a line and where Ctrl-C arrives
(Python delivers signals to the main thread).

The server runs in a session of its own, so the Ctrl-C typed in the terminal reaches this
client only: the client turns it into `milk/cancel`, and the server is not killed
mid-turn. Should the client die, the server sees its stdin close and exits by itself.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar, cast

from lsprotocol import types
from lsprotocol.converters import get_converter
from pygls.lsp.client import LanguageClient

from milk_lsp import __version__, wire
from milk_lsp.doors import TERMINAL_CLIENT_NAME
from milk_lsp.terminal.printer import ChatPrinter

T = TypeVar("T")
Ask = Callable[[dict[str, Any]], Awaitable[str]]
"""Answers a permission question with an `optionId`."""

Handler = Callable[..., Any]
Register = Callable[[str], Callable[[Handler], Handler]]
"""pygls' `feature` decorator, typed (pygls leaves it untyped)."""

SHUTDOWN_SECONDS = 10.0


async def deny(params: dict[str, Any]) -> str:
    """The answer of a client that asks nobody."""
    return "deny"


@contextlib.asynccontextmanager
async def connected(
    workspace: Path,
    settings: dict[str, Any],
    *,
    verbose: bool = False,
    printer: ChatPrinter | None = None,
    ask: Ask = deny,
) -> AsyncIterator[tuple[LanguageClient, ChatPrinter]]:
    """The real server as a subprocess, initialized on `workspace`, as an editor would have
    it: updates printed, permission questions answered by `ask`; shut down on exit."""
    # pygls' own warnings (a `$/cancelRequest` for a question answered a moment before)
    # are no news to the user; with -v they are shown
    logging.getLogger("pygls").setLevel(logging.WARNING if verbose else logging.ERROR)
    client = LanguageClient("milk-chat", __version__, converter_factory=get_converter)
    printer = printer or ChatPrinter()
    printer.workspace = workspace
    feature = cast(Register, client.feature)

    @feature(wire.UPDATE)
    def on_update(ls: LanguageClient, params: Any) -> None:
        printer.on_update(params if isinstance(params, dict) else {})

    @feature(wire.REQUEST_PERMISSION)
    async def on_permission(ls: LanguageClient, params: Any) -> dict[str, str]:
        return {"optionId": await ask(params if isinstance(params, dict) else {})}

    @feature(types.WINDOW_SHOW_MESSAGE)
    def on_show_message(ls: LanguageClient, params: types.ShowMessageParams) -> None:
        info = params.type in (types.MessageType.Info, types.MessageType.Log)
        printer.show_message(params.message, info)

    @feature(types.WINDOW_LOG_MESSAGE)
    def on_log_message(ls: LanguageClient, params: types.LogMessageParams) -> None:
        if verbose:  # the server's log lines; its log file has them too
            sys.stderr.write(f"milk-lsp: {params.message}\n")

    @feature(wire.NUDGE)
    def on_nudge(ls: LanguageClient, params: Any) -> None:
        """Nothing to do: it only makes sure this client reads what came before it."""

    @feature(types.WORKSPACE_CONFIGURATION)
    def on_configuration(ls: LanguageClient, params: types.ConfigurationParams) -> list[Any]:
        return [settings or None for _ in params.items]

    await client.start_io(
        sys.executable, "-m", "milk_lsp", env=dict(os.environ), start_new_session=True
    )
    drain = _drain_stderr(client)
    try:
        await client.initialize_async(
            types.InitializeParams(
                process_id=os.getpid(),
                client_info=types.ClientInfo(name=TERMINAL_CLIENT_NAME),
                root_uri=workspace.as_uri(),
                workspace_folders=[
                    types.WorkspaceFolder(uri=workspace.as_uri(), name=workspace.name)
                ],
                capabilities=types.ClientCapabilities(
                    workspace=types.WorkspaceClientCapabilities(configuration=True),
                    experimental={"milk": {"requestPermission": True}},
                ),
                initialization_options=settings or None,
            )
        )
        client.initialized(types.InitializedParams())
        yield client, printer
    finally:
        try:
            await asyncio.wait_for(client.shutdown_async(None), SHUTDOWN_SECONDS)
            client.exit(None)
        except Exception:
            pass
        await cast(Callable[[], Awaitable[None]], client.stop)()
        if drain is not None:
            drain.cancel()


def _drain_stderr(client: LanguageClient) -> asyncio.Task[None] | None:
    """Read the server's stderr (its warnings; the log file has them too) and drop it: left
    unread, a long chat would fill the pipe and block the server on its next warning."""
    server = getattr(client, "_server", None)  # pygls pipes stderr and never reads it
    stream = getattr(server, "stderr", None)
    if not isinstance(stream, asyncio.StreamReader):
        return None

    async def drain() -> None:
        with contextlib.suppress(Exception):
            while await stream.read(65536):
                pass

    return asyncio.get_running_loop().create_task(drain())


class Link:
    """`connected()` kept open on an event loop in a thread of its own, for a caller that
    blocks (the terminal's main thread)."""

    def __init__(
        self,
        workspace: Path,
        settings: dict[str, Any],
        printer: ChatPrinter,
        ask: Ask,
        *,
        verbose: bool = False,
    ) -> None:
        self._args = (workspace, settings, printer, ask, verbose)
        self._ready = threading.Event()
        self._failure: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closing: asyncio.Event | None = None
        self._client: LanguageClient | None = None
        self._thread = threading.Thread(target=self._run, name="milk-chat-lsp", daemon=True)

    def start(self) -> None:
        """Start the server and initialize it; raises what stopped it."""
        self._thread.start()
        self._ready.wait()
        if self._failure is not None:
            raise self._failure

    @property
    def alive(self) -> bool:
        return self._client is not None and not self._client.stopped

    def submit(
        self, work: Callable[[LanguageClient], Coroutine[Any, Any, T]]
    ) -> concurrent.futures.Future[T]:
        """Run `work(client)` on the connection's loop."""
        if self._loop is None or self._client is None:
            raise RuntimeError("the connection to milk-lsp is not open")
        return asyncio.run_coroutine_threadsafe(work(self._client), self._loop)

    def request(self, method: str, params: Any) -> concurrent.futures.Future[Any]:
        async def send(client: LanguageClient) -> Any:
            return await client.protocol.send_request_async(method, params)

        return self.submit(send)

    def close(self) -> None:
        """Shut the server down and wait for it (at most a little over its shutdown)."""
        loop, closing = self._loop, self._closing
        if loop is not None and closing is not None:
            with contextlib.suppress(RuntimeError):  # the loop ended already
                loop.call_soon_threadsafe(closing.set)
        if self._thread.is_alive():
            self._thread.join(SHUTDOWN_SECONDS + 5)

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as exc:
            if not self._ready.is_set():
                self._failure = exc
        finally:
            self._ready.set()

    async def _serve(self) -> None:
        workspace, settings, printer, ask, verbose = self._args
        self._loop = asyncio.get_running_loop()
        self._closing = asyncio.Event()
        async with connected(workspace, settings, verbose=verbose, printer=printer, ask=ask) as (
            client,
            _,
        ):
            self._client = client
            self._ready.set()
            await self._closing.wait()
