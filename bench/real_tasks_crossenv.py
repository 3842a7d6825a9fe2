"""cross-env 7.0.3 (MIT, JavaScript) and its tasks for `bench/real_tasks.py`.

The third real package, and the first that is not Python: the npm registry's tarball (fetched
with `npm pack`, pinned by sha256; its sha1 is the registry's `dist.shasum`
865264b29677dc015ba8418918965dd232fc54cf). Plain CommonJS, about 200 lines in six files under
`src/` (`index.js`, `command.js`, `variable.js`, `is-windows.js` and the two CLI commands
`bin/cross-env.js` and `bin/cross-env-shell.js`), with a 19 KB README beside them. Its names
are what small models guess wrong: a module-level `Set` (`pathLikeEnvVarWhitelist`), a regex
constant (`envSetterRegex`), a default parameter (`normalize = false`), an exit code chosen
for SIGINT. Questions come in English, everyday English, German, Japanese and Russian; edits
are checked with `node --check` and text (`js_edited`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from bench.real_tasks_suite import (
    AdvisorTask,
    ClaudeEdit,
    Project,
    Task,
    for_claude,
    js_edited,
    mentions,
    node_check,
)

INDEX = "src/index.js"
COMMAND = "src/command.js"
VARIABLE = "src/variable.js"
CORE_INDEX = ("crossEnv", "parseCommand", "getEnvVars")
CORE_VARIABLE = ("replaceListDelimiters", "resolveEnvVars", "varValueConvert")


def _renamed(source: str) -> str:
    if re.search(r"\bpathLikeEnvVarWhitelist\b", source):
        return "pathLikeEnvVarWhitelist still there"
    defined = bool(re.search(r"\bconst\s+PATH_LIKE_ENV_VARS\s*=\s*new\s+Set\(", source))
    uses = len(re.findall(r"\bPATH_LIKE_ENV_VARS\b", source))
    found = f"PATH_LIKE_ENV_VARS defined={defined}, {uses} mention(s)"
    return "" if defined and uses >= 2 else found


def _normalize_default(source: str) -> str:
    head = re.search(r"function\s+commandConvert\s*\(([^)]*)\)", source)
    if head is None:
        return "no function commandConvert(...)"
    params = re.sub(r"\s+", " ", head.group(1)).strip()
    return "" if params == "command, env, normalize = true" else f"commandConvert({params})"


def _jsdoc(source: str) -> str:
    documented = re.search(r"/\*\*(?:(?!\*/)[\s\S])*\*/\s*function\s+parseCommand\s*\(", source)
    return "" if documented else "no /** ... */ comment right above function parseCommand"


def _stdio(source: str) -> str:
    if not re.search(r"\bstdio\s*:\s*(['\"`])pipe\1", source):
        return "spawn's stdio is not 'pipe'"
    return "'inherit' still there" if "inherit" in source else ""


def _pythonpath(source: str) -> str:
    found = re.search(r"new\s+Set\(\s*\[([^\]]*)\]\s*\)", source)
    if found is None:
        return "no new Set([...]) of path-like variables"
    names = set(re.findall(r"(['\"`])(\w+)\1", found.group(1)))
    names = {name for _, name in names}
    want = {"PATH", "NODE_PATH", "PYTHONPATH"}
    return "" if names == want else f"the Set holds {sorted(names)}"


def _sigint_code(source: str) -> str:
    if re.search(r"signal\s*===\s*(['\"])SIGINT\1\s*\?\s*130\s*:\s*1\b", source):
        return ""
    found = re.search(r"signal\s*===\s*['\"]SIGINT['\"]\s*\?[^\n]*", source)
    return f"SIGINT line is {found.group(0)!r}" if found else "the SIGINT exit-code line is gone"


# -- advisor tasks (issue 32): each step's check of the files, and Claude's edit for it ---------


def _js_step(rel: str, test: Callable[[str], str]) -> Callable[[Path], str]:
    """A step's check: `rel` passes `node --check` and `test(source)` finds no fault."""

    def check(workspace: Path) -> str:
        problem = node_check(workspace / rel)
        return problem or test((workspace / rel).read_text(encoding="utf-8"))

    return check


def _windows_renamed(source: str) -> str:
    if re.search(r"\bisWindows\b", source):
        return "isWindows still there"
    uses = len(re.findall(r"\bonWindows\b", source))
    return "" if uses >= 2 else f"onWindows named {uses} time(s)"


def _has(pattern: str, what: str) -> Callable[[str], str]:
    return lambda source: "" if re.search(pattern, source) else what


_ENV_HEAD = "function getEnvVars(envSetters) {"
_PARSE_HEAD = "function parseCommand(args) {"
_PARSE_DOC = "/** Splits the arguments into the env setters, the command and its arguments. */"
_ENV_DOC = "/** The command's environment: process.env with the setters applied. */"


