"""Tests for the local agent's workspace tools."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import stat
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from milk_lsp.agents.base import PermissionOption, PermissionRequest
from milk_lsp.agents.local import commands, tools
from milk_lsp.agents.local.run_hints import module_run_hint
from milk_lsp.agents.local.tools import (
    OutsideWorkspace,
    ToolOutcome,
    WorkspaceTools,
    resolve_in_workspace,
)
from milk_lsp.sessions.model import Agent
from milk_lsp.workspace import confined
from milk_lsp.workspace.edit_preview import FileEdit


class FakeHost:
    """Answers permission questions with a fixed option and plays an editor's open files."""

    def __init__(self, answer: PermissionOption = PermissionOption.ALLOW_ONCE) -> None:
        self.answer = answer
        self.requests: list[PermissionRequest] = []
        self.documents: dict[Path, str] = {}
        self.apply_succeeds = True
        self.applied: list[tuple[Path, str]] = []

    async def request_permission(self, request: PermissionRequest) -> PermissionOption:
        self.requests.append(request)
        return self.answer

    async def read_document(self, path: Path) -> str | None:
        return self.open_document_text(path)

    def open_document_text(self, path: Path) -> str | None:
        return self.documents.get(path)

    async def apply_edit(self, path: Path, new_text: str) -> bool:
        self.applied.append((path, new_text))
        if self.apply_succeeds:
            self.documents[path] = new_text
        return self.apply_succeeds


@pytest.fixture
def root(tmp_path: Path) -> Path:
    workspace = (tmp_path / "ws").resolve()
    (workspace / "src" / "pkg").mkdir(parents=True)
    (workspace / "src" / "main.py").write_text("import os\n\ndef main():\n    return 1\n")
    (workspace / "src" / "pkg" / "util.py").write_text("def helper():\n    return 'main'\n")
    (workspace / "README.md").write_text("# Project\nmain entry\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("secret main\n")
    return workspace


@pytest.fixture
def host() -> FakeHost:
    return FakeHost()


@pytest.fixture
def ws(root: Path, host: FakeHost) -> WorkspaceTools:
    return WorkspaceTools(root, host, command_timeout_seconds=10.0, output_cap_chars=2000)


# --- path confinement -----------------------------------------------------------------


def test_resolve_table(root: Path, tmp_path: Path) -> None:
    (root / "link_in").symlink_to(root / "src")
    (root / "link_out").symlink_to(tmp_path / "outside")
    (root / "file_out").symlink_to(tmp_path / "outside" / "secret.txt")
    inside = [
        ("src/main.py", root / "src" / "main.py"),
        ("./src/../README.md", root / "README.md"),
        (".", root),
        ("", root),
        ("new/dir/file.txt", root / "new" / "dir" / "file.txt"),
        (str(root / "src"), root / "src"),
        ("link_in/main.py", root / "src" / "main.py"),
        ("src/pkg/..", root / "src"),
    ]
    for raw, expected in inside:
        assert resolve_in_workspace(root, raw) == expected, raw
    outside = [
        "..",
        "../outside/secret.txt",
        "src/../../outside",
        str(tmp_path / "outside" / "secret.txt"),
        "/etc/passwd",
        "link_out",
        "link_out/secret.txt",
        "file_out",
        str(root) + "-sibling/x",
    ]
    for raw in outside:
        with pytest.raises(OutsideWorkspace):
            resolve_in_workspace(root, raw)


def test_resolve_through_a_symlinked_root(root: Path, tmp_path: Path) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(root)
    assert resolve_in_workspace(alias, "src/main.py") == root / "src" / "main.py"
    assert resolve_in_workspace(alias, str(alias / "README.md")) == root / "README.md"
    with pytest.raises(OutsideWorkspace):
        resolve_in_workspace(alias, "../outside")


def test_resolve_refuses_nul_and_symlink_loops(root: Path) -> None:
    (root / "loop_a").symlink_to(root / "loop_b")
    (root / "loop_b").symlink_to(root / "loop_a")
    with pytest.raises(ValueError, match="NUL"):
        resolve_in_workspace(root, "a\x00b")
    with pytest.raises(ValueError):  # noqa: PT011 - the loop message differs by Python version
        resolve_in_workspace(root, "loop_a")


def test_resolve_follows_links_inside_as_the_kernel_does(root: Path, tmp_path: Path) -> None:
    (root / "to_pkg").symlink_to("src/pkg")  # relative
    (root / "src" / "pkg" / "up").symlink_to("..")
    (root / "chain").symlink_to("to_pkg")
    (root / "dangling").symlink_to("not/yet/there.txt")
    # `..` after a symlink is taken from where the link led, not textually.
    assert resolve_in_workspace(root, "to_pkg/../main.py") == root / "src" / "main.py"
    assert resolve_in_workspace(root, "chain/up/pkg/up/main.py") == root / "src" / "main.py"
    assert resolve_in_workspace(root, "dangling") == root / "not" / "yet" / "there.txt"
    (root / "src" / "climb").symlink_to("../../outside")
    (root / "abs_out").symlink_to(tmp_path / "outside" / "secret.txt")
    with pytest.raises(
        OutsideWorkspace, match=r"through the symlink src/climb to \.\./\.\./outside"
    ):
        resolve_in_workspace(root, "src/climb/secret.txt")
    with pytest.raises(OutsideWorkspace, match="through the symlink abs_out"):
        resolve_in_workspace(root, "abs_out")


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("read_file", {"path": "../outside/secret.txt"}),
        ("list_directory", {"path": "/"}),
        ("search_text", {"pattern": "secret", "path": ".."}),
        ("edit_file", {"path": "../outside/new.txt", "old_text": "", "new_text": "x"}),
    ],
)
async def test_every_path_argument_is_confined(
    ws: WorkspaceTools, host: FakeHost, name: str, arguments: dict[str, Any]
) -> None:
    outcome = await ws.call("t1", name, arguments)
    assert outcome.is_error
    assert "outside the workspace" in outcome.output
    assert host.requests == []
    assert not (Path(ws._root).parent / "outside" / "new.txt").exists()


