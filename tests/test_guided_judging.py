"""The guided turn's locate and verify steps on real code (tests/data/judging: Python, JavaScript,
Go, Rust), asked in seven human languages: what the request is about is located, a right
reply passes, a wrong one is caught, and no word of either decides it."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from milk_lsp.guided.locate import Budget, DiskTexts, Located, Locator
from milk_lsp.guided.shape import GuidedReply, NotTheShape, parse_intent, parse_reply, parse_size
from milk_lsp.guided.strategy import choose, model_billions
from milk_lsp.guided.verify import check_answer, find_quote
from milk_lsp.guided.words import terms
from milk_lsp.workspace.index import WorkspaceIndex

DATA = Path(__file__).parent / "data" / "judging"


def workspace(tmp_path: Path, project: str) -> tuple[WorkspaceIndex, Locator, DiskTexts]:
    root = tmp_path / project
    shutil.copytree(DATA / project, root, ignore=shutil.ignore_patterns("SOURCE.md"))
    index = WorkspaceIndex(root)
    index.refresh()
    return index, Locator(index), DiskTexts(root)


def locate(tmp_path: Path, project: str, question: str) -> tuple[WorkspaceIndex, Located]:
    index, locator, texts = workspace(tmp_path, project)
    return index, asyncio.run(locator.locate(question, texts, Budget()))


def answer(text: str, *cited: tuple[str, int, str], proposed: list[str] | None = None) -> Any:
    return GuidedReply(
        kind="answer",
        answer=text,
        citations=[{"path": p, "line": n, "quote": q} for p, n, q in cited],  # type: ignore[misc]
        proposed=proposed or [],
    )


# project, question, the file and a line its located context must hold
LOCATED = [
    ("go-uuid", "Which version does NewRandom produce?", "version4.go", "func NewRandom()"),
    ("go-uuid", "NewRandom は何を返しますか？", "version4.go", "func NewRandom()"),
    ("go-uuid", "Какую версию даёт NewSHA1?", "hash.go", "func NewSHA1("),
    ("javascript-ms", "Wie lang darf der String für parse höchstens sein?", "index.js", "100"),
    ("javascript-ms", "¿Qué hace la función plural?", "index.js", "function plural("),
    ("python-isodate", "Où est définie ISO8601Error ?", "isodate/isoerror.py", "ISO8601Error"),
    ("python-isodate", "parse_duration 的默认参数是什么？", "isodate/isoduration.py", "def parse_"),
    ("rust-semver", "How are prerelease versions matched by a requirement?", "src/eval.rs", "pre"),
]


@pytest.mark.parametrize(("project", "question", "path", "line"), LOCATED)
def test_the_code_a_question_is_about_is_located(
    tmp_path: Path, project: str, question: str, path: str, line: str
) -> None:
    _, located = locate(tmp_path, project, question)
    assert path in located.paths, located.context()[:500]
    assert any(line in text for chunk in located.chunks for text in chunk.lines)
    assert len(located.context()) <= Budget().chunks + Budget().map + 2000


def located_in(root: Path, files: dict[str, str], request: str) -> Located:
    """`request` located in a workspace of `files` laid out under `root`."""
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    index = WorkspaceIndex(root)
    index.refresh()
    return asyncio.run(Locator(index).locate(request, DiskTexts(root), Budget()))


def shown_lines(located: Located) -> set[tuple[str, int]]:
    return {
        (chunk.path, number)
        for chunk in located.chunks
        for number in range(chunk.first, chunk.last + 1)
    }


ENV_OPTIONS_JS = (
    "// options from the environment\nconst options = {}\n\n"
    + "".join(
        f"if (process.env.CONFIG_{key.upper()} != null) {{\n"
        f"  options.{key} = process.env.CONFIG_{key.upper()}\n}}\n\n"
        for key in ("encoding", "path", "debug", "override")
    )
    + "module.exports = options\n"
)


@pytest.mark.parametrize(
    "request_text",
    [
        "In lib/env-options.js also read CONFIG_QUIET into options.quiet, like the others.",
        "Lies in lib/env-options.js auch CONFIG_QUIET in options.quiet ein.",
        "在 env-options.js 里也把 CONFIG_QUIET 读进 options.quiet。",
    ],
)
def test_a_named_file_is_shown_from_its_head_beyond_one_named_definition(
    tmp_path: Path, request_text: str
) -> None:
    """dotenv's `lib/env-options.js` (a hyphen in its name) was not read as named, and only
    its line `const options = {}` (the definition `options.quiet` names) was shown: the
    model wrote the new option in a shape of its own, not as the others are read."""
    located = located_in(tmp_path, {"lib/env-options.js": ENV_OPTIONS_JS}, request_text)
    assert "lib/env-options.js" in located.files
    shown = "\n".join(line for chunk in located.chunks for line in chunk.lines)
    assert "options.encoding = process.env.CONFIG_ENCODING" in shown
    assert "options.override = process.env.CONFIG_OVERRIDE" in shown


SHORT_DEFINITIONS = {
    "src/variable.js": (
        "const isWindows = require('./is-windows')\n\n"
        "const pathLikeEnvVarWhitelist = new Set(['PATH', 'NODE_PATH'])\n\n"
        + "// filler\n"
        * 8
        + "function replaceListDelimiters(varValue, varName = '') {\n"
        "  const targetSeparator = isWindows() ? ';' : ':'\n"
        "  if (!pathLikeEnvVarWhitelist.has(varName)) {\n    return varValue\n  }\n"
        "  return varValue.replace(/:/g, targetSeparator)\n}\n"
    ),
    "conf/limits.py": (
        "import os\n\nMAX_NESTING_LEVEL = 32\n\n"
        + "# filler\n" * 12
        + "def check_nesting(level):\n    if level > MAX_NESTING_LEVEL:\n"
        "        raise ValueError('too deep')\n"
    ),
    "pool/pool.go": (
        "package pool\n\nconst randPoolSize = 16 * 16\n\n"
        + "// filler\n" * 12
        + "func fillPool(pool []byte) int {\n\tif len(pool) < randPoolSize {\n"
        "\t\treturn 0\n\t}\n\treturn len(pool)\n}\n"
    ),
}


def crowded(words: str) -> dict[str, str]:
    """Notes whose every line holds the request's words: they outrank any line of code."""
    return {
        f"notes/n{number}.md": "".join(f"{words} ({number}.{line})\n" for line in range(30))
        for number in range(8)
    }


