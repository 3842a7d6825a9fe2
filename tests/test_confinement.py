"""The workspace tools stay inside the workspace when paths change under them.

A real flipper process swaps a directory of the workspace with a symlink to outside, as
fast as it can, while hundreds of tool calls run; and a permission answer that swaps the
directory before allowing an edit. Nothing outside may be read, listed or written, and every
call either works on the workspace's own content or says clearly why it could not.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from milk_lsp.agents.base import PermissionOption, PermissionRequest
from milk_lsp.agents.local.tools import ToolOutcome, WorkspaceTools
from milk_lsp.wire import ContextItem
from milk_lsp.workspace.confined import ConfinedRoot, SymlinkRefused, current_umask
from milk_lsp.workspace.paths import fill_attachments
from tests.test_tools import FakeHost

SECRET = "OUTSIDE-SECRET"

FLIPPER = r"""
import ctypes, os, signal, sys, time

first, second = sys.argv[1], sys.argv[2]
libc = ctypes.CDLL(None, use_errno=True)
renameat2 = getattr(libc, "renameat2", None)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
swaps = 0

def report(*_):
    print(swaps, flush=True)
    sys.exit(0)

signal.signal(signal.SIGTERM, report)

def swap():
    # Atomically where the kernel can (renameat2 RENAME_EXCHANGE), else in three renames.
    if renameat2 is not None and renameat2(
        AT_FDCWD, first.encode(), AT_FDCWD, second.encode(), RENAME_EXCHANGE
    ) == 0:
        return
    aside = first + ".aside"
    os.rename(first, aside)
    os.rename(second, first)
    os.rename(aside, second)

print("ready", flush=True)
while True:
    # Bursts of swaps, then a pause with the real directory in place, so that both races
    # and whole calls happen.
    burst_end = time.monotonic() + 0.005
    while time.monotonic() < burst_end:
        swap()
        swap()
        swaps += 2
    time.sleep(0.005)
