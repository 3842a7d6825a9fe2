"""The advisor's plan: the steps of the checklist Claude writes, whatever its list style."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from milk_lsp.agents.claude.command import ClaudeSettings, ClaudeTurnRequest, build_argv
from milk_lsp.engine.advisor import MAX_STEPS, plan_steps


def test_numbered_steps_in_order() -> None:
    text = "Here is the plan:\n\n1. In `a.py`, rename `x` to `y`.\n2) Update `b.py`.\n3. Run the tests."
    assert plan_steps(text) == ["In `a.py`, rename `x` to `y`.", "Update `b.py`.", "Run the tests."]


def test_bullets_and_checkboxes() -> None:
    text = "- [ ] Add the `timeout` parameter to `fetch()` in `net.py`\n* [x] Pass it from `cli.py`\n• Document it"
    assert plan_steps(text) == [
        "Add the `timeout` parameter to `fetch()` in `net.py`",
        "Pass it from `cli.py`",
        "Document it",
    ]


def test_nested_items_and_wrapped_lines_join_their_step() -> None:
    text = (
        "1. In `a.py`:\n   - rename `x` to `y`\n   - keep the old name as an alias\n"
        "2. In `b.py`, use `y`,\n   everywhere it reads `x`.\n"
    )
    assert plan_steps(text) == [
        "In `a.py`: - rename `x` to `y` - keep the old name as an alias",
        "In `b.py`, use `y`, everywhere it reads `x`.",
    ]


def test_text_after_the_list_is_no_step_and_no_list_is_no_plan() -> None:
    assert plan_steps("1. Do a.\n2. Do b.\n\nThat is all; tell me if it works.") == [
        "Do a.",
        "Do b.",
    ]
    assert plan_steps("I would rename the function and update its callers.") == []


def test_any_language() -> None:
    text = "1. В `a.py` заменить `X = 1` на `X = 10`.\n2. `b.py` の `Y` を 20 にする。"
    assert plan_steps(text) == [
        "В `a.py` заменить `X = 1` на `X = 10`.",
        "`b.py` の `Y` を 20 にする。",
    ]


def test_a_long_plan_keeps_its_remaining_items_in_the_last_step() -> None:
    text = "\n".join(f"{n}. step {n}" for n in range(1, MAX_STEPS + 3))
    steps = plan_steps(text)
    assert len(steps) == MAX_STEPS
    assert steps[-1] == "; ".join(f"step {n}" for n in range(MAX_STEPS, MAX_STEPS + 3))


def test_the_plan_runs_in_claude_codes_plan_mode_whatever_skip_permissions_says() -> None:
    base = ClaudeTurnRequest(Path("/ws"), "hi", "", "id", False, ClaudeSettings())
    assert not any(arg.startswith("--permission-mode") for arg in build_argv(base, "claude", "f"))
    for skip in (False, True):
        planned = replace(
            base, settings=ClaudeSettings(skip_permissions=skip), permission_mode="plan"
        )
        argv = build_argv(planned, "claude", "f")
        assert "--permission-mode=plan" in argv and "--dangerously-skip-permissions" not in argv
        assert argv[argv.index("--permission-prompt-tool") + 1] == "stdio"