@pytest.mark.parametrize(
    ("request_text", "path", "line", "words"),
    [
        (
            "Which env vars does replaceListDelimiters turn into lists on Windows?",
            "src/variable.js",
            3,
            "which env vars turn into lists on Windows replace delimiters",
        ),
        (
            "Wie tief darf die Verschachtelung in check_nesting höchstens sein?",
            "conf/limits.py",
            3,
            "check nesting check_nesting nesting check",
        ),
        (
            "fillPool はプールの大きさが足りないとき何を返しますか？",
            "pool/pool.go",
            3,
            "fill pool fillPool pool fill",
        ),
    ],
)
def test_a_short_definition_a_located_definition_uses_is_shown_with_it(
    tmp_path: Path, request_text: str, path: str, line: int, words: str
) -> None:
    """cross-env's `if (!pathLikeEnvVarWhitelist.has(varName))` was shown, and not the line
    defining the set, whose value was the answer: lines that outrank it fill the budget."""
    located = located_in(tmp_path, {**SHORT_DEFINITIONS, **crowded(words)}, request_text)
    assert (path, line) in shown_lines(located), located.context()


def test_a_questions_own_words_weigh_half_of_the_codes(tmp_path: Path) -> None:
    """A term no definition's name holds weighs half: a question's own words ("which",
    "into") are rare in code files, and cross-env's README and LICENSE, full of them, had
    filled the budget before `variable.js`."""
    (tmp_path / "a.md").write_text("Which one is it?\n")
    (tmp_path / "b.py").write_text("def check_nesting(level):\n    return level\n")
    (tmp_path / "c.txt").write_text("nothing here\n")
    index = WorkspaceIndex(tmp_path)
    index.refresh()
    weights = Locator(index).weights("which nesting")
    assert weights["which"] == pytest.approx(weights["nest"] / 2)


def test_a_renamed_definitions_uses_are_located_each_with_a_line_around(tmp_path: Path) -> None:
    _, located = locate(tmp_path, "go-uuid", "Переименуй NewHash в MakeHash везде.")
    shown = {
        (chunk.path, number)
        for chunk in located.chunks
        for number in range(chunk.first, chunk.last + 1)
    }
    assert {("hash.go", 27), ("hash.go", 44), ("hash.go", 52)} <= shown, located.context()
    assert any(chunk.why == "uses NewHash" for chunk in located.chunks)


