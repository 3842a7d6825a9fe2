"""The check of an agent turn's final answer (`guided.answers.AgentAnswers`, the same
`guided.verify.check_answer` as a guided answer's) over the workspace index
(`workspace/index.py`), on real files in a temporary folder.

Two directions, both counted: a right answer (a general one, one from what was read, one
naming what exists) is never flagged, and a wrong one naming files, functions or options
that do not exist is. No word of the answer decides: a path that does not exist is a false
claim whatever words surround it, unless `finish` declares it proposed. Then the index:
what it walks, skips, re-reads and never follows.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from milk_lsp.agents.local.judge.finish import finish_of
from milk_lsp.agents.local.judge.markup import markup_answer
from milk_lsp.guided.answers import AgentAnswers
from milk_lsp.workspace.index import WorkspaceIndex

CALC = '''\
"""A small calculator."""


def add(a, b):
    """Return the sum of a and b."""
    return a + b


def subtract(a, b):
    return a - b


class Calculator:
    def __init__(self):
        self.total = 0

    def add_value(self, value):
        self.total = add(self.total, value)
        return self.total
'''

CLI = """\
import argparse

from calc import add


def main(argv=None):
    parser = argparse.ArgumentParser(prog="calc")
    parser.add_argument("--precision", type=int, default=2)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    print(round(add(1, 2), args.precision))
"""

REPORT = """\
REPORT_WIDTH = 80


def render_report(rows):
    return "\\n".join(str(row).ljust(REPORT_WIDTH) for row in rows)
