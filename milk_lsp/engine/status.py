"""`milk/status`: is the local model reachable, is `claude` there; and the same in words,
with the fix for each problem (`milk-lsp doctor`, the `milk.doctor` command)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from milk_lsp import __version__, wire
from milk_lsp.agents.claude.cli import cli_version, not_found_message, resolve_cli
from milk_lsp.agents.claude.login import claude_login
from milk_lsp.agents.local.context_window import context_warning
from milk_lsp.config import MilkConfig
from milk_lsp.doors import LSP, Door
from milk_lsp.engine.claude_part import claude_settings
from milk_lsp.local_model.embedded import EmbeddedSettings, model_size, planned_model
from milk_lsp.local_model.provider import LocalModels
from milk_lsp.system.orphans import resident_bytes

STATUS_ATTEMPTS = 3


async def collect_status(
    settings: Callable[[], MilkConfig],
    models: LocalModels,
    door: Door = LSP,
    *,
    check_login: bool = False,
) -> wire.Status:
    """Checked again when the settings change during the check: the answer is of one set of
    settings, and the old local client (which the change closes) is not used after. The
    fixes are worded for the front door (`door`)."""
    provider = await models.provider()
    if provider == "embedded":
        return await _embedded_status(settings(), models, door, check_login)
    for attempt in range(STATUS_ATTEMPTS):
        config = settings()
        try:
            (reachable, model, local_error), claude = await asyncio.gather(
                models.agent.probe(), _claude_status(config, door, check_login)
            )
            context = await _server_context(models, model, door) if reachable else {}
        except RuntimeError:  # httpx: the client was closed by the settings change
            if settings() is config or attempt == STATUS_ATTEMPTS - 1:
                raise
            continue
        if settings() is config:
            break
    local_cfg = config.local
    return wire.Status(
        version=__version__,
        local=wire.LocalStatus(
            base_url=local_cfg.base_url,
            model=local_cfg.model or model,
            reachable=reachable,
            error=local_error,
            provider="openai",
            **context,
        ),
        claude=claude,
        storage=str(config.storage_path()),
    )


async def _server_context(models: LocalModels, model: str | None, door: Door) -> dict[str, Any]:
    """The `server`, `context_tokens` and `context_warning` of an Ollama server (Ollama cuts
    long prompts silently; `context_window`); nothing for other servers."""
    info = await models.agent.client.ollama(model, now=True)
    if info is None:
        return {}
    return {
        "server": f"ollama {info.version}",
        "context_tokens": info.context_tokens,
        "context_warning": context_warning(info, door),
    }


async def _embedded_status(
    config: MilkConfig, models: LocalModels, door: Door, check_login: bool = False
) -> wire.Status:
    """The embedded engine is not started for a status: a stopped one is reachable when its
    model could load (the engine installed, the file a GGUF or one to download); a running
    one is probed."""
    settings = EmbeddedSettings.of(config.local)
    server = models.embedded
    claude_task = asyncio.ensure_future(_claude_status(config, door, check_login))
    planned = await asyncio.to_thread(planned_model, settings)
    model_path = server.model_path if server is not None and server.model_path else planned.path
    base_url, model = "", Path(model_path).stem or planned.name or None
    state: wire.LoadState = "stopped" if server is None else server.state
    load_seconds = None if server is None else server.load_seconds
    error = planned.problem.message if planned.problem is not None else None
    if error is None and server is not None and state == "failed":
        error = server.error
    reachable = error is None
    if server is not None and state == "running" and server.base_url:
        base_url = server.base_url
        reachable, _, error = await models.agent.probe()
    return wire.Status(
        version=__version__,
        local=wire.LocalStatus(
            base_url=base_url,
            model=model,
            reachable=reachable,
            error=error,
            provider="embedded",
            model_path=model_path or None,
            model_bytes=model_size(model_path) if model_path else planned.size,
            load_state=state,
            load_seconds=load_seconds,
            memory_bytes=(
                resident_bytes(server.pid)
                if server is not None and state == "running" and server.pid
                else None
            ),
        ),
        claude=await claude_task,
        storage=str(config.storage_path()),
    )


async def _claude_status(
    config: MilkConfig, door: Door, check_login: bool = False
) -> wire.ClaudeStatus:
    settings = claude_settings(config.claude)
    resolved = resolve_cli(settings)
    skip = True if settings.skip_permissions else None
    if resolved.path is None:
        return wire.ClaudeStatus(
            path=settings.path,
            found=False,
            error=not_found_message(settings, door),
            skip_permissions=skip,
        )
    version = await cli_version(resolved.path)
    error = None if version else f"{resolved.path} did not answer --version"
    login = await claude_login(resolved.path, settings, Path.cwd()) if check_login else None
    return wire.ClaudeStatus(
        path=resolved.path,
        found=True,
        version=version,
        error=error,
        skip_permissions=skip,
        logged_in=None if login is None else login.logged_in,
        login_detail=None if login is None else login.detail or None,
    )


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
        server = f" ({local.server})" if local.server else ""
        lines.append(
            f"✓ local model server{server} reachable at {local.base_url}, model {local.model}"
        )
        if local.context_warning:
            # A known context too small is a problem; Ollama's invisible default may be one.
            problems += 1 if local.context_tokens is not None else 0
            lines.append(f"! context: {local.context_warning}")
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
