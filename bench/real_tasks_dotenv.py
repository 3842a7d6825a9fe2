"""dotenv 16.4.5 (BSD-2-Clause, JavaScript) and its tasks for `bench/real_tasks.py`.

The fifth real package, added in session 21 as one nobody had tuned milk to: its tasks were
written from the package's files before any run, and none was changed after one. The npm
registry's tarball (fetched with `npm pack`, pinned by sha256). Plain CommonJS: `lib/main.js`
(360 lines: the `.env` parser, the vault decryption, `config`, `populate`),
`lib/env-options.js` (options from `DOTENV_CONFIG_*` variables), `lib/cli-options.js` (options
from `dotenv_config_*=` arguments) and `config.js`, with a 728-line README beside them and its
Spanish translation. Questions come in English, everyday English, German, Spanish and
Japanese; edits in English, German and Russian; checked with `node --check` and text
(`js_edited`).
"""

from __future__ import annotations

import re

from bench.real_tasks_suite import Project, Task, for_claude, js_edited, mentions

MAIN = "lib/main.js"
ENV_OPTIONS = "lib/env-options.js"
CORE_MAIN = ("parse", "configDotenv", "config", "decrypt", "populate")


def _log_renamed(source: str) -> str:
    if re.search(r"(?<![\w$.])_log\b", source):
        return "_log still there"
    defined = bool(re.search(r"\bfunction\s+_info\s*\(", source))
    uses = len(re.findall(r"(?<![\w$.])_info\s*\(", source))
    return "" if defined and uses >= 2 else f"_info defined={defined}, {uses} call(s)"


def _encoding(source: str) -> str:
    if re.search(r"let\s+encoding\s*=\s*['\"]latin1['\"]", source):
        return ""
    return "no `let encoding = 'latin1'`"


def _jsdoc(source: str) -> str:
    documented = re.search(r"/\*\*(?:(?!\*/)[\s\S])*\*/\s*function\s+populate\s*\(", source)
    return "" if documented else "no /** ... */ comment right above function populate"


def _message(source: str) -> str:
    if "INVALID_DOTENV_KEY: Missing key part" in source:
        return "the old message is still there"
    if "INVALID_DOTENV_KEY: the key part is missing" not in source:
        return "the new message is not there"
    return ""


def _quiet(source: str) -> str:
    read = re.search(
        r"if\s*\(\s*process\.env\.DOTENV_CONFIG_QUIET\s*!=\s*null\s*\)\s*\{?\s*"
        r"options\.quiet\s*=\s*process\.env\.DOTENV_CONFIG_QUIET",
        source,
    )
    if read is None:
        return "DOTENV_CONFIG_QUIET is not read into options.quiet as the others are"
    if len(re.findall(r"process\.env\.DOTENV_CONFIG_\w+\s*!=\s*null", source)) != 6:
        return "the other options are not all still read"
    return ""


DOTENV = Project(
    "dotenv",
    "16.4.5",
    "0ae24e5b77e0346558b024ab2ee87bc4d42e3570147e7af755cf6e8671e96637",
    (
        Task(
            "where-populate",
            "question",
            "In which file of this project is the function populate defined? Give its path.",
            mentions(r"lib/main\.js|(?<![\w/])main\.js"),
        ),
        Task(
            "default-encoding",
            "question",
            "which encoding does configDotenv fall back to if I don't pass one?",
            mentions(r"utf-?8"),
        ),
        Task(
            "env-path-de",
            "question",
            "Mit welcher Umgebungsvariable setzt man den Pfad der .env-Datei für config.js?",
            mentions(r"DOTENV_CONFIG_PATH"),
        ),
        Task(
            "cli-prefix",
            "question",
            "What prefix must a command-line argument have for config.js to read it as an option?",
            mentions(r"dotenv_config_"),
        ),
        Task(
            "key-length-es",
            "question",
            "¿Cuántos caracteres debe tener como mínimo la clave que recibe decrypt?",
            mentions(r"(?<![\w.])64(?![\w.])"),
        ),
        Task(
            "override-ja",
            "question",
            "populate の override オプションを渡さないとき、既存の環境変数は上書きされますか？",  # noqa: RUF001
            # not overwritten: a "no" in any of these words, or the debug message's own text
            mentions(r"(?i)\bnot\b|いいえ|されません|しません|ない|false|NOT overwritten"),
        ),
        Task(
            "rename-log",
            "edit",
            "In lib/main.js rename the helper function _log to _info, with every call of it.",
            js_edited(MAIN, CORE_MAIN, _log_renamed),
        ),
        Task(
            "encoding-latin1",
            "edit",
            "In lib/main.js change the default encoding of configDotenv from 'utf8' to 'latin1'.",
            js_edited(MAIN, CORE_MAIN, _encoding),
        ),
        Task(
            "jsdoc-ru",
            "edit",
            "Добавь JSDoc-комментарий к функции populate в lib/main.js.",
            js_edited(MAIN, CORE_MAIN, _jsdoc),
        ),
        Task(
            "message-de",
            "edit",
            "Ändere in lib/main.js die Fehlermeldung 'INVALID_DOTENV_KEY: Missing key part' zu "
            "'INVALID_DOTENV_KEY: the key part is missing'.",
            js_edited(MAIN, CORE_MAIN, _message),
        ),
        Task(
            "quiet-option",
            "edit",
            "In lib/env-options.js also read DOTENV_CONFIG_QUIET into options.quiet, the way the "
            "other options are read.",
            js_edited(ENV_OPTIONS, (), _quiet),
        ),
        Task(
            "typescript",
            "claude",
            "Port the whole package to TypeScript: typed options for config, parse, populate and "
            "decrypt, a build step that emits the CommonJS files, declaration files generated "
            "instead of hand-written, and tests for every exported function.",
            for_claude(),
        ),
    ),
    registry="npm",
)