"""


def write(root: Path, relative: str, text: str | bytes) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def settle(index: WorkspaceIndex) -> None:
    """Refresh until nothing is read again: files written just before they were read are
    read once more (a write in the same timestamp tick would keep their stat)."""
    deadline = time.monotonic() + 5
    index.refresh()
    while index.files_read and time.monotonic() < deadline:
        time.sleep(0.05)
        index.refresh()
    assert index.files_read == 0


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    write(root, "calc.py", CALC)
    write(root, "cli.py", CLI)
    write(root, "pkg/__init__.py", "")
    write(root, "pkg/report.py", REPORT)
    write(
        root,
        "tests/test_calc.py",
        "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    )
    write(root, "docs/usage.md", "# Usage\n\nRun `python cli.py --precision 3`.\n")
    write(root, "README.md", "# calc\n\nA calculator.\n")
    write(root, ".gitignore", "build/\n*.log\n")
    write(root, "build/output.txt", "built_only_token\n")
    write(root, "assets/logo.png", b"\x89PNG\r\n\x1a\n\0\0\0binary_only_token")
    return root


@pytest.fixture
def index(workspace: Path) -> WorkspaceIndex:
    built = WorkspaceIndex(workspace)
    built.refresh()
    return built


def check(
    answer: str, index: WorkspaceIndex, *evidence: str, question: str = "what does it do?"
) -> tuple[str, ...]:
    """The problems the check finds in `answer` after tools showed `evidence`."""
    judged = AgentAnswers(question, question, index).judge(
        answer, list(evidence), looked=bool(evidence), finish=None
    )
    return judged.problems + ((judged.unseen,) if judged.unseen else ())


def flagged(problems: tuple[str, ...], *claims: str) -> bool:
    """Whether every claim is named by a problem (and there is one)."""
    said = " ".join(problems)
    return bool(problems) and all(claim in said for claim in claims)


# --- right answers: never flagged -----------------------------------------------------------

GENERAL = {
    "reverse a list": (
        "How do I reverse a list in Python?",
        "You can use `reversed(items)` to iterate backwards, slice with `items[::-1]` for a "
        "reversed copy, or reverse in place with `list.reverse()`:\n\n```python\n"
        "items = [1, 2, 3]\nitems.reverse()\nprint(items)  # [3, 2, 1]\n```\n",
    ),
    "sorted": (
        "How do I sort descending?",
        "Use `sorted(items, reverse=True)` for a new list or `items.sort(reverse=True)` in "
        "place. Both take a `key=` function, e.g. `key=len`.",
    ),
    "own example function": (
        "Write a function that reverses a list",
        "Here is one:\n\n```python\ndef reverse_list(values):\n    return values[::-1]\n```\n\n"
        "Then `reverse_list([1, 2, 3])` returns `[3, 2, 1]`; `values` is left unchanged.",
    ),
    "urls and versions": (
        "Where are list methods documented?",
        "See https://docs.python.org/3/library/stdtypes.html#mutable-sequence-types (Python "
        "3.12; the same since 3.8). www.python.org/downloads has v3.13.0 and 3.12.7.",
    ),
    "dict methods": (
        "How do I read a dict safely?",
        "Use `d.get(key, default)`, loop over `dict.items()`, or use "
        "`collections.defaultdict(list)` so missing keys get a default.",
    ),
    "pip options": (
        "How do I upgrade a package?",
        "Run `pip install --upgrade requests`, or `python -m pip install -U requests`.",
    ),
    "options of programs named by words": (
        "How do I build in parallel and page the output?",
        "Run make --jobs 4, or `make -j4`; pipe it to `less` and use find . -name '*.o' to "
        "list the objects.",
    ),
    "javascript": (
        "And in JavaScript?",
        "In JavaScript, `arr.reverse()` reverses in place; `console.log(arr)` prints it. "
        "Node.js 18+ and all browsers support `Array.prototype.toReversed()`.",
    ),
    "pathlib": (
        "How do I read a file?",
        "Use `Path('notes.txt').read_text()` from `pathlib`, or `with open('notes.txt') as f:` "
        "and `f.read()`; `json.loads(text)` parses JSON.",
    ),
    "strings": (
        "How do I join words?",
        "`' '.join(words)` joins them; `text.split()` and `str.strip()` go the other way.",
    ),
    "comprehension and lambda": (
        "How do I double every number?",
        "A comprehension: `[x * 2 for x in numbers]`, or `list(map(lambda x: x * 2, numbers))`.",
    ),
    "exceptions": (
        "How do I catch a bad int?",
        "Wrap it in `try`/`except ValueError`, and `raise` again with `from err` if needed.",
    ),
    "own example class": (
        "How do I write a class?",
        "```python\nclass Person:\n    def __init__(self, name):\n        self.name = name\n"
        "        self.nick_name = name[:3]\n```\n\n`__init__` sets `self.name` and "
        "`self.nick_name`; `Person('Ada').nick_name` is `'Ada'`.",
    ),
    "placeholders and env": (
        "How do I set the path?",
        "Set `PYTHONPATH`, then `my_list = load()` and `foo_bar()` work as in the docs. "
        "APIs, GPUs and JSON are fine.",
    ),
    "git": (
        "How do I fix my last commit?",
        "Run `git commit --amend`, then `git push --force-with-lease`.",
    ),
    "proposal": (
        "How should I structure a script?",
        "Create a new file `main.py` with a `parse_args()` function, for example "
        "`build_parser()` returning an `ArgumentParser`. A name, e.g. `load_rows()`, helps.",
    ),
}


@pytest.mark.parametrize(("question", "answer"), GENERAL.values(), ids=GENERAL.keys())
def test_a_general_answer_is_grounded(index: WorkspaceIndex, question: str, answer: str) -> None:
    judge = AgentAnswers(question, question, index)
    assert not judge.about_workspace
    assert judge.judge(answer, [], looked=False, finish=None).problems == ()


RIGHT = {
    "function in file": "The function `add` in calc.py returns `a + b`.",
    "dotted names": "`Calculator.add_value()` adds `value` to `self.total` using `calc.add`.",
    "option": "Run `python cli.py --precision 3` to round to three places.",
    "prose option": "The --verbose flag is parsed in cli.py by `main()`.",
    "module path": "`pkg.report.render_report` pads rows to `REPORT_WIDTH` columns.",
    "test file": "The test is tests/test_calc.py (`test_add`), run it with `pytest tests/`.",
    "folders": "See `docs/` and docs/usage.md:3; the package is in pkg/.",
    "dot slash and absolute": "It is ./calc.py, also {root}/pkg/report.py.",
    "ignored and binary files": "The build writes build/output.txt and the logo is assets/logo.png.",
    "markdown link": "See [the report](pkg/report.py) and **calc.py**.",
}


@pytest.mark.parametrize("answer", RIGHT.values(), ids=RIGHT.keys())
def test_an_answer_naming_what_exists_is_grounded(
    workspace: Path, index: WorkspaceIndex, answer: str
) -> None:
    assert check(answer.format(root=workspace), index, "calc.py\ncli.py") == ()


PROPOSED_OR_DENIED = {
    "denied en": (
        "There is no `compute_total()` function here, and `utils.py` does not exist; the sum "
        "is computed by `add` in calc.py."
    ),
    "denied de": (
        "Eine Funktion `compute_total()` gibt es hier nicht, und `utils.py` existiert nicht;"
        " die Summe berechnet `add` in calc.py."
    ),
    "denied ru": "Файл `utils.py` не существует; сумму считает `add` в calc.py.",
    "denied zh": "没有 `utils.py` 这个文件；求和由 calc.py 中的 `add` 完成。",
    "denied ja": "`utils.py` というファイルは存在しません。合計は calc.py の `add` が計算します。",
    "proposed de": "Lege zum Beispiel `utils.py` neu an und rufe dort `add` aus calc.py auf.",
    "proposed ru": "Например, создайте `utils.py` и вызовите в нём `add` из calc.py.",
    "after for example": "For example, `utils.py` could hold `add` (see calc.py).",
}


@pytest.mark.parametrize("answer", PROPOSED_OR_DENIED.values(), ids=PROPOSED_OR_DENIED.keys())
def test_a_path_not_here_is_a_claim_unless_declared_proposed(
    index: WorkspaceIndex, answer: str
) -> None:
    """Issue 38: no hedge of any language drops a claim; the `proposed` field of `finish`
    does, and the answer then shows the path as not in the workspace yet."""
    assert flagged(check(answer, index, "calc.py:1: def add(a, b):"), "utils.py")
    question = "what does it do?"
    proposed = finish_of({"outcome": "answered", "answer": answer, "proposed": ["utils.py"]})
    judged = AgentAnswers(question, question, index).judge(
        answer, ["calc.py:1: def add(a, b):"], looked=True, finish=proposed
    )
    assert judged.problems == () and judged.proposed == ("utils.py",)
    assert "Proposed, not in the workspace yet:\n- utils.py" in judged.sources


def test_a_citation_is_looked_up_in_its_file(index: WorkspaceIndex) -> None:
    """A quote found in its file is a source shown with the answer; a forged one is caught
    (the line number is a hint: the quote decides)."""
    question = "what does add return?"
    judge = AgentAnswers(question, question, index)
    cited = finish_of(
        {
            "intent": "question",
            "outcome": "answered",
            "answer": "`add` returns `a + b`.",
            "citations": [{"path": "calc.py", "line": 9, "quote": "return a + b"}],
        }
    )
    judged = judge.judge("`add` returns `a + b`.", ["def add(a, b):"], looked=True, finish=cited)
    assert judged.problems == ()
    assert [(c.path, c.line) for c in judged.citations] == [("calc.py", 6)]
    assert "Sources (checked by milk):\n- calc.py:6" in judged.sources
    forged = finish_of(
        {
            "outcome": "answered",
            "answer": "`add` returns `a * b`.",
            "citations": [{"path": "calc.py", "line": 6, "quote": "return a * b"}],
        }
    )
    judged = judge.judge("`add` returns `a * b`.", ["def add(a, b):"], looked=True, finish=forged)
    assert flagged(judged.problems, "return a * b", "calc.py")


def test_a_long_agent_answer_is_judged_not_refused(index: WorkspaceIndex) -> None:
    """The reply shape's length limits bound a guided model's reply; an agent's final answer
    of 3,000 characters and more is judged as any other (it had ended the turn with an
    internal error)."""
    question = "what does add return?"
    long = "`add` returns `a + b`. " + "It adds its two arguments together. " * 120
    cited = finish_of(
        {
            "intent": "question",
            "outcome": "answered",
            "answer": long,
            "citations": [{"path": "calc.py", "line": 6, "quote": "return a + b"}],
        }
    )
    judged = AgentAnswers(question, question, index).judge(
        long, ["def add(a, b):"], looked=True, finish=cited
    )
    assert len(long) > 4000 and judged.problems == ()


NO_CLAIMS = {
    "virtual environment": "Make one with `python -m venv .venv`, then `source .venv/bin/activate`.",
    "conventional files": "Add it to `requirements.txt`, or to pyproject.toml under dependencies.",
    "products with extensions": "llama.cpp serves it; Node.js and socket.io talk to it.",
    "method names with slashes": "The client sends `milk/turn/undo`, then textDocument/didOpen.",
    "models": "Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF works; and/or a bigger one.",
    "attributes that look like files": "`math.log(x)`, `console.log`, `unittest.mock.patch`.",
    "generic options": "Run it with `--help` to see the rest, or `--version`.",
    "a digest": "Pinned at `f86cb2c1fa58255f`.",
    "a search that found nothing": "I searched for `compute_total` but found nothing.",
    "absolute paths": "Edit ~/.config/app/settings.toml or /etc/hosts.",
    "going up": "It is in ../other_project/main.py.",
    "prose words": "The calculator adds two numbers and returns the result to the caller.",
}


@pytest.mark.parametrize("answer", NO_CLAIMS.values(), ids=NO_CLAIMS.keys())
def test_what_claims_nothing_about_the_workspace(index: WorkspaceIndex, answer: str) -> None:
    assert check(answer, index, "calc.py\ncli.py") == ()


def test_the_question_grounds_what_it_names(index: WorkspaceIndex) -> None:
    question = "Should I rename `compute_total` to `sum_all`?"
    answer = "Yes, `compute_total` should become `sum_all`."
    assert check(answer, index, "calc.py", question=question) == ()


# --- wrong answers: caught ------------------------------------------------------------------

WRONG = {
    "missing folder": ("`src/app.py` defines the entry point.", ("src/app.py",)),
    "missing function": (
        "The total is computed by `compute_total()` in calc.py.",
        ("compute_total",),
    ),
    "missing module": (
        "The helpers are in the `utils` module (`utils.py`).",
        ("utils.py",),
    ),
    "missing option": ("Pass `--frobnicate` to cli.py to enable it.", ("--frobnicate",)),
    "missing prose option": ("Start it with --frobnicate and it works.", ("--frobnicate",)),
    "missing option with a value": ("Set `--frobnicate 3` for speed.", ("--frobnicate",)),
    "missing option in a command": (
        "Run `python cli.py --frobnicate 3`.",
        ("--frobnicate",),
    ),
    "missing method": ("Call `Calculator.multiply_all()` first.", ("Calculator.multiply_all",)),
    "missing file in a package": ("It lives in pkg/helpers.py.", ("pkg/helpers.py",)),
    "missing class with a typo": ("The `Calculater` class adds it.", ("Calculater",)),
    "a typo of a definition": ("`Calculater` keeps the total.", ("Calculater",)),
    # begins as a definition here does (`REPORT_WIDTH`): a made-up class of this code
    "a class made of a definition's start": (
        "The `ReportBuilder` class builds it.",
        ("ReportBuilder",),
    ),
    "a name made of a definition": ("`render_report_rows()` renders it.", ("render_report_rows",)),
    # bench/real_tasks 'cli-word-boundary' (Qwen2.5-Coder-1.5B): "or less" names no program
    "missing option on a line with 'less'": (
        "To truncate to complete words using the calc CLI, you can use the `--max-word-length` "
        "option. For example, to keep words that are 5 characters or less, use:\n\n"
        "```sh\ncalc --max-word-length 5\n```",
        ("--max-word-length",),
    ),
    "missing prose option near 'make'": (
        "That will make the output shorter: pass --frobnicate to cli.py.",
        ("--frobnicate",),
    ),
}


@pytest.mark.parametrize(("answer", "missing"), WRONG.values(), ids=WRONG.keys())
def test_an_answer_naming_what_does_not_exist_is_caught(
    index: WorkspaceIndex, answer: str, missing: tuple[str, ...]
) -> None:
    assert flagged(check(answer, index, "calc.py\ncli.py"), *missing)


OUTSIDE_KNOWLEDGE = {
    "names near nothing here, in no file": "It calls load_settings and then ReportBuilder.render.",
    "TypeScript": "Cancel it with an `AbortController` and log `unhandledRejection` events.",
    "Go": "It returns `context.DeadlineExceeded`; check it with `errors.Is(err, ctx.Err())`.",
    "Rust": "Use `entry(key).or_insert_with(Vec::new)` and `Option::map_or`.",
    "a term": "Bounded quantifiers guard the pattern against ReDoS.",
}


@pytest.mark.parametrize("answer", OUTSIDE_KNOWLEDGE.values(), ids=OUTSIDE_KNOWLEDGE.keys())
def test_a_name_near_nothing_here_and_in_no_file_of_it_is_outside_knowledge(
    index: WorkspaceIndex, answer: str
) -> None:
    """Issue 29: a name that resolves nowhere, is near no definition of this workspace and
    is put in none of its files claims nothing about it (no list of well-known names)."""
    assert check(answer, index, "calc.py\ncli.py") == ()


def test_an_answer_after_a_failed_search_is_caught(index: WorkspaceIndex) -> None:
    problems = check(
        "The app is defined in src/main.py by `create_app()`.", index, "Directory not found: src"
    )
    assert flagged(problems, "src/main.py")


def test_a_name_defined_here_but_never_shown_passes_an_agent_answer(index: WorkspaceIndex) -> None:
    """What this workspace defines, named by an agent that read it in an earlier turn, is
    true: its tools' results are the evidence, the index the rest (a guided answer must
    rest on the lines milk showed it)."""
    assert check("`Calculator.add_value` keeps the total.", index, "README.md") == ()


def test_a_truncated_or_unrefreshed_index_proves_no_absence(workspace: Path) -> None:
    small = WorkspaceIndex(workspace, max_files=2)
    small.refresh()
    assert small.truncated
    assert small.files == 2
    assert check("`src/app.py` defines `compute_total()`.", small, "x") == ()
    assert check("`src/app.py` defines `compute_total()`.", WorkspaceIndex(workspace), "x") == ()


# --- markup -------------------------------------------------------------------------------

MARKUP = {
    "empty tools": "<tools></tools>",
    "tool call": '<tool_call>\n{"name": "read_file", "arguments": {"path": "calc.py"}}\n</tool_call>',
    "im_start": "<|im_start|>assistant",
    "endoftext": "<|endoftext|>",
    "tool response": "<tool_response>\nNo matches.\n</tool_response>",
    "mistral": '[TOOL_CALLS][{"name": "search_text", "arguments": {"pattern": "add"}}]',
    "a few words and an unclosed call": (
        'Let me read it.\n<tool_call>\n{"name": "read_file", "arguments": {"path": "calc.py"}}'
    ),
}


@pytest.mark.parametrize("answer", MARKUP.values(), ids=MARKUP.keys())
def test_markup_as_the_answer_is_caught(answer: str) -> None:
    description = markup_answer(answer)
    assert description is not None
    assert "markup" in description


NOT_MARKUP = {
    "mentioned in a span": "Qwen writes tool calls inside `<tool_call>` tags.",
    "in a fence": "The template ends a turn with:\n\n```\n<|im_end|>\n<tools></tools>\n```",
    "plain answer": "The function `add` in calc.py returns `a + b`.",
    "prose around": "Qwen wraps each call in <tool_call> tags, and the server parses them out.",
    "a stray end token": "The function `add` in calc.py returns the sum of its two arguments.<|im_end|>",
}


@pytest.mark.parametrize("answer", NOT_MARKUP.values(), ids=NOT_MARKUP.keys())
def test_an_answer_that_mentions_markup_is_not_markup(answer: str) -> None:
    assert markup_answer(answer) is None


# --- questions ----------------------------------------------------------------------------

ABOUT = {
    "How do I reverse a list in Python?": False,
    "What is a decorator function?": False,
    "what does `add` in calc.py return?": True,
    "What does the add function do?": False,  # a short plain word stands for no name
    "How does --precision work?": True,
    "Explain `Calculator`.": True,
    "What does this project do?": False,  # no phrase decides: it names nothing here
    "what does `compute_total` return?": False,
    "What's the difference between a class method and a static method?": False,
    "How do I write a function that reverses a list?": False,
    "What is the default value of the precision parameter of main?": True,
    "Which option of the render_report command pads the rows?": True,
    "How do I add an item to a set in Python?": False,
}


@pytest.mark.parametrize(("question", "about"), ABOUT.items(), ids=list(ABOUT))
def test_about_the_workspace_is_decided_by_the_workspace(
    index: WorkspaceIndex, question: str, about: bool
) -> None:
    assert AgentAnswers(question, question, index).about_workspace is about


def test_the_same_question_is_general_on_another_workspace(tmp_path: Path) -> None:
    empty = WorkspaceIndex(tmp_path)
    empty.refresh()
    question = "what does `add` in calc.py return?"
    assert not AgentAnswers(question, question, empty).about_workspace


# --- the index ----------------------------------------------------------------------------


def test_the_index_knows_paths_names_and_options(workspace: Path, index: WorkspaceIndex) -> None:
    assert index.files == 9  # build/ is ignored: not entered, known as a folder
    assert index.refreshed_at is not None
    for path in ("calc.py", "./calc.py", "pkg/report.py", "report.py", "pkg/", "pkg", "docs/"):
        assert index.has_path(path), path
    assert index.has_path(str(workspace / "pkg" / "report.py"))
    assert index.has_path("calc.py:12")
    for path in ("src/app.py", "app.py", "calc.py/", "../project/calc.py", "/etc/passwd", ""):
        assert not index.has_path(path), path
    for name in ("add", "Calculator", "pkg.report", "calc.add", "self.total", "REPORT_WIDTH"):
        assert index.has_name(name), name
    assert not index.has_name("compute_total")
    assert index.has_option("--precision")
    assert index.has_option("--precision=3")
    assert not index.has_option("--frobnicate")
    assert not index.has_option("precision")


def test_symlinks_are_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write(outside, "secret.py", "outside_secret_token = 1\n")
    root = tmp_path / "root"
    write(root, "inside.py", "inside_token = 1\n")
    (root / "linked_dir").symlink_to(outside, target_is_directory=True)
    (root / "linked_file.py").symlink_to(outside / "secret.py")
    index = WorkspaceIndex(root)
    index.refresh()
    assert index.has_name("inside_token")
    assert not index.has_name("outside_secret_token")
    assert not index.has_path("linked_dir/secret.py")
    assert index.has_path("linked_file.py")  # the link exists; what it points at is not read


def test_a_symlinked_root_is_walked_as_its_target(tmp_path: Path) -> None:
    real = tmp_path / "real"
    write(real, "a.py", "real_token = 1\n")
    (tmp_path / "alias").symlink_to(real, target_is_directory=True)
    index = WorkspaceIndex(tmp_path / "alias")
    index.refresh()
    assert index.has_name("real_token")
    assert index.has_path(str(tmp_path / "alias" / "a.py"))


def test_gitignore_and_skipped_folders_are_not_read(workspace: Path, index: WorkspaceIndex) -> None:
    write(workspace, "node_modules/lib/index.js", "node_token = 1\n")
    write(workspace, ".venv/lib/site.py", "venv_token = 1\n")
    write(workspace, ".git/config", "git_token = 1\n")
    write(workspace, "pkg/__pycache__/report.cpython-311.pyc", "pycache_token = 1\n")
    write(workspace, "debug.log", "log_token = 1\n")
    index.refresh()
    for token in ("built_only_token", "node_token", "venv_token", "git_token", "log_token"):
        assert not index.has_name(token), token
    assert not index.has_name("pycache_token")
    # what is skipped still exists: an answer naming it is right
    for path in ("build/output.txt", "debug.log", "node_modules/", ".venv/bin/python"):
        assert index.has_path(path), path


def test_binary_and_oversize_files_are_not_read(tmp_path: Path) -> None:
    write(tmp_path, "small.py", "small_token = 1\n")
    write(tmp_path, "big.py", "big_token = 1\n" + "x" * 2000)
    write(tmp_path, "data.bin", b"bin_token\0\1\2")
    index = WorkspaceIndex(tmp_path, max_file_bytes=1000)
    index.refresh()
    assert index.has_name("small_token")
    assert not index.has_name("big_token")
    assert not index.has_name("bin_token")
    assert index.has_path("big.py") and index.has_path("data.bin")


def test_a_changed_file_is_read_again_and_a_removed_one_drops_out(tmp_path: Path) -> None:
    first = write(tmp_path, "a.py", "def old_name():\n    pass\n")
    second = write(tmp_path, "b.py", "def kept_name():\n    pass\n")
    index = WorkspaceIndex(tmp_path)
    index.refresh()
    assert index.files_read == 2
    settle(index)
    assert index.has_name("old_name")
    first.write_text("def new_name():\n    pass\n")  # the same size
    index.refresh()
    assert index.files_read == 1
    assert index.has_name("new_name")
    assert not index.has_name("old_name")
    second.unlink()
    index.refresh()
    assert not index.has_name("kept_name")
    assert not index.has_path("b.py")
    assert index.files == 1


def test_a_token_in_two_files_stays_until_both_lose_it(tmp_path: Path) -> None:
    first = write(tmp_path, "a.py", "shared_token = 1\n")
    write(tmp_path, "b.py", "shared_token = 2\n")
    index = WorkspaceIndex(tmp_path)
    index.refresh()
    first.unlink()
    index.refresh()
    assert index.has_name("shared_token")
    (tmp_path / "b.py").unlink()
    index.refresh()
    assert not index.has_name("shared_token")


def test_an_unreadable_file_is_skipped(tmp_path: Path) -> None:
    locked = write(tmp_path, "locked.py", "locked_token = 1\n")
    write(tmp_path, "open.py", "open_token = 1\n")
    locked.chmod(0)
    try:
        if os.access(locked, os.R_OK):
            pytest.skip("running as root: a file with mode 000 is still readable")
        index = WorkspaceIndex(tmp_path)
        index.refresh()
        assert index.has_name("open_token")
        assert not index.has_name("locked_token")
        assert index.has_path("locked.py")
    finally:
        locked.chmod(0o644)


def test_a_fifo_does_not_block_the_walk(tmp_path: Path) -> None:
    write(tmp_path, "a.py", "a_token = 1\n")
    os.mkfifo(tmp_path / "pipe.py")
    index = WorkspaceIndex(tmp_path)
    index.refresh()
    assert index.has_name("a_token")
    assert index.files == 1


def test_a_missing_root_leaves_an_empty_index(tmp_path: Path) -> None:
    index = WorkspaceIndex(tmp_path / "gone")
    index.refresh()
    assert index.files == 0
    assert not index.has_path("a.py")


def test_questions_while_another_thread_refreshes(tmp_path: Path) -> None:
    for n in range(200):
        write(tmp_path, f"pkg{n % 10}/mod{n}.py", f"def stable_name():\n    value_{n} = {n}\n")
    index = WorkspaceIndex(tmp_path)
    index.refresh()
    errors: list[BaseException] = []

    def refresh_often() -> None:
        try:
            for n in range(20):
                write(tmp_path, f"pkg0/mod{n}.py", f"def stable_name():\n    changed_{n} = 1\n")
                index.refresh()
        except BaseException as exc:  # the test reports it
            errors.append(exc)

    worker = threading.Thread(target=refresh_often)
    worker.start()
    while worker.is_alive():
        assert index.has_name("stable_name")
        assert index.has_path("pkg3/mod3.py")
    worker.join()
    assert errors == []
    assert index.has_name("changed_19")


# ---- the turn's judge ----------------------------------------------------------------------


def test_the_judge_leaves_a_general_answer_alone_but_checks_an_option_of_code(
    index: WorkspaceIndex,
) -> None:
    general = AgentAnswers("How do I reverse a list?", "How do I reverse a list?", index)
    judged = general.judge("Use `items[::-1]` or `reversed(items)`.", [], looked=False, finish=None)
    assert judged.claims == 0 and judged.problems == ()
    # "which option of `cli.py` keeps upper case?": a wrong flag of this CLI is caught
    question = "Which option of `cli.py` rounds?"
    asked = AgentAnswers(question, question, index)
    judged = asked.judge("Use the `--lowercase` option.", [], looked=False, finish=None)
    assert flagged(judged.problems, "--lowercase")
    assert asked.judge("Use `--precision`.", [], looked=False, finish=None).problems == ()


async def test_milks_own_look_lists_the_top_folder_when_the_question_names_nothing(
    index: WorkspaceIndex,
) -> None:
    class Tools:
        def __init__(self) -> None:
            self.calls: list[tuple[str, dict[str, object]]] = []

        async def call(self, tool_call_id: str, name: str, arguments: dict[str, object]) -> object:
            self.calls.append((name, arguments))

            class Outcome:
                output = "calc.py\ncli.py"
                is_error = False

            return Outcome()

    tools = Tools()
    judge = AgentAnswers("What does this project do?", "", index, tools=tools)  # type: ignore[arg-type]
    looked = await judge.look()
    assert tools.calls == [("list_directory", {"path": "."})]
    assert looked.found and "calc.py" in looked.message


def test_an_answer_about_a_name_the_model_never_saw_is_a_guess(index: WorkspaceIndex) -> None:
    question = "What is the default value of the precision parameter of main?"
    answer = "It is not stated explicitly; it is probably 3."
    judge = AgentAnswers(question, question, index)
    listing = "calc.py\ncli.py\nreport.py"
    unseen = judge.judge(answer, [listing], looked=True, finish=None).unseen
    assert "main" in str(unseen)
    # a search for the parameter that shows a line of the file defining main
    searched = "cli.py:7:     parser.add_argument('--precision', type=int, default=2)"
    assert judge.judge("It is 2.", [searched], looked=True, finish=None).unseen is None
    read = "def main(argv=None):\n    parser.add_argument('--precision', default=2)"
    assert judge.judge("It is 2.", [read], looked=True, finish=None).unseen is None
    attached = f"{question}\n\n<attachment cli.py>\n{read}\n</attachment>"
    from_selection = AgentAnswers(question, attached, index)
    assert from_selection.judge("It is 2.", [], looked=False, finish=None).unseen is None


# ---- an agent's answer in the cited shape ------------------------------------------------

CITED_SHAPE = [
    # (question, answer, the places milk cites; () when the answer rests on nothing new)
    ("What does add in calc.py return?", "It returns `a + b`.", ("calc.py:6",)),
    ("Was gibt add zurück?", "Die Summe: `return a + b`.", ("calc.py:6",)),
    ("add は何を返しますか？", "`add` は `a + b` を返します。", ("calc.py:6",)),
    (
        "Что делает Calculator?",
        "Хранит `self.total` и прибавляет через `add_value()`.",
        ("calc.py:15", "calc.py:17"),
    ),
    (
        "How wide is a report row?",
        "`REPORT_WIDTH` is 80: rows are `ljust`ed to it.",
        ("pkg/report.py:1", "pkg/report.py:5"),
    ),
    ("Where is main defined?", "In `cli.py`.", ()),
    # a rewrite kept as a block: the lines of it the file has are cited
    (
        "How would add take three numbers?",
        '```python\ndef add(a, b, c=0):\n    """Return the sum of a and b."""\n    return a + b + c\n```',
        ("calc.py:5",),
    ),
]


READS = [
    f"{CALC}\n[calc.py: lines 1-20 of 20]",
    f"{CLI}\n[cli.py: lines 1-11 of 11]",
    f"{REPORT}\n[pkg/report.py: lines 1-5 of 5]",
]
"""What read_file showed the model: each file's text, then its place."""