# --- dispatch and arguments -------------------------------------------------------------


def test_specs_describe_every_tool(ws: WorkspaceTools) -> None:
    specs = ws.specs()
    assert {spec["function"]["name"] for spec in specs} == ws.names
    assert ws.names == {"read_file", "list_directory", "search_text", "edit_file", "run_command"}
    for spec in specs:
        assert spec["type"] == "function"
        parameters = spec["function"]["parameters"]
        assert parameters["type"] == "object"
        assert set(parameters["required"]) <= set(parameters["properties"])
        assert spec["function"]["description"]
    run = next(s for s in specs if s["function"]["name"] == "run_command")
    assert (
        "default 10"
        in run["function"]["parameters"]["properties"]["timeout_seconds"]["description"]
    )


def test_specs_are_the_same_bytes_for_every_workspace_and_session(tmp_path: Path) -> None:
    """The local model server caches the prompt prefix the tool list is part of."""
    root_a, root_b = tmp_path / "a", tmp_path / "b-elsewhere"
    root_a.mkdir()
    root_b.mkdir()
    first = json.dumps(WorkspaceTools(root_a, FakeHost()).specs())
    second = json.dumps(WorkspaceTools(root_b, FakeHost(PermissionOption.DENY)).specs())
    assert first == second
    assert str(tmp_path) not in first
    tools_a = WorkspaceTools(root_a, FakeHost())
    tools_a.specs()[0]["function"]["description"] = "changed by a caller"
    assert json.dumps(tools_a.specs()) == first  # each call hands out a fresh copy


def test_tool_descriptions_say_when_to_use_them(ws: WorkspaceTools) -> None:
    descriptions = {s["function"]["name"]: s["function"]["description"] for s in ws.specs()}
    assert all(text.startswith("Use this to ") for text in descriptions.values())
    edit = descriptions["edit_file"]
    assert "copied from the file (from read_file or from the file shown to you)" in edit
    assert "symbol names a function, class, method" in edit


async def test_unknown_tool_is_an_error(ws: WorkspaceTools) -> None:
    outcome = await ws.call("t1", "escalate_to_claude", {"reason": "x"})
    assert outcome.is_error
    assert "Unknown tool 'escalate_to_claude'" in outcome.output


@pytest.mark.parametrize(
    ("name", "arguments", "named"),
    [
        ("read_file", {}, "'path'"),
        ("read_file", {"path": 3}, "'path'"),
        ("read_file", {"path": "README.md", "start_line": "two"}, "'start_line'"),
        ("read_file", {"path": "README.md", "start_line": 0}, "'start_line'"),
        ("read_file", {"path": "README.md", "end_line": True}, "'end_line'"),
        ("read_file", {"path": "README.md", "start_line": 3, "end_line": 2}, "end_line"),
        ("list_directory", {"path": ["src"]}, "'path'"),
        ("search_text", {"path": "."}, "'pattern'"),
        ("search_text", {"pattern": ""}, "'pattern'"),
        ("search_text", {"pattern": "x", "regex": "maybe"}, "'regex'"),
        ("search_text", {"pattern": "(", "regex": True}, "regular expression"),
        ("edit_file", {"path": "a.txt", "old_text": "x", "new_text": None}, "'new_text'"),
        ("edit_file", {"path": "README.md", "old_text": "a", "new_text": "a"}, "same"),
        ("run_command", {}, "'command'"),
        ("run_command", {"command": "   "}, "'command'"),
        ("run_command", {"command": "true", "timeout_seconds": "soon"}, "'timeout_seconds'"),
        ("run_command", {"command": "true", "timeout_seconds": -1}, "timeout_seconds"),
    ],
)
async def test_bad_arguments_are_error_outcomes_naming_the_argument(
    ws: WorkspaceTools, host: FakeHost, name: str, arguments: dict[str, Any], named: str
) -> None:
    outcome = await ws.call("t1", name, arguments)
    assert outcome.is_error
    assert not outcome.denied
    assert named in outcome.output
    assert host.requests == []


