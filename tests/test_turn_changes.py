"""The turn's changes over real checkpoints: what a change records, and pruning the kept
copies when the turns that needed them are gone."""

from __future__ import annotations

from pathlib import Path

from milk_lsp.changes.tracker import ChangeTracker, TurnChange, later_touches, stored_changes


def test_changes_record_versions_lines_and_buffer_edits(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("one\ntwo\n")
    tracker = ChangeTracker(tmp_path / "store")
    before = tracker.snapshot(str(workspace))
    (workspace / "a.txt").write_text("one\nTWO\nthree\n")
    unsaved = {workspace / "b.py": ("x = 1\n", "x = 2\n")}
    [disk, buffer] = tracker.changes(str(workspace), before, unsaved)
    assert (disk.kind, disk.added, disk.removed, disk.editor) == ("modified", 2, 1, False)
    assert tracker.texts(str(workspace), disk) == ("one\ntwo\n", "one\nTWO\nthree\n")
    assert (buffer.kind, buffer.editor, buffer.before_text) == ("modified", True, "x = 1\n")
    assert stored_changes({"changes": [disk.to_dict(), {"path": 5}]}) == [disk]
    later = [{"changes": [disk.to_dict()]}, {"changes": [disk.to_dict()], "undone": True}]
    assert later_touches([disk], later) == [disk.path]
    assert later_touches([disk], later[1:]) == []


def test_prune_keeps_what_stored_turns_and_the_workspace_need(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("first\n")
    tracker = ChangeTracker(tmp_path / "store")
    before = tracker.snapshot(str(workspace))
    (workspace / "a.txt").write_text("second\n")
    [change] = tracker.changes(str(workspace), before, {})
    book = tracker.book(str(workspace))
    assert change.before is not None and book.blob(change.before) == b"first\n"
    info = {"changes": [change.to_dict()]}
    assert tracker.prune(str(workspace), [info]) == 0  # a stored turn still needs it
    assert book.blob(change.before) == b"first\n"
    assert tracker.prune(str(workspace), []) >= 1  # its session was deleted
    assert book.blob(change.before) is None
    assert change.after is not None and book.blob(change.after) == b"second\n"  # still there
    assert ChangeTracker(tmp_path / "other").prune(str(workspace), []) == 0  # never checkpointed
    assert not (tmp_path / "other").exists()


def test_a_change_round_trips_through_its_stored_form() -> None:
    change = TurnChange(path="/w/a", kind="created", after="d:644", added=3)
    assert TurnChange.from_dict(change.to_dict()) == change
    assert TurnChange.from_dict({"path": "/w/a", "kind": "renamed"}) is None