# good replies: none may be flagged
GOOD = [
    (
        "go-uuid",
        "Какую версию даёт NewSHA1?",
        answer(  # lines joined into one, the end left out: each piece is the file's text
            "5: `NewSHA1` passes 5 to `NewHash`.",
            (
                "hash.go",
                48,
                "func NewSHA1(space UUID, data []byte) UUID { return NewHash(sha1.New(), space, …",
            ),
        ),
    ),
    (
        "go-uuid",
        "Welche Version erzeugt NewRandom?",
        answer(  # the right quote under another shown file's name: the citation moves
            "Version 4, set in `NewRandomFromReader`.",
            ("hash.go", 53, "uuid[6] = (uuid[6] & 0x0f) | 0x40 // Version 4"),
        ),
    ),
    (
        "go-uuid",
        "Welche Version erzeugt NewRandom?",
        answer(
            "Version 4: `NewRandomFromReader` sets the version bits in `version4.go`.",
            ("version4.go", 53, "uuid[6] = (uuid[6] & 0x0f) | 0x40 // Version 4"),
        ),
    ),
    (
        "go-uuid",
        "NewRandom 生成哪个版本？",
        answer(
            "版本 4（`NewRandom` 调用 `NewRandomFromReader`）。",
            ("version4.go", 40, "func NewRandom() (UUID, error) {"),
        ),
    ),
    (
        "javascript-ms",
        "Какая максимальная длина строки у parse?",
        answer(
            "100 characters: `parse` returns nothing for a longer `str`.",
            ("index.js", 50, "if (str.length > 100) {"),
        ),
    ),
    (
        "python-isodate",
        "Where is ISO8601Error defined?",
        answer(
            "In `isodate/isoerror.py`: `ISO8601Error` subclasses `ValueError`.",
            ("isodate/isoerror.py", 6, "class ISO8601Error(ValueError):"),
        ),
    ),
    (
        "rust-semver",
        "¿Dónde se comprueba una versión contra un requisito?",
        answer(
            "En `src/eval.rs`, `matches_req` recorre los comparadores.\n\n"
            "- each comparator must match (`matches_impl`)\n"
            "- then a prerelease needs a comparator allowing it",
            (
                "src/eval.rs",
                3,
                "pub(crate) fn matches_req(req: &VersionReq, ver: &Version) -> bool {",
            ),
            ("src/eval.rs", 5, "if !matches_impl(cmp, ver) {"),
        ),
    ),
    (
        "python-isodate",
        "Could the error class live in its own errors module?",
        answer(
            "It already does: `isodate/isoerror.py`. A `isodate/errors.py` could re-export it.",
            ("isodate/isoerror.py", 6, "class ISO8601Error(ValueError):"),
            proposed=["isodate/errors.py"],
        ),
    ),
    ("javascript-ms", "Hallo!", answer("Hallo! Frag mich etwas über diesen Code.")),
    (
        "javascript-ms",
        "Where does parse give up on long input (more than 100 characters)?",
        answer(
            "At `index.js:50` (line 50 of `parse`), past 100 characters.",
            ("index.js", 50, "if (str.length > 100) {"),
        ),
    ),
    (
        "go-uuid",
        "Is it safe to use from several goroutines?",
        answer(
            "The pool is guarded by `poolMu`; `sync.Mutex` is the standard library's.",
            ("version4.go", 60, "poolMu.Lock()"),
        ),
    ),
    (  # a value with no word in it, written as code: the cited line writes it as a value
        "python-isodate",
        "Welches Zeichen macht eine Dauer in parse_duration negativ?",
        answer(
            "The sign `-`: parse_duration then returns the negated duration.",
            ("isodate/isoduration.py", 109, 'if groups["sign"] == "-":'),
        ),
    ),
]


@pytest.mark.parametrize(("project", "question", "reply"), GOOD)
def test_a_right_reply_is_not_flagged(
    tmp_path: Path, project: str, question: str, reply: GuidedReply
) -> None:
    index, located = locate(tmp_path, project, question)
    verdict = check_answer(reply, located, index, question)
    assert verdict.ok, verdict.problems
    assert len(verdict.citations) == len(reply.citations)


