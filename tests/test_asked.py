"""Which names of the workspace a message asks about, by structure, in any human language
(issue 29); the checks of edits by their diff, and of final replies by what the model
declared in `finish` (issue 38: no phrase of any language decides)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from milk_lsp.agents.base import LocalGaveUp, LocalSignal
from milk_lsp.agents.local.judge.asked import asked
from milk_lsp.agents.local.judge.checks import broken_by_edit, check_kind
from milk_lsp.agents.local.judge.edit_intent import edits_elsewhere
from milk_lsp.agents.local.judge.finish import finish_of
from milk_lsp.agents.local.judge.read_first import read_first
from milk_lsp.agents.local.judge.watch import TurnWatch
from milk_lsp.workspace.index import WorkspaceIndex

FILES = {
    "lib/size.py": 'def naturalsize(value, binary=False, fmt="%.1f"):\n    return value\n',
    "lib/slug.py": "class UniqueSlugify:\n    pass\n\n\ndef greet():\n    return 'hi'\n",
    "src/utils.js": "function inc(a) { return a + 1 }\nclass Limiter { run() {} }\n",
    "cmd/server.go": "package cmd\n\nfunc (s *Server) Start() error { return nil }\n",
    "cli.py": "def main(precision=2):\n    return precision\n",
}


@pytest.fixture
def index(tmp_path: Path) -> WorkspaceIndex:
    for name, text in FILES.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    built = WorkspaceIndex(tmp_path)
    built.refresh()
    return built


ASKED = {
    "German": ("Wo ist UniqueSlugify definiert?", "UniqueSlugify"),
    "Portuguese": ("Onde fica definida a classe UniqueSlugify?", "UniqueSlugify"),
    "Japanese": ("naturalsize 関数はどのファイルに定義されていますか？", "naturalsize"),
    "Chinese": ("greet函数在哪个文件里定义？", "greet"),
    "Russian": ("Где определена функция greet?", "greet"),
    "everyday English": ("where's the Limiter class live?", "Limiter"),
    "a typo in the name": ("wher is the naturalsise function defind?", "naturalsize"),
    "another case": ("what does NaturalSize return?", "naturalsize"),
    "a Go method": ("Was macht Start?", "Start"),
    "a short name as code": ("Make `inc` return null for negatives", "inc"),
    "a short name beside a word of its file": ("the precision parameter of main?", "main"),
    "a short name in the file the request names": ("Renombra inc en src/utils.js a step", "inc"),
}


@pytest.mark.parametrize(("question", "name"), ASKED.values(), ids=ASKED.keys())
def test_a_question_names_a_definition_in_any_language(
    index: WorkspaceIndex, question: str, name: str
) -> None:
    assert asked(question, index).names[0] == name


GENERAL = [
    "How do I add an item to a set in Python?",
    "What is the main difference between Python 2 and 3?",
    "Wie sortiere ich eine Liste in Python?",
    "Как развернуть список в Python?",
    "What does the parser return?",  # `parse` is no typo of `parser`'s ending
]


@pytest.mark.parametrize("question", GENERAL)
def test_a_general_question_is_not_about_the_workspace(
    index: WorkspaceIndex, question: str
) -> None:
    assert not asked(question, index)


def test_a_run_of_ascii_letters_inside_a_longer_latin_word_names_no_definition(
    tmp_path: Path,
) -> None:
    """semver's jsdoc-truncate-de, "Füge der Funktion truncate in functions/truncate.js …
    Rückgabewert …", was handed to Claude as reaching three files: `R`, the first ASCII piece
    of `Rückgabewert`, is a constant of internal/re.js. A word with a letter beyond ASCII is
    a word of the sentence (`café` gives no `caf`); written as code, `R` is named."""
    files = {
        "functions/truncate.js": "const truncate = (v, t) => v\nmodule.exports = truncate\n",
        "internal/re.js": "let R = 0\nconst createToken = (name) => { R++ }\n",
        "lib/ops.js": "const caf = 'truncate the value'\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    index = WorkspaceIndex(tmp_path)
    index.refresh()
    request = (
        "Füge der Funktion truncate in functions/truncate.js einen JSDoc-Kommentar hinzu,"
        " der ihre Parameter und ihren Rückgabewert beschreibt."
    )
    assert asked(request, index).names == ("truncate",)
    assert asked("What value does truncate give at the café?", index).names == ("truncate",)
    assert asked("What is `R` in internal/re.js?", index).names == ("R",)  # as code, it is


def test_a_file_name_written_as_code_is_about_the_workspace(index: WorkspaceIndex) -> None:
    assert asked("Could you change `utils` so inc takes strings?", index).files
    assert not asked("which utils do you like?", index).files


@pytest.mark.parametrize(
    ("path", "before", "after", "label"),
    [
        (
            "a.js",
            "function f(a) {\n  return a;\n}\n",
            "function f(a {\n  return a;\n}\n",
            "JavaScript",
        ),
        ("a.ts", "const x: number = 1;\n", "const x: number = (1;\n", "TypeScript"),
        (
            "a.go",
            "package a\n\nfunc F() int { return 1 }\n",
            "package a\n\nfunc F() int { return 1\n",
            "Go",
        ),
        ("a.rs", "fn f() -> i32 { 1 }\n", "fn f( -> i32 { 1 }\n", "Rust"),
        (
            "A.java",
            "class A { int f() { return 1; } }\n",
            "class A { int f() { return 1; }\n",
            "Java",
        ),
    ],
)
def test_an_edit_that_breaks_a_file_of_any_language_is_caught(
    path: str, before: str, after: str, label: str
) -> None:
    said = broken_by_edit(path, before, after)
    assert said is not None and said.startswith(f"it no longer parses as {label} (line ")
    assert broken_by_edit(path, before, before.replace("1", "2")) is None
    assert check_kind(path) == f"{label} parses"


def test_an_edit_that_keeps_a_grammars_old_gap_passes() -> None:
    before = "const a = 1;\nconst b = (;\n"  # broken before the turn: no news
    assert broken_by_edit("x.js", before, before + "const c = 3;\n") is None


def _watch(**flags: bool) -> TurnWatch:
    tools = frozenset({"edit_file", "read_file", "search_text"})
    return TurnWatch(tools, cut_short=False, **flags)


def test_finish_changed_with_no_file_changed_gets_one_nudge_then_fails() -> None:
    watch = _watch()
    changed = finish_of({"intent": "change", "outcome": "changed", "answer": "Готово."})
    assert watch.final_reply("Готово.", reasoned=False, finish=changed) is not None
    ended = watch.final_reply("Готово.", reasoned=False, finish=changed)
    assert isinstance(ended, LocalGaveUp) and ended.signal is LocalSignal.EDIT_NOT_MADE


def test_a_change_asked_and_answered_in_words_gets_one_nudge_then_fails() -> None:
    """The model said the user asked for a change (`intent`), then answered in words."""
    watch = _watch()
    words = finish_of({"intent": "change", "outcome": "answered", "answer": "Use a guard."})
    assert watch.final_reply("Use a guard.", reasoned=False, finish=words) is not None
    ended = watch.final_reply("Use a guard.", reasoned=False, finish=words)
    assert isinstance(ended, LocalGaveUp) and ended.signal is LocalSignal.EDIT_NOT_MADE


@pytest.mark.parametrize(
    "text",
    [
        "Done: I added a null check to inc.",
        "Готово, я переименовал функцию.",
        "変更しました。",
        "Ich kann das nicht beantworten.",
    ],
)
def test_the_words_of_a_reply_decide_nothing(text: str) -> None:
    """A reply in words, with no `finish`: no phrase list reads it (issue 38); it is an
    answer, checked by its claims (`guided.answers`)."""
    assert _watch().final_reply(text, reasoned=False) is None


def test_a_change_claimed_after_a_denied_edit_says_the_edit_was_denied() -> None:
    watch = _watch()
    arguments = {"path": "src/utils.js", "old_text": "a + 1", "new_text": "a + 2"}
    watch.after_call("edit_file", arguments, is_error=False, denied=True, output="denied")
    changed = finish_of({"intent": "change", "outcome": "changed", "answer": "I changed it."})
    ended = watch.final_reply("I changed it.", reasoned=False, finish=changed)
    assert isinstance(ended, LocalGaveUp) and ended.signal is LocalSignal.EDIT_NOT_MADE
    assert "denied" in ended.detail and "src/utils.js" in ended.detail


class _Texts:
    """The files' texts as a `FileTexts` (what read-first reads through)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    async def text_of(self, path: str) -> str | None:
        file = self.root / path
        return file.read_text() if file.is_file() else None


