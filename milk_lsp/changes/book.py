"""The engine's side of review and undo: a checkpoint before each turn, the turn's changes
after it (also when it was cancelled), `milk/turn/changes` and `milk/turn/undo`.

The checkpoint store lives next to the session database (`<data dir>/checkpoints`); a
workspace milk cannot checkpoint (too many files, a full disk) still gets its turns, with a
warning that undo covers only the edits milk applied in the editor.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from milk_lsp.changes.blobs import CheckpointUnavailable
from milk_lsp.changes.tracker import (
    ChangeTracker,
    SavedState,
    TurnChange,
    UndoConflict,
    later_touches,
    stored_changes,
)
from milk_lsp.config import MilkConfig
from milk_lsp.errors import EngineError, unknown_turn
from milk_lsp.sessions.model import Session, turn_ids
from milk_lsp.sessions.service import Sessions
from milk_lsp.wire import RequestErrorReason
from milk_lsp.workspace.confined import ConfinedRoot
from milk_lsp.workspace.edit_preview import capped
from milk_lsp.workspace.paths import shown_path

if TYPE_CHECKING:
    from milk_lsp.changes.checkpoints import Snapshot

logger = logging.getLogger(__name__)

UNDO_LOOKBACK_TURNS = 50
"""How far back "undo the last turn" looks for a turn with changes."""

EditorEdits = dict[Path, tuple[str | None, str]]
"""Files a turn changed in the editor's buffer (not on disk): first text before, last after."""


class EditorDocuments(Protocol):
    """The editor's open documents, as undo needs them (the door's bridge fits)."""

    def open_document_text(self, path: Path) -> str | None: ...

    async def apply_edit(self, path: Path, new_text: str) -> bool: ...


@dataclass(frozen=True)
class Before:
    """The workspace as the turn found it (None when it could not be checkpointed)."""

    snapshot: Snapshot | None


@dataclass(frozen=True)
class ChangeTexts:
    """One change with its texts, as `milk/turn/changes` returns it."""

    change: TurnChange
    before: str | None
    after: str | None
    truncated: bool