@pytest.mark.parametrize(("question", "answer", "places"), CITED_SHAPE)
def test_milk_cites_the_code_a_plain_agent_answer_quotes(
    index: WorkspaceIndex, question: str, answer: str, places: tuple[str, ...]
) -> None:
    """Issue 38: every local answer that ends as done shows its sources, each checked. An
    agent's plain answer quoting the file's own code is cited by milk (a `finish` need
    not repeat it); a file the request did not name is evidence too."""
    judged = AgentAnswers(question, question, index).judge(answer, READS, looked=True, finish=None)
    assert tuple(f"{c.path}:{c.line}" for c in judged.citations) == places
    assert not judged.uncited, judged
    assert judged.problems == (), judged.problems


UNCITED = [
    # code written about the workspace that no file here holds, the request's own names
    # aside, in any language: nothing the answer rests on checks
    ("What does the Calculator class in calc.py do?", "It keeps a total; `compute_total()`."),
    ("Was gibt add in calc.py zurück?", "Es gibt `add.result` zurück."),
    ("calc.py の add は何を返しますか？", "`sum_of(a, b)` を返します。"),
    ("Что делает add в calc.py?", "Она вызывает `calc.total_sum()`."),
    ("What prefix must an option of cli.py have?", "It must start with `++`."),
]
PROSE = [
    # prose alone: a right answer and a non-answer differ only in words, so neither is held
    # to the shape (milk cites what it can; the checks above still run)
    ("What does greet return?", "greet returns hello."),
    ("Was macht die Option --precision von cli.py?", "Dazu habe ich nicht genug Informationen."),
    ("Что делает add в calc.py?", "Функция add в calc.py складывает."),
]


