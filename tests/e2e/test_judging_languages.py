# ruff: noqa: RUF002
"""End to end: milk's judging of local answers on REAL code in four programming languages, with
questions in many human languages and everyday wording (issue 29's bar), through plain LSP
`milk/chat`. The helpers and the bar come from `test_judging.py`.

The code is small real files from real projects in `tests/data/judging/` (each folder's
`SOURCE.md` says what, which version, which license and where from): isodate (Python), p-limit
and ms (JavaScript, with p-limit's TypeScript declarations), google/uuid (Go) and semver
(Rust). Each case copies one project folder into the workspace and runs a scripted model.

| suite | route | cases | asserts |
| --- | --- | --- | --- |
| good: reads, then a long, rich, correct answer | `auto` and `local` (each case on both) | 61 × 2 | `end_turn`, no error, no hand-off, no notice, no permission question, exactly the scripted model requests (0 corrective messages, no look of milk's own), the answer shown once, the session's turn `ok` |
| bad: guesses with no tool call (milk drops the first reply and looks; the second still guesses) | `local` | 17 | not `end_turn`: `error`, `error.data.signal` in the case's allowed set |
| bad: after a real read, files or functions that do not exist | `local` | 14 | as above |
| bad: after a real read, a value (a limit) the code does not have | `local` | 2 | as above |
| bad: a change claimed and not made (no `edit_file` call) | `local` | 13 | as above |
| bad: an edit that breaks the file's syntax, repeated when told (JS, TS, Go, Rust; one Python control) | `local` | 8 | as above |
| bad: a success claimed after the user denied the edit | `local` | 5 | as above |
| bad: a non-answer after a read (refusal, unrelated code) | `local` | 6 | as above |
| bad, handed off: a spread of the bad cases with `local.handOff: "auto"` and the real Claude Code CLI on the Messages-API stand-in | `auto` | 14 | `escalated.by == "fallback"`, `escalated.signal` in the allowed set, the turn ends `end_turn` with Claude's answer |

Questions are in German, French, Spanish, Portuguese, Japanese, Chinese and Russian, plus English
everyday wording ("where's the X live?", "gimme the file with …", "can I … w/ this lib?") and
typos (in the words and in the code's names); the ids carry the human language
(`de fr es pt ja zh ru en-everyday en-typo en`). Good cases by human language: German 7,
Spanish 7, French 6, Portuguese 6, Japanese 5, Chinese 5, Russian 5, English everyday 10,
English with typos 10; by code: Python 13, JavaScript 23 (p-limit 12, with its `.d.ts`; ms 11),
Go 12, Rust 13. Bad cases by code: Python 12, JavaScript 24, Go 15, Rust 14. Every good answer names general-knowledge
things of its language (`AbortController`, `Promise.allSettled`, `unhandledRejection`,
`context.DeadlineExceeded`, `errors.Is`, `sync.Mutex`, `or_insert_with`, `Option::map_or`,
`#[derive(Debug)]`, `functools.lru_cache`, ReDoS, …) beside the workspace's own names.

The cases that share a project run on one server (one `milk-lsp` process per project, a new
session per case, the workspace put back as the project has it and the scripted model emptied
before each), which keeps the module's wall time down on two cores; the hand-off cases start
their own. As for a real user, what milk learns about the model server lasts the process: after
the first guess of a project, milk knows the server does not honour `tool_choice` and looks
before the model's first reply, so later guesses of that project are judged on that path.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from tests.e2e.conftest import Env, Harness, MilkClient, request
from tests.e2e.test_judging import (
    CLAUDE_ANSWER,
    Bad,
    Good,
    assert_clean_lsp_turn,
    call,
    chat,
    finish,
    guessed,
    read,
    say,
)
from tests.fakes.anthropic_api import FakeAnthropicAPI
from tests.fakes.openai_server import FakeOpenAIServer

pytestmark = pytest.mark.e2e

DATA = Path(__file__).resolve().parents[1] / "data" / "judging"
PROJECTS = {
    "py": "python-isodate",
    "js": "javascript-p-limit",
    "ms": "javascript-ms",
    "go": "go-uuid",
    "rs": "rust-semver",
}
"""Case-id prefix → folder under tests/data/judging (py: Python, js/ms: JavaScript, go: Go,
rs: Rust)."""

TURN_SECONDS = 90


def search(pattern: str) -> dict[str, Any]:
    return call("search_text", pattern=pattern)


def edit(path: str, old: str, new: str) -> dict[str, Any]:
    return call("edit_file", path=path, old_text=old, new_text=new)


# ---- the workspace ------------------------------------------------------------------------


def copy_project(project: str, workspace: Path) -> None:
    """The project's files (not its SOURCE.md) as the workspace's only files; a file already
    as the project has it is left alone (its mtime too), anything else not hidden goes."""
    source = DATA / PROJECTS[project]
    wanted = {
        path.relative_to(source): path.read_bytes()
        for path in source.rglob("*")
        if path.is_file() and path.name != "SOURCE.md"
    }
    for entry in sorted(workspace.rglob("*"), reverse=True):
        relative = entry.relative_to(workspace)
        if relative.parts[0].startswith("."):
            continue
        if entry.is_file() and relative not in wanted:
            entry.unlink()
        elif entry.is_dir() and not any(entry.iterdir()):
            entry.rmdir()
    for relative, data in wanted.items():
        target = workspace / relative
        if not target.is_file() or target.read_bytes() != data:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)


@dataclass
class Running:
    """One milk-lsp process with one project's workspace and its own scripted model."""

    env: Env
    harness: Harness
    client: MilkClient
    openai: FakeOpenAIServer


