"""The client as the server sees it: `Editor`, over one pygls server.

One object for the three sides of the connection milk uses: the engine's `ClientBridge`
(updates, permission questions, open-document text, edits of the user's files, work-done
progress), the standard door's `FrontClient` (messages, `window/showDocument`, a choice with
buttons, a turn's status words) and the transcripts' `DocumentPort` (the negotiated position
encoding, edits of a transcript, the client's changes), each mapped onto what this client
supports.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.capabilities import get_capability

from milk_lsp import wire
from milk_lsp.agents.base import EditRejected
from milk_lsp.lsp.positions import Encoding
from milk_lsp.lsp.standard.edits import Edit
from milk_lsp.lsp.standard.questions import permission_question

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer

logger = logging.getLogger(__name__)

SYNC_WAIT_SECONDS = 2.0
"""How long an edit the client applied may take to come back as its `didChange`."""

_TURN_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("milk_turn", default=None)
"""The turn whose task this is: set by its `turn_started`, so the progress token the turn
begins next (in the same task, or one it starts) is known as that turn's."""

_SEVERITY = {
    "error": types.MessageType.Error,
    "warn": types.MessageType.Warning,
    "info": types.MessageType.Info,
}
_ENCODINGS: dict[str, Encoding] = {"utf-8": "utf-8", "utf-16": "utf-16", "utf-32": "utf-32"}


