"""Workspace checkpoint cost (milk_lsp/changes/checkpoints.py) on a 10,000-file workspace.

Builds a workspace of 10,000 tracked files (source-like sizes: median about 3 KB, a tail to
500 KB, 5% binary) in nested packages, with a root `.gitignore` (node_modules/, *.pyc,
__pycache__/, dist/, *.log with a negation), a nested one, and ignored trees holding 4,000
more files. Then times, on the real file system:

- the first snapshot (every file read, hashed and stored);
- per round: 10 files changed, then a snapshot (target <= 300 ms); a snapshot with nothing
  changed (target <= 300 ms); and, for contrast, the naive full re-hash: the same walk
  reading and hashing every file, with no stat cache;
- a restarted server's first snapshot (a new `Checkpoints` on the saved manifest).

Files written within 0.1 s of a snapshot are read again by the next one (their stat cannot
be trusted yet), so each round waits 0.2 s after its edits, as a turn's edits are older
than that when the turn ends. Each timed snapshot prints how many files it read.

    python bench/checkpoint.py [--repeats 15] [--files 10000]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._harness import expect, spread_ms
from milk_lsp.changes.checkpoints import Checkpoints

TARGET_MS = 300
CHANGED_PER_ROUND = 10
SETTLE_S = 0.2
WORDS = [
    *("def", "class", "return", "import", "self", "value", "result", "config", "path"),
    *("items", "index", "error", "parser", "token", "buffer", "request", "response"),
    *("session", "handler", "update", "render", "context", "module"),
]


def corpus(rng: random.Random, size: int) -> bytes:
    lines = []
    total = 0
    while total < size:
        indent = " " * (4 * rng.randrange(4))
        line = indent + " ".join(rng.choice(WORDS) for _ in range(rng.randrange(2, 12)))
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines).encode()


def build(root: Path, files: int, rng: random.Random) -> tuple[list[Path], int, int]:
    """The workspace: (tracked files, their total bytes, ignored files)."""
    text = corpus(rng, 2_000_000)
    (root / ".gitignore").write_text(
        "node_modules/\n__pycache__/\n*.pyc\ndist/\n*.log\n!important.log\n.venv/\n"
    )
    tracked: list[Path] = [root / ".gitignore"]
    total = 0
    packages = max(1, files // 400)
    while len(tracked) < files:
        index = len(tracked)
        package = f"pkg{index % packages:02d}"
        sub = f"mod{(index // packages) % 20:02d}"
        path = root / "src" / package / sub / f"file{index:05d}.py"
        size = int(min(500_000, max(50, rng.lognormvariate(8.0, 1.2))))
        if rng.random() < 0.05:
            path = path.with_suffix(".png")
            data = os.urandom(size)
        else:
            start = rng.randrange(len(text) - size)
            data = f"# {path.name}\n".encode() + text[start : start + size]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        tracked.append(path)
        total += len(data)
    (root / "src" / "pkg00" / ".gitignore").write_text("generated/\n*.tmp\n")
    tracked.append(root / "src" / "pkg00" / ".gitignore")
    ignored = 0
    for index in range(3000):
        path = root / "node_modules" / f"dep{index // 30}" / "lib" / f"index{index}.js"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text[index : index + 1500])
        ignored += 1
    for index in range(800):
        path = root / "src" / f"pkg{index % packages:02d}" / "__pycache__" / f"m{index}.pyc"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(os.urandom(2000))
        ignored += 1
    for index in range(200):
        path = root / ("dist" if index % 2 else "src/pkg00/generated") / f"out{index}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text[index : index + 800])
        ignored += 1
    return tracked, total, ignored


def timed(action: Callable[[], object]) -> tuple[float, object]:
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--files", type=int, default=10_000)
    args = parser.parse_args()
    rng = random.Random(9)
    scratch = Path(tempfile.mkdtemp(prefix="milk-bench-checkpoint-"))
    try:
        workspace = scratch / "workspace"
        workspace.mkdir()
        store = scratch / "data" / "checkpoints" / "bench"
        tracked, total, ignored = build(workspace, args.files - 1, rng)
        time.sleep(SETTLE_S)
        print(
            f"workspace: {len(tracked):,} files ({total / 1e6:.1f} MB) checkpointed, "
            f"{ignored:,} more ignored (.gitignore), {os.cpu_count()} CPUs"
        )

        book = Checkpoints(store, workspace)
        first_s, snapshot = timed(book.snapshot)
        expect(len(snapshot) == len(tracked), (len(snapshot), len(tracked)))  # type: ignore[arg-type]
        print(f"first snapshot: {first_s * 1000:.0f} ms, {book.files_hashed:,} files read")
        time.sleep(SETTLE_S)

        changed_s: list[float] = []
        unchanged_s: list[float] = []
        naive_s: list[float] = []
        read_changed: list[int] = []
        read_unchanged: list[int] = []
        candidates = [path for path in tracked if path.suffix == ".py"]
        for _ in range(args.repeats):
            for path in rng.sample(candidates, CHANGED_PER_ROUND):
                with path.open("ab") as out:
                    out.write(b"# edited by the bench\n")
            time.sleep(SETTLE_S)
            before_read = book.files_hashed
            elapsed, previous = timed(book.snapshot)
            changed_s.append(elapsed)
            read_changed.append(book.files_hashed - before_read)
            before_read = book.files_hashed
            elapsed, current = timed(book.snapshot)
            unchanged_s.append(elapsed)
            read_unchanged.append(book.files_hashed - before_read)
            expect(Checkpoints.diff(previous, current) == [], "nothing changed")  # type: ignore[arg-type]
            # The naive way: the same walk, but every file read and hashed again.
            elapsed, everything = timed(lambda: book._scanner.files({}))
            naive_s.append(elapsed)
            expect(len(everything) == len(tracked), len(everything))  # type: ignore[arg-type]

        restarted = Checkpoints(store, workspace)
        restart_s, _ = timed(restarted.snapshot)

        changed_ms = statistics.median(changed_s) * 1000
        unchanged_ms = statistics.median(unchanged_s) * 1000
        naive = statistics.median(naive_s)
        print(
            f"snapshot, {CHANGED_PER_ROUND} files changed: {spread_ms(changed_s)}, "
            f"files read {min(read_changed)}-{max(read_changed)} (target <= {TARGET_MS} ms: "
            f"{'met' if changed_ms <= TARGET_MS else 'MISSED'})"
        )
        print(
            f"snapshot, nothing changed: {spread_ms(unchanged_s)}, files read "
            f"{min(read_unchanged)}-{max(read_unchanged)} (target <= {TARGET_MS} ms: "
            f"{'met' if unchanged_ms <= TARGET_MS else 'MISSED'})"
        )
        print(f"naive full re-hash (same walk, no stat cache): {spread_ms(naive_s)}")
        print(
            f"restarted server's first snapshot (saved manifest): {restart_s * 1000:.0f} ms, "
            f"{restarted.files_hashed} files read"
        )
        print(
            f"ratio to the naive re-hash: nothing changed {unchanged_ms / 1000 / naive:.3f}x, "
            f"{CHANGED_PER_ROUND} changed {changed_ms / 1000 / naive:.3f}x "
            f"(naive / milk: {naive * 1000 / unchanged_ms:.1f}x and "
            f"{naive * 1000 / changed_ms:.1f}x faster)"
        )
        kept = sum(
            f.stat().st_size
            for folder in ("blobs", "packs")
            for f in (store / folder).rglob("*")
            if f.is_file()
        )
        manifest = (store / "manifest.json").stat().st_size
        print(
            f"store: {kept / 1e6:.1f} MB of compressed blobs and packs for {total / 1e6:.1f} MB "
            f"of files plus {args.repeats * CHANGED_PER_ROUND} edits; manifest "
            f"{manifest / 1e6:.2f} MB"
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
