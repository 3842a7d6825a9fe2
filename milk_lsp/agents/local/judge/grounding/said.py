"""What an answer says of itself, per human language: a change made, an answer it cannot
give, a thing it only proposes or denies.

Hints kept as data, as `hints` keeps the request's: a language missing here costs a check or
flags a right answer's claim, it never lets a wrong one pass on its own. `DONE` and `CANNOT`
add checks (a "done" with no change is `edit_not_made`, a "cannot" is `no_answer`);
`PROPOSAL`, `DENIAL_BEFORE` and `DENIAL_AFTER` keep a right answer's proposal ("for example
`src/env-file.js`", "zum Beispiel `config.py`") or denial ("`parse_time` does not exist",
"`parse_time` existiert nicht", "`parse_time` は存在しません") from reading as a claim
that the thing is there. Their entries are regex fragments (they need word gaps and
endings), matched case-insensitively; the languages written without spaces match anywhere.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache

from milk_lsp.agents.local.judge.grounding.hints import NO_SPACES, pattern_of

DONE: Mapping[str, tuple[str, ...]] = {
    "en": (
        "done:",
        "done.",
        "done!",
        "done,",
        "i changed",
        "i've changed",
        "i have changed",
        "i added",
        "i've added",
        "i have added",
        "i updated",
        "i've updated",
        "i have updated",
        "i renamed",
        "i've renamed",
        "i removed",
        "i've removed",
        "i replaced",
        "i've replaced",
        "i fixed",
        "i've fixed",
        "i modified",
        "i've modified",
        "i made the change",
        "has been changed",
        "has been updated",
        "has been added",
        "has been renamed",
        "has been removed",
        "has been fixed",
        "have been made",
        "now returns",
    ),
    "de": (
        "erledigt",
        "fertig:",
        "fertig.",
        "fertig!",
        "ich habe",
        "habe ich",
        "wurde geändert",
        "wurde hinzugefügt",
        "wurde umbenannt",
        "wurde entfernt",
        "wurde ersetzt",
    ),
    "fr": (
        "terminé",
        "c'est fait",
        "j'ai modifié",
        "j'ai changé",
        "j'ai ajouté",
        "j'ai renommé",
        "j'ai supprimé",
        "j'ai remplacé",
        "j'ai corrigé",
    ),
    "es": (
        "listo:",
        "listo.",
        "listo!",
        "hecho:",
        "hecho.",
        "he cambiado",
        "he modificado",
        "he añadido",
        "he agregado",
        "he renombrado",
        "he eliminado",
        "he reemplazado",
        "he corregido",
        "cambié",
        "modifiqué",
        "añadí",
        "agregué",
        "renombré",
        "eliminé",
    ),
    "pt": (
        "pronto:",
        "pronto.",
        "pronto!",
        "feito:",
        "feito.",
        "alterei",
        "mudei",
        "modifiquei",
        "adicionei",
        "renomeei",
        "removi",
        "substituí",
        "corrigi",
    ),
    "it": ("fatto:", "fatto.", "ho modificato", "ho aggiunto", "ho rinominato", "ho rimosso"),
    "ru": (
        "готово",
        "сделано:",
        "сделано.",
        "изменил",
        "поменял",
        "добавил",
        "переименовал",
        "удалил",
        "заменил",
        "исправил",
    ),
    "uk": ("готово", "змінив", "додав", "перейменував", "видалив"),
    "zh": (
        "已修改",
        "已更改",
        "已添加",
        "已删除",
        "已重命名",
        "已替换",
        "已修复",
        "已完成",
        "改好了",
    ),
    "ja": (
        "変更しました",
        "追加しました",
        "削除しました",
        "修正しました",
        "置き換えました",
        "完了しました",
    ),
    "ko": ("변경했습니다", "추가했습니다", "삭제했습니다", "수정했습니다", "완료"),
}
"""An answer saying the change is made ("Done: I added …", "Готово", "変更しました"). A hint:
with no file changed it is a claim the workspace contradicts."""

CANNOT: Mapping[str, tuple[str, ...]] = {
    "en": (
        "beyond you",
        "beyond me",
        "beyond my",
        "i can't",
        "i cannot",
        "i can not",
        "i'm unable",
        "i am unable",
        "i'm not able",
        "i am not able",
        "i don't have access",
        "i do not have access",
        "i don't have enough",
        "i do not have enough",
        "i don't know",
        "i do not know",
        "more context",
    ),
    "de": (
        "ich kann nicht",
        "kann ich nicht",
        "nicht möglich",
        "bin nicht in der lage",
        "weiß ich nicht",
        "weiß ich leider nicht",
        "ich weiß nicht",
        "mehr kontext",
    ),
    "fr": (
        "je ne peux pas",
        "je suis incapable",
        "impossible de",
        "je ne sais pas",
        "plus de contexte",
    ),
    "es": ("no puedo", "no soy capaz", "no es posible", "no lo sé", "no sé", "más contexto"),
    "pt": ("não posso", "não consigo", "não é possível", "não sei", "mais contexto"),
    "it": ("non posso", "non riesco", "non lo so", "più contesto"),
    "ru": ("не могу", "не удалось", "невозможно", "не знаю", "больше контекста"),
    "uk": ("не можу", "неможливо", "не знаю"),
    "zh": ("无法", "不能", "做不到", "不知道", "更多上下文"),
    "ja": ("できません", "わかりません", "分かりません", "不可能"),
    "ko": ("할 수 없", "모르겠"),
}
"""A reply saying the model cannot answer ("The task is beyond you", "Ich kann nicht")."""

PROPOSAL: Mapping[str, tuple[str, ...]] = {
    "en": (
        r"creat(?:e|es|ed|ing)",
        r"add(?:ing)?\s+an?",
        r"sav(?:e|ing)(?:\s+\w+){0,2}\s+as",
        r"e\.g",
        r"for\s+example",
        r"for\s+instance",
        r"suppose",
        r"say\s+you\s+have",
        r"if\s+you\s+(?:have|had|want|need)",
        r"something\s+like",
        r"example",
        r"called\s+something\s+like",
        r"rename(?:d)?\s+(?:[\w'-]+\s+){0,3}?to",
        r"would\s+(?:be|look)",
        r"hypothetical",
        r"you\s+(?:could|can|might|may|should|would)\s+(?:also\s+)?"
        r"(?:add|create|write|define|introduce|implement)",
    ),
    "de": (
        r"z\.\s?b",
        r"zum\s+beispiel",
        r"beispielsweise",
        r"angenommen",
        r"erstell(?:e|en|t)",
        r"leg(?:e|en|t)\s+(?:\w+\s+){0,3}?neu",
        r"etwa\s+so",
    ),
    "fr": (
        r"par\s+exemple",
        r"p\.\s?ex",
        r"supposons",
        r"cré(?:ez|er|e)",
        r"quelque\s+chose\s+comme",
    ),
    "es": (r"por\s+ejemplo", r"p\.\s?ej", r"supongamos", r"cre(?:a|ar|e)", r"algo\s+como"),
    "pt": (r"por\s+exemplo", r"suponha", r"cri(?:e|ar|a)", r"algo\s+como"),
    "it": (r"ad\s+esempio", r"per\s+esempio", r"cre(?:a|are)"),
    "ru": (r"например", r"допустим", r"созда(?:й|йте|ть)"),
    "zh": ("例如", "比如", "假设", "创建"),
    "ja": ("例えば", "たとえば", "作成"),
    "ko": ("예를 들어", "생성"),
}
"""Before a claim in its sentence: the answer proposes the thing, it does not assert it."""

DENIAL_BEFORE: Mapping[str, tuple[str, ...]] = {
    "en": (
        "no",
        "not",
        "never",
        "without",
        "cannot",
        "can't",
        "couldn't",
        "didn't",
        "doesn't",
        "don't",
        "isn't",
        "aren't",
        "wasn't",
        "nor",
    ),
    "de": ("kein", "keine", "keinen", "keiner", "keinem", "nicht", "nie", "niemals", "ohne"),
    "fr": ("pas", "aucun", "aucune", "jamais", "sans"),
    "es": ("no", "ningún", "ninguna", "ninguno", "nunca", "sin"),
    "pt": ("não", "nenhum", "nenhuma", "nunca", "sem"),
    "it": ("non", "nessun", "nessuna", "nessuno", "mai", "senza"),
    "ru": ("не", "нет", "без", "никакого", "никакой", "никаких"),
    "uk": ("не", "немає", "без"),
    "zh": ("没有", "并没有"),
}
"""A few words before a claim in its sentence that deny it ("there is no `parse_time`",
"es gibt keine Funktion `parse_time`"); a "but" after them ends the denial."""

DENIAL_BUT = ("but", "aber", "mais", "pero", "mas", "ma", "но", "але")

DENIAL_AFTER: Mapping[str, tuple[str, ...]] = {
    "en": (
        r"(?:does|do|did|is|are|was|were)\s*(?:not|n't)\s+"
        r"(?:exist|found|defined|present|there|appear|seem|in\b)",
        r"(?:is|are|was|were)\s+(?:missing|absent|undefined|not\s+there)",
        r"not\s+found",
        r"missing",
        r"doesn't",
        r"don't",
        r"(?:but\s+)?(?:found|find|got|returned)\s+(?:nothing|no\s+match)",
    ),
    "de": (
        r"(?:existiert|existieren|gibt\s+es)\s+(?:hier\s+)?nicht",
        r"(?:ist|sind|wird|wurde)\s+nicht\s+(?:definiert|vorhanden|da|gefunden)",
        r"nicht\s+gefunden",
        r"fehlt",
    ),
    "fr": (r"n['\u2019]existe\s+pas", r"n['\u2019]est\s+pas\s+(?:défini|présent)", r"introuvable"),
    "es": (r"no\s+existe", r"no\s+est[áa]\s+definid", r"no\s+se\s+encuentra"),
    "pt": (r"não\s+existe", r"não\s+está\s+definid", r"não\s+foi\s+encontrad"),
    "it": (r"non\s+esiste", r"non\s+è\s+definit"),
    "ru": (r"не\s+существует", r"не\s+найден", r"не\s+определ[её]н", r"отсутствует"),
    "zh": ("不存在", "未定义", "找不到", "没有找到"),
    "ja": ("存在しません", "存在しない", "ありません", "見つかりません", "定義されていません"),
    "ko": ("존재하지 않", "없습니다"),
}
"""Right after a claim: the answer says the thing is not there ("`parse_time` does not
exist", "existiert nicht", "は存在しません")."""

_CJK_GAP = 12
"""How many characters of a language without spaces may stand between a claim and its
denial ("`parse_time` という関数は存在しません")."""


CANNOT_ANSWER: Mapping[str, tuple[str, ...]] = {
    "en": (
        r"I(?:'m| am)? (?:sorry|afraid)\b[^.\n]{0,40}\b(?:can(?:no|')t|do(?:n't| not)|unable|"
        r"not able)",
        r"I (?:do(?:n't| not) have|lack) (?:enough|sufficient|the) (?:information|context|access)",
        r"I (?:can(?:no|')t|am unable to|am not able to) (?:answer|determine|find|access|see|tell)",
        r"could you (?:please )?(?:provide|share|clarify)",
    ),
}
"""`CANNOT` where a stem is not enough ("I'm sorry, but I don't have enough information"):
the model's own verdict of failure. Only a short reply counts (`judge.watch`): a long
answer with a polite "I can't run it, but here is the fix" is an answer."""

NOT_GIVEN: Mapping[str, tuple[str, ...]] = {
    "en": (
        r"(?:is|are|was|were)(?:n't| not) (?:explicitly |directly |clearly )?(?:mentioned|"
        r"specified|stated|shown|provided|given|included|visible)(?: anywhere)? in the "
        r"(?:given |provided |above |shown |available )?(?:text|context|code|snippet|"
        r"information|output|results?|files?)",
        r"(?:does|do)(?:n't| not) (?:explicitly )?(?:mention|specify|say|state|show)",
    ),
    "de": (r"nicht (?:explizit |ausdrücklich )?(?:angegeben|erwähnt|genannt|festgelegt)",),
    "fr": (r"n['\u2019](?:est|sont) pas (?:explicitement )?(?:mentionn|précis|indiqu)",),
    "es": (r"no se (?:menciona|especifica|indica)", r"no (?:está|están) (?:especificad|indicad)"),
    "pt": (r"não (?:é|está|são) (?:mencionad|especificad|indicad)",),
    "ru": (r"не (?:указан|упоминается|упомянут)",),
    "zh": ("没有提到", "未提及", "未指定", "没有说明"),
    "ja": ("記載されていません", "言及されていません", "明示されていません"),
}
"""A reply saying what was asked is not in what it saw ("The default value … is not
explicitly mentioned in the given text"): with no code and nothing quoted, it answered
nothing (the humanize bench: a silent end_turn)."""

WHERE_TO_LOOK: Mapping[str, tuple[str, ...]] = {
    "en": (
        r"once you (?:find|locate|have found|have located)",
        r"you (?:can|could|will need to|need to|should) (?:search (?:for|the)|look (?:for|up)|"
        r"locate|grep)",
    ),
    "de": (
        r"sobald du (?:\w+ ){0,4}?(?:findest|gefunden hast)",
        r"(?:du kannst|du solltest|sie können) (?:\w+ ){0,4}?(?:suchen|nachsehen|nachschauen)",
    ),
    "fr": (
        r"une fois que vous (?:aurez )?trouvé",
        r"vous (?:pouvez|devez|devriez) (?:re)?chercher",
    ),
    "es": (r"una vez que (?:lo )?encuentre", r"puedes? buscar"),
    "ru": (r"как только (?:вы )?найд[её]те", r"(?:вы )?можете (?:поискать|найти)"),
    "zh": ("你可以搜索", "你可以查找", "找到之后"),
    "ja": ("検索してください", "探してください", "見つけたら"),
}
"""A reply that tells the user how to find the answer instead of giving it ("you can search
for … Once you find the code, …"): with no claim about the workspace it answered nothing."""


def says_done(answer: str) -> bool:
    """The answer says a change is made (see `DONE`)."""
    return pattern_of(DONE).search(answer) is not None


def says_cannot(answer: str) -> bool:
    """The reply says the model cannot answer (see `CANNOT`, `CANNOT_ANSWER`)."""
    return pattern_of(CANNOT).search(answer) is not None or bool(
        _phrases(CANNOT_ANSWER).search(answer)
    )


def says_not_given(answer: str) -> bool:
    """The reply says what was asked is not in what it saw (see `NOT_GIVEN`)."""
    return _phrases(NOT_GIVEN).search(answer) is not None


def says_where_to_look(answer: str) -> bool:
    """The reply tells the user where to look instead of answering (see `WHERE_TO_LOOK`)."""
    return _phrases(WHERE_TO_LOOK).search(answer) is not None


_PHRASES: dict[int, re.Pattern[str]] = {}


def _phrases(table: Mapping[str, tuple[str, ...]]) -> re.Pattern[str]:
    """A table of phrases as one pattern, made on first use and kept (module constants)."""
    made = _PHRASES.get(id(table))
    if made is None:
        made = _PHRASES[id(table)] = _fragments(table, r"\b(?:{})\b", "{}")
    return made


def proposed_or_denied(before: str, after: str) -> bool:
    """Whether a claim, with `before` it in its sentence and `after` it on its line, is
    proposed or denied by the answer rather than asserted."""
    proposal, denied_before, denied_after = _patterns()
    return bool(
        proposal.search(before) or denied_before.search(before) or denied_after.match(after)
    )


@cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """The three hedge patterns, made on first use (off start-up)."""
    return (
        _fragments(PROPOSAL, r"\b(?:{})\b", "{}"),
        _fragments(
            DENIAL_BEFORE,
            r"\b(?:{})\s+(?:(?!(?:" + "|".join(DENIAL_BUT) + r")\b)[\w'-]+\s+){{0,4}}$",
            "(?:{})[^\n]{{0," + str(_CJK_GAP) + "}}$",
            escape=True,
        ),
        _fragments(
            DENIAL_AFTER,
            r"[\s`'\")\]]*(?:[\w'-]+\s+){{0,3}}?(?:{})",
            r"[\s`'\")\]]*[^\n。.!?]{{0," + str(_CJK_GAP) + "}}?(?:{})",
        ),
    )


def _fragments(
    table: Mapping[str, tuple[str, ...]], spaced: str, unspaced: str, escape: bool = False
) -> re.Pattern[str]:
    """One pattern of a table's fragments: the spaced languages' in `spaced`, the others'
    in `unspaced` (each a format with one `{}`)."""

    def joined(fragments: set[str]) -> str:
        ordered = sorted(fragments, key=len, reverse=True)
        return "|".join(re.escape(f) if escape else f for f in ordered)

    words = {f for language, fs in table.items() if language not in NO_SPACES for f in fs}
    runs = {f for language, fs in table.items() if language in NO_SPACES for f in fs}
    parts = [spaced.format(joined(words))]
    if runs:
        parts.append(unspaced.format(joined(runs)))
    return re.compile("|".join(parts), re.IGNORECASE)
