"""The checks after a local edit: broken files are named, files already imperfect are not."""

from __future__ import annotations

from pathlib import Path

import pytest

from milk_lsp.agents.local.judge.checks import broken_by_edit, check_kind
from milk_lsp.agents.local.judge.edit_intent import (
    edits_elsewhere,
    no_new_file,
    rewritten_code,
    unmade_change,
    unwritten_member,
)
from milk_lsp.guided.apply import held_places
from milk_lsp.text import dropped_beside
from milk_lsp.workspace.index import WorkspaceIndex


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


CROSS_ENV = """\
const {spawn} = require('cross-spawn')

function crossEnv(args, options = {}) {
  const [envSetters, command, commandArgs] = parseCommand(args)
  const env = getEnvVars(envSetters)
  const debug = false
  return spawn(command, commandArgs, {env, shell: options.shell})
}
"""


@pytest.mark.parametrize("path", ["src/index.js", "src/index.ts"])
def test_an_edit_that_removes_declarations_still_used_breaks_the_file(path: str) -> None:
    """cross-env's JSDoc task: the comment and the signature written over the function's
    first three lines; the file parses, and `envSetters`, `command`, `env` are declared
    nowhere. Removing a declaration nothing uses, or a property named alike (`x.env`), is
    not that."""
    doc = "/** Runs the command. */\nfunction crossEnv(args, options = {}) {\n"
    lost = CROSS_ENV.replace(
        "function crossEnv(args, options = {}) {\n"
        "  const [envSetters, command, commandArgs] = parseCommand(args)\n"
        "  const env = getEnvVars(envSetters)\n",
        doc,
    )
    said = broken_by_edit(path, CROSS_ENV, lost)
    assert said is not None and "uses command, commandArgs, env, which" in said, said
    unused = CROSS_ENV.replace("  const debug = false\n", "")
    assert broken_by_edit(path, CROSS_ENV, unused) is None
    renamed = CROSS_ENV.replace("const env = ", "const childEnv = ").replace(
        "{env, shell", "{env: childEnv, shell"
    )
    assert broken_by_edit(path, CROSS_ENV, renamed) is None  # `env:` is a key now
    documented = CROSS_ENV.replace(
        "function crossEnv", "/** Runs the command. */\nfunction crossEnv"
    )
    assert broken_by_edit(path, CROSS_ENV, documented) is None


def test_check_kinds_say_what_ran() -> None:
    assert check_kind("pkg/a.py") == "Python parses, no new undefined names"
    assert check_kind("conf.YAML") == "YAML loads"
    assert check_kind("README.md") is None


@pytest.mark.parametrize(
    "ask",
    [
        'In cli.py change the description from "Slug string" to "Make a slug".',
        "Ändere in cli.py die Beschreibung „Slug string“ zu „Make a slug“.",
        "cli.py の説明「Slug string」を「Make a slug」に変えて。",
        "Замени «Slug string» на «Make a slug» в cli.py.",
        "把 cli.py 里的 “Slug string” 改成 “Make a slug”。",
        "In cli.py change the description from 'Slug string' to 'Make a slug', it's short.",
    ],
)
def test_a_spelled_out_change_left_undone_is_caught_in_any_language(ask: str) -> None:
    """The quoted old and new texts are the evidence, in any quote style; no connecting word
    of any language is read."""
    before, after = 'p = A(description="Slug string")\n', 'p = A(description="Make a slug")\n'
    assert unmade_change(ask, {"cli.py": (before, after)}) is None
    elsewhere = before + "# a comment elsewhere\n"
    said = unmade_change(ask, {"cli.py": (before, elsewhere)})
    assert said is not None and "Slug string" in said and "cli.py" in said


