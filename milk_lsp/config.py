"""Settings: the PROTOCOL.md configuration table as pydantic models, and how sources merge.

Sources, later wins: defaults < user `config.json` < `initializationOptions` <
`workspace/configuration` section `milk` (the ACP server and `milk-lsp doctor` take the
command-line flags after the file instead). Each source is merged key by key: an unknown key
is reported and ignored, a value of the wrong type is reported and the key keeps its
previous value, so one typo never throws away the rest of the user's settings.
`load_sources` does it all for a server's or a command's start; each front end tells the
user of the problems in its own way.
"""

from __future__ import annotations

import json
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.alias_generators import to_camel

logger = logging.getLogger(__name__)

APP_NAME = "milk"
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class _Section(BaseModel):
    # Strict: `true` is not the number 1 and "12" is not 12; a wrong type is reported.
    model_config = ConfigDict(
        strict=True,
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        extra="ignore",
        validate_assignment=True,
    )

    @field_validator("*")
    @classmethod
    def _text_is_usable(cls, value: Any) -> Any:
        """A NUL or a lone surrogate makes a path, argv or header unusable: report it once
        here rather than fail every later use (an invalid setting keeps its previous value)."""
        for text in value if isinstance(value, list) else [value]:
            if isinstance(text, str) and ("\x00" in text or _LONE_SURROGATE.search(text)):
                raise ValueError("must not contain a NUL character or a lone surrogate")
        return value


class LocalConfig(_Section):
    base_url: str = Field(default="http://127.0.0.1:11434/v1", min_length=1)
    model: str | None = None
    api_key: str | None = Field(default=None, repr=False)
    """A secret: kept out of reprs and logs."""
    max_tool_rounds: int = Field(default=20, ge=1, le=1000)
    turn_budget_seconds: float | None = Field(default=300.0, gt=0)
    """The longest the local part of a turn may take (the user's answers to permission
    questions not counted); past it, it is handed to Claude (route auto) or ends with the
    `time_budget` signal; null: no bound (milk addition)."""
    request_timeout_seconds: float = Field(default=120.0, gt=0)
    """Longest silence from the model server before the turn fails (milk addition)."""
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    """Sent as the request's `temperature` when set; unset, the model server's default."""
    text_tool_calls: bool = True
    """Run a reply that is only a tool call written as JSON text as that call (milk addition)."""
    max_tokens: int | None = Field(default=2048, ge=16, le=1_048_576)
    """The most tokens one local reply to a question may have, sent as `max_tokens`; a change
    request's replies may have twice this; null: the model server's own cap (milk addition)."""
    memory_tags: bool = False
    """Ask the local model to write need/percept tags (small models echo the instructions;
    off, milk takes the goal from the user's requests)."""
    hand_off: Literal["ask", "auto", "off", "advise"] = "ask"
    """On route `auto`, what happens when the local part of a turn visibly fails: ask the
    user whether Claude takes over, hand over without asking, or end the turn as failed;
    `advise` (issue 32) hands over without asking to the advisor: Claude plans, the local
    model carries the plan out, Claude does the steps it fails."""
    provider: Literal["openai", "embedded", "auto"] = "auto"
    """`openai`: the server at `baseUrl`; `embedded`: milk runs llama.cpp itself; `auto`:
    embedded only when `baseUrl` is not set, nothing answers there, xllamacpp is installed
    and a model can be had (`modelPath` set, or huggingface_hub installed to download one;
    see `milk_lsp.local_model.embedded`)."""
    model_path: str | None = None
    """The GGUF file the embedded engine loads. Unset: `modelRepo`/`modelFile` (or the
    pinned default model) from the Hugging Face Hub (`milk_lsp.local_model.download`)."""
    model_repo: str | None = None
    """A Hugging Face Hub model repository (`owner/name`) holding the GGUF to download."""
    model_file: str | None = None
    """The GGUF file's name (path) inside `modelRepo`."""
    context_size: int = Field(default=8192, ge=256, le=1_048_576)
    max_reply_tokens: int = Field(default=2048, ge=16, le=1_048_576)
    """The embedded engine's cap on one reply (a small model may otherwise ramble until
    the context is full)."""
    threads: int = Field(default_factory=lambda: default_threads(), ge=1, le=512)
    check_command: str | None = None
    """Run after the local model's edits, before its turn counts as done (e.g. `ruff check
    {files}` or `pytest -x -q`; `{files}` becomes the changed files), with the user's
    permission as `run_command` is; a failure is fed back once, then is `check_failed`."""
    idle_stop_seconds: float = Field(default=600.0, gt=0)
    """The embedded engine stops after this long without local turns (it restarts lazily)."""
    strategy: Literal["auto", "guided", "agent"] = "auto"
    """How a local turn runs (issue 38): `guided`, milk locates the code and asks the model
    one narrow question whose reply is a checked JSON shape; `agent`, the model drives the
    tool loop; `auto`, guided for small models, servers without tool calls and models that
    failed the tool protocol, agent otherwise (`milk_lsp.guided.strategy`)."""


class ClaudeConfig(_Section):
    path: str | None = None
    allowed_tools: list[str] = Field(default_factory=list)
    add_dirs: list[str] = Field(default_factory=list)
    model: str | None = None
    skip_permissions: bool = False
    permission_timeout_seconds: float = Field(default=600.0, gt=0)
    """How long a permission question may stay open before it counts as deny (milk addition)."""
    budget_usd: float | None = Field(default=None, ge=0)
    """What Claude may cost a workspace per local day; once spent, milk asks before each
    Claude part (unset: no cap; milk addition)."""


