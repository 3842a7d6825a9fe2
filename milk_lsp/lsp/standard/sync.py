"""Keeping each session's transcript document up to date, in the editor or on disk.

While the client has the document open (and applies edits), what the body gained since the
last edit goes to it as one insertion per batch, at most one batch per `EDIT_INTERVAL_SECONDS`
and one in flight at a time, so the client sees every character in order. Before each
batch milk compares the client's text before the marker with what it last wrote: if the
client has not caught up yet milk waits for its change; if it differs otherwise (the user
edited it, an edit was lost or refused) milk replaces the whole document, keeping what the
user typed in the question area. While closed, the document is written on disk (atomically,
at most once per `DISK_INTERVAL_SECONDS` while a turn streams, at once when asked).

Everything here runs on the event loop; disk work goes to a worker thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

from milk_lsp.lsp.positions import Encoding
from milk_lsp.lsp.standard.edits import Edit, plan_edits, without
from milk_lsp.lsp.standard.transcript import (
    TranscriptRenderer,
    header,
    join_document,
    rendered_turns,
    session_of_path,
    split_document,
    transcript_path,
)
from milk_lsp.sessions.model import Role, Session, TurnRecord
from milk_lsp.system.files import write_atomically

logger = logging.getLogger(__name__)

EDIT_INTERVAL_SECONDS = 0.1
"""At most ten edits a second reach the client."""
DISK_INTERVAL_SECONDS = 1.0
"""A closed transcript is rewritten at most once a second while a turn streams."""
ECHO_WAIT_SECONDS = 2.0
"""How long the client may take to report (didChange) an edit it applied."""
REFUSED_EDITS_LIMIT = 3
"""Refused edits in a row after which milk writes the file instead, until it is reopened."""
HISTORY_TURNS = 200
"""Stored turns shown when a session's transcript is made (or catches up)."""
REVEAL_INTERVAL_SECONDS = 1.0
"""An open transcript is scrolled to its newest text at most once a second (and once more
when the text stops growing)."""

Reveal = Callable[[Path, int], Awaitable[object]]
"""Show `path` with the cursor on a 0-based line, without taking the focus."""


async def _no_reveal(path: Path, line: int) -> None:
    return None


# ---- one document -----------------------------------------------------------------------


class DocumentPort(Protocol):
    """The editor side of transcript documents (`lsp.editor.Editor` implements it)."""

    @property
    def encoding(self) -> Encoding: ...

    def open_text(self, path: Path) -> tuple[str, str] | None:
        """(uri, text) of the client's open buffer of `path`, when it takes edits."""
        ...

    async def apply(self, uri: str, edits: list[Edit]) -> bool: ...

    async def changed(self, uri: str, timeout_seconds: float) -> bool:
        """Wait for the client's next change of `uri`; False on timeout."""
        ...


