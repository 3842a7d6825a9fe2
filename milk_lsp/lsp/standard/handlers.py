"""The standard-LSP front door on the wire: `workspace/executeCommand` for the `milk.*`
commands, `textDocument/codeAction`, and the transcript documents' open/change/close.

Thin glue over `front_door.FrontDoor` (what the commands do), `standard_commands` (their
names and arguments) and `transcript_sync` (the documents); `install` registers it all on
the server, whose capabilities then list the commands and the code action kinds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

from lsprotocol import types
from lsprotocol.converters import get_converter
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer

from milk_lsp import wire
from milk_lsp.engine import Engine, EngineError
from milk_lsp.lsp.editor import EditorBridge
from milk_lsp.lsp.standard import commands as cmds
from milk_lsp.lsp.standard.door import FrontDoor
from milk_lsp.lsp.standard.edits import Edit, Encoding
from milk_lsp.lsp.standard.transcript import MARKER, session_of_path, split_document
from milk_lsp.workspace.paths import uri_to_path

logger = logging.getLogger(__name__)

_ENCODINGS: dict[str, Encoding] = {"utf-8": "utf-8", "utf-16": "utf-16", "utf-32": "utf-32"}


class LspClient:
    """The editor as the front door's `FrontClient` and the transcripts' `DocumentPort`."""

    def __init__(self, server: LanguageServer, bridge: EditorBridge) -> None:
        self._server = server
        self._bridge = bridge
        self._changed: dict[str, asyncio.Event] = {}

    # ---- FrontClient ------------------------------------------------------------------------

    def show(self, message: str, level: str = "info") -> None:
        self._bridge.show(message, level)

    def log(self, message: str, level: str = "info") -> None:
        self._bridge.log(message, level)

    def supports(self, dotted: str) -> bool:
        return self._bridge.supports(dotted)

    def shows_documents(self) -> bool:
        return self._bridge.supports("window.show_document.support")

    async def show_document(self, path: Path, take_focus: bool, line: int | None) -> bool:
        selection = None
        if line is not None:
            at = types.Position(line=line, character=0)
            selection = types.Range(start=at, end=at)
        params = types.ShowDocumentParams(
            uri=path.as_uri(), take_focus=take_focus, selection=selection
        )
        try:
            result = await self._server.window_show_document_async(params)
        except Exception as exc:  # the document is still on disk; say where
            logger.warning("window/showDocument failed: %s", exc)
            self.show(f"milk: could not open {path}: {exc}", "warn")
            return False
        return bool(getattr(result, "success", False))

    async def choose(self, message: str, titles: list[str]) -> str | None:
        params = types.ShowMessageRequestParams(
            type=types.MessageType.Info,
            message=message,
            actions=[types.MessageActionItem(title=title) for title in titles],
        )
        try:
            answer = await self._server.window_show_message_request_async(params)
        except Exception as exc:
            logger.warning("window/showMessageRequest failed: %s", exc)
            return None
        title = getattr(answer, "title", None)
        return title if isinstance(title, str) else None

    def report_status(self, turn_id: str, message: str) -> None:
        self._bridge.report_turn_status(turn_id, message)

    # ---- DocumentPort ---------------------------------------------------------------------

    @property
    def encoding(self) -> Encoding:
        negotiated = self._server.workspace.position_encoding
        return _ENCODINGS.get(str(getattr(negotiated, "value", negotiated)), "utf-16")

    def open_text(self, path: Path) -> tuple[str, str] | None:
        if not self._bridge.supports("workspace.apply_edit"):
            return None  # its buffer cannot be updated: the file on disk is the transcript
        document = self.document(path)
        return None if document is None else (document.uri, document.source)

    async def apply(self, uri: str, edits: list[Edit]) -> bool:
        text_edits = [
            types.TextEdit(
                range=types.Range(
                    start=types.Position(line=edit.start[0], character=edit.start[1]),
                    end=types.Position(line=edit.end[0], character=edit.end[1]),
                ),
                new_text=edit.new_text,
            )
            for edit in edits
        ]
        params = types.ApplyWorkspaceEditParams(
            edit=types.WorkspaceEdit(changes={uri: text_edits}), label="milk: transcript"
        )
        try:
            result = await self._server.workspace_apply_edit_async(params)
        except Exception as exc:
            logger.warning("workspace/applyEdit of the transcript failed: %s", exc)
            return False
        return bool(getattr(result, "applied", False))

    async def changed(self, uri: str, timeout_seconds: float) -> bool:
        event = self._changed.setdefault(uri, asyncio.Event())
        event.clear()
        try:
            await asyncio.wait_for(event.wait(), timeout_seconds)
        except TimeoutError:
            return False
        return True

    def document_changed(self, uri: str) -> None:
        event = self._changed.get(uri)
        if event is not None:
            event.set()

    def document(self, path: Path) -> Any:
        """The client's open document of `path` (by URI, else by resolved path)."""
        documents = self._server.workspace.text_documents
        if path.as_uri() in documents:
            return documents[path.as_uri()]
        wanted = _resolved(path)
        for document in documents.values():
            if document.path and _resolved(Path(document.path)) == wanted:
                return document
        return None