class MilkConfig(_Section):
    local: LocalConfig = Field(default_factory=LocalConfig)
    claude: ClaudeConfig = Field(default_factory=ClaudeConfig)
    context_budget_chars: int = Field(default=12000, ge=0)
    route: Literal["auto", "local", "claude", "advise"] = "auto"
    storage_dir: str | None = None

    def storage_path(self) -> Path:
        """The SQLite database file."""
        base = Path(self.storage_dir).expanduser() if self.storage_dir else default_data_dir()
        return base / "sessions.sqlite3"


@dataclass(frozen=True)
class SettingProblem:
    key: str
    message: str
    unknown: bool
    source: str
    """The source it was found in ("config.json", "initializationOptions", ...)."""


@dataclass(frozen=True)
class LoadedSettings:
    """What `load_sources` made of the user's config file and the other sources."""

    config: MilkConfig
    problems: list[SettingProblem]
    """Unknown and invalid keys, in merge order (the file's first)."""
    file: Path
    """The user config file (`MILK_CONFIG_FILE`, else the platform's config dir)."""
    file_used: bool
    """The file held settings (False: absent, unreadable or `null`)."""
    file_error: str | None
    """Why the file could not be used (unreadable, not JSON); None when absent or fine."""


def default_threads() -> int:
    """llama.cpp's threads: the machine's cores, at most 8 (more rarely speeds a small model)."""
    return max(1, min(8, os.cpu_count() or 2))


def default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def user_config_file() -> Path:
    return Path(platformdirs.user_config_dir(APP_NAME, appauthor=False)) / "config.json"


def log_dir() -> Path:
    return Path(platformdirs.user_log_dir(APP_NAME, appauthor=False))


_CAMEL_BOUNDARY = re.compile(r"_([a-z0-9])")


def _camel(key: str) -> str:
    """Accept snake_case keys (the config file may use them) by folding them to camelCase."""
    return _CAMEL_BOUNDARY.sub(lambda m: m.group(1).upper(), key)


_SECTIONS: dict[str, type[_Section]] = {"local": LocalConfig, "claude": ClaudeConfig}


def _fields_by_alias(model: type[_Section]) -> dict[str, str]:
    return {(info.alias or name): name for name, info in model.model_fields.items()}


def merge_settings(
    current: MilkConfig, raw: Any, source: str, previous: MilkConfig | None = None
) -> tuple[MilkConfig, list[SettingProblem]]:
    """Merge one source over `current`, leaf by leaf; returns the result and what was wrong.

    An invalid value keeps the key's value in `previous` (the settings in force before this
    source changed), or in `current` when there is no `previous`.
    """
    problems: list[SettingProblem] = []
    if raw is None:
        return current, problems
    if not isinstance(raw, dict):
        problems.append(
            SettingProblem(source, "settings must be an object", unknown=False, source=source)
        )
        return current, problems
    merged = current.model_copy(deep=True)
    kept = previous or current
    top_fields = _fields_by_alias(MilkConfig)
    for raw_key, value in raw.items():
        key = _camel(str(raw_key))
        if key in _SECTIONS:
            if not isinstance(value, dict):
                if value is not None:
                    problems.append(
                        SettingProblem(key, "must be an object", unknown=False, source=source)
                    )
                continue
            fields = _fields_by_alias(_SECTIONS[key])
            for raw_sub, sub_value in value.items():
                sub = _camel(str(raw_sub))
                dotted = f"{key}.{sub}"
                if sub not in fields:
                    problems.append(
                        SettingProblem(dotted, "unknown setting", unknown=True, source=source)
                    )
                    continue
                _assign(
                    getattr(merged, key),
                    getattr(kept, key),
                    fields[sub],
                    sub_value,
                    dotted,
                    source,
                    problems,
                )
        elif key in top_fields:
            _assign(merged, kept, top_fields[key], value, key, source, problems)
        else:
            problems.append(SettingProblem(key, "unknown setting", unknown=True, source=source))
    return merged, problems


def _assign(
    target: BaseModel,
    kept: BaseModel,
    field: str,
    value: Any,
    dotted: str,
    source: str,
    problems: list[SettingProblem],
) -> None:
    try:
        setattr(target, field, value)
    except ValidationError as exc:
        reason = exc.errors()[0]["msg"] if exc.errors() else "invalid value"
        shown = "(hidden)" if field == "api_key" else repr(value)
        problems.append(
            SettingProblem(dotted, f"{reason} (got {shown})", unknown=False, source=source)
        )
        setattr(target, field, getattr(kept, field))


def config_file() -> Path:
    """The user's config file: `MILK_CONFIG_FILE`, else config.json in the config dir."""
    return Path(os.environ.get("MILK_CONFIG_FILE") or user_config_file())


def load_user_file(path: Path | None = None) -> tuple[Any, str | None]:
    """Read the user's config.json; returns (data or None, error message or None)."""
    file = path or config_file()
    try:
        text = file.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, f"cannot read {file}: {exc.strerror}"
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        return None, f"{file} is not valid JSON (line {exc.lineno}): fix or remove it"


def load_sources(*sources: tuple[str, Any]) -> LoadedSettings:
    """Defaults < the user's config file < each of `sources` ((name, raw settings), in
    order; None adds nothing): the settings a server or command starts with, and every
    problem found on the way."""
    file = config_file()
    data, error = load_user_file(file)
    config = MilkConfig()
    problems: list[SettingProblem] = []
    for source, raw in (("config.json", data), *sources):
        config, found = merge_settings(config, raw, source)
        problems.extend(found)
    return LoadedSettings(config, problems, file, data is not None, error)
