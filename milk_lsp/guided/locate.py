"""Locate, deterministically: what of the workspace a request is about, gathered into a
bounded context of numbered lines before the model is asked anything.

Three sources, in this order of trust:
- what the request names (`asked`: definitions and files its words match, in any human
  language), each definition given whole (up to `DEFINITION_MAX_LINES`);
- the request's terms (`words`: identifiers split and stemmed) ranked over the workspace:
  files by the inverse document frequency of the terms they hold (BM25's weight without its
  length term: a file's tokens are kept once each by the index), then the best lines of
  those files (`words.ranked_lines`: a term weighs by how few of their lines hold it, a
  line inside a definition holds its name's terms), each widened to a few lines around it;
- a short map of the repository: paths and the names each defines (aider's repo map), the
  best-ranked files first.

The context is sized in characters (`Budget`), so what the model is shown, most of the wait
on a CPU, is bounded whatever the workspace.
"""

from __future__ import annotations

import heapq
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from milk_lsp.agents.local.judge.asked import asked
from milk_lsp.guided.words import PROSE_WEIGHT, path_terms, ranked_lines, terms, word_terms
from milk_lsp.workspace.index import WorkspaceIndex

if TYPE_CHECKING:
    from milk_lsp.code import Definition

MAX_FILES = 10
"""Files whose lines are read and ranked (the named ones first)."""
DEFINITION_MAX_LINES = 60
WINDOWS = ((3, 8), (1, 2))
"""A ranked line is shown with this many lines before and after it, the next fewer when
the budget has no room for more."""
NAMED_HEAD_LINES = 40
"""A file the request names is shown from its first line, this many lines, unless a quarter
as many of it are shown already (dotenv's `lib/env-options.js` had shown only its line
`const options = {}`, the definition `options.quiet` names, and none of the options read)."""
USES_MAX = 10
"""A named definition's uses are shown (each line with one line around it) when it has
at most this many outside its definition: a rename or a new parameter must edit each."""
DEFINITION_SHARE = 0.5
"""Of the chunks' budget, what one named definition may take (its head when longer): the
lines ranked elsewhere get the rest ("the slugify CLI" names the function `slugify`, and
the options are in another file)."""
FILE_SPREAD = 0.5
"""A ranked line's score is multiplied by this for each line of its file taken before it:
the best lines of several files before the fifth of one."""
SHORT_DEFINITION = 3
"""A definition of at most this many lines that a ranked line uses is shown beside it: its
value is often the answer (cross-env's `if (!pathLikeEnvVarWhitelist.has(varName))` was
shown, and not `const pathLikeEnvVarWhitelist = new Set(['PATH', 'NODE_PATH'])`)."""
SHORT_KINDS = frozenset({"constant", "variable"})
"""The definitions shown beside their uses: values, not helpers (dotenv's three-line
`_debug`, shown beside `populate`, got the JSDoc comment asked for `populate`)."""
MAP_NAMES = 8
"""Names listed per file in the repository map."""
IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*")
_TEST_NAME = re.compile(r"(?:[Tt]est|Benchmark|Example|Fuzz)[A-Z_0-9]|test$|Test$")
"""A test's own name (`TestParse`, `test_parse`): not what makes a file central."""
_MORE_FILES = "(and {} more files)"


@dataclass(frozen=True)
class Budget:
    """How many characters of code and of map the model is shown. 2,400 of code held what
    the bench's answers and edits need as 3,000 did, and took about 2 s (150 tokens) less per
    request on 2 cores."""

    chunks: int = 2400
    map: int = 900

    @classmethod
    def for_context(cls, context_tokens: int | None) -> Budget:
        """The default budget, smaller when a context window of `context_tokens` would
        not leave room for milk's prompt and the reply (about 3.5 characters a token of
        code). Never larger: what the model is shown is most of the wait on a CPU."""
        usual = cls()
        if context_tokens is None:
            return usual
        room = max(1500, int((context_tokens - 2600) * 3.5))
        return cls(chunks=min(usual.chunks, int(room * 0.8)), map=min(usual.map, int(room * 0.2)))