def _documented(name: str) -> Callable[[str], str]:
    above = rf"/\*\*(?:(?!\*/)[\s\S])*\*/\s*function\s+{name}\s*\("
    return _has(above, f"no /** ... */ comment right above function {name}")


_VAR_NAME_DOC = " * @param {String} varName Original name of the env variable\n"
_PATH_LIKE_DOC = (
    " * @param {Set<String>} [pathLikeVars] The variables whose values are lists of paths\n"
)
_DELIMITERS_HEAD = "function replaceListDelimiters(varValue, varName = '') {"
_CONVERT_HEAD = "function varValueConvert(originalValue, originalName) {"


ADVISOR_TASKS = (
    AdvisorTask(
        "rename-iswindows",
        "Rename isWindows to onWindows wherever it is imported (src/command.js and "
        "src/variable.js); the module file is-windows.js keeps its name.",
        (
            (
                f"In `{COMMAND}`, replace every `isWindows` with `onWindows` (the require "
                "`const isWindows = require('./is-windows')` and its call `isWindows()`).",
                _js_step(COMMAND, _windows_renamed),
                ClaudeEdit(COMMAND, "isWindows", "onWindows", every=True),
            ),
            (
                f"In `{VARIABLE}`, replace every `isWindows` with `onWindows` (the require "
                "and its call in replaceListDelimiters).",
                _js_step(VARIABLE, _windows_renamed),
                ClaudeEdit(VARIABLE, "isWindows", "onWindows", every=True),
            ),
        ),
    ),
    AdvisorTask(
        "env-parameter",
        "Let getEnvVars() take extra environment variables (extraEnv, default {}) that "
        "override process.env, and pass options.env to it from crossEnv().",
        (
            (
                f"In `{INDEX}`, replace `{_ENV_HEAD}` with "
                "`function getEnvVars(envSetters, extraEnv = {}) {`.",
                _js_step(
                    INDEX,
                    _has(
                        r"function\s+getEnvVars\s*\(\s*envSetters\s*,\s*extraEnv\s*=\s*\{\s*\}\s*\)",
                        "getEnvVars has no extraEnv = {} parameter",
                    ),
                ),
                ClaudeEdit(INDEX, _ENV_HEAD, "function getEnvVars(envSetters, extraEnv = {}) {"),
            ),
            (
                f"In `{INDEX}`, replace `const envVars = {{...process.env}}` with "
                "`const envVars = {...process.env, ...extraEnv}`.",
                _js_step(
                    INDEX,
                    _has(r"\.\.\.process\.env\s*,\s*\.\.\.extraEnv\b", "extraEnv is not merged"),
                ),
                ClaudeEdit(
                    INDEX,
                    "const envVars = {...process.env}",
                    "const envVars = {...process.env, ...extraEnv}",
                ),
            ),
            (
                f"In `{INDEX}`, replace `const env = getEnvVars(envSetters)` with "
                "`const env = getEnvVars(envSetters, options.env)`.",
                _js_step(
                    INDEX,
                    _has(
                        r"getEnvVars\(\s*envSetters\s*,\s*options\.env\s*\)",
                        "crossEnv() does not pass options.env",
                    ),
                ),
                ClaudeEdit(
                    INDEX,
                    "const env = getEnvVars(envSetters)",
                    "const env = getEnvVars(envSetters, options.env)",
                ),
            ),
        ),
    ),
    AdvisorTask(
        "jsdoc-index",
        f"Give parseCommand and getEnvVars in {INDEX} a one-line JSDoc comment each.",
        (
            (
                f"In `{INDEX}`, right above the line `{_PARSE_HEAD}`, add the line `{_PARSE_DOC}`.",
                _js_step(INDEX, _documented("parseCommand")),
                ClaudeEdit(INDEX, _PARSE_HEAD, f"{_PARSE_DOC}\n{_PARSE_HEAD}"),
            ),
            (
                f"In `{INDEX}`, right above the line `{_ENV_HEAD}`, add the line `{_ENV_DOC}`.",
                _js_step(INDEX, _documented("getEnvVars")),
                ClaudeEdit(INDEX, _ENV_HEAD, f"{_ENV_DOC}\n{_ENV_HEAD}"),
            ),
        ),
    ),
    AdvisorTask(
        "path-like-option",
        "Let crossEnv() take options.pathLikeVars, a Set of the variables whose values are "
        "lists of paths, passed through getEnvVars() and varValueConvert() to "
        "replaceListDelimiters(), which falls back to pathLikeEnvVarWhitelist; document the "
        "new parameter of replaceListDelimiters().",
        (
            (
                f"In `{VARIABLE}`, replace `{_DELIMITERS_HEAD}` with `function "
                "replaceListDelimiters(varValue, varName = '', pathLikeVars = "
                "pathLikeEnvVarWhitelist) {`.",
                _js_step(
                    VARIABLE,
                    _has(
                        r"function\s+replaceListDelimiters\s*\([^)]*,\s*pathLikeVars\s*=\s*"
                        r"pathLikeEnvVarWhitelist\s*\)",
                        "replaceListDelimiters has no pathLikeVars = pathLikeEnvVarWhitelist",
                    ),
                ),
                ClaudeEdit(
                    VARIABLE,
                    _DELIMITERS_HEAD,
                    "function replaceListDelimiters(varValue, varName = '', "
                    "pathLikeVars = pathLikeEnvVarWhitelist) {",
                ),
            ),
            (
                f"In `{VARIABLE}`, replace `if (!pathLikeEnvVarWhitelist.has(varName)) {{` "
                "with `if (!pathLikeVars.has(varName)) {`.",
                _js_step(
                    VARIABLE,
                    _has(
                        r"if\s*\(\s*!\s*pathLikeVars\.has\(\s*varName\s*\)\s*\)",
                        "replaceListDelimiters does not look names up in pathLikeVars",
                    ),
                ),
                ClaudeEdit(
                    VARIABLE,
                    "if (!pathLikeEnvVarWhitelist.has(varName)) {",
                    "if (!pathLikeVars.has(varName)) {",
                ),
            ),
            (
                f"In `{VARIABLE}`, right under the JSDoc line `{_VAR_NAME_DOC.strip()}` of "
                f"replaceListDelimiters, add the line `{_PATH_LIKE_DOC.rstrip()}`.",
                _js_step(
                    VARIABLE,
                    _has(
                        r"@param\s+\{Set<String>\}\s+\[pathLikeVars\]",
                        "no @param {Set<String>} [pathLikeVars] in the JSDoc",
                    ),
                ),
                ClaudeEdit(VARIABLE, _VAR_NAME_DOC, _VAR_NAME_DOC + _PATH_LIKE_DOC),
            ),
            (
                f"In `{VARIABLE}`, replace `{_CONVERT_HEAD}` with "
                "`function varValueConvert(originalValue, originalName, pathLikeVars) {`.",
                _js_step(
                    VARIABLE,
                    _has(
                        r"function\s+varValueConvert\s*\(\s*originalValue\s*,\s*originalName"
                        r"\s*,\s*pathLikeVars\s*\)",
                        "varValueConvert has no pathLikeVars parameter",
                    ),
                ),
                ClaudeEdit(
                    VARIABLE,
                    _CONVERT_HEAD,
                    "function varValueConvert(originalValue, originalName, pathLikeVars) {",
                ),
            ),
            (
                f"In `{VARIABLE}`, replace `replaceListDelimiters(originalValue, originalName)` "
                "with `replaceListDelimiters(originalValue, originalName, pathLikeVars)`.",
                _js_step(
                    VARIABLE,
                    _has(
                        r"replaceListDelimiters\(\s*originalValue\s*,\s*originalName\s*,"
                        r"\s*pathLikeVars\s*\)",
                        "varValueConvert does not pass pathLikeVars on",
                    ),
                ),
                ClaudeEdit(
                    VARIABLE,
                    "replaceListDelimiters(originalValue, originalName)",
                    "replaceListDelimiters(originalValue, originalName, pathLikeVars)",
                ),
            ),
            (
                f"In `{INDEX}`, replace `{_ENV_HEAD}` with "
                "`function getEnvVars(envSetters, pathLikeVars) {`.",
                _js_step(
                    INDEX,
                    _has(
                        r"function\s+getEnvVars\s*\(\s*envSetters\s*,\s*pathLikeVars\s*\)",
                        "getEnvVars has no pathLikeVars parameter",
                    ),
                ),
                ClaudeEdit(INDEX, _ENV_HEAD, "function getEnvVars(envSetters, pathLikeVars) {"),
            ),
            (
                f"In `{INDEX}`, replace `varValueConvert(envSetters[varName], varName)` with "
                "`varValueConvert(envSetters[varName], varName, pathLikeVars)`.",
                _js_step(
                    INDEX,
                    _has(
                        r"varValueConvert\(\s*envSetters\[varName\]\s*,\s*varName\s*,"
                        r"\s*pathLikeVars\s*\)",
                        "getEnvVars does not pass pathLikeVars to varValueConvert",
                    ),
                ),
                ClaudeEdit(
                    INDEX,
                    "varValueConvert(envSetters[varName], varName)",
                    "varValueConvert(envSetters[varName], varName, pathLikeVars)",
                ),
            ),
            (
                f"In `{INDEX}`, replace `const env = getEnvVars(envSetters)` with "
                "`const env = getEnvVars(envSetters, options.pathLikeVars)`.",
                _js_step(
                    INDEX,
                    _has(
                        r"getEnvVars\(\s*envSetters\s*,\s*options\.pathLikeVars\s*\)",
                        "crossEnv() does not pass options.pathLikeVars",
                    ),
                ),
                ClaudeEdit(
                    INDEX,
                    "const env = getEnvVars(envSetters)",
                    "const env = getEnvVars(envSetters, options.pathLikeVars)",
                ),
            ),
        ),
    ),
)


