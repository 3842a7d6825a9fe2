"""humanize 4.12.3 (MIT) and its tasks for `bench/real_tasks.py`.

The second real package, of another domain than python-slugify: numbers, file sizes, dates and
time spans in words (about 1,650 lines in seven modules under `src/`, translations as `.po`
files, no CLI). Its names are what small models guess wrong: typed defaults
(`format: str = "%.1f"`), a module-level dict (`suffixes`), a private helper with a return
annotation (`def _now() -> dt.datetime:`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path

from bench.real_tasks_suite import (
    AdvisorTask,
    ClaudeEdit,
    Project,
    Task,
    defaults,
    edited,
    for_claude,
    function,
    mentions,
    module,
    python_matches,
)

FILESIZE = "src/humanize/filesize.py"
TIME = "src/humanize/time.py"
NUMBER = "src/humanize/number.py"
LISTS = "src/humanize/lists.py"
INIT = "src/humanize/__init__.py"
I18N = "src/humanize/i18n.py"
I18N_TEST = "tests/test_i18n.py"
README = "README.md"


def _now_documented(tree: ast.Module, _: str) -> str:
    fn = function(tree, "_now")
    return "" if fn is not None and ast.get_docstring(fn) else "_now has no docstring"


def _size_format(tree: ast.Module, _: str) -> str:
    fn = function(tree, "naturalsize")
    if fn is None:
        return "naturalsize is gone"
    new = defaults(fn).get("format")
    if isinstance(new, ast.Constant) and new.value == "%.2f":
        return ""
    return f"naturalsize's format default is {ast.unparse(new) if new else None}"


def _suffixes_renamed(tree: ast.Module, source: str) -> str:
    if re.search(r"\bsuffixes\b", source):
        return "suffixes still there"
    assigned = any(
        isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "SUFFIXES" for t in n.targets)
        for n in tree.body
    )
    uses = len(re.findall(r"\bSUFFIXES\b", source))
    return "" if assigned and uses >= 4 else f"SUFFIXES assigned={assigned}, {uses} mention(s)"


def _precision_default(tree: ast.Module, _: str) -> str:
    fn = function(tree, "scientific")
    if fn is None:
        return "scientific is gone"
    new = defaults(fn).get("precision")
    if isinstance(new, ast.Constant) and new.value == 3:
        metric = function(tree, "metric")
        kept = metric is not None and ast.unparse(defaults(metric).get("precision", ast.Pass()))
        return "" if kept == "3" else "metric's precision changed"
    return f"scientific's precision default is {ast.unparse(new) if new else None}"


CORE_TIME = ("_now", "naturaldelta", "naturaltime", "precisedelta")
CORE_NUMBER = ("ordinal", "intcomma", "scientific", "metric")

# -- advisor tasks (issue 32): each step's check of the files, and Claude's edit for it ---------


def _list_renamed(workspace: Path, rel: str) -> str:
    tree, problem = module(workspace, rel)
    if tree is None:
        return problem
    source = (workspace / rel).read_text(encoding="utf-8")
    if re.search(r"\bnatural_list\b", source):
        return f"{rel} still says natural_list"
    return "" if re.search(r"\bjoin_naturally\b", source) else f"{rel} has no join_naturally"


def _conjunction_parameter(workspace: Path) -> str:
    tree, problem = module(workspace, LISTS)
    fn = function(tree, "natural_list") if tree is not None else None
    if fn is None:
        return problem or "no natural_list()"
    given = defaults(fn).get("conjunction")
    ok = isinstance(given, ast.Constant) and given.value == "and"
    return "" if ok else 'natural_list() has no conjunction: str = "and"'


def _conjunction_in(branch: str) -> Callable[[Path], str]:
    """The `return` right under `branch` (a line of natural_list) uses `conjunction`."""

    def check(workspace: Path) -> str:
        tree, problem = module(workspace, LISTS)
        if tree is None:
            return problem
        source = (workspace / LISTS).read_text(encoding="utf-8")
        used = re.search(rf"{re.escape(branch)}\s*\n\s*return\b[^\n]*\bconjunction\b", source)
        return "" if used else f"the return under `{branch}` does not use conjunction"

    return check


def _documented(name: str) -> Callable[[Path], str]:
    def check(workspace: Path) -> str:
        tree, problem = module(workspace, I18N)
        fn = function(tree, name) if tree is not None else None
        if fn is None:
            return problem or f"no {name}()"
        return "" if ast.get_docstring(fn) else f"{name}() has no docstring"

    return check


def _get_locale_defined(workspace: Path) -> str:
    tree, problem = module(workspace, I18N)
    fn = function(tree, "get_locale") if tree is not None else None
    if fn is None:
        return problem or f"{I18N} defines no get_locale()"
    if fn.args.args or ast.unparse(fn.returns or ast.Pass()) != "str | None":
        return "get_locale() does not take no argument and return str | None"
    return "" if ast.get_docstring(fn) else "get_locale() has no docstring"


def _exported(rel: str) -> Callable[[Path], str]:
    """`rel` lists "get_locale" in its `__all__`."""

    def check(workspace: Path) -> str:
        tree, problem = module(workspace, rel)
        if tree is None:
            return problem
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(
                getattr(t, "id", "") == "__all__" for t in node.targets
            ):
                names = ast.literal_eval(node.value)
                return "" if "get_locale" in names else f"{rel}: get_locale not in __all__"
        return f"{rel} has no __all__"

    return check


def _get_locale_imported(workspace: Path) -> str:
    tree, problem = module(workspace, INIT)
    if tree is None:
        return problem
    imported = any(
        isinstance(node, ast.ImportFrom)
        and node.module == "humanize.i18n"
        and any(alias.name == "get_locale" for alias in node.names)
        for node in tree.body
    )
    return "" if imported else f"{INIT} does not import get_locale from humanize.i18n"


def _readme_shows(workspace: Path) -> str:
    try:
        text = (workspace / README).read_text(encoding="utf-8")
    except (OSError, ValueError) as exc:
        return f"{README} unreadable: {exc}"
    shown = re.search(r">>> humanize\.get_locale\(\)\n'ru_RU'\n", text)
    return "" if shown else f"{README} does not show humanize.get_locale() giving 'ru_RU'"


_TWO = 'return f"{str(items[0])} and {str(items[1])}"'
_MANY = '+ f" and {str(items[-1])}"'
_LOCALE_PATH = "def _get_default_locale_path() -> pathlib.Path | None:"
_TRANSLATION = "def get_translation() -> gettext_module.NullTranslations:"
_LOCALE_DOC = '"""The folder of the package\'s translations, or None when it has none."""'
_GETTEXT = "def _gettext(message: str) -> str:"
_GET_LOCALE = (
    "def get_locale() -> str | None:\n"
    '    """The locale activate() made active, or None when no translation is active."""\n'
    '    locale: str | None = getattr(_CURRENT, "locale", None)\n'
    "    return locale\n"
)
_I18N_ALL = '__all__ = ["activate", "deactivate", "decimal_separator", "thousands_separator"]'
_I18N_IMPORT = (
    "from humanize.i18n import activate, deactivate, decimal_separator, thousands_separator"
)
_I18N_NAMES = ("activate", "deactivate", "decimal_separator", "get_locale", "thousands_separator")
_LOCALE_TEST_ABOVE = "def test_default_locale_path_defined__spec__() -> None:"
_LOCALE_TEST = """def test_get_locale() -> None:
    assert humanize.get_locale() is None
    try:
        humanize.i18n.activate("de_DE")
        assert humanize.get_locale() == "de_DE"
    except FileNotFoundError:
        pytest.skip("Generate .mo with scripts/generate-translation-binaries.sh")
    finally:
        humanize.i18n.deactivate()
    assert humanize.get_locale() is None
"""
_README_ACTIVATE = '>>> _t = humanize.i18n.activate("ru_RU")'