@dataclass(frozen=True)
class Chunk:
    """Consecutive lines of one file, `first`..`last` (1-based, inclusive)."""

    path: str
    first: int
    lines: tuple[str, ...]
    why: str

    @property
    def last(self) -> int:
        return self.first + len(self.lines) - 1

    def render(self, numbered: bool = True) -> str:
        """The lines under a heading that gives their range; `numbered` puts each line's
        number before it (for people and Claude: Qwen's tokenizer spends a token per digit,
        and the gutter was a quarter of what the local model was shown)."""
        if numbered:
            width = len(str(self.last))
            body = "\n".join(
                f"{number:>{width}}| {line}" for number, line in enumerate(self.lines, self.first)
            )
        else:
            body = "\n".join(self.lines)
        return f"--- {self.path} lines {self.first}-{self.last} ({self.why})\n{body}"

    @property
    def size(self) -> int:
        return sum(len(line) + 8 for line in self.lines) + len(self.path) + 40


@dataclass(frozen=True)
class Located:
    """What milk gathered for one request."""

    chunks: tuple[Chunk, ...] = ()
    repo_map: str = ""
    names: tuple[str, ...] = ()
    """Definitions the request names."""
    files: tuple[str, ...] = ()
    """Files the request names."""
    written: tuple[str, ...] = ()
    """Of `files`, those it writes as paths (`src/command.js`): where it asks a change."""
    ranked: tuple[str, ...] = ()
    """Files whose lines were read, best first."""
    texts: dict[str, str] = field(default_factory=dict)
    """The text of each file read, as milk read it (the editor's unsaved text first)."""
    seen: str = ""
    """What else the model was shown: an agent turn's tool results and attachments."""
    speaks_code: bool = True
    """Whether the request holds a piece of a definition's name or names one or a file."""

    def context(self, numbered: bool = True) -> str:
        """The chunks' lines (the map goes with milk's instructions: it is the same for
        every request in a workspace, so it is cached); the local model gets them without
        numbers, milk finds each quote's line itself (`verify.check_citations`)."""
        return "\n\n".join(chunk.render(numbered) for chunk in self.chunks)

    def line_of(self, path: str, quote: str) -> int:
        """The first shown line of `path` that holds the quote's first line, else 0: where
        a quote cited without a line number was copied from."""
        wanted = next((line.strip() for line in quote.splitlines() if line.strip()), "")
        for chunk in self.chunks:
            if chunk.path == path and wanted:
                for number, line in enumerate(chunk.lines, chunk.first):
                    if wanted in line:
                        return number
        return 0

    def holds(self, text: str) -> bool:
        """Whether `text` occurs in the lines the model was shown."""
        return text in self.shown

    @cached_property
    def shown(self) -> str:
        """Every line the model was shown, and the map, as one text (joined once)."""
        return "\n".join(
            [*("\n".join(chunk.lines) for chunk in self.chunks), self.repo_map, self.seen]
        )

    @property
    def paths(self) -> frozenset[str]:
        return frozenset(chunk.path for chunk in self.chunks)


class FileTexts(Protocol):
    async def text_of(self, path: str) -> str | None: ...


