"""The whole-file previews of Claude's file tools, and the diff and line counts milk shows."""

from __future__ import annotations

import json
from pathlib import Path

from milk_lsp.workspace.edit_preview import (
    FileEdit,
    capped,
    claude_edits,
    line_counts,
    read_limited,
    unified_diff,
    wire_edit_diff,
)


async def preview(tool: str, workspace: Path, **tool_input: object) -> list[FileEdit]:
    return await claude_edits(
        tool, dict(tool_input), workspace, lambda path: read_limited(workspace, path)
    )


async def test_edit_replaces_once_or_all(tmp_path: Path) -> None:
    target = tmp_path / "a.py"
    target.write_text("x = 1\nx = 1\n")
    [once] = await preview("Edit", tmp_path, file_path=str(target), old_string="1", new_string="2")
    assert (once.before, once.after) == ("x = 1\nx = 1\n", "x = 2\nx = 1\n")
    [every] = await preview(
        "Edit", tmp_path, file_path="a.py", old_string="1", new_string="2", replace_all=True
    )
    assert every.after == "x = 2\nx = 2\n" and every.path == target


async def test_multi_edit_applies_in_order(tmp_path: Path) -> None:
    target = tmp_path / "a.py"
    target.write_text("def greet():\n    return 'hello'\n")
    edits = [
        {"old_string": "greet", "new_string": "welcome"},
        {"old_string": "welcome():", "new_string": "welcome(name):"},
    ]
    [edit] = await preview("MultiEdit", tmp_path, file_path=str(target), edits=edits)
    assert edit.after == "def welcome(name):\n    return 'hello'\n"
    broken = [*edits, {"old_string": "missing", "new_string": "x"}]
    assert await preview("MultiEdit", tmp_path, file_path=str(target), edits=broken) == []


async def test_write_creates_or_replaces(tmp_path: Path) -> None:
    [new] = await preview("Write", tmp_path, file_path=str(tmp_path / "n.md"), content="hi\n")
    assert (new.before, new.after) == (None, "hi\n")
    (tmp_path / "n.md").write_text("old\n")
    [old] = await preview("Write", tmp_path, file_path=str(tmp_path / "n.md"), content="hi\n")
    assert old.before == "old\n"


async def test_notebook_insert_replace_delete(tmp_path: Path) -> None:
    book = tmp_path / "b.ipynb"
    cell = {"cell_type": "code", "id": "c1", "metadata": {}, "source": "1", "outputs": []}
    book.write_text(json.dumps({"cells": [cell], "metadata": {}}))
    [insert] = await preview(
        "NotebookEdit",
        tmp_path,
        notebook_path=str(book),
        cell_id="c1",
        new_source="# md",
        cell_type="markdown",
        edit_mode="insert",
    )
    cells = json.loads(insert.after or "")["cells"]
    assert [c["cell_type"] for c in cells] == ["code", "markdown"]
    [delete] = await preview(
        "NotebookEdit", tmp_path, notebook_path=str(book), cell_id="c1", edit_mode="delete"
    )
    assert json.loads(delete.after or "")["cells"] == []


async def test_no_preview_outside_the_workspace_or_for_unreadable_files(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "link.txt").symlink_to(outside)
    (workspace / "bin.dat").write_bytes(b"\0\1\2")
    assert await preview("Write", workspace, file_path=str(outside), content="x") == []
    assert await preview("Write", workspace, file_path="../outside.txt", content="x") == []
    assert await preview("Write", workspace, file_path="link.txt", content="x") == []
    assert await preview("Write", workspace, file_path="bin.dat", content="x") == []
    assert await preview("Bash", workspace, command="ls") == []
    assert (
        await preview("Edit", workspace, file_path="none.py", old_string="a", new_string="b") == []
    )


def test_capped_marks_the_cut_within_the_limit() -> None:
    assert capped("abc", 5) == ("abc", False)
    assert capped(None, 5) == (None, False)
    # The closing line counts in the limit (issue 21: it was added after it).
    text, cut = capped("x" * 120, 50)
    assert cut and text == "x" * 21 + "\n… (cut: 99 more characters)\n"
    assert len(text) == 50
    for size in (2001, 2040, 10_000, 5_000_000):
        text, cut = capped("y" * size, 2000)
        assert cut and text is not None and len(text) <= 2000, size
        kept = len(text) - len(text.lstrip("y"))
        assert text.endswith(f"\n… (cut: {size - kept} more characters)\n"), size
        assert len(text) == 2000
    # A limit too small for the closing line: the start of the text alone.
    assert capped("x" * 12, 5) == ("xxxxx", True)


def test_unified_diff_and_line_counts() -> None:
    edit = FileEdit(Path("/w/a.py"), "a\nb\nc\n", "a\nB\nc\nd\n")
    diff = unified_diff(edit, "/w/a.py")
    assert diff.splitlines()[:2] == ["--- /w/a.py", "+++ /w/a.py"]  # never `a//w/a.py`
    assert unified_diff(edit, "a.py").splitlines()[:2] == ["--- a/a.py", "+++ b/a.py"]
    wire = {"uri": "file:///w/src/a.py", "before": "a\n", "after": "b\n"}
    assert wire_edit_diff(wire, "/w").splitlines()[:2] == ["--- a/src/a.py", "+++ b/src/a.py"]
    assert wire_edit_diff(wire, "/elsewhere").startswith("--- /w/src/a.py\n+++ /w/src/a.py")
    assert "-b\n+B" in diff
    assert line_counts("a\nb\nc\n", "a\nB\nc\nd\n") == (2, 1)
    assert line_counts(None, "1\n2\n") == (2, 0)
    long_old = "\n".join(str(i) for i in range(30_000))
    assert line_counts(long_old, long_old + "\nnew") == (1, 0)
    new_file = unified_diff(FileEdit(Path("/w/n"), None, "x\n"), "/w/n")
    assert new_file.startswith("--- /dev/null\n+++ /w/n")
