"""Verify a guided answer mechanically: each citation's quote is in its file (at, or near,
the line it gives: the line is a hint, the quote decides), and every path and code name the
answer states is true of the workspace or was in what the model was shown. No word of the
answer or the request decides anything: a path that does not exist is a false claim
whatever words surround it, unless the reply declares it proposed (a field, not a phrase).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from milk_lsp.agents.base import Cited
from milk_lsp.agents.local.judge.asked import asked, near
from milk_lsp.guided.locate import Located
from milk_lsp.guided.shape import QUOTE_MAX, Citation, GuidedReply
from milk_lsp.workspace.index import WorkspaceIndex

MIN_QUOTE = 3
"""A quote of fewer non-blank characters proves nothing."""
ELLIPSIS_SPAN = 40
"""Lines a quote with an ellipsis may span."""
_ELLIPSIS = re.compile(r"\s*(?:…|\.\.\.)\s*")
_BLANKS = re.compile(r"\s+")
_COMMENT_LINE = re.compile(r"(?://|#|/\*|\*|--|;)")
"""A line that is only a comment, by the usual markers of code (matched at its start)."""
_NUMBERED = re.compile(r"^\s*\d+\s*\|\s?")
"""`12| def f():`: the line-number gutter of milk's context, copied into a quote."""
_SPAN = re.compile(r"(?<!`)(`+)(?!`)([^\n]{1,200}?)(?<!`)\1(?!`)")
"""A code span: a run of backticks closed by a run of the same length (``a `b` c``)."""
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.IGNORECASE)
_PATH = re.compile(r"(?<![\w/.@-])(?:\.{1,2}/)?[\w@-][\w.@-]*(?:/[\w.@-]+)*(?::\d+(?:-\d+)?)?")
_NAME = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*(?:\(\))?")
_LINE_SUFFIX = re.compile(r":\d+(?:-\d+)?$")
_EXTENSION = re.compile(r"[A-Za-z][A-Za-z0-9]{0,5}")


@dataclass
class Verdict:
    citations: list[Cited] = field(default_factory=list)
    proposed: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    """Each failed check, in words the model can act on (the repair request) and the user
    reads (the hand-off)."""
    claims: int = 0
    """How many paths, workspace names, options and values the answer states."""

    @property
    def ok(self) -> bool:
        return not self.problems


def proves_nothing(quote: str) -> bool:
    """Fewer than `MIN_QUOTE` characters besides blanks and milk's line-number gutter."""
    kept = "".join(_NUMBERED.sub("", line) for line in quote.splitlines())
    return len("".join(kept.split())) < MIN_QUOTE


def find_quote(text: str, quote: str, hint: int) -> tuple[int, int] | None:
    """The lines (first, last) where `quote` occurs in `text`, the occurrence nearest the
    line `hint`; blanks at line ends and milk's line-number gutter are not part of it."""
    wanted = [_NUMBERED.sub("", line).strip() for line in quote.strip("\n").splitlines()]
    while wanted and not wanted[0]:
        wanted.pop(0)
    while wanted and not wanted[-1]:
        wanted.pop()
    if not wanted or len("".join(wanted).replace(" ", "")) < MIN_QUOTE:
        return None
    lines = [line.strip() for line in text.splitlines()]
    size = len(wanted)
    found: list[int] = []
    for start in range(len(lines) - size + 1):
        window = lines[start : start + size]
        if size == 1:
            if wanted[0] in window[0]:
                found.append(start + 1)
        elif (
            window[0].endswith(wanted[0])
            and window[-1].startswith(wanted[-1])
            and window[1:-1] == wanted[1:-1]
        ):
            found.append(start + 1)
    if not found:
        return _find_joined(lines, " ".join(wanted), hint)
    first = min(found, key=lambda number: (abs(number - hint), number))
    return first, first + size - 1


def _find_joined(lines: list[str], quote: str, hint: int) -> tuple[int, int] | None:
    """A quote that joined consecutive lines into one (`f() { return x }`) or left out a
    middle with an ellipsis (`return NewHash(h, …`): its pieces, blanks collapsed, occur in
    order within `ELLIPSIS_SPAN` lines. Found as it is, it proves what it quotes: every
    piece is the file's own text. Failing that, compared without any blanks and without
    the comment-only lines between (`spawn(commandConvert(…` for `spawn(`, a comment,
    `commandConvert(`): still the file's own characters, in order."""
    return _joined_at(lines, quote, hint, compact=False) or _joined_at(
        lines, quote, hint, compact=True
    )