# ---- handlers ---------------------------------------------------------------------------------


@contextlib.contextmanager
def _answers() -> Iterator[None]:
    """Bad arguments answer -32602 naming the argument; engine refusals -32803 + reason."""
    try:
        yield
    except cmds.ArgumentError as exc:
        raise JsonRpcInvalidParams(str(exc)) from None
    except EngineError as exc:
        raise JsonRpcException(
            exc.message,
            code=types.LSPErrorCodes.RequestFailed.value,
            data={"reason": exc.reason, **getattr(exc, "data", {})},
        ) from None


class StandardLsp:
    """The handlers, bound to one server's front door."""

    def __init__(
        self, door: FrontDoor, client: LspClient, ready: Callable[[], Awaitable[None]]
    ) -> None:
        self.door = door
        self._client = client
        self._ready = ready

    async def _run(self, work: Callable[[], Awaitable[Any]]) -> Any:
        with _answers():
            await self._ready()
            return await work()

    async def _without_arguments(
        self, arguments: tuple[Any, ...], work: Callable[[], Awaitable[Any]]
    ) -> Any:
        with _answers():
            cmds.parse_no_arguments(list(arguments))
        return await self._run(work)

    # ---- commands (pygls passes the arguments as they came, as plain JSON values) ----------

    async def ask(self, *arguments: Any) -> Any:
        with _answers():
            question = cmds.parse_ask(list(arguments))
        return await self._run(lambda: self.door.ask(question))

    async def send(self, *arguments: Any) -> Any:
        with _answers():
            question = cmds.parse_send(list(arguments))
        return await self._run(lambda: self.door.ask(question))

    async def escalate(self, *arguments: Any) -> Any:
        with _answers():
            text = cmds.parse_optional_text(list(arguments), "text")
        return await self._run(lambda: self.door.escalate(text))

    async def cancel(self, *arguments: Any) -> Any:
        return await self._without_arguments(arguments, self.door.cancel)

    async def new_session(self, *arguments: Any) -> Any:
        with _answers():
            title = cmds.parse_optional_text(list(arguments), "title")
            if title is not None and len(title) > wire.MAX_TITLE_CHARS:
                raise cmds.ArgumentError(
                    f"arguments[0] (title): longer than {wire.MAX_TITLE_CHARS} characters"
                )
        return await self._run(lambda: self.door.new_session(title))

    async def switch_session(self, *arguments: Any) -> Any:
        with _answers():
            session_id = cmds.parse_session_id(list(arguments))
        return await self._run(lambda: self.door.switch_session(session_id))

    async def show_context(self, *arguments: Any) -> Any:
        return await self._without_arguments(arguments, self.door.show_context)

    async def status(self, *arguments: Any) -> Any:
        return await self._without_arguments(arguments, self.door.status)

    async def undo(self, *arguments: Any) -> Any:
        with _answers():
            args = cmds.parse_undo(list(arguments))
        return await self._run(lambda: self.door.undo(args))

    async def open_transcript(self, *arguments: Any) -> Any:
        return await self._without_arguments(arguments, self.door.open_transcript)

    async def ask_selection(self, *arguments: Any) -> Any:
        with _answers():
            question = cmds.parse_selection(list(arguments))
        return await self._run(lambda: self.door.ask(question, default=cmds.SELECTION_QUESTION))

    async def hand_to_claude(self, *arguments: Any) -> Any:
        with _answers():
            question = cmds.parse_selection(list(arguments))
        return await self._run(
            lambda: self.door.ask(question, route="claude", default=cmds.HAND_OFF_QUESTION)
        )

    async def explain_diagnostic(self, *arguments: Any) -> Any:
        return await self._diagnostic(list(arguments), fix=False)

    async def fix_diagnostic(self, *arguments: Any) -> Any:
        return await self._diagnostic(list(arguments), fix=True)

    async def _diagnostic(self, arguments: list[Any], fix: bool) -> Any:
        with _answers():
            uri, diagnostic = cmds.parse_diagnostic(arguments)

        async def work() -> Any:
            workspace = self.door.folder_for(uri)
            text = cmds.diagnostic_question(fix, diagnostic, cmds.file_label(uri, workspace))
            path = uri_to_path(uri)
            document = self._text_of(path) if path is not None else None
            lines = None if document is None else len(document.splitlines())
            context = (cmds.diagnostic_context(uri, diagnostic, lines),)
            return await self.door.ask(cmds.Question(text=text, context=context, uri=uri))

        return await self._run(work)

    # ---- code actions ---------------------------------------------------------------------

    async def code_action(
        self, params: types.CodeActionParams
    ) -> list[types.CodeAction] | list[types.Command]:
        """Cheap: which actions fit here, no model call (that waits for the choice)."""
        uri = params.text_document.uri
        path = uri_to_path(uri)
        if path is None:
            return []
        range_ = _wire_range(params.range)
        only = [str(kind) for kind in params.context.only or []] or None
        if self._is_transcript(path):
            text = self._text_of(path)
            split = split_document(text) if text is not None else None
            marker = _marker_line(text) if text is not None else None
            question = split[1] if split is not None else ""
            actions = cmds.transcript_actions(uri, range_, marker, question, only)
        else:
            unstructure = get_converter().unstructure
            diagnostics = [unstructure(d) for d in params.context.diagnostics]
            selected = None
            text = self._text_of(path)
            if text is not None and range_.start != range_.end:
                selected = _slice(text, range_, self._client.encoding)
            actions = cmds.code_actions(uri, range_, diagnostics, only, selected)
        commands = [
            types.Command(title=action.title, command=action.command, arguments=action.arguments)
            for action in actions
        ]
        if not self._client.supports("text_document.code_action.code_action_literal_support"):
            return commands  # LSP: such a client takes commands only
        return [
            types.CodeAction(title=action.title, kind=action.kind, command=command)
            for action, command in zip(actions, commands, strict=True)
        ]

    def _is_transcript(self, path: Path) -> bool:
        return self.door.transcript_session(path.as_uri()) is not None

    def _text_of(self, path: Path) -> str | None:
        opened = self._client.document(path)
        return None if opened is None else str(opened.source)

    # ---- transcript documents -----------------------------------------------------------

    async def did_open(self, params: types.DidOpenTextDocumentParams) -> None:
        path = uri_to_path(params.text_document.uri)
        if path is None or not self._is_transcript(path):
            return
        sync = self.door.book.by_path(path)
        if sync is not None:
            sync.opened(params.text_document.text)
            return
        session_id = session_of_path(path)
        if session_id is not None:  # opened by hand: load it (it catches up from the store)
            with contextlib.suppress(EngineError):
                await self.door.book.sync_for(session_id)

    def did_change(self, params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        self._client.document_changed(uri)
        path = uri_to_path(uri)
        sync = self.door.book.by_path(path) if path is not None else None
        if sync is not None and path is not None:
            text = self._text_of(path)
            if text is not None:
                sync.client_changed(text)

    def did_close(self, params: types.DidCloseTextDocumentParams) -> None:
        path = uri_to_path(params.text_document.uri)
        sync = self.door.book.by_path(path) if path is not None else None
        if sync is not None:
            sync.closed()


def install(
    server: LanguageServer,
    engine: Engine,
    bridge: EditorBridge,
    ready: Callable[[], Awaitable[None]],
) -> StandardLsp:
    """Register the front door on `server`; its updates come from `bridge`."""
    client = LspClient(server, bridge)
    door = FrontDoor(engine, client, client)
    bridge.update_listeners.append(door.on_update)
    handlers = StandardLsp(door, client, ready)
    commands: dict[str, Callable[..., Awaitable[Any]]] = {
        cmds.ASK: handlers.ask,
        cmds.SEND: handlers.send,
        cmds.ESCALATE: handlers.escalate,
        cmds.CANCEL: handlers.cancel,
        cmds.NEW_SESSION: handlers.new_session,
        cmds.SWITCH_SESSION: handlers.switch_session,
        cmds.SHOW_CONTEXT: handlers.show_context,
        cmds.STATUS: handlers.status,
        cmds.UNDO: handlers.undo,
        cmds.OPEN_TRANSCRIPT: handlers.open_transcript,
        cmds.ASK_SELECTION: handlers.ask_selection,
        cmds.EXPLAIN_DIAGNOSTIC: handlers.explain_diagnostic,
        cmds.FIX_DIAGNOSTIC: handlers.fix_diagnostic,
        cmds.HAND_TO_CLAUDE: handlers.hand_to_claude,
    }
    assert tuple(commands) == cmds.COMMANDS
    for name, handler in commands.items():
        server.command(name)(_command(handler))
    server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=list(cmds.CODE_ACTION_KINDS)),
    )(_async_feature(handlers.code_action))
    server.feature(types.TEXT_DOCUMENT_DID_OPEN)(_async_feature(handlers.did_open))
    server.feature(types.TEXT_DOCUMENT_DID_CHANGE)(_feature(handlers.did_change))
    server.feature(types.TEXT_DOCUMENT_DID_CLOSE)(_feature(handlers.did_close))
    return handlers