class DiskTexts:
    """`FileTexts` read from the disk under `root` (no editor: the benches, the tests)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    async def text_of(self, path: str) -> str | None:
        try:
            return (self.root / path).read_text(encoding="utf-8")
        except OSError:
            return None


class Locator:
    """Locates for one workspace. Keeps each file's terms and, per term, the files holding
    it (postings), updated for the files the index read again: a question costs the
    postings of its own terms, not a pass over every file."""

    def __init__(self, index: WorkspaceIndex) -> None:
        self.index = index
        self._files: dict[str, tuple[tuple[str, ...], frozenset[str], tuple[str, ...]]] = {}
        """Per file: the index's token tuple it was made from, its terms, its path's terms."""
        self._postings: dict[str, set[str]] = {}
        self._map: tuple[int, str] | None = None
        """The repository map made for a budget, until a file's terms change."""
        self._code: tuple[frozenset[str], frozenset[str]] | None = None
        """The definitions' names and their terms (`_code_terms`)."""

    def rank_files(
        self, request: str, limit: int = MAX_FILES, weights: dict[str, float] | None = None
    ) -> list[tuple[str, float]]:
        """The files holding the request's terms, best first, with their scores
        (`weights`: the request's, when the caller has them already)."""
        weights = self.weights(request) if weights is None else weights
        weight = {term: value for term, value in weights.items() if value}
        scores: dict[str, float] = {}
        for term, value in weight.items():
            for path in self._postings.get(term, ()):
                scores[path] = scores.get(path, 0.0) + value
        for path in scores:  # the file's own name counts once more
            scores[path] += sum(weight.get(term, 0.0) for term in self._files[path][2])
        ranked = sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))
        return ranked[:limit]

    def weights(self, request: str) -> dict[str, float]:
        """Each term of the request by its inverse document frequency here (0: no file),
        times `PROSE_WEIGHT` when no definition's name holds it."""
        self._sync()
        total = len(self._files) or 1
        code = self._code_terms()
        result: dict[str, float] = {}
        for term in dict.fromkeys(terms(request)):
            count = len(self._postings.get(term, ()))
            idf = math.log((total - count + 0.5) / (count + 0.5) + 1.0) if count else 0.0
            result[term] = idf if term in code else idf * PROSE_WEIGHT
        return result

    def _code_terms(self) -> frozenset[str]:
        """The terms of the names the workspace defines, made again when those change."""
        names = self.index.definition_names()
        if self._code is None or self._code[0] is not names:
            made = frozenset(term for name in names for term in word_terms(name))
            self._code = (names, made)
        return self._code[1]

    async def locate(
        self, request: str, texts: FileTexts, budget: Budget | None = None, words: str = ""
    ) -> Located:
        """The bounded context for `request` (see the module); `words`: what the local
        model would search the code for (`prompt.WORDS_SYSTEM`), ranked and matched as the
        request's own words are, while what the request names stays the request's."""
        budget = budget or Budget()
        named = asked(request, self.index)
        hinted = asked(words, self.index).names if words else ()
        order: dict[str, str] = {}
        for path in named.files:
            order.setdefault(path, "named in the request")
        for name in dict.fromkeys([*named.names, *hinted]):
            for path in sorted(self.index.definers(name, limit=3), key=_declares_only):
                order.setdefault(path, f"defines {name}")
        own, code = self.weights(request), self._code_terms()
        weights = self.weights(f"{request}\n{words}") if words else own
        for path, _ in self.rank_files(request, MAX_FILES * 2, weights):
            if len(order) >= MAX_FILES:
                break
            order.setdefault(path, "matches the request")
        read: dict[str, str] = {}
        chunks: list[Chunk] = []
        spent = 0
        parsed = _Parsed()
        for path in order:
            text = await _read(path, texts, read)
            if text is None:
                continue
            lines = parsed.lines[path] = text.splitlines()
            for whole in _definition_chunks(path, parsed, [*named.names, *hinted]):
                chunk = _head(whole, int(budget.chunks * DEFINITION_SHARE))
                if spent + chunk.size <= budget.chunks:
                    for item in [chunk, *_used(chunk, parsed, chunks)]:
                        if spent + item.size <= budget.chunks:
                            chunks.append(item)
                            spent += item.size
            held = sum(chunk.last - chunk.first + 1 for chunk in chunks if chunk.path == path)
            if path in named.files and held < NAMED_HEAD_LINES // 4:
                head = _chunk(
                    path, lines, 1, min(len(lines), NAMED_HEAD_LINES), "named in the request"
                )
                if head is not None and spent + head.size <= budget.chunks:
                    chunks.append(head)
                    spent += head.size
        pending = ranked_lines(parsed.lines, parsed.definitions, weights, code, named.files)
        for use in await self._uses(named.names, texts, read, chunks):
            if spent + use.size <= budget.chunks:
                chunks.append(use)
                spent += use.size
        _add_ranked(chunks, budget.chunks - spent, pending, list(order), parsed)
        chunks = _merged(chunks, order)
        return Located(
            chunks=tuple(chunks),
            repo_map=self.repo_map(budget.map),
            names=named.names,
            files=named.files,
            written=named.written,
            ranked=tuple(order),
            texts=read,
            speaks_code=bool(named.names or named.files)
            or any(value and term in code for term, value in own.items()),
        )

    def holders(self, name: str) -> list[str]:
        """The files whose text has the identifier `name`, in path order (its terms'
        postings, then the index's tokens of each)."""
        self._sync()
        holders: set[str] | None = None
        for term in word_terms(name):
            paths = self._postings.get(term, set())
            holders = set(paths) if holders is None else holders & paths
        return [path for path in sorted(holders or ()) if self.index.in_file(path, name)]

    async def _uses(
        self, names: Iterable[str], texts: FileTexts, read: dict[str, str], shown: list[Chunk]
    ) -> list[Chunk]:
        """The lines using each named definition, one line around each, when it has few
        uses (`USES_MAX`); files read for it join `read`."""
        found: list[Chunk] = []
        for name in names:
            if not IDENTIFIER.fullmatch(name) or not self.index.has_definition(name):
                continue
            word = whole_word(name)
            places: list[tuple[str, int]] = []
            for path in self.holders(name):
                text = await _read(path, texts, read)
                if text is None:
                    continue
                lines = text.splitlines()
                for number, line in enumerate(lines, 1):
                    if word.search(line) and not any(
                        c.path == path and c.first <= number <= c.last for c in shown
                    ):
                        places.append((path, number))
                if len(places) > USES_MAX:
                    break
            if not places or len(places) > USES_MAX:
                continue
            for path, number in places:
                lines = read[path].splitlines()
                piece = _chunk(
                    path, lines, max(1, number - 1), min(len(lines), number + 1), f"uses {name}"
                )
                if piece is not None:
                    found.append(piece)
        return found

    def _sync(self) -> None:
        """Bring the terms and postings up to the index's state (changed files only)."""
        known = self._files
        seen: set[str] = set()
        is_word = self.index.is_word
        for path, tokens in self.index.file_words():
            seen.add(path)
            entry = known.get(path)
            if entry is not None and entry[0] is tokens:
                continue
            self._map = None
            if entry is not None:
                self._unpost(path, entry[1])
            named = path_terms(path)
            held: set[str] = set(named)
            for token in tokens:
                if is_word(token):
                    held.update(word_terms(token.lstrip("-")))
            known[path] = (tokens, frozenset(held), named)
            for term in held:
                self._postings.setdefault(term, set()).add(path)
        for path in [path for path in known if path not in seen]:
            self._map = None
            self._unpost(path, known.pop(path)[1])

    def _unpost(self, path: str, held: frozenset[str]) -> None:
        for term in held:
            paths = self._postings.get(term)
            if paths is not None:
                paths.discard(path)
                if not paths:
                    del self._postings[term]

    def repo_map(self, budget: int) -> str:
        """`path: names…` for the files defining the most names (tests' own names not
        counted), in path order, within `budget` characters. The same for every request
        until the workspace changes, so a server's prompt cache keeps it."""
        self._sync()
        if self._map is not None and self._map[0] == budget:
            return self._map[1]
        entries: list[tuple[int, str, str]] = []
        for path, (tokens, _, _) in self._files.items():
            every = self.index.names_defined(tokens)
            names = [name for name in every if not _TEST_NAME.match(name)]
            shown = ", ".join(names[:MAP_NAMES]) + (", …" if len(every) > MAP_NAMES else "")
            weight = len(names)
            entries.append((weight, path, f"{path}: {shown}" if shown else path))
        entries.sort(key=lambda entry: (-entry[0], entry[1]))
        kept: list[tuple[str, str]] = []
        used = len(_MORE_FILES) + 6
        for _, path, line in entries:
            if used + len(line) + 1 > budget:
                continue
            kept.append((path, line))
            used += len(line) + 1
        lines = [line for _, line in sorted(kept)]
        if len(kept) < len(entries):
            lines.append(_MORE_FILES.format(len(entries) - len(kept)))
        self._map = (budget, "\n".join(lines))
        return self._map[1]


