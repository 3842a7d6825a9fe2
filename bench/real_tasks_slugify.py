"""python-slugify 8.0.4 (MIT) and its tasks for `bench/real_tasks.py`.

A small real package (about 360 lines in five modules) that turns text into URL slugs, with an
argparse CLI, named constants and functions with many default parameters.
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


def _has_docstring(tree: ast.Module, _: str) -> str:
    fn = function(tree, "slugify_params")
    return "" if fn is not None and ast.get_docstring(fn) else "slugify_params has no docstring"


def _renamed(tree: ast.Module, source: str) -> str:
    if re.search(r"\bNUMBERS_PATTERN\b", source):
        return "NUMBERS_PATTERN still there"
    assigned = any(
        isinstance(n, ast.Assign)
        and any(getattr(t, "id", "") == "NUMBER_COMMA_PATTERN" for t in n.targets)
        for n in tree.body
    )
    uses = len(re.findall(r"\bNUMBER_COMMA_PATTERN\b", source))
    return (
        ""
        if assigned and uses >= 2
        else f"NUMBER_COMMA_PATTERN assigned={assigned}, {uses} mention(s)"
    )


def _default_changed(tree: ast.Module, _: str) -> str:
    truncate, slug = function(tree, "smart_truncate"), function(tree, "slugify")
    if truncate is None or slug is None:
        return "smart_truncate or slugify is gone"
    new = defaults(truncate).get("max_length")
    old = defaults(slug).get("max_length")
    if not (isinstance(new, ast.Constant) and new.value == 100):
        return f"smart_truncate max_length default is {ast.unparse(new) if new else None}"
    return (
        ""
        if isinstance(old, ast.Constant) and old.value == 0
        else "slugify's max_length changed too"
    )


def _return_hint(tree: ast.Module, _: str) -> str:
    fn = function(tree, "main")
    ok = fn is not None and isinstance(fn.returns, ast.Constant) and fn.returns.value is None
    return (
        ""
        if ok
        else f"main returns {ast.unparse(fn.returns) if fn and fn.returns else 'unannotated'}"
    )


def _description(tree: ast.Module, source: str) -> str:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "ArgumentParser":
            for kw in node.keywords:
                if kw.arg == "description" and isinstance(kw.value, ast.Constant):
                    if kw.value.value == "Make a slug from text" and "Slug string" not in source:
                        return ""
                    return f"description is {kw.value.value!r}"
    return "no ArgumentParser(description=...) left"


def _lowercase_flag(tree: ast.Module, source: str) -> str:
    if "--keep-case" not in source:
        return "no --keep-case option"
    if "--no-lowercase" in source:
        return "--no-lowercase still there"
    return "" if re.search(r"dest=['\"]lowercase['\"]", source) else "dest='lowercase' lost"


def _separator_renamed(workspace: Path, rel: str) -> str:
    tree, problem = module(workspace, rel)
    if tree is None:
        return problem
    source = (workspace / rel).read_text(encoding="utf-8")
    if "DEFAULT_SEPARATOR" in source:
        return f"{rel} still says DEFAULT_SEPARATOR"
    return "" if re.search(r"\bSEPARATOR\b", source) else f"{rel} has no SEPARATOR"


def _trim_parameter(workspace: Path) -> str:
    tree, problem = module(workspace, "slugify/slugify.py")
    fn = function(tree, "slugify") if tree is not None else None
    if fn is None:
        return problem or "no slugify()"
    given = defaults(fn).get("trim")
    ok = isinstance(given, ast.Constant) and given.value is True
    return "" if ok else "slugify() has no trim: bool = True"


def _trim_used(workspace: Path) -> str:
    tree, problem = module(workspace, "slugify/slugify.py")
    if tree is None:
        return problem
    source = (workspace / "slugify/slugify.py").read_text(encoding="utf-8")
    if ".sub(DEFAULT_SEPARATOR, text).strip(DEFAULT_SEPARATOR)" in source:
        return "the separators are still stripped unconditionally"
    return "" if re.search(r"if trim\b", source) else "trim is not used"


def _trim_passed(workspace: Path) -> str:
    tree, problem = module(workspace, "slugify/__main__.py")
    fn = function(tree, "slugify_params") if tree is not None else None
    if fn is None:
        return problem or "no slugify_params()"
    calls = [node for node in ast.walk(fn) if isinstance(node, ast.Call)]
    keywords = {kw.arg for call in calls for kw in call.keywords}
    return "" if "trim" in keywords else "slugify_params() does not pass trim"


def _docstring(workspace: Path, name: str) -> str:
    tree, problem = module(workspace, "slugify/__main__.py")
    fn = function(tree, name) if tree is not None else None
    if fn is None:
        return problem or f"no {name}()"
    return "" if ast.get_docstring(fn) else f"{name}() has no docstring"


def _max_words_parameter(workspace: Path) -> str:
    tree, problem = module(workspace, "slugify/slugify.py")
    fn = function(tree, "slugify") if tree is not None else None
    if fn is None:
        return problem or "no slugify()"
    given = defaults(fn).get("max_words")
    ok = isinstance(given, ast.Constant) and given.value == 0 and given.value is not False
    return "" if ok else "slugify() has no max_words: int = 0"


def _in_text(rel: str, pattern: str, what: str) -> Callable[[Path], str]:
    """A step's check of a text file (README, changelog): it matches `pattern`."""

    def check(workspace: Path) -> str:
        try:
            text = (workspace / rel).read_text(encoding="utf-8")
        except (OSError, ValueError) as exc:
            return f"{rel} unreadable: {exc}"
        return "" if re.search(pattern, text) else what

    return check


