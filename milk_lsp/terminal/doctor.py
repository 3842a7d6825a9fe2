"""`milk-lsp doctor`: what `milk/status` reports, in words, with the fix for each problem."""

from __future__ import annotations

from typing import Any

from milk_lsp.config import load_sources
from milk_lsp.engine import Engine
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
    engine = Engine(loaded.config, _NoEditor())
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
    print("\n".join(lines))
    print("all good" if count == 0 else f"{count} problem(s) found")
    return 0 if count == 0 else 1
