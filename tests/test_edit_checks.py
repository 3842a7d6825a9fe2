"""The checks after a local edit: broken files are named, files already imperfect are not."""

from __future__ import annotations

import pytest

from milk_lsp.agents.local.judge.checks import broken_by_edit, check_kind
from milk_lsp.agents.local.judge.edit_intent import echoes_request, made_change, unmade_change


@pytest.mark.parametrize(
    ("path", "after", "why"),
    [
        ("a.py", "def f(:\n", "it no longer parses as Python (line 1"),
        ("a.py", "X = 1\nprint(Y)\n", "defined nowhere: Y (line 2: `print(Y)`)"),
        ("c.json", '{"a": 1,}', "it is no longer valid JSON"),
        ("c.toml", "a = = 1", "it is no longer valid TOML"),
        ("c.yaml", "a: [1, 2", "it is no longer valid YAML"),
        ("c.yml", "a: b: c", "it is no longer valid YAML"),
    ],
)
def test_a_broken_file_is_named_with_why(path: str, after: str, why: str) -> None:
    problem = broken_by_edit(path, "", after)
    assert problem is not None and why in problem


@pytest.mark.parametrize(
    ("path", "before", "after"),
    [
        ("a.py", "print(Y)\n", "print(Y)\nprint(1)\n"),  # undefined before the edit: no news
        ("a.py", "from x import *\nf()\n", "from x import *\nf()\ng()\n"),
        ("a.py", None, "import os\nprint(os.sep)\n"),  # a created file
        ("c.json", "{}", '{"a": [1, 2]}'),
        ("notes.txt", "", "anything at all: {["),  # not checked
    ],
)
def test_fine_or_unchecked_files_pass(path: str, before: str | None, after: str) -> None:
    assert broken_by_edit(path, before, after) is None


def test_a_rename_that_left_the_old_name_in_all_is_broken() -> None:
    before = '__all__ = ["natural_list"]\n\n\ndef natural_list(items):\n    return items\n'
    after = before.replace("def natural_list", "def join_naturally")
    problem = broken_by_edit("lists.py", before, after)
    assert problem is not None and "natural_list (line 1" in problem
    assert "rename its uses too" in problem
    assert (
        broken_by_edit("lists.py", before, after.replace('["natural_list"]', '["join_naturally"]'))
        is None
    )
    # an export that named nothing before the edit is no news
    stale = '__all__ = ["gone"]\nX = 1\n'
    assert broken_by_edit("m.py", stale, stale.replace("X = 1", "X = 2")) is None


JS_BEFORE = """const isWindows = require('./is-windows')
const {spawn} = require('cross-spawn')

function run(cmd) {
  return isWindows() ? spawn('cmd', [cmd]) : spawn(cmd)
}
module.exports = run
"""


def test_a_rename_left_half_done_in_javascript_is_broken() -> None:
    half = JS_BEFORE.replace("isWindows() ?", "onWindows() ?")
    problem = broken_by_edit("src/run.js", JS_BEFORE, half)
    assert problem is not None
    assert "uses onWindows, which it defines nowhere, where it used isWindows" in problem
    assert 'old_text "isWindows", new_text "onWindows" and replace_all true' in problem
    assert broken_by_edit("src/run.ts", JS_BEFORE, half) is not None


def test_a_definition_renamed_with_its_uses_left_in_javascript_is_broken() -> None:
    half = JS_BEFORE.replace("const isWindows =", "const onWindows =")
    problem = broken_by_edit("src/run.js", JS_BEFORE, half)
    assert problem is not None
    assert (
        "still uses isWindows, which it no longer defines (its definition is onWindows" in problem
    )


@pytest.mark.parametrize(
    "after",
    [
        JS_BEFORE.replace("isWindows", "onWindows"),  # the whole rename
        JS_BEFORE.replace("isWindows() ?", "process.platform === 'win32' ?"),  # an expression
        # a call switched to a name the file defines (imports)
        JS_BEFORE.replace("const {spawn}", "const {spawn, sync}").replace(
            "spawn(cmd)\n", "sync(cmd)\n"
        ),
        JS_BEFORE.replace("return isWindows()", "return !isWindows()"),
    ],
)
def test_whole_renames_and_other_changes_in_javascript_pass(after: str) -> None:
    assert broken_by_edit("src/run.js", JS_BEFORE, after) is None


def test_a_go_call_switched_to_a_name_of_another_file_is_not_a_half_rename() -> None:
    before = "package main\n\nfunc isWindows() bool { return false }\n\nfunc run() bool { return isWindows() }\n"
    after = before.replace("return isWindows() }", "return onWindows() }")
    assert broken_by_edit("main.go", before, after) is None  # Go: onWindows may be in main2.go


def test_check_kinds_say_what_ran() -> None:
    assert check_kind("pkg/a.py") == "Python parses, no new undefined names"
    assert check_kind("conf.YAML") == "YAML loads"
    assert check_kind("README.md") is None


def test_a_comment_that_only_repeats_the_request_is_no_change_unless_one_was_asked_for() -> None:
    before = "def f():\n    return 1\n"
    ask = "Add a one-line docstring to the function f in a.py."
    echoed = before + f"    # {ask}\n"
    said = echoes_request("a.py", before, echoed, ask)
    assert said is not None and said.startswith("Not made: this edit only adds the request")
    assert "A docstring is a string literal" in said
    asked = "Add a comment to f: add a one-line docstring later."
    assert echoes_request("a.py", before, before + f"    # {asked}\n", asked) is None
    own = before + "    # the answer, cached by the caller\n"  # its own words
    assert echoes_request("a.py", before, own, ask) is None
    assert echoes_request("a.py", before, before.replace("1", "2") + f"# {ask}\n", ask) is None


def test_the_one_spelled_out_change_made_is_said_where() -> None:
    before, after = 'p = A(description="Slug string")\n', 'p = A(description="Make a slug")\n'
    ask = 'In cli.py change the description from "Slug string" to "Make a slug".'
    assert made_change(ask, {"cli.py": (before, after)}) == (
        '"Slug string" is now "Make a slug" in cli.py'
    )
    assert made_change(ask, {"cli.py": (before, before)}) is None  # not made
    assert made_change(ask, {"cli.py": (before, after + "# Slug string\n")}) is None  # moved
    for more in (" Also update the README.", " and add a test."):
        assert made_change(ask.rstrip(".") + more, {"cli.py": (before, after)}) is None
    assert (
        made_change("In cli.py rename slug to make_slug.", {"cli.py": ("slug", "make_slug")})
        is None
    )
    assert made_change("Make the description clearer.", {"cli.py": (before, after)}) is None


@pytest.mark.parametrize(
    ("ask", "before", "after"),
    [
        ("In `a.py`, change `X = 1` to `X = 10`.", "X = 1\n", "X = 10\n"),
        ('Change "limit = 25" to "limit = 256" in cfg.py.', "limit = 25\n", "limit = 256\n"),
        (
            "In a.js, change `ok()` to `ok() && ready()`.",
            "if (ok()) go();\n",
            "if (ok() && ready()) go();\n",
        ),
    ],
)
def test_a_change_whose_new_text_holds_the_old_one_is_made(
    ask: str, before: str, after: str
) -> None:
    """The new text contains the old ("X = 1" in "X = 10"): the edit made the change, and the
    old text's count must not see it inside the new one (an advisor step was put back)."""
    edited = {"f": (before, after)}
    assert unmade_change(ask, edited) is None
    assert made_change(ask, edited) is not None
    assert unmade_change(ask, {"f": (before, before + "# X\n")}) is not None  # not made
