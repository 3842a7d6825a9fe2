"""`milk-lsp doctor`: what `milk/status` reports, in words, with the fix for each problem,
and whether Claude Code is logged in (`claude_login`: `milk/status` runs the CLI only for
`--version`; a doctor may take the few seconds more)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from milk_lsp.agents.claude.login import claude_login, login_lines
from milk_lsp.config import load_sources
from milk_lsp.doors import TERMINAL
from milk_lsp.engine import Engine
from milk_lsp.engine.claude_part import claude_settings
from milk_lsp.engine.status import describe


class _NoEditor:
    """The doctor has no editor: nothing is ever sent anywhere."""

    def send_update(self, payload: dict[str, Any]) -> None:
        return None

    async def ask_permission(self, params: dict[str, Any]) -> str:
        return "deny"

    def open_document_text(self, path: Any) -> str | None:
        return None

    async def read_document(self, path: Any) -> str | None:
        return None

    async def apply_edit(self, path: Any, new_text: str) -> bool:
        return False

    async def progress_begin(self, title: str) -> object | None:
        return None

    def progress_report(self, token: object | None, message: str) -> None:
        return None

    def progress_end(self, token: object | None, message: str) -> None:
        return None


async def run_doctor(settings: dict[str, Any]) -> int:
    loaded = load_sources(("command line", settings))
    note = f"config file: {loaded.file}"
    if loaded.file_error:
        note += f" — {loaded.file_error}"
    elif not loaded.file_used:
        note += " (not present, defaults used)"
    for problem in loaded.problems:
        note += f"\n! setting {problem.key}: {problem.message}"
    engine = Engine(loaded.config, _NoEditor(), door=TERMINAL)
    storage_error = None
    try:
        status = await engine.status()
        try:
            engine.sessions.store  # noqa: B018 - opening it proves the storage is usable
        except Exception as exc:
            storage_error = str(exc)
    finally:
        await engine.aclose()
    lines, count = describe(status, note, storage_error)
    claude = status.claude
    if claude.found and claude.version and claude.path:
        login = await claude_login(claude.path, claude_settings(loaded.config.claude), Path.cwd())
        said, problems = login_lines(login, claude.path)
        at = next(
            (i + 1 for i, line in enumerate(lines) if line.startswith("✓ claude")), len(lines)
        )
        lines[at:at] = said  # right below the line that found the CLI
        count += problems
    print("\n".join(lines))
    print("all good" if count == 0 else f"{count} problem(s) found")
    return 0 if count == 0 else 1