"""


def snapshot(folder: Path) -> dict[str, bytes | str]:
    """Every name under `folder` with its content (a symlink: its target)."""
    found: dict[str, bytes | str] = {}
    for path in sorted(folder.rglob("*")):
        name = path.relative_to(folder).as_posix()
        if path.is_symlink():
            found[name] = str(path.readlink())
        elif path.is_file():
            found[name] = path.read_bytes()
        else:
            found[name] = "dir"
    return found


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace with `sub/` (and `.swap`, a symlink to outside), and the outside folder
    holding files of the same names with other content."""
    root = (tmp_path / "ws").resolve()
    sub = root / "sub"
    sub.mkdir(parents=True)
    (sub / "data.txt").write_text("inside data\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "data.txt").write_text(f"{SECRET} data\n")
    (outside / "only_outside.txt").write_text(f"{SECRET}\n")
    for index in range(300):
        (sub / f"edit-{index}.txt").write_text(f"before {index}\n")
        (outside / f"edit-{index}.txt").write_text(f"{SECRET} before {index}\n")
    (root / ".swap").symlink_to(outside)
    return root, outside


def restore(root: Path) -> None:
    """Put the real directory back at `sub` once the flipper has stopped."""
    if (root / "sub").is_symlink():
        (root / "sub").rename(root / ".tmp")
        (root / ".swap").rename(root / "sub")
        (root / ".tmp").rename(root / ".swap")
    assert (root / "sub").is_dir() and not (root / "sub").is_symlink()


CLEAR_ERRORS = re.compile(
    "|".join(
        [
            r"is outside the workspace folder",
            r"became a symlink while in use; symlinks are not followed there",
            r"now leads to .*, not to .* as when permission was asked; nothing was written",
            r"^File not found: sub",
            r"^Directory not found: sub",
            r"^Path not found: sub",
            r"^\w+ failed: \[Errno 2\] No such file or directory",
            # A component that changed between two system calls every time it was looked at
            # (`confined.MAX_LOOKS`): a safe refusal, asking to try again.
            r"^sub\S* kept changing while it was being resolved; try again$",
            r"^sub\S* kept changing while in use; try again$",
        ]
    )
)
"""Every refusal `milk_lsp.workspace.confined` and the tools give when a path changes under
them: the race test accepts exactly these (`test_every_refusal_of_a_changing_path_is_clear`)."""


async def test_tools_stay_inside_while_a_directory_flips_to_a_symlink(
    layout: tuple[Path, Path],
) -> None:
    root, outside = layout
    outside_before = snapshot(outside)
    tools = WorkspaceTools(root, FakeHost(PermissionOption.ALLOW_ONCE))
    flipper = subprocess.Popen(  # noqa: ASYNC220 - started once, before the calls
        [sys.executable, "-c", FLIPPER, str(root / "sub"), str(root / ".swap")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert flipper.stdout is not None
        assert flipper.stdout.readline() == "ready\n"

        async def one(index: int) -> tuple[str, dict[str, object], ToolOutcome]:
            kind = index % 5
            if kind == 0:
                name, arguments = "read_file", {"path": "sub/data.txt"}
            elif kind == 1:
                name, arguments = "list_directory", {"path": "sub"}
            elif kind == 2:
                name, arguments = "search_text", {"pattern": "data", "path": "sub"}
            elif kind == 3:
                name = "edit_file"
                arguments = {
                    "path": f"sub/edit-{index}.txt",
                    "old_text": "before",
                    "new_text": "after",
                }
            else:
                name = "edit_file"
                arguments = {"path": f"sub/new-{index}.txt", "old_text": "", "new_text": "new\n"}
            return name, arguments, await tools.call(f"c{index}", name, arguments)

        results: list[tuple[str, dict[str, object], ToolOutcome]] = []
        for batch in range(0, 300, 10):
            results += await asyncio.gather(*(one(i) for i in range(batch, batch + 10)))
    finally:
        flipper.send_signal(signal.SIGTERM)
        swaps_output, _ = flipper.communicate(timeout=10)
    swaps = int(swaps_output.strip().splitlines()[-1])
    restore(root)

    assert swaps > 300, "the flipper hardly ran"
    assert snapshot(outside) == outside_before  # nothing written or changed outside
    ok = errors = 0
    for name, arguments, outcome in results:
        assert SECRET not in outcome.output
        assert "only_outside" not in outcome.output
        path = str(arguments.get("path"))
        if outcome.is_error:
            errors += 1
            assert CLEAR_ERRORS.search(outcome.output), outcome.output
            if path.startswith("sub/edit-"):
                index = path.removeprefix("sub/edit-").removesuffix(".txt")
                assert (root / path).read_text() == f"before {index}\n"  # left as it was
            elif path.startswith("sub/new-"):
                assert not (root / path).exists()
            continue
        ok += 1
        if name == "read_file":
            assert outcome.output == "inside data\n"
        elif name == "list_directory":
            assert "data.txt" in outcome.output.splitlines()
        elif name == "search_text":
            assert outcome.output == "sub/data.txt:1: inside data"
        elif path.startswith("sub/edit-"):
            index = path.removeprefix("sub/edit-").removesuffix(".txt")
            assert outcome.output == f"Edited {path}: lines 1-1."
            assert (root / path).read_text() == f"after {index}\n"
        else:
            assert outcome.output == f"Created {path}."
            assert (root / path).read_text() == "new\n"
    assert ok > 0 and errors > 0, (ok, errors)  # both sides of the race were hit
    leftovers = [p.name for p in (root / "sub").iterdir() if p.name.endswith(".milk-tmp")]
    assert leftovers == []


@pytest.mark.parametrize("when", ["resolving", "in use"])
async def test_every_refusal_of_a_changing_path_is_clear(
    layout: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    # `sub` turns into something else between the stat and the open at every look: while
    # the path is resolved, or (resolved once) each time it is opened for use. The flipper
    # above rarely hits this (issue 21: 1 run of 1,614); here it happens every time.
    root, _ = layout
    real_open = os.open
    opens = 0

    def flickering_open(path: str, flags: int, *args: object, **kwargs: object) -> int:
        nonlocal opens
        if path == "sub" and flags & os.O_DIRECTORY and kwargs.get("dir_fd") is not None:
            opens += 1
            if when == "resolving" or opens > 1:
                raise NotADirectoryError(20, "Not a directory", path)
        return real_open(path, flags, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", flickering_open)
    tools = WorkspaceTools(root, FakeHost(PermissionOption.ALLOW_ONCE))
    outcome = await tools.call("c1", "read_file", {"path": "sub/data.txt"})
    monkeypatch.undo()
    assert outcome.is_error
    if when == "resolving":  # named as the call named it
        assert outcome.output == "sub/data.txt kept changing while it was being resolved; try again"
    else:
        assert outcome.output == "sub kept changing while in use; try again"
    assert CLEAR_ERRORS.search(outcome.output), outcome.output


class SwappingHost(FakeHost):
    """Swaps `sub` for a symlink to `target` while the user 'decides', then allows."""

    def __init__(self, root: Path, target: Path) -> None:
        super().__init__(PermissionOption.ALLOW_ONCE)
        self.root = root
        self.target = target

    async def request_permission(self, request: PermissionRequest) -> PermissionOption:
        (self.root / "sub").rename(self.root / "sub_moved")
        (self.root / "sub").symlink_to(self.target)
        return await super().request_permission(request)


@pytest.mark.parametrize(
    "arguments",
    [
        {"path": "sub/data.txt", "old_text": "inside", "new_text": "changed"},
        {"path": "sub/fresh.txt", "old_text": "", "new_text": "fresh\n"},
        {"path": "sub/deeper/fresh.txt", "old_text": "", "new_text": "fresh\n"},
    ],
)
async def test_a_symlink_swapped_in_while_permission_is_asked_stops_the_write(
    layout: tuple[Path, Path], arguments: dict[str, str]
) -> None:
    root, outside = layout
    outside_before = snapshot(outside)
    host = SwappingHost(root, outside)
    outcome = await WorkspaceTools(root, host).call("t1", "edit_file", arguments)
    assert len(host.requests) == 1
    assert outcome.is_error
    assert outcome.output == (
        f"{arguments['path']} is outside the workspace folder (through the symlink sub to"
        f" {outside})"
    )
    assert snapshot(outside) == outside_before
    assert (root / "sub_moved" / "data.txt").read_text() == "inside data\n"
    assert not (root / "sub_moved" / "fresh.txt").exists()


async def test_a_path_that_now_leads_elsewhere_inside_is_not_written_either(
    layout: tuple[Path, Path],
) -> None:
    root, _ = layout
    other = root / "other"
    other.mkdir()
    (other / "data.txt").write_text("inside data\n")
    host = SwappingHost(root, other)
    arguments = {"path": "sub/data.txt", "old_text": "inside", "new_text": "changed"}
    outcome = await WorkspaceTools(root, host).call("t1", "edit_file", arguments)
    assert outcome == ToolOutcome(
        "sub/data.txt now leads to other/data.txt, not to sub/data.txt as when permission was"
        " asked; nothing was written.",
        is_error=True,
    )
    assert (other / "data.txt").read_text() == "inside data\n"
    assert (root / "sub_moved" / "data.txt").read_text() == "inside data\n"


# --- the primitives, with the swap between resolving and using ------------------------


def swap_in_symlink(root: Path, target: Path) -> None:
    (root / "sub").rename(root / "sub_moved")
    (root / "sub").symlink_to(target)


def test_every_operation_refuses_a_symlink_that_appeared_after_resolving(
    layout: tuple[Path, Path],
) -> None:
    root, outside = layout
    outside_before = snapshot(outside)
    confined = ConfinedRoot(root)
    file_parts = confined.resolve("sub/data.txt")
    dir_parts = confined.resolve("sub")
    assert file_parts == ("sub", "data.txt")
    swap_in_symlink(root, outside)
    refused = "sub became a symlink while in use; symlinks are not followed there"
    with pytest.raises(SymlinkRefused, match=refused):
        confined.open_file_for_read(file_parts)
    with pytest.raises(SymlinkRefused, match=refused):
        confined.list_dir(dir_parts)
    with pytest.raises(SymlinkRefused, match=refused):
        confined.atomic_write(file_parts, b"changed\n")
    with pytest.raises(SymlinkRefused, match=refused):
        confined.atomic_write(("sub", "new", "file.txt"), b"changed\n")
    with pytest.raises(SymlinkRefused, match=refused):
        list(confined.walk(dir_parts, threading.Event(), frozenset(), 1000))
    # The last component swapped for a symlink: read refused, write replaces the link itself.
    (root / "sub_moved" / "link.txt").symlink_to(outside / "data.txt")
    moved = ("sub_moved", "link.txt")
    with pytest.raises(SymlinkRefused, match=r"sub_moved/link\.txt became a symlink"):
        confined.open_file_for_read(moved)
    with pytest.raises(SymlinkRefused, match=r"sub_moved/link\.txt became a symlink"):
        confined.atomic_write(moved, b"changed\n")
    assert snapshot(outside) == outside_before
    # A walk from above never enters the swapped-in link.
    found = dict(confined.walk((), threading.Event(), frozenset(), 1000))
    assert ("sub_moved", "data.txt") in found
    assert all(SECRET.encode() not in data for data in found.values())
    assert not any(parts[0] in ("sub", ".swap") for parts in found)


def test_atomic_write_makes_missing_directories_and_keeps_modes(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    confined = ConfinedRoot(root)
    confined.atomic_write(("a", "b", "new.txt"), b"one\n")
    created = root / "a" / "b" / "new.txt"
    assert created.read_bytes() == b"one\n"
    assert stat.S_IMODE(created.stat().st_mode) == 0o666 & ~current_umask()
    assert stat.S_IMODE((root / "a").stat().st_mode) == 0o777 & ~current_umask()
    created.chmod(0o640)
    confined.atomic_write(("a", "b", "new.txt"), b"two\n")
    assert created.read_bytes() == b"two\n"
    assert stat.S_IMODE(created.stat().st_mode) == 0o640
    with pytest.raises(IsADirectoryError):
        confined.atomic_write(("a", "b"), b"x")
    (root / "file").write_text("x")
    with pytest.raises(NotADirectoryError):
        confined.atomic_write(("file", "below.txt"), b"x")
    assert sorted(p.name for p in (root / "a" / "b").iterdir()) == ["new.txt"]


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    os.mkfifo(root / "pipe")
    fd = ConfinedRoot(root).open_file_for_read(("pipe",))
    try:
        assert stat.S_ISFIFO(os.fstat(fd).st_mode)
    finally:
        os.close(fd)


async def test_read_file_of_a_fifo_is_a_clear_error(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    os.mkfifo(root / "pipe")
    outcome = await WorkspaceTools(root, FakeHost()).call("t1", "read_file", {"path": "pipe"})
    assert outcome == ToolOutcome("pipe is not a regular file", is_error=True)


def test_attachments_read_files_inside_only(layout: tuple[Path, Path]) -> None:
    root, outside = layout
    (root / "sub" / "latin1.txt").write_bytes(b"caf\xe9")
    (root / "escape.txt").symlink_to(outside / "data.txt")
    (root / "inner.txt").symlink_to("sub/data.txt")
    items = [
        ContextItem(uri=(root / "sub" / "data.txt").as_uri()),
        ContextItem(uri=(root / "inner.txt").as_uri()),
        ContextItem(uri=(root / "escape.txt").as_uri()),
        ContextItem(uri=(outside / "data.txt").as_uri()),
        ContextItem(uri=(root / ".swap" / "data.txt").as_uri()),
        ContextItem(uri=(root / "sub" / "latin1.txt").as_uri()),
        ContextItem(uri=(root / "sub").as_uri()),
        ContextItem(uri=(root / "draft.txt").as_uri()),
    ]
    drafts = {root / "draft.txt": "unsaved\n"}
    filled = fill_attachments(items, root, drafts.get)
    assert [item.text for item in filled] == [
        "inside data\n",
        "inside data\n",
        None,
        None,
        None,
        None,
        None,
        "unsaved\n",
    ]
