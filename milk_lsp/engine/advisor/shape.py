"""What Claude answers a brief with, and milk's check of it before anything is applied.

One JSON object: `steps`, up to `MAX_STEPS` exact replacements `{path, old_text, new_text,
why, replace_all?}` (`replace_all`: every occurrence, a rename), each standing alone; or
`needs`, the files or definitions by name Claude must see first (answered once). The shape
is checked (`parse_reply`), then each step against the files as they are (`check_steps`): a
reply milk cannot use fails clearly, before any file changes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from milk_lsp.guided.shape import Edit, object_text

MAX_STEPS = 8
STEP_EDITS_MAX = 24
"""Edits of a step Claude takes over (a rename's uses, one edit each) at most."""
MAX_NEEDS = 8
PATH_MAX = 400
TEXT_MAX = 8000
WHY_MAX = 600


@dataclass
class StepEdit:
    """One step: an exact replacement in one file, and why (what the user sees)."""

    path: str
    old_text: str
    new_text: str
    why: str = ""
    replace_all: bool = False
    """Every occurrence of the old text in the file (a rename), not just the one."""

    def edit(self) -> Edit:
        return Edit(
            path=self.path,
            old_text=self.old_text,
            new_text=self.new_text,
            replace_all=self.replace_all,
        )

    def shown(self) -> str:
        """The step as the checklist shows it."""
        why = " ".join(self.why.split()) or "edit"
        return f"`{self.path}`: {why}"


@dataclass
class BriefReply:
    steps: list[StepEdit] = field(default_factory=list)
    needs: list[str] = field(default_factory=list)


class NotTheShape(ValueError):
    """Claude's reply is not a usable plan; the message says why, for the user."""


def parse_reply(text: str, *, needs_allowed: bool = True, limit: int = MAX_STEPS) -> BriefReply:
    """The reply as `BriefReply`; a ```json fence or words around the object are
    tolerated. Raises `NotTheShape` for anything else: not JSON, no steps and no needs,
    too many steps, a step that changes nothing, needs when they were answered already."""
    try:
        data = json.loads(object_text(text))
    except json.JSONDecodeError as exc:
        raise NotTheShape(f"Claude's reply is not a JSON object ({exc.msg})") from None
    if not isinstance(data, dict):
        raise NotTheShape("Claude's reply is JSON, but not an object")
    steps = _list(data, "steps")
    if len(steps) > limit:
        raise NotTheShape(f"Claude's reply has {len(steps)} steps, more than {limit}")
    reply = BriefReply([_step(number, item) for number, item in enumerate(steps, 1)])
    if reply.steps:
        return reply  # steps win: what it planned is what it needs no more for
    needs = [need.strip() for need in _list(data, "needs") if isinstance(need, str)]
    reply.needs = [need for need in needs if need][:MAX_NEEDS]
    if reply.needs and not needs_allowed:
        raise NotTheShape("Claude asked for more code again after milk gave what it asked for")
    if not reply.needs:
        raise NotTheShape("Claude's reply has no steps")
    return reply


def _list(data: dict[str, Any], key: str) -> list[Any]:
    value = data.get(key, [])
    if not isinstance(value, list):
        raise NotTheShape(f"Claude's reply: `{key}` is not a list")
    return value


def _step(number: int, item: Any) -> StepEdit:
    """One step's fields, each a string within its bound."""
    if not isinstance(item, dict):
        raise NotTheShape(f"Claude's reply: step {number} is not an object")
    values: dict[str, str] = {}
    for key, limit in (
        ("path", PATH_MAX),
        ("old_text", TEXT_MAX),
        ("new_text", TEXT_MAX),
        ("why", WHY_MAX),
    ):
        value = item.get(key, "" if key == "why" else None)
        if not isinstance(value, str):
            raise NotTheShape(f"Claude's reply: step {number} has no string `{key}`")
        if len(value) > limit:
            raise NotTheShape(f"Claude's reply: step {number}'s `{key}` is over {limit} characters")
        values[key] = value
    every = item.get("replace_all", False)
    if not isinstance(every, bool):
        raise NotTheShape(f"Claude's reply: step {number}'s `replace_all` is not true or false")
    step = StepEdit(**values, replace_all=every)
    if not step.path.strip():
        raise NotTheShape(f"Claude's reply: step {number} names no file")
    if step.old_text == step.new_text:
        raise NotTheShape(f"step {number} ({step.path}) changes nothing")
    return step


_NUMBERED = re.compile(r"^ *\d+\| ?", re.MULTILINE)


def unnumbered(reply: BriefReply, texts: Mapping[str, str | None]) -> None:
    """Steps whose old text was copied with the brief's line numbers (`12| `) on every line,
    and is found without them, lose them (in the new text too): the numbers were never
    part of the file."""
    for step in reply.steps:
        text = texts.get(step.path)
        lines = step.old_text.splitlines()
        if not text or not lines or step.old_text in text:
            continue
        if not all(_NUMBERED.match(line) for line in lines):
            continue
        old = _NUMBERED.sub("", step.old_text)
        if old in text:
            step.old_text, step.new_text = old, _NUMBERED.sub("", step.new_text)


def unmade(step: StepEdit, before: str | None, after: str | None) -> str | None:
    """Why the files do not show `step` made (None: they do): its file changed, and holds
    its new text more times than before (a deletion: its old text fewer times). What the
    local model says about a step is not evidence; the file is."""
    if after is None:
        return f"{step.path} is not there"
    if after == before:
        return f"{step.path} did not change"
    was = before or ""
    if step.new_text:
        if after.count(step.new_text) <= was.count(step.new_text):
            return f"{step.path} changed, but does not hold the step's new text once more"
    elif step.old_text and after.count(step.old_text) >= was.count(step.old_text):
        return f"{step.path} changed, but still holds the text the step removes"
    return None


def check_steps(reply: BriefReply, texts: Mapping[str, str | None]) -> list[str]:
    """Why the steps cannot be applied to the files as they are (`texts`: each step's path
    → its text, None when there is no such file): the old text must be in the file; an
    empty old text creates a file that does not exist yet. Empty: every step fits."""
    problems: list[str] = []
    for number, step in enumerate(reply.steps, 1):
        text = texts.get(step.path)
        if step.old_text == "":
            if text is not None:
                problems.append(f"step {number} creates {step.path}, which exists")
        elif text is None:
            problems.append(f"step {number} edits {step.path}, which does not exist")
        elif step.old_text not in text:
            problems.append(f"step {number}: its old_text is not in {step.path}")
    return problems
