"""Which files a turn changed, and taking a turn back.

Every turn is bracketed by two workspace checkpoints (`checkpoints.py`: content-addressed,
outside the user's repository, never touching their git state), so a change made by any
tool, a shell command included, is seen and its pre-image kept. Edits the editor applied to
an open buffer without saving are not on disk: the turn records their texts itself.
Undo restores exactly the turn's files, and refuses (`UndoConflict`) when one of them
changed again after the turn, by the user or by a later turn. A buffer edit the user saved
after the turn is on disk too: its undo puts the file on disk back as the turn found it
(`disk_before`), so disk and buffer both end where they were.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from milk_lsp.changes.blobs import CheckpointUnavailable
from milk_lsp.workspace.edit_preview import line_counts

if TYPE_CHECKING:  # the scanner (and pathspec) load with the first checkpoint, not at start-up
    from milk_lsp.changes.checkpoints import Checkpoints, Snapshot

logger = logging.getLogger(__name__)

ChangeKind = Literal["created", "modified", "deleted"]
SavedState = Literal["untouched", "saved", "changed", "unknown"]

ABSENT = "absent"
"""`TurnChange.disk_before` of a buffer edit whose file was not on disk when the turn began."""


@dataclass
class TurnChange:
    """One file a turn changed. Disk changes name their blobs (`before`/`after` digests);
    editor-buffer changes carry their texts."""

    path: str
    """Absolute path."""
    kind: ChangeKind
    before: str | None = None
    after: str | None = None
    added: int = 0
    removed: int = 0
    binary: bool = False
    editor: bool = False
    """Changed in the editor's buffer only (not saved when the turn ended)."""
    before_text: str | None = None
    after_text: str | None = None
    disk_before: str | None = None
    """A buffer edit's file on disk when the turn began: its checkpoint version, `ABSENT`,
    or None when the turn had no checkpoint."""

    def to_dict(self) -> dict[str, Any]:
        return {key: value for key, value in asdict(self).items() if value not in (None, False)}

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> TurnChange | None:
        """A stored change; None when the row is not one (a damaged or foreign value)."""
        path, kind = raw.get("path"), raw.get("kind")
        if not isinstance(path, str) or kind not in ("created", "modified", "deleted"):
            return None
        return cls(
            path=path,
            kind=kind,
            before=_str(raw.get("before")),
            after=_str(raw.get("after")),
            added=_int(raw.get("added")),
            removed=_int(raw.get("removed")),
            binary=raw.get("binary") is True,
            editor=raw.get("editor") is True,
            before_text=_str(raw.get("before_text")),
            after_text=_str(raw.get("after_text")),
            disk_before=_str(raw.get("disk_before")),
        )


class UndoConflict(Exception):
    """Files of the turn changed again after it; `paths` names them."""

    def __init__(self, paths: list[str]) -> None:
        super().__init__(", ".join(paths))
        self.paths = paths