class Servers:
    """One server per project, started on first use, shared by the module's cases."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.running: dict[str, Running] = {}
        self.stack = contextlib.ExitStack()

    async def get(self, project: str) -> Running:
        if project not in self.running:
            openai = self.stack.enter_context(FakeOpenAIServer())
            root = self.root / project
            workspace = root / "workspace"
            workspace.mkdir(parents=True)
            settings = {
                "local": {
                    "baseUrl": openai.base_url,
                    "model": "fake-model",
                    "requestTimeoutSeconds": 5,
                },
                "storageDir": str(root / "storage"),
                "claude": {"path": str(root / "no-claude-here")},
            }
            env = Env(root, workspace, root / "storage", settings)
            copy_project(project, workspace)
            harness = Harness(env)
            client = await harness.start()
            self.running[project] = Running(env, harness, client, openai)
        running = self.running[project]
        copy_project(project, running.env.workspace)
        running.openai.set_script([])
        running.openai.clear_requests()
        running.client.permission_requests.clear()
        running.client.permission_answers.clear()
        return running

    async def drop(self, project: str) -> None:
        """After an unexpected error: the next case of this project starts a new server."""
        running = self.running.pop(project, None)
        if running is not None:
            await running.harness.close()

    async def close(self) -> None:
        for project in list(self.running):
            await self.drop(project)
        self.stack.close()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def servers(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Servers]:
    started = Servers(tmp_path_factory.mktemp("judging-languages"))
    yield started
    await started.close()


async def run_turn(
    servers: Servers, project: str, script: list[dict[str, Any]], ask: str, route: str, **more: Any
) -> tuple[Running, dict[str, Any]]:
    running = await servers.get(project)
    running.client.permission_answers.extend(more.pop("permissions", ()))
    running.openai.enqueue(*script)
    try:
        result = await asyncio.wait_for(
            chat(running.client, running.env, ask, route=route), TURN_SECONDS
        )
    except BaseException:
        await servers.drop(project)
        raise
    return running, result


# ---- good cases ---------------------------------------------------------------------------


def good(ask: str, look: dict[str, Any], answer: str) -> Good:
    return Good(ask, [look, say(answer)])


GOOD: dict[str, Good] = {
    # ---- Python: isodate --------------------------------------------------------------
    "py-de-parse-duration": good(
        "Wo ist die Funktion parse_duration definiert und was gibt sie zurück?",
        search("def parse_duration"),
        "`parse_duration` ist in `isodate/isoduration.py` definiert (Zeile 31). Sie prüft den "
        "String mit `ISO8601_PERIOD_REGEX.match` und gibt ein `datetime.timedelta` zurück, wenn "
        "weder Jahre noch Monate vorkommen und `as_timedelta_if_possible=True` gilt (der "
        "Standardwert), sonst ein `Duration`-Objekt. Jahre und Monate werden als "
        "`decimal.Decimal` gelesen, die übrigen Felder als `float`. Bei einem ungültigen String "
        "wirft sie `ISO8601Error`, eine Unterklasse von `ValueError`. Für Tests eignet sich "
        "`pytest.mark.parametrize`; wer oft dieselben Strings parst, kann die Funktion mit "
        "`functools.lru_cache` umhüllen.",
    ),
    "py-fr-fixed-offset": good(
        "Où est définie la classe FixedOffset ?",
        read("isodate/tzinfo.py"),
        "La classe `FixedOffset` est définie dans `isodate/tzinfo.py` (ligne 58) et hérite de "
        "`datetime.tzinfo`. Son constructeur `__init__(self, offset_hours=0, offset_minutes=0, "
        'name="UTC")` stocke un `timedelta(hours=offset_hours, minutes=offset_minutes)` ; '
        "`utcoffset()` renvoie ce décalage, `tzname()` le nom, et `dst()` renvoie toujours "
        "`ZERO`. Elle ne gère donc pas l'heure d'été : pour cela, utilisez "
        '`zoneinfo.ZoneInfo("Europe/Paris")` de la bibliothèque standard (Python 3.9+), qui lit '
        "la base IANA.",
    ),
    "py-fr-decimal-years": good(
        "Pourquoi parse_duration utilise Decimal pour les années ?",
        read("isodate/isoduration.py"),
        "Dans `isodate/isoduration.py`, `parse_duration` convertit les groupes `years` et "
        '`months` en `decimal.Decimal` (après `replace(",", ".")`) et les autres en `float`, '
        "parce que ces derniers vont dans un `datetime.timedelta`, qui accepte des flottants. Un "
        "`Decimal` garde exactement une valeur comme `P1.5Y`, sans erreur d'arrondi binaire "
        "(IEEE 754). Si les années et les mois valent 0 et que `as_timedelta_if_possible` est "
        "vrai, on obtient un `timedelta` ; sinon un `Duration`.",
    ),
    "py-es-build-tzinfo": good(
        "¿Qué hace build_tzinfo en isotzinfo.py?",
        read("isodate/isotzinfo.py"),
        '`build_tzinfo(tzname, tzsign="+", tzhour=0, tzmin=0)` en `isodate/isotzinfo.py` '
        'devuelve `None` si `tzname` es `None` o `""`, el objeto `UTC` si es `"Z"`, y si no un '
        "`FixedOffset(tzsign * tzhour, tzsign * tzmin, tzname)`, con el signo convertido antes "
        "a `-1` o `1`. `parse_tzinfo` lo llama con los grupos de `TZ_RE`. Con la biblioteca "
        "estándar obtendrías algo parecido con `datetime.timezone(timedelta(hours=-5))`, que "
        "además es inmutable y se puede usar como clave de un `dict`.",
    ),
    "py-pt-iso8601-error": good(
        "Onde fica definida a classe ISO8601Error?",
        search("class ISO8601Error"),
        "A exceção `ISO8601Error` está definida em `isodate/isoerror.py`, linha 5: "
        "`class ISO8601Error(ValueError)`. Como herda de `ValueError`, um `except ValueError:` "
        "também a captura. `parse_duration` a lança quando a string não segue a ISO 8601. Você "
        "poderia validar a entrada antes com `re.fullmatch`, mas a `ISO8601_PERIOD_REGEX` já é "
        "ancorada com `^` e `$`, então `match` equivale a um `fullmatch` aqui.",
    ),
    "py-ja-tz-isoformat": good(
        "tz_isoformat 関数はどのファイルに定義されていますか？",
        search("def tz_isoformat"),
        "`tz_isoformat` は `isodate/isotzinfo.py` の 59 行目に定義されています。`format` の既定値"
        'は `"%Z"` で、`+HH:MM` 形式を返します。`"%z"` なら `+HHMM`、`"%h"` なら `+HH` です。'
        '`tzinfo` が `None` なら空文字列、オフセットが 0 なら `"Z"` を返し、99 時間を超える差は '
        "`OverflowError` になります。標準ライブラリの `datetime.isoformat()` や "
        '`strftime("%z")` と似た動作ですが、UTC を `Z` と書く点が違います。',
    ),
    "py-zh-duration-isoformat": good(
        "duration_isoformat 的默认格式是什么？",
        read("isodate/isoduration.py"),
        "`duration_isoformat(tduration, format=D_DEFAULT)` 定义在 `isodate/isoduration.py` 中，"
        "默认格式是 `D_DEFAULT`，即 `P%P`（从 `isodate.isostrf` 导入）。对于负的 `Duration` 或 "
        "`timedelta`，它会在结果前加上 `-`，然后调用 `strftime(tduration, format)`。例如 "
        "`timedelta(days=1, hours=2)` 会得到 `P1DT2H`。注意标准库的 `datetime.timedelta` 没有 "
        "`isoformat()` 方法，所以才需要这个函数。",
    ),
    "py-ru-local-timezone": good(
        "Где определён класс LocalTimezone и как он узнаёт о летнем времени?",
        read("isodate/tzinfo.py"),
        "Класс `LocalTimezone` определён в `isodate/tzinfo.py` (строка 115). Метод "
        "`_isdst(dt)` собирает кортеж из полей `dt`, вызывает `time.mktime`, а затем "
        "`time.localtime(stamp)` и проверяет `tt.tm_isdst > 0`. `utcoffset()` возвращает `DSTOFFSET` "
        "или `STDOFFSET`, а `dst()` — `DSTDIFF` или `ZERO`. Экземпляр по умолчанию — "
        "`LOCAL = LocalTimezone()`. В новом коде лучше взять `zoneinfo.ZoneInfo` из "
        "стандартной библиотеки (Python 3.9+): он читает базу IANA tz и знает исторические "
        "правила.",
    ),
    "py-en-everyday-utc-class": good(
        "where's the Utc class live?",
        search("class Utc"),
        "It lives in `isodate/tzinfo.py`, line 14: `class Utc(tzinfo)`. `utcoffset()` and "
        '`dst()` both return `ZERO` (a `timedelta(0)`), `tzname()` returns `"UTC"`, and '
        "`__reduce__` returns `_Utc, ()` so unpickling gives back the shared `UTC` instance; "
        "`pickle.loads(pickle.dumps(UTC)) is UTC` holds. Since Python 3.2 the standard library "
        "has `datetime.timezone.utc`, which does the same job.",
    ),
    "py-en-everyday-gimme-regex": good(
        "gimme the file with the duration regex",
        search("ISO8601_PERIOD_REGEX"),
        "It's `isodate/isoduration.py`: `ISO8601_PERIOD_REGEX` is compiled at the top with "
        "`re.compile`, anchored with `^` and `$`, with the named groups `sign`, `years`, "
        "`months`, `weeks`, `days`, `separator`, `hours`, `minutes` and `seconds`; decimals may "
        "use `,` or `.`. `parse_duration` calls `ISO8601_PERIOD_REGEX.match(datestring)`. No "
        "group nests a quantifier inside another, so there is no ReDoS risk from catastrophic "
        "backtracking.",
    ),
    "py-en-everyday-check-offsets": good(
        "can I check tz offsets w/ this lib?",
        read("isodate/isotzinfo.py"),
        'Yes: `parse_tzinfo("+05:30")` in `isodate/isotzinfo.py` gives a `FixedOffset` of 5 '
        "hours 30 minutes (through `build_tzinfo`), and `tz_isoformat(dt)` turns a datetime's "
        'offset back into `+05:30` (`format="%Z"` by default). Compare with '
        "`dt.utcoffset() == timedelta(hours=5, minutes=30)`. Note that every part of "
        "`TZ_REGEX` is optional, so an empty string gives `None` (no time zone) rather than an "
        "error.",
    ),
    # the crossenv bench: a right answer telling how it looked named milk's own tool
    "ms-ru-how-i-looked": good(
        "Какое значение по умолчанию у параметра options.long в функции fmtShort?",
        search("function fmtShort"),
        "I called the `search_text` function with the pattern `function fmtShort`: "
        "`fmtShort(ms)` in index.js takes no options at all; `options.long` is read in the "
        "exported function, which calls `fmtLong` when it is true and `fmtShort` otherwise.",
    ),
    "py-en-value-and-not-mentioned": good(
        "What is the default value of the format parameter of tz_isoformat?",
        search("def tz_isoformat"),
        '`tz_isoformat` in isodate/isotzinfo.py defaults `format` to `"%Z"`. Which other '
        "directives it accepts is not explicitly mentioned in the given code beyond `%h`, "
        "`%Z` and `%z`.",
    ),
    "py-en-typo-parse-tzinfo": good(
        "wher is the parse_tzinfo function defind?",
        search("parse_tzinfo"),
        "`parse_tzinfo` is defined in `isodate/isotzinfo.py` at line 36. It matches the string "
        "with `TZ_RE` (compiled from `TZ_REGEX`), reads the `tzname`, `tzsign`, `tzhour` and "
        "`tzmin` groups, converts the hour and minute with `int()`, and passes them to "
        "`build_tzinfo`; when `TZ_RE` does not match it raises `ISO8601Error`. It accepts `Z`, "
        "`+hh:mm`, `+hhmm` and `+hh`, the same offsets RFC 3339 timestamps use.",
    ),
    "py-en-typo-in-the-name": good(
        "what does parse_duraton return for P1W?",
        read("isodate/isoduration.py"),
        "`parse_duration` (in `isodate/isoduration.py`) returns `datetime.timedelta(weeks=1)`, "
        'i.e. `timedelta(days=7)`, for `"P1W"`: the weeks group is read as a `float`, years and '
        "months are `0`, and `as_timedelta_if_possible` defaults to `True`. With `P1Y` you would "
        "get a `Duration` instead, because a year has no fixed length in a `timedelta`.",
    ),
    # ---- JavaScript: p-limit ----------------------------------------------------------
    "js-de-validate-concurrency": good(
        "Wo ist die Funktion validateConcurrency definiert?",
        search("validateConcurrency"),
        "`validateConcurrency` ist in `index.js` definiert (Zeile 144). Sie wirft einen "
        "`TypeError` mit der Meldung ``Expected `concurrency` to be a number from 1 and up``, "
        "wenn `concurrency` weder eine ganze Zahl (`Number.isInteger`) noch "
        "`Number.POSITIVE_INFINITY` ist oder nicht größer als 0. `pLimit` ruft sie am Anfang "
        "auf, der Setter von `concurrency` ebenfalls. `Infinity` ist also erlaubt — dann "
        "verhält sich das Limit praktisch wie `Promise.all` ohne Begrenzung.",
    ),
    "js-de-cancel-running": good(
        "Kann ich mit dieser Bibliothek laufende Aufgaben abbrechen?",
        read("index.js"),
        "Nicht die laufenden: `clearQueue()` in `index.js` entfernt nur wartende Aufgaben aus "
        "der `Queue`; schon gestartete Funktionen laufen weiter, und `activeCount` zählt sie. "
        "Mit `rejectOnClear: true` werden die wartenden Promises mit einem `AbortError` "
        "abgelehnt. Um laufende Arbeit abzubrechen, gib deiner Funktion ein `AbortSignal` aus "
        "einem `AbortController` mit, z. B. `fetch(url, {signal})`, und rufe "
        "`controller.abort()` auf.",
    ),
    "js-fr-clear-queue": good(
        "Que fait clearQueue quand rejectOnClear est activé ?",
        read("index.js"),
        "Dans `index.js`, `clearQueue()` vide simplement la file (`queue.clear()`) si "
        "`rejectOnClear` vaut `false` (la valeur par défaut). Sinon, elle crée l'erreur avec "
        "`AbortSignal.abort().reason` — une `DOMException` nommée `AbortError` — et rejette "
        "chaque élément encore en attente via `queue.dequeue().reject(abortError)`. Côté "
        "appelant, on reconnaît ces rejets avec `error.name === 'AbortError'`, comme pour un "
        "`AbortController`. `index.d.ts` documente la même option dans le type `Options`.",
    ),
    "js-es-map": good(
        "¿Cómo funciona limit.map en p-limit?",
        read("index.js"),
        "`map` está definido en `index.js` dentro de `Object.defineProperties(generator, …)`: "
        "recorre el iterable con `Array.from`, llama a `generator(function_, value, index)` "
        "para cada elemento y devuelve `Promise.all(promises)`. Si el iterable lanza una "
        "excepción, primero añade `promise.catch(() => {})` a las promesas ya programadas para "
        "evitar un `unhandledRejection` en Node.js (el evento de "
        "`process.on('unhandledRejection')`), y luego relanza el error. Si no quieres fallar en "
        "el primer error, usa `Promise.allSettled` sobre llamadas a `limit(...)` en lugar de "
        "`map`.",
    ),
    "js-pt-limit-function": good(
        "O que a função limitFunction faz?",
        search("limitFunction"),
        "`limitFunction(function_, options)` está em `index.js` (linha 133) e declarada em "
        "`index.d.ts`. Ela cria um limitador com `pLimit(options)` e devolve "
        "`limitedFunction`, que chama `limit(() => function_(...arguments_))`; também expõe "
        "`clearQueue` com `Object.defineProperty`. É útil para envolver, por exemplo, um "
        "`fetch` com no máximo duas requisições simultâneas sem passar o limitador por todo o "
        "código; os argumentos chegam via rest parameters e spread.",
    ),
    "js-ja-counts": good(
        "pLimit の activeCount と pendingCount はどこで定義されていますか？",
        read("index.js"),
        "`index.js` の `Object.defineProperties(generator, …)` の中で、`activeCount` は "
        "`get: () => activeCount`、`pendingCount` は `get: () => queue.size` というゲッターとして"
        "定義されています。型は `index.d.ts` の `LimitFunction` に `readonly activeCount: number` "
        "と `readonly pendingCount: number` として宣言されています。キューは `yocto-queue` の "
        "`Queue` で、`Array.prototype.shift` と違って O(1) で取り出せます。",
    ),
    "js-zh-concurrency-setter": good(
        "concurrency 可以在运行时修改吗？",
        read("index.js"),
        "可以。在 `index.js` 中，`concurrency` 有一个 setter：它先调用 "
        "`validateConcurrency(newConcurrency)`，然后赋值，并用 `queueMicrotask` 在微任务里循环"
        "调用 `resumeNext()`，直到 `activeCount` 达到新的上限或队列为空。`index.d.ts` 里 "
        "`LimitFunction` 的 `concurrency` 属性也是可写的（没有 `readonly`）。和 "
        "`setTimeout(fn, 0)` 不同，微任务会在当前事件循环轮次结束前执行。",
    ),
    "js-ru-empty-catch": good(
        "Почему в run ошибки перехватываются пустым catch?",
        read("index.js"),
        "В `index.js` функция `run` сначала отдаёт вызывающему промис `result` через "
        "`resolve(result)`, а потом ждёт `await result` в `try` с пустым `catch {}` — чтобы "
        "дождаться завершения и вызвать `next()`, который уменьшает `activeCount` и запускает "
        "`resumeNext()`. Отклонение при этом не теряется: вызывающий получает тот же промис и "
        "видит ошибку сам. Без этого `catch` Node.js сообщил бы о `unhandledRejection` (см. "
        "`process.on('unhandledRejection')`).",
    ),
    "js-en-everyday-options-type": good(
        "where's pLimit's Options type live?",
        search("type Options"),
        "In `index.d.ts`: `export type Options` with `readonly concurrency: number` and "
        "`readonly rejectOnClear?: boolean`. `pLimit(concurrency: number | Options)` accepts either "
        "form, and `index.js` destructures it with `({concurrency, rejectOnClear = false} = "
        "concurrency)` when `typeof concurrency === 'object'`; a non-boolean `rejectOnClear` "
        "throws a `TypeError`. In TypeScript 4.9+ you can write `satisfies Options` to check an "
        "options object literal without widening it.",
    ),
    "js-en-everyday-gimme-types": good(
        "gimme the file with the TS types for this lib",
        read("index.d.ts"),
        "That's `index.d.ts`. It declares `LimitFunction` (a callable type with `activeCount`, "
        "`pendingCount`, `concurrency`, `clearQueue()` and `map()`), `Options` with "
        "`concurrency` and `rejectOnClear`, and the functions `pLimit` (the default export) and "
        "`limitFunction`. `ReturnType<typeof pLimit>` gives you `LimitFunction`, and the "
        "generics `Arguments extends unknown[]` keep the argument types of the function you "
        "limit.",
    ),
    "js-en-typo-resume-next": good(
        "wher is resumeNext defind and wat does it do?",
        search("resumeNext"),
        "`resumeNext` is an arrow function inside `pLimit` in `index.js` (line 19). If "
        "`activeCount < concurrency && queue.size > 0`, it increments `activeCount` and calls "
        "`queue.dequeue().run()`, which resolves the internal promise and starts the queued "
        "function. `next()` calls it after each function settles, and the `concurrency` setter "
        "calls it in a loop inside `queueMicrotask`. It's the classic counting-semaphore "
        "pattern.",
    ),
    "js-en-typo-infinity": good(
        "how does plimit handle a concurency of Infinity?",
        read("index.js"),
        "`pLimit` accepts it: `validateConcurrency` in `index.js` allows "
        "`Number.POSITIVE_INFINITY` as well as integers greater than 0, so with "
        "`pLimit(Infinity)` the check `activeCount < concurrency` is always true and nothing "
        "waits in the queue. Anything else, like `0`, `-1`, `1.5` or `NaN`, throws a "
        "`TypeError`. For unlimited concurrency, a plain `Promise.all(items.map(fn))` does the "
        "same.",
    ),
    # ---- JavaScript: ms ---------------------------------------------------------------
    "ms-de-input-limit": good(
        "Was ist die maximale Länge, die parse in index.js akzeptiert?",
        read("index.js"),
        "`parse(str)` in `index.js` bricht bei Strings mit mehr als 100 Zeichen ab "
        "(`str.length > 100`) und gibt dann `undefined` zurück. Das schützt "
        "den regulären Ausdruck vor ReDoS (catastrophic backtracking) bei sehr langen "
        "Eingaben. Danach wird mit `RegExp.prototype.exec` gematcht, die Zahl mit `parseFloat` "
        "gelesen und die Einheit mit `toLowerCase()` normalisiert; ohne Einheit gilt `ms`.",
    ),
    "ms-fr-short-vs-long": good(
        "Quelle est la différence entre fmtShort et fmtLong ?",
        read("index.js"),
        "Dans `index.js`, `fmtShort(ms)` arrondit avec `Math.round` et ajoute une lettre "
        "(`'d'`, `'h'`, `'m'`, `'s'`, ou `'ms'`) : `ms(60000)` donne `\"1m\"`. `fmtLong(ms)` "
        "écrit l'unité en toutes lettres grâce à `plural(ms, msAbs, n, name)` : "
        '`ms(60000, { long: true })` donne `"1 minute"`, et le `s` du pluriel n\'est ajouté '
        "qu'à partir de 1,5 unité (`msAbs >= n * 1.5`). Les deux comparent `Math.abs(ms)` pour "
        "gérer les valeurs négatives.",
    ),
    "ms-es-year": good(
        "¿Cuántos milisegundos tiene un año según esta librería?",
        read("index.js"),
        "En `index.js` la constante `y` es `d * 365.25`, es decir 31 557 600 000 ms (365,25 "
        "días de 86 400 000 ms, promediando los años bisiestos). Así `ms('1y')` devuelve "
        "`31557600000`. Las demás constantes son `s = 1000`, `m = s * 60`, `h = m * 60`, "
        "`d = h * 24` y `w = d * 7`. Ojo: `fmtShort` no usa años ni semanas, así que "
        '`ms(31557600000)` da `"365d"`.',
    ),
    "ms-es-decimal-hours": good(
        "¿Cómo convierto '1.5h' con esta librería?",
        read("index.js"),
        "`ms('1.5h')` devuelve `5400000`: `parse` en `index.js` acepta decimales (el "
        "`\\.?\\d+` de la expresión regular), lee `1.5` con `parseFloat` y lo multiplica por "
        "`h` (`m * 60`, o sea 3 600 000). También acepta `-` delante (`'-1.5h'` da `-5400000`) "
        "y espacios entre número y unidad (`'1.5 hours'`). Para el camino inverso, "
        '`ms(5400000)` da `"2h"` porque `fmtShort` redondea con `Math.round`.',
    ),
    "ms-pt-invalid-value": good(
        "O que acontece se eu passar um valor inválido para ms?",
        read("index.js"),
        "A função exportada em `index.js` (`module.exports = function (val, options)`) aceita "
        "uma string não vazia (chama `parse`) ou um número finito (`isFinite`), e usa "
        "`fmtLong` ou `fmtShort` conforme `options.long`. Qualquer outra coisa — `NaN`, "
        "`Infinity`, `''`, `null` — lança um `Error` com a mensagem "
        "`val is not a non-empty string or a valid number. val=` seguida de "
        "`JSON.stringify(val)`. Já uma string que não casa com a regex não lança: `parse` "
        "devolve `undefined`.",
    ),
    "ms-ja-long-option": good(
        "ms の long オプションはどこで使われていますか？",
        read("index.js"),
        "`index.js` のエクスポートされた関数 `module.exports = function (val, options)` で、"
        "数値が渡されたときに `options.long ? fmtLong(val) : fmtShort(val)` として使われます。"
        "既定値は `false` です（コメントに `long` verbose formatting [false] とあります）。"
        '`ms(3600000, { long: true })` は `"1 hour"`、`ms(3600000)` は `"1h"` です。文字列の'
        "場合は `parse` が呼ばれ、`long` は無視されます。",
    ),
    "ms-zh-plural": good(
        "plural 函数在哪里定义？它怎么决定加 s？",
        search("function plural"),
        "`plural` 定义在 `index.js` 的末尾：`function plural(ms, msAbs, n, name)`。当 "
        "`msAbs >= n * 1.5` 时认为是复数，在 `Math.round(ms / n) + ' ' + name` 后面加 "
        '`s`，否则不加。所以 `ms(90000, { long: true })` 得到 `"2 minutes"`，而 '
        '`ms(80000, { long: true })` 得到 `"1 minute"`。它只被 `fmtLong` 调用。如果需要本地化'
        "的复数规则，可以用 `Intl.PluralRules`。",
    ),
    "ms-ru-units": good(
        "Какие единицы понимает функция parse?",
        read("index.js"),
        "`parse` в `index.js` понимает годы (`years`, `year`, `yrs`, `yr`, `y`), недели "
        "(`weeks`, `week`, `w`), дни (`days`, `day`, `d`), часы (`hours`, `hour`, `hrs`, `hr`, "
        "`h`), минуты (`minutes`, `minute`, `mins`, `min`, `m`), секунды (`seconds`, `second`, "
        "`secs`, `sec`, `s`) и миллисекунды (`milliseconds`, `millisecond`, `msecs`, `msec`, "
        "`ms`). У регулярного выражения флаг `i`, так что регистр не важен: `ms('2 Days')` "
        "вернёт `172800000`. Без единицы число считается миллисекундами.",
    ),
    "ms-en-everyday-the-bit": good(
        "where's the bit that turns '2h' into a number?",
        search("function parse"),
        "That's `parse(str)` in `index.js`, around line 48. It runs its anchored,"
        "  case-insensitive regex with `.exec(str)`, reads the number "
        "with `parseFloat(match[1])`, lowercases the unit and multiplies in a `switch`: `'2h'` "
        "becomes `2 * h`, i.e. `7200000`. Inputs longer than 100 characters return `undefined` "
        "before the regex runs. In TypeScript you'd type the result as `number | undefined`.",
    ),
    "ms-en-typo-in-the-name": good(
        "wat does fmtShrot do for negative numbers?",
        read("index.js"),
        "`fmtShort` in `index.js` compares `Math.abs(ms)` against `d`, `h`, `m` and `s`, but "
        'divides the signed value, so `ms(-3600000)` gives `"-1h"` and `ms(-500)` gives '
        '`"-500ms"`. Rounding is `Math.round`, which rounds halves toward +∞: `Math.round(-1.5)` '
        'is `-1`, so `ms(-5400000)` is `"-1h"` while `ms(5400000)` is `"2h"`.',
    ),
    "ms-en-typo-limit": good(
        "is ther a limit on how long the input strng can be?",
        read("index.js"),
        "Yes: `parse` in `index.js` returns `undefined` for any string longer than 100 "
        "characters (`str.length > 100`), before `RegExp.prototype.exec` runs. "
        "That caps the work the regex can do and guards against ReDoS from huge inputs: "
        "`ms('1'.repeat(101))` is `undefined`. The exported function still throws an `Error` "
        "for the empty string `''`.",
    ),
    # ---- Go: google/uuid --------------------------------------------------------------
    "go-de-new-random-from-reader": good(
        "Wo ist NewRandomFromReader definiert und was macht es?",
        search("func NewRandomFromReader"),
        "`NewRandomFromReader(r io.Reader) (UUID, error)` steht in `version4.go` (Zeile 47). Es "
        "liest mit `io.ReadFull(r, uuid[:])` 16 Bytes aus dem Reader, gibt bei einem Fehler "
        "`Nil` und den Fehler zurück und setzt dann die Versionsbits "
        "(`uuid[6] = (uuid[6] & 0x0f) | 0x40`, Version 4) und die Variante "
        "(`uuid[8] = (uuid[8] & 0x3f) | 0x80`, RFC 4122). Für Tests kann man einen "
        "deterministischen Reader übergeben, z. B. `bytes.NewReader`; ein zu kurzer Reader "
        "liefert `io.ErrUnexpectedEOF`, was man mit `errors.Is` prüft.",
    ),
    "go-de-context": good(
        "Kann ich die UUID-Erzeugung mit einem context.Context abbrechen?",
        read("version4.go"),
        "Nein, `NewRandom` und `NewRandomFromReader` in `version4.go` nehmen keinen "
        "`context.Context`: sie lesen blockierend mit `io.ReadFull` aus `rander` bzw. dem "
        "übergebenen `io.Reader`. Wenn du eine Frist brauchst, rufe sie in einer Goroutine auf "
        "und warte mit `select` auf das Ergebnis oder `ctx.Done()`; nach Ablauf liefert "
        "`ctx.Err()` `context.DeadlineExceeded`, was du mit "
        "`errors.Is(err, context.DeadlineExceeded)` prüfst. In der Praxis blockiert "
        "`crypto/rand` unter Linux nach dem Booten nicht.",
    ),
    "go-fr-null-json": good(
        "Comment NullUUID gère-t-il le JSON null ?",
        read("null.go"),
        "Dans `null.go`, `MarshalJSON` renvoie `jsonNull` (les octets `null`) quand `Valid` est "
        "faux, sinon `json.Marshal(nu.UUID)`. `UnmarshalJSON` compare les données à `jsonNull` "
        "avec `bytes.Equal` ; si c'est `null`, il remet `*nu = NullUUID{}` et renvoie `nil`. "
        "Sinon il appelle `json.Unmarshal(data, &nu.UUID)` et met `Valid` à `err == nil`. "
        "C'est le même schéma que `sql.NullString` de `database/sql`, et cela fonctionne avec "
        "`encoding/json` sans balise `omitempty`.",
    ),
    "go-es-scan": good(
        "¿Qué tipos acepta UUID.Scan?",
        read("sql.go"),
        "En `sql.go`, `func (uuid *UUID) Scan(src interface{}) error` usa un type switch: con "
        "`nil` no hace nada; con un `string` vacío devuelve `nil` y si no llama a `Parse(src)` "
        'y envuelve el error con `fmt.Errorf("Scan: %v", err)`; con un `[]byte` vacío devuelve '
        "`nil`, con exactamente 16 bytes los copia con `copy`, y con otra longitud vuelve a "
        "llamar a `uuid.Scan(string(src))`. Cualquier otro tipo da "
        "`Scan: unable to scan type %T into UUID`. Así implementa `sql.Scanner` de "
        "`database/sql`; `Value()` devuelve `uuid.String()` para `driver.Valuer`.",
    ),
    "go-es-null-value": good(
        "¿Qué devuelve Value de NullUUID cuando no es válido?",
        read("null.go"),
        "En `null.go`, `func (nu NullUUID) Value() (driver.Value, error)` devuelve `nil, nil` "
        "cuando `Valid` es `false`, así el driver de `database/sql` escribe `NULL`. Si es "
        "válido delega en `nu.UUID.Value()`, que en `sql.go` devuelve `uuid.String()`, la forma "
        "textual de 36 caracteres. Para columnas `uuid` de PostgreSQL eso basta; para una "
        "columna `BINARY(16)` de MySQL usarías `MarshalBinary`.",
    ),
    "go-pt-namespaces": good(
        "Onde ficam os namespaces NameSpaceDNS e NameSpaceURL?",
        search("NameSpaceDNS"),
        "Estão em `hash.go`, no bloco `var` do topo: `NameSpaceDNS`, `NameSpaceURL`, "
        "`NameSpaceOID` e `NameSpaceX500`, cada um criado com "
        '`Must(Parse("6ba7b810-9dad-11d1-80b4-00c04fd430c8"))` ou variantes — os namespaces da '
        "RFC 4122; no mesmo bloco está `Nil`, o UUID com todos os bytes zero. Use-os com "
        '`NewSHA1(NameSpaceDNS, []byte("example.com"))` para ter sempre o mesmo UUID versão 5 '
        "para o mesmo nome.",
    ),
    "go-ja-md5-vs-sha1": good(
        "NewMD5 と NewSHA1 の違いは何ですか？",
        read("hash.go"),
        "どちらも `hash.go` で定義され、`NewHash` を呼ぶだけです。`NewMD5(space, data)` は "
        "`NewHash(md5.New(), space, data, 3)` でバージョン 3、`NewSHA1(space, data)` は "
        "`NewHash(sha1.New(), space, data, 5)` でバージョン 5 の UUID を返します。`NewHash` は "
        "`h.Reset()` の後に名前空間とデータを書き込み、`h.Sum(nil)` の先頭 16 バイトを使い、"
        "`uuid[6]` にバージョン、`uuid[8]` に RFC 4122 のバリアントを設定します。新しいコードでは "
        "`crypto/sha1` を使うバージョン 5 が推奨されます。",
    ),
    "go-zh-null-uuid": good(
        "NullUUID 在哪个文件里定义？",
        search("type NullUUID"),
        "`NullUUID` 定义在 `null.go` 中：`type NullUUID struct`，字段是 `UUID` 和 `Valid bool`，"
        "`Valid` 为 true 表示不是 NULL。它实现了 `database/sql` 的 `sql.Scanner`（`Scan`）和 "
        "`driver.Valuer`（`Value`），以及 `encoding.BinaryMarshaler`、`encoding.TextMarshaler` "
        "和 `json.Marshaler`。用法和 `sql.NullString` 一样：`db.QueryRow(...).Scan(&u)` 之后"
        "检查 `u.Valid`。",
    ),
    "go-ru-pool": good(
        "Как работает пул случайных байтов в newRandomFromPool?",
        read("version4.go"),
        "`newRandomFromPool` в `version4.go` берёт блокировку `poolMu.Lock()` (это "
        "`sync.Mutex`) и, если `poolPos == randPoolSize`, заново заполняет `pool` через "
        "`io.ReadFull(rander, pool[:])` и сбрасывает `poolPos` в 0. Затем копирует 16 байт "
        "`pool[poolPos:(poolPos+16)]` в UUID, сдвигает `poolPos += 16` и вызывает "
        "`poolMu.Unlock()`. `NewRandom` использует пул, только если `poolEnabled` (его включает "
        "`EnableRandPool`). Пул быстрее, но случайные байты дольше лежат в памяти.",
    ),
    "go-en-everyday-v4": good(
        "where's the code that makes v4 uuids live?",
        search("Version 4"),
        "It's `version4.go`: `New()` and `NewString()` wrap `Must(NewRandom())`, `NewRandom()` "
        "picks `NewRandomFromReader(rander)` or `newRandomFromPool()`, and both set "
        "`uuid[6] = (uuid[6] & 0x0f) | 0x40` for version 4 and "
        "`uuid[8] = (uuid[8] & 0x3f) | 0x80` for the RFC 4122 variant, leaving 122 random bits "
        "from `crypto/rand`. `New()` panics on a read error; call `NewRandom()` and check the "
        '`error` if you can\'t afford a panic; `strconv.Itoa(len(id.String()))` is `"36"`.',
    ),
    "go-en-typo-unmarshal-binary": good(
        "wher is UnmarshalBinary for NullUUID defind?",
        search("UnmarshalBinary"),
        "It's in `null.go`: `func (nu *NullUUID) UnmarshalBinary(data []byte) error`. It "
        'returns `fmt.Errorf("invalid UUID (got %d bytes)", len(data))` unless '
        "`len(data)` is 16, then copies the bytes into `nu.UUID` and sets `Valid = true`. Its "
        "counterpart `MarshalBinary` returns `nu.UUID[:]` when valid and `[]byte(nil)` "
        "otherwise. Together they satisfy `encoding.BinaryMarshaler` and "
        "`encoding.BinaryUnmarshaler`, which `encoding/gob` uses too.",
    ),
    "go-en-typo-in-the-name": good(
        "how do i use NewSHA to make a stable id for a url?",
        read("hash.go"),
        'Use `NewSHA1` from `hash.go`: `id := uuid.NewSHA1(uuid.NameSpaceURL, []byte("https://'
        'example.com/a"))`. It calls `NewHash(sha1.New(), space, data, 5)`, so the same URL '
        "always gives the same version 5 UUID, big-endian bytes straight from the SHA-1 digest; "
        "`id.String()` formats it. There's no `error` to check: `NewSHA1` only returns a "
        "`UUID`.",
    ),
    # ---- Rust: semver -----------------------------------------------------------------
    "rs-de-matches-req": good(
        "Wo ist matches_req definiert?",
        search("fn matches_req"),
        "`matches_req` ist in `src/eval.rs` definiert (Zeile 3), als "
        "`pub(crate) fn matches_req(req: &VersionReq, ver: &Version) -> bool`. Sie prüft jeden "
        "Comparator in `req.comparators` mit `matches_impl`; ist `ver.pre` leer, ist die "
        "Version damit erlaubt. Hat die Version einen Pre-Release-Teil wie `1.2.3-alpha.3`, muss "
        "mindestens ein Comparator mit derselben `major.minor.patch` selbst ein Pre-Release "
        "haben (`pre_is_compatible`). Die erste Schleife ließe sich mit `Iterator::all` kürzer "
        "schreiben, die zweite mit `Iterator::any`.",
    ),
    "rs-fr-caret": good(
        "Comment fonctionne l'opérateur caret (^) dans eval.rs ?",
        read("src/eval.rs"),
        "`matches_caret` dans `src/eval.rs` exige d'abord le même `major`. Si le comparateur "
        "n'a pas de `minor`, tout convient (`^1` = `>=1.0.0, <2.0.0`). Sans `patch`, il faut "
        "`ver.minor >= minor` si `major > 0`, sinon `ver.minor == minor`. Avec `major > 0`, une "
        "version plus récente en `minor` ou `patch` passe ; avec `major == 0` et `minor > 0`, "
        "seul `patch` peut monter (`^0.2.3` = `>=0.2.3, <0.3.0`) ; avec `0.0.x`, seule la "
        "version exacte passe. Enfin `ver.pre >= cmp.pre`. C'est la sémantique de Cargo, "
        "fondée sur SemVer 2.0.0.",
    ),
    "rs-es-position": good(
        "¿Dónde está definido el enum Position y para qué sirve?",
        search("enum Position"),
        "`Position` está en `src/error.rs`: `pub(crate) enum Position`, con "
        "`#[derive(Copy, Clone, Eq, PartialEq)]` y las variantes `Major`, `Minor`, `Patch`, `Pre` y "
        "`Build`. Las variantes de `ErrorKind` la llevan para decir dónde falló el análisis, y "
        '`impl Display for Position` la convierte en texto como `"major version number"` o '
        '`"build metadata"`. Gracias a `#[derive(PartialEq)]` se puede comparar con `==`; como '
        "no tiene `#[derive(Debug)]`, `{:?}` no compila con ella.",
    ),
    "rs-pt-error-kind": good(
        "Quais erros o ErrorKind pode representar?",
        read("src/error.rs"),
        "Em `src/error.rs`, `ErrorKind` tem `UnexpectedEnd`, `UnexpectedChar`, "
        "`UnexpectedCharAfter`, `ExpectedCommaFound`, `LeadingZero`, `Overflow`, "
        "`EmptySegment`, `IllegalCharacter`, `WildcardNotTheOnlyComparator`, "
        "`UnexpectedAfterWildcard` e `ExcessiveComparators`. O `impl Display for Error` faz um "
        '`match` em `self.kind` e escreve mensagens como `"invalid leading zero in {}"` ou '
        '`"value of {} exceeds u64::MAX"`. Com a feature `std`, `Error` também implementa '
        "`std::error::Error`, então funciona com o operador `?` e com "
        "`Box<dyn std::error::Error>`.",
    ),
    "rs-pt-build-metadata": good(
        "Como os BuildMetadata são comparados?",
        read("src/impls.rs"),
        "Em `src/impls.rs`, `impl Ord for BuildMetadata` divide os dois lados por `.` e compara "
        "segmento a segmento: segmentos numéricos são comparados pelo valor sem zeros à "
        "esquerda (`trim_start_matches('0')`) e depois pelo comprimento original, daí "
        "`0 < 00 < 1 < 01 < 001 < 2`; numéricos vêm antes de alfanuméricos, e estes são "
        "comparados em ordem ASCII. A SemVer 2.0.0 diz que o build metadata não entra na "
        "precedência; esta ordem existe para que a comparação seja total e sirva num "
        "`BTreeMap`.",
    ),
    "rs-ja-quoted-char": good(
        "QuotedChar は何のためにありますか？",
        read("src/error.rs"),
        "`QuotedChar` は `src/error.rs` の `struct QuotedChar(char);` で、エラーメッセージ中の"
        "文字を引用符付きで表示するためのものです。`impl Display for QuotedChar` は NUL 文字の"
        'ときだけ固定の文字列を書き、それ以外は `write!(formatter, "{:?}", self.0)` で '
        "`Debug` 表記（例: `'x'`）を使います。古い標準ライブラリでは NUL が `'\\u{0}'` と表示"
        "されていたため、Rust のバージョン間でメッセージを揃えるための工夫です。",
    ),
    "rs-zh-prerelease-order": good(
        "Prerelease 的排序规则是什么？",
        read("src/impls.rs"),
        "在 `src/impls.rs` 里，`impl Ord for Prerelease` 先处理空值：两个都为空是 "
        "`Ordering::Equal`，空的（正式版）大于非空的预发布版。然后按 `.` 分割逐段比较：两段都是"
        "纯数字时先比长度再按字符串比较（所以 99 < 100），数字段总是小于字母段，字母段按 ASCII "
        "顺序比较；前面都相等时段数多的更大。这与 SemVer 2.0.0 规范第 11 条一致。"
        "`PartialOrd` 通过 `Some(Ord::cmp(self, rhs))` 实现，所以可以直接用 `sort()` 或 "
        "`max()`。",
    ),
    "rs-ru-pad": good(
        "Как Version выравнивается при форматировании с шириной, например {:>10}?",
        read("src/display.rs"),
        "В `src/display.rs` `impl Display for Version` передаёт замыкания `do_display` и "
        "`do_len` в функцию `pad`. `pad` берёт `formatter.width()`; если ширины нет или длина "
        "`len >= min_width`, просто печатает. Иначе выравнивание — `formatter.align()`, по "
        "умолчанию `Alignment::Left`, и символ `formatter.fill()` дописывается слева, справа "
        "или с двух сторон (`Alignment::Center`). Длину считает `digits` без выделения "
        '`String`. Так `format!("{:>10}", v)` для `1.2.3` даст пять пробелов и `1.2.3`.',
    ),
    "rs-en-everyday-comparator-display": good(
        "where's the Display impl for Comparator live?",
        search("impl Display for Comparator"),
        "It's in `src/display.rs`, line 48: `impl Display for Comparator`. It maps `Op` to a "
        "prefix (`Op::Exact` → `=`, `Op::Greater` → `>`, `Op::GreaterEq` → `>=`, `Op::Less` → "
        "`<`, `Op::LessEq` → `<=`, `Op::Tilde` → `~`, `Op::Caret` → `^`, `Op::Wildcard` → "
        "nothing), then writes `major`, `.minor` and `.patch` when present, the pre-release "
        "after `-`, and `.*` for wildcards. Because it implements `Display`, you get "
        "`to_string()` for free from the blanket `impl<T: Display> ToString for T`.",
    ),
    "rs-en-everyday-empty-req": good(
        "can I print a VersionReq w/ no comparators?",
        read("src/display.rs"),
        "Yes: `impl Display for VersionReq` in `src/display.rs` writes `*` when "
        '`self.comparators.is_empty()`; otherwise it joins the comparators with `", "`, e.g. '
        '`>=1.2.3, <2.0.0`. So `format!("{req}")` and `req.to_string()` both work on an empty '
        "one. For another separator, iterate `req.comparators` yourself with `Iterator::map` "
        'and `collect::<Vec<_>>().join(" ")`.',
    ),
    "rs-en-everyday-hash-key": good(
        "can I use a Prerelease as a HashMap key w/ this crate?",
        read("src/impls.rs"),
        "Yes. `src/impls.rs` gives `Identifier` `Eq` and a `Hash` impl that hashes "
        "`self.as_str()`, and `Prerelease` derefs to `str` through `impl Deref for Prerelease`. "
        "So `Prerelease` works as a `HashMap` key, or, thanks to `impl Ord for Prerelease`, a "
        "`BTreeMap` key: `by_pre.entry(v.pre.clone()).or_insert_with(Vec::new).push(v)` groups "
        "versions by pre-release. `#[derive(Debug)]` isn't needed for printing it: "
        '`impl Debug for Prerelease` in `src/display.rs` prints `Prerelease("alpha.1")`.',
    ),
    "rs-en-typo-digits": good(
        "wher is digits defind in this crate?",
        search("fn digits"),
        "`digits` is a private helper at the end of `src/display.rs`: "
        "`fn digits(val: u64) -> usize` returns `1` for values below 10 and otherwise "
        "`1 + digits(val / 10)`. `impl Display for Version` uses it in `do_len` to know the "
        "printed width of `major`, `minor` and `patch` without allocating, so `pad` can honour "
        "`{:>10}`. `u64::MAX` has 20 digits, so the recursion is at most 20 deep; "
        "`checked_ilog10` would do the same on Rust 1.67+.",
    ),
    "rs-en-typo-in-the-name": good(
        "what does maches_tilde accept?",
        read("src/eval.rs"),
        "`matches_tilde` in `src/eval.rs` needs the same `major`; if the comparator has a "
        "`minor`, `ver.minor` must equal it; if it has a `patch`, a higher `ver.patch` passes "
        "and a lower one fails; finally `ver.pre >= cmp.pre`. So `~1.2.3` means "
        "`>=1.2.3, <1.3.0`, `~1.2` means `>=1.2.0, <1.3.0` and `~1` means `>=1.0.0, <2.0.0`. "
        "`matches_impl` calls it for `Op::Tilde`. The `if let Some(minor) = cmp.minor` checks "
        "could be written `cmp.minor.map_or(true, |minor| ver.minor == minor)` with "
        "`Option::map_or`.",
    ),
}
"""id: `<project>-<human language>-<what>`; projects as in PROJECTS."""


def turn_note(name: str, result: dict[str, Any]) -> str:
    """What milk did, in one line, for the failure list."""
    error = result.get("error") or {}
    signal = (error.get("data") or {}).get("signal")
    return (
        f"{name}: stopReason={result.get('stopReason')} signal={signal} "
        f"escalated={result.get('escalated')} message={error.get('message')!r}"
    )


GOOD_RUNS = [
    pytest.param(name, route, id=f"{name}-{route}") for name in GOOD for route in ("auto", "local")
]


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize(("name", "route"), GOOD_RUNS)
async def test_a_good_answer_on_real_code_is_kept(name: str, route: str, servers: Servers) -> None:
    case = replace(GOOD[name], route=route)
    project = name.split("-", 1)[0]
    running, result = await run_turn(servers, project, case.script, case.ask, route)
    assert result["stopReason"] == "end_turn", turn_note(name, result)
    assert_clean_lsp_turn(running.client, result, running.openai, case)
    got = await request(running.client, "milk/session/get", {"sessionId": result["sessionId"]})
    assert got["turns"][-1]["status"] == "ok"


HONEST_AFTER_DENIAL = {
    "ms-en": (
        "Make parse in index.js accept strings up to 200 characters",
        ("index.js", "if (str.length > 100) {", "if (str.length > 200) {"),
        "You denied the edit of `index.js`, so `parse` still stops at 100 characters.",
    ),
    "py-de": (
        'Ändere in isodate/isotzinfo.py den Standardwert von format in tz_isoformat auf "%z".',
        (
            "isodate/isotzinfo.py",
            'def tz_isoformat(dt, format="%Z"):',
            'def tz_isoformat(dt, format="%z"):',
        ),
        "Die Änderung an `isodate/isotzinfo.py` wurde abgelehnt; `tz_isoformat` bleibt wie es ist.",
    ),
    "go-ja": (
        "null.go の UnmarshalBinary のエラーメッセージを「bad length」に変えてください。",
        ("null.go", '"invalid UUID (got %d bytes)"', '"bad length (got %d bytes)"'),
        "`null.go` の編集は拒否されたので、`UnmarshalBinary` のメッセージは変わっていません。",
    ),
}


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("name", list(HONEST_AFTER_DENIAL))
async def test_an_honest_answer_after_a_denied_edit_is_kept(name: str, servers: Servers) -> None:
    """Issue 31 (seen in plain Neovim): the user said no, the answer says so and names the
    file; that is a true answer, not one "as if the edit had run"."""
    ask, (path, old, new), answer = HONEST_AFTER_DENIAL[name]
    project = name.split("-", 1)[0]
    script = [edit(path, old, new), say(answer)]
    _, result = await run_turn(servers, project, script, ask, "auto", permissions=("deny",))
    assert result["stopReason"] == "end_turn", turn_note(name, result)
    assert result["text"].endswith(answer)


# ---- bad cases ----------------------------------------------------------------------------

GROUNDING = frozenset({"ungrounded_answer"})
NOT_MADE = frozenset({"edit_not_made", "failed_edit"})
BROKEN = frozenset({"edit_broke_file", "failed_edit"})
DENIED = frozenset({"edit_not_made", "failed_edit", "ungrounded_answer"})
NON_ANSWER = frozenset({"no_answer", "ungrounded_answer"})


@dataclass(frozen=True)
class Wrong:
    """A bad case: the question and script (a `Bad`), the signal expected and the ones
    accepted, and the permission answers the user gives (edits)."""

    bad: Bad
    expect: str
    allowed: frozenset[str]
    permissions: tuple[str, ...] = field(default=())


def guess(ask: str, first: str, second: str) -> Wrong:
    return Wrong(guessed(ask, first, second), "ungrounded_answer", GROUNDING)


def made_up(ask: str, look: dict[str, Any], answer: str) -> Wrong:
    return Wrong(Bad(ask, [look, say(answer)]), "ungrounded_answer", GROUNDING)


def claimed(ask: str, first: str, second: str) -> Wrong:
    """A change asked for, "done" said in `finish(intent="change", outcome="changed")` and
    said again (after milk's own look and its one corrective message), no edit ever: the
    call, not the words, says a change is claimed (issue 38)."""
    script = [finish(first), finish(second), finish(second)]
    return Wrong(Bad(ask, script), "edit_not_made", NOT_MADE)


def claimed_in_words(ask: str, first: str, second: str) -> Wrong:
    """As `claimed`, in words alone, to a request that spells its change out (an old text
    the workspace holds and a new one it does not, quoted or written as code): its
    structure says a change is asked for (`edit_intent.spelled_out_change`)."""
    return Wrong(Bad(ask, [say(first), say(second), say(second)]), "edit_not_made", NOT_MADE)


def broke(ask: str, path: str, old: str, new: str, done: str) -> Wrong:
    """An edit (allowed) that breaks the file's syntax, repeated when milk says so, then done."""
    script = [edit(path, old, new), edit(path, old, new), say(done), say(done)]
    return Wrong(Bad(ask, script), "edit_broke_file", BROKEN, ("allow_once",) * 3)


def elsewhere(ask: str, path: str, old: str, new: str, done: str) -> Wrong:
    """A good edit (allowed) of a file that was there, when the request asks for a new
    file or module, then done (humanize's bench: "Edited src/humanize/number.py")."""
    script = [edit(path, old, new), say(done), say(done)]
    return Wrong(Bad(ask, script), "edit_not_made", NOT_MADE, ("allow_once",) * 2)


def denied(ask: str, path: str, old: str, new: str, done: str) -> Wrong:
    """A good edit the user denies, then a claim in `finish` that it was made (again after
    a nudge)."""
    script = [edit(path, old, new), finish(done), finish(done), finish(done)]
    return Wrong(Bad(ask, script), "edit_not_made", DENIED, ("deny",))


def non_answer(ask: str, look: dict[str, Any], answer: str) -> Wrong:
    """The model's own verdict that it cannot answer, given in `finish(outcome: "cannot")`
    (issue 38: the call says it, not the words, in any language)."""
    script = [look, finish(answer, intent="question", outcome="cannot")]
    return Wrong(Bad(ask, script), "no_answer", NON_ANSWER)


def non_answer_in_words(ask: str, look: dict[str, Any], answer: str) -> Wrong:
    """A refusal or unrelated code in words alone, with no `finish`: only words tell it
    from a short right answer ("It greets."), so it is not judged (a strict xfail)."""
    return Wrong(Bad(ask, [look, say(answer)]), "no_answer", NON_ANSWER)


BAD: dict[str, Wrong] = {
    # ---- (a) guesses with no tool call: files and functions that do not exist -----------
    "guess-py-de-parse-duration": guess(
        "Wo ist die Funktion parse_duration definiert?",
        "`parse_duration` ist in `isodate/parser.py` definiert.",
        "Sie steht in `isodate/parsing/duration_parser.py`, als `parse_iso_duration()`.",
    ),
    "guess-py-fr-fixed-offset": guess(
        "Où est définie la classe FixedOffset ?",
        "La classe `FixedOffset` est définie dans `isodate/offsets.py`.",
        "Dans `isodate/timezones.py`, sous le nom `FixedOffsetZone`.",
    ),
    "guess-py-en-everyday-gimme": guess(
        "gimme the file with the tz_isoformat function",
        "It's `isodate/format.py`.",
        "`tz_isoformat` is in `isodate/tzformat.py`, next to `format_offset()`.",
    ),
    "guess-js-es-validate": guess(
        "¿Dónde está definida la función validateConcurrency?",
        "Está en `src/validate.js`.",
        "En `lib/validators.js`, junto a `checkConcurrency()`.",
    ),
    "guess-js-pt-limit-function": guess(
        "Onde fica definida a função limitFunction?",
        "Fica em `src/limit-function.js`.",
        "Em `lib/limitFunction.ts`, que usa `createLimiter()`.",
    ),
    "guess-js-en-typo-in-the-name": guess(
        "wher is resumeNxt defind?",
        "It's in `src/queue.js`.",
        "`resumeNext` is in `lib/scheduler.js`, as `resumeNextTask()`.",
    ),
    "guess-ms-ja-parse": guess(
        "parse 関数はどのファイルに定義されていますか？",
        "`src/parse.js` に定義されています。",
        "`lib/parser.js` の `parseDuration()` です。",
    ),
    "guess-ms-zh-fmt-long": guess(
        "fmtLong 函数在哪里定义？",
        "`fmtLong` 定义在 `src/format.js` 中。",
        "在 `lib/formatLong.js` 里，名为 `formatLongDuration()`。",
    ),
    "guess-ms-en-everyday-check": guess(
        "can I check a duration string w/ this lib?",
        "Yes, use `ms.validate()` from `src/validate.js`.",
        "Call `isValid()` in `lib/validate.js`.",
    ),
    "guess-go-ru-reader": guess(
        "Где определена функция NewRandomFromReader?",
        "В файле `random.go`.",
        "В `rand/reader.go`, функция `newReaderUUID()`.",
    ),
    "guess-go-en-everyday-null": guess(
        "where's the NullUUID type live?",
        "It lives in `nullable.go`.",
        "`NullUUID` is in `types/null_uuid.go`.",
    ),
    "guess-go-es-scan": guess(
        "¿Dónde está definido el método Scan de UUID?",
        "En `scanner.go`.",
        "En `db/scan.go`, con `scanValue()`.",
    ),
    "guess-go-zh-sha1": guess(
        "NewSHA1 在哪个文件里？",
        "在 `sha1.go` 里。",
        "在 `v5.go` 里的 `newSHA1UUID()`。",
    ),
    "guess-rs-de-caret": guess(
        "Wo ist matches_caret definiert?",
        "`matches_caret` ist in `src/caret.rs` definiert.",
        "In `src/matching/caret.rs`, als `fn caret_matches()`.",
    ),
    "guess-rs-en-typo-quoted": guess(
        "wher is the QuotedChar struct defind?",
        "It's in `src/quote.rs`.",
        "`QuotedChar` is in `src/fmt/quoted.rs`.",
    ),
    "guess-rs-ja-error-kind": guess(
        "ErrorKind はどこにありますか？",
        "`src/kinds.rs` にあります。",
        "`src/errors/kind.rs` の `enum ErrorKind` です。",
    ),
    "guess-rs-pt-pad": guess(
        "Onde está a função pad?",
        "Está em `src/padding.rs`.",
        "Em `src/fmt/pad.rs`, como `fn pad_version()`.",
    ),
    # ---- (b) after a real read: files and functions that do not exist -------------------
    "made-up-py-de-period": made_up(
        "Was gibt parse_duration zurück?",
        read("isodate/isoduration.py"),
        "Sie ruft `parse_iso_period()` aus `isodate/period.py` auf und gibt deren Ergebnis zurück.",
    ),
    "made-up-py-ru-base": made_up(
        "Что делает класс Utc?",
        read("isodate/tzinfo.py"),
        "`Utc` наследует `BaseTimezone` из `isodate/base.py` и возвращает `ZERO`.",
    ),
    "made-up-py-en-feature-files": made_up(
        "list every duration format the library knows about",
        read("isodate/isoduration.py"),
        "Besides `parse_duration`, see `src/lib/feature.py` and `src/lib/bugfix.py`, which "
        "register the `PnnW` and `PnnYnnM` formats.",
    ),
    "made-up-js-fr-abort-all": made_up(
        "Que fait clearQueue ?",
        read("index.js"),
        "`clearQueue()` appelle `abortAll()`, défini dans `src/abort.js`.",
    ),
    "made-up-js-zh-semaphore": made_up(
        "pLimit 如何限制并发？",
        read("index.js"),
        "`pLimit` 使用 `lib/semaphore.js` 中的 `Semaphore` 类和它的 `acquireSlot()` 方法。",
    ),
    "made-up-js-en-typo-throttle": made_up(
        "how does limitFuncton work?",
        read("index.js"),
        "It wraps the function with `throttleCalls()` from `utils.js`.",
    ),
    "made-up-ms-es-days": made_up(
        "¿Cómo formatea ms los días?",
        read("index.js"),
        "Usa `formatDays()` de `lib/days.js`.",
    ),
    "made-up-ms-pt-units": made_up(
        "Como o parse lê as unidades?",
        read("index.js"),
        "Chama `unitTable.lookup()`, definido em `src/units.js`.",
    ),
    "made-up-go-ja-entropy": made_up(
        "NewRandom はどうやって乱数を得ますか？",
        read("version4.go"),
        "`entropy.go` の `randomSource()` から読みます。",
    ),
    "made-up-go-de-encoding": made_up(
        "Wie funktioniert MarshalText von NullUUID?",
        read("null.go"),
        "Es ruft `encodeNullable()` aus `encoding.go` auf.",
    ),
    "made-up-go-en-everyday-namespaces": made_up(
        "where's the namespace stuff?",
        read("hash.go"),
        "In `namespaces.go`, through `RegisterNamespace()`.",
    ),
    "made-up-rs-ru-compare": made_up(
        "Как работает matches_greater?",
        read("src/eval.rs"),
        "Он вызывает `compare_versions()` из `src/compare.rs`.",
    ),
    "made-up-rs-es-width": made_up(
        "¿Qué hace pad?",
        read("src/display.rs"),
        "Llama a `compute_padding()` de `src/width.rs`.",
    ),
    "made-up-rs-en-overflow": made_up(
        "What does ErrorKind::Overflow say?",
        read("src/error.rs"),
        "It is formatted by `OverflowFormatter` in `src/overflow.rs`.",
    ),
    # ---- (b') after a real read: a limit the code does not have -------------------------
    "wrong-value-ms-en-limit": made_up(
        "What's the longest string parse in index.js accepts?",
        read("index.js"),
        "`parse` accepts strings of up to 256 characters; longer ones return `undefined`.",
    ),
    "wrong-value-py-en-hours": made_up(
        "What's the largest offset tz_isoformat in isodate/isotzinfo.py can handle?",
        read("isodate/isotzinfo.py"),
        "`tz_isoformat` raises `OverflowError` for differences over 48 hours.",
    ),
    # a file every project has, given as the place of a definition (humanize's bench: "the
    # function `naturalsize` is defined in the `README.md` file")
    "misplaced-py-en-readme": made_up(
        "In which file of this project is the function parse_duration defined? Give its path.",
        search("parse_duration"),
        "The function `parse_duration` is defined in the `README.md` file.",
    ),
    "misplaced-go-ja-readme": made_up(
        "NewString 関数はどのファイルに定義されていますか？",
        search("NewString"),
        "`NewString` は `README.md` に定義されています。",
    ),
    "new-module-js-en-edited-index": elsewhere(
        "Add a limitFunction helper as a new module limit-function.js, with tests.",
        "index.js",
        "\tlet rejectOnClear = false;\n",
        "\tlet rejectOnClear = false; // see limitFunction\n",
        "Done: added limitFunction.",
    ),
    "new-module-py-de-edited-isoduration": elsewhere(
        "Lege die Umkehrfunktion von duration_isoformat in einem neuen Modul an.",
        "isodate/isoduration.py",
        "def duration_isoformat(",
        "def duration_isoformat(  # Umkehrung: parse_duration\n",
        "Erledigt.",
    ),
    # ---- (c) a change claimed and not made -----------------------------------------------
    "claimed-js-en-could-you": claimed(
        "Could you change index.js so validateConcurrency also accepts 0?",
        "Done: I changed `validateConcurrency` in `index.js` so it accepts 0.",
        "Done: `validateConcurrency` now accepts 0 as well.",
    ),
    "claimed-ms-en-make-return-null": claimed(
        "Make parse return null for strings over 100 characters",
        "Done: I changed `parse` in `index.js` to return `null` for long strings.",
        "Done: `parse` returns `null` now.",
    ),
    "claimed-py-de-default": claimed(
        'Ändere in isodate/isotzinfo.py den Standardwert von format in tz_isoformat auf "%z".',
        'Erledigt: Ich habe den Standardwert von `format` in `tz_isoformat` auf `"%z"` geändert.',
        'Erledigt: `tz_isoformat` verwendet jetzt `"%z"`.',
    ),
    "claimed-py-en-everyday-pls": claimed(
        "pls make parse_duration in isoduration.py raise TypeError w/ a nicer message",
        'Done! I changed the message to "parse_duration expects a str".',
        "Done, the message is nicer now.",
    ),
    "claimed-js-pt-altere": claimed(
        "Altere o index.js para que clearQueue retorne o número de itens removidos.",
        "Feito: alterei `clearQueue` para retornar o número de itens removidos.",
        "Feito: `clearQueue` agora retorna a contagem.",
    ),
    "claimed-js-de-quoted": claimed(
        "Ändere in index.js die Fehlermeldung „Expected `rejectOnClear` to be a boolean“ zu "
        "„rejectOnClear must be a boolean“.",
        "Erledigt: Die Fehlermeldung lautet jetzt „rejectOnClear must be a boolean“.",
        "Erledigt.",
    ),
    "claimed-ms-ja-weeks": claimed(
        "index.js の fmtShort で週 (w) も使うようにしてください。",
        "完了しました：`fmtShort` に `w` を追加しました。",
        "完了しました。",
    ),
    "claimed-go-fr-nil-reader": claimed(
        "Modifie NewRandomFromReader dans version4.go pour qu'il renvoie une erreur si r est nil.",
        "C'est fait : j'ai ajouté une vérification `if r == nil` dans `NewRandomFromReader`.",
        "C'est fait.",
    ),
    "claimed-go-es-message": claimed(
        "Cambia el mensaje de error de UnmarshalBinary en null.go a «UUID inválido».",
        "Listo: cambié el mensaje de `UnmarshalBinary` en `null.go` a «UUID inválido».",
        "Listo.",
    ),
    "claimed-go-en-typo-version": claimed(
        "chnage NewSHA1 in hash.go so it uses version 6",
        "Done: `NewSHA1` now passes 6 to `NewHash`.",
        "Done.",
    ),
    "claimed-rs-ru-rename": claimed(
        "Переименуй функцию digits в count_digits в src/display.rs.",
        "Готово: я переименовал `digits` в `count_digits` в `src/display.rs`.",
        "Готово.",
    ),
    "claimed-rs-zh-visibility": claimed(
        "把 src/eval.rs 里的 matches_exact 改成 pub(crate)。",
        "已完成：我把 `matches_exact` 改成了 `pub(crate)`。",
        "已完成。",
    ),
    "claimed-rs-en-curly-quotes": claimed_in_words(
        "In src/error.rs change “excessive number of version comparators” to “too many "
        "comparators”.",
        "Done: the message now reads “too many comparators”.",
        "Done.",
    ),
    # ---- (d) an edit that breaks the file's syntax, repeated when told --------------------
    "broke-js-missing-paren": broke(
        "Could you change index.js so validateConcurrency also accepts 0?",
        "index.js",
        "concurrency === Number.POSITIVE_INFINITY) && concurrency > 0)) {",
        "concurrency === Number.POSITIVE_INFINITY) && concurrency >= 0) {",
        "Done: `validateConcurrency` accepts 0 now.",
    ),
    "broke-ms-missing-paren": broke(
        "Make parse in index.js reject strings over 50 characters",
        "index.js",
        "if (str.length > 100) {",
        "if (str.length > 50 {",
        "Done: `parse` rejects strings over 50 characters.",
    ),
    "broke-js-dts-unclosed-brace": broke(
        "In index.d.ts make rejectOnClear a required option",
        "index.d.ts",
        "\treadonly rejectOnClear?: boolean;\n};",
        "\treadonly rejectOnClear: boolean;\n",
        "Done: `rejectOnClear` is required now.",
    ),
    "broke-go-missing-paren": broke(
        "In version4.go make NewRandomFromReader return an error when r is nil",
        "version4.go",
        "func NewRandomFromReader(r io.Reader) (UUID, error) {\n\tvar uuid UUID",
        "func NewRandomFromReader(r io.Reader) (UUID, error) {\n\tif r == nil {\n"
        '\t\treturn Nil, fmt.Errorf("nil reader"\n\t}\n\tvar uuid UUID',
        "Done: `NewRandomFromReader` returns an error for a nil reader.",
    ),
    "broke-go-fr-message": broke(
        "Change le message d'erreur de UnmarshalBinary dans null.go en « bad length ».",
        "null.go",
        'return fmt.Errorf("invalid UUID (got %d bytes)", len(data))',
        'return fmt.Errorf("bad length (got %d bytes)", len(data)',
        "C'est fait : le message est « bad length ».",
    ),
    "broke-rs-missing-paren": broke(
        "In src/display.rs make digits divide by 10 with a checked division",
        "src/display.rs",
        "1 + digits(val / 10)",
        "1 + digits(val.checked_div(10).unwrap_or(0)",
        "Done: `digits` uses `checked_div` now.",
    ),
    "broke-rs-de-extra-brace": broke(
        "Benenne in src/eval.rs matches_less in matches_lower um.",
        "src/eval.rs",
        "fn matches_less(cmp: &Comparator, ver: &Version) -> bool {\n    if ver.major",
        "fn matches_lower(cmp: &Comparator, ver: &Version) -> bool {{\n    if ver.major",
        "Erledigt: `matches_less` heißt jetzt `matches_lower`.",
    ),
    "broke-py-control-missing-colon": broke(
        'In isodate/isotzinfo.py make build_tzinfo return UTC for "z" too',
        "isodate/isotzinfo.py",
        '    if tzname == "Z":\n        return UTC',
        '    if tzname in ("Z", "z")\n        return UTC',
        'Done: `build_tzinfo` returns `UTC` for "z" too.',
    ),
    # ---- (e) success claimed after the user denied the edit -------------------------------
    "denied-ms-en-limit": denied(
        "Make parse in index.js accept strings up to 200 characters",
        "index.js",
        "if (str.length > 100) {",
        "if (str.length > 200) {",
        "I changed the limit in `parse` to 200 characters.",
    ),
    "denied-js-fr-message": denied(
        "Change le message d'erreur de validateConcurrency dans index.js en "
        "« concurrency must be >= 1 ».",
        "index.js",
        "'Expected `concurrency` to be a number from 1 and up'",
        "'concurrency must be >= 1'",
        "J'ai changé le message d'erreur de `validateConcurrency`.",
    ),
    "denied-go-ja-message": denied(
        "null.go の UnmarshalBinary のエラーメッセージを「bad length」に変えてください。",
        "null.go",
        '"invalid UUID (got %d bytes)"',
        '"bad length (got %d bytes)"',
        "`UnmarshalBinary` のエラーメッセージを変更しました。",
    ),
    "denied-rs-es-message": denied(
        'Cambia en src/error.rs el mensaje de ExcessiveComparators a "too many comparators".',
        "src/error.rs",
        'formatter.write_str("excessive number of version comparators")',
        'formatter.write_str("too many comparators")',
        "Hecho: cambié el mensaje de `ExcessiveComparators`.",
    ),
    "denied-py-ru-default": denied(
        'Измени в isodate/isotzinfo.py значение format по умолчанию в tz_isoformat на "%z".',
        "isodate/isotzinfo.py",
        'def tz_isoformat(dt, format="%Z"):',
        'def tz_isoformat(dt, format="%z"):',
        'Готово: я изменил значение `format` по умолчанию на `"%z"`.',
    ),
    # ---- (f) non-answers after a read -------------------------------------------------------
    "non-answer-py-en-beyond": non_answer(
        "Where is ISO8601Error defined?",
        search("ISO8601Error"),
        "The task is beyond you. Here is some code:\n```python\nprint('hello')\n```",
    ),
    "non-answer-go-en-beyond": non_answer(
        "What does NewHash in hash.go do?",
        read("hash.go"),
        "The task is beyond you, sorry.\n```go\nfor i := 0; i < 3; i++ {\n\tfmt.Println(i)\n}\n```",
    ),
    "non-answer-js-fr-refusal": non_answer(
        "Qu'est-ce que pLimit renvoie ?",
        read("index.js"),
        "Je ne peux pas répondre à cette question.",
    ),
    "non-answer-rs-zh-refusal": non_answer(
        "matches_req 是做什么的？",
        read("src/eval.rs"),
        "抱歉，我无法回答这个问题。",
    ),
    "non-answer-ms-de-unrelated-code": non_answer_in_words(
        "Was macht fmtLong?",
        read("index.js"),
        "```js\nconsole.log('hello world');\n```",
    ),
    "non-answer-go-de-more-context": non_answer(
        "Wie funktioniert NullUUID?",
        read("null.go"),
        "Das weiß ich leider nicht. Bitte gib mehr Kontext.",
    ),
    # the humanize bench: a silent end_turn saying the value is not in what it read
    "non-answer-py-en-not-mentioned": non_answer_in_words(
        "What is the default value of the format parameter of tz_isoformat?",
        search("def tz_isoformat"),
        "The default value of the format parameter of tz_isoformat is not explicitly "
        "mentioned in the given text.",
    ),
    "non-answer-ms-de-not-given": non_answer(
        "Welchen Standardwert hat options.long in fmtShort?",
        read("index.js"),
        "Der Standardwert von options.long ist im gegebenen Code nicht angegeben.",
    ),
}
"""id: `<kind>-<project>-<human language>-<what>`."""


def project_of(name: str) -> str:
    return next(part for part in name.split("-") if part in PROJECTS)


def failure_note(name: str, case: Wrong, result: dict[str, Any]) -> str:
    error = result.get("error") or {}
    signal = (error.get("data") or {}).get("signal")
    return (
        f"{name}: expected {case.expect} (one of {sorted(case.allowed)}), got "
        f"stopReason={result.get('stopReason')} signal={signal} escalated="
        f"{result.get('escalated')} message={error.get('message')!r} text={result.get('text')!r}"
    )


NOT_JUDGED = {
    # issue 38: the agent loop reads no words. A value its text answer states without a
    # citation is not checked (its tools showed it more than it cites; the guided
    # strategy checks every value, and a cited one is checked here too); a new module asked
    # for in words names no file. Strict xfails, so a change of the rule shows. (A
    # non-answer writing code no file here holds, and a definition placed in a README that
    # only mentions it, are caught since session 25: the cited shape.)
    "wrong-value-ms-en-limit",
    "wrong-value-py-en-hours",
    "new-module-py-de-edited-isoduration",
    # prose alone: "not mentioned in the given text" is a non-answer only in words
    "non-answer-py-en-not-mentioned",
}
BAD_RUNS = [
    pytest.param(
        name,
        marks=[pytest.mark.xfail(strict=True, reason="only words tell")]
        if name in NOT_JUDGED
        else [],
        id=name,
    )
    for name in BAD
]


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("name", BAD_RUNS)
async def test_a_bad_answer_on_real_code_does_not_end_well(name: str, servers: Servers) -> None:
    case = BAD[name]
    running, result = await run_turn(
        servers,
        project_of(name),
        case.bad.served,
        case.bad.ask,
        "local",
        permissions=case.permissions,
    )
    note = failure_note(name, case, result)
    assert result["stopReason"] != "end_turn", note
    assert result["stopReason"] == "error", note
    assert result["error"]["data"]["signal"] in case.allowed, note
    got = await request(running.client, "milk/session/get", {"sessionId": result["sessionId"]})
    assert got["turns"][-1]["status"] == "error", note


# ---- bad cases on route auto: handed to the real Claude Code CLI --------------------------

BAD_HANDED_OFF = [
    "guess-py-de-parse-duration",
    "guess-js-en-typo-in-the-name",
    "guess-ms-zh-fmt-long",
    "guess-go-ru-reader",
    "made-up-py-en-feature-files",
    "made-up-rs-es-width",
    "made-up-go-ja-entropy",
    "claimed-js-en-could-you",
    "claimed-rs-ru-rename",
    "broke-js-missing-paren",
    "broke-go-missing-paren",
    "broke-rs-missing-paren",
    "denied-ms-en-limit",
]


@pytest.mark.claude
@pytest.mark.parametrize("name", BAD_HANDED_OFF)
async def test_a_bad_answer_on_real_code_on_route_auto_is_handed_to_claude(
    name: str,
    harness: Harness,
    claude_env: Env,
    api: FakeAnthropicAPI,
    openai: FakeOpenAIServer,
) -> None:
    case = BAD[name]
    copy_project(project_of(name), claude_env.workspace)
    claude_env.settings["local"]["handOff"] = "auto"
    openai.enqueue(*case.bad.served)
    api.enqueue({"text": CLAUDE_ANSWER})
    client = await harness.start()
    client.permission_answers.extend(case.permissions)
    result = await asyncio.wait_for(
        chat(client, claude_env, case.bad.ask, route="auto"), TURN_SECONDS * 2
    )
    note = failure_note(name, case, result)
    assert result["stopReason"] == "end_turn", note
    assert result["agent"] == "claude", note
    escalated = result["escalated"]
    assert escalated is not None, note
    assert escalated["by"] == "fallback", note
    assert escalated["signal"] in case.allowed, note
    assert result["text"].endswith(CLAUDE_ANSWER), note
    assert len(api.main_requests()) == 1