# bad replies: each must be caught
BAD = [
    (  # a forged quote
        "go-uuid",
        "Welche Version erzeugt NewRandom?",
        answer("Version 1.", ("version4.go", 53, "uuid[6] = (uuid[6] & 0x0f) | 0x10 // Version 1")),
        "is not in version4.go",
    ),
    (  # an invented file after "for example"
        "python-isodate",
        "Where is ISO8601Error defined?",
        answer(
            "For example, in `isodate/exceptions.py`.",
            ("isodate/isoerror.py", 6, "class ISO8601Error(ValueError):"),
        ),
        "isodate/exceptions.py is not in the workspace",
    ),
    (  # an invented file named with no look at all, asked in Chinese
        "javascript-ms",
        "parse 函数在哪里定义？",
        answer("在 src/parse.js 中定义。"),
        "src/parse.js is not in the workspace",
    ),
    (  # a workspace-looking name that was never shown
        "go-uuid",
        "Что делает NewRandom?",
        answer(
            "It calls `newRandomFromCache`.",
            ("version4.go", 40, "func NewRandom() (UUID, error) {"),
        ),
        "`newRandomFromCache` is in none of the lines",
    ),
    (  # a change claimed in an answer: the value it states is in no line shown or cited
        "go-uuid",
        "Setze die Poolgröße in NewRandom auf das Doppelte.",
        answer(
            "Die Größe ist jetzt `16 * 32` (siehe version4.go:40).",
            ("version4.go", 40, "func NewRandom() (UUID, error) {"),
        ),
        "states 32",
    ),
    (  # a value one off what the cited line holds
        "javascript-ms",
        "Wie lang darf der String für parse höchstens sein?",
        answer("Höchstens 101 Zeichen.", ("index.js", 50, "if (str.length > 100) {")),
        "states 101",
    ),
    (  # a change request "answered" with itself, in the past tense, and no edit
        "go-uuid",
        "Add a doc comment to the function NewRandomFromReader in version4.go.",
        answer(
            "Added a doc comment to the function NewRandomFromReader in version4.go.",
            ("version4.go", 47, "func NewRandomFromReader(r io.Reader) (UUID, error) {"),
        ),
        "only restates the request",
    ),
    (  # an either-or question answered in its own words: right or wrong, only words tell
        # (ini's false-string-es: "la cadena 'false'", citing decode's first line, is wrong)
        "javascript-ms",
        "Gibt parse eine Zahl oder einen String zurück?",
        answer("parse gibt einen String zurück.", ("index.js", 44, "* @return {Number}")),
        "only restates the request",
    ),
    (  # a claim with no citation at all
        "rust-semver",
        "Où est matches_req ?",
        answer("Dans `src/eval.rs`, fonction `matches_req`."),
        "cites no line",
    ),
    (  # a file named beside a citation of another (semver's range-cache-size: `internal/re.js`
        # with a line of `trim-comparator-whitespace.js`), asked in Spanish
        "go-uuid",
        "¿En qué archivo se define NewRandom?",
        answer("En `hash.go`.", ("version4.go", 39, "func NewRandom() (UUID, error) {")),
        "names hash.go but cites no line of it",
    ),
    (  # the same, asked in Japanese, the answer's file real but holding none of what it says
        "python-isodate",
        "ISO8601Error はどのファイルで定義されていますか？",
        answer(
            "`isodate/isotzinfo.py` です。",
            ("isodate/isoerror.py", 6, "class ISO8601Error(ValueError):"),
        ),
        "names isodate/isotzinfo.py but cites no line of it",
    ),
    (  # a citation of a file that does not exist
        "javascript-ms",
        "Wie lang darf der String sein?",
        answer("100.", ("lib/parse.js", 3, "if (str.length > 100) {")),
        "is not a file here",
    ),
]


@pytest.mark.parametrize(("project", "question", "reply", "problem"), BAD)
def test_a_wrong_reply_is_caught(
    tmp_path: Path, project: str, question: str, reply: GuidedReply, problem: str
) -> None:
    index, located = locate(tmp_path, project, question)
    verdict = check_answer(reply, located, index, question)
    assert not verdict.ok
    assert any(problem in said for said in verdict.problems), verdict.problems


@pytest.mark.parametrize(
    ("answer_text", "flagged"),
    [
        ("The cache `max` holds 100 entries.", True),  # the heading's start taken as a value
        ("Кэш `max` вмещает 100 записей.", True),
        ("`max` is set in the lines 100-103 shown.", False),  # a range of the lines shown
        ("`max` は 100–103 行目で設定されます。", False),
        ("The cache `max` holds 1000 entries.", False),
    ],
)
def test_a_shown_ranges_ends_are_lines_not_values(
    tmp_path: Path, answer_text: str, flagged: bool
) -> None:
    """semver's range-cache-size: asked how many entries the cache holds, the model answered
    100, the start of a chunk's heading (`--- classes/range.js lines 100-103`); the cache's
    `max = 1000` was shown too. A heading's number stands only as part of a range."""
    from milk_lsp.guided.locate import Chunk

    text = "".join(f"// line {n}\n" for n in range(1, 100)) + "function setup() {\n"
    text += "  const max = 1000\n  use(max)\n}\n"
    (tmp_path / "cache.js").write_text(text, encoding="utf-8")
    index = WorkspaceIndex(tmp_path)
    index.refresh()
    lines = tuple(text.splitlines()[99:103])
    located = Located(chunks=(Chunk("cache.js", 100, lines, "defines max"),), texts={})
    reply = GuidedReply.model_validate(
        {
            "kind": "answer",
            "answer": answer_text,
            "citations": [{"path": "cache.js", "quote": "  const max = 1000"}],
        }
    )
    verdict = check_answer(reply, located, index, "How many entries does the cache hold?")
    said = [p for p in verdict.problems if "the answer states 100," in p]
    assert bool(said) == flagged, verdict.problems


