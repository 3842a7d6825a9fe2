"""The standard-LSP door: what the `milk.*` commands and code actions do.

An editor without milk's plugin has no session picker and cannot wait on a long request,
so this keeps a *current session* per workspace folder (the one a command or `milk/chat`
used last, else the newest, else a new one), starts turns in the background (a command
answers `{sessionId, turnId}` as soon as the turn has begun), shows each session's chat in
its transcript document, turns updates into progress words, and tells the user of a failed
command-started turn with `window/showMessage`. The LSP glue is `handlers.py`; the editor
side is `lsp.editor.Editor`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

from milk_lsp import wire
from milk_lsp.engine import Engine
from milk_lsp.engine.status import describe
from milk_lsp.engine.views import session_info
from milk_lsp.errors import EngineError
from milk_lsp.lsp.standard import commands as cmds
from milk_lsp.lsp.standard.progress import StatusThrottle, status_words
from milk_lsp.lsp.standard.questions import question_with_diff
from milk_lsp.lsp.standard.sync import DocumentPort, TranscriptBook, TranscriptSync, write_atomic
from milk_lsp.lsp.standard.transcript import (
    NEXT_ROUTE_KIND,
    QUESTION_KIND,
    clock,
    cursor_line,
    session_of_path,
    split_document,
)
from milk_lsp.sessions.model import Session, TurnRecord
from milk_lsp.text import fenced, one_line, plural
from milk_lsp.workspace.paths import path_to_uri, uri_to_path

logger = logging.getLogger(__name__)

SWITCH_CHOICES = 20
"""Sessions offered by `milk.switchSession` without an id (the newest)."""


class FrontClient(Protocol):
    """What the standard door asks of the editor (`lsp.editor.Editor` implements it)."""

    def show(self, message: str, level: str = "info") -> None: ...

    def log(self, message: str, level: str = "info") -> None: ...

    def shows_documents(self) -> bool: ...

    async def show_document(self, path: Path, take_focus: bool, line: int | None) -> bool: ...

    async def choose(self, message: str, titles: list[str]) -> str | None:
        """Ask with buttons (`window/showMessageRequest`); None when dismissed."""
        ...

    def report_status(self, turn_id: str, message: str) -> None: ...


class _EngineSource:
    """The engine as the transcripts' `TranscriptSource`."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def storage_file(self) -> Path:
        return self._engine.config.storage_path()

    async def get_session(self, session_id: str) -> Session:
        return await self._engine.sessions.get(session_id)

    async def session_records(self, session_id: str, turn_limit: int) -> list[TurnRecord]:
        return await self._engine.sessions.records(session_id, turn_limit)

    def is_busy(self, session_id: str) -> bool:
        return self._engine.is_busy(session_id)


