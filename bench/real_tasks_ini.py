"""ini 5.0.0 (ISC, JavaScript) and its tasks for `bench/real_tasks.py`.

The sixth real package, added as one nobody had tuned milk to: its tasks were written from the
package's files before any run. The npm registry's tarball (fetched with `npm pack`, pinned by
sha256; its sha1 is the registry's `dist.shasum` a7a4615339843d9a8ccc2d85c9d81cf93ffbc638).
Plain CommonJS in one file, `lib/ini.js` (280 lines: `encode` with its options `align`,
`newline`, `sort`, `whitespace`, `platform` and `bracketedArray`, `decode`, the escaping pair
`safe`/`unsafe` and the helpers `splitSections` and `isQuoted`), with a 180-line README beside
it. Questions come in English, everyday English, German, Japanese, Russian and Spanish; edits in
English, French, German and Russian. An edit is checked with `node --check` and text
(`js_edited`), then by loading the edited module in node: its exports still round-trip a
sample through `encode` and `decode`, and the change behaves as asked.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from bench.real_tasks_suite import (
    Check,
    Project,
    Task,
    for_claude,
    js_edited_and_run,
    js_renamed,
    mentions,
    no_text,
    node_runs,
)

INI_JS = "lib/ini.js"
CORE = ("encode", "decode", "safe", "unsafe", "isQuoted")

SMOKE = r"""
const assert = require('assert')
const ini = require(process.argv[1])
for (const name of ['parse', 'decode', 'stringify', 'encode', 'safe', 'unsafe']) {
  assert.strictEqual(typeof ini[name], 'function', `ini.${name} is not a function`)
}
const plain = (value) => JSON.parse(JSON.stringify(value))
const data = {
  top: 'x', flag: true, list: ['a', 'b'],
  sec: { k: 'v;w#z', 'dotted.key': 'd', sub: { deep: '1' } },
}
assert.deepStrictEqual(plain(ini.decode(ini.encode(data))), data, 'encode/decode round trip')
const text = '; one\n# two\n[s]\na = 1\nb[] = x\nb[] = y\n[s.t]\nc = "q"\n'
assert.deepStrictEqual(
  plain(ini.parse(text)), { s: { a: '1', b: ['x', 'y'], t: { c: 'q' } } }, 'decode of a sample'
)
"""
"""Run by node on the edited file: the exports are there and still round-trip."""


def _behaves(extra: str = "") -> Callable[[Path], str]:
    """'' when node loads the workspace's `lib/ini.js` and `SMOKE` plus `extra` (more asserts,
    `ini` in scope) pass, else node's first error line."""

    def run(workspace: Path) -> str:
        script, target = SMOKE + extra, str(workspace / INI_JS)
        return node_runs(script, target, workspace, f"{INI_JS} misbehaves in node")

    return run


def ini_edited(test: Callable[[str], str], extra: str = "") -> Check:
    """`js_edited` on `lib/ini.js` (parses, keeps `CORE`, `test(source)` finds no fault), then
    the module loaded in node behaves (`_behaves(extra)`)."""
    return js_edited_and_run(INI_JS, CORE, test, _behaves(extra))


def _jsdoc(source: str) -> str:
    found = re.search(
        r"/\*\*((?:(?!\*/)[\s\S])*)\*/\s*"
        r"(?:(?:const|let|var)\s+unsafe\s*=|function\s+unsafe\s*\()",
        source,
    )
    if found is None:
        return "no /** ... */ comment right above unsafe"
    missing = [tag for tag in ("@param", "@returns?") if not re.search(tag + r"\b", found[1])]
    return f"the comment has no {' or '.join(missing)}" if missing else ""