def _max_words_passed(workspace: Path) -> str:
    tree, problem = module(workspace, "slugify/__main__.py")
    fn = function(tree, "slugify_params") if tree is not None else None
    if fn is None:
        return problem or "no slugify_params()"
    passed = any(
        kw.arg == "max_words" and ast.unparse(kw.value) == "args.max_words"
        for node in ast.walk(fn)
        if isinstance(node, ast.Call)
        for kw in node.keywords
    )
    return "" if passed else "slugify_params() does not pass max_words=args.max_words"


_UNICODE_PARAM = "    allow_unicode: bool = False,\n"
_UNICODE_DOC = "    :param allow_unicode (bool): allow unicode characters\n"
_WORDS_DOC = "    :param max_words (int): keep only the first max_words words, 0 for all\n"
_FINALIZE = "    # finalize user-specific replacements\n"
_KEEP_WORDS = (
    "    # keep the first max_words words (optional)\n"
    "    if max_words > 0:\n"
    "        text = DEFAULT_SEPARATOR.join(text.split(DEFAULT_SEPARATOR)[:max_words])\n"
    "\n"
)
_UNICODE_HELP = 'help="Allow unicode characters")\n'
_WORDS_OPTION = (
    '    parser.add_argument("--max-words", type=int, default=0,\n'
    '                        help="Keep only the first N words, 0 for no limit")\n'
)
_CHANGE = "- Add max_words to slugify() and --max-words to the CLI\n"


MAIN = ("parse_args", "slugify_params", "main")
CORE = ("smart_truncate", "slugify")