def _joined_at(lines: list[str], quote: str, hint: int, *, compact: bool) -> tuple[int, int] | None:
    glue = "" if compact else " "
    kept: list[str] = []
    starts: list[int] = []  # where each line begins in `joined` (a blank line: the next)
    offset = 0
    for line in lines:
        starts.append(offset)
        collapsed = _BLANKS.sub(glue, line).strip()
        if collapsed and not (compact and _COMMENT_LINE.match(collapsed)):
            kept.append(collapsed)
            offset += len(collapsed) + len(glue)
    joined = glue.join(kept)
    pieces = [_BLANKS.sub(glue, piece).strip() for piece in _ELLIPSIS.split(quote)]
    pieces = [piece for piece in pieces if piece]
    if not pieces or any(len(piece.replace(" ", "")) < MIN_QUOTE for piece in pieces):
        return None
    best: tuple[int, int] | None = None
    at = joined.find(pieces[0])
    while at >= 0:
        end = at + len(pieces[0])
        for piece in pieces[1:]:
            found = joined.find(piece, end)
            end = found + len(piece) if found >= 0 else -1
            if end < 0:
                break
        if end < 0:
            break
        first = bisect.bisect_right(starts, at)
        last = bisect.bisect_right(starts, end - 1)
        if last - first < ELLIPSIS_SPAN and (
            best is None or abs(first - hint) < abs(best[0] - hint)
        ):
            best = (first, last)
        at = joined.find(pieces[0], at + 1)
    return best


def check_citations(reply: GuidedReply, located: Located, index: WorkspaceIndex) -> Verdict:
    """Each citation looked up in its file (the text milk read, else the index's path)."""
    verdict = Verdict()
    for citation in reply.citations:
        if proves_nothing(citation.quote):  # `}` is in every file: it shows nothing
            verdict.problems.append(
                f"the quote {_short(citation.quote)!r} is too short to show anything: quote"
                " the whole line the answer rests on"
            )
            continue
        path = index.file_for(_LINE_SUFFIX.sub("", citation.path.strip()).lstrip("./"))
        if path is None:
            verdict.problems.append(f"the citation's path {citation.path} is not a file here")
            continue
        text = located.texts.get(path)
        if text is None:
            try:
                text = (index.root / path).read_text(encoding="utf-8", errors="replace")
            except OSError:
                verdict.problems.append(f"{path} could not be read to check the citation")
                continue
        where = find_quote(text, citation.quote, _hint(citation, path, located))
        if where is None:
            path, where = _elsewhere(path, citation, located)
        if where is None:
            cited = f" (cited at line {citation.line})" if citation.line else ""
            verdict.problems.append(
                f"the quote {_short(citation.quote)!r} is not in {path}{cited}:"
                " quote the file's text exactly"
            )
            continue
        quote = citation.quote.strip()[:QUOTE_MAX]
        checked = Cited(path, where[0], where[1], quote)
        if checked not in verdict.citations:
            verdict.citations.append(checked)
    return verdict


def _hint(citation: Citation, path: str, located: Located) -> int:
    """The line a quote is looked up nearest: the one cited, else (the guided schema asks
    for none: the model is shown no line numbers) the shown line it was copied from."""
    return citation.line or located.line_of(path, citation.quote)


def _elsewhere(
    path: str, citation: Citation, located: Located
) -> tuple[str, tuple[int, int] | None]:
    """The one other file the model was shown that holds the quote (a quote copied right
    under the wrong file's name), with where; else `path` and None."""
    found = [
        (other, where)
        for other, text in located.texts.items()
        if other != path
        and (where := find_quote(text, citation.quote, _hint(citation, other, located))) is not None
    ]
    return found[0] if len(found) == 1 else (path, None)