class ChangeBook:
    """Checkpoints around turns, and the `milk/turn/changes` / `milk/turn/undo` requests."""

    def __init__(
        self,
        config: Callable[[], MilkConfig],
        sessions: Sessions,
        documents: EditorDocuments,
    ) -> None:
        """`config` gives the storage path (the checkpoints live next to the database)."""
        self._config = config
        self._sessions = sessions
        self._documents = documents
        self._trackers: dict[Path, ChangeTracker] = {}
        self._warned: set[str] = set()
        """Workspaces whose 'cannot checkpoint' warning was shown (once per server)."""

    def tracker(self) -> ChangeTracker:
        root = self._config().storage_path().parent / "checkpoints"
        tracker = self._trackers.get(root)
        if tracker is None:
            tracker = self._trackers[root] = ChangeTracker(root)
        return tracker

    # ---- around a turn ----------------------------------------------------------------

    async def before_turn(self, session: Session) -> tuple[Before, str | None]:
        """Checkpoint the workspace; the second value is a warning to show, once."""
        workspace = session.workspace_folder
        try:
            snapshot = await asyncio.to_thread(self.tracker().snapshot, workspace)
        except Exception as exc:  # undo is a safety net: it never stops a turn
            if isinstance(exc, CheckpointUnavailable | OSError):
                logger.warning("no checkpoint of %s: %s", workspace, exc)
            else:
                logger.exception("checkpointing %s failed", workspace)
            if workspace in self._warned:
                return Before(None), None
            self._warned.add(workspace)
            return Before(None), (
                f"milk cannot keep a copy of this workspace to undo turns ({exc}); undo "
                "covers only the edits milk made in open editors."
            )
        return Before(snapshot), None

    def after_turn(
        self, workspace: str, turn_id: str, before: Before | None, editor_edits: EditorEdits
    ) -> list[TurnChange]:
        """The turn's changes (a worker thread: it checkpoints the workspace again)."""
        snapshot = before.snapshot if before is not None else None
        try:
            return self.tracker().changes(workspace, snapshot, editor_edits)
        except Exception as exc:  # a failure here must not lose the turn being saved
            logger.warning("turn %s: changes not recorded: %s", turn_id, exc)
        try:
            return self.tracker().changes(workspace, None, editor_edits)
        except Exception:
            logger.exception("turn %s: editor edits not recorded", turn_id)
            return []

    def prune(self, workspace: str) -> None:
        """After a session was deleted: drop the copies only its turns needed (a worker
        thread; a failure is logged, the copies stay)."""
        try:
            infos = self._sessions.call_now(
                lambda store: list(store.workspace_turn_infos(workspace))
            )
            removed = self.tracker().prune(workspace, infos)
        except Exception:
            logger.exception("pruning the checkpoints of %s failed", workspace)
            return
        logger.info("pruned %d kept copies of %s", removed, workspace)

    # ---- requests ----------------------------------------------------------------------

    async def last_undoable_turn(self, session_id: str) -> str | None:
        """The newest of the session's recent turns that changed files and is not undone."""
        records = await self._sessions.records(session_id, UNDO_LOOKBACK_TURNS)
        infos = await self._sessions.turn_infos(session_id, records)
        for turn_id in reversed(turn_ids(records)):
            info = infos.get(turn_id) or {}
            if info.get("changes") and info.get("undone") is not True:
                return turn_id
        return None

    async def changes(self, session: Session, turn_id: str) -> tuple[list[ChangeTexts], bool]:
        """`milk/turn/changes`: the turn's changes with their texts, and whether it was
        undone; `turn_not_found` for a turn without a record of its changes."""
        info = await self._info(session, turn_id)
        tracker = self.tracker()
        found: list[ChangeTexts] = []
        for change in stored_changes(info):
            old, new = await asyncio.to_thread(tracker.texts, session.workspace_folder, change)
            old, cut_old = capped(old)
            new, cut_new = capped(new)
            found.append(ChangeTexts(change, old, new, cut_old or cut_new))
        return found, info.get("undone") is True

    async def undo(self, session: Session, turn_id: str, force: bool) -> list[str]:
        """`milk/turn/undo`: put the turn's files back; the paths restored. An undone turn
        answers with nothing restored. `undo_conflict` (with the files) when a file changed
        since, unless `force`; `undo_unavailable` when a pre-image was not kept."""
        try:
            return await self._undo(session, turn_id, force)
        except UndoConflict as exc:
            uris = [Path(path).as_uri() for path in exc.paths]
            names = ", ".join(shown_path(path, session.workspace_folder) for path in exc.paths)
            raise EngineError(
                RequestErrorReason.UNDO_CONFLICT,
                f"{len(uris)} file(s) changed after the turn: {names}. Undo with force "
                "to put the turn's versions back anyway (the later changes are lost).",
                {"files": uris},
            ) from None
        except CheckpointUnavailable as exc:
            raise EngineError(RequestErrorReason.UNDO_UNAVAILABLE, f"cannot undo: {exc}") from None

    async def _undo(self, session: Session, turn_id: str, force: bool) -> list[str]:
        info = await self._info(session, turn_id)
        if info.get("undone") is True:
            return []
        changes = stored_changes(info)
        if not changes:
            return []
        workspace = session.workspace_folder
        tracker = self.tracker()
        later = await self._sessions.turn_infos_after(session.id, turn_id)
        conflicts = set(later_touches(changes, later))
        conflicts.update(await asyncio.to_thread(tracker.disk_conflicts, workspace, changes))
        disk: dict[str, SavedState] = {}
        for change in changes:
            if not change.editor:
                continue
            if await self._editor_text(Path(change.path)) != change.after_text:
                conflicts.add(change.path)
            disk[change.path] = await asyncio.to_thread(tracker.saved_edit, workspace, change)
            if disk[change.path] == "changed":  # on disk, neither the turn's text nor the old
                conflicts.add(change.path)
        if conflicts and not force:
            raise UndoConflict(sorted(conflicts))
        # A buffer edit the user saved (or, forced, a file changed on disk since) goes back
        # on disk with the disk changes, all or nothing; then the buffers.
        saved = [c for c in changes if c.editor and disk[c.path] in ("saved", "changed")]
        restored = await asyncio.to_thread(tracker.restore_disk, workspace, changes, saved)
        for change in changes:
            if change.editor:
                await self._restore_editor(workspace, change, disk[change.path])
                restored.append(change.path)
        info["undone"] = True
        await self._sessions.set_turn_info(session.id, turn_id, info)
        return restored

    async def _info(self, session: Session, turn_id: str) -> dict[str, Any]:
        info = await self._sessions.turn_info(session.id, turn_id)
        if info is None:
            raise unknown_turn(session.id, turn_id)
        return info

    async def _editor_text(self, path: Path) -> str | None:
        text = self._documents.open_document_text(path)
        if text is not None:
            return text
        try:
            return await asyncio.to_thread(path.read_text, encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    async def _restore_editor(self, workspace: str, change: TurnChange, disk: SavedState) -> None:
        """A buffer edit goes back through the editor; its file on disk was put back already
        when the turn's first checkpoint had it (`disk` not "unknown"). Without that
        checkpoint, the old text is written to disk when the editor cannot take it (closed)
        or the user saved the edit."""
        path = Path(change.path)
        in_editor = change.before_text is not None and await self._documents.apply_edit(
            path, change.before_text
        )
        if disk == "unknown" and (not in_editor or await self._saved(path, change)):
            await asyncio.to_thread(_write_back, workspace, path, change.before_text)

    @staticmethod
    async def _saved(path: Path, change: TurnChange) -> bool:
        """The file on disk holds the turn's text (the user saved the buffer edit)."""
        try:
            text = await asyncio.to_thread(path.read_text, encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return False
        return text == change.after_text


def _write_back(workspace: str, path: Path, text: str | None) -> None:
    """Write a buffer edit's old text to disk (None: the turn created the file), confined
    to the workspace like the tools' own writes (no symlink is followed)."""
    confined = ConfinedRoot(Path(workspace))
    parts = confined.resolve(str(path))
    if text is not None:
        confined.atomic_write(parts, text.encode("utf-8"))
        return
    directory = confined.open_dir(parts[:-1])
    try:
        os.unlink(parts[-1], dir_fd=directory)
    except FileNotFoundError:
        pass
    finally:
        os.close(directory)


__all__ = ["Before", "ChangeBook", "ChangeTexts", "EditorDocuments"]