class StandardDoor:
    """Commands, code actions and transcripts of one server (one editor connection)."""

    def __init__(self, engine: Engine, client: FrontClient, port: DocumentPort) -> None:
        self.engine = engine
        self._client = client
        self._port = port
        self.book = TranscriptBook(
            _EngineSource(engine),
            port,
            on_problem=lambda message: client.log(message, "warn"),
            on_session_used=self._session_used,
            reveal=self._reveal,
        )
        self._current: dict[str, str] = {}
        """Workspace folder (resolved path) → the current session's id."""
        self._last_folder: str | None = None
        self._starting: dict[str, asyncio.Future[str]] = {}
        """Session id → the turn id its command waits for (set by `turn_started`)."""
        self._command_turns: dict[str, str] = {}
        """Turns started by commands (turn id → session id), while they run."""
        self._tasks: set[asyncio.Task[Any]] = set()
        self._status = StatusThrottle(client.report_status)
        self._told_route: dict[str, str] = {}
        """Session id → the agent the transcript last said the next message goes to."""

    # ---- updates --------------------------------------------------------------------------

    def on_update(self, update: dict[str, Any]) -> None:
        """Every `milk/update` the server sends, as it is sent."""
        self.book.on_update(update)
        kind = update.get("kind")
        session_id = str(update.get("sessionId"))
        turn_id = str(update.get("turnId"))
        if kind == "turn_started" and not update.get("elsewhere"):  # not a command's turn
            waiting = self._starting.pop(session_id, None)
            if waiting is not None and not waiting.done():  # a command's turn
                self._command_turns[turn_id] = session_id
                waiting.set_result(turn_id)
        if kind == "turn_ended":
            self._status.forget(turn_id)
            self._command_turns.pop(turn_id, None)
            return
        words = status_words(update)
        if words is not None:
            self._status.report(turn_id, words)
        warning = kind == "notice" and update.get("severity") == "warning"
        if warning and turn_id in self._command_turns:
            self._client.show(f"milk: {update.get('message')}", "warn")

    def on_question(self, params: dict[str, Any], answer: str | None) -> None:
        """A permission question asked (`answer` None) or answered: the transcript shows
        both, the diff of an edit included (the editor's message stays one short line)."""
        update = {
            "sessionId": params.get("sessionId"),
            "turnId": params.get("turnId"),
            "kind": QUESTION_KIND,
            "params": params,
            "answer": answer,
        }
        self.book.on_update(update)

    def question_text(self, params: dict[str, Any]) -> str:
        """The `showMessageRequest` message: an edit's diff, then who asks for what, files
        relative to the workspace of the session's folder."""
        return question_with_diff(params, self._last_folder)

    async def _reveal(self, path: Path, line: int) -> object:
        if not self._client.shows_documents():
            return None
        return await self._client.show_document(path, False, line)

    def _tell_route(self, result: wire.TurnResult) -> None:
        """After a turn: say in the transcript where the next message goes, when that
        changed (sent to Claude, or back to the local model), with the way back."""
        route = result.next_route
        if route is None:
            return
        if self._told_route.get(result.session_id, "local") == route.agent:
            return
        self._told_route[result.session_id] = route.agent
        update = {
            "sessionId": result.session_id,
            "turnId": result.turn_id,
            "kind": NEXT_ROUTE_KIND,
            "agent": route.agent,
            "reason": route.reason,
        }
        self.book.on_update(update)

    def _session_used(self, session_id: str, workspace: str) -> None:
        self._current[workspace] = session_id
        self._last_folder = workspace

    # ---- sessions -----------------------------------------------------------------------

    def folder_for(self, uri: str | None) -> str:
        """The workspace folder a document belongs to, else the one used last, else the
        first (as a resolved path)."""
        folders = self.engine.sessions.workspaces
        path = uri_to_path(uri) if uri else None
        if path is not None:
            inside = [f for f in folders if path.resolve().is_relative_to(Path(f))]
            if inside:
                return max(inside, key=len)
        if self._last_folder is not None:
            return self._last_folder
        return self.engine.sessions.resolve_workspace(None)

    async def current_session(self, uri: str | None = None, create: bool = True) -> str | None:
        folder = self.folder_for(uri)
        session_id = self._current.get(folder)
        if session_id is not None:
            try:
                await self.engine.sessions.get(session_id)
                return session_id
            except EngineError:  # deleted meanwhile
                self._current.pop(folder, None)
        sessions = await self.engine.sessions.of_workspace(path_to_uri(folder))
        if sessions:
            session_id = sessions[0].id
        elif create:
            session = await self.engine.sessions.new(path_to_uri(folder), None)
            session_id = session.id
        else:
            return None
        self._session_used(session_id, folder)
        return session_id

    async def new_session(self, title: str | None) -> dict[str, Any]:
        folder = self.folder_for(None)
        session = await self.engine.sessions.new(path_to_uri(folder), title)
        self._session_used(session.id, session.workspace_folder)
        await self.show_transcript(session.id, take_focus=True)
        return session_info(session).to_wire()

    async def switch_session(self, session_id: str | None) -> dict[str, Any] | None:
        if session_id is None:
            session_id = await self._choose_session()
            if session_id is None:
                return None
        session = await self.engine.sessions.get(session_id)
        self._session_used(session.id, session.workspace_folder)
        await self.show_transcript(session.id, take_focus=True)
        return session_info(session).to_wire()

    async def _choose_session(self) -> str | None:
        folder = self.folder_for(None)
        sessions = await self.engine.sessions.of_workspace(path_to_uri(folder))
        if not sessions:
            self._client.show("milk: this folder has no sessions yet; ask a question first")
            return None
        current = self._current.get(folder)
        by_title: dict[str, str] = {}
        for session in sessions[:SWITCH_CHOICES]:
            title = one_line(session.title) or "(untitled)"
            title = f"{title} · {clock(session.updated_at)}"
            if session.id == current:
                title += " (current)"
            while title in by_title:
                title += " ·"
            by_title[title] = session.id
        chosen = await self._client.choose("milk: switch to which session?", list(by_title))
        return None if chosen is None else by_title.get(chosen)

    # ---- turns ----------------------------------------------------------------------------

    async def ask(
        self,
        question: cmds.Question,
        route: wire.Route | None = None,
        default: str | None = None,
    ) -> dict[str, Any]:
        """`milk.ask`, `milk.send` and the code actions' questions: start the turn. Without
        a text, the question is the transcript's question area (cleared once the turn has
        begun), else `default`."""
        session_id = self.transcript_session(question.uri)
        session_id = session_id or await self.current_session(question.uri)
        assert session_id is not None
        text = question.text
        area: TranscriptSync | None = None
        if text is None:
            sync = await self.book.sync_for(session_id)
            typed = await self._area_text(sync)
            if typed.strip():
                text, area = typed, sync
            elif default is not None:
                text = default
            else:
                raise cmds.ArgumentError(
                    f"arguments: no question given, and the question area of {sync.path} is "
                    "empty: type your question below its marker line, then run milk.send"
                )
        params = wire.ChatParams(
            session_id=session_id,
            text=text.strip(),
            route=route or question.route,
            context=list(question.context),
        )
        taken = text
        return await self._start(
            session_id,
            params.text + _attached_note(question.context),
            lambda: self.engine.chat(params),
            on_began=None if area is None else lambda: area.take_question(taken),
        )

    async def escalate(self, text: str | None) -> dict[str, Any]:
        session_id = await self.current_session()
        assert session_id is not None
        params = wire.EscalateParams(session_id=session_id, text=text)
        return await self._start(session_id, text, lambda: self.engine.escalate(params))

    async def cancel(self) -> dict[str, Any]:
        """The current session's turn; when it runs none, the newest turn a command started."""
        session_id = await self.current_session(create=False)
        if session_id is None or not self.engine.is_busy(session_id):
            running = [s for s in self._command_turns.values() if self.engine.is_busy(s)]
            session_id = running[-1] if running else session_id
        if session_id is None:
            return {"cancelled": False}
        return {"cancelled": await self.engine.cancel(session_id)}

    async def _start(
        self,
        session_id: str,
        question: str | None,
        run: Callable[[], Awaitable[wire.TurnResult]],
        on_began: Callable[[], None] | None = None,
    ) -> dict[str, Any]:
        """Start a turn in the background; answer once it has begun (or failed to).
        `on_began` runs once it has (a question taken from the question area is cleared)."""
        if self.engine.is_busy(session_id):
            raise EngineError(
                wire.RequestErrorReason.SESSION_BUSY,
                f"session {session_id} is still running a turn; run milk.cancel or wait",
            )
        began: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._starting[session_id] = began
        if question is not None:
            self.book.expect_question(session_id, question)
        task = asyncio.create_task(self._run_turn(run, began))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        try:
            waiting: set[asyncio.Future[Any]] = {began, task}
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if self._starting.get(session_id) is began:
                del self._starting[session_id]
        if not began.done():  # refused before it began: its error is the command's
            began.cancel()
            self.book.forget_question(session_id)
            task.result()
            raise EngineError(wire.RequestErrorReason.SESSION_BUSY, "the turn did not start")
        turn_id = began.result()
        if on_began is not None:
            on_began()
        await self.show_transcript(session_id, take_focus=False)
        return {"sessionId": session_id, "turnId": turn_id}

    async def _run_turn(
        self, run: Callable[[], Awaitable[wire.TurnResult]], began: asyncio.Future[str]
    ) -> None:
        try:
            result = await run()
        except EngineError as exc:
            if not began.done():
                raise
            self._client.show(f"milk: the turn failed: {exc.message}", "error")
            return
        self._tell_route(result)
        if result.error is not None:
            self._client.show(f"milk: the turn failed: {result.error.message}", "error")

    async def _area_text(self, sync: TranscriptSync) -> str:
        """The question area as the client has it (open), else as the file has it (the
        user may have typed into it with any editor), else as milk last saw it."""
        opened = self.book.port.open_text(sync.path)
        text = opened[1] if opened is not None else await asyncio.to_thread(_read, sync.path)
        split = split_document(text) if text is not None else None
        return split[1] if split is not None else sync.question

    # ---- documents ------------------------------------------------------------------------

    def transcript_session(self, uri: str | None) -> str | None:
        """The session whose transcript `uri` is (None: another document)."""
        path = uri_to_path(uri) if uri else None
        session_id = session_of_path(path) if path is not None else None
        if path is None or session_id is None:
            return None
        return session_id if _same_file(self.book.path_for(session_id), path) else None

    async def show_transcript(self, session_id: str, take_focus: bool) -> Path:
        """Bring the transcript up to date on disk and show it (if the client can)."""
        sync = await self.book.sync_for(session_id)
        if self.book.port.open_text(sync.path) is not None and not take_focus:
            return sync.path  # already open: it streams there
        await sync.settled()
        if self._client.shows_documents():
            line = cursor_line(sync.body, sync.question)
            await self._client.show_document(sync.path, take_focus, line)
        elif take_focus:
            self._client.show(f"milk: the transcript is {sync.path}")
        return sync.path

    async def open_transcript(self) -> dict[str, Any]:
        session_id = await self.current_session()
        assert session_id is not None
        path = await self.show_transcript(session_id, take_focus=True)
        return {"sessionId": session_id, "uri": path.as_uri()}

    async def show_context(self) -> dict[str, Any]:
        session_id = await self.current_session()
        assert session_id is not None
        preview = await self.engine.context_preview(session_id, None)
        path = self.engine.config.storage_path().parent / "context" / f"{session_id}.md"
        await asyncio.to_thread(write_atomic, path, context_markdown(preview), 0o444)
        if self._client.shows_documents():
            await self._client.show_document(path, True, None)
        else:
            self._client.show(f"milk: what Claude would get is in {path}")
        return {"uri": path.as_uri(), **preview.to_wire()}

    async def status(self) -> dict[str, Any]:
        """`milk/status` in words, and where the current session's next message goes."""
        status = await self.engine.status()
        lines, problems = describe(status, f"sessions: {status.storage}")
        answer = status.to_wire()
        session_id = await self.current_session(create=False)
        if session_id is not None:
            info = session_info(await self.engine.sessions.get(session_id))
            lines.append(next_route_words(info))
            answer["session"] = info.to_wire()
        self._client.show("\n".join(lines), "warn" if problems else "info")
        return answer

    async def undo(self, args: cmds.UndoArgs) -> dict[str, Any]:
        session_id = await self.current_session(create=False)
        if session_id is None:
            raise cmds.ArgumentError("arguments: there is no session here to undo a turn of")
        turn_id = args.turn_id or await self._last_changed_turn(session_id)
        if turn_id is None:
            raise cmds.ArgumentError(
                "arguments: nothing to undo: no turn of the current session changed files "
                "that is not undone yet"
            )
        restored = await self.engine.turn_undo(session_id, turn_id, args.force)
        uris = [Path(path).as_uri() for path in restored]
        sync = await self.book.sync_for(session_id)
        names = ", ".join(f"`{Path(path).name}`" for path in restored) or "nothing to restore"
        sync.append(sync.renderer.note(f"Undid turn `{turn_id}`: {names}."), urgent=True)
        message = f"milk: undid the turn's changes ({plural(len(uris), 'file')} restored)"
        stale = self._modified_as_on_disk(restored)
        if stale:
            # standard LSP has no way to mark a buffer saved: the user reloads it
            message += (
                f". {', '.join(stale)}: the editor's text is the file's again but may still be"
                " marked modified; reload it from disk (Neovim :edit, Emacs revert-buffer)"
            )
        self._client.show(message)
        return {"restored": uris, "turnId": turn_id}

    def _modified_as_on_disk(self, restored: list[str]) -> list[str]:
        """The restored files open in the editor whose buffer now equals the file on disk:
        the undo reverted an unsaved edit there, and the editor's modified mark stays."""
        names = []
        for path in restored:
            opened = self._port.open_text(Path(path))
            try:
                on_disk = Path(path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if opened is not None and opened[1] == on_disk:
                names.append(Path(path).name)
        return names

    async def _last_changed_turn(self, session_id: str) -> str | None:
        return await self.engine.last_undoable_turn(session_id)


def next_route_words(info: wire.SessionInfo) -> str:
    """`milk.status`'s line about the current session: where its next message goes."""
    route = info.next_route
    if route is None:
        return f"current session {info.session_id}"
    if route.agent == "claude":
        return (
            f"→ next message of session {info.session_id}: Claude ({route.reason}); "
            "milk.askLocal asks the local model and takes the session back"
        )
    return f"→ next message of session {info.session_id}: local model ({route.reason})"


def _same_file(one: Path, other: Path) -> bool:
    try:
        return one.resolve() == other.resolve()
    except OSError:
        return one == other


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def context_markdown(preview: wire.ContextPreview) -> str:
    """`milk/context` as a read-only Markdown document."""
    return (
        "# What Claude would get now\n\n"
        "milk wrote this preview (read-only); nothing was sent. Mode: "
        f"**{preview.mode}**; {preview.chars.context_file:,} characters of context file, "
        f"{preview.chars.user_message_prefix:,} before your message.\n\n"
        "## Command line\n\n"
        + fenced(" ".join(preview.argv), "sh")
        + "\n## Context file\n\n"
        + fenced(preview.context_file or "(empty)", "markdown")
        + "\n## Before your message\n\n"
        + fenced(preview.user_message_prefix or "(nothing)")
    )


def _attached_note(context: tuple[wire.ContextItem, ...] | list[wire.ContextItem]) -> str:
    """What a question carried besides its text, for the transcript (the model gets the text
    itself): `> about hello.py, lines 2-4`."""
    about: list[str] = []
    for item in context:
        path = uri_to_path(item.uri)
        name = f"`{path.name if path is not None else item.uri}`"
        if item.range is not None:
            first, last = item.range.start.line + 1, item.range.end.line + 1
            if item.range.end.character == 0 and last > first:
                last -= 1  # a selection of whole lines ends at the next line's start
            name += f", line {first}" if first == last else f", lines {first}-{last}"
        about.append(name)
    return f"\n\n> about {'; '.join(about)}" if about else ""
