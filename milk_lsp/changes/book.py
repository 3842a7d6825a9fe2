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
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from milk_lsp.changes.blobs import CheckpointUnavailable
from milk_lsp.changes.tracker import (
    ChangeTracker,
    TurnChange,
    UndoConflict,
    later_touches,
    stored_changes,
)
from milk_lsp.config import MilkConfig
from milk_lsp.engine.turn import ClientBridge, Turn
from milk_lsp.sessions.model import Session
from milk_lsp.sessions.store import SessionStore
from milk_lsp.workspace.confined import ConfinedRoot
from milk_lsp.workspace.edit_preview import capped

if TYPE_CHECKING:
    from milk_lsp.changes.checkpoints import Snapshot

logger = logging.getLogger(__name__)

T = TypeVar("T")


class ChangeHost(Protocol):
    """What the book needs from the engine (`Engine` fits)."""

    config: MilkConfig
    bridge: ClientBridge

    @property
    def store(self) -> SessionStore: ...

    async def stored(self, action: Callable[[], T]) -> T: ...


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
    def __init__(self, host: ChangeHost) -> None:
        self._host = host
        self._trackers: dict[Path, ChangeTracker] = {}
        self._warned: set[str] = set()
        """Workspaces whose 'cannot checkpoint' warning was shown (once per server)."""

    def tracker(self) -> ChangeTracker:
        root = self._host.config.storage_path().parent / "checkpoints"
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

    def after_turn(self, session: Session, turn: Turn, before: Before | None) -> list[TurnChange]:
        """The turn's changes (a worker thread: it checkpoints the workspace again)."""
        snapshot = before.snapshot if before is not None else None
        try:
            return self.tracker().changes(session.workspace_folder, snapshot, turn.editor_edits)
        except Exception as exc:  # a failure here must not lose the turn being saved
            logger.warning("turn %s: changes not recorded: %s", turn.turn_id, exc)
        try:
            return self.tracker().changes(session.workspace_folder, None, turn.editor_edits)
        except Exception:
            logger.exception("turn %s: editor edits not recorded", turn.turn_id)
            return []

    def prune(self, workspace: str) -> None:
        """After a session was deleted: drop the copies only its turns needed (a worker
        thread; a failure is logged, the copies stay)."""
        try:
            infos = list(self._host.store.workspace_turn_infos(workspace))
            removed = self.tracker().prune(workspace, infos)
        except Exception:
            logger.exception("pruning the checkpoints of %s failed", workspace)
            return
        logger.info("pruned %d kept copies of %s", removed, workspace)

    # ---- requests ----------------------------------------------------------------------

    async def changes(self, session: Session, turn_id: str) -> tuple[list[ChangeTexts], bool]:
        """The turn's changes with their texts, and whether it was undone."""
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
        """Put the turn's files back; raises `UndoConflict` (unless `force`) or
        `CheckpointUnavailable` (a pre-image was not kept). An undone turn answers with
        nothing restored."""
        info = await self._info(session, turn_id)
        if info.get("undone") is True:
            return []
        changes = stored_changes(info)
        if not changes:
            return []
        workspace = session.workspace_folder
        tracker = self.tracker()
        later = await self._host.stored(
            lambda: self._host.store.turn_infos_after(session.id, turn_id)
        )
        conflicts = set(later_touches(changes, later))
        conflicts.update(await asyncio.to_thread(tracker.disk_conflicts, workspace, changes))
        for change in changes:
            if change.editor and await self._editor_text(Path(change.path)) != change.after_text:
                conflicts.add(change.path)
        if conflicts and not force:
            raise UndoConflict(sorted(conflicts))
        restored = await asyncio.to_thread(tracker.restore_disk, workspace, changes)
        for change in changes:
            if change.editor:
                await self._restore_editor(workspace, change)
                restored.append(change.path)
        info["undone"] = True
        await self._host.stored(lambda: self._host.store.set_turn_info(session.id, turn_id, info))
        return restored

    async def _info(self, session: Session, turn_id: str) -> dict[str, Any]:
        infos = await self._host.stored(lambda: self._host.store.turn_infos(session.id, [turn_id]))
        info = infos.get(turn_id)
        if info is None:
            raise LookupError(turn_id)
        return info

    async def _editor_text(self, path: Path) -> str | None:
        text = self._host.bridge.open_document_text(path)
        if text is not None:
            return text
        try:
            return await asyncio.to_thread(path.read_text, encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    async def _restore_editor(self, workspace: str, change: TurnChange) -> None:
        """An unsaved buffer edit goes back through the editor; once saved or closed, on disk."""
        path = Path(change.path)
        if change.before_text is not None and await self._host.bridge.apply_edit(
            path, change.before_text
        ):
            return
        await asyncio.to_thread(_write_back, workspace, path, change.before_text)


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


__all__ = ["Before", "ChangeBook", "ChangeTexts", "UndoConflict"]
