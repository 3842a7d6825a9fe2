"""How a tool call of either agent looks in an ACP client: its title, kind, locations and
diffs (`tool_view`), and Claude's todo list as an ACP plan (`plan_of`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acp.schema import (
    AgentPlanUpdate,
    FileEditToolCallContent,
    PlanEntry,
    ToolCallLocation,
    ToolKind,
)

from milk_lsp.agents.local import tool_specs
from milk_lsp.agents.local.agent import ESCALATE_TOOL_NAME
from milk_lsp.engine.budget import BUDGET_TOOL
from milk_lsp.engine.local.handoff import HAND_OFF_TOOL
from milk_lsp.text import cut, one_line

TITLE_INPUT_CHARS = 80
"""How much of a tool's input (a pattern, a command) a title shows."""


@dataclass(frozen=True)
class ToolView:
    title: str
    kind: ToolKind
    locations: list[ToolCallLocation]
    diffs: list[FileEditToolCallContent]


def tool_view(name: str, tool_input: dict[str, Any], workspace: Path) -> ToolView:
    """Title, kind, locations and diffs of a call of either agent."""
    arg = _Input(tool_input, workspace)
    path = arg.path("path") or arg.path("file_path") or arg.path("notebook_path")
    here = [ToolCallLocation(path=str(path))] if path is not None else []
    shown = arg.shown_path()
    match name:
        case tool_specs.READ_FILE | "Read":
            start = arg.int("start_line") or arg.int("offset")
            if start is not None and path is not None:
                here = [ToolCallLocation(path=str(path), line=max(start - 1, 0))]
            return ToolView(f"Read {shown}".strip(), "read", here, [])
        case tool_specs.EDIT_FILE:
            old = arg.text("old_text")
            diffs = _diff(path, old or None, arg.text("new_text"))
            return ToolView(f"{'Edit' if old else 'Create'} {shown}".strip(), "edit", here, diffs)
        case "Edit" | "Write" | "MultiEdit" | "NotebookEdit":
            return ToolView(f"{name} {shown}".strip(), "edit", here, _claude_diffs(name, arg, path))
        case tool_specs.LIST_DIRECTORY | "LS":
            return ToolView(f"List {shown or '.'}", "search", here, [])
        case tool_specs.SEARCH_TEXT | "Grep" | "Glob":
            where = f" in {shown}" if shown else ""
            title = f"Search {_short(arg.text('pattern'))}".strip() + where
            return ToolView(title, "search", here, [])
        case tool_specs.RUN_COMMAND | "Bash":
            command = _short(arg.text("command"))
            title = arg.text("description") or (f"Run `{command}`" if command else "Run a command")
            return ToolView(title, "execute", here, [])
        case "WebFetch" | "WebSearch":
            what = arg.text("url") or arg.text("query")
            return ToolView(f"{name} {_short(what)}".strip(), "fetch", here, [])
        case "TodoWrite":
            return ToolView("Update the plan", "think", here, [])
        case "Task" | "Agent":
            task = _short(arg.text("description"))
            return ToolView(f"Task: {task}" if task else "Task", "think", here, [])
        case "ExitPlanMode":
            return ToolView("Leave plan mode", "switch_mode", here, [])
        case _ if name == ESCALATE_TOOL_NAME:
            reason = _short(arg.text("reason"))
            title = f"Escalate to Claude: {reason}" if reason else "Escalate to Claude"
            return ToolView(title, "switch_mode", [], [])
        case _ if name == HAND_OFF_TOOL:
            return ToolView("Hand this turn to Claude?", "switch_mode", [], [])
        case _ if name == BUDGET_TOOL:
            return ToolView(
                "Claude's budget for today is spent: go on once?", "switch_mode", [], []
            )
    return ToolView(name or "tool", "other", here, [])


class _Input:
    """Typed reads of a tool's input, which is whatever the model sent."""

    def __init__(self, raw: dict[str, Any], workspace: Path) -> None:
        self.raw = raw if isinstance(raw, dict) else {}
        self.workspace = workspace

    def text(self, key: str) -> str:
        value = self.raw.get(key)
        return value if isinstance(value, str) else ""

    def int(self, key: str) -> int | None:
        value = self.raw.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def path(self, key: str) -> Path | None:
        """The path as an absolute path (relative ones are the workspace's), not resolved."""
        value = self.text(key)
        if not value or "\x00" in value:
            return None
        path = Path(value)
        return path if path.is_absolute() else self.workspace / path

    def shown_path(self) -> str:
        for key in ("path", "file_path", "notebook_path"):
            if value := self.text(key):
                return value
        return ""


def _short(text: str) -> str:
    return cut(one_line(text), TITLE_INPUT_CHARS)


def _diff(path: Path | None, old: str | None, new: str) -> list[FileEditToolCallContent]:
    if path is None:
        return []
    return [FileEditToolCallContent(type="diff", path=str(path), old_text=old, new_text=new)]


def _claude_diffs(name: str, arg: _Input, path: Path | None) -> list[FileEditToolCallContent]:
    if name == "Edit":
        return _diff(path, arg.text("old_string") or None, arg.text("new_string"))
    if name == "Write":
        return _diff(path, None, arg.text("content"))
    if name == "NotebookEdit":
        return _diff(path, None, arg.text("new_source"))
    edits = arg.raw.get("edits")
    diffs: list[FileEditToolCallContent] = []
    for edit in edits if isinstance(edits, list) else []:
        if isinstance(edit, dict):
            one = _Input(edit, arg.workspace)
            diffs += _diff(path, one.text("old_string") or None, one.text("new_string"))
    return diffs


def plan_of(tool_input: dict[str, Any]) -> AgentPlanUpdate | None:
    """Claude's `TodoWrite` todo list as an ACP plan."""
    todos = tool_input.get("todos") if isinstance(tool_input, dict) else None
    if not isinstance(todos, list):
        return None
    entries = []
    for todo in todos:
        if not isinstance(todo, dict) or not isinstance(todo.get("content"), str):
            continue
        status = todo.get("status")
        entries.append(
            PlanEntry(
                content=todo["content"],
                priority="medium",
                status=status if status in ("pending", "in_progress", "completed") else "pending",
            )
        )
    return AgentPlanUpdate(session_update="plan", entries=entries)