async def _read(path: str, texts: FileTexts, read: dict[str, str]) -> str | None:
    """The text of `path`, read once per locate (`read` keeps it)."""
    if path not in read:
        text = await texts.text_of(path)
        if text is None:
            return None
        read[path] = text
    return read[path]


def whole_word(name: str) -> re.Pattern[str]:
    """`name` as a whole identifier, not inside a longer one (`xtob`, not `xtobs`)."""
    return re.compile(rf"(?<![\w$]){re.escape(name)}(?![\w$])")


def _add_ranked(
    chunks: list[Chunk],
    room: int,
    pending: list[tuple[float, str, int]],
    order: list[str],
    parsed: _Parsed,
) -> None:
    """Adds to `chunks`, within `room` characters, the ranked lines (`pending`: score,
    path, line number) best first, each with the lines around it (`WINDOWS`), a file's
    score lowered by `FILE_SPREAD` for every chunk of it taken before (a lazy greedy: a
    line is queued again when its file's count changed since it was scored). A line shown
    already, or whose text (trimmed) is shown in any file, is passed over: a package's
    README copied into its metadata adds nothing the second time."""
    shown = {line.strip() for chunk in chunks for line in chunk.lines}
    rank = {path: number for number, path in enumerate(order)}
    taken: dict[str, int] = {}
    last = len(rank)
    queue = [(-score, rank.get(path, last), number, path, 0) for score, path, number in pending]
    heapq.heapify(queue)
    while queue and room > 0:
        negative, file_rank, number, path, count = heapq.heappop(queue)
        now = taken.get(path, 0)
        if now != count:
            score = -negative / FILE_SPREAD**count * FILE_SPREAD**now
            heapq.heappush(queue, (-score, file_rank, number, path, now))
            continue
        lines = parsed.lines[path]
        if any(c.path == path and c.first <= number <= c.last for c in chunks):
            continue
        text = lines[number - 1].strip()
        if text and text in shown:
            continue
        for before, after in WINDOWS:  # the usual lines around it, fewer when short of room
            piece = _window(path, lines, number, before, after, chunks)
            if piece is not None and piece.size <= room:
                for chunk in [piece, *_used(piece, parsed, chunks)]:
                    if chunk.size <= room:
                        chunks.append(chunk)
                        shown.update(line.strip() for line in chunk.lines)
                        room -= chunk.size
                taken[path] = now + 1
                break