def test_a_rename_of_a_code_shaped_name_left_undone_is_caught() -> None:
    before = "NUMBERS_PATTERN = 1\nprint(NUMBERS_PATTERN)\n"
    ask = "rename the constant NUMBERS_PATTERN to NUMBER_COMMA_PATTERN"
    renamed = before.replace("NUMBERS_PATTERN", "NUMBER_COMMA_PATTERN")
    assert unmade_change(ask, {"a.py": (before, renamed)}) is None
    assert unmade_change(ask, {"a.py": (before, before + "X = 2\n")}) is not None
    # a key inside it renamed instead (`NUMBERS_PATTERN_X`): the name stands as before
    inner = before + "NUMBERS_PATTERN_X = 3\n"
    assert unmade_change(ask, {"a.py": (before, inner)}) is not None


def test_a_request_naming_only_texts_the_files_hold_spells_out_no_change() -> None:
    """Two names both there before (a docstring for each, a test for both): no old/new pair,
    so nothing to judge by; edits near them are judged by `edits_elsewhere`."""
    before = "def alpha_one():\n    pass\ndef beta_two():\n    pass\n"
    ask = "Add a docstring to `alpha_one` and `beta_two`."
    after = before.replace("    pass", '    """Do it."""\n    pass', 1)
    assert unmade_change(ask, {"a.py": (before, after)}) is None
    assert unmade_change("Add a docstring to `alpha_one`.", {"a.py": (before, after)}) is None


def test_a_named_new_file_the_edits_did_not_create_is_said() -> None:
    changed = {"a.py": ("x = 1\n", "x = 2\n")}
    said = no_new_file(("src/helpers.py",), changed)
    assert said is not None and "src/helpers.py" in said and "a.py" in said
    assert (
        no_new_file(("src/helpers.py",), {**changed, "src/helpers.py": (None, "y = 1\n")}) is None
    )
    assert no_new_file((), changed) is None


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
    assert unmade_change(ask, {"f": (before, before + "# X\n")}) is not None  # not made


SIGINT_JS = """\
process.on('SIGINT', () => proc.kill('SIGINT'))
proc.on('exit', (code, signal) => {
  // if the signal is SIGINT the user exited the process so we want exit code 0
  if (code === null) {
    code = signal === 'SIGINT' ? 0 : 1
  }
})
"""


@pytest.mark.parametrize(
    "ask",
    [
        "In src/index.js change the exit code for SIGINT from 0 to 130.",
        "Ändere in src/index.js den Exit-Code bei SIGINT von 0 auf 130.",
        "把 src/index.js 里 SIGINT 的退出码从0改成130。",
        "Поменяй в src/index.js код выхода при SIGINT с 0 на 130.",
    ],
)
def test_a_number_the_request_changes_left_as_it_was_is_caught_in_any_language(ask: str) -> None:
    """The numbers are the evidence, as quotes are: 0 is in the file, 130 is not, and an edit
    that writes 130 elsewhere and leaves every 0 standing did not change it (a 1.5B model
    turned `proc.kill('SIGINT')` into `proc.kill('SIGINT', 130)`). A 0 inside 130, or in a
    name (`SHA1`), is not a 0."""
    right = SIGINT_JS.replace("? 0 : 1", "? 130 : 1")
    wrong = SIGINT_JS.replace("proc.kill('SIGINT'))", "proc.kill('SIGINT', 130))")
    assert unmade_change(ask, {"src/index.js": (SIGINT_JS, right)}) is None
    said = unmade_change(ask, {"src/index.js": (SIGINT_JS, wrong)})
    assert said is not None and '"0" to "130"' in said and "src/index.js" in said


def test_the_places_a_missed_change_belongs_are_the_lines_holding_what_the_request_writes() -> None:
    """The lines holding a number or a quoted text the request writes come first, then those
    naming what it writes as code (`SIGINT`), from the files as they were."""
    ask = "Ändere in src/index.js den Exit-Code bei SIGINT von 0 auf 130."
    wrong = SIGINT_JS.replace("proc.kill('SIGINT'))", "proc.kill('SIGINT', 130))")
    places = held_places(ask, {"src/index.js": (SIGINT_JS, wrong)})
    assert places == [("src/index.js", 3), ("src/index.js", 5), ("src/index.js", 1)]
    quoted = held_places("change 'inherit' to 'pipe'", {"a.js": ("x\nstdio: 'inherit',\n", "")})
    assert quoted == [("a.js", 2)]


