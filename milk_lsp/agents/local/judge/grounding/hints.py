"""Words that hint at what kind of question or request a message is, per human language.

Hints only, kept as data: each one *adds* a check or a look ("where is X defined?" gets the
definers compared with the answer; a change request gets the workspace diff demanded), and
none of them ever lets a turn pass. What a message is about is decided by structure
(`grounding.asked`: its tokens against the workspace's definitions and files); a language
missing here costs a check, never a false pass.

Each table maps a language to stems matched case-insensitively at the start of a word
(Latin and Cyrillic scripts) or anywhere (Chinese, Japanese, Korean, which have no spaces).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

NO_SPACES = frozenset({"zh", "ja", "ko"})
"""The languages written without spaces between words: their stems match anywhere."""

WHERE_DEFINED: Mapping[str, tuple[str, ...]] = {
    "en": (
        "defined",
        "defines",
        "defind",
        "declared",
        "declares",
        "implemented",
        "implements",
        "lives",
        "live",
        "located",
        "which file",
        "what file",
        "file with",
        "file has",
        "where's",
        "where is",
        "wher ",
    ),
    "de": ("definiert", "deklariert", "implementiert", "welche datei", "in welcher datei", "wo "),
    "fr": ("défini", "defini", "déclaré", "implémenté", "quel fichier", "où ", "ou se trouve"),
    "es": ("definid", "declarad", "implementad", "qué archivo", "que archivo", "dónde", "donde"),
    "pt": ("definid", "declarad", "implementad", "qual arquivo", "onde fica", "onde está", "onde"),
    "it": ("definit", "dichiarat", "quale file", "dove "),
    "nl": ("gedefinieerd", "welk bestand", "waar "),
    "pl": ("zdefiniowan", "który plik", "gdzie "),
    "tr": ("tan\u0131mlan", "hangi dosya", "nerede"),
    "ru": ("определ", "объявлен", "реализован", "какой файл", "каком файле", "где "),
    "uk": ("визначен", "який файл", "де "),
    "zh": ("定义", "声明", "实现", "哪个文件", "在哪"),
    "ja": ("定義", "宣言", "実装", "どのファイル", "どこ"),
    "ko": ("정의", "선언", "어느 파일", "어디"),
}
"""The question asks which file holds a definition ("Wo ist slugify definiert?")."""

CLI_OPTIONS: Mapping[str, tuple[str, ...]] = {
    "en": ("command line", "command-line", "cli", "flag", "option", "switch"),
    "de": ("kommandozeile", "befehlszeile", "option", "schalter", "flag"),
    "fr": ("ligne de commande", "option", "drapeau"),
    "es": ("línea de comandos", "linea de comandos", "opción", "opcion", "bandera"),
    "pt": ("linha de comando", "opção", "opcao", "flag"),
    "it": ("riga di comando", "opzion"),
    "ru": ("командной строк", "командная строк", "опци", "флаг", "ключ"),
    "zh": ("命令行", "选项", "参数", "标志"),
    "ja": ("コマンドライン", "オプション", "フラグ", "引数"),
    "ko": ("명령줄", "옵션", "플래그"),
}
"""The question is about a command-line interface's options (milk's look then searches for
the lines that declare them, `code.languages`)."""

CLI_NAMES: Mapping[str, tuple[str, ...]] = {
    "en": ("command line", "command-line", "cli"),
    "de": ("kommandozeile", "befehlszeile", "cli"),
    "fr": ("ligne de commande", "cli"),
    "es": ("línea de comandos", "linea de comandos", "cli"),
    "pt": ("linha de comando", "cli"),
    "it": ("riga di comando", "cli"),
    "ru": ("командной строк", "командная строк", "cli"),
    "zh": ("命令行", "cli"),
    "ja": ("コマンドライン", "cli"),
    "ko": ("명령줄", "cli"),
}
"""Words naming a command line itself: an options question needs one of them too."""

CHANGE: Mapping[str, tuple[str, ...]] = {
    "en": (
        "add",
        "annotate",
        "append",
        "change",
        "convert",
        "create",
        "delete",
        "design",
        "document",
        "extend",
        "fix",
        "implement",
        "improve",
        "insert",
        "introduce",
        "make",
        "merge",
        "migrate",
        "modify",
        "move",
        "optimize",
        "port ",
        "ported",
        "porting",
        "redesign",
        "refactor",
        "remove",
        "rename",
        "reorganize",
        "replace",
        "restructure",
        "rewrite",
        "set",
        "simplify",
        "split",
        "update",
    ),
    "de": (
        "ändere",
        "änder",
        "füge",
        "ergänze",
        "entferne",
        "lösche",
        "benenne",
        "ersetze",
        "korrigiere",
        "behebe",
        "schreibe",
        "mach",
        "verschiebe",
        "portiere",
        "migriere",
    ),
    "fr": (
        "change",
        "modifie",
        "ajoute",
        "supprime",
        "renomme",
        "remplace",
        "corrige",
        "réécris",
        "fais",
        "déplace",
        "porte ",
        "migre ",
    ),
    "es": (
        "cambia",
        "modifica",
        "añade",
        "agrega",
        "elimina",
        "borra",
        "renombra",
        "reemplaza",
        "corrige",
        "arregla",
        "haz",
        "mueve",
    ),
    "pt": (
        "mude",
        "muda",
        "altere",
        "altera",
        "modifique",
        "adicione",
        "acrescente",
        "remova",
        "apague",
        "renomeie",
        "substitua",
        "corrija",
        "conserte",
        "faça",
    ),
    "it": ("cambia", "modifica", "aggiungi", "rimuovi", "rinomina", "sostituisci", "correggi"),
    "ru": (
        "измени",
        "поменяй",
        "добавь",
        "удали",
        "переименуй",
        "замени",
        "исправь",
        "перепиши",
        "сделай",
        "перенеси",
    ),
    "uk": ("зміни", "додай", "видали", "перейменуй", "заміни", "виправ"),
    "zh": (
        "修改",
        "更改",
        "改成",
        "改为",
        "添加",
        "增加",
        "删除",
        "重命名",
        "替换",
        "修复",
        "改一下",
        "移植",
        "迁移",
    ),
    "ja": (
        "変更",
        "修正",
        "追加",
        "削除",
        "名前を",
        "置き換え",
        "書き換え",
        "直して",
        "にして",
        "変えて",
        "移植",
    ),
    "ko": ("변경", "수정", "추가", "삭제", "이름을", "바꿔", "포팅"),
}
"""Verbs of a request to change the code, anywhere in it ("Could you change …", "Make inc
return …", "Переименуй …"). A hint: a turn so asked is judged by the workspace diff."""

THIS_PROJECT: Mapping[str, tuple[str, ...]] = {
    "en": (
        "this project",
        "this repo",
        "this code",
        "this codebase",
        "this package",
        "this library",
        "this lib",
        "this workspace",
        "this module",
        "this app",
        "this folder",
        "our project",
        "our code",
        "our repo",
        "my project",
        "my code",
        "my repo",
        "the codebase",
        "the repo",
        "the project",
        "the workspace",
    ),
    "de": ("dieses projekt", "diesem projekt", "dieser code", "diesem code", "dieses repo"),
    "fr": ("ce projet", "ce code", "ce dépôt", "cette bibliothèque"),
    "es": ("este proyecto", "este código", "este repositorio", "esta biblioteca"),
    "pt": ("este projeto", "esse projeto", "este código", "este repositório"),
    "it": ("questo progetto", "questo codice"),
    "ru": ("этом проекте", "этот проект", "этого проекта", "этот код", "этом коде"),
    "zh": ("这个项目", "本项目", "这个仓库", "这段代码", "这个库"),
    "ja": ("このプロジェクト", "このリポジトリ", "このコード", "このライブラリ"),
    "ko": ("이 프로젝트", "이 코드", "이 저장소"),
}
"""The message is about "this project" even when it names nothing of it."""


QUOTE_PAIRS: tuple[tuple[str, str], ...] = (
    ("`", "`"),
    ('"', '"'),
    ("'", "'"),
    ("\u201c", "\u201d"),  # English “…”
    ("\u2018", "\u2019"),  # English single
    ("\u201e", "\u201c"),  # German „…“
    ("\u00ab", "\u00bb"),  # French, Russian «…»
    ("\u00bb", "\u00ab"),  # Danish »…«
    ("\u300c", "\u300d"),  # Japanese 「…」
    ("\u300e", "\u300f"),  # Japanese 『…』
)
"""How languages quote a text: a message's quoted text is code or a text to change."""


NEW_FILE: Mapping[str, tuple[str, ...]] = {
    "en": (
        "new module",
        "new file",
        "new test file",
        "new script",
        "new package",
        "new class file",
    ),
    "de": ("neues modul", "neue datei", "neuen datei", "neuen modul"),
    "fr": ("nouveau module", "nouveau fichier", "nouveaux fichiers"),
    "es": ("nuevo módulo", "nuevo modulo", "nuevo archivo", "nuevo fichero"),
    "pt": ("novo módulo", "novo modulo", "novo arquivo"),
    "it": ("nuovo modulo", "nuovo file"),
    "ru": ("новый модуль", "новый файл", "новом модуле", "новом файле"),
    "zh": ("新模块", "新文件", "新的模块", "新的文件"),
    "ja": ("新しいモジュール", "新しいファイル", "新規ファイル"),
    "ko": ("새 모듈", "새 파일"),
}
"""The request asks for a file that is not there yet ("as a new module", "in einer neuen
Datei"): a turn whose edits created none did not do it."""

WHOLE_WORKSPACE: Mapping[str, tuple[str, ...]] = {
    "en": (
        "whole package",
        "whole project",
        "whole codebase",
        "whole library",
        "entire package",
        "entire project",
        "entire codebase",
        "every module",
        "every file",
        "all modules",
        "all the modules",
        "all files",
        "all the files",
        "across the package",
        "across the project",
        "across the codebase",
    ),
    "de": (
        "ganze paket",
        "ganzen paket",
        "ganze projekt",
        "ganzen projekt",
        "alle module",
        "jedes modul",
        "alle dateien",
        "jede datei",
        "im gesamten",
    ),
    "fr": (
        "tout le paquet",
        "tout le projet",
        "tous les modules",
        "chaque module",
        "tous les fichiers",
        "chaque fichier",
    ),
    "es": (
        "todo el paquete",
        "todo el proyecto",
        "todos los módulos",
        "todos los modulos",
        "cada módulo",
        "cada modulo",
        "todos los archivos",
    ),
    "pt": (
        "todo o pacote",
        "todo o projeto",
        "todos os módulos",
        "todos os modulos",
        "cada módulo",
        "todos os arquivos",
    ),
    "it": ("tutto il pacchetto", "tutto il progetto", "tutti i moduli", "ogni modulo"),
    "ru": (
        "весь пакет",
        "весь проект",
        "все модули",
        "каждый модуль",
        "всех модул",
        "все файлы",
        "всём проекте",
        "всем проекте",
    ),
    "zh": ("整个包", "整个项目", "所有模块", "每个模块", "所有文件"),
    "ja": (
        "パッケージ全体",
        "プロジェクト全体",
        "全モジュール",
        "すべてのモジュール",
        "全ファイル",
        "すべてのファイル",
    ),
    "ko": ("패키지 전체", "프로젝트 전체", "모든 모듈", "모든 파일"),
}
"""The request is about the whole workspace ("port the whole package", "in allen Modulen"):
a change of that reach is Claude-sized (`judge.scope`)."""

TESTS: Mapping[str, tuple[str, ...]] = {
    "en": ("tests", "test suite", "unit test", "test case"),
    "de": ("tests", "testfälle", "unittests"),
    "fr": ("tests", "cas de test"),
    "es": ("pruebas", "tests"),
    "pt": ("testes", "tests"),
    "it": ("test ",),
    "ru": ("тесты", "тестов", "тестами"),
    "zh": ("测试",),
    "ja": ("テスト",),
    "ko": ("테스트",),
}
"""The request asks for tests too: one more thing it will change (`judge.scope`)."""

CHANGE_INTO = (
    r"\bto\b|\binto\b|\bwith\b|\bby\b|->|=>|\u2192|\bin\b|\bzu\b|\bdurch\b|\bmit\b|"
    r"\bpar\b|\ben\b|\bpor\b|\bpara\b|\bpelo\b|\bpela\b|\bem\b|\bcon\b|"
    r"\b\u0432\b|\b\u043d\u0430\b|改成|改为|换成|替换为|を|に|で|로|으로"
)
"""What stands between the old and the new text of a change a request spells out ("A" to
"B", «A» в «B», 「A」を「B」に), as a regex alternation."""
_STRAIGHT = str.maketrans({char: '"' for pair in QUOTE_PAIRS[3:] for char in pair} | {"`": '"'})


def straight_quotes(text: str) -> str:
    """`text` with every quote of another style (“…”, «…», 「…」, `…`) made a straight `"`."""
    return text.translate(_STRAIGHT)


def quoted_pattern(body: str = r"[^\n]{1,200}?") -> str:
    """A regex alternation of `body` in every quote style, each as its own group pair."""
    return "|".join(f"{re.escape(open_)}{body}{re.escape(close)}" for open_, close in QUOTE_PAIRS)


_PATTERNS: dict[int, re.Pattern[str]] = {}


def pattern_of(table: Mapping[str, tuple[str, ...]]) -> re.Pattern[str]:
    """One pattern for all of a table's languages, made on first use (off start-up) and
    kept (the tables are module constants)."""
    made = _PATTERNS.get(id(table))
    if made is None:
        made = _PATTERNS[id(table)] = _compiled(table)
    return made


def _compiled(table: Mapping[str, tuple[str, ...]]) -> re.Pattern[str]:
    spaced = {
        stem for language, stems in table.items() if language not in NO_SPACES for stem in stems
    }
    unspaced = {
        stem for language, stems in table.items() if language in NO_SPACES for stem in stems
    }
    words = "|".join(re.escape(stem) for stem in sorted(spaced, key=len, reverse=True))
    parts = [rf"(?<!\w)(?:{words})"]
    if unspaced:
        parts.append("|".join(re.escape(stem) for stem in sorted(unspaced, key=len, reverse=True)))
    return re.compile("|".join(parts), re.IGNORECASE)


_LONG_VERBS = frozenset(
    stem for stems in CHANGE.values() for stem in stems if len(stem) >= 6 and " " not in stem
)


def asks_where_defined(question: str) -> bool:
    """The question asks which file holds a definition, in one of the table's languages."""
    return pattern_of(WHERE_DEFINED).search(question) is not None


def asks_about_cli_options(question: str) -> bool:
    """The question is about the options of a command line."""
    return (
        pattern_of(CLI_OPTIONS).search(question) is not None
        and pattern_of(CLI_NAMES).search(question) is not None
    )


def change_hinted(request: str) -> bool:
    """A verb of a change request stands somewhere in `request` (a hint, see the module),
    also with one typo in a longer one ("chnage", "renmae")."""
    if pattern_of(CHANGE).search(request) is not None:
        return True
    words = {word.lower() for word in re.findall(r"\w{5,}", request)}
    return any(one_edit(word, verb) for word in words for verb in _LONG_VERBS)


def one_edit(a: str, b: str) -> bool:
    """Whether `a` and `b` differ by exactly one edit, a swap of neighbours counting as one."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        if len(diff) == 1:
            return True
        return (
            len(diff) == 2
            and diff[1] == diff[0] + 1
            and a[diff[0]] == b[diff[1]]
            and a[diff[1]] == b[diff[0]]
        )
    short, long = (a, b) if len(a) < len(b) else (b, a)
    i = 0
    while i < len(short) and short[i] == long[i]:
        i += 1
    return short[i:] == long[i + 1 :]


def about_this_project(text: str) -> bool:
    """The text speaks of "this project" (or "my code", "dieses Projekt", "この…")."""
    return pattern_of(THIS_PROJECT).search(text) is not None


def asks_for_new_file(request: str) -> bool:
    """The request asks for a new file or module (see `NEW_FILE`)."""
    return pattern_of(NEW_FILE).search(request) is not None


def asks_for_whole_workspace(request: str) -> bool:
    """The request speaks of the whole workspace (see `WHOLE_WORKSPACE`)."""
    return pattern_of(WHOLE_WORKSPACE).search(request) is not None


def asks_for_tests(request: str) -> bool:
    """The request asks for tests as well (see `TESTS`)."""
    return pattern_of(TESTS).search(request) is not None
