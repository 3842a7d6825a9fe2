"""`milk-lsp stats`: a workspace's routing numbers, read from the session store directly
(no server runs): the same `Stats` as `milk/stats`, in words or as its JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from milk_lsp.config import load_sources
from milk_lsp.sessions.service import stats_of
from milk_lsp.sessions.stats import ClaudeTotals, build_stats, today
from milk_lsp.sessions.store import SessionStore, StorageError
from milk_lsp.wire import Stats
from milk_lsp.workspace.paths import path_to_uri


def run_stats(workspace: Path, settings: dict[str, Any], *, as_json: bool) -> int:
    """Print the figures of `workspace` (a resolved folder); 1 when the store is unusable."""
    loaded = load_sources(("command line", settings))
    if loaded.file_error:
        sys.stderr.write(f"milk: {loaded.file_error}\n")
    for problem in loaded.problems:
        sys.stderr.write(f"milk: setting {problem.key}: {problem.message}\n")
    config = loaded.config
    try:
        stats = _read(config.storage_path(), str(workspace), config.claude.budget_usd)
    except StorageError as exc:
        sys.stderr.write(f"milk: {exc}\n")
        return 1
    shown = json.dumps(stats.to_wire(), indent=2, ensure_ascii=False) if as_json else stats.text
    sys.stdout.write(shown + "\n")
    return 0


def _read(path: Path, workspace: str, limit_usd: float | None) -> Stats:
    """The figures from the store at `path`; a store not there yet is not created: no
    turn has run, and the figures say so."""
    if not path.exists():
        return build_stats(path_to_uri(workspace), [], ClaudeTotals(), 0.0, limit_usd, today())
    store = SessionStore(path)
    try:
        return stats_of(store, workspace, limit_usd)
    finally:
        store.close()
