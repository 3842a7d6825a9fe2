"""`milk-lsp doctor`: what `milk/status` reports, in words, with the fix for each problem."""

from __future__ import annotations

import os
from typing import Any

from milk_lsp import wire
from milk_lsp.config import MilkConfig, load_user_file, merge_settings, user_config_file
from milk_lsp.engine import Engine
from milk_lsp.engine.status import collect_status


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


def describe(
    status: wire.Status, config_note: str, storage_error: str | None = None
) -> tuple[list[str], int]:
    """Lines to print and the number of problems."""
    lines = [f"milk-lsp {status.version}", config_note]
    problems = 0
    local = status.local
    if local.provider == "embedded":
        problems += _describe_embedded(local, lines)
    elif local.reachable and local.model and not local.error:
        lines.append(f"✓ local model server reachable at {local.base_url}, model {local.model}")
    elif local.reachable:
        problems += 1
        lines.append(f"✗ the local model server at {local.base_url} answers, but: {local.error}")
        lines.append("    fix: load or pull a model on the server, or set local.model")
    else:
        problems += 1
        lines.append(f"✗ {local.error or f'no local model reachable at {local.base_url}'}")
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
    if storage_error:
        problems += 1
        lines.append(f"✗ storage: {storage_error}")
        lines.append("    fix: set storageDir to a writable folder, or free disk space")
    else:
        lines.append(f"✓ sessions stored in {status.storage}")
    return lines, problems


def _describe_embedded(local: wire.LocalStatus, lines: list[str]) -> int:
    """The embedded engine's lines; returns 1 for a problem, else 0."""
    size = f"{local.model_bytes / 1e6:.0f} MB" if local.model_bytes is not None else "size unknown"
    if local.model_path:
        where = f"{local.model_path} ({size})"
    elif local.model:  # from the Hugging Face Hub, not in its cache yet
        where = f"{local.model} ({size}, not downloaded yet)"
    else:
        where = "no model file"
    if local.error or not local.reachable:
        lines.append(f"✗ embedded model {where}: {local.error}")
        lines.append(
            "    fix: pip install 'milk-lsp[embedded]' and set local.modelPath to a .gguf file,"
            " or set local.baseUrl to a running server (local.provider openai)"
        )
        return 1
    state = local.load_state or "stopped"
    if state == "running":
        loaded = f" (loaded in {local.load_seconds:.1f} s)" if local.load_seconds else ""
        if local.memory_bytes:
            loaded += f", {local.memory_bytes / 1e6:.0f} MB in memory"
        lines.append(f"✓ embedded model {where} running at {local.base_url}{loaded}")
    elif local.model_path:
        lines.append(f"✓ embedded model {where}: {state}, loads on the first local turn")
    else:
        lines.append(
            f"✓ embedded model {where}: {state}, downloaded from the Hugging Face Hub and "
            "loaded on the first local turn"
        )
    return 0


async def run_doctor(settings: dict[str, Any]) -> int:
    config = MilkConfig()
    data, error = load_user_file()
    config_path = os.environ.get("MILK_CONFIG_FILE") or user_config_file()
    note = f"config file: {config_path}" + (
        " (not present, defaults used)" if data is None and error is None else ""
    )
    if error:
        note += f" — {error}"
    config, problems = merge_settings(config, data, "config.json")
    config, more = merge_settings(config, settings, "command line")
    for problem in problems + more:
        note += f"\n! setting {problem.key}: {problem.message}"
    engine = Engine(config, _NoEditor())
    storage_error = None
    try:
        status = await collect_status(engine)
        try:
            engine.store  # noqa: B018 - opening it proves the storage is usable
        except Exception as exc:
            storage_error = str(exc)
    finally:
        await engine.aclose()
    lines, count = describe(status, note, storage_error)
    print("\n".join(lines))
    print("all good" if count == 0 else f"{count} problem(s) found")
    return 0 if count == 0 else 1
