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