class _Parsed:
    """The located files' lines and what each defines, each file parsed once per request:
    its named definitions' chunks, the short ones a chunk uses and the lines inside each
    definition (`words.ranked_lines`) all need its parse."""

    def __init__(self) -> None:
        self.lines: dict[str, list[str]] = {}
        self._found: dict[str, list[Definition]] = {}
        self._short: dict[str, dict[str, tuple[int, int]]] = {}

    def definitions(self, path: str) -> list[Definition]:
        """What the file defines ([] in a language milk does not read)."""
        if path not in self._found:
            from milk_lsp.code import definitions, language_for  # off start-up

            language = language_for(path)
            text = "\n".join(self.lines[path])
            self._found[path] = definitions(text, language) if language is not None else []
        return self._found[path]

    def short(self, path: str) -> dict[str, tuple[int, int]]:
        """The file's `SHORT_KINDS` of at most `SHORT_DEFINITION` lines: name to lines."""
        if path not in self._short:
            self._short[path] = {
                item.name: (item.first_line, item.last_line)
                for item in self.definitions(path)
                if item.kind in SHORT_KINDS and item.last_line - item.first_line < SHORT_DEFINITION
            }
        return self._short[path]


def _used(chunk: Chunk, parsed: _Parsed, shown: list[Chunk]) -> list[Chunk]:
    """The short definitions of `chunk`'s file (`SHORT_DEFINITION`) that it uses, each as a
    chunk, those overlapping `chunk` or a `shown` one left out."""
    path, lines = chunk.path, parsed.lines[chunk.path]
    names = {name for line in chunk.lines for name in IDENTIFIER.findall(line)}
    return [
        extra
        for name, (first, last) in parsed.short(path).items()
        if name in names
        and not any(c.path == path and c.first <= last and first <= c.last for c in [*shown, chunk])
        and (extra := _chunk(path, lines, first, last, f"defines {name}")) is not None
    ]