async def test_arguments_that_are_not_an_object(ws: WorkspaceTools) -> None:
    outcome = await ws.call("t1", "read_file", ["README.md"])  # type: ignore[arg-type]
    assert outcome == ToolOutcome("Bad arguments for read_file: expected a JSON object.", True)


# --- read_file ----------------------------------------------------------------------------


async def test_read_file_from_disk(ws: WorkspaceTools) -> None:
    outcome = await ws.call("t1", "read_file", {"path": "src/main.py"})
    assert outcome == ToolOutcome("import os\n\ndef main():\n    return 1\n")


async def test_read_file_range_with_string_numbers(ws: WorkspaceTools) -> None:
    outcome = await ws.call(
        "t1", "read_file", {"path": "src/main.py", "start_line": "3", "end_line": 9}
    )
    assert outcome.output == "def main():\n    return 1\n[src/main.py: lines 3-4 of 4]"
    past = await ws.call("t1", "read_file", {"path": "src/main.py", "start_line": 5})
    assert past.is_error
    assert "past the end" in past.output


async def test_read_file_prefers_the_editors_unsaved_text(
    ws: WorkspaceTools, host: FakeHost, root: Path
) -> None:
    host.documents[root / "src" / "main.py"] = "unsaved text\n"
    host.documents[root / "draft.py"] = "never saved\n"
    assert (await ws.call("t1", "read_file", {"path": "src/main.py"})).output == "unsaved text\n"
    assert (await ws.call("t1", "read_file", {"path": "draft.py"})).output == "never saved\n"


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("missing.txt", "File not found: missing.txt"),
        ("src", "src is a directory"),
        ("image.bin", "image.bin is a binary file"),
        ("src/main.py/x", "File not found"),
    ],
)
async def test_read_file_errors(ws: WorkspaceTools, root: Path, path: str, message: str) -> None:
    (root / "image.bin").write_bytes(b"\x89PNG\x00\x01\x02")
    outcome = await ws.call("t1", "read_file", {"path": path})
    assert outcome.is_error
    assert message in outcome.output