PARSE_JS = (
    "function crossEnv(args) {\n  const [env, command] = parseCommand(args)\n  return env\n}\n\n"
    "function parseCommand(args) {\n  return [args, args]\n}\n"
)


def test_the_head_of_a_named_definition_is_the_first_place_a_repair_shows() -> None:
    """cross-env's "a JSDoc comment for parseCommand" was put above `crossEnv`, which calls
    it, and the repair showed the call first: the model put it there again."""
    ask = "Add a JSDoc comment to the function parseCommand in src/index.js."
    wrong = PARSE_JS.replace("function crossEnv", "/** Parses. */\nfunction crossEnv")
    places = held_places(ask, {"src/index.js": (PARSE_JS, wrong)}, ["parseCommand"])
    assert places[0] == ("src/index.js", 6)
    assert ("src/index.js", 2) in places  # the call, after it


def test_a_number_that_is_the_edited_lines_number_names_the_line() -> None:
    """ "On line 4 set the limit to 30": 4 is the line the edit changed, not a value to
    change, even where the file holds a 4 elsewhere; versions are whole numbers (3.11)."""
    before = "a = 4\nb = 2\nc = 3\nlimit = 10\n"
    after = before.replace("limit = 10", "limit = 30")
    assert unmade_change("On line 4 set the limit to 30.", {"cfg.py": (before, after)}) is None
    versions = "python = 3.11\nlimit = 10\n"
    bumped = versions.replace("3.11", "3.12")
    assert unmade_change("Require Python 3.12, not 3.11.", {"p.toml": (versions, bumped)}) is None
    left = versions + "# 3.12\n"
    assert unmade_change("Require Python 3.12, not 3.11.", {"p.toml": (versions, left)}) is not None


SHOWN_GO = "51| func getTime() (Time, uint16, error) {\n52| \tt := timeNow()\n53| \treturn t\n54| }"
SHOWN_JS = "3| function plural(ms, msAbs, n, name) {\n4|   var isPlural = msAbs >= n * 1.5;"


@pytest.mark.parametrize(
    ("answer", "shown", "rewrites"),
    [
        # a doc comment written out above a shown Go function, not made
        (
            "Use:\n```go\n// getTime returns the time.\nfunc getTime() (Time, uint16, error) {\n```",
            SHOWN_GO,
            True,
        ),
        # a JS function with a changed body
        (
            "```js\nfunction plural(ms, msAbs, n, name) {\n  return n + ' ' + name;\n}\n```",
            SHOWN_JS,
            True,
        ),
        # the shown lines copied, a middle left out: nothing rewritten
        ("```go\nfunc getTime() (Time, uint16, error) {\n\t// …\n}\n```", SHOWN_GO, False),
        # new code using the workspace's API: no shown line in it
        ("```go\nt, seq, err := uuid.GetTime()\nfmt.Println(t, seq, err)\n```", SHOWN_GO, False),
        # a short shown line (`}`) proves nothing; prose is no block
        ("```go\n}\nreturn 1\n```", SHOWN_GO, False),
        ("Add `// getTime returns the time.` above `func getTime()`.", SHOWN_GO, False),
    ],
)
def test_a_code_block_rewriting_shown_lines_is_a_change_written_out(
    answer: str, shown: str, rewrites: bool
) -> None:
    assert rewritten_code(answer, shown) is rewrites