async def test_read_first_brings_the_lines_of_a_named_definition_in_any_language(
    tmp_path: Path,
) -> None:
    """Read-first reads the definition a request names in JavaScript, Go and Rust (their
    parse), not the whole file nor nothing."""
    body = "\n".join(f"// filler {n}" for n in range(60))
    files = {
        "lib/queue.js": f"{body}\nfunction resumeNext() {{\n  return 1;\n}}\n{body}\n",
        "pkg/server.go": f"package pkg\n{body}\nfunc (s *Server) Start() error {{\n\treturn nil\n}}\n",
        "src/pad.rs": f"{body}\nfn pad_left(s: &str) -> String {{\n    s.to_owned()\n}}\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    index = WorkspaceIndex(tmp_path)
    index.refresh()
    texts = _Texts(tmp_path)
    for request, wanted, path in [
        ("Make resumeNext return 2", "function resumeNext()", "lib/queue.js"),
        (
            "Ändere Start so, dass es einen Fehler zurückgibt",
            "func (s *Server) Start()",
            "pkg/server.go",
        ),
        ("Переименуй pad_left в pad_start", "fn pad_left(", "src/pad.rs"),
    ]:
        read = await read_first(request, index, texts)
        assert read is not None, request
        assert wanted in read.text and "filler 10" not in read.text, read.text
        assert read.paths == (path,) or path in read.paths


INDEX_JS = """\
const {spawn} = require('cross-spawn')

function crossEnv(args) {
  const proc = spawn(args[0])
  process.on('SIGTERM', () => proc.kill('SIGTERM'))
  proc.on('exit', (code, signal) => {
    let crossEnvExitCode = code
    if (crossEnvExitCode === null) {
      crossEnvExitCode = signal === 'SIGINT' ? 0 : 1
    }
    process.exit(crossEnvExitCode)
  })
}
"""


def test_an_edit_away_from_what_the_request_names_is_no_change() -> None:
    """bench/real_tasks crossenv 'sigint-code-de': asked in German to change the SIGINT
    exit code, the model edited line 1; the SIGINT line stayed."""
    request = "Ändere in src/index.js den Exit-Code bei SIGINT von 0 auf 130."
    wrong = INDEX_JS.replace(
        "const {spawn} = require('cross-spawn')",
        "const {spawn} = require('cross-spawn'); process.on('SIGINT', () => process.exit(130))",
    )
    said = edits_elsewhere(request, {"src/index.js": (INDEX_JS, wrong)})
    assert said is not None and "SIGINT" in said and "src/index.js" in said
    right = INDEX_JS.replace("'SIGINT' ? 0 : 1", "'SIGINT' ? 130 : 1")
    assert edits_elsewhere(request, {"src/index.js": (INDEX_JS, right)}) is None
    # inside the definition the request names, a few lines from the name: an edit of it
    named = INDEX_JS.replace("let crossEnvExitCode = code", "let crossEnvExitCode = code ?? 0")
    assert (
        edits_elsewhere("Fix crossEnv", {"src/index.js": (INDEX_JS, named)}, ["crossEnv"]) is None
    )
    # a request naming nothing the file has says nothing
    assert edits_elsewhere("Add a helper", {"src/index.js": (INDEX_JS, wrong)}) is None


def test_an_edit_of_a_file_without_the_named_definitions_is_away() -> None:
    """python-slugify's "fix the root causes of slugify() … in all modules" was answered by
    an edit of LICENSE, which has no `slugify`: away from what the request names, unless
    the request names the file itself; a new file is never away."""
    license_text = "MIT License\n\nCopyright (c) the authors\n"
    edited = {"LICENSE": (license_text, license_text + "Permission is granted.\n")}
    request = "Fix the root causes in slugify() for every option."
    said = edits_elsewhere(request, edited, ["slugify"])
    assert said is not None and "LICENSE (it has none of slugify)" in said
    assert edits_elsewhere("Update the license of slugify()", edited, ["slugify"]) is None
    assert edits_elsewhere(request, {"notes.py": (None, "x = 1\n")}, ["slugify"]) is None
    assert edits_elsewhere("Fix the typo in the license", edited) is None


def test_a_loose_call_written_as_text_that_did_not_run_is_no_answer() -> None:
    watch = _watch()
    ended = watch.final_reply("read_file {'path': 'src/' in ..", reasoned=False)
    assert isinstance(ended, LocalGaveUp) and ended.signal is LocalSignal.UNRUNNABLE_CALL
    assert "a read_file call" in ended.detail


def test_a_copy_of_milks_look_is_judged_by_what_it_found() -> None:
    """Qwen2.5-Coder-1.5B answers "where is X defined?" with a copy of milk's look (bench
    crossenv): with the definition's line in it, it is an answer; a copy of a look that
    found nothing is none, and neither is a loose call that did not run."""
    found = (
        "search_text {'pattern': 'parseCommand'}:\nsrc/index.js:42: function parseCommand(args) {"
    )
    assert _watch().final_reply(found, reasoned=False) is None
    nothing = "search_text {'pattern': 'a|b'}:\nNo matches for 'a|b' in ."
    ended = _watch().final_reply(nothing, reasoned=False)
    assert isinstance(ended, LocalGaveUp) and ended.signal is LocalSignal.NO_ANSWER


SLUG = """\
import re

NUMBERS_PATTERN = re.compile(r"(?<=\\d),(?=\\d)")


def truncate(
    text: str,
    max_length: int = 0,
) -> str:
    return text[:max_length]


def slug(
    text: str,
    max_length: int = 0,
) -> str:
    text = NUMBERS_PATTERN.sub("", text)
    return truncate(text, max_length)
"""


async def _read(tmp_path: Path, files: dict[str, str], request: str) -> Any:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    index = WorkspaceIndex(tmp_path)
    index.refresh()
    return await read_first(request, index, _Texts(tmp_path))


async def test_read_first_reads_the_named_function_not_the_whole_file(tmp_path: Path) -> None:
    read = await _read(tmp_path, {"slug.py": SLUG}, "In slug.py what does truncate return?")
    region = "".join(SLUG.splitlines(keepends=True)[3:12]).rstrip("\n")
    assert "slug.py, lines 4-12 of 18:\n```\n" + region + "\n```" in read.text
    assert "def slug(" not in read.text
    call = read.events[0]
    assert call.name == "read_file" and call.input == {
        "path": "slug.py",
        "start_line": 4,
        "end_line": 12,
    }


async def test_a_module_level_name_is_read_with_the_lines_using_it_as_one_call(
    tmp_path: Path,
) -> None:
    """Its definition and the lines that use it: the model gets each region under its
    label, the user one read_file row for the file."""
    read = await _read(tmp_path, {"slug.py": SLUG}, "In slug.py rename NUMBERS_PATTERN to COMMA")
    lines = SLUG.splitlines()
    head, use = "\n".join(lines[0:5]).rstrip("\n"), "\n".join(lines[15:18])
    assert "slug.py, lines 1-5 of 18:\n```\n" + head + "\n```" in read.text
    assert "slug.py, lines 16-18 of 18:\n```\n" + use + "\n```" in read.text
    [call, result] = read.events
    assert call.input == {"path": "slug.py", "lines": "1-5, 16-18"}
    assert result.output == "lines 1-5:\n" + head + "\n\nlines 16-18:\n" + use


async def test_a_quoted_text_brings_its_lines_and_prose_is_no_use_of_a_name(
    tmp_path: Path,
) -> None:
    lines = [f"value_{n} = {n}\n" for n in range(40)]
    lines[20] = 'parser = make(description="Slug string")\n'
    read = await _read(
        tmp_path,
        {"cli.py": "".join(lines)},
        'In cli.py change the description from "Slug string" to "Make a slug".',
    )
    assert 'cli.py, lines 20-22 of 40:\n```\nvalue_19 = 19\nparser = make(description="Slug' in (
        read.text
    )
    assert "value_5 = 5" not in read.text
    sizes = (
        'suffixes = {"decimal": " kB"}\n\n\ndef size(n):\n    """Uses decimal suffixes."""\n\n'
        '    # the suffixes of the table\n    return str(n) + suffixes["decimal"]\n'
    )
    read = await _read(
        tmp_path, {"sizes.py": sizes}, "In sizes.py rename the module-level dict suffixes to X"
    )
    assert read.events[0].input == {"path": "sizes.py", "lines": "1-3, 7-8"}