def check_answer(
    reply: GuidedReply,
    located: Located,
    index: WorkspaceIndex,
    request: str,
    *,
    cite: bool = True,
) -> Verdict:
    """The citations checked, then every path and workspace code name the answer states:
    a path must exist (or be declared proposed), a name must be in a verified quote, in
    what the model was shown, or in the request; with `cite` (a guided answer, whose lines
    milk showed), an answer stating such things must rest on at least one verified
    citation. An agent's answer (`cite` False) rests on what its tools showed instead."""
    verdict = check_citations(reply, located, index)
    answer = _URL.sub(" ", reply.answer)
    declared = {_clean(path) for path in reply.proposed if _clean(path)}
    quotes = "\n".join(citation.quote for citation in verdict.citations)
    claims = 0
    complete = index.refreshed_at is not None and not index.truncated
    cited_paths = {citation.path for citation in verdict.citations}
    for path in sorted(_paths(answer, index)):
        claims += 1
        if path in request or not complete:
            continue  # an index not (fully) built proves no absence
        if index.has_path(path):
            if cite and cited_paths and index.file_for(path) not in cited_paths:
                verdict.problems.append(
                    f"the answer names {path} but cites no line of it: cite the line of"
                    f" {path} it rests on, or name the file your cited lines are from"
                )
            continue
        if path in declared:
            verdict.proposed.append(path)
            continue
        verdict.problems.append(
            f"{path} is not in the workspace: name a file that is, or put it in `proposed`"
            " if the answer proposes creating it"
        )
    prefixes = _definition_prefixes(index)
    placed = _placed_names(answer, index)
    for name in sorted(_names(answer)):
        if not (_about_workspace(name, index, prefixes) or name in placed):
            continue  # outside knowledge (a library's or the language's name)
        if index.has_path(name):
            continue  # `index.js`: a file, checked as a path
        claims += 1
        bare = name.removesuffix("()")
        last = bare.rsplit(".", 1)[-1]  # `Store.flush`: its method is what must be shown
        if any(part in quotes or located.holds(part) or part in request for part in (bare, last)):
            continue
        if not cite and index.has_name(bare):
            continue  # an agent's answer naming what the files here have, read in another turn
        if not complete and name not in placed:
            continue
        verdict.problems.append(
            f"`{bare}` is in none of the lines you were shown nor in a quote you cited"
        )
    for option in sorted(_options(answer, index)):
        claims += 1
        if option in GENERATED_OPTIONS or not complete:
            continue
        if index.has_option(option) or located.holds(option) or option in request:
            continue
        verdict.problems.append(
            f"`{option}` is an option no file of this workspace has: name one the code declares"
        )
    shown = _numbers_in("\n".join([quotes, request, located.shown]))
    shown.update(str(n) for cited in verdict.citations for n in (cited.line, cited.end_line))
    # a range of the lines shown, as their headings give it (`lines 48-60`), names lines; its
    # ends alone are no values (asked how many entries a cache holds, a 1.5B model answered
    # 100, the start of `lines 100-103`)
    heads = {str(n) for chunk in located.chunks for n in (chunk.first, chunk.last)}
    stated = _RANGE.sub(lambda m: " " if {m[1], m[2]} & heads else m[0], _paths_out(answer))
    # a value is a claim about the workspace when the answer makes others, or cites it; an
    # agent's answer, whose tools showed it more than it cites, only when it cites
    valued = reply.citations if not cite else claims or reply.citations
    values = _numbers_in(stated) if valued else set()
    unshown = values - shown
    # the files an agent's answer is about, looked up only when a value needs them
    writes = None if cite or not unshown else _writer(answer, request, index)
    for value in unshown:
        if writes is not None and (value.count(".") > 1 or writes(value)):
            continue  # an agent's answer: a version, or a value a file it is about writes
        claims += 1
        verdict.problems.append(
            f"the answer states {value}, which none of the lines you cited or were shown"
            " holds: state what the file says, or make the change as edits"
        )
    for path in declared - set(verdict.proposed):
        if not index.has_path(path):
            verdict.proposed.append(path)
    if restates(reply.answer, request):
        verdict.problems.append(
            "the answer only restates the request: answer it from the lines shown, or, if it"
            " asks for a change, give the change as edits"
        )
    verdict.problems.extend(misplaced(answer, index))
    verdict.claims = claims
    if cite and claims and not verdict.citations:
        verdict.problems.append(
            "the answer names files or code of the workspace but cites no line:"
            " add citations (path, line, the exact quoted text)"
        )
    return verdict


_RANGE = re.compile(r"(?<![\w.])(\d+)\s*[-\u2013]\s*(\d+)(?![\w.])")
"""A range of numbers (`48-60`, with a hyphen or an en dash): lines, when an end is a shown
range's."""
_NUMBER = re.compile(r"(?<![\w.])(?<!\w-)\d+(?:\.\d+)*(?![\w.]*\w)")
"""A number as the text writes it; `1.2.3` is one (a version), `v2`, `x86_64`, the 53 of
`--split-user-53` are none."""
VALUE_MIN = 10
"""Smaller numbers (one digit) are counts and ordinals as often as values."""


def _numbers_in(text: str) -> set[str]:
    """The values of two digits or more a text writes (versions whole)."""
    return {
        match.group()
        for match in _NUMBER.finditer(text)
        if "." in match.group() or int(match.group()) >= VALUE_MIN
    }