@pytest.mark.parametrize(
    ("path", "ask", "before", "documented"),
    [
        (
            "src/index.js",
            "Add a JSDoc comment to the function parseCommand that describes its parameter.",
            "const x = 1\n\nfunction parseCommand(args) {\n  return args\n}\n",
            "const x = 1\n\n/**\n * Parses it.\n * @param {string[]} args\n */\n"
            "function parseCommand(args) {\n  return args\n}\n",
        ),
        (
            "a.py",
            "Gib slugify_params einen Docstring im Stil von NumPyDoc.",
            "def slugify_params(args):\n    return dict(a=args)\n",
            'def slugify_params(args):\n    """The keyword arguments."""\n    return dict(a=args)\n',
        ),
        (
            "time.go",
            "给 GetTime 加一行 GoDoc 注释。",
            "package uuid\n\nfunc GetTime() int {\n\treturn 1\n}\n",
            "package uuid\n\n// GetTime returns the time.\nfunc GetTime() int {\n\treturn 1\n}\n",
        ),
    ],
)
def test_a_comment_at_a_named_definition_is_not_a_change_left_undone(
    path: str, ask: str, before: str, documented: str
) -> None:
    """ "A JSDoc comment for parseCommand" writes two names, one held, one not: no old and new
    text when the edits only add lines at the named definition's head and write neither;
    the same lines added elsewhere are still a change left undone."""
    assert unmade_change(ask, {path: (before, documented)}) is None
    elsewhere = before + "\n// a note\n"
    assert unmade_change(ask, {path: (before, elsewhere)}) is not None


@pytest.mark.parametrize(
    ("path", "ask", "before", "inside"),
    [
        (
            "src/index.js",
            "Добавь JSDoc-комментарий к функции parseCommand.",
            "function parseCommand(args) {\n  const a = 1\n  return args\n}\n",
            "function parseCommand(args) {\n  /** Parses it. */\n  const a = 1\n  return args\n}\n",
        ),
        (
            "time.go",
            "Add a GoDoc comment to GetTime.",
            "package uuid\n\nfunc GetTime() int {\n\tx := 1\n\treturn x\n}\n",
            "package uuid\n\nfunc GetTime() int {\n\t// It returns the time.\n\tx := 1\n"
            "\treturn x\n}\n",
        ),
    ],
)
def test_a_doc_comment_put_inside_a_definition_where_docs_go_above_is_not_one(
    path: str, ask: str, before: str, inside: str
) -> None:
    """cross-env's JSDoc for parseCommand was written under `function parseCommand(args) {`
    and ended as done: only Python's documentation goes inside (`Language.docs_inside`)."""
    said = unmade_change(ask, {path: (before, inside)})
    assert said is not None and "left" in said


OPTION_LINE = (
    "    parser.add_argument(\"--no-lowercase\", action='store_false', dest='lowercase',\n"
    '                        help="Activate case sensitivity")\n'
)


@pytest.mark.parametrize(
    "ask",
    [
        "In __main__.py rename the command-line option --no-lowercase to --keep-case.",
        "Benenne in __main__.py die Option --no-lowercase in --keep-case um.",
        "__main__.py のオプション --no-lowercase を --keep-case に改名して。",
        "Переименуй опцию --no-lowercase в --keep-case.",
    ],
)
def test_a_rename_that_takes_away_more_of_the_line_is_caught(ask: str) -> None:
    """python-slugify's option renamed with its `dest='lowercase'` dropped ended silent: the
    option is the old text, and what the renamed line lost beside it is the evidence."""
    renamed = OPTION_LINE.replace("--no-lowercase", "--keep-case")
    assert unmade_change(ask, {"__main__.py": (OPTION_LINE, renamed)}) is None
    dropped = renamed.replace(" dest='lowercase',", "")
    said = unmade_change(ask, {"__main__.py": (OPTION_LINE, dropped)})
    assert said is not None and "dest, lowercase" in said
    # more written beside the rename is not a loss
    grown = renamed.replace("help=", "default=True, help=")
    assert unmade_change(ask, {"__main__.py": (OPTION_LINE, grown)}) is None
    left = unmade_change(ask, {"__main__.py": (OPTION_LINE, OPTION_LINE + "# x\n")})
    assert left is not None and "left" in left
    # the old name read whole: `lowercase_x` is not `lowercase` renamed
    kept = "x = lower(lower_x)\n"
    assert dropped_beside(kept, "x = upper(lower_x)\n", "lower", "upper") == []
    assert dropped_beside(kept, "x = upper()\n", "lower", "upper") == ["lower_x"]