async def test_read_file_caps_output_and_handles_unicode(ws: WorkspaceTools, root: Path) -> None:
    (root / "big.txt").write_text("ü" * 5000)
    (root / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    (root / "empty.txt").write_text("")
    big = await ws.call("t1", "read_file", {"path": "big.txt"})
    assert big.output.startswith("ü" * 2000 + "\n[... truncated at 2000 of 5000 characters")
    assert (await ws.call("t1", "read_file", {"path": "latin1.txt"})).output == "caf\ufffd\n"
    empty = await ws.call("t1", "read_file", {"path": "empty.txt"})
    assert empty == ToolOutcome("(empty.txt is empty)")


# --- list_directory ------------------------------------------------------------------------


async def test_list_directory(ws: WorkspaceTools, root: Path) -> None:
    (root / ".hidden").write_text("")
    (root / "src_link").symlink_to(root / "src")
    assert (await ws.call("t1", "list_directory", {})).output == (
        ".hidden\nREADME.md\nsrc/\nsrc_link/"
    )
    assert (await ws.call("t1", "list_directory", {"path": "src"})).output == "main.py\npkg/"
    (root / "void").mkdir()
    assert (await ws.call("t1", "list_directory", {"path": "void"})).output == "(void is empty)"


async def test_list_directory_errors_and_cap(
    ws: WorkspaceTools, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = await ws.call("t1", "list_directory", {"path": "nope"})
    assert missing.is_error
    assert "Directory not found: nope" in missing.output
    file = await ws.call("t1", "list_directory", {"path": "README.md"})
    assert file.is_error
    assert "not a directory" in file.output
    many = root / "many"
    many.mkdir()
    for index in range(12):
        (many / f"f{index:02}").write_text("")
    monkeypatch.setattr(tools, "MAX_LIST_ENTRIES", 5)
    listing = (await ws.call("t1", "list_directory", {"path": "many"})).output
    assert listing == "f00\nf01\nf02\nf03\nf04\n[... 7 more entries]"


# --- search_text ---------------------------------------------------------------------------


async def test_search_text_literal_and_regex(ws: WorkspaceTools) -> None:
    literal = await ws.call("t1", "search_text", {"pattern": "main"})
    assert literal.output.splitlines() == [
        "README.md:2: main entry",
        "src/main.py:3: def main():",
        "src/pkg/util.py:2: return 'main'",
    ]
    regex = await ws.call("t1", "search_text", {"pattern": r"^def \w+\(", "regex": "true"})
    assert regex.output.splitlines() == [
        "src/main.py:3: def main():",
        "src/pkg/util.py:1: def helper():",
    ]
    # A literal pattern with regex characters is taken literally.
    assert (await ws.call("t1", "search_text", {"pattern": "main("})).output == (
        "src/main.py:3: def main():"
    )


async def test_search_text_in_a_subdirectory_or_a_file(ws: WorkspaceTools) -> None:
    sub = await ws.call("t1", "search_text", {"pattern": "return", "path": "src/pkg"})
    assert sub.output == "src/pkg/util.py:2: return 'main'"
    one = await ws.call("t1", "search_text", {"pattern": "os", "path": "src/main.py"})
    assert one.output == "src/main.py:1: import os"
    none = await ws.call("t1", "search_text", {"pattern": "zebra"})
    assert none == ToolOutcome("No matches for 'zebra' in ..")
    # a path that does not exist (a small model copies an example): the whole workspace is
    # searched, and the model told so (the humanize bench: "src/app.py", twice)
    missing = await ws.call("t1", "search_text", {"pattern": "import os", "path": "src/app.py"})
    assert not missing.is_error
    assert missing.output == (
        "src/app.py does not exist; milk searched the whole workspace instead.\n"
        "src/main.py:1: import os"
    )
    nothing = await ws.call("t1", "search_text", {"pattern": "zebra", "path": "nope"})
    assert nothing.output == (
        "nope does not exist; milk searched the whole workspace instead.\n"
        "No matches for 'zebra' in .."
    )


async def test_search_text_skips_tool_folders_binary_huge_and_outside_links(
    ws: WorkspaceTools, root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for folder in (".git", "node_modules/pkg", ".venv/lib"):
        (root / folder).mkdir(parents=True)
        (root / folder / "hit.txt").write_text("needle\n")
    (root / "blob.bin").write_bytes(b"needle\x00\x01")
    (root / "huge.txt").write_text("needle\n" + "x" * 200)
    (root / "leak.txt").symlink_to(tmp_path / "outside" / "secret.txt")
    (tmp_path / "outside" / "secret.txt").write_text("needle\n")
    (root / "inner.txt").symlink_to(root / "README.md")
    (root / "ok.txt").write_text("a needle here\n")
    monkeypatch.setattr(tools, "MAX_SEARCH_FILE_BYTES", 100)
    outcome = await ws.call("t1", "search_text", {"pattern": "needle"})
    assert outcome.output == "ok.txt:1: a needle here"
    inner = await ws.call("t1", "search_text", {"pattern": "Project"})
    assert inner.output.splitlines() == ["README.md:1: # Project", "inner.txt:1: # Project"]


async def test_search_text_caps_matches(
    ws: WorkspaceTools, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (root / "many.txt").write_text("hit\n" * 50)
    monkeypatch.setattr(tools, "MAX_SEARCH_MATCHES", 3)
    outcome = await ws.call("t1", "search_text", {"pattern": "hit", "path": "many.txt"})
    assert outcome.output.splitlines() == [
        "many.txt:1: hit",
        "many.txt:2: hit",
        "many.txt:3: hit",
        "[stopped after 3 matches; narrow the search]",
    ]


async def test_search_text_regex_that_backtracks_forever_is_cut_off(
    ws: WorkspaceTools, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (root / "slow.txt").write_text("a" * 30 + "b\n")
    monkeypatch.setattr(tools, "SEARCH_TIME_LIMIT_SECONDS", 0.5)
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.02)
            ticks += 1

    ticker = asyncio.create_task(tick())
    started = time.monotonic()
    arguments = {"pattern": "(a|a)+$", "regex": True, "path": "slow.txt"}
    outcome = await ws.call("t1", "search_text", arguments)
    elapsed = time.monotonic() - started
    ticker.cancel()
    assert outcome.is_error
    assert outcome.output.startswith(
        "search_text stopped: the pattern '(a|a)+$' took too long to match (over 0.5 s,"
        " at slow.txt line 1). Use a simpler pattern or a literal search (regex=false)."
    )
    assert 0.4 < elapsed < 6  # CPU time of matching: more by the clock on a busy machine
    assert ticks >= 10  # the event loop kept running meanwhile


async def test_search_text_nested_quantifier_is_fast_with_regex(
    ws: WorkspaceTools, root: Path
) -> None:
    """`(a+)+$` backtracks through 2**30 ways with Python's `re` on this line; `regex` sees
    through it and answers at once."""
    (root / "slow.txt").write_text("a" * 30 + "b\n" + "a" * 30 + "\n")
    started = time.monotonic()
    outcome = await ws.call("t1", "search_text", {"pattern": "(a+)+$", "regex": True})
    assert outcome.output == "slow.txt:2: " + "a" * 30
    assert time.monotonic() - started < 1


async def test_search_text_out_of_time_returns_what_it_found(
    ws: WorkspaceTools, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (root / "mixed.txt").write_text("hit\n" + ("a" * 17 + "b\n") * 400)
    monkeypatch.setattr(tools, "SEARCH_TIME_LIMIT_SECONDS", 0.5)
    outcome = await ws.call(
        "t1", "search_text", {"pattern": "^hit|(a|a)+$", "regex": True, "path": "mixed.txt"}
    )
    assert not outcome.is_error
    assert outcome.output.splitlines() == [
        "mixed.txt:1: hit",
        "[stopped after 0.5 s; more matches may exist: search a smaller path or use a simpler"
        " pattern]",
    ]


def running_threads() -> int:
    """Threads of this process, other than the one asking, that are running or runnable."""
    count = 0
    for task in Path("/proc/self/task").iterdir():
        if int(task.name) == threading.get_native_id():
            continue
        with contextlib.suppress(OSError):
            if (task / "stat").read_text().rsplit(")", 1)[1].split()[0] == "R":
                count += 1
    return count


async def sample_running_threads(seconds: float) -> list[int]:
    samples = []
    for _ in range(int(seconds / 0.02)):
        samples.append(running_threads())
        await asyncio.sleep(0.02)
    return samples


async def test_cancelled_search_stops_its_thread(ws: WorkspaceTools, root: Path) -> None:
    """Each line costs some 0.1 s of matching; once the call is cancelled, its thread stops
    at the next line instead of matching on until the time limit."""
    (root / "slow.txt").write_text(("a" * 17 + "b\n") * 2000)
    task = asyncio.create_task(ws.call("t1", "search_text", {"pattern": "(a|a)+$", "regex": True}))
    await asyncio.sleep(0.3)
    assert max(await sample_running_threads(0.5)) >= 1  # the search is running
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0.5)
    assert max(await sample_running_threads(1.5)) == 0


# --- edit_file ---------------------------------------------------------------------------


async def test_edit_file_on_disk_is_atomic_and_keeps_the_mode(
    ws: WorkspaceTools, host: FakeHost, root: Path
) -> None:
    target = root / "src" / "main.py"
    target.chmod(0o751)
    inode_before = target.stat().st_ino
    arguments = {"path": "src/main.py", "old_text": "return 1", "new_text": "return 2"}
    outcome = await ws.call("call-7", "edit_file", arguments)
    assert outcome == ToolOutcome("Edited src/main.py: lines 4-4.")
    assert target.read_text() == "import os\n\ndef main():\n    return 2\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o751
    assert target.stat().st_ino != inode_before  # replaced, not rewritten in place
    assert sorted(p.name for p in target.parent.iterdir()) == ["main.py", "pkg"]
    [request] = host.requests
    assert request == PermissionRequest(
        agent=Agent.LOCAL,
        tool_call_id="call-7",
        tool="edit_file",
        input=arguments,
        description="Edit src/main.py: lines 4-4",
        edits=(
            FileEdit(
                target,
                "import os\n\ndef main():\n    return 1\n",
                "import os\n\ndef main():\n    return 2\n",
            ),
        ),
    )
    assert host.applied == []


async def test_edit_file_open_in_the_editor_goes_through_the_host(
    ws: WorkspaceTools, host: FakeHost, root: Path
) -> None:
    target = root / "src" / "main.py"
    host.documents[target] = "unsaved\nreturn 1\n"
    outcome = await ws.call(
        "t1", "edit_file", {"path": "src/main.py", "old_text": "return 1", "new_text": "return 3"}
    )
    assert outcome == ToolOutcome("Edited src/main.py in the editor (not saved yet): lines 2-2.")
    assert host.applied == [(target, "unsaved\nreturn 3\n")]
    assert target.read_text() == "import os\n\ndef main():\n    return 1\n"  # disk untouched


async def test_edit_file_falls_back_to_disk_when_the_editor_refuses(
    ws: WorkspaceTools, host: FakeHost, root: Path
) -> None:
    target = root / "src" / "main.py"
    host.documents[target] = target.read_text()
    host.apply_succeeds = False
    outcome = await ws.call(
        "t1", "edit_file", {"path": "src/main.py", "old_text": "import os", "new_text": "import re"}
    )
    assert outcome == ToolOutcome("Edited src/main.py: lines 1-1.")
    assert len(host.applied) == 1
    assert target.read_text().startswith("import re\n")


async def test_edit_file_creates_a_missing_file_with_empty_old_text(
    ws: WorkspaceTools, host: FakeHost, root: Path
) -> None:
    outcome = await ws.call(
        "t1", "edit_file", {"path": "docs/new/notes.md", "old_text": "", "new_text": "# Notes\n"}
    )
    assert outcome == ToolOutcome("Created docs/new/notes.md.")
    created = root / "docs" / "new" / "notes.md"
    assert created.read_text() == "# Notes\n"
    umask = confined.current_umask()
    assert stat.S_IMODE(created.stat().st_mode) == 0o666 & ~umask
    assert host.requests[0].description == "Create docs/new/notes.md (1 lines)"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"path": "src/pkg/util.py", "old_text": "absent", "new_text": "x"}, "occurs 0 times"),
        (
            {"path": "src/pkg/util.py", "old_text": "e", "new_text": "x"},
            "old_text occurs 4 times in src/pkg/util.py (on lines 1, 2); include more",
        ),
        ({"path": "missing.py", "old_text": "a", "new_text": "b"}, "File not found: missing.py"),
        ({"path": "README.md", "old_text": "", "new_text": "b"}, "already exists"),
        ({"path": "src", "old_text": "a", "new_text": "b"}, "is a directory"),
        ({"path": "blob.bin", "old_text": "a", "new_text": "b"}, "binary"),
        ({"path": "latin1.txt", "old_text": "caf", "new_text": "b"}, "not UTF-8"),
    ],
)
async def test_edit_file_errors_do_not_ask_or_write(
    ws: WorkspaceTools, host: FakeHost, root: Path, arguments: dict[str, Any], message: str
) -> None:
    (root / "blob.bin").write_bytes(b"a\x00b")
    (root / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    before = (root / "src" / "pkg" / "util.py").read_text()
    outcome = await ws.call("t1", "edit_file", arguments)
    assert outcome.is_error
    assert message in outcome.output
    assert host.requests == []
    assert (root / "src" / "pkg" / "util.py").read_text() == before


async def test_failed_edit_shows_the_closest_text_of_the_file(
    ws: WorkspaceTools, host: FakeHost, root: Path
) -> None:
    body = [f"value_{n} = {n}" for n in range(1, 41)]
    body[19:22] = ["def total(items):", "    return sum(items)", ""]
    (root / "calc.py").write_text("\n".join(body) + "\n")
    wrong = "def total(items):\n    return sum(item)\n"  # `item`, not `items`
    outcome = await ws.call(
        "t1", "edit_file", {"path": "calc.py", "old_text": wrong, "new_text": "x"}
    )
    assert outcome.is_error
    assert host.requests == []
    head, numbered = outcome.output.split(":\n", 1)
    assert head == (
        "old_text occurs 0 times in calc.py; it must match the file exactly, whitespace and"
        " indentation included. The closest text in the file is (lines 15-26; the numbers and"
        " ' | ' are not part of the file)"
    )
    shown_lines = numbered.splitlines()
    assert shown_lines[:12] == [
        "15 | value_15 = 15",
        "16 | value_16 = 16",
        "17 | value_17 = 17",
        "18 | value_18 = 18",
        "19 | value_19 = 19",
        "20 | def total(items):",
        "21 |     return sum(items)",
        "22 | ",
        "23 | value_23 = 23",
        "24 | value_24 = 24",
        "25 | value_25 = 25",
        "26 | value_26 = 26",
    ]
    assert shown_lines[12:] == [
        "Copy old_text exactly from the file's text (read_file shows it) and try again."
    ]


async def test_failed_edit_of_a_long_old_text_shows_at_most_twelve_lines(
    ws: WorkspaceTools, root: Path
) -> None:
    (root / "long.txt").write_text("".join(f"line {n}\n" for n in range(1, 101)))
    wanted = "".join(f"lines {n}\n" for n in range(50, 70))  # 20 lines, all slightly off
    outcome = await ws.call(
        "t1", "edit_file", {"path": "long.txt", "old_text": wanted, "new_text": ""}
    )
    assert "The closest text in the file is (lines 50-61;" in outcome.output
    numbered = [line for line in outcome.output.splitlines() if re.match(r"\d+ \| ", line)]
    assert numbered[0] == "50 | line 50"
    assert numbered[-1] == "61 | line 61"
    assert len(numbered) == 12


async def test_failed_edit_of_an_empty_file(ws: WorkspaceTools, root: Path) -> None:
    (root / "empty.txt").write_text("")
    outcome = await ws.call(
        "t1", "edit_file", {"path": "empty.txt", "old_text": "x", "new_text": "y"}
    )
    assert outcome.output.endswith("indentation included. The file is empty.")


async def test_edit_file_denied(root: Path) -> None:
    host = FakeHost(PermissionOption.DENY)
    ws = WorkspaceTools(root, host)
    outcome = await ws.call(
        "t1", "edit_file", {"path": "README.md", "old_text": "main", "new_text": "x"}
    )
    assert outcome == ToolOutcome("The user denied edit_file.", is_error=True, denied=True)
    assert (root / "README.md").read_text() == "# Project\nmain entry\n"
    assert len(host.requests) == 1


async def test_edit_file_allow_session_counts_as_allow(root: Path) -> None:
    host = FakeHost(PermissionOption.ALLOW_SESSION)
    ws = WorkspaceTools(root, host)
    outcome = await ws.call(
        "t1", "edit_file", {"path": "README.md", "old_text": "main", "new_text": "x"}
    )
    assert not outcome.is_error
    assert (root / "README.md").read_text() == "# Project\nx entry\n"


async def test_edit_file_keeps_crlf_line_endings(ws: WorkspaceTools, root: Path) -> None:
    target = root / "win.txt"
    target.write_bytes(b"one\r\ntwo\r\nthree\r\n")
    outcome = await ws.call(
        "t1", "edit_file", {"path": "win.txt", "old_text": "one\ntwo\n", "new_text": "1\n2\n"}
    )
    assert not outcome.is_error
    assert target.read_bytes() == b"1\r\n2\r\nthree\r\n"


async def test_edit_file_rechecks_the_text_after_the_user_answers(root: Path) -> None:
    target = root / "README.md"

    class ChangingHost(FakeHost):
        async def request_permission(self, request: PermissionRequest) -> PermissionOption:
            target.write_text("main main\n")  # the user edited meanwhile
            return await super().request_permission(request)

    ws = WorkspaceTools(root, ChangingHost())
    outcome = await ws.call(
        "t1", "edit_file", {"path": "README.md", "old_text": "main", "new_text": "x"}
    )
    assert outcome.is_error
    assert "occurs 2 times" in outcome.output
    assert target.read_text() == "main main\n"


# --- run_command ------------------------------------------------------------------------


def pid_gone(pid: int, within_seconds: float = 3.0) -> bool:
    """True once `pid` no longer exists (a zombie waiting for its reaper counts as gone)."""
    deadline = time.monotonic() + within_seconds
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.02)
    return False