def _writer(answer: str, request: str, index: WorkspaceIndex) -> Callable[[str], bool]:
    """Whether a file the answer or the request is about writes a value: a file either
    names, or one defining a name either writes as code or asks about."""
    files = {found for path in _paths(answer, index) if (found := index.file_for(path))}
    named = asked(request, index)
    files.update(named.files)
    for name in [*named.names, *_names(answer)]:
        files.update(index.definers(name.removesuffix("()").rsplit(".", 1)[-1], limit=4))

    def writes(value: str) -> bool:
        try:
            number = float(value)
        except ValueError:
            return False
        return any(index.writes_number(path, number) for path in files)

    return writes


def _paths_out(answer: str) -> str:
    """The answer without the places it names (`a.go:37`, `src/x.py`): their numbers are
    line numbers and names, not values."""

    def blank(match: re.Match[str]) -> str:
        place = match.group()
        is_place = any(mark in place for mark in "/:.") and not _NUMBER.fullmatch(place)
        return " " if is_place else place

    return _PATH.sub(blank, answer)


RESTATED_MIN_WORDS = 5
_WORD = re.compile(r"\w+")
WRITTEN = re.compile(r"`([^`\n]+)`|\"([^\"\n]+)\"|(?<!\w)'([^'\n]+)'(?!\w)")
"""Text written as code or in straight quotes."""


def restates(answer: str, request: str) -> bool:
    """Whether every word of the answer is the request's: it says nothing the request did
    not (a 1.5B model "answers" a change request with the request in the past tense, and
    no edit). Words of three letters or more match by their first three; any other word or
    number of the answer (`3`, a value), or text it writes as code or in straight quotes
    that the request does not hold (`-`: a separator's value has no word), is something
    it says."""
    said = {word.lower() for word in _WORD.findall(answer)}
    asked = {word.lower() for word in _WORD.findall(request)}
    if len(said) < RESTATED_MIN_WORDS:
        return False
    if any("".join(span).strip() not in request for span in WRITTEN.findall(answer)):
        return False
    heads = {word[:3] for word in asked if len(word) >= 3}
    return all(word in asked or (len(word) >= 3 and word[:3] in heads) for word in said)


def paths_in(answer: str, index: WorkspaceIndex) -> set[str]:
    """What the answer writes as a path (see `_paths`)."""
    return _paths(answer, index)


def misplaced(answer: str, index: WorkspaceIndex) -> list[str]:
    """Definitions of this workspace the answer puts beside a file of it that does not
    hold them at all (not defining, not importing, not calling them): "`parse_duration` is
    defined in `README.md`" and "`NewString` は `README.md` に定義されています" alike, since
    a sentence pairs them, whatever its words say of the pair."""
    found: list[str] = []
    for sentence in _SENTENCE.split(answer):
        files = {
            path: located
            for path in _paths(sentence, index)
            if (located := index.file_for(path)) is not None
        }
        defined = {
            last
            for name in _names(sentence)
            if index.has_definition(last := name.removesuffix("()").rsplit(".", 1)[-1])
            and not index.has_path(name)
        }
        if len(files) != 1 or len(defined) != 1:
            continue  # a sentence of several names and files pairs none of them for sure
        [(path, located)] = files.items()
        [last] = defined
        if not index.in_file(located, last):
            found.append(
                f"the answer puts `{last}` with {path}, which does not hold it: milk finds it"
                f" in {', '.join(index.definers(last, limit=2))}"
            )
    return found


def _paths(answer: str, index: WorkspaceIndex) -> set[str]:
    """What the answer writes as a path: with a `/`, or ending in an extension this
    workspace's files have (a capitalised word such as `Node.js` is a name, not a file,
    unless written as code)."""
    extensions = _extensions(index)
    spans = {match.group(2) for match in _SPAN.finditer(answer)}
    found: set[str] = set()
    for match in _PATH.finditer(answer):
        token = _clean(match.group())
        if not token or token.startswith("-") or token.endswith("/"):
            continue
        name = token.rsplit("/", 1)[-1]
        suffix = name.rsplit(".", 1)[-1] if "." in name else ""
        in_code = any(token in span for span in spans)
        written_as_file = suffix in extensions and (
            in_code or not token[:1].isupper() or token.isupper()
        )
        if token.startswith("../"):
            continue  # outside the workspace folder
        top = token.split("/", 1)[0]
        # `milk/turn/undo`, `Qwen/Qwen2.5-…`: a slash alone makes no file of this folder;
        # a folder of this workspace, or a file name with an extension, does
        if written_as_file or (
            "/" in token and (index.has_path(top) or _EXTENSION.fullmatch(suffix) is not None)
        ):
            found.add(token)
    return {path for path in found if not path.replace(".", "").replace("/", "").isdigit()}