ENV_OPTIONS = (
    "const options = {}\n\n"
    "if (process.env.DOTENV_CONFIG_DEBUG != null) {\n"
    "  options.debug = process.env.DOTENV_CONFIG_DEBUG\n}\n\n"
    "module.exports = options\n"
)
SETTINGS_PY = "class Settings:\n    def __init__(self):\n        self.debug = False\n"
CONFIG_GO = "package conf\n\ntype Config struct {\n\tDebug bool\n}\n"


@pytest.mark.parametrize(
    ("path", "before", "ask", "right", "wrong"),
    [
        (
            "lib/env-options.js",
            ENV_OPTIONS,
            "In lib/env-options.js also read DOTENV_CONFIG_QUIET into options.quiet, the way"
            " the other options are read.",
            "if (process.env.DOTENV_CONFIG_QUIET != null) {\n"
            "  options.quiet = process.env.DOTENV_CONFIG_QUIET\n}\n",
            "const extra = { DOTENV_CONFIG_QUIET: process.env.DOTENV_CONFIG_QUIET || false }\n",
        ),
        (
            "lib/env-options.js",
            ENV_OPTIONS,
            "Lies in lib/env-options.js auch DOTENV_CONFIG_QUIET in options.quiet ein.",
            "Object.assign(options, { quiet: process.env.DOTENV_CONFIG_QUIET })\n",
            "options.debug = process.env.DOTENV_CONFIG_QUIET\n",
        ),
        (
            "settings.py",
            SETTINGS_PY,
            "Settings に self.verbose を追加して、既定値は False にして。",
            "        self.verbose = False\n",
            "        self.debug = True\n",
        ),
        (
            "conf/config.go",
            CONFIG_GO,
            "Добавь в Config поле Config.Timeout типа int.",
            "// Timeout in seconds.\nvar _ = Config{Timeout: 0}\n",
            "// Config holds the settings.\n",
        ),
    ],
)
def test_a_new_member_the_request_writes_must_be_written(
    tmp_path: Path, path: str, before: str, ask: str, right: str, wrong: str
) -> None:
    """dotenv's "read DOTENV_CONFIG_QUIET into options.quiet" was answered with a
    `DOTENV_CONFIG_QUIET:` key and ended silent: a member the request writes on an object an
    edited file holds, which no file of the workspace has, must be written by the edits."""
    (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / path).write_text(before)
    index = WorkspaceIndex(tmp_path)
    index.refresh()
    assert unwritten_member(ask, {path: (before, before + right)}, index) is None
    said = unwritten_member(ask, {path: (before, before + wrong)}, index)
    assert said is not None and "wrote no" in said


def test_members_the_workspace_has_files_and_abbreviations_ask_nothing(tmp_path: Path) -> None:
    """A member the workspace has (`options.debug`), a file's name (`env-options.js`,
    `main.py`), `e.g.` and a call (`options.get()`) are not new members to write."""
    (tmp_path / "main.py").write_text("options = {}\noptions.debug = 1\n")
    index = WorkspaceIndex(tmp_path)
    index.refresh()
    edited = {"main.py": ("options = {}\noptions.debug = 1\n", "options = {}\n")}
    for ask in (
        "Remove options.debug from main.py.",
        "In main.py, e.g. drop the debug line.",
        "Stop calling options.get() in main.py.",
        "Delete the second line of options.py.",
    ):
        assert unwritten_member(ask, edited, index) is None, ask


ENV_OPTIONS_JS = """\
// ../config.js accepts options via environment variables
const options = {}

if (process.env.DOTENV_CONFIG_ENCODING != null) {
  options.encoding = process.env.DOTENV_CONFIG_ENCODING
}

if (process.env.DOTENV_CONFIG_PATH != null) {
  options.path = process.env.DOTENV_CONFIG_PATH
}

module.exports = options
"""


