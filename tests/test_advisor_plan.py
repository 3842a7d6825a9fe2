"""The advisor's brief and the shape of Claude's answer (issue 39): what milk accepts before
any file changes, the tool-less launch, and what a step takeover shows Claude."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from milk_lsp.agents.claude.command import (
    BRIEF_FLAGS,
    ClaudeSettings,
    ClaudeTurnRequest,
    build_argv,
)
from milk_lsp.engine.advisor.brief import lines_around, plan_brief, step_brief
from milk_lsp.engine.advisor.route import step_text
from milk_lsp.engine.advisor.shape import (
    MAX_STEPS,
    STEP_EDITS_MAX,
    NotTheShape,
    StepEdit,
    check_steps,
    parse_reply,
    unmade,
    unnumbered,
)
from milk_lsp.guided.locate import Chunk, Located


def step(path: str = "a.py", old: str = "X = 1", new: str = "X = 10", why: str = "ten") -> dict:
    return {"path": path, "old_text": old, "new_text": new, "why": why}


def test_steps_in_a_fence_or_with_words_around_them() -> None:
    text = f"Here is the plan:\n```json\n{json.dumps({'steps': [step(), step('b.py')]})}\n```"
    reply = parse_reply(text)
    assert [(s.path, s.old_text, s.new_text, s.why) for s in reply.steps] == [
        ("a.py", "X = 1", "X = 10", "ten"),
        ("b.py", "X = 1", "X = 10", "ten"),
    ]
    assert reply.needs == []
    assert reply.steps[0].shown() == "`a.py`: ten"


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("not json at all", "not a JSON object"),
        ('"just a string"', "JSON, but not an object"),
        ('{"a": 1} {"b": 2}', "not a JSON object"),
        ("{}", "no steps"),
        ('{"steps": "do it"}', "`steps` is not a list"),
        ('{"steps": [1]}', "step 1 is not an object"),
        (json.dumps({"steps": [{"path": "a.py", "new_text": "x"}]}), "no string `old_text`"),
        (json.dumps({"steps": [step(path=" ")]}), "names no file"),
        (json.dumps({"steps": [step(old="same", new="same")]}), "changes nothing"),
        (json.dumps({"steps": [step()] * (MAX_STEPS + 1)}), f"more than {MAX_STEPS}"),
        (json.dumps({"steps": [step(old="x" * 9000)]}), "over 8000 characters"),
        (json.dumps({"steps": [{**step(), "replace_all": "yes"}]}), "not true or false"),
    ],
)
def test_what_is_not_the_shape_fails_clearly(text: str, why: str) -> None:
    with pytest.raises(NotTheShape, match=why.replace("`", ".")):
        parse_reply(text)


def test_a_rename_step_may_replace_every_occurrence() -> None:
    reply = parse_reply(json.dumps({"steps": [{**step(), "replace_all": True}, step("b.py")]}))
    assert [s.replace_all for s in reply.steps] == [True, False]
    assert reply.steps[0].edit().replace_all and not reply.steps[1].edit().replace_all


def test_needs_are_asked_once() -> None:
    reply = parse_reply('{"needs": ["src/x.py", " Parser ", ""]}')
    assert reply.needs == ["src/x.py", "Parser"] and reply.steps == []
    with pytest.raises(NotTheShape, match="again"):
        parse_reply('{"needs": ["src/x.py"]}', needs_allowed=False)
    # steps win over needs: what was planned is planned
    both = parse_reply(json.dumps({"steps": [step()], "needs": ["y"]}), needs_allowed=False)
    assert len(both.steps) == 1 and both.needs == []


def test_each_step_is_checked_against_the_files_as_they_are() -> None:
    reply = parse_reply(
        json.dumps(
            {
                "steps": [
                    step("a.py"),
                    step("b.py", old="Y = 3"),
                    step("gone.py"),
                    step("new.py", old=""),
                    step("a.py", old="", new="exists"),
                ]
            }
        )
    )
    problems = check_steps(reply, {"a.py": "X = 1\n", "b.py": "Y = 2\n", "gone.py": None})
    assert problems == [
        "step 2: its old_text is not in b.py",
        "step 3 edits gone.py, which does not exist",
        "step 5 creates a.py, which exists",
    ]


def test_the_brief_holds_the_request_what_was_tried_and_the_located_lines() -> None:
    located = Located(
        chunks=(Chunk("src/a.py", 4, ("def f():", "    return 1"), "names f"),),
        repo_map="src/a.py: f",
    )
    text = plan_brief("make f return 2", located, tried="edit_file failed: old_text not found")
    assert text.startswith("The request:\nmake f return 2")
    assert "What the local model already tried:\nedit_file failed" in text
    assert "--- src/a.py lines 4-5 (names f)\n4| def f():\n5|     return 1" in text
    assert "src/a.py: f" in text
    assert "already tried" not in plan_brief("x", located)


def test_a_takeover_shows_the_step_the_lines_around_it_and_why_it_failed() -> None:
    text = "\n".join(f"line {n}" for n in range(1, 800)) + "\nTARGET = 1\n" + "tail\n" * 300
    planned = StepEdit("m.py", "TARGET = 1", "TARGET = 2", "two")
    asked = step_brief(3, "set target to two", planned, text, "the edit broke m.py")
    assert "Step 3 of the plan for the request 'set target to two': two" in asked
    assert "800| TARGET = 1" in asked and "788| line 788" in asked
    assert "line 300" not in asked  # only the lines around it
    assert asked.endswith("Why it failed: the edit broke m.py")
    # not there: where the file is most like it
    assert "800| TARGET = 1" in lines_around(text, "TARGET = 7")
    # in many places (a rename's uses): each with a line or two around it
    many = "\n".join(f"x{n} = NAME" if n % 50 == 0 else f"line {n}" for n in range(1, 1000))
    shown = lines_around(many, "NAME")
    assert shown.count("= NAME") == 19 and "52| line 52" in shown and "53| line 53" not in shown
    assert "does not exist" in step_brief(1, "r", planned, None, "gone")


def test_a_step_in_words_for_the_local_model() -> None:
    assert step_text(StepEdit("a.py", "X = 1", "X = 10", "Ten.")) == (
        "Ten: in `a.py`, change `X = 1` to `X = 10`."
    )
    long = step_text(StepEdit("a.py", "def f():\n    pass", "def f():\n    return 1", ""))
    assert long.startswith("Make this edit. In `a.py`, replace:\n```\ndef f():")


def test_the_brief_launch_has_no_tools_and_milks_system_prompt_file() -> None:
    request = ClaudeTurnRequest(
        Path("/ws"),
        "the brief",
        "milk's system prompt",
        "",
        False,
        ClaudeSettings(model="opus", skip_permissions=True, add_dirs=("/x",)),
        brief=True,
    )
    argv = build_argv(request, "claude", "/tmp/private/milk-context.md")
    assert argv[-1] == "--system-prompt-file=/tmp/private/milk-context.md"
    assert all(flag in argv for flag in BRIEF_FLAGS) and "--tools=" in argv
    assert "--model=opus" in argv and "--setting-sources=user,project,local" in argv
    for absent in (
        "--bare",
        "--resume",
        "--session-id",
        "--permission-prompt-tool",
        "--dangerously-skip-permissions",
        "--append-system-prompt-file",
        "--add-dir",
    ):
        assert not any(arg.startswith(absent) for arg in argv), absent
    assert "the brief" not in " ".join(argv)  # the prompt goes on stdin


def test_a_step_claude_takes_over_may_have_more_edits_than_a_plan_has_steps() -> None:
    """A rename's uses, one edit each: a takeover answer holds up to STEP_EDITS_MAX."""
    text = json.dumps({"steps": [step(old=f"X{n}", new=f"Y{n}") for n in range(12)]})
    with pytest.raises(NotTheShape, match="more than 8"):
        parse_reply(text)
    assert len(parse_reply(text, limit=STEP_EDITS_MAX).steps) == 12