def test_a_quote_is_found_where_it_really_is_and_the_gutter_is_ignored() -> None:
    text = "a = 1\nb = 2\n\ndef f():\n    return b\n"
    assert find_quote(text, "b = 2", 40) == (2, 2)
    assert find_quote(text, "4| def f():\n5|     return b", 1) == (4, 5)
    assert find_quote(text, "  return b  ", 0) == (5, 5)
    assert find_quote(text, "x", 1) is None  # too short to prove anything
    assert find_quote(text, "return c", 5) is None
    assert find_quote(text, "def f(): return b", 1) == (4, 5)  # lines joined into one
    assert find_quote(text, "a = 1 … return b", 1) == (1, 5)  # a middle left out
    assert find_quote(text, "a = 1 … return c", 1) is None  # every piece must be there
    assert find_quote(text, "a … b", 1) is None  # pieces too short to prove anything


def test_a_quote_cited_without_a_line_is_found_where_the_model_was_shown_it(
    tmp_path: Path,
) -> None:
    """The local model is shown no line numbers (a token a digit): a citation's line is the
    shown occurrence of its quote, not the file's first (`return nil` at lines 3 and 9)."""
    from milk_lsp.guided.locate import Chunk

    (tmp_path / "go.mod").write_text("module example.com/m\n", encoding="utf-8")
    text = "package m\nfunc a() error {\n\treturn nil\n}\n\n// b is b\nfunc b() error {\n"
    text += "\tlog()\n\treturn nil\n}\n"
    (tmp_path / "m.go").write_text(text, encoding="utf-8")
    index = WorkspaceIndex(tmp_path)
    index.refresh()
    lines = tuple(text.splitlines()[6:10])
    located = Located(chunks=(Chunk("m.go", 7, lines, "defines b"),), texts={"m.go": text})
    assert "return nil" in located.context(numbered=False)
    assert "9| " in located.context() and "9| " not in located.context(numbered=False)
    reply = GuidedReply.model_validate(
        {
            "kind": "answer",
            "answer": "`b` returns nil.",
            "citations": [
                {"path": "m.go", "quote": "\treturn nil"},
                {"path": "m.go", "quote": "func b() error {"},
            ],
        }
    )
    verdict = check_answer(reply, located, index, "What does b return?")
    assert verdict.ok, verdict.problems
    assert [(cited.line, cited.end_line) for cited in verdict.citations] == [(9, 9), (7, 7)]


def test_a_quote_joining_lines_may_drop_blanks_and_the_comment_lines_between() -> None:
    """cross-env's `spawn(` call: a 1.5B model joined its lines without the comments and
    without the blank after `(`; every character is still the file's, in order."""
    text = (
        "const proc = spawn(\n"
        "  // run `path.normalize` for command(on windows)\n"
        "  commandConvert(command, env, true),\n"
        "  # a comment in another language's marker\n"
        "  commandArgs.map(arg => commandConvert(arg, env)),\n"
        ")\n"
    )
    joined = "const proc = spawn(commandConvert(command, env, true), commandArgs.map(arg =>"
    assert find_quote(text, joined, 1) == (1, 5)
    assert find_quote(text, "spawn(commandConvert(command, env, false)", 1) is None
    assert find_quote(text, "commandConvert(command, env, true) …", 1) == (3, 3)


def test_the_reply_shape_tolerates_fences_and_a_wrapped_answer() -> None:
    inner = '{"kind": "answer", "answer": "42", "citations": []}'
    assert parse_reply(f"```json\n{inner}\n```").answer == "42"
    as_text = json.dumps({"kind": "answer", "answer": inner})
    assert parse_reply(as_text).answer == "42"
    as_object = '{"kind": "answer", "answer": ' + inner + "}"
    assert parse_reply(as_object).answer == "42"
    with pytest.raises(NotTheShape):
        parse_reply("I will search for the flag definitions first.")
    with pytest.raises(NotTheShape):
        parse_reply('{"kind": "plan"}')


def test_the_intent_and_size_replies_are_read_in_their_shape_only() -> None:
    """A size other than the schema's, or a reply in words, is no size: the change stays
    local (only "many" is Claude-sized)."""
    assert parse_size('{\n  "size": "many"\n}') == "many"
    assert parse_size('{"size": "huge"}') is None
    assert parse_size("many files") is None
    assert parse_intent('{"intent": "change"}') == "change"
    assert parse_intent('{"size": "many"}') is None


def test_terms_split_identifiers_and_stem_them() -> None:
    assert {"pars", "nest", "array"} <= set(terms("parseNestedArray"))
    assert "nest" in terms("Is there a limit on how deeply arrays can nest?")
    assert set(terms("max_depth")) >= {"max", "depth"}
    assert terms("MAX_DEPTH 256") == ["max", "depth", "256"]


@pytest.mark.parametrize(
    ("model", "size"),
    [
        ("qwen2.5-coder-1.5b-instruct", 1.5),
        ("llama3.1:8b", 8.0),
        ("smollm2-135m-instruct", 0.135),
        ("Qwen/Qwen2.5-Coder-32B-Instruct-GGUF", 32.0),
        ("gpt-oss", None),
    ],
)
def test_a_models_size_is_read_from_its_name(model: str, size: float | None) -> None:
    assert model_billions(model) == size


