"""The editor side of the engine's `ClientBridge`: updates, permission prompts, documents,
edits and work-done progress, each mapped onto what this client supports."""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.capabilities import get_capability

from milk_lsp import wire
from milk_lsp.agents.base import EditRejected
from milk_lsp.workspace.edit_preview import wire_edit_diff

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer

logger = logging.getLogger(__name__)

_TURN_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("milk_turn", default=None)
"""The turn whose task this is: set by its `turn_started`, so the progress token the turn
begins next (in the same task, or one it starts) is known as that turn's."""

_SEVERITY = {
    "error": types.MessageType.Error,
    "warn": types.MessageType.Warning,
    "info": types.MessageType.Info,
}


class EditorBridge:
    """Implements `milk_lsp.engine.turn.ClientBridge` over a pygls server."""

    def __init__(self, server: LanguageServer) -> None:
        self._server = server
        self._capabilities = types.ClientCapabilities()
        self.update_listeners: list[Callable[[dict[str, Any]], None]] = []
        """Called with every `milk/update` after it is sent (the transcripts, `$/progress`)."""
        self._turn_progress: dict[str, str] = {}
        """Turn id → its work-done progress token, while the turn runs."""

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
        logger.warning("%s", message)
        self._server.window_show_message(
            types.ShowMessageParams(
                type=_SEVERITY.get(level, types.MessageType.Info), message=message
            )
        )

    # ---- permissions ------------------------------------------------------------------

    async def ask_permission(self, params: dict[str, Any]) -> str:
        """milk/requestPermission, or window/showMessageRequest for clients without it."""
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
        message = _question_text(params)
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

    # ---- documents --------------------------------------------------------------------

    def _document(self, path: Path) -> Any:
        """The open document of `path`, matched by URI, else by resolved path."""
        wanted = path.resolve()
        docs = self._server.workspace.text_documents
        if wanted.as_uri() in docs:
            return docs[wanted.as_uri()]
        for doc in docs.values():
            if doc.path and Path(doc.path).resolve() == wanted:
                return doc
        return None

    async def read_document(self, path: Path) -> str | None:
        """LSP clients send their open documents (text sync): nothing to ask for."""
        return self.open_document_text(path)

    def open_document_text(self, path: Path) -> str | None:
        doc = self._document(path)
        return None if doc is None else str(doc.source)

    async def apply_edit(self, path: Path, new_text: str) -> bool:
        if not self.supports("workspace.apply_edit"):
            return False
        doc = self._document(path)
        if doc is None:
            return False
        lines = doc.lines
        end = types.Position(line=len(lines), character=0)
        edit = types.WorkspaceEdit(
            changes={
                doc.uri: [
                    types.TextEdit(
                        range=types.Range(start=types.Position(line=0, character=0), end=end),
                        new_text=new_text,
                    )
                ]
            }
        )
        try:
            result = await self._server.workspace_apply_edit_async(
                types.ApplyWorkspaceEditParams(edit=edit, label="milk: edit file")
            )
        except Exception as exc:
            logger.warning("workspace/applyEdit failed: %s", exc)
            return False
        if getattr(result, "applied", False):
            return True
        raise EditRejected(getattr(result, "failure_reason", None) or "the edit was not applied")

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

    def report_turn_status(self, turn_id: str, message: str) -> None:
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


def _question_text(params: dict[str, Any]) -> str:
    """A permission question as one readable message: who wants what, and for an edit
    the unified diff of each file (a client with only `showMessageRequest` shows this)."""
    if params.get("labels") and params.get("description"):  # a question of milk's own
        return str(params["description"])
    agent = "Claude" if params.get("agent") == "claude" else "The local model"
    edits = params.get("edits") or []
    if edits:
        diffs = [wire_edit_diff(edit) for edit in edits]
        return f"{agent} wants to change {len(edits)} file(s) with {params['tool']}:\n" + (
            "\n".join(diffs)
        )
    tool_input = params.get("input") or {}
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    if isinstance(command, str):
        shown = f"run `{command}`"
    else:
        shown = f"use {params['tool']}: {_short_json(tool_input)}"
    message = f"{agent} wants to {shown}"
    if params.get("description"):
        message = f"{message}\n{params['description']}"
    return message


def _short_json(value: Any, limit: int = 300) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + "…"