async def test_run_command_reports_output_and_exit_code(
    ws: WorkspaceTools, host: FakeHost, root: Path
) -> None:
    arguments = {"command": "pwd; echo out; echo err >&2; exit 3"}
    outcome = await ws.call("t9", "run_command", arguments)
    assert outcome == ToolOutcome(f"{root}\nout\nerr\n[exit code 3]", is_error=True)
    [request] = host.requests
    assert (request.tool, request.tool_call_id, request.input) == ("run_command", "t9", arguments)
    assert request.agent is Agent.LOCAL
    assert arguments["command"] in request.description
    ok = await ws.call("t1", "run_command", {"command": "true"})
    assert ok == ToolOutcome("(no output)\n[exit code 0]")


async def test_run_command_a_package_file_run_as_a_script_gets_the_module_hint(
    ws: WorkspaceTools, root: Path
) -> None:
    """A real Python fails on the relative import of `pkg/__main__.py` run as a script; the
    result says to run it as a module, and that command works."""
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "core.py").write_text("WORD = 'ok'\n")
    (root / "pkg" / "__main__.py").write_text("from .core import WORD\nprint(WORD)\n")
    python = sys.executable
    outcome = await ws.call("t1", "run_command", {"command": f"{python} pkg/__main__.py --help"})
    assert outcome.is_error
    assert outcome.output.endswith(
        "[milk: pkg/__main__.py is part of the package pkg; its relative imports work only"
        f" when it runs as a module. Run it from the workspace's top as: {python} -m pkg"
        " --help]"
    ), outcome.output
    ran = await ws.call("t2", "run_command", {"command": f"{python} -m pkg --help"})
    assert ran == ToolOutcome("ok\n[exit code 0]")
    other = await ws.call("t3", "run_command", {"command": f"{python} -c 'import nothing_here'"})
    assert other.is_error and "[milk:" not in other.output