ADVISOR_TASKS = (
    AdvisorTask(
        "rename-natural-list",
        "Rename the function natural_list to join_naturally, in its module and in the "
        "package's exports.",
        (
            (
                f"In `{LISTS}`, replace every `natural_list` with `join_naturally` (the "
                "definition, `__all__` and the three examples of its docstring).",
                lambda ws: _list_renamed(ws, LISTS),
                ClaudeEdit(LISTS, "natural_list", "join_naturally", every=True),
            ),
            (
                f"In `{INIT}`, replace every `natural_list` with `join_naturally` (the import "
                "`from humanize.lists import natural_list` and its entry in `__all__`).",
                lambda ws: _list_renamed(ws, INIT),
                ClaudeEdit(INIT, "natural_list", "join_naturally", every=True),
            ),
        ),
    ),
    AdvisorTask(
        "conjunction-parameter",
        'Give natural_list() a conjunction parameter (default "and") and use it instead of '
        "the fixed word and.",
        (
            (
                f"In `{LISTS}`, replace `def natural_list(items: list[Any]) -> str:` with "
                '`def natural_list(items: list[Any], conjunction: str = "and") -> str:`.',
                _conjunction_parameter,
                ClaudeEdit(
                    LISTS,
                    "def natural_list(items: list[Any]) -> str:",
                    'def natural_list(items: list[Any], conjunction: str = "and") -> str:',
                ),
            ),
            (
                f"In `{LISTS}`, replace `{_TWO}` with "
                '`return f"{str(items[0])} {conjunction} {str(items[1])}"`.',
                _conjunction_in("elif len(items) == 2:"),
                ClaudeEdit(LISTS, _TWO, 'return f"{str(items[0])} {conjunction} {str(items[1])}"'),
            ),
            (
                f'In `{LISTS}`, replace `{_MANY}` with `+ f" {{conjunction}} {{str(items[-1])}}"`.',
                _conjunction_in("else:"),
                ClaudeEdit(LISTS, _MANY, '+ f" {conjunction} {str(items[-1])}"'),
            ),
        ),
    ),
    AdvisorTask(
        "docstrings-i18n",
        f"Give every function of {I18N} without a docstring a one-line one.",
        (
            (
                f"In `{I18N}`, right under the line `{_LOCALE_PATH}`, add the line "
                f"`    {_LOCALE_DOC}` (indented four spaces).",
                _documented("_get_default_locale_path"),
                ClaudeEdit(
                    I18N,
                    _LOCALE_PATH + "\n",
                    f"{_LOCALE_PATH}\n    {_LOCALE_DOC}\n",
                ),
            ),
            (
                f"In `{I18N}`, right under the line `{_TRANSLATION}`, add the line "
                '`    """The translations active in this thread."""` (indented four spaces).',
                _documented("get_translation"),
                ClaudeEdit(
                    I18N,
                    _TRANSLATION + "\n",
                    _TRANSLATION + '\n    """The translations active in this thread."""\n',
                ),
            ),
        ),
    ),
    AdvisorTask(
        "get-locale",
        "Add a public get_locale() to i18n.py that returns the active locale (None when no "
        "translation is active), use it in get_translation(), export it from the package, "
        "and add a test and a line of the README's localization example for it.",
        (
            (
                f"In `{I18N}`, right above the line `{_GETTEXT}`, add the function "
                "`get_locale() -> str | None` (a one-line docstring, then `locale: str | None = "
                'getattr(_CURRENT, "locale", None)` and `return locale`) and two blank lines.',
                _get_locale_defined,
                ClaudeEdit(I18N, _GETTEXT + "\n", f"{_GET_LOCALE}\n\n{_GETTEXT}\n"),
            ),
            (
                f"In `{I18N}`, replace the line `{_I18N_ALL}` with the same list plus "
                '`"get_locale"` before `"thousands_separator"`, one name a line (indented four '
                "spaces, each with a comma after it).",
                _exported(I18N),
                ClaudeEdit(
                    I18N,
                    _I18N_ALL,
                    "__all__ = [\n" + "".join(f'    "{n}",\n' for n in _I18N_NAMES) + "]",
                ),
            ),
            (
                f"In `{I18N}`, replace `return _TRANSLATIONS[_CURRENT.locale]` with "
                "`return _TRANSLATIONS[get_locale()]`.",
                python_matches(
                    I18N,
                    r"return _TRANSLATIONS\[get_locale\(\)\]",
                    "get_translation() does not use get_locale()",
                ),
                ClaudeEdit(
                    I18N,
                    "return _TRANSLATIONS[_CURRENT.locale]",
                    "return _TRANSLATIONS[get_locale()]",
                ),
            ),
            (
                f"In `{INIT}`, replace the line `{_I18N_IMPORT}` with `from humanize.i18n import "
                "(` and one name a line, `get_locale,` added before `thousands_separator,` "
                "(indented four spaces), then `)`.",
                _get_locale_imported,
                ClaudeEdit(
                    INIT,
                    _I18N_IMPORT,
                    "from humanize.i18n import (\n"
                    + "".join(f"    {n},\n" for n in _I18N_NAMES)
                    + ")",
                ),
            ),
            (
                f'In `{INIT}`, right under the line `    "fractional",` of `__all__`, add the '
                'line `    "get_locale",` (indented four spaces).',
                _exported(INIT),
                ClaudeEdit(INIT, '    "fractional",\n', '    "fractional",\n    "get_locale",\n'),
            ),
            (
                f"In `{I18N_TEST}`, right above the line `{_LOCALE_TEST_ABOVE}`, add the test "
                "`test_get_locale()`: get_locale() is None, then de_DE after "
                '`humanize.i18n.activate("de_DE")` (skipped on FileNotFoundError as the other '
                "tests do), None again after `deactivate()`; two blank lines after it.",
                python_matches(
                    I18N_TEST,
                    r"(?m)^def test_get_locale\(\) -> None:\n(?:    .*\n|\n)*?"
                    r"    assert humanize\.get_locale\(\) is None",
                    f"{I18N_TEST} has no test_get_locale() asking humanize.get_locale()",
                ),
                ClaudeEdit(
                    I18N_TEST,
                    _LOCALE_TEST_ABOVE + "\n",
                    f"{_LOCALE_TEST}\n\n{_LOCALE_TEST_ABOVE}\n",
                ),
            ),
            (
                f"In `{README}`, right under the line `{_README_ACTIVATE}` of the localization "
                "example, add the lines `>>> humanize.get_locale()` and `'ru_RU'`.",
                _readme_shows,
                ClaudeEdit(
                    README,
                    _README_ACTIVATE + "\n",
                    f"{_README_ACTIVATE}\n>>> humanize.get_locale()\n'ru_RU'\n",
                ),
            ),
        ),
    ),
)


