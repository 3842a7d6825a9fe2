"""The standard-LSP door on the wire: `workspace/executeCommand` for the `milk.*`
commands, `textDocument/codeAction`, and the transcript documents' open/change/close.

Thin glue over `door.StandardDoor` (what the commands do), `commands` (their names and
arguments) and `sync` (the documents), with `lsp.editor.Editor` as the client; `install`
registers it all on the server, whose capabilities then list the commands and the code
action kinds.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

from lsprotocol import types
from lsprotocol.converters import get_converter
from pygls.exceptions import JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer

from milk_lsp import wire
from milk_lsp.engine import Engine
from milk_lsp.errors import EngineError
from milk_lsp.lsp.editor import Editor
from milk_lsp.lsp.positions import range_text
from milk_lsp.lsp.protocol import refusals_answered
from milk_lsp.lsp.standard import commands as cmds
from milk_lsp.lsp.standard.door import StandardDoor
from milk_lsp.lsp.standard.transcript import MARKER, session_of_path, split_document
from milk_lsp.workspace.paths import uri_to_path


@contextlib.contextmanager
def _answers() -> Iterator[None]:
    """Bad arguments answer -32602 naming the argument; engine refusals -32803 + reason."""
    try:
        with refusals_answered():
            yield
    except cmds.ArgumentError as exc:
        raise JsonRpcInvalidParams(str(exc)) from None


class StandardLsp:
    """The handlers, bound to one server's standard door."""

    def __init__(
        self, door: StandardDoor, editor: Editor, ready: Callable[[], Awaitable[None]]
    ) -> None:
        self.door = door
        self._editor = editor
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

    async def ask_local(self, *arguments: Any) -> Any:
        """`milk.ask` on route `local`: the way back from Claude (later `auto` turns stay
        with the local model)."""
        with _answers():
            question = cmds.parse_ask(list(arguments))
            if question.route not in (None, "local"):
                raise cmds.ArgumentError("arguments[0].route: milk.askLocal asks the local model")
        return await self._run(lambda: self.door.ask(question, route="local"))

    async def advise(self, *arguments: Any) -> Any:
        """`milk.ask` on route `advise`: Claude writes a plan, the local model carries it
        out step by step (Claude does the steps it fails)."""
        with _answers():
            question = cmds.parse_ask(list(arguments))
            if question.route not in (None, "advise"):
                raise cmds.ArgumentError("arguments[0].route: milk.advise asks Claude for a plan")
        return await self._run(lambda: self.door.ask(question, route="advise"))

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
                selected = range_text(text, range_, self._editor.encoding)
            actions = cmds.code_actions(uri, range_, diagnostics, only, selected)
        commands = [
            types.Command(title=action.title, command=action.command, arguments=action.arguments)
            for action in actions
        ]
        if not self._editor.supports("text_document.code_action.code_action_literal_support"):
            return commands  # LSP: such a client takes commands only
        return [
            types.CodeAction(title=action.title, kind=action.kind, command=command)
            for action, command in zip(actions, commands, strict=True)
        ]

    def _is_transcript(self, path: Path) -> bool:
        return self.door.transcript_session(path.as_uri()) is not None

    def _text_of(self, path: Path) -> str | None:
        opened = self._editor.document(path)
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
        self._editor.document_changed(uri)
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
    editor: Editor,
    ready: Callable[[], Awaitable[None]],
) -> StandardLsp:
    """Register the standard door on `server`; its updates come from `editor`."""
    door = StandardDoor(engine, editor, editor)
    editor.update_listeners.append(door.on_update)
    editor.question_listeners.append(door.on_question)
    editor.question_text = door.question_text
    handlers = StandardLsp(door, editor, ready)
    commands: dict[str, Callable[..., Awaitable[Any]]] = {
        cmds.ASK: handlers.ask,
        cmds.SEND: handlers.send,
        cmds.ESCALATE: handlers.escalate,
        cmds.ASK_LOCAL: handlers.ask_local,
        cmds.ADVISE: handlers.advise,
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
