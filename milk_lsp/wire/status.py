"""`milk/status` (the local model server, Claude Code, storage) and `milk/stats` (where the
turns went and what Claude cost)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from milk_lsp.wire.base import Uri, WireModel

LoadState = Literal["stopped", "loading", "running", "failed"]


class LocalStatus(WireModel):
    base_url: str
    model: str | None = None
    reachable: bool
    error: str | None = None
    provider: Literal["openai", "embedded"] | None = None
    """`local.provider` as resolved (`auto` is never reported)."""
    model_path: str | None = None
    """The embedded engine's GGUF file (provider embedded)."""
    model_bytes: int | None = None
    load_state: LoadState | None = None
    """The embedded engine: not started (it loads on the first local turn), loading,
    serving, or its last start failed (`error` says why)."""
    load_seconds: float | None = None
    """How long the running embedded model took to load."""
    memory_bytes: int | None = None
    """The running embedded engine's resident memory (Linux)."""
    server: str | None = None
    """The model server milk recognised, with its version ("ollama 0.12.3"); unset: unknown."""
    context_tokens: int | None = None
    """The context the model runs with, when the server says (Ollama: `ollama ps`, or
    `num_ctx` in the Modelfile)."""
    context_warning: str | None = None
    """Set when the server's context is (or may be) smaller than milk's prompts: the server
    would silently drop their start. Says the fix."""


class ClaudeStatus(WireModel):
    path: str | None = None
    found: bool
    version: str | None = None
    error: str | None = None
    skip_permissions: bool | None = None
    """Set (true) only when `claude.skipPermissions` is on, so the user sees it."""
    logged_in: bool | None = None
    """Asked with `checkLogin`: what `claude auth status` says (null: it could not tell)."""
    login_detail: str | None = None
    """Asked with `checkLogin`: how it is logged in, or why it could not tell."""


class StatusParams(WireModel):
    check_login: bool = False
    """Also ask `claude auth status` (a second or two): for a health check, not a status bar."""


class Status(WireModel):
    version: str
    local: LocalStatus
    claude: ClaudeStatus
    storage: str


class StatsParams(WireModel):
    workspace_folder: Uri | None = None


class ModelStats(WireModel):
    """Where one local model's turns went (`total` sums every model)."""

    model: str
    answered_locally: int = 0
    handed_off: int = 0
    handed_off_by_signal: dict[str, int] = Field(default_factory=dict)
    escalated_by_user: int = 0
    local_edits_kept: int = 0
    local_edits_undone: int = 0


class AdvisorStats(WireModel):
    """Advisor turns (issue 32): Claude's plans, who did their steps, what Claude cost."""

    turns: int
    steps_local: int
    steps_claude: int
    steps_failed: int
    steps_by_milk: int = 0
    """Of `steps_local`, the steps milk applied itself: Claude's exact replacement, no
    model (since issue 39)."""
    share_local: float | None = None
    """`steps_local` over all the steps (since issue 39; null with no step)."""
    saves: bool | None = None
    """Whether the advisor turns cost Claude less than the estimate all on Claude (since
    issue 39; null without an estimate)."""
    plan_cost_usd: float
    """What Claude's plans cost."""
    steps_cost_usd: float
    """What the steps Claude did cost."""
    estimated_all_claude_cost_usd: float | None
    """The same turns all on Claude: the average cost of the workspace's other Claude turns
    times the advisor turns (null with no other Claude turn that reported a cost)."""


class StatsBudget(WireModel):
    limit_usd: float | None
    spent_today_usd: float
    day: str
    """The local date `spentTodayUsd` counts, YYYY-MM-DD."""


class Stats(WireModel):
    workspace_folder: str
    total: ModelStats
    by_model: list[ModelStats]
    claude_turns: int
    claude_cost_usd: float
    average_claude_turn_cost_usd: float | None
    estimated_all_claude_cost_usd: float | None
    estimated_saved_usd: float | None
    budget: StatsBudget
    text: str
    advisor: AdvisorStats | None = None
    """Since issue 32; null until the workspace has an advisor turn."""

    def to_wire(self) -> dict[str, Any]:
        """With its nulls: a missing estimate is `null`, never left out."""
        return self.model_dump(mode="json", by_alias=True)