WHITESPACE = r"""
assert.strictEqual(ini.encode({ a: 1 }), 'a = 1\n', 'encode({a: 1}) by default')
assert.strictEqual(ini.encode({ a: 1 }, { whitespace: false }), 'a=1\n', 'whitespace: false')
assert.strictEqual(ini.encode({ a: 1 }, { whitespace: true }), 'a = 1\n', 'whitespace: true')
"""
SLASH_COMMENTS = r"""
assert.deepStrictEqual(plain(ini.decode('// note\na=1\n  // indented\n')), { a: '1' }, '//')
assert.deepStrictEqual(plain(ini.decode('; x\n# y\nb=2')), { b: '2' }, '; and # still comments')
assert.deepStrictEqual(plain(ini.decode('url=http://h/p')), { url: 'http://h/p' }, 'a // inside')
"""
BARE_KEY = r"""
assert.deepStrictEqual(plain(ini.decode('flag\n[s]\nother\n')), { flag: '', s: { other: '' } },
  'a key without = is an empty string')
assert.deepStrictEqual(plain(ini.decode('a=true\nb=\nc=null')), { a: true, b: '', c: null },
  'explicit values unchanged')
"""


INI = Project(
    "ini",
    "5.0.0",
    "24528c4a937243c4251889a968ec0e3bd180e061a4538d450c777c392f474986",
    (
        Task(
            "which-splits-sections",
            "question",
            "Which function splits a section name like a.b.c on its dots (leaving escaped dots "
            "alone), and in which file is it defined?",
            mentions(r"\bsplitSections\b", r"(?<![\w-])ini\.js"),
        ),
        Task(
            "bare-key-value",
            "question",
            "if a line in my ini file is just a key with no = sign, what value does parse give "
            "that key?",
            mentions(r"\btrue\b"),
        ),
        Task(
            "windows-eol-de",
            "question",
            "Welches Zeilenende schreibt encode, wenn die Plattform win32 ist?",
            mentions(r"\\r\\n|\bCRLF\b|CR\s*\+?\s*LF"),
        ),
        Task(
            "array-suffix-ja",
            "question",
            "encode で配列の値を書き出すとき、デフォルトではキー名の後ろに何が付きますか？",  # noqa: RUF001
            mentions(r"\[\]"),
        ),
        Task(
            "escape-function-ru",
            "question",
            "Какая функция экранирует символы ; и # в значениях, когда объект записывается в INI?",
            mentions(r"\bsafe\b"),
        ),
        Task(
            "false-string-es",
            "question",
            "Cuando decode lee una línea como enabled=false, ¿el valor es la cadena 'false' o un "
            "booleano?",
            mentions(r"boole"),
        ),
        Task(
            "rename-split-sections",
            "edit",
            "In lib/ini.js rename the function splitSections to splitOnSeparator, and update "
            "every call of it.",
            ini_edited(js_renamed("splitSections", "splitOnSeparator")),
        ),
        Task(
            "whitespace-default-fr",
            "edit",
            "Dans lib/ini.js, fais en sorte que encode mette par défaut des espaces autour du "
            "signe = (a = 1 au lieu de a=1). Avec l'option whitespace: false, on doit toujours "
            "obtenir la sortie compacte.",
            ini_edited(no_text, WHITESPACE),
        ),
        Task(
            "jsdoc-unsafe-de",
            "edit",
            "Füge der Funktion unsafe in lib/ini.js einen JSDoc-Kommentar hinzu, der ihren "
            "Parameter und ihren Rückgabewert beschreibt.",
            ini_edited(_jsdoc),
        ),
        Task(
            "slash-comments-ru",
            "edit",
            "Сделай в lib/ini.js так, чтобы decode пропускал и строки, начинающиеся с //, как "  # noqa: RUF001
            "комментарии, так же как строки с ; и #.",  # noqa: RUF001
            ini_edited(no_text, SLASH_COMMENTS),
        ),
        Task(
            "bare-key-empty",
            "edit",
            "When decode reads a key with no = after it, it sets the value to true. Change "
            "lib/ini.js so such a key gets an empty string instead.",
            ini_edited(no_text, BARE_KEY),
        ),
        Task(
            "split-esm-types",
            "claude",
            "Split lib/ini.js into separate modules for encoding, decoding and escaping, publish "
            "the package as dual ESM and CommonJS with TypeScript declarations for every encode "
            "and decode option, add tap tests covering each option (align, sort, newline, "
            "whitespace, platform, bracketedArray) and document them all in the README.",
            for_claude(),
        ),
    ),
    registry="npm",
)