@pytest.mark.parametrize(
    ("command", "packages", "hint_run"),
    [
        ("python3 pkg/sub/mod.py", {"pkg", "pkg/sub"}, "python3 -m pkg.sub.mod"),
        ("cd . && python ./pkg/__main__.py 'a b'", {"pkg"}, "python -m pkg 'a b'"),
        ("python pkg/sub/mod.py", {"pkg"}, None),  # pkg/sub is no package
        ("python src/pkg/mod.py", {"src/pkg"}, None),  # the package does not start at the top
        ("python mod.py", set(), None),
        ("python /abs/pkg/mod.py", {"pkg"}, None),
        ("python 'unclosed", {"pkg"}, None),
    ],
)
def test_module_run_hint_reads_the_command_and_the_packages(
    command: str, packages: set[str], hint_run: str | None
) -> None:
    output = "ImportError: attempted relative import with no known parent package"
    hint = module_run_hint(command, output, packages.__contains__)
    if hint_run is None:
        assert hint is None
    else:
        assert hint is not None and hint.endswith(f"as: {hint_run}]"), hint
    assert module_run_hint(command, "SyntaxError: invalid syntax", packages.__contains__) is None


async def test_run_command_gets_no_stdin(ws: WorkspaceTools) -> None:
    outcome = await ws.call("t1", "run_command", {"command": "cat; echo done"})
    assert outcome == ToolOutcome("done\n[exit code 0]")