def test_auto_guides_small_or_tool_less_models_and_lets_others_drive() -> None:
    small = choose("auto", "qwen2.5-coder-1.5b", drops_tools=False, failed_protocol=False)
    assert small.guided and "1.5B" in small.why
    big = choose("auto", "qwen2.5-coder-32b", drops_tools=False, failed_protocol=False)
    assert not big.guided
    assert choose("auto", "gpt-oss", drops_tools=True, failed_protocol=False).guided
    assert choose("auto", "gpt-oss", drops_tools=False, failed_protocol=True).guided
    assert not choose("agent", "tiny-1b", drops_tools=True, failed_protocol=True).guided
    assert choose("guided", "big-70b", drops_tools=False, failed_protocol=False).guided


def test_the_places_a_failed_check_names_are_read_from_its_output(tmp_path: Path) -> None:
    from milk_lsp.guided.project_check import places

    (tmp_path / "src").mkdir()
    for name in ("uuid.go", "src/a.ts", "src/lib.rs"):
        (tmp_path / name).write_text("x\n")
    output = (
        "# example\nvet: ./uuid.go:85:18: undeclared name: xtob\n"
        "src/a.ts(12,5): error TS2304: Cannot find name 'x'.\n"
        "  --> src/lib.rs:7:9\nnot/here.go:3:1: gone\nuuid.go:85:2: again\n"
    )
    assert places(output, tmp_path) == [("uuid.go", 85), ("src/a.ts", 12), ("src/lib.rs", 7)]


def test_the_budget_shrinks_for_a_small_context_window_and_never_grows() -> None:
    usual = Budget()
    assert Budget.for_context(None) == usual
    assert Budget.for_context(32768) == usual  # a big window shows no more: it is the wait
    small = Budget.for_context(3000)
    assert small.chunks < usual.chunks and small.map < usual.map


def test_the_repository_map_is_the_same_for_every_request(tmp_path: Path) -> None:
    _, locator, texts = workspace(tmp_path, "go-uuid")
    first = asyncio.run(locator.locate("Which version does NewRandom produce?", texts))
    second = asyncio.run(locator.locate("Что делает NewSHA1?", texts))
    assert first.repo_map and first.repo_map == second.repo_map
    assert "hash.go: " in first.repo_map and "NewSHA1" in first.repo_map


def test_a_change_may_edit_only_the_files_shown_or_the_new_ones_named() -> None:
    """The edit's path is constrained to the files whose lines the model saw (an old text
    can only be copied from those) and the new files the request names; a
    question's shape has no edits, a change without located files keeps any path."""
    from milk_lsp.guided.shape import response_format

    def edit_items(shape: dict[str, Any]) -> list[dict[str, Any]]:
        item = shape["json_schema"]["schema"]["properties"]["edits"]["items"]
        return list(item.get("anyOf", [item]))

    def edit_paths(shape: dict[str, Any]) -> list[Any]:
        return [item["properties"]["path"].get("enum") for item in edit_items(shape)]

    changed = response_format("change", ["util.go", "time.go", "util.go", "sha256.go"])
    assert edit_paths(changed) == [["sha256.go"], ["time.go"], ["util.go"]]
    assert edit_paths(response_format("change", [])) == [None]
    question = response_format("question", ["util.go"])["json_schema"]["schema"]
    assert "edits" not in question["properties"] and "edits" not in question["required"]
    assert edit_paths(response_format(None, ["util.go"])) == [None]


def test_an_edits_old_text_is_whole_lines_the_model_was_shown_of_its_file() -> None:
    """An edit's old text is one to six whole lines shown together of the edit's file, so a
    1.5B model cannot write a signature the file does not have (`parseCommand(args,
    options)` for `parseCommand(args)`); a file shown no lines (a new one) keeps any text."""
    from milk_lsp.guided.shape import WINDOW_LINES, old_texts, response_format

    lines = ("function parseCommand(args) {", "  return args", "}", "", "module.exports = x")
    texts = old_texts([lines])
    assert "function parseCommand(args) {\n  return args" in texts
    assert "}\n" in texts and "" not in texts  # a run may end blank; a blank run is no text
    assert "function parseCommand(args, options) {" not in texts
    assert max(text.count("\n") + 1 for text in texts) <= WINDOW_LINES
    shape = response_format("change", ["src/index.js", "src/new.js"], {"src/index.js": texts})
    items = shape["json_schema"]["schema"]["properties"]["edits"]["items"]["anyOf"]
    by_path = {item["properties"]["path"]["enum"][0]: item["properties"] for item in items}
    assert by_path["src/index.js"]["old_text"]["enum"] == texts
    assert "enum" not in by_path["src/new.js"]["old_text"]