def _names(answer: str) -> set[str]:
    """The identifiers the answer writes as code (in backticks)."""
    names: set[str] = set()
    for span in (match.group(2) for match in _SPAN.finditer(answer)):
        if span.lstrip().startswith("-"):
            continue  # a command-line option (`--open-file`), not a name of code
        for match in _NAME.finditer(span):
            name = match.group()
            if len(name.removesuffix("()")) >= 3 and "/" not in span:
                names.add(name)
    return names


_OPTION = re.compile(r"--[A-Za-z][\w-]*")
GENERATED_OPTIONS = frozenset({"--help", "--version"})
"""Options a command-line library adds to every program without the code naming them."""
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|(?<=[\u3002\uff01\uff1f])|\n+")


def _placed_names(answer: str, index: WorkspaceIndex) -> set[str]:
    """The names the answer writes as code in a sentence that names a file of this
    workspace ("`compute_total()` in calc.py"): it places them here, so they are claims
    about the workspace even when nothing here is near them. By the sentence's structure
    (its punctuation), not its words."""
    placed: set[str] = set()
    for sentence in _SENTENCE.split(answer):
        if any(index.has_path(path) for path in _paths(sentence, index)):
            placed.update(  # not `sync.Mutex`: a library's member beside a file here
                name for name in _names(sentence) if "." not in name and _CODE_SHAPED.search(name)
            )
    return placed


_CODE_SHAPED = re.compile(r"_|[a-z0-9][A-Z]|\(\)$")
_PROSE_OPTION = re.compile(r"(?:^|(?<=\s))(--[A-Za-z][\w-]*)")


def _options(answer: str, index: WorkspaceIndex) -> set[str]:
    """The command-line options the answer gives this workspace's code: on their own, as
    code (`--max-length`, `--max-length=5`) or in its prose ("start it with --port 80"), or
    in a command running a file of this workspace (`python cli.py --precision 3`); another
    program's options (`pip install --upgrade`) are that program's."""
    found: set[str] = set()
    for span in (match.group(2) for match in _SPAN.finditer(answer)):
        words = span.split()
        if words and _OPTION.fullmatch(words[0].split("=", 1)[0]):
            found.add(words[0].split("=", 1)[0])
        elif any(index.has_path(word) for word in words if "." in word or "/" in word):
            found.update(match.group() for match in _OPTION.finditer(span))
    found.update(match.group(1) for match in _PROSE_OPTION.finditer(_SPAN.sub(" ", answer)))
    return found


PREFIX = 6
"""A name that begins as one of the workspace's definitions does (`newRandomFrom…` beside
`NewRandomFromReader`) is about the workspace."""


_CACHE: dict[str, tuple[object, frozenset[str]]] = {}
"""What is derived from the index's state, with the object it came from (made once per
refresh that changed it, not per answer: bench/grounding.py)."""


def _cached(key: str, source: object, make: Callable[[], frozenset[str]]) -> frozenset[str]:
    known = _CACHE.get(key)
    if known is None or known[0] is not source:
        known = _CACHE[key] = (source, make())
    return known[1]


def _definition_prefixes(index: WorkspaceIndex) -> frozenset[str]:
    names = index.definition_names()
    return _cached(
        f"prefixes:{index.root}",
        names,
        lambda: frozenset(name[:PREFIX].lower() for name in names if len(name) > PREFIX),
    )


def _about_workspace(name: str, index: WorkspaceIndex, prefixes: frozenset[str]) -> bool:
    """Whether a name the answer writes as code claims something of this workspace: it is
    near what the workspace defines (`asked.near`) or begins as a definition here does."""
    last = name.removesuffix("()").rsplit(".", 1)[-1]
    return near(name, index) or (len(last) > PREFIX and last[:PREFIX].lower() in prefixes)


def _extensions(index: WorkspaceIndex) -> frozenset[str]:
    stems = index.file_stems()
    return _cached(
        f"extensions:{index.root}",
        stems,
        lambda: frozenset(
            path.rsplit(".", 1)[-1]
            for paths in stems.values()
            for path in paths
            if "." in path.rsplit("/", 1)[-1]
        ),
    )


def _clean(path: str) -> str:
    return _LINE_SUFFIX.sub("", path.strip().strip("`'\"()[],;:")).removeprefix("./").rstrip(".")


def _short(text: str, limit: int = 80) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"
