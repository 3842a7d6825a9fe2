"""The engine's `ClientBridge` over ACP: updates, permission questions, the client's buffers.

* `send_update`: each `milk/update` payload becomes `session/update` notifications
  (`updates.UpdateMapper`), written at once so they precede the prompt's response.
* `ask_permission`: `session/request_permission` with milk's option ids as ACP option ids
  (`allow_once` → kind allow_once, `allow_session` → allow_always, `deny` → reject_once;
  the hand-off question's own labels become the option names). Whatever is not a selected,
  offered option counts as deny: a `cancelled` outcome (a cancelled prompt), an error answer,
  a lost client.
* Buffers: ACP has no document sync, so the text of the editor's files reaches milk three
  ways, all kept per session in `OpenSession.buffers`: text resources embedded in a prompt;
  resource links and every file the local agent reads or edits, read with
  `fs/read_text_file` when the client offers it (`read_document`, awaited by the tools);
  and what milk wrote with `fs/write_text_file`. The session's known files are read again
  at the start of every prompt, so they stay fresh. Without `fs.readTextFile` the embedded
  texts live for their own prompt only; without `fs.writeTextFile` edits go to disk, as with LSP.

The open session of the running prompt is in `current_session` (a context variable the
turn's task inherits), because `open_document_text` and `apply_edit` carry no session id.
"""

from __future__ import annotations

import asyncio
import logging
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from acp import RequestError
from acp.schema import (
    ContentToolCallContent,
    PermissionOption,
    ReadTextFileRequest,
    ReadTextFileResponse,
    RequestPermissionRequest,
    RequestPermissionResponse,
    SessionNotification,
    ToolCallProgress,
    ToolCallUpdate,
    WriteTextFileRequest,
)

from milk_lsp import wire
from milk_lsp.acp.updates import SessionUpdate, UpdateMapper, text_block
from milk_lsp.agents.base import EditRejected

logger = logging.getLogger(__name__)

OPTION_KINDS = {"allow_once": "allow_once", "allow_session": "allow_always", "deny": "reject_once"}
CLIENT_READ_SECONDS = 10.0
"""Longest wait for `fs/read_text_file`; a client that takes longer is read from disk."""
MAX_BUFFERS = 32
"""Files a session keeps (and re-reads at each prompt), newest first."""


class ClientLink(Protocol):
    """What the bridge needs of the connection: notifications and requests to the client."""

    def notify(self, method: str, params: dict[str, Any]) -> None: ...

    async def request(self, method: str, params: dict[str, Any]) -> Any: ...


@dataclass
class OpenSession:
    """An ACP session this process serves, bound to one milk session."""

    acp_id: str
    milk_id: str
    workspace: Path
    mode: str
    """The mode the user chose: the route every prompt is sent with."""
    mapper: UpdateMapper
    shown_mode: str = ""
    """The mode the client was last told (`claude` while an `auto` session is with Claude)."""
    buffers: dict[Path, str] = field(default_factory=dict)
    prompt: asyncio.Task[Any] | None = None
    """The running `session/prompt`, which `session/cancel` cancels."""
    mcp_notice: str = ""
    """Told once, after the first turn the local model answers: the client's MCP servers
    it cannot use ("" once told, or when there are none)."""


current_session: ContextVar[OpenSession | None] = ContextVar("milk_acp_session", default=None)


def dump(model: Any) -> dict[str, Any]:
    """An ACP model as wire JSON (the SDK's own `serialize_params` rules)."""
    data: dict[str, Any] = model.model_dump(
        mode="json", by_alias=True, exclude_none=True, exclude_defaults=True
    )
    return data