def test_an_edit_is_fitted_by_the_brackets_it_adds_or_the_lines_it_dropped() -> None:
    """Ways to fit an edit that would break its file, tried in order and kept only when the
    file then parses: closing brackets its end adds beyond the old text's left out, then the
    old lines past the new text's count kept. None for an edit that adds no such thing."""
    from milk_lsp.guided.apply import _fits

    old = "  if (code === null) {\n    code = signal === 'SIGINT' ? 0 : 1"
    new = "  if (code === null) { code = signal === 'SIGINT' ? 130 : 1; }"
    (closed, _), (kept, said) = _fits(old, new, "index.js")
    assert closed == "  if (code === null) { code = signal === 'SIGINT' ? 130 : 1;"
    assert kept == new + "\n    code = signal === 'SIGINT' ? 0 : 1"
    assert said == "kept 1 line of index.js the edit dropped"
    assert _fits("f(a)", "f(a, b)", "a.js") == []


def test_a_questions_quote_is_one_whole_line_shown_of_the_cited_file() -> None:
    """A question's citations quote a line shown of their file (the model wrote its own
    sentence as the quote) and carry no line number (milk finds it); a question with
    nothing shown, or of an intent not known, keeps any quote; a change's shape has no
    citations."""
    from milk_lsp.guided.shape import old_texts, response_format

    lines = ("def smart_truncate(", "    string: str,", "    max_length: int = 0,", ")")
    shown = {"slugify/slugify.py": old_texts([lines])}
    schema = response_format("question", ["slugify/slugify.py"], shown)["json_schema"]["schema"]
    quote = schema["properties"]["citations"]["items"]["properties"]["quote"]
    assert sorted(quote["enum"]) == sorted(lines)
    cited = schema["properties"]["citations"]["items"]
    assert "line" not in cited["properties"] and cited["required"] == ["path", "quote"]
    for free in (response_format("question", [], {}), response_format(None, [], shown)):
        item = free["json_schema"]["schema"]["properties"]["citations"]["items"]
        assert "enum" not in item["properties"]["quote"]
    change = response_format("change", [], shown)["json_schema"]["schema"]
    assert "citations" not in change["properties"]
    assert change["properties"]["intent"]["enum"] == ["change"]  # the model writes it first


def test_a_long_named_definition_leaves_room_for_the_lines_of_other_files(tmp_path: Path) -> None:
    """A question about "the slugify CLI" names the function `slugify`, 60 lines long: it is shown by its
    head, and the option the question is about, in another file, is shown too; the README's
    copy in the package's metadata is not shown twice."""
    body = "\n".join(f"    text = text.replace({n!r}, '-')  # step {n}" for n in range(58))
    (tmp_path / "core.py").write_text(f"def slugify(text: str) -> str:\n{body}\n    return text\n")
    (tmp_path / "cli.py").write_text(
        "import argparse\n\nparser = argparse.ArgumentParser()\n"
        + "".join(f'parser.add_argument("--flag-{n}", help="Flag {n}")\n' for n in range(8))
        + 'parser.add_argument("--word-boundary", action="store_true",\n'
        + '                    help="Truncate to complete words")\n'
    )
    readme = "# Command line options\n\nThe CLI truncates text to complete words.\n"
    (tmp_path / "README.md").write_text(readme)
    header = "".join(f"Classifier: Topic {n}\n" for n in range(20))
    (tmp_path / "PKG-INFO").write_text(f"Name: slugify\n{header}\n{readme}")
    index = WorkspaceIndex(tmp_path)
    index.refresh()
    question = "Which command-line option of the slugify CLI truncates to complete words?"
    located = asyncio.run(Locator(index).locate(question, DiskTexts(tmp_path), Budget()))
    lines = [(chunk.path, line) for chunk in located.chunks for line in chunk.lines]
    assert ("cli.py", '                    help="Truncate to complete words")') in lines
    assert ("core.py", "def slugify(text: str) -> str:") in lines
    head = next(chunk for chunk in located.chunks if chunk.path == "core.py")
    assert head.size <= Budget().chunks // 2
    copies = [line for _, line in lines if line.startswith("The CLI truncates")]
    assert len(copies) == 1, located.context()


LOAD_SETTINGS_PY = (
    "def load_settings(path):\n"
    + "".join(f"    value_{n} = read_key(path, 'key_{n}')  # the setting {n}\n" for n in range(60))
    + "    raw = read_key(path, 'mode')\n"
    + "    if raw.lower() == 'off':\n"
    + "        return False\n"
    + "    return raw\n"
)
SETTINGS_README = (
    "".join(f"- load_settings reads the settings file, setting {n}\n" for n in range(25))
    + "Turn a setting off with `off`.\n"
)