def _head(chunk: Chunk, size: int) -> Chunk:
    """`chunk`'s first lines within `size` characters (at least one)."""
    lines = list(chunk.lines)
    while len(lines) > 1 and Chunk(chunk.path, chunk.first, tuple(lines), chunk.why).size > size:
        lines.pop()
    return Chunk(chunk.path, chunk.first, tuple(lines), chunk.why)


def _window(
    path: str, lines: list[str], number: int, before: int, after: int, shown: list[Chunk]
) -> Chunk | None:
    """Line `number` with `before` and `after` lines around it, none shown already (it
    starts after, or ends before, a shown chunk of the file)."""
    first = max(1, number - before)
    last = min(len(lines), number + after)
    for chunk in shown:
        if chunk.path == path and chunk.first <= last and first <= chunk.last:
            if chunk.first <= number:
                first = chunk.last + 1
            else:
                last = chunk.first - 1
    return _chunk(path, lines, first, last, "matches the request")


def _chunk(path: str, lines: list[str], first: int, last: int, why: str) -> Chunk | None:
    if first > last or first < 1:
        return None
    return Chunk(path, first, tuple(line[:300] for line in lines[first - 1 : last]), why)


DECLARATION_FILES = (".d.ts", ".d.mts", ".d.cts", ".pyi")
"""Files that declare what another file implements (TypeScript's declarations, Python's
stubs): a name's implementation is shown first."""


def _declares_only(path: str) -> bool:
    return path.endswith(DECLARATION_FILES)


def _definition_chunks(path: str, parsed: _Parsed, names: Iterable[str]) -> list[Chunk]:
    """Each definition of `names` in the file, whole up to `DEFINITION_MAX_LINES`."""
    wanted = set(names)
    if not wanted:
        return []
    lines = parsed.lines[path]
    found: list[Chunk] = []
    for definition in parsed.definitions(path):
        if definition.name not in wanted:
            continue
        last = min(definition.last_line, definition.first_line + DEFINITION_MAX_LINES - 1)
        chunk = _chunk(path, lines, definition.first_line, last, f"defines {definition.name}")
        if chunk is not None:
            found.append(chunk)
    return found


WHY_FIRST = ("defines ", "named in the request")
"""Of two chunks joined, the heading keeps the first of these reasons either has: dotenv's
`function populate` went under "matches the request" (a ranked line two above it came
first), and the model named the `.d.ts` file shown as "defines populate"."""


def _why_rank(why: str) -> int:
    return next((rank for rank, first in enumerate(WHY_FIRST) if why.startswith(first)), 9)


def _merged(chunks: list[Chunk], order: dict[str, str]) -> list[Chunk]:
    """The chunks in file order (the located files' order), adjacent ones of a file joined."""
    rank = {path: number for number, path in enumerate(order)}
    chunks.sort(key=lambda chunk: (rank.get(chunk.path, len(rank)), chunk.first))
    merged: list[Chunk] = []
    for chunk in chunks:
        last = merged[-1] if merged else None
        if last is not None and last.path == chunk.path and chunk.first <= last.last + 1:
            extra = chunk.lines[last.last + 1 - chunk.first :]
            why = min(last.why, chunk.why, key=_why_rank)
            merged[-1] = Chunk(last.path, last.first, last.lines + extra, why)
        else:
            merged.append(chunk)
    return merged