def test_edits_of_one_reply_on_the_same_lines_or_repeating_a_line_there_are_not_one_batch() -> None:
    """dotenv's quiet-option: the last edit replaced what the first wrote (the ENCODING
    option was no longer read), and the others each copied the line below their own."""
    from milk_lsp.guided.apply import crossed_edits
    from milk_lsp.guided.shape import Edit

    encoding = "if (process.env.DOTENV_CONFIG_ENCODING != null) {"
    copy = Edit(
        path="lib/env-options.js",
        old_text=encoding,
        new_text=f"{encoding}\n  options.encoding = process.env.DOTENV_CONFIG_ENCODING;",
    )
    over = Edit(
        path="lib/env-options.js",
        old_text=encoding,
        new_text="if (process.env.DOTENV_CONFIG_QUIET != null) {\n  options.quiet = 1",
    )
    texts = {"lib/env-options.js": ENV_OPTIONS_JS}
    problems = crossed_edits([copy, over], texts)
    assert len(problems) == 2
    assert "already has right there" in problems[0] and "options.encoding" in problems[0]
    assert "two edits change the same lines of lib/env-options.js" in problems[1]


@pytest.mark.parametrize(
    ("path", "text", "edits"),
    [
        # a new option read the way the others are, beside them
        (
            "lib/env-options.js",
            ENV_OPTIONS_JS,
            [
                (
                    "}\n\nmodule.exports = options",
                    "}\n\nif (process.env.DOTENV_CONFIG_QUIET != null) {\n"
                    "  options.quiet = process.env.DOTENV_CONFIG_QUIET\n}\n\nmodule.exports = options",
                ),
                ("const options = {}", "// read once, at start-up\nconst options = {}"),
            ],
        ),
        # Python: two places of one file, a closing line and a short line added twice
        (
            "calc.py",
            "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n",
            [
                ("    return a + b", "    total = a + b\n    return total"),
                ("    return a - b", "    total = a - b\n    return total"),
            ],
        ),
        # Go: a line like its neighbour, with another value
        (
            "pool.go",
            "const (\n\tsizeA = 16\n\tsizeB = 32\n)\n",
            [("\tsizeB = 32", "\tsizeB = 32\n\tsizeC = 64")],
        ),
    ],
)
def test_edits_of_different_places_adding_new_lines_are_one_batch(
    path: str, text: str, edits: list[tuple[str, str]]
) -> None:
    from milk_lsp.guided.apply import crossed_edits
    from milk_lsp.guided.shape import Edit

    given = [Edit(path=path, old_text=old, new_text=new) for old, new in edits]
    assert crossed_edits(given, {path: text}) == []


@pytest.mark.parametrize(
    ("ask", "files", "edited", "away"),
    [
        # cross-env's normalize-default: a comment in the file calling commandConvert
        (
            "In src/command.js change the default value of normalize from false to true.",
            ["src/command.js"],
            {"src/index.js": ("// by default normalize is `false`\n", "// by default `true`\n")},
            True,
        ),
        # Python, asked in German, the named file edited
        (
            "Ändere in calc.py den Standardwert von precision auf 3.",
            ["calc.py"],
            {"calc.py": ("def f(precision=2):\n", "def f(precision=3):\n")},
            False,
        ),
        # Go: a new file beside the one named, made from it
        (
            "Write a variant of hash.go in hash_v2.go.",
            ["hash.go"],
            {"hash_v2.go": (None, "package uuid\n")},
            False,
        ),
        # no file named: the named-file rule says nothing
        (
            "把默认编码改成 latin1",
            [],
            {"lib/main.js": ("let e = 'utf8'\n", "let e = 'latin1'\n")},
            False,
        ),
    ],
)
def test_edits_in_none_of_the_files_the_request_names_are_away(
    ask: str, files: list[str], edited: dict[str, tuple[str | None, str | None]], away: bool
) -> None:
    said = edits_elsewhere(ask, edited, (), files)
    assert (said is not None) is away, said
    if away:
        assert "it names src/command.js, the edits changed src/index.js" in (said or "")
