"""semver 7.8.6 (ISC, JavaScript) and its tasks for `bench/real_tasks.py`.

The seventh real package, added like ini as one nobody had tuned milk to: its tasks were
written from the package's files before any run. The npm registry's tarball (fetched with `npm
pack`, pinned by sha256; its sha1 is the registry's `dist.shasum`
67c0cda133a3ceb6f70b803e67625bf969000424). Plain CommonJS in 50 small files: `classes/`
(`SemVer`, `Range`, `Comparator`), `functions/` and `ranges/` (one exported function a file:
`inc`, `diff`, `cmp`, `major`, `truncate`, `satisfies`, `gtr`, `subset`, ...), `internal/`
(the regexes in `re.js`, `constants.js`, the `LRUCache` of parsed ranges, `parse-options.js`,
`identifiers.js`, `trim-comparator-whitespace.js`), `index.js` gathering them all and the CLI
`bin/semver.js`, with a 680-line README beside them. Questions come in English, everyday
English, German, Japanese, Russian and Spanish; edits in English, French, German, Russian and
Chinese, each on one file. An edit is checked with `node --check` and text (`js_edited`), then
by loading the edited workspace's `index.js` in node: the library still parses, compares,
increments and matches ranges on a few samples, and the change behaves as asked.
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

SUBSET_JS = "ranges/subset.js"
LRUCACHE_JS = "internal/lrucache.js"
TRUNCATE_JS = "functions/truncate.js"
CMP_JS = "functions/cmp.js"
MAJOR_JS = "functions/major.js"

SMOKE = r"""
const assert = require('assert')
const path = require('path')
const root = process.argv[1]
const semver = require(path.join(root, 'index.js'))
for (const name of ['parse', 'valid', 'clean', 'inc', 'diff', 'compare', 'sort', 'cmp',
  'major', 'truncate', 'satisfies', 'maxSatisfying', 'gtr', 'subset', 'coerce']) {
  assert.strictEqual(typeof semver[name], 'function', `semver.${name} is not a function`)
}
assert.strictEqual(semver.valid('1.2.3'), '1.2.3', 'valid')
assert.strictEqual(semver.valid('a.b.c'), null, 'valid of a non-version')
assert.strictEqual(semver.clean('  =v1.2.3   '), '1.2.3', 'clean')
assert.strictEqual(semver.compare('1.2.3', '1.10.0'), -1, 'compare')
assert.deepStrictEqual(semver.sort(['1.10.0', '1.2.3', '1.2.3-rc.1']),
  ['1.2.3-rc.1', '1.2.3', '1.10.0'], 'sort')
assert.strictEqual(semver.inc('1.2.3', 'prerelease', 'beta'), '1.2.4-beta.0', 'inc prerelease')
assert.strictEqual(semver.inc('1.2.3', 'minor'), '1.3.0', 'inc minor')
assert.strictEqual(semver.diff('1.2.3', '1.3.0'), 'minor', 'diff')
assert.strictEqual(semver.cmp('1.2.3', '<', '1.2.4'), true, 'cmp <')
assert.strictEqual(semver.major('2.3.4'), 2, 'major')
assert.strictEqual(semver.truncate('1.2.3-rc.1', 'minor'), '1.2.0', 'truncate')
assert.strictEqual(semver.satisfies('1.2.3', '1.x || >=2.5.0 || 5.0.0 - 7.2.3'), true,
  'satisfies')
assert.strictEqual(semver.satisfies('1.3.0-beta.1', '^1.2.3'), false, 'prerelease left out')
assert.strictEqual(semver.maxSatisfying(['1.2.3', '1.2.4', '1.3.0'], '~1.2.0'), '1.2.4',
  'maxSatisfying')