SLUGIFY = Project(
    "python-slugify",
    "8.0.4",
    "59202371d1d05b54a9e7720c5e038f928f45daaffe41dd10822f3907b937c856",
    (
        Task(
            "where-smart-truncate",
            "question",
            "In which file of this project is the function smart_truncate defined? Give its path.",
            mentions(r"slugify/slugify\.py|(?<![\w/])slugify\.py"),
        ),
        Task(
            "where-uppercase",
            "question",
            "Which file defines the function add_uppercase_char?",
            mentions(r"special\.py"),
        ),
        Task(
            "default-max-length",
            "question",
            "What is the default value of the max_length parameter of smart_truncate?",
            mentions(r"(?<![\w.])0(?!\w|\.\d)"),
        ),
        Task(
            "default-separator",
            "question",
            "What is the value of the constant DEFAULT_SEPARATOR in slugify/slugify.py?",
            mentions(r"""['"`]-['"`]|hyphen|dash"""),
        ),
        Task(
            "cli-word-boundary",
            "question",
            "Which command-line option of the slugify CLI truncates to complete words?",
            mentions(r"--word-boundary"),
        ),
        Task(
            "cli-case",
            "question",
            "Which command-line option of the slugify CLI keeps upper-case letters in the slug?",
            mentions(r"--no-lowercase"),
        ),
        Task(
            "docstring",
            "edit",
            "Add a one-line docstring to the function slugify_params in slugify/__main__.py.",
            edited("slugify/__main__.py", MAIN, _has_docstring),
        ),
        Task(
            "rename-constant",
            "edit",
            "In slugify/slugify.py rename the constant NUMBERS_PATTERN to NUMBER_COMMA_PATTERN "
            "(its definition and every use).",
            edited("slugify/slugify.py", CORE, _renamed),
        ),
        Task(
            "change-default",
            "edit",
            "In slugify/slugify.py change the default value of the max_length parameter of "
            "smart_truncate from 0 to 100. Leave slugify() unchanged.",
            edited("slugify/slugify.py", CORE, _default_changed),
        ),
        Task(
            "type-hint",
            "edit",
            "Add the return type annotation -> None to the function main in slugify/__main__.py.",
            edited("slugify/__main__.py", MAIN, _return_hint),
        ),
        Task(
            "cli-description",
            "edit",
            'In slugify/__main__.py change the ArgumentParser description from "Slug string" to '
            '"Make a slug from text".',
            edited("slugify/__main__.py", MAIN, _description),
        ),
        Task(
            "rename-option",
            "edit",
            "In slugify/__main__.py rename the command-line option --no-lowercase to --keep-case "
            "(same behaviour, same dest).",
            edited("slugify/__main__.py", MAIN, _lowercase_flag),
        ),
        Task(
            "options-refactor",
            "claude",
            "Refactor the whole package: replace the long parameter lists of slugify() and "
            "smart_truncate() with a frozen SlugOptions dataclass in a new module "
            "slugify/options.py, build it from the CLI arguments in slugify/__main__.py, keep the "
            "old keyword arguments working with a deprecation warning, and add tests for every "
            "option.",
            for_claude(),
        ),
        Task(
            "plugin-design",
            "claude",
            "Design and implement a plugin system for per-language transliteration tables across "
            "the package (registration through entry points, precedence over special.py and the "
            "user's replacements, a CLI option to pick languages), with a short design document "
            "explaining the trade-offs.",
            for_claude(),
        ),
        Task(
            "length-invariant",
            "claude",
            "Find every combination of options for which slugify() returns a slug longer than "
            "max_length or ending with the separator, fix the root causes in all modules, and "
            "prove the fix with property-based tests over all the parameters.",
            for_claude(),
        ),
    ),
    advisor_tasks=(
        AdvisorTask(
            "rename-separator",
            "Rename the constant DEFAULT_SEPARATOR to SEPARATOR across the package.",
            (
                (
                    "In `slugify/slugify.py`, replace every `DEFAULT_SEPARATOR` with "
                    "`SEPARATOR` (the definition `DEFAULT_SEPARATOR = '-'` and its 11 uses).",
                    lambda ws: _separator_renamed(ws, "slugify/slugify.py"),
                    ClaudeEdit("slugify/slugify.py", "DEFAULT_SEPARATOR", "SEPARATOR", every=True),
                ),
                (
                    "In `slugify/__main__.py`, replace every `DEFAULT_SEPARATOR` with "
                    "`SEPARATOR` (the import `from .slugify import slugify, DEFAULT_SEPARATOR` "
                    "and its two uses).",
                    lambda ws: _separator_renamed(ws, "slugify/__main__.py"),
                    ClaudeEdit("slugify/__main__.py", "DEFAULT_SEPARATOR", "SEPARATOR", every=True),
                ),
            ),
        ),
        AdvisorTask(
            "trim-parameter",
            "Add a trim parameter to slugify() that keeps leading and trailing separators "
            "when false, and pass it from the command line's parameters.",
            (
                (
                    "In `slugify/slugify.py`, replace `allow_unicode: bool = False,` with "
                    "`allow_unicode: bool = False, trim: bool = True,`.",
                    _trim_parameter,
                    ClaudeEdit(
                        "slugify/slugify.py",
                        "allow_unicode: bool = False,",
                        "allow_unicode: bool = False, trim: bool = True,",
                    ),
                ),
                (
                    "In `slugify/slugify.py`, replace `text = DUPLICATE_DASH_PATTERN.sub("
                    "DEFAULT_SEPARATOR, text).strip(DEFAULT_SEPARATOR)` with `text = "
                    "DUPLICATE_DASH_PATTERN.sub(DEFAULT_SEPARATOR, text).strip(DEFAULT_SEPARATOR "
                    "if trim else '')`.",
                    _trim_used,
                    ClaudeEdit(
                        "slugify/slugify.py",
                        "text = DUPLICATE_DASH_PATTERN.sub(DEFAULT_SEPARATOR, text)"
                        ".strip(DEFAULT_SEPARATOR)",
                        "text = DUPLICATE_DASH_PATTERN.sub(DEFAULT_SEPARATOR, text)"
                        ".strip(DEFAULT_SEPARATOR if trim else '')",
                    ),
                ),
                (
                    "In `slugify/__main__.py`, replace `allow_unicode=args.allow_unicode` with "
                    "`allow_unicode=args.allow_unicode, trim=True`.",
                    _trim_passed,
                    ClaudeEdit(
                        "slugify/__main__.py",
                        "allow_unicode=args.allow_unicode",
                        "allow_unicode=args.allow_unicode, trim=True",
                    ),
                ),
            ),
        ),
        AdvisorTask(
            "docstrings-main",
            "Give every function of slugify/__main__.py without a docstring a one-line one.",
            (
                (
                    "In `slugify/__main__.py`, right under the line `def parse_args(argv: "
                    'list[str]) -> argparse.Namespace:`, add the line `    """Parse the '
                    'command-line arguments."""` (indented four spaces).',
                    lambda ws: _docstring(ws, "parse_args"),
                    ClaudeEdit(
                        "slugify/__main__.py",
                        "def parse_args(argv: list[str]) -> argparse.Namespace:\n",
                        "def parse_args(argv: list[str]) -> argparse.Namespace:\n"
                        '    """Parse the command-line arguments."""\n',
                    ),
                ),
                (
                    "In `slugify/__main__.py`, right under the line `def slugify_params(args: "
                    'argparse.Namespace) -> dict[str, Any]:`, add the line `    """The '
                    'keyword arguments of slugify()."""` (indented four spaces).',
                    lambda ws: _docstring(ws, "slugify_params"),
                    ClaudeEdit(
                        "slugify/__main__.py",
                        "def slugify_params(args: argparse.Namespace) -> dict[str, Any]:\n",
                        "def slugify_params(args: argparse.Namespace) -> dict[str, Any]:\n"
                        '    """The keyword arguments of slugify()."""\n',
                    ),
                ),
            ),
        ),
        AdvisorTask(
            "max-words",
            "Add a max_words parameter to slugify() (default 0: no limit) that keeps only the "
            "first max_words words of the slug, before any truncation; document it in the "
            "docstring and the README, offer it on the command line as --max-words (passed by "
            "slugify_params), and note it in the changelog.",
            (
                (
                    "In `slugify/slugify.py`, right under the parameter line `    allow_unicode: "
                    "bool = False,` of slugify(), add the line `    max_words: int = 0,` "
                    "(indented four spaces).",
                    _max_words_parameter,
                    ClaudeEdit(
                        "slugify/slugify.py",
                        _UNICODE_PARAM,
                        _UNICODE_PARAM + "    max_words: int = 0,\n",
                    ),
                ),
                (
                    "In `slugify/slugify.py`, right under the docstring line `    :param "
                    "allow_unicode (bool): allow unicode characters`, add the line `    :param "
                    "max_words (int): keep only the first max_words words, 0 for all`.",
                    python_matches(
                        "slugify/slugify.py",
                        r":param max_words \(int\):",
                        "slugify()'s docstring has no :param max_words",
                    ),
                    ClaudeEdit("slugify/slugify.py", _UNICODE_DOC, _UNICODE_DOC + _WORDS_DOC),
                ),
                (
                    "In `slugify/slugify.py`, right above the line `    # finalize user-specific "
                    "replacements`, add the lines `    # keep the first max_words words "
                    "(optional)`, `    if max_words > 0:` and `        text = "
                    "DEFAULT_SEPARATOR.join(text.split(DEFAULT_SEPARATOR)[:max_words])`, then a "
                    "blank line.",
                    python_matches(
                        "slugify/slugify.py",
                        r"if max_words > 0:\n\s+text = [^\n]*\[:max_words\]",
                        "slugify() does not cut the words to max_words",
                    ),
                    ClaudeEdit("slugify/slugify.py", _FINALIZE, _KEEP_WORDS + _FINALIZE),
                ),
                (
                    "In `slugify/__main__.py`, right under the line `                        "
                    'help="Allow unicode characters")` (the end of the --allow-unicode option), '
                    'add the option `parser.add_argument("--max-words", type=int, default=0, '
                    'help="Keep only the first N words, 0 for no limit")`, written on two lines '
                    "as the options above it are.",
                    python_matches(
                        "slugify/__main__.py",
                        r"add_argument\(\s*['\"]--max-words['\"],\s*type=int,\s*default=0\b",
                        "no --max-words option (type=int, default=0)",
                    ),
                    ClaudeEdit("slugify/__main__.py", _UNICODE_HELP, _UNICODE_HELP + _WORDS_OPTION),
                ),
                (
                    "In `slugify/__main__.py`, replace the line `        "
                    "allow_unicode=args.allow_unicode` (the last keyword of slugify_params) with "
                    "the lines `        allow_unicode=args.allow_unicode,` and `        "
                    "max_words=args.max_words`.",
                    _max_words_passed,
                    ClaudeEdit(
                        "slugify/__main__.py",
                        "        allow_unicode=args.allow_unicode\n",
                        "        allow_unicode=args.allow_unicode,\n"
                        "        max_words=args.max_words\n",
                    ),
                ),
                (
                    "In `README.md`, right under the line `    allow_unicode: bool = False,` of "
                    "the signature of slugify(), add the line `    max_words: int = 0,`.",
                    _in_text(
                        "README.md",
                        r"allow_unicode: bool = False,\n\s*max_words: int = 0,",
                        "the README's signature of slugify() has no max_words",
                    ),
                    ClaudeEdit(
                        "README.md", _UNICODE_PARAM, _UNICODE_PARAM + "    max_words: int = 0,\n"
                    ),
                ),
                (
                    "In `README.md`, right under the line `  :param allow_unicode (bool): allow "
                    "unicode characters` of the docstring of slugify(), add the line `  :param "
                    "max_words (int): keep only the first max_words words, 0 for all`.",
                    _in_text(
                        "README.md",
                        r":param max_words \(int\):",
                        "the README's docstring of slugify() has no :param max_words",
                    ),
                    ClaudeEdit("README.md", _UNICODE_DOC[2:], _UNICODE_DOC[2:] + _WORDS_DOC[2:]),
                ),
                (
                    "In `CHANGELOG.md`, right above the line `## 8.0.4` (the first), add the "
                    "lines `## Unreleased`, a blank line, `- Add max_words to slugify() and "
                    "--max-words to the CLI` and a blank line.",
                    _in_text(
                        "CHANGELOG.md",
                        r"\A## Unreleased\n\n- Add max_words\b",
                        "the changelog does not start with an Unreleased max_words entry",
                    ),
                    ClaudeEdit(
                        "CHANGELOG.md", "## 8.0.4\n", f"## Unreleased\n\n{_CHANGE}\n## 8.0.4\n"
                    ),
                ),
            ),
        ),
    ),
)