class AcpBridge:
    """Implements `milk_lsp.engine.turn.ClientBridge` for one ACP connection."""

    def __init__(self, link: ClientLink) -> None:
        self._link = link
        self.sessions: dict[str, OpenSession] = {}
        """By ACP session id."""
        self._by_milk: dict[str, OpenSession] = {}
        self.can_read = False
        self.can_write = False

    # ---- sessions ---------------------------------------------------------------------

    def open(self, session: OpenSession) -> None:
        old = self.sessions.get(session.acp_id)
        if old is not None:
            self._by_milk.pop(old.milk_id, None)
        self.sessions[session.acp_id] = session
        self._by_milk[session.milk_id] = session

    def notify(self, session: OpenSession, update: SessionUpdate | Any) -> None:
        notification = SessionNotification(session_id=session.acp_id, update=update)
        self._link.notify("session/update", dump(notification))

    # ---- ClientBridge -----------------------------------------------------------------

    def send_update(self, payload: dict[str, Any]) -> None:
        session = self._by_milk.get(str(payload.get("sessionId")))
        if session is None:
            logger.debug("update for a session no client has open: %s", payload.get("kind"))
            return
        for update in session.mapper.updates(payload):
            self.notify(session, update)

    async def ask_permission(self, params: dict[str, Any]) -> str:
        session = self._by_milk.get(str(params.get("sessionId")))
        option_ids: list[str] = list(params.get("options") or [])
        if session is None or not option_ids:
            return "deny"
        labels = {**wire.PERMISSION_LABELS, **(params.get("labels") or {})}
        call_id = str(params.get("toolCallId", ""))
        tool = str(params.get("tool", ""))
        tool_input = params.get("input") if isinstance(params.get("input"), dict) else {}
        assert isinstance(tool_input, dict)
        meta = {"milk": {"turnId": params.get("turnId"), "agent": params.get("agent")}}
        synthetic = not session.mapper.knows(call_id)
        if synthetic:  # milk's own question (the hand-off): announce it as a call first
            self.notify(session, session.mapper.announce(call_id, tool, tool_input, meta))
        view = session.mapper.view(call_id)
        description = str(params.get("description") or "")
        content: list[Any] = list(view.diffs) if view is not None else []
        if description:
            content.append(ContentToolCallContent(type="content", content=text_block(description)))
        request = RequestPermissionRequest(
            session_id=session.acp_id,
            tool_call=ToolCallUpdate(
                tool_call_id=call_id,
                title=view.title if view is not None else tool,
                kind=view.kind if view is not None else "other",
                status="pending",
                raw_input=tool_input,
                content=content or None,
                locations=(view.locations or None) if view is not None else None,
            ),
            options=[
                PermissionOption(
                    option_id=option,
                    name=labels.get(option, option),
                    kind=OPTION_KINDS.get(option, "reject_once"),
                )
                for option in option_ids
            ],
            field_meta={"milk": {**meta["milk"], "tool": tool}},
        )
        session.mapper.asking(call_id)
        try:
            answer = await self._link.request("session/request_permission", dump(request))
        except asyncio.CancelledError:
            if synthetic:
                self._close_synthetic(session, call_id, "failed", "Cancelled.")
            raise
        except Exception as exc:  # an error answer or a lost client: deny
            logger.warning("session/request_permission failed: %s", exc)
            answer = None
        choice = _chosen(answer, option_ids)
        if synthetic:
            self._close_synthetic(session, call_id, "completed", f"{labels.get(choice, choice)}.")
        return choice

    def _close_synthetic(self, session: OpenSession, call_id: str, status: str, text: str) -> None:
        session.mapper.close(call_id, status)
        self.notify(
            session,
            ToolCallProgress(
                session_update="tool_call_update",
                tool_call_id=call_id,
                status=status,
                content=[ContentToolCallContent(type="content", content=text_block(text))],
            ),
        )

    async def read_document(self, path: Path) -> str | None:
        """The editor's text of `path`: a buffer the session holds, else asked for with
        `fs/read_text_file` when the client offers it (the local agent's `read_file` of
        any file reads the unsaved text)."""
        known = self.open_document_text(path)
        session = current_session.get()
        if known is not None or session is None or not self.can_read:
            return known
        return await self.read_buffer(session, path)

    def open_document_text(self, path: Path) -> str | None:
        session = current_session.get()
        if session is None:
            return None
        return session.buffers.get(_key(path))

    async def apply_edit(self, path: Path, new_text: str) -> bool:
        session = current_session.get()
        key = _key(path)
        if session is None or key not in session.buffers:
            return False
        if not self.can_write:
            del session.buffers[key]  # the tools write the file on disk: the copy is stale
            return False
        request = WriteTextFileRequest(session_id=session.acp_id, path=str(key), content=new_text)
        try:
            await self._link.request("fs/write_text_file", dump(request))
        except RequestError as exc:
            session.buffers.pop(key, None)
            raise EditRejected(str(exc) or "the client refused to write the file") from exc
        except (ConnectionError, OSError) as exc:
            logger.warning("fs/write_text_file failed: %s; writing to disk", exc)
            session.buffers.pop(key, None)
            return False
        session.buffers[key] = new_text
        # A client that saved it (acpx writes the file itself): not an unsaved buffer edit,
        # so the tool writes the same text and says the file is edited, not "in the editor
        # (not saved yet)", and undo restores it from the disk checkpoint like any write.
        return not await asyncio.to_thread(_on_disk, key, new_text)

    async def progress_begin(self, title: str) -> object | None:
        return None  # ACP has no progress; the updates and the prompt's end say it all

    def progress_report(self, token: object | None, message: str) -> None:
        return None

    def progress_end(self, token: object | None, message: str) -> None:
        return None

    # ---- the client's buffers -----------------------------------------------------------

    def keep_buffer(self, session: OpenSession, path: Path, text: str) -> None:
        key = _key(path)
        session.buffers.pop(key, None)
        session.buffers[key] = text
        while len(session.buffers) > MAX_BUFFERS:
            del session.buffers[next(iter(session.buffers))]

    async def read_buffer(self, session: OpenSession, path: Path) -> str | None:
        """The editor's text of `path` through `fs/read_text_file` (kept); None when the
        client cannot read it."""
        if not self.can_read:
            return None
        request = ReadTextFileRequest(session_id=session.acp_id, path=str(_key(path)))
        try:
            answer = await asyncio.wait_for(
                self._link.request("fs/read_text_file", dump(request)), CLIENT_READ_SECONDS
            )
            text = ReadTextFileResponse.model_validate(answer).content
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # no such file, a refusal, a bad answer: not a buffer
            logger.debug("fs/read_text_file %s: %s", path, exc)
            session.buffers.pop(_key(path), None)
            return None
        self.keep_buffer(session, path, text)
        return text

    async def refresh_buffers(self, session: OpenSession) -> None:
        """At a prompt's start: read the session's files again (the user may have typed
        since), or forget them when the client cannot be asked."""
        if not self.can_read:
            session.buffers.clear()
            return
        paths = list(session.buffers)
        await asyncio.gather(*(self.read_buffer(session, path) for path in paths))


def _key(path: Path) -> Path:
    return path.resolve()


def _on_disk(path: Path, text: str) -> bool:
    """Whether the file on disk holds exactly `text` (read no further than its size)."""
    data = text.encode("utf-8")
    try:
        with path.open("rb") as file:
            return file.read(len(data) + 1) == data
    except OSError:
        return False


def _chosen(answer: Any, option_ids: list[str]) -> str:
    try:
        outcome = RequestPermissionResponse.model_validate(answer).outcome
    except ValueError:  # not a permission answer at all
        return "deny"
    option = getattr(outcome, "option_id", None)
    return option if outcome.outcome == "selected" and option in option_ids else "deny"