HUMANIZE = Project(
    "humanize",
    "4.12.3",
    "8430be3a615106fdfceb0b2c1b41c4c98c6b0fc5cc59663a5539b111dd325fb0",
    (
        Task(
            "where-naturalsize",
            "question",
            "In which file of this project is the function naturalsize defined? Give its path.",
            mentions(r"filesize\.py"),
        ),
        Task(
            "where-ordinal",
            "question",
            "Which file defines the function ordinal?",
            mentions(r"number\.py"),
        ),
        Task(
            "size-format-default",
            "question",
            "What is the default value of the format parameter of naturalsize?",
            mentions(r"%\.1f"),
        ),
        Task(
            "precision-default",
            "question",
            "What is the default value of the precision parameter of the function scientific?",
            mentions(r"(?<![\w.])2(?!\w|\.\d)"),
        ),
        Task(
            "binary-suffix",
            "question",
            "Which suffix does naturalsize put after a size of about 2 kibibytes when binary is "
            "True? Look at the suffixes dict in src/humanize/filesize.py.",
            # a word of its own: case-insensitively "KiB" is also in the question's "kibibytes",
            # and a reply repeating the question counted as right (a false needless hand-off)
            mentions(r"\bKiB\b"),
        ),
        Task(
            "day-format",
            "question",
            "What is the default value of the format parameter of naturalday?",
            mentions(r"%b %d"),
        ),
        Task(
            "now-docstring",
            "edit",
            "Add a one-line docstring to the function _now in src/humanize/time.py.",
            edited(TIME, CORE_TIME, _now_documented),
        ),
        Task(
            "size-format",
            "edit",
            "In src/humanize/filesize.py change the default value of the format parameter of "
            'naturalsize from "%.1f" to "%.2f".',
            edited(FILESIZE, ("naturalsize",), _size_format),
        ),
        Task(
            "rename-suffixes",
            "edit",
            "In src/humanize/filesize.py rename the module-level dict suffixes to SUFFIXES (its "
            "definition and every use).",
            edited(FILESIZE, ("naturalsize",), _suffixes_renamed),
        ),
        Task(
            "precision",
            "edit",
            "In src/humanize/number.py change the default value of the precision parameter of "
            "scientific from 2 to 3. Leave metric() unchanged.",
            edited(NUMBER, CORE_NUMBER, _precision_default),
        ),
        Task(
            "locale-plugin",
            "claude",
            "Redesign the package's translation support: replace the module-level gettext state "
            "in i18n.py with an explicit Locale object passed through every public function in "
            "number.py, time.py, filesize.py and lists.py, keep the activate()/deactivate() API "
            "working as a compatibility layer, and add tests for three languages.",
            for_claude(),
        ),
        Task(
            "precisedelta-rewrite",
            "claude",
            "Rewrite precisedelta() and its helpers so that months and years are computed from "
            "calendar dates instead of fixed day counts, across time.py and its tests, and write "
            "a short design note on the edge cases (leap years, month ends, time zones).",
            for_claude(),
        ),
        Task(
            "number-parse",
            "claude",
            "Add the inverse of every formatter in number.py and filesize.py (parse '1.2 MB', "
            "'3rd', '1,234', 'one million' back to numbers) as a new module with round-trip "
            "property-based tests for every formatter and every locale shipped in the package.",
            for_claude(),
        ),
    ),
    advisor_tasks=ADVISOR_TASKS,
)
