"""`milk-lsp doctor`: what `milk/status` reports, in words, with the fix for each problem."""

from __future__ import annotations

import sys
from typing import Any

from milk_lsp import wire
from milk_lsp.config import MilkConfig, load_user_file, merge_settings, user_config_file
from milk_lsp.engine import Engine
from milk_lsp.status import collect_status


class _NoEditor:
    """The doctor has no editor: nothing is ever sent anywhere."""

    def send_update(self, payload: dict[str, Any]) -> None:
        return None

    async def ask_permission(self, params: dict[str, Any]) -> str:
        return "deny"

    def open_document_text(self, path: Any) -> str | None:
        return None

    async def apply_edit(self, path: Any, new_text: str) -> bool:
        return False

    async def progress_begin(self, title: str) -> object | None:
        return None

    def progress_report(self, token: object | None, message: str) -> None:
        return None

    def progress_end(self, token: object | None, message: str) -> None:
        return None


def describe(status: wire.Status, config_note: str) -> tuple[list[str], int]:
    """Lines to print and the number of problems."""
    lines = [f"milk-lsp {status.version}", config_note]
    problems = 0
    local = status.local
    if local.reachable:
        model = local.model or "(none listed)"
        lines.append(f"✓ local model server reachable at {local.base_url}, model {model}")
    else:
        problems += 1
        lines.append(f"✗ no local model reachable at {local.base_url}: {local.error}")
        lines.append(
            "    fix: start Ollama (`ollama serve`), llama.cpp's llama-server, LM Studio or vLLM,"
            " or set local.baseUrl to your server's /v1 endpoint"
        )
    claude = status.claude
    if claude.found and claude.version:
        lines.append(f"✓ claude found: {claude.path} ({claude.version})")
    else:
        problems += 1
        lines.append(f"✗ claude: {claude.error}")
        lines.append(
            "    fix: install Claude Code (`npm install -g @anthropic-ai/claude-code`), log in "
            "with `claude`, or set claude.path"
        )
    if claude.skip_permissions:
        lines.append("! claude.skipPermissions is ON: Claude runs tools without asking you")
    lines.append(f"✓ sessions stored in {status.storage}")
    return lines, problems


async def run_doctor(settings: dict[str, Any]) -> int:
    config = MilkConfig()
    data, error = load_user_file()
    note = f"config file: {user_config_file()}" + (
        " (not present, defaults used)" if data is None and error is None else ""
    )
    if error:
        note += f" — {error}"
    config, problems = merge_settings(config, data, "config.json")
    config, more = merge_settings(config, settings, "command line")
    for problem in problems + more:
        note += f"\n! setting {problem.key}: {problem.message}"
    engine = Engine(config, _NoEditor())
    try:
        status = await collect_status(engine)
        try:
            engine.store  # noqa: B018 - opening it proves the storage is usable
        except Exception as exc:
            print(f"✗ storage: {exc}", file=sys.stderr)
            return 1
    finally:
        await engine.aclose()
    lines, count = describe(status, note)
    print("\n".join(lines))
    print("all good" if count == 0 else f"{count} problem(s) found")
    return 0 if count == 0 else 1