CROSSENV = Project(
    "cross-env",
    "7.0.3",
    "d44ad3b6925ff024f64fc4eec88a7da8b8291dd66de858c34866be611ad3c5de",
    (
        Task(
            "where-var-value",
            "question",
            "In which file of this project is the function varValueConvert defined? Give its path.",
            mentions(r"variable\.js"),
        ),
        Task(
            "where-command-live",
            "question",
            "where's the commandConvert function live?",
            mentions(r"command\.js"),
        ),
        Task(
            "wo-parse-command",
            "question",
            "Wo ist die Funktion parseCommand definiert? Nenne die Datei.",
            mentions(r"(?<![\w-])index\.js"),
        ),
        Task(
            "doko-list-delims",
            "question",
            "replaceListDelimiters 関数はどのファイルに定義されていますか？",  # noqa: RUF001
            mentions(r"variable\.js"),
        ),
        Task(
            "normalize-default-ru",
            "question",
            "Какое значение по умолчанию у параметра normalize в функции commandConvert?",  # noqa: RUF001
            mentions(r"\bfalse\b"),
        ),
        Task(
            "path-like-vars",
            "question",
            "which env vars does cross-env treat as lists of paths, turning ':' into ';' on "
            "Windows?",
            mentions(r"\bNODE_PATH\b", r"(?<!\w)PATH\b"),
        ),
        Task(
            "sigint-exit-code",
            "question",
            "If the command that cross-env runs is killed by SIGINT (Ctrl+C), which exit code "
            "does cross-env itself exit with?",
            mentions(r"(?<![\w.])0(?!\w|\.\d)"),
        ),
        Task(
            "rename-whitelist",
            "edit",
            "In src/variable.js rename the constant pathLikeEnvVarWhitelist to PATH_LIKE_ENV_VARS "
            "(its definition and every use).",
            js_edited(VARIABLE, CORE_VARIABLE, _renamed),
        ),
        Task(
            "normalize-default",
            "edit",
            "In src/command.js change the default value of the normalize parameter of "
            "commandConvert from false to true.",
            js_edited(COMMAND, ("commandConvert",), _normalize_default),
        ),
        Task(
            "jsdoc-parse-command",
            "edit",
            "Add a JSDoc comment to the function parseCommand in src/index.js that describes its "
            "parameter and what it returns.",
            js_edited(INDEX, CORE_INDEX, _jsdoc),
        ),
        Task(
            "stdio-pipe",
            "edit",
            "In src/index.js change the stdio option passed to spawn from 'inherit' to 'pipe'.",
            js_edited(INDEX, CORE_INDEX, _stdio),
        ),
        Task(
            "pythonpath",
            "edit",
            "Could you make cross-env treat PYTHONPATH like PATH too? Its value is a list of "
            "folders, so src/variable.js should convert its separators on Windows as well.",
            js_edited(VARIABLE, CORE_VARIABLE, _pythonpath),
        ),
        Task(
            "sigint-code-de",
            "edit",
            "Ändere in src/index.js den Exit-Code, mit dem cross-env endet, wenn der Kindprozess "
            "durch SIGINT beendet wurde, von 0 auf 130.",
            js_edited(INDEX, CORE_INDEX, _sigint_code),
        ),
        Task(
            "typescript-port",
            "claude",
            "Port the whole package to TypeScript with strict types: convert every module under "
            "src/ (index, command, variable, is-windows and both bin scripts) to .ts, type the "
            "options object and the environment maps, add a tsconfig.json and a build script, "
            "and keep the published CommonJS entry points and both CLI commands working.",
            for_claude(),
        ),
        Task(
            "env-file-module",
            "claude",
            "Add a new module src/env-file.js that loads variables from a .env file before the "
            "command-line setters are applied (an --env-file option for both cross-env and "
            "cross-env-shell), with Jest tests for quoting, escaped $ signs and Windows path "
            "lists, and document it in the README.",
            for_claude(),
        ),
    ),
    registry="npm",
    advisor_tasks=ADVISOR_TASKS,
)