async def test_run_command_denied_does_not_run(root: Path) -> None:
    host = FakeHost(PermissionOption.DENY)
    ws = WorkspaceTools(root, host)
    outcome = await ws.call("t1", "run_command", {"command": "touch ran"})
    assert outcome == ToolOutcome("The user denied run_command.", is_error=True, denied=True)
    assert not (root / "ran").exists()


async def test_run_command_timeout_kills_the_process_group(ws: WorkspaceTools, root: Path) -> None:
    command = "echo $$ > pids; sleep 30 & echo $! >> pids; echo started; wait"
    started = time.monotonic()
    outcome = await ws.call("t1", "run_command", {"command": command, "timeout_seconds": 0.5})
    assert time.monotonic() - started < 4
    assert outcome.is_error
    assert outcome.output == (
        "started\n[timed out after 0.5 s; the command and its processes were stopped]"
    )
    pids = [int(line) for line in (root / "pids").read_text().split()]
    assert len(pids) == 2
    assert all(pid_gone(pid) for pid in pids)


async def test_run_command_timeout_escalates_to_sigkill(
    ws: WorkspaceTools, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(commands, "TERMINATE_GRACE_SECONDS", 0.3)
    command = "trap '' TERM; echo $$ > pid; while :; do sleep 0.05; done"
    outcome = await ws.call("t1", "run_command", {"command": command, "timeout_seconds": 0.3})
    assert "timed out" in outcome.output
    assert pid_gone(int((root / "pid").read_text()))


async def test_run_command_stops_background_children_holding_the_output(
    ws: WorkspaceTools, root: Path
) -> None:
    started = time.monotonic()
    outcome = await ws.call("t1", "run_command", {"command": "sleep 30 & echo $! > pid; echo hi"})
    assert time.monotonic() - started < 4
    assert outcome.output == (
        "hi\n[exit code 0; background processes still holding its output were stopped]"
    )
    assert not outcome.is_error
    assert pid_gone(int((root / "pid").read_text()))


async def test_run_command_leaves_detached_output_alone(ws: WorkspaceTools) -> None:
    outcome = await ws.call("t1", "run_command", {"command": "sleep 1 >/dev/null 2>&1 & echo hi"})
    assert outcome == ToolOutcome("hi\n[exit code 0]")


async def test_run_command_caps_output_keeping_start_and_end(root: Path, host: FakeHost) -> None:
    ws = WorkspaceTools(root, host, output_cap_chars=100)
    command = "echo FIRST; i=0; while [ $i -lt 3000 ]; do echo line$i; i=$((i+1)); done; echo LAST"
    outcome = await ws.call("t1", "run_command", {"command": command})
    head, rest = outcome.output.split("\n[... output truncated: ", 1)
    assert head.startswith("FIRST\nline0")
    assert len(head) == 50
    assert rest.endswith("line2999\nLAST\n[exit code 0]")
    assert len(rest.split("...]\n", 1)[1]) == 50 + len("\n[exit code 0]") - 1


async def test_run_command_signal_exit_is_described(ws: WorkspaceTools) -> None:
    outcome = await ws.call("t1", "run_command", {"command": "kill -9 $$"})
    assert outcome == ToolOutcome("(no output)\n[killed by signal SIGKILL]", is_error=True)


async def test_cancelling_run_command_kills_the_child(ws: WorkspaceTools, root: Path) -> None:
    pid_file = root / "pid"
    task = asyncio.create_task(
        ws.call("t1", "run_command", {"command": "echo $$ > pid; exec sleep 30"})
    )
    for _ in range(200):
        if pid_file.exists() and pid_file.read_text().strip():
            break
        await asyncio.sleep(0.01)
    pid = int(pid_file.read_text())
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert pid_gone(pid)


async def test_capped_output_keeps_whole_multibyte_text_under_the_cap() -> None:
    output = commands._CappedOutput(10)
    for byte in "äöü€".encode():
        output.add(bytes([byte]))
    assert output.text() == "äöü€"


def test_module_does_not_import_the_lsp_layer() -> None:
    source = Path(tools.__file__).read_text()
    assert "pygls" not in source
    assert "lsprotocol" not in source


async def test_an_edit_made_already_says_when_it_is_inside_what_the_request_names(
    root: Path, host: FakeHost
) -> None:
    """The local agent ends a repeated made edit as done only with that evidence."""
    (root / "t.py").write_text('def _now():\n    """Now."""\n    return 1\n\n\nX = 1\n')
    named = WorkspaceTools(root, host, focus=["_now"])
    again = {
        "path": "t.py",
        "old_text": "def _now():\n    return 1",
        "new_text": 'def _now():\n    """Now."""\n    return 1',
    }
    outcome = await named.call("t1", "edit_file", again)
    assert "this edit was made already, inside _now as the request asks; nothing" in outcome.output
    assert outcome.made_already
    elsewhere = {"path": "t.py", "old_text": "X = 0", "new_text": "X = 1"}
    outcome = await named.call("t2", "edit_file", elsewhere)
    assert "this edit was made already; nothing to change." in outcome.output
    assert not outcome.made_already


@pytest.mark.parametrize(
    ("name", "text", "again"),
    [
        (
            "src/now.js",
            "function now() {\n  // Now.\n  return 1\n}\n\nconst X = 1\n",
            ("function now() {\n  return 1", "function now() {\n  // Now.\n  return 1"),
        ),
        (
            "now.go",
            "package now\n\nfunc Now() int {\n\t// Now.\n\treturn 1\n}\n\nvar X = 1\n",
            ("func Now() int {\n\treturn 1", "func Now() int {\n\t// Now.\n\treturn 1"),
        ),
    ],
)
async def test_an_edit_made_already_is_placed_in_any_language_milk_parses(
    root: Path, host: FakeHost, name: str, text: str, again: tuple[str, str]
) -> None:
    """Issue 29: the names around an edit come from the code package, not Python alone."""
    (root / name).parent.mkdir(parents=True, exist_ok=True)
    (root / name).write_text(text)
    symbol = "now" if name.endswith(".js") else "Now"
    named = WorkspaceTools(root, host, focus=[symbol])
    old, new = again
    outcome = await named.call("t1", "edit_file", {"path": name, "old_text": old, "new_text": new})
    assert f"this edit was made already, inside {symbol} as the request asks" in outcome.output
    assert outcome.made_already
    elsewhere = {"path": name, "old_text": "X = 0", "new_text": "X = 1"}
    outcome = await named.call("t2", "edit_file", elsewhere)
    assert not outcome.made_already