class TranscriptSync:
    """One session's transcript: the body milk keeps, and sending it where it is shown."""

    def __init__(
        self,
        session_id: str,
        path: Path,
        body: str,
        question: str,
        port: DocumentPort,
        workspace: str,
        on_problem: Callable[[str], None],
        reveal: Reveal = _no_reveal,
    ) -> None:
        self.session_id = session_id
        self.path = path
        self.workspace = workspace
        self._parts = [body]
        """The body in the pieces it grew by: appends stay cheap; joined when sent."""
        self.question = question
        """The question area as last seen (client buffer or file); the user's."""
        self.renderer = TranscriptRenderer(body, workspace)
        self._port = port
        self._on_problem = on_problem
        self._confirmed: str | None = None
        self._taken: str | None = None
        self._force = False
        self._refused = 0
        self._disk_text: str | None = None
        self._dirty = False
        self._urgent = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._task: asyncio.Task[None] | None = None
        self._last_flush = float("-inf")
        self._reveal = reveal
        self._grown = False
        """The client's buffer got text below what was last revealed."""
        self._last_reveal = float("-inf")
        self._revealing: asyncio.Task[object] | None = None

    # ---- what changes -----------------------------------------------------------------

    @property
    def body(self) -> str:
        """milk's part of the document, everything above the question area."""
        if len(self._parts) > 1:
            self._parts = ["".join(self._parts)]
        return self._parts[0]

    def append(self, text: str, *, urgent: bool = False) -> None:
        if text:
            self._parts.append(text)
            self._schedule(urgent)

    def take_question(self, question: str) -> None:
        """milk.send took this text: clear it from the question area (client and disk)."""
        self._taken = question
        self.question = without(self.question, question)
        self._schedule(urgent=True)

    def opened(self, text: str) -> None:
        """The client opened the document with `text`."""
        split = split_document(text)
        self._confirmed = split[0] if split and self.body.startswith(split[0]) else None
        self._refused = 0
        if split is not None:
            self.question = split[1]
        self._schedule(urgent=True)

    def client_changed(self, text: str) -> None:
        split = split_document(text)
        if split is not None:
            self.question = split[1]

    def closed(self) -> None:
        self._confirmed = None
        self._disk_text = None  # the client may have saved its buffer over the file
        self._schedule(urgent=True)

    def touch(self) -> None:
        """Bring the client or the file up to date (a new transcript is written at once)."""
        self._schedule(urgent=True)

    async def settled(self) -> None:
        """Wait until everything so far reached the client or the disk."""
        self._schedule(urgent=True)
        await self._idle.wait()

    # ---- the flush loop -----------------------------------------------------------------

    def _schedule(self, urgent: bool) -> None:
        self._dirty = True
        self._idle.clear()
        if urgent:
            self._urgent.set()
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        try:
            while self._dirty:
                opened = self._port.open_text(self.path)
                editing = opened is not None and self._refused < REFUSED_EDITS_LIMIT
                await self._pace(EDIT_INTERVAL_SECONDS if editing else DISK_INTERVAL_SECONDS)
                self._dirty = False
                opened = self._port.open_text(self.path)  # it may have opened meanwhile
                if opened is not None and self._refused < REFUSED_EDITS_LIMIT:
                    await self._flush_open(*opened)
                    self._reveal_newest()
                else:
                    await self._flush_disk()
                self._last_flush = asyncio.get_running_loop().time()
        except Exception as exc:  # the transcript is a view: it never takes a turn down
            self._dirty = False
            logger.exception("transcript %s", self.path)
            self._on_problem(f"milk: the transcript {self.path} could not be updated: {exc}")
        finally:
            if not self._dirty:
                self._idle.set()

    async def _pace(self, interval: float) -> None:
        """Wait until `EDIT_INTERVAL_SECONDS` after the last flush, and up to `interval`
        unless something urgent (a turn's end, a command waiting) comes first."""
        loop = asyncio.get_running_loop()
        await asyncio.sleep(max(0.0, self._last_flush + EDIT_INTERVAL_SECONDS - loop.time()))
        rest = self._last_flush + interval - loop.time()
        if rest > 0 and not self._urgent.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._urgent.wait(), rest)
        self._urgent.clear()

    async def _flush_open(self, uri: str, text: str) -> None:
        self.client_changed(text)
        body, taken = self.body, self._taken
        encoding = self._port.encoding
        plan = plan_edits(text, self._confirmed, body, taken, encoding, force=self._force)
        if plan.kind == "none":
            self._taken = None
            return
        if plan.kind == "wait":
            if not await self._port.changed(uri, ECHO_WAIT_SECONDS):
                self._force = True  # the client never reported it: replace the whole text
            self._dirty = True
            return
        applied = await self._port.apply(uri, plan.edits)
        if applied:
            self._grown = self._grown or body != self._confirmed
            self._confirmed, self._force, self._refused = body, False, 0
            if self._taken is taken:  # (milk.send may have taken another one meanwhile)
                self._taken = None
            return
        self._refused += 1
        self._confirmed = None
        self._dirty = True
        if self._refused == REFUSED_EDITS_LIMIT:
            self._on_problem(
                f"milk: the editor refused edits of the transcript {self.path}; milk writes "
                "the file instead until you reopen it"
            )

    def _reveal_newest(self) -> None:
        """Scroll the client to the newest text (the last line of the body it has), at most
        once a second while it grows, the last reveal at most a second after it stopped."""
        if self._grown and (self._revealing is None or self._revealing.done()):
            self._revealing = asyncio.create_task(self._reveal_when_due())

    async def _reveal_when_due(self) -> object:
        """Never while the user has a question typed in the question area (the cursor is
        theirs then); a client that cannot show the document loses nothing."""
        loop = asyncio.get_running_loop()
        await asyncio.sleep(max(0.0, self._last_reveal + REVEAL_INTERVAL_SECONDS - loop.time()))
        shown = self._confirmed
        if not self._grown or shown is None or self.question.strip():
            return None
        self._grown, self._last_reveal = False, loop.time()
        try:
            return await self._reveal(self.path, shown.rstrip("\n").count("\n"))
        except Exception:
            logger.exception("revealing the transcript %s", self.path)
            return None

    async def _flush_disk(self) -> None:
        on_disk = await asyncio.to_thread(_read, self.path)
        if on_disk is not None and on_disk != self._disk_text:
            split = split_document(on_disk)
            if split is not None:  # the user may have typed a question into the file
                self.question = split[1]
        self.question = without(self.question, self._taken)
        self._taken = None
        text = join_document(self.body, self.question)
        if text == on_disk:
            self._disk_text = text
            return
        try:
            await asyncio.to_thread(write_atomic, self.path, text)
        except OSError as exc:
            self._on_problem(f"milk: cannot write the transcript {self.path}: {exc}")
            return
        self._disk_text = text


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def write_atomic(path: Path, text: str, mode: int = 0o600) -> None:
    """A transcript (or context view) on disk, its folder made when missing; a reader never
    sees half of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, text.encode("utf-8"), mode)


# ---- every session's transcript ------------------------------------------------------------


class TranscriptSource(Protocol):
    """What the transcripts read from milk (the engine fits it)."""

    def storage_file(self) -> Path: ...

    async def get_session(self, session_id: str) -> Session: ...

    async def session_records(self, session_id: str, turn_limit: int) -> list[TurnRecord]: ...

    def is_busy(self, session_id: str) -> bool: ...


class TranscriptBook:
    """The transcripts of the sessions this server has seen, fed with their updates."""

    def __init__(
        self,
        source: TranscriptSource,
        port: DocumentPort,
        on_problem: Callable[[str], None],
        on_session_used: Callable[[str, str], None] = lambda session_id, workspace: None,
        reveal: Reveal = _no_reveal,
    ) -> None:
        self._source = source
        self._reveal = reveal
        self._port = port
        self._on_problem = on_problem
        self._on_session_used = on_session_used
        self._syncs: dict[str, TranscriptSync] = {}
        self._loading: dict[str, asyncio.Future[TranscriptSync]] = {}
        self._queues: dict[str, deque[dict[str, Any]]] = {}
        self._workers: dict[str, asyncio.Task[None]] = {}
        self._questions: dict[str, str] = {}

    @property
    def port(self) -> DocumentPort:
        return self._port

    def loaded(self, session_id: str) -> TranscriptSync | None:
        return self._syncs.get(session_id)

    def by_path(self, path: Path) -> TranscriptSync | None:
        """The loaded transcript at `path`, if it is one (cheap for other documents: it is
        asked on every change the editor reports)."""
        session_id = session_of_path(path)
        if session_id is None:
            return None
        sync = self._syncs.get(session_id)
        if sync is not None and sync.path == path:
            return sync
        wanted = _resolved(path)
        for sync in self._syncs.values():
            if _resolved(sync.path) == wanted:
                return sync
        return None

    def path_for(self, session_id: str) -> Path:
        return transcript_path(self._source.storage_file(), session_id)

    def drop(self, session_id: str) -> None:
        """The session was deleted: its transcript goes with it (a file left behind would
        keep what the user chose to delete)."""
        worker = self._workers.pop(session_id, None)
        if worker is not None:
            worker.cancel()
        self._syncs.pop(session_id, None)
        self._queues.pop(session_id, None)
        self._questions.pop(session_id, None)
        path = self.path_for(session_id)
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            self._on_problem(
                f"milk: could not delete the transcript of a deleted session ({exc.strerror}); "
                f"delete {path} yourself"
            )

    def expect_question(self, session_id: str, question: str) -> None:
        """The user's text of the session's next turn (milk started it: no store read)."""
        self._questions[session_id] = question

    def forget_question(self, session_id: str) -> None:
        """The turn expected by `expect_question` did not start."""
        self._questions.pop(session_id, None)

    # ---- updates --------------------------------------------------------------------------

    def on_update(self, update: dict[str, Any]) -> None:
        """Called for every `milk/update` (in order); the rendering follows asynchronously."""
        session_id = update.get("sessionId")
        if not isinstance(session_id, str):
            return
        if update.get("elsewhere") and session_id not in self._syncs:
            return  # another door's turn: shown in a transcript this editor has, never new
        self._queues.setdefault(session_id, deque()).append(update)
        worker = self._workers.get(session_id)
        if worker is None or worker.done():
            self._workers[session_id] = asyncio.create_task(self._work(session_id))

    async def _work(self, session_id: str) -> None:
        queue = self._queues[session_id]
        try:
            sync = await self.sync_for(session_id)
        except Exception as exc:
            queue.clear()
            logger.warning("no transcript for session %s: %s", session_id, exc)
            return
        while queue:
            update = queue.popleft()
            question = None
            if update.get("kind") == "turn_started" and update.get("elsewhere"):
                question = str(update.get("userText") or "")  # not this editor's session pick
            elif update.get("kind") == "turn_started":
                self._on_session_used(session_id, sync.workspace)
                question = self._questions.pop(session_id, None)
                if question is None:
                    question = await self._stored_question(session_id, str(update.get("turnId")))
            ended = update.get("kind") == "turn_ended"
            sync.append(sync.renderer.render(update, question), urgent=ended)

    async def _stored_question(self, session_id: str, turn_id: str) -> str | None:
        try:
            records = await self._source.session_records(session_id, 1)
        except Exception as exc:
            logger.warning("session %s: cannot read the question: %s", session_id, exc)
            return None
        for record in records:
            if record.turn_id == turn_id and record.role is Role.USER:
                return record.text
        return None

    # ---- loading ----------------------------------------------------------------------------

    async def sync_for(self, session_id: str) -> TranscriptSync:
        """The session's transcript, made (or read back and caught up) on first use."""
        sync = self._syncs.get(session_id)
        if sync is not None:
            return sync
        loading = self._loading.get(session_id)
        if loading is None:
            loading = asyncio.ensure_future(self._load(session_id))
            self._loading[session_id] = loading
        try:
            return await asyncio.shield(loading)
        finally:
            if loading.done():
                self._loading.pop(session_id, None)

    async def _load(self, session_id: str) -> TranscriptSync:
        source = self._source
        session = await source.get_session(session_id)
        path = self.path_for(session_id)
        existing = await asyncio.to_thread(_read, path)
        split = split_document(existing) if existing is not None else None
        if split is not None:
            body, question = split
        elif existing and existing.strip():  # the marker was deleted: keep the text as body
            body, question = existing.rstrip("\n"), ""
        else:
            body = header(session.title, session_id, session.workspace_folder)
            question = ""
        records = await source.session_records(session_id, HISTORY_TURNS)
        live = {str(u.get("turnId")) for u in self._queues.get(session_id, ())}
        missing = _not_shown(records, rendered_turns(body) | live, source.is_busy(session_id))
        sync = TranscriptSync(
            session_id,
            path,
            body,
            question,
            self._port,
            session.workspace_folder,
            self._on_problem,
            self._reveal,
        )
        if missing:
            sync.append(sync.renderer.render_records(missing))
        self._syncs[session_id] = sync
        opened = self._port.open_text(path)
        if opened is not None:
            sync.opened(opened[1])
        elif existing is None or missing:
            sync.touch()
        return sync


def _not_shown(records: list[TurnRecord], shown: set[str], busy: bool) -> list[TurnRecord]:
    """Stored records of turns the transcript does not show yet; the newest turn is left
    out while it still runs here (its updates will show it)."""
    missing = [record for record in records if record.turn_id not in shown]
    if busy and missing:
        newest = missing[-1].turn_id
        rows = [r for r in missing if r.turn_id == newest]
        if all(r.role is Role.USER for r in rows):
            missing = [r for r in missing if r.turn_id != newest]
    return missing


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path
