"""What a request reaches, read from what it locates before the local model starts (issues
30 and 38): the Claude-sized ones (several files named, by path or through their
definitions, new files among them) are told from the ones a local model does, in several
human languages, on real code of four programming languages (`tests/data/judging`). No
word decides: "the whole project" in any language locates nothing, and the turn goes to
the local model, which escalates when it cannot."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from milk_lsp.agents.local.judge.scope import reach
from milk_lsp.workspace.index import WorkspaceIndex

DATA = Path(__file__).parent / "data" / "judging"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> WorkspaceIndex:
    root = tmp_path_factory.mktemp("mixed")
    for project in ("python-isodate", "javascript-ms", "go-uuid", "rust-semver"):
        shutil.copytree(DATA / project, root / project)
    made = WorkspaceIndex(root)
    made.refresh()
    return made


WIDE = [
    # several files named (by name, by their definitions), new ones
    "Replace the module-level state in isoduration.py, isotzinfo.py and tzinfo.py with an"
    " explicit Context object.",
    "Ersetze parse_duration und build_tzinfo durch eine neue Datei isodate/parser.py, mit Tests.",
    # a folder written as one reaches every file under it
    "Convert every module under rust-semver/src/ to use thiserror for its errors.",
    "Перенеси всё из python-isodate/isodate/ в новый пакет и обнови импорты.",
]
NARROW = [
    # a file and a new one: two files, which a local model does ("tests" is a word)
    "Add NewSHA256 beside NewSHA1 in hash.go, a new file sha256.go, and tests for both.",
    "Déplace fmtShort et fmtLong dans un nouveau fichier format.js et ajoute des tests.",
    # what the words say reaches nothing: no file, no definition is located
    "Port the whole project to TypeScript with strict types.",
    "Portiere das ganze Projekt nach TypeScript und behalte die CLI.",
    "Перепиши все модули на Kotlin и добавь тесты.",
    "プロジェクト全体を TypeScript に移植してください。",
    "Make parse_duration raise ISO8601Error for an empty string.",
    "Ändere in index.js die Funktion fmtShort so, dass sie Stunden abrundet.",
    "NewSHA1 のドキュメントコメントを直してください。",
    "Переименуй fmtLong в formatLong.",
    "Add a test for parse_tzinfo with '+05:30'.",
    "rename plural to pluralize in index.js and its uses",
    "Haz que duration_isoformat acepte None.",
    # a hyphenated word that is no file's name, a folder the workspace does not have
    "Make the command-line output of fmtShort match fmtLong's rounding.",
    "Move fmtShort into lib/ and keep index.js exporting it.",
]


@pytest.mark.parametrize("request_text", WIDE)
def test_a_claude_sized_change_is_wide(request_text: str, index: WorkspaceIndex) -> None:
    found = reach(request_text, index)
    assert found.wide, found
    assert found.reason().startswith("the request "), found.reason()


@pytest.mark.parametrize("request_text", NARROW)
def test_a_change_a_local_model_does_is_not(request_text: str, index: WorkspaceIndex) -> None:
    found = reach(request_text, index)
    assert not found.wide, found
    assert found.reason() == ""


def test_the_reason_names_the_files_it_counted(index: WorkspaceIndex) -> None:
    found = reach(WIDE[0], index)
    assert found.files == (
        "python-isodate/isodate/isoduration.py",
        "python-isodate/isodate/isotzinfo.py",
        "python-isodate/isodate/tzinfo.py",
    )
    assert found.reason() == (
        "the request reaches 3 files here (python-isodate/isodate/isoduration.py,"
        " python-isodate/isodate/isotzinfo.py, python-isodate/isodate/tzinfo.py)"
    )
    new = reach(WIDE[1], index)
    assert new.new_files == ("isodate/parser.py",), new
    assert "and 1 new file (" in new.reason()


def test_a_name_defined_in_many_files_reaches_none_of_them(tmp_path: Path) -> None:
    for number in range(4):
        (tmp_path / f"m{number}.py").write_text("def run():\n    return 1\n")
    made = WorkspaceIndex(tmp_path)
    made.refresh()
    assert reach("Change run so it returns 2.", made).files == ()


def test_a_hyphenated_file_name_reaches_its_file(tmp_path: Path) -> None:
    """`is-windows` is `src/is-windows.js`, as `cross-env` names its own files; with a
    folder and a new file the request is Claude-sized."""
    (tmp_path / "src" / "bin").mkdir(parents=True)
    for name in ("src/is-windows.js", "src/index.js", "src/bin/cross-env.js"):
        (tmp_path / name).write_text("module.exports = () => 1\n")
    (tmp_path / "package.json").write_text('{"name": "x"}\n')
    made = WorkspaceIndex(tmp_path)
    made.refresh()
    one = reach("Give is-windows a JSDoc comment.", made)
    assert one.files == ("src/is-windows.js",) and not one.wide, one
    port = reach("Port src/ to TypeScript: is-windows, the bin scripts, a tsconfig.json.", made)
    assert port.files == ("src/is-windows.js", "src/bin/cross-env.js", "src/index.js"), port
    assert port.new_files == ("tsconfig.json",) and port.wide, port