def test_a_step_is_made_when_its_file_shows_it() -> None:
    """The files, not the local model's words, say whether a step was made."""
    rename = StepEdit("m.py", "OLD", "NEW")
    before = "OLD = 1\nprint(OLD)\n"
    assert unmade(rename, before, "NEW = 1\nprint(NEW)\n") is None
    assert unmade(rename, before, "NEW = 1\nprint(OLD)\n") is None  # part of it: not nothing
    assert unmade(rename, before, before) == "m.py did not change"
    assert unmade(rename, before, "OLD = 2\nprint(OLD)\n") == (
        "m.py changed, but does not hold the step's new text once more"
    )
    assert unmade(rename, before, None) == "m.py is not there"
    grow = StepEdit("m.py", "X = 1", "X = 10")  # the new text holds the old one
    assert unmade(grow, "X = 1\n", "X = 10\n") is None
    drop = StepEdit("m.py", "import os\n", "")
    assert unmade(drop, "import os\nX = 1\n", "X = 1\n") is None
    assert unmade(drop, "import os\nX = 1\n", "import os\nX = 2\n") is not None
    assert unmade(StepEdit("new.py", "", "A = 1\n"), None, "A = 1\n") is None


def test_old_text_copied_with_the_briefs_line_numbers_loses_them() -> None:
    text = "def f():\n    return 1\n"
    reply = parse_reply(
        json.dumps(
            {
                "steps": [
                    step("a.py", "1| def f():\n2|     return 1", "1| def f():\n2|     return 2"),
                    step("a.py", "7| nowhere", "7| x"),  # not in the file either way: kept
                ]
            }
        )
    )
    unnumbered(reply, {"a.py": text})
    assert (reply.steps[0].old_text, reply.steps[0].new_text) == (
        "def f():\n    return 1",
        "def f():\n    return 2",
    )
    assert reply.steps[1].old_text == "7| nowhere"
    assert check_steps(reply, {"a.py": text}) == ["step 2: its old_text is not in a.py"]