@pytest.mark.parametrize(
    "request_text",
    [
        "Was gibt load_settings zurück, wenn der Wert off ist?",
        "What does load_settings return when the value is off?",
        "load_settings は値が off のとき何を返しますか？",
    ],
)
def test_a_rare_word_deep_in_a_named_definition_is_shown_past_its_head(
    tmp_path: Path, request_text: str
) -> None:
    """ini's "when decode reads enabled=false, is it the string 'false'?": the line that
    answers was deep in `decode`, past its chunk, and the README's lines holding the
    question's common words were shown instead. Among the located files' lines `off` is
    rare and `load`, `settings` are everywhere, and a line inside `load_settings` holds its
    name's terms: the deciding line is shown."""
    files = {"settings.py": LOAD_SETTINGS_PY, "README.md": SETTINGS_README}
    located = located_in(tmp_path, files, request_text)
    assert ("settings.py", 63) in shown_lines(located), located.context()


def test_the_words_of_a_named_files_path_rank_none_of_its_lines(tmp_path: Path) -> None:
    """slugify's "In slugify/__main__.py rename the option --no-lowercase …": `main`, a word
    of the file's path, chose the file; inside it the lines of `def main()` are no closer to
    the request than any other, and the option's line is shown."""
    main = (
        "import argparse\n\n\ndef parse_args(argv):\n    parser = argparse.ArgumentParser()\n"
        + "".join(f'    parser.add_argument("--opt-{n}", help="Option {n}")\n' for n in range(12))
        + '    parser.add_argument("--no-color", action="store_false", dest="color")\n'
        + "    return parser.parse_args(argv)\n\n\ndef main(argv=None):\n"
        + "".join(f"    step_{n}(argv)  # main step {n}\n" for n in range(20))
        + "\n\nif __name__ == '__main__':\n    main()\n"
    )
    request_text = "In tool/__main__.py rename the option --no-color to --plain (same dest)."
    located = located_in(tmp_path, {"tool/__main__.py": main}, request_text)
    assert ("tool/__main__.py", 17) in shown_lines(located), located.context()


def test_only_the_request_s_own_words_rank_a_named_file_s_lines() -> None:
    """`ranked_lines` alone: the words of the path the request names (`tool/__main__.py`:
    `tool`, `main`, `py`) rank no line of it, so `def main()` and its body are not ranked
    for `main`, while the option's line is, for `no`, `color` and `dest`."""
    from milk_lsp.guided.words import ranked_lines, terms

    lines = [
        "def main(argv=None):",
        "    main_step(argv)  # runs first",
        '    parser.add_argument("--no-color", dest="color")',
    ]
    request = "In tool/__main__.py rename the option --no-color to --plain (same dest)."
    weights = dict.fromkeys(terms(request), 1.0)
    ranked = ranked_lines(
        {"tool/__main__.py": lines}, lambda _: [], weights, frozenset(), ["tool/__main__.py"]
    )
    assert [number for _, _, number in ranked] == [3]


def test_an_answer_whose_value_has_no_word_does_not_restate_the_question() -> None:
    """python-slugify's "What is the value of the constant DEFAULT_SEPARATOR …?" answered
    with every word of the question and the value `-`, which has no word: it says something
    the question did not. A reply of the question's words alone still restates it."""
    from milk_lsp.guided.verify import restates

    question = "What is the value of the constant DEFAULT_SEPARATOR in slugify/slugify.py?"
    for said in ("`-`", '"-"', "'-'"):
        answer_text = (
            f"The value of the constant DEFAULT_SEPARATOR in slugify/slugify.py is {said}."
        )
        assert not restates(answer_text, question)
    assert restates("The value of the constant DEFAULT_SEPARATOR in slugify/slugify.py.", question)
    asked = "Add a doc comment to `NewRandom` in version4.go."
    assert restates("Added a doc comment to `NewRandom` in version4.go.", asked)


def test_a_quote_too_short_to_show_anything_is_sent_back_as_such(tmp_path: Path) -> None:
    """dotenv's override-ja: a citation quoting `}` was "not in lib/main.js", which it is.
    It shows nothing either way, and is sent back as too short (leaving it out was tried:
    the model's next answer, wrong and citing true lines, then ended as done)."""
    from milk_lsp.guided.verify import proves_nothing

    assert proves_nothing("}") and proves_nothing("12| }") and proves_nothing(" ) ")
    assert not proves_nothing("n * y")
    question = "Was gibt parse für einen zu langen String zurück?"
    index, located = locate(tmp_path, "javascript-ms", question)
    reply = answer(
        "Nichts: `parse` kehrt bei mehr als 100 Zeichen zurück.",
        ("index.js", 50, "if (str.length > 100) {"),
        ("index.js", 52, "}"),
    )
    verdict = check_answer(reply, located, index, question)
    assert [c.line for c in verdict.citations] == [50]
    assert verdict.problems == [
        "the quote '}' is too short to show anything: quote the whole line the answer rests on"
    ]
