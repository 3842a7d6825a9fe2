"""Workspace checkpoints (milk_lsp/changes/checkpoints.py): real files in tmp_path, real
subprocesses, no doubles."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import threading
import time
from pathlib import Path

import pytest

from milk_lsp.changes.blobs import LOOSE_MAX
from milk_lsp.changes.checkpoints import Checkpoints, CheckpointUnavailable, FileChange, Snapshot
from milk_lsp.changes.manifest import MANIFEST_NAME
from milk_lsp.system.files import COARSE_WINDOW_NS, FINE_WINDOW_NS, settled


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    root.mkdir()
    return root


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "data" / "checkpoints" / "abc"


def write(path: Path, data: bytes | str, mode: int | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    path.write_bytes(data)
    if mode is not None:
        path.chmod(mode)
    return path


def settle() -> None:
    """Let fresh files age past the window in which their stat is not yet trusted."""
    time.sleep(FINE_WINDOW_NS / 1e9 * 2)


def kinds(changes: list[FileChange]) -> dict[str, str]:
    return {change.path: change.kind for change in changes}


def tree(root: Path) -> dict[str, tuple[bytes, int, int]]:
    """Every file under `root`: (bytes, mode, mtime_ns)."""
    found = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            info = path.stat()
            found[path.relative_to(root).as_posix()] = (
                path.read_bytes(),
                info.st_mode,
                info.st_mtime_ns,
            )
    return found


# --- what a snapshot sees -----------------------------------------------------------------


def test_created_modified_and_deleted_files_are_told_apart(workspace: Path, store: Path) -> None:
    write(workspace / "keep.py", "unchanged\n")
    write(workspace / "edit.py", "old\n")
    write(workspace / "pkg" / "gone.py", "bye\n")
    book = Checkpoints(store, workspace)
    before = book.snapshot()
    assert set(before) == {"keep.py", "edit.py", "pkg/gone.py"}

    write(workspace / "edit.py", "new text\n")
    (workspace / "pkg" / "gone.py").unlink()
    write(workspace / "pkg" / "deep" / "new.py", "hello\n")
    after = book.snapshot()

    changes = Checkpoints.diff(before, after)
    assert [c.path for c in changes] == ["edit.py", "pkg/deep/new.py", "pkg/gone.py"]
    edit, new, gone = changes
    assert (edit.kind, new.kind, gone.kind) == ("modified", "created", "deleted")
    assert book.blob(edit.before or "") == b"old\n"
    assert book.blob(edit.after or "") == b"new text\n"
    assert new.before is None and book.blob(new.after or "") == b"hello\n"
    assert gone.after is None and book.blob(gone.before or "") == b"bye\n"
    assert Checkpoints.diff(after, book.snapshot()) == []


def test_a_change_made_by_a_shell_command_is_seen(workspace: Path, store: Path) -> None:
    write(workspace / "counter.txt", "aaaa\n")
    book = Checkpoints(store, workspace)
    before = book.snapshot()
    # Same size, rewritten in place right after the snapshot: within the same timestamp
    # tick the stat can be identical, so only a re-read catches it.
    subprocess.run(
        ["sh", "-c", 'printf "bbbb\\n" > counter.txt && printf "made\\n" > made.txt'],
        cwd=workspace,
        check=True,
    )
    changes = Checkpoints.diff(before, book.snapshot())
    assert kinds(changes) == {"counter.txt": "modified", "made.txt": "created"}
    assert book.blob(changes[0].after or "") == b"bbbb\n"


def test_a_freshly_written_file_is_read_again_until_it_settles(
    workspace: Path, store: Path
) -> None:
    """A same-size write in the timestamp tick of the snapshot's read would leave size,
    times and inode as they were (kernels without multigrain timestamps): the stat of a
    file written just before it was read is not trusted yet."""
    write(workspace / "fresh.txt", "aaaa")
    book = Checkpoints(store, workspace)
    book.snapshot()
    book.snapshot()
    assert book.files_hashed == 2
    settle()
    book.snapshot()
    book.snapshot()
    assert book.files_hashed == 3


def _stat(mtime_ns: int, ctime_ns: int) -> os.stat_result:
    return os.stat_result(
        (0o100644, 1, 0, 1, 0, 0, 4, 0, 0, 0, 0.0, 0.0, 0.0, 0, mtime_ns, ctime_ns)
    )


def test_settled_needs_a_window_after_the_last_write() -> None:
    now = 1_800_000_000_123_456_789
    fine = 1_800_000_000_000_000_001
    assert settled(_stat(fine, fine), fine + FINE_WINDOW_NS + 1)
    assert not settled(_stat(fine, fine), fine + FINE_WINDOW_NS)
    assert not settled(_stat(fine - 10**9, fine), fine + 1), "ctime counts too"
    # Whole-second timestamps: a write up to a second later can keep the same time.
    whole = 1_800_000_000_000_000_000
    assert not settled(_stat(whole, whole), whole + FINE_WINDOW_NS + 1)
    assert settled(_stat(whole, whole), whole + COARSE_WINDOW_NS + 1)
    assert not settled(_stat(now + 10**9, now + 10**9), now), "a file from the future"


def test_a_chmod_alone_is_a_change(workspace: Path, store: Path) -> None:
    script = write(workspace / "run.sh", "#!/bin/sh\necho hi\n", 0o644)
    book = Checkpoints(store, workspace)
    before = book.snapshot()
    script.chmod(0o755)
    (change,) = Checkpoints.diff(before, book.snapshot())
    assert change.kind == "modified"
    assert book.blob(change.before or "") == book.blob(change.after or "")


def test_gitignore_files_root_and_nested_with_negation(workspace: Path, store: Path) -> None:
    write(workspace / ".gitignore", "*.log\n!keep.log\nbuild/\n/top-only.txt\n")
    write(workspace / "app.log", "x")
    write(workspace / "keep.log", "x")
    write(workspace / "top-only.txt", "x")
    write(workspace / "build" / "out.bin", "x")
    write(workspace / "build" / "keep.log", "negation cannot reach below an ignored dir")
    write(workspace / "node_modules" / "lib" / "index.js", "x")
    write(workspace / "src" / ".gitignore", "node_modules/\n*.tmp\n!important.log\n")
    write(workspace / "src" / "node_modules" / "dep.js", "x")
    write(workspace / "src" / "scratch.tmp", "x")
    write(workspace / "src" / "important.log", "re-included by the nested file")
    write(workspace / "src" / "other.log", "x")
    write(workspace / "src" / "top-only.txt", "anchored to the root: kept here")
    write(workspace / "src" / "main.py", "x")
    write(workspace / "scratch.tmp", "the nested pattern does not apply above it")
    write(workspace / ".git" / "info" / "exclude", "node_modules/\nsecret.env\n")
    write(workspace / "secret.env", "x")
    write(workspace / "src" / "secret.env", "x")

    seen = set(Checkpoints(store, workspace).snapshot())

    assert seen == {
        ".gitignore",
        "keep.log",
        "scratch.tmp",
        "src/.gitignore",
        "src/important.log",
        "src/top-only.txt",
        "src/main.py",
    }


def test_an_edited_gitignore_takes_effect_at_the_next_snapshot(
    workspace: Path, store: Path
) -> None:
    write(workspace / ".gitignore", "*.log\n")
    write(workspace / "sub" / ".gitignore", "*.tmp\n")
    write(workspace / "app.log", "x")
    write(workspace / "sub" / "a.tmp", "x")
    write(workspace / "sub" / "b.py", "x")
    book = Checkpoints(store, workspace)
    assert set(book.snapshot()) == {".gitignore", "sub/.gitignore", "sub/b.py"}

    write(workspace / ".gitignore", "sub/b.py\n")
    write(workspace / "sub" / ".gitignore", "")
    assert set(book.snapshot()) == {".gitignore", "sub/.gitignore", "app.log", "sub/a.tmp"}

    (workspace / "sub" / ".gitignore").unlink()
    write(workspace / ".gitignore", "*.log\n")
    assert set(book.snapshot()) == {".gitignore", "sub/a.tmp", "sub/b.py"}


def test_git_is_never_read_nor_written(workspace: Path, store: Path) -> None:
    write(workspace / ".git" / "HEAD", "ref: refs/heads/main\n")
    write(workspace / ".git" / "objects" / "ab" / "cdef", b"\x78\x9c objects")
    write(workspace / ".git" / "info" / "exclude", "*.o\n")
    write(workspace / "vendor" / "sub" / ".git" / "config", "[core]\n")  # a submodule's
    write(workspace / "vendor" / "sub" / "code.c", "int x;\n")
    write(workspace / "main.c", "int main;\n")
    git_before = tree(workspace / ".git")
    book = Checkpoints(store, workspace)

    first = book.snapshot()
    assert book.files_hashed == 2  # the two files, nothing in .git
    write(workspace / "main.c", "int main(void);\n")
    book.restore("main.c", first["main.c"].version)

    assert set(first) == {"main.c", "vendor/sub/code.c"}
    assert tree(workspace / ".git") == git_before
    with pytest.raises(CheckpointUnavailable):
        book.restore(".git/HEAD", first["main.c"].version)
    with pytest.raises(CheckpointUnavailable):
        book.restore("vendor/sub/.git/config", None)
    assert tree(workspace / ".git") == git_before
    assert (workspace / "vendor" / "sub" / ".git" / "config").exists()


def test_the_store_inside_the_workspace_is_not_checkpointed(workspace: Path) -> None:
    write(workspace / "a.txt", "a")
    book = Checkpoints(workspace / ".milk" / "checkpoints", workspace)
    book.snapshot()
    assert set(book.snapshot()) == {"a.txt"}
    with pytest.raises(CheckpointUnavailable):
        book.restore(".milk/checkpoints/manifest.json", None)


# --- putting files back -------------------------------------------------------------------


def test_restore_puts_back_exact_bytes_and_modes(workspace: Path, store: Path) -> None:
    binary = bytes(range(256)) * 41 + b"\r\n\x00\xff"
    write(workspace / "img.bin", binary)
    write(workspace / "tool.sh", "#!/bin/sh\nexit 0\n", 0o755)
    write(workspace / "secret.env", "TOKEN=1\n", 0o600)
    write(workspace / "crlf.txt", b"line\r\nline\r\n")
    book = Checkpoints(store, workspace)
    before = book.snapshot()
    original = tree(workspace)

    write(workspace / "img.bin", b"\x00")
    (workspace / "tool.sh").unlink()
    (workspace / "secret.env").unlink()
    write(workspace / "crlf.txt", "line\nline\n")
    write(workspace / "new" / "dir" / "file.txt", "created by the turn")
    changes = Checkpoints.diff(before, book.snapshot())
    assert len(changes) == 5

    for change in changes:
        book.restore(change.path, change.before)

    restored = tree(workspace)
    assert {path: (data, mode) for path, (data, mode, _) in restored.items()} == {
        path: (data, mode) for path, (data, mode, _) in original.items()
    }
    assert stat.S_IMODE((workspace / "tool.sh").stat().st_mode) == 0o755
    assert stat.S_IMODE((workspace / "secret.env").stat().st_mode) == 0o600
    assert not (workspace / "new").exists(), "directories left empty by the undo go too"
    assert Checkpoints.diff(before, book.snapshot()) == []


def test_restore_all_handles_a_file_and_a_directory_swapping_places(
    workspace: Path, store: Path
) -> None:
    write(workspace / "config", "a file first\n")
    write(workspace / "docs" / "index.md", "# docs\n")
    book = Checkpoints(store, workspace)
    before = book.snapshot()
    (workspace / "config").unlink()
    write(workspace / "config" / "settings.toml", "x = 1\n")
    (workspace / "docs" / "index.md").unlink()
    (workspace / "docs").rmdir()
    write(workspace / "docs", "now a file\n")
    changes = Checkpoints.diff(before, book.snapshot())
    assert kinds(changes) == {
        "config": "deleted",
        "config/settings.toml": "created",
        "docs": "created",
        "docs/index.md": "deleted",
    }

    book.restore_all([(change.path, change.before) for change in changes])

    assert (workspace / "config").read_text() == "a file first\n"
    assert (workspace / "docs" / "index.md").read_text() == "# docs\n"
    assert Checkpoints.diff(before, book.snapshot()) == []


def test_current_digest_tells_whether_a_file_changed_since(workspace: Path, store: Path) -> None:
    write(workspace / "a.py", "one\n")
    book = Checkpoints(store, workspace)
    before = book.snapshot()
    write(workspace / "a.py", "two\n")
    write(workspace / "b.py", "new\n")
    changes = Checkpoints.diff(before, book.snapshot())
    assert [book.current_digest(c.path) for c in changes] == [c.after for c in changes]

    write(workspace / "a.py", "three: the user edited it again\n")
    (workspace / "b.py").unlink()
    assert book.current_digest("a.py") not in (None, changes[0].after)
    assert book.current_digest("b.py") is None
    assert book.current_digest("missing/nothing.py") is None
    (workspace / "dir").mkdir()
    assert book.current_digest("dir") is None


def test_a_file_over_the_size_limit_is_listed_but_not_restorable(
    workspace: Path, store: Path
) -> None:
    big = write(workspace / "data.bin", b"x" * 2000)
    book = Checkpoints(store, workspace, max_blob_bytes=1000)
    before = book.snapshot()
    assert before["data.bin"].too_large and before["data.bin"].digest is None
    write(big, b"y" * 3000)

    (change,) = Checkpoints.diff(before, book.snapshot())

    assert change.kind == "modified" and change.too_large
    assert book.blob(change.before or "") is None
    assert book.current_digest("data.bin") == change.after
    with pytest.raises(CheckpointUnavailable, match="larger than 1,000 bytes"):
        book.restore("data.bin", change.before)
    assert big.read_bytes() == b"y" * 3000
    assert not list((store / "blobs").rglob("*")), "no copy of it was stored"


def test_a_missing_or_damaged_copy_refuses_with_a_message(workspace: Path, store: Path) -> None:
    write(workspace / "a.txt", "precious\n")
    book = Checkpoints(store, workspace)
    version = book.snapshot()["a.txt"].version
    digest = version.split(":")[0]
    write(workspace / "a.txt", "changed\n")
    write(store / "blobs" / digest[:2] / digest[2:], b"not zlib at all")

    assert book.blob(version) is None
    with pytest.raises(CheckpointUnavailable, match="missing or damaged"):
        book.restore("a.txt", version)
    with pytest.raises(CheckpointUnavailable, match="missing or damaged"):
        book.restore_all([("b.txt", None), ("a.txt", version)])
    assert (workspace / "a.txt").read_text() == "changed\n"


# --- symlinks -----------------------------------------------------------------------------


def test_symlinks_leading_out_are_never_followed(
    tmp_path: Path, workspace: Path, store: Path
) -> None:
    outside = tmp_path / "outside"
    write(outside / "secret.txt", "do not read me\n")
    write(outside / "target.txt", "do not overwrite me\n")
    (workspace / "linked_dir").symlink_to(outside, target_is_directory=True)
    (workspace / "linked_file").symlink_to(outside / "secret.txt")
    write(workspace / "real.txt", "mine\n")
    outside_before = tree(outside)
    book = Checkpoints(store, workspace)

    snapshot = book.snapshot()

    assert set(snapshot) == {"real.txt"}
    assert book.files_hashed == 1
    assert book.current_digest("linked_file") is None
    assert book.current_digest("linked_dir/secret.txt") is None
    version = snapshot["real.txt"].version
    with pytest.raises(CheckpointUnavailable, match="symlink"):
        book.restore("linked_dir/target.txt", version)
    with pytest.raises(CheckpointUnavailable, match="symlink"):
        book.restore("linked_dir/new/file.txt", version)
    with pytest.raises(CheckpointUnavailable, match="symlink"):
        book.restore("linked_dir/secret.txt", None)
    assert tree(outside) == outside_before

    # A symlink at the path itself is replaced, never written through.
    (workspace / "trap.txt").symlink_to(outside / "target.txt")
    book.restore("trap.txt", version)
    assert not (workspace / "trap.txt").is_symlink()
    assert (workspace / "trap.txt").read_text() == "mine\n"
    book.restore("linked_file", None)  # deletes the link, not the file it points to
    assert not (workspace / "linked_file").exists()
    assert tree(outside) == outside_before


# --- limits and faults --------------------------------------------------------------------


def test_too_many_files_is_refused_in_plain_words(workspace: Path, store: Path) -> None:
    for i in range(6):
        write(workspace / f"f{i}.txt", str(i))
    write(workspace / ".gitignore", "ignored/\n")
    for i in range(20):
        write(workspace / "ignored" / f"{i}.txt", "not counted")
    assert len(Checkpoints(store, workspace, max_files=7).snapshot()) == 7

    with pytest.raises(CheckpointUnavailable, match="too many to checkpoint") as caught:
        Checkpoints(store, workspace, max_files=6).snapshot()
    assert "undo covers only the agents' own edits" in str(caught.value)


def test_a_store_that_cannot_be_written_is_refused(tmp_path: Path, workspace: Path) -> None:
    write(workspace / "a.txt", "a")
    blocker = write(tmp_path / "not-a-dir", "a file where the data dir should be")
    with pytest.raises(CheckpointUnavailable, match="cannot write"):
        Checkpoints(blocker / "checkpoints", workspace).snapshot()

    store = tmp_path / "store"
    book = Checkpoints(store, workspace)
    book.snapshot()
    write(workspace / "b.txt", "needs a new blob")
    blobs = store / "blobs"
    for path in sorted(blobs.rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    blobs.rmdir()
    write(blobs, "the blob directory is a file now")
    with pytest.raises(CheckpointUnavailable, match="cannot write"):
        book.snapshot()


def test_a_missing_workspace_is_refused(tmp_path: Path, store: Path) -> None:
    with pytest.raises(CheckpointUnavailable, match="cannot read the workspace folder"):
        Checkpoints(store, tmp_path / "nowhere").snapshot()


# --- the stat cache -----------------------------------------------------------------------


def test_unchanged_files_are_not_read_again(workspace: Path, store: Path) -> None:
    for i in range(30):
        write(workspace / "src" / f"m{i}.py", f"module {i}\n")
    settle()
    book = Checkpoints(store, workspace)
    first = book.snapshot()
    assert book.files_hashed == 30
    assert book.snapshot() == first
    assert book.files_hashed == 30

    write(workspace / "src" / "m3.py", "changed\n")
    book.snapshot()
    assert book.files_hashed == 31


def test_a_restarted_server_reuses_the_saved_stat_cache(workspace: Path, store: Path) -> None:
    for i in range(30):
        write(workspace / f"f{i}.txt", f"file {i}\n")
    settle()
    first = Checkpoints(store, workspace).snapshot()
    write(workspace / "f7.txt", "edited while the server was down\n")

    restarted = Checkpoints(store, workspace)
    again = restarted.snapshot()

    assert restarted.files_hashed == 1
    assert kinds(Checkpoints.diff(first, again)) == {"f7.txt": "modified"}


@pytest.mark.parametrize(
    "damage",
    [
        b"{ not json",
        b"\xff\xfe\x00",
        json.dumps({"format": "milk-checkpoint-manifest", "version": 1}).encode(),
        b"[]",
    ],
    ids=["truncated", "binary", "no-files", "wrong-shape"],
)
def test_a_damaged_manifest_is_ignored(workspace: Path, store: Path, damage: bytes) -> None:
    write(workspace / "a.txt", "a")
    write(workspace / "b.txt", "b")
    settle()
    first = Checkpoints(store, workspace).snapshot()
    write(store / MANIFEST_NAME, damage)

    restarted = Checkpoints(store, workspace)

    assert restarted.snapshot() == first
    assert restarted.files_hashed == 2
    assert json.loads((store / MANIFEST_NAME).read_bytes())["files"], "saved again"


def test_a_manifest_with_a_bad_entry_is_ignored_whole(workspace: Path, store: Path) -> None:
    write(workspace / "a.txt", "a")
    settle()
    Checkpoints(store, workspace).snapshot()
    document = json.loads((store / MANIFEST_NAME).read_bytes())
    document["files"][0][6] = "../../etc/passwd"
    write(store / MANIFEST_NAME, json.dumps(document))
    restarted = Checkpoints(store, workspace)
    restarted.snapshot()
    assert restarted.files_hashed == 1


def test_a_manifest_of_another_workspace_is_not_used(tmp_path: Path, store: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    write(one / "same.txt", "same name, other content")
    write(two / "same.txt", "same name, other content")
    settle()
    Checkpoints(store, one).snapshot()
    other = Checkpoints(store, two)
    other.snapshot()
    assert other.files_hashed == 1


# --- concurrency and housekeeping ---------------------------------------------------------


def test_snapshots_from_several_threads_agree(workspace: Path, store: Path) -> None:
    for i in range(200):
        write(workspace / f"d{i % 10}" / f"{i}.txt", f"{i}\n" * (i + 1))
    book = Checkpoints(store, workspace)
    results: list[Snapshot] = []
    errors: list[BaseException] = []

    def take() -> None:
        try:
            results.append(book.snapshot())
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=take) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(results) == 4
    assert all(Checkpoints.diff(results[0], other) == [] for other in results)
    assert len(results[0]) == 200


def test_prune_keeps_the_versions_asked_for_and_the_latest(workspace: Path, store: Path) -> None:
    path = workspace / "a.txt"
    versions = []
    for text in ("one", "two", "three"):
        write(path, text)
        versions.append(Checkpoints(store, workspace).snapshot()["a.txt"].version)
    book = Checkpoints(store, workspace)
    book.snapshot()
    assert book.prune([versions[0]]) == 1
    assert [book.blob(v) for v in versions] == [b"one", None, b"three"]


# --- packs --------------------------------------------------------------------------------


def many_files(workspace: Path, count: int) -> dict[str, bytes]:
    contents = {f"pkg/m{i:03d}.py": f"# module {i}\n".encode() * (i + 1) for i in range(count)}
    for path, data in contents.items():
        write(workspace / path, data)
    return contents


def test_a_large_batch_goes_into_one_pack(workspace: Path, store: Path) -> None:
    contents = many_files(workspace, LOOSE_MAX + 36)
    book = Checkpoints(store, workspace)
    before = book.snapshot()
    assert [p.suffix for p in sorted((store / "packs").iterdir())] == [".idx", ".pack"]
    assert not (store / "blobs").exists(), "no loose blob for a large batch"
    for path, data in contents.items():
        assert book.blob(before[path].version) == data
    for path in contents:
        (workspace / path).unlink()

    book.restore_all([(c.path, c.before) for c in Checkpoints.diff(before, book.snapshot())])

    assert {path: (workspace / path).read_bytes() for path in contents} == contents
    restarted = Checkpoints(store, workspace)
    assert restarted.blob(before["pkg/m007.py"].version) == contents["pkg/m007.py"]


def test_a_pack_without_its_index_or_with_a_damaged_one_is_not_used(
    workspace: Path, store: Path
) -> None:
    contents = many_files(workspace, LOOSE_MAX + 1)
    versions = {
        path: state.version for path, state in Checkpoints(store, workspace).snapshot().items()
    }
    version = versions["pkg/m010.py"]
    (idx,) = (store / "packs").glob("*.idx")
    (pack,) = (store / "packs").glob("*.pack")
    good_idx = idx.read_bytes()

    idx.unlink()  # as an interrupted batch leaves it
    assert Checkpoints(store, workspace).blob(version) is None
    write(idx, good_idx[:-7])
    assert Checkpoints(store, workspace).blob(version) is None
    write(idx, good_idx)
    assert Checkpoints(store, workspace).blob(version) == contents["pkg/m010.py"]

    data = bytearray(pack.read_bytes())
    data[len(data) // 2] ^= 0xFF
    write(pack, bytes(data))
    reopened = Checkpoints(store, workspace)
    damaged = [path for path in contents if reopened.blob(versions[path]) is None]
    assert len(damaged) == 1, "only the blob holding the flipped byte is refused"
    (workspace / damaged[0]).unlink()
    with pytest.raises(CheckpointUnavailable, match="missing or damaged"):
        reopened.restore(damaged[0], versions[damaged[0]])


def test_prune_rewrites_a_pack_that_is_partly_dead(workspace: Path, store: Path) -> None:
    contents = many_files(workspace, 100)
    book = Checkpoints(store, workspace)
    first = book.snapshot()
    (old_pack,) = (store / "packs").glob("*.idx")
    for i in range(50):
        (workspace / f"pkg/m{i:03d}.py").unlink()
    book.snapshot()

    assert book.prune([]) == 50

    for path, data in contents.items():
        expected = data if int(path[5:8]) >= 50 else None
        assert book.blob(first[path].version) == expected, path
    assert not list((store / "packs").glob(old_pack.stem + ".*"))
    assert len([f for f in (store / "blobs").rglob("*") if f.is_file()]) == 50
    assert book.prune([]) == 0
    assert (
        Checkpoints(store, workspace).blob(first["pkg/m099.py"].version) == contents["pkg/m099.py"]
    )


def test_a_pack_that_cannot_be_written_is_refused(workspace: Path, store: Path) -> None:
    Checkpoints(store, workspace).snapshot()
    write(store / "packs", "a file where the packs go")
    many_files(workspace, LOOSE_MAX + 1)
    with pytest.raises(CheckpointUnavailable, match="cannot write"):
        Checkpoints(store, workspace).snapshot()