assert.strictEqual(semver.gtr('2.0.0', '^1.2.3'), true, 'gtr')
assert.strictEqual(semver.subset('^1.2.3', '>=1.0.0'), true, 'subset')
assert.strictEqual(semver.valid(semver.coerce('v2')), '2.0.0', 'coerce')
"""
"""Run by node on the workspace: the library loads from `index.js` and still works."""


def _behaves(rel: str, extra: str = "") -> Callable[[Path], str]:
    """'' when node loads the workspace's `index.js` and `SMOKE` plus `extra` (more asserts,
    `semver`, `root` and `path` in scope) pass, else node's first error line, blamed on
    `rel`, the file edited."""

    def run(workspace: Path) -> str:
        what = f"semver misbehaves in node after the edit of {rel}"
        return node_runs(SMOKE + extra, str(workspace), workspace, what)

    return run


def semver_edited(
    rel: str, keep: tuple[str, ...], test: Callable[[str], str], extra: str = ""
) -> Check:
    """`js_edited` on `rel` (parses, keeps `keep`, `test(source)` finds no fault), then the
    package loaded in node behaves (`_behaves(rel, extra)`)."""
    return js_edited_and_run(rel, keep, test, _behaves(rel, extra))


def _lru_class(source: str) -> str:
    return "" if re.search(r"\bclass\s+LRUCache\b", source) else "class LRUCache is gone"


def _jsdoc(source: str) -> str:
    found = re.search(
        r"/\*\*((?:(?!\*/)[\s\S])*)\*/\s*"
        r"(?:(?:const|let|var)\s+truncate\s*=|function\s+truncate\s*\()",
        source,
    )
    if found is None:
        return "no /** ... */ comment right above truncate"
    missing = [
        tag
        for tag, pattern in (
            ("@param version", r"@param\s+(?:\{[^}]*\}\s*)?\[?version\b"),
            ("@param truncation", r"@param\s+(?:\{[^}]*\}\s*)?\[?truncation\b"),
            ("@returns", r"@returns?\b"),
        )
        if not re.search(pattern, found[1])
    ]
    return f"the comment has no {' or '.join(missing)}" if missing else ""


SUBSET = r"""
assert.strictEqual(semver.subset('>=1.2.3', '>=1.0.0'), true, 'subset >=1.2.3 of >=1.0.0')
assert.strictEqual(semver.subset('>=1.0.0', '>=1.2.3'), false, 'subset >=1.0.0 of >=1.2.3')
assert.strictEqual(semver.subset('>1.2.3', '>=1.2.3'), true, 'subset >1.2.3 of >=1.2.3')
assert.strictEqual(semver.subset('>=1.2.3', '>1.2.3'), false, 'subset >=1.2.3 of >1.2.3')
assert.strictEqual(semver.subset('>1.0.0 <1.5.0', '>=1.0.0 <2.0.0'), true, 'subset of a span')
assert.strictEqual(semver.subset('^2.0.0', '^1.0.0'), false, 'subset ^2 of ^1')
"""
LRU_MAX = r"""
const LRU = require(path.join(root, 'internal', 'lrucache.js'))
const small = new LRU(2)
small.set('a', 1)
small.set('b', 2)
small.set('c', 3)
assert.strictEqual(small.get('a'), undefined, 'new LRU(2): the oldest of three is evicted')
assert.strictEqual(small.get('b'), 2, 'new LRU(2) keeps b')
assert.strictEqual(small.get('c'), 3, 'new LRU(2) keeps c')
for (const cache of [new LRU(), new LRU(undefined)]) {
  for (let i = 0; i < 1000; i++) cache.set(`k${i}`, i)
  assert.strictEqual(cache.get('k0'), 0, 'by default 1000 entries fit')
  cache.set('k1000', 1000)
  assert.strictEqual(cache.get('k1'), undefined, 'by default the 1001st evicts the oldest')
  assert.strictEqual(cache.get('k1000'), 1000, 'by default the newest is kept')
}
"""
TRUNCATE = r"""
assert.strictEqual(semver.truncate('1.2.3-rc.1+b.7', 'patch'), '1.2.3', 'truncate patch')
assert.strictEqual(semver.truncate('1.2.3', 'major'), '1.0.0', 'truncate major')
assert.strictEqual(semver.truncate('1.2.3', 'nope'), null, 'truncate to no release type')
"""
CMP_ALIAS = r"""
assert.strictEqual(semver.cmp('1.2.3', '<>', '1.2.4'), true, "cmp('1.2.3', '<>', '1.2.4')")
assert.strictEqual(semver.cmp('1.2.3', '<>', '1.2.3'), false, "cmp('1.2.3', '<>', '1.2.3')")
assert.strictEqual(semver.cmp('1.2.3', '<>', '1.2.3+build.1'), false, "'<>' is '!=', not '!=='")
assert.strictEqual(semver.cmp('1.2.3', '!=', '1.2.4'), true, "'!=' still works")
assert.strictEqual(semver.cmp('1.2.3', '>=', '1.2.3'), true, "'>=' still works")
assert.throws(() => semver.cmp('1.2.3', '<=>', '1.2.3'), TypeError, 'an unknown operator throws')
"""
MAJOR_NULL = r"""
for (const bad of ['nope', '1.2', '1.2.3.4', '']) {
  assert.strictEqual(semver.major(bad), null, `major(${JSON.stringify(bad)})`)
}
assert.strictEqual(semver.major('v3.0.0-rc.1'), 3, "major('v3.0.0-rc.1')")
assert.strictEqual(semver.major('=1.2.3foo', true), 1, 'major of a loose version, loose')
assert.strictEqual(semver.major('=1.2.3foo'), null, 'major of a loose version, strict')
"""


SEMVER = Project(
    "semver",
    "7.8.6",
    "c6584c324e8b1e5d0403c6c16ee2b25dd61567c13f0449a58820350c21cd71bf",
    (
        Task(
            "range-cache-size",
            "question",
            "Which file defines the cache that Range uses to memoize parsed ranges, and how "
            "many entries can that cache hold before it starts evicting?",
            mentions(
                r"(?<![\w-])lrucache\.js",
                r"(?<![\d,.])1[,. ]?000(?![\d,]|\.\d)|\bthousand\b",
            ),
        ),
        Task(
            "inc-prerelease-minor",
            "question",
            "quick one: what do I get back from semver.inc('1.2.0-5', 'minor')?",
            mentions(r"(?<![\w.-])v?1\.2\.0(?![\w-]|\.\d)"),
        ),
        Task(
            "diff-premajor-de",
            "question",
            "Was gibt semver.diff('1.0.0', '2.0.0-beta.1') zurück?",
            mentions(r"\bpremajor\b"),
        ),
        Task(
            "max-length-ja",
            "question",
            "バージョン文字列は最大で何文字まで受け付けられますか？その上限の定数はどのファイルで定義されていますか？",  # noqa: RUF001
            mentions(r"(?<![\d,.])256(?![\d,]|\.\d)", r"constants\.js"),
        ),
        Task(
            "gtr-calls-ru",
            "question",
            "Какую функцию вызывает gtr, чтобы решить, что версия выше всех версий диапазона?",
            mentions(r"(?<![A-Za-z0-9_$])outside(?![A-Za-z0-9_$])"),
        ),
        Task(
            "prerelease-option-es",
            "question",
            "¿Qué opción tengo que pasar a satisfies para que una versión prerelease como "
            "1.3.0-beta.1 cumpla el rango ^1.2.3?",
            mentions(r"(?<![A-Za-z0-9_$])includePrerelease(?![A-Za-z0-9_$])"),
        ),
        Task(
            "rename-higher-gt",
            "edit",
            "In ranges/subset.js rename the helper function higherGT to strongestLowerBound, "
            "and update every call of it.",
            semver_edited(
                SUBSET_JS,
                ("subset", "simpleSubset", "lowerLT"),
                js_renamed("higherGT", "strongestLowerBound"),
                SUBSET,
            ),
        ),
        Task(
            "lru-max-fr",
            "edit",
            "Dans internal/lrucache.js, fais en sorte que le constructeur de LRUCache accepte "
            "en paramètre le nombre maximal d'entrées (un nombre, 1000 par défaut si rien "
            "n'est passé).",
            semver_edited(LRUCACHE_JS, (), _lru_class, LRU_MAX),
        ),
        Task(
            "jsdoc-truncate-de",
            "edit",
            "Füge der Funktion truncate in functions/truncate.js einen JSDoc-Kommentar hinzu, "
            "der ihre Parameter und ihren Rückgabewert beschreibt.",
            semver_edited(
                TRUNCATE_JS,
                ("truncate", "cloneInputVersion", "doTruncation", "isPrerelease"),
                _jsdoc,
                TRUNCATE,
            ),
        ),
        Task(
            "cmp-alias-ru",
            "edit",
            "Добавь в functions/cmp.js оператор '<>' как синоним '!=': "
            "cmp('1.2.3', '<>', '1.2.4') должен возвращать true.",
            semver_edited(CMP_JS, ("cmp",), no_text, CMP_ALIAS),
        ),
        Task(
            "major-null-zh",
            "edit",
            "修改 functions/major.js，让 major 在版本号无效时返回 null，而不是抛出异常。",  # noqa: RUF001
            semver_edited(MAJOR_JS, ("major",), no_text, MAJOR_NULL),
        ),
        Task(
            "typescript-tokenizer",
            "claude",
            "Rewrite the whole package in TypeScript with strict types for every class and "
            "function, publish it as dual ESM and CommonJS, replace the regular expressions in "
            "internal/re.js with a hand-written tokenizer for versions and ranges that keeps "
            "every current behaviour, add property-based tests for each range form (hyphen, "
            "x-range, tilde, caret, ||) and document the new build in the README.",
            for_claude(),
        ),
    ),
    registry="npm",
)