# pygls marks what it registers with attributes, which bound methods cannot take: each
# handler is registered as a plain function calling it. (Their first parameter is neither
# `ls` nor the server's type, so pygls passes only the params or the arguments.)


def _command(handler: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    async def command(*arguments: Any) -> Any:
        return await handler(*arguments)

    return command


def _async_feature(handler: Callable[[Any], Awaitable[Any]]) -> Callable[[Any], Awaitable[Any]]:
    async def feature(params: Any) -> Any:
        return await handler(params)

    return feature


def _feature(handler: Callable[[Any], None]) -> Callable[[Any], None]:
    def feature(params: Any) -> None:
        handler(params)

    return feature


def _wire_range(range_: types.Range) -> wire.Range:
    return wire.Range.model_validate(
        {
            "start": {"line": range_.start.line, "character": range_.start.character},
            "end": {"line": range_.end.line, "character": range_.end.character},
        }
    )


def _marker_line(text: str) -> int | None:
    lines = text.replace("\r\n", "\n").split("\n")
    for index in range(len(lines) - 1, -1, -1):
        if lines[index] == MARKER:
            return index
    return None


def _slice(text: str, range_: wire.Range, encoding: Encoding) -> str:
    """The text of a range given in the client's position units."""
    lines = text.splitlines(keepends=True)

    def offset(line: int, character: int) -> int:
        before = sum(len(item) for item in lines[:line])
        if line >= len(lines):
            return before
        return before + _chars(lines[line], character, encoding)

    start = offset(range_.start.line, range_.start.character)
    end = offset(range_.end.line, range_.end.character)
    return text[start:end]


def _chars(line: str, units: int, encoding: Encoding) -> int:
    """How many characters of `line` make `units` position units."""
    if encoding == "utf-32":
        return min(units, len(line))
    size = 0
    for index, char in enumerate(line):
        if size >= units:
            return index
        if encoding == "utf-8":
            size += len(char.encode("utf-8", "surrogatepass"))
        else:
            size += 2 if ord(char) > 0xFFFF else 1
    return len(line)


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path