class ChangeTracker:
    """The checkpoints of every workspace this server works in (one store per workspace)."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._books: dict[str, Checkpoints] = {}
        self._lock = threading.Lock()

    def book(self, workspace: str) -> Checkpoints:
        from milk_lsp.changes.checkpoints import Checkpoints

        with self._lock:
            book = self._books.get(workspace)
            if book is None:
                book = Checkpoints(self._store_dir(workspace), Path(workspace))
                self._books[workspace] = book
            return book

    def _store_dir(self, workspace: str) -> Path:
        return self._root / hashlib.sha256(workspace.encode("utf-8")).hexdigest()[:24]

    def prune(self, workspace: str, infos: Iterable[dict[str, Any]]) -> int:
        """Drop the kept copies that neither a stored turn (`infos`: all the workspace's) nor
        the workspace as it is now needs. Nothing to do for a workspace never checkpointed."""
        if not self._store_dir(workspace).exists():
            return 0
        book = self.book(workspace)
        book.snapshot()  # what is there now stays kept
        keep = {
            version
            for info in infos
            for change in stored_changes(info)
            for version in (change.before, change.after, change.disk_before)
            if version is not None and version != ABSENT
        }
        return book.prune(keep)

    def snapshot(self, workspace: str) -> Snapshot:
        """Raises `CheckpointUnavailable` with a message for the user."""
        return self.book(workspace).snapshot()

    def changes(
        self,
        workspace: str,
        before: Snapshot | None,
        editor_edits: dict[Path, tuple[str | None, str]],
    ) -> list[TurnChange]:
        """What the turn changed: the disk between `before` and now, then buffer edits of
        files whose disk copy did not change (with that copy's version in `before`, for an
        undo after the user saved the edit). Raises `CheckpointUnavailable`."""
        found: list[TurnChange] = []
        root = Path(workspace)
        if before is not None:
            book = self.book(workspace)
            after = book.snapshot()
            for change in book.diff(before, after):
                old = _text(book, change.before)
                new = _text(book, change.after)
                binary = (change.before is not None and old is None) or (
                    change.after is not None and new is None
                )
                added, removed = (0, 0) if binary else line_counts(old, new)
                found.append(
                    TurnChange(
                        path=str(root / change.path),
                        kind=change.kind,
                        before=change.before,
                        after=change.after,
                        added=added,
                        removed=removed,
                        binary=binary,
                    )
                )
        on_disk = {change.path for change in found}
        for path, (old_text, new_text) in sorted(editor_edits.items()):
            if str(path) in on_disk or old_text == new_text:
                continue
            added, removed = line_counts(old_text, new_text)
            found.append(
                TurnChange(
                    path=str(path),
                    kind="created" if old_text is None else "modified",
                    added=added,
                    removed=removed,
                    editor=True,
                    before_text=old_text,
                    after_text=new_text,
                    disk_before=_disk_version(before, root, path),
                )
            )
        return found

    def texts(self, workspace: str, change: TurnChange) -> tuple[str | None, str | None]:
        """The before and after texts of a change (None where absent or not text)."""
        if change.editor:
            return change.before_text, change.after_text
        book = self.book(workspace)
        return _text(book, change.before), _text(book, change.after)

    def disk_conflicts(self, workspace: str, changes: list[TurnChange]) -> list[str]:
        """The disk changes whose file is no longer what the turn left."""
        book = self.book(workspace)
        root = Path(workspace)
        return [
            change.path
            for change in changes
            if not change.editor
            and book.current_digest(Path(change.path).relative_to(root).as_posix()) != change.after
        ]

    def saved_edit(self, workspace: str, change: TurnChange) -> SavedState:
        """Where the file of a buffer edit stands on disk: as the turn found it, holding the
        turn's text (the user saved the edit), something else, or unknown (no checkpoint)."""
        if change.disk_before is None:
            return "unknown"
        rel = Path(change.path).relative_to(Path(workspace)).as_posix()
        now = self.book(workspace).current_digest(rel)
        if now == (None if change.disk_before == ABSENT else change.disk_before):
            return "untouched"
        if now is None or change.after_text is None:
            return "changed"
        try:
            data = Path(change.path).read_bytes()
        except OSError:
            return "changed"
        return "saved" if _same_text(data, change.after_text) else "changed"

    def restore_disk(
        self, workspace: str, changes: list[TurnChange], saved: Iterable[TurnChange] = ()
    ) -> list[str]:
        """Put the disk changes' files back to their pre-images (bytes and mode; created
        files deleted), and the files of the buffer edits in `saved` to what the turn found
        on disk. All or nothing: every kept copy is checked before a file is touched (raises
        `CheckpointUnavailable` naming what is missing)."""
        root = Path(workspace)
        disk = [change for change in changes if not change.editor]
        versions = [
            (Path(change.path).relative_to(root).as_posix(), change.before) for change in disk
        ]
        versions.extend(
            (
                Path(change.path).relative_to(root).as_posix(),
                None if change.disk_before == ABSENT else change.disk_before,
            )
            for change in saved
            if change.disk_before is not None
        )
        self.book(workspace).restore_all(versions)
        return [change.path for change in disk]


def _same_text(data: bytes, text: str) -> bool:
    """A file's bytes hold `text`, whatever line endings or BOM the editor wrote it with."""
    try:
        decoded = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return False
    return decoded.replace("\r\n", "\n") == text.replace("\r\n", "\n")


def _disk_version(before: Snapshot | None, root: Path, path: Path) -> str | None:
    """The version of `path` in the turn's first checkpoint (`ABSENT`: not there)."""
    if before is None:
        return None
    try:
        rel = path.relative_to(root).as_posix()
    except ValueError:  # not inside the workspace: no checkpoint covers it
        return None
    state = before.get(rel)
    return state.version if state is not None else ABSENT


def later_touches(changes: list[TurnChange], later_infos: list[dict[str, Any]]) -> list[str]:
    """Files of `changes` that a later turn (not undone) changed too."""
    mine = {change.path for change in changes}
    touched: set[str] = set()
    for info in later_infos:
        if info.get("undone") is True:
            continue
        for raw in info.get("changes") or []:
            if isinstance(raw, dict) and raw.get("path") in mine:
                touched.add(str(raw["path"]))
    return sorted(touched)


def stored_changes(info: dict[str, Any] | None) -> list[TurnChange]:
    raw = (info or {}).get("changes") or []
    found = [TurnChange.from_dict(item) for item in raw if isinstance(item, dict)]
    return [change for change in found if change is not None]


def _text(book: Checkpoints, digest: str | None) -> str | None:
    if digest is None:
        return None
    data = book.blob(digest)
    if data is None or b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _str(value: Any) -> str | None:
    return str(value) if isinstance(value, str) else None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and value >= 0 else 0


__all__ = [
    "ABSENT",
    "ChangeTracker",
    "CheckpointUnavailable",
    "SavedState",
    "TurnChange",
    "UndoConflict",
    "later_touches",
    "stored_changes",
]
