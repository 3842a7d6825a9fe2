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

from bench.real_tasks_suite import (
    Project,
    Task,
    defaults,
    edited,
    for_claude,
    function,
    mentions,
)

FILESIZE = "src/humanize/filesize.py"
TIME = "src/humanize/time.py"
NUMBER = "src/humanize/number.py"


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
)