class Editor:
    """The client of one pygls server: `milk_lsp.engine.turn.ClientBridge`,
    `lsp.standard.door.FrontClient` and `lsp.standard.sync.DocumentPort`."""

    def __init__(self, server: LanguageServer) -> None:
        self._server = server
        self._capabilities = types.ClientCapabilities()
        self.update_listeners: list[Callable[[dict[str, Any]], None]] = []
        """Called with every `milk/update` after it is sent (the transcripts, `$/progress`)."""
        self.question_listeners: list[Callable[[dict[str, Any], str | None], None]] = []
        """Called with a permission question's params when it is asked (None) and with the
        option chosen when it is answered (the transcripts record both)."""
        self.question_text: Callable[[dict[str, Any]], str] = lambda params: permission_question(
            params, None
        )
        """The `showMessageRequest` fallback's message (the standard door names files
        relative to the workspace)."""
        self._turn_progress: dict[str, str] = {}
        """Turn id → its work-done progress token, while the turn runs."""
        self._changed: dict[str, asyncio.Event] = {}
        """Document URI → set by the client's next change of it (`changed` waits for it)."""

    # ---- capabilities -------------------------------------------------------------------

    def set_client_capabilities(self, capabilities: types.ClientCapabilities) -> None:
        self._capabilities = capabilities

    def supports(self, dotted: str) -> bool:
        return bool(get_capability(self._capabilities, dotted, False))

    @property
    def asks_milk_permission(self) -> bool:
        experimental = self._capabilities.experimental
        if not isinstance(experimental, dict):
            return False
        milk = experimental.get("milk")
        return isinstance(milk, dict) and bool(milk.get("requestPermission"))

    def shows_documents(self) -> bool:
        return self.supports("window.show_document.support")

    # ---- messages ---------------------------------------------------------------------

    def send_update(self, payload: dict[str, Any]) -> None:
        if payload.get("kind") == "turn_started":
            _TURN_ID.set(str(payload.get("turnId")))
        self._server.protocol.notify(wire.UPDATE, payload)
        for listener in self.update_listeners:
            try:
                listener(payload)
            except Exception:  # a listener's bug must not break the turn's stream
                logger.exception("update listener failed")

    def log(self, message: str, level: str = "info") -> None:
        logger.info("%s", message)
        self._server.window_log_message(
            types.LogMessageParams(
                type=_SEVERITY.get(level, types.MessageType.Log), message=message
            )
        )

    def show(self, message: str, level: str = "info") -> None:
        logger.info("%s", message)  # the user sees it: the log keeps it, stderr need not
        self._server.window_show_message(
            types.ShowMessageParams(
                type=_SEVERITY.get(level, types.MessageType.Info), message=message
            )
        )

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

    # ---- questions ----------------------------------------------------------------------

    async def ask_permission(self, params: dict[str, Any]) -> str:
        """milk/requestPermission, or window/showMessageRequest for clients without it."""
        for listener in self.question_listeners:
            listener(params, None)
        answer = await self._ask_permission(params)
        for listener in self.question_listeners:
            listener(params, answer)
        return answer

    async def _ask_permission(self, params: dict[str, Any]) -> str:
        option_ids: list[str] = params["options"]
        labels: dict[str, str] = {**wire.PERMISSION_LABELS, **params.get("labels", {})}
        if self.asks_milk_permission:
            request = wire.RequestPermissionParams.model_validate(
                {**params, "options": wire.permission_options(option_ids, labels)}
            )
            answer = await self._request(wire.REQUEST_PERMISSION, request.to_wire())
            if isinstance(answer, dict) and answer.get("optionId") in option_ids:
                return str(answer["optionId"])
            return "deny"
        by_label = {labels[oid]: oid for oid in option_ids}
        message = self.question_text(params)
        show = types.ShowMessageRequestParams(
            type=types.MessageType.Warning,
            message=message,
            actions=[types.MessageActionItem(title=label) for label in by_label],
        )
        answer = await self._request(types.WINDOW_SHOW_MESSAGE_REQUEST, show)
        title = getattr(answer, "title", None)
        if title is None and isinstance(answer, dict):
            title = answer.get("title")
        return by_label.get(str(title), "deny") if title is not None else "deny"

    async def _request(self, method: str, params: Any) -> Any:
        """A server→client request that is cancelled on the client when we stop waiting."""
        msg_id = str(uuid.uuid4())
        future = self._server.protocol.send_request_async(method, params, msg_id=msg_id)
        try:
            return await future
        except asyncio.CancelledError:
            self._server.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
            raise
        except Exception as exc:  # an error answer or a broken client counts as deny
            logger.warning("%s failed: %s", method, exc)
            return None

    async def choose(self, message: str, titles: list[str]) -> str | None:
        """Ask with buttons (`window/showMessageRequest`); None when dismissed."""
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

    # ---- documents --------------------------------------------------------------------

    def document(self, path: Path) -> Any:
        """The client's open document of `path`: by URI, else by resolved path."""
        documents = self._server.workspace.text_documents
        if path.as_uri() in documents:
            return documents[path.as_uri()]
        wanted = _resolved(path)
        for document in documents.values():
            if document.path and _resolved(Path(document.path)) == wanted:
                return document
        return None

    async def read_document(self, path: Path) -> str | None:
        """LSP clients send their open documents (text sync): nothing to ask for."""
        return self.open_document_text(path)

    def open_document_text(self, path: Path) -> str | None:
        doc = self.document(path)
        return None if doc is None else str(doc.source)

    async def apply_edit(self, path: Path, new_text: str) -> bool:
        """A file's whole text replaced in the client's buffer (the engine's edits)."""
        if not self.supports("workspace.apply_edit"):
            return False
        doc = self.document(path)
        if doc is None:
            return False
        whole = types.Range(
            start=types.Position(line=0, character=0),
            end=types.Position(line=len(doc.lines), character=0),
        )
        edit = types.TextEdit(range=whole, new_text=new_text)
        version = doc.version
        result = await self._apply_edits(doc.uri, [edit], "milk: edit file")
        if result is None:
            return False
        if getattr(result, "applied", False):
            if str(doc.source) != new_text:
                await self._synced(path, version)
            return True
        raise EditRejected(getattr(result, "failure_reason", None) or "the edit was not applied")

    async def _synced(self, path: Path, version: int | None) -> None:
        """Wait (briefly) for the client's `didChange` of an edit it applied: clients may
        answer `applyEdit` first and send the change later (Neovim debounces it), and what
        milk reads next (read_file, the edit checks) must be the edited text."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SYNC_WAIT_SECONDS
        while loop.time() < deadline:
            doc = self.document(path)
            if doc is None or doc.version != version:
                return
            await asyncio.sleep(0.01)
        logger.info("the client applied an edit of %s and sent no change yet", path)

    async def _apply_edits(self, uri: str, edits: list[types.TextEdit], label: str) -> Any:
        """`workspace/applyEdit` of one document; the client's answer, None when it failed."""
        params = types.ApplyWorkspaceEditParams(
            edit=types.WorkspaceEdit(changes={uri: edits}), label=label
        )
        try:
            return await self._server.workspace_apply_edit_async(params)
        except Exception as exc:
            logger.warning("workspace/applyEdit (%s) failed: %s", label, exc)
            return None

    # ---- transcript documents -------------------------------------------------------------

    @property
    def encoding(self) -> Encoding:
        negotiated = self._server.workspace.position_encoding
        return _ENCODINGS.get(str(getattr(negotiated, "value", negotiated)), "utf-16")

    def open_text(self, path: Path) -> tuple[str, str] | None:
        if not self.supports("workspace.apply_edit"):
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
        result = await self._apply_edits(uri, text_edits, "milk: transcript")
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
        """The client reported a change of `uri` (`didChange`)."""
        event = self._changed.get(uri)
        if event is not None:
            event.set()

    # ---- progress ---------------------------------------------------------------------

    async def progress_begin(self, title: str) -> object | None:
        if not self.supports("window.work_done_progress"):
            return None
        token = f"milk-{uuid.uuid4()}"
        try:
            # Shielded: a turn cancelled meanwhile must not cancel pygls' pending request,
            # whose late answer would then be reported as a server error.
            await asyncio.shield(self._server.work_done_progress.create_async(token))
        except Exception as exc:
            logger.info("work done progress refused: %s", exc)
            return None
        self._server.work_done_progress.begin(token, types.WorkDoneProgressBegin(title=title))
        turn_id = _TURN_ID.get()
        if turn_id is not None:
            self._turn_progress[turn_id] = token
        return token

    def report_status(self, turn_id: str, message: str) -> None:
        """A progress report on the turn's own token (none yet, or ended: nothing)."""
        self.progress_report(self._turn_progress.get(turn_id), message)

    def progress_report(self, token: object | None, message: str) -> None:
        if isinstance(token, str):
            self._server.work_done_progress.report(
                token, types.WorkDoneProgressReport(message=message)
            )

    def progress_end(self, token: object | None, message: str) -> None:
        for turn_id in [t for t, known in self._turn_progress.items() if known == token]:
            del self._turn_progress[turn_id]
        if isinstance(token, str):
            self._server.work_done_progress.end(token, types.WorkDoneProgressEnd(message=message))


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path