@pytest.mark.parametrize(("question", "answer"), PROSE)
def test_prose_alone_is_not_held_to_the_cited_shape(
    index: WorkspaceIndex, question: str, answer: str
) -> None:
    judged = AgentAnswers(question, question, index).judge(answer, READS, looked=True, finish=None)
    assert not judged.uncited, judged


@pytest.mark.parametrize(("question", "answer"), UNCITED)
def test_an_agent_answer_resting_on_nothing_new_is_not_in_the_cited_shape(
    index: WorkspaceIndex, question: str, answer: str
) -> None:
    judged = AgentAnswers(question, question, index).judge(answer, READS, looked=True, finish=None)
    assert judged.uncited and judged.citations == (), judged
    # the same answer with a `finish` citing a line of the file is in the shape
    cited = finish_of(
        {
            "intent": "question",
            "outcome": "answered",
            "answer": answer,
            "citations": [{"path": "calc.py", "line": 6, "quote": "return a + b"}],
        }
    )
    judged = AgentAnswers(question, question, index).judge(answer, READS, looked=True, finish=cited)
    assert not judged.uncited and [c.line for c in judged.citations] == [6]


def test_a_general_answer_needs_no_citation(index: WorkspaceIndex) -> None:
    question = "How do I reverse a list?"
    judged = AgentAnswers(question, question, index).judge(
        "Use `items[::-1]`.", [], looked=False, finish=None
    )
    assert not judged.uncited and judged.citations == ()
