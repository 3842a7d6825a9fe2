"""What an answer or a question asserts about this workspace: paths, code-looking names,
options (the package's docstring says what is left out, and why)."""

from __future__ import annotations

import bisect
import keyword
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field

from milk_lsp.agents.local.judge.grounding.said import proposed_or_denied
from milk_lsp.agents.local.judge.grounding.vocabulary import (
    ATTRIBUTE_LIKE,
    CONVENTIONAL_FILES,
    EXTENSIONS,
    EXTERNAL_TOOLS,
    GENERIC_OPTIONS,
    PRODUCT_FILES,
    RUN_PREFIXES,
    RUNNERS,
    basic_names,
    common_word,
    generic_names,
    looks_camel,
    made_up,
    word_set,
)
from milk_lsp.workspace.index import SKIPPED_DIRS


@dataclass(frozen=True, slots=True)
class Claims:
    """What a text asserts about the workspace, each kind in order of appearance."""

    paths: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    placed: tuple[str, ...] = field(default=(), compare=False)
    """The function-like names (lower case, no dot) in a sentence that also names a path:
    the text puts them in a file of this workspace ("`compute_total()` in calc.py"), so
    they claim something about it. A type or a member there (`AbortController`,
    `ctx.Err`) is the language's, not the file's."""
    conventional: tuple[str, ...] = field(default=(), compare=False)
    """The files every project may have that the text names (`README.md`, `setup.py`):
    no claim alone, but the place an answer gives ("`naturalsize` is defined in
    `README.md`")."""

    def __bool__(self) -> bool:
        return bool(self.paths or self.names or self.options)


# --- the shapes of claims ------------------------------------------------------------------

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})(.*)$")
_TICKS = re.compile(r"`+")
_URL = re.compile(
    r"\b(?:https?|ftp|file|ssh|git)://\S+|\bwww\.\S+|\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+|"
    r"\b[\w-]+(?:\.[\w-]+)*\.(?:com|org|net|io|dev|ai|co|edu|gov|app|info|xyz|ly|gg|us|uk|de|"
    r"fr|jp|cn|ru|tv|cc)\b(?:/\S*)?"
)
_VERSION = re.compile(r"v?\d+(?:\.\d+)+(?:[-.+]?[A-Za-z0-9]+)*|[<>=!~^]=?\s*\d[\w.*]*")
_ABSOLUTE = re.compile(r"(?<![\w.])(?:~|[A-Za-z]:)?[/\\][\w.@+~/\\-]*")
"""`/etc/hosts`, `~/.bashrc`, `C:\\Users`: not in the workspace (and not claimed)."""
_WORDISH = re.compile(r"(?<![\w/~.@$%-])(?:\.{1,2}/)?[\w][\w./-]*")
"""A word that may be a path (not absolute: nothing before it is `/` or `~`)."""
_CHAIN = re.compile(r"(?<![\w.$/-])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*(?![\w/])")
_OPTION = re.compile(r"(?<![\w-])--[A-Za-z][A-Za-z0-9_-]*")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_STRING = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
_HEX = re.compile(r"(?=.*\d)[0-9a-f]{7,}")
_PATH_CHARS = re.compile(r"[\w.@+-]+(?:/[\w.@+-]*)*")
LINE_PLACE = re.compile(r"(?::\d+){1,2}$|#L\d+(?:-L?\d+)?$")

SENTENCE_END = re.compile(r"(?<!\b\w)[.!?](?=\s)|[\u3002\uff01\uff1f]|\n")
"""The end of a sentence, not of `e.g.` or `i.e.` (and the full stops of Chinese and
Japanese, which need no space after them)."""
_CODE_NOUN = (
    r"(?:function|method|class|module|variable|constant|field|attribute|option|flag|"
    r"command|file|folder|directory|package|test|fixture|decorator|property|parameter|"
    r"argument|setting|endpoint|handler|helper)s?"
)
_NAMED_BEFORE_NOUN = re.compile(rf"\b([A-Za-z_]\w*)\s+{_CODE_NOUN}\b", re.IGNORECASE)
_NAMED_AFTER_NOUN = re.compile(rf"\b{_CODE_NOUN}\s+(?:called\s+|named\s+)?([A-Za-z_]\w*)\b")
_NOT_NAMES = word_set(
    """a an the this that these those which what whose each every any some my your our its
    their his her new old main static class instance abstract virtual private public global
    local inner outer nested anonymous lambda recursive pure generic helper utility custom
    simple same other another first last next previous given following above below such
    python javascript typescript rust java go test unit config configuration command line
    input output text data one two called named decorator callback generator wrapper factory
    constructor entry init setup builtin string list dict array map sort sorting search hash
    random async sync arrow member base parent child super derived default optional
    required positional keyword environment lookup is are was were be do does did work works
    return returns mean means run runs contain contains look looks call calls take takes get
    gets have has handle handles use uses need needs define defines go goes live lives
    function functions method methods class classes module modules variable variables
    constant constants field fields attribute attributes option options flag flags commands
    file files folder folders directory directories package packages tests fixture fixtures
    decorators property properties parameter parameters argument arguments settings endpoint
    endpoints handler handlers helpers"""
)
"""Words next to `function`, `class`... that name none: 'a function', 'the main file'."""

TEMPLATE = re.compile(
    r"<\|[A-Za-z0-9_.:-]{1,40}\|>|<\uff5c[^\uff5c<>\n]{1,40}\uff5c>|"
    r"</?(?:tools|tool_call|tool_calls|tool_response|tool_result|tool_use|function_calls?|"
    r"functions)>|<function=[^>\n]{0,80}>|</function>|<(?:start|end)_of_turn>|"
    r"\[/?(?:TOOL_CALLS|TOOL_RESULTS|AVAILABLE_TOOLS|INST|SYSTEM_PROMPT|TOOL_CONTENT)\]"
)
"""Special tokens and tags of chat templates (ChatML, Hermes, Llama 3, Mistral, Gemma)."""


def _function_like(name: str) -> bool:
    """`compute_total`, `load_settings`: lower case and no dot (not a type, constant or
    member)."""
    bare = name.removesuffix("()")
    return "." not in bare and bare.islower()


def split_fences(text: str) -> tuple[str, list[str]]:
    """The text with every fenced block blanked (lines kept, so offsets stay close), and
    the blocks' contents. An unclosed fence runs to the end."""
    prose: list[str] = []
    blocks: list[str] = []
    fence = ""
    block: list[str] = []
    for line in text.split("\n"):
        if not fence:
            opened = _FENCE.match(line)
            if opened and not (opened.group(1)[0] == "`" and "`" in opened.group(2)):
                fence, block = opened.group(1), []
                prose.append(" " * len(line))
            else:
                prose.append(line)
            continue
        prose.append(" " * len(line))
        closing = line.strip()
        if closing.startswith(fence) and closing == fence[0] * len(closing):
            blocks.append("\n".join(block))
            fence = ""
        else:
            block.append(line)
    if fence:
        blocks.append("\n".join(block))
    return "\n".join(prose), blocks


def code_spans(prose: str) -> list[tuple[int, int, str]]:
    """(start, end, content) of the inline code spans: a backtick run closed by the next
    run of the same length, within one paragraph."""
    runs = list(_TICKS.finditer(prose))
    spans: list[tuple[int, int, str]] = []
    i = 0
    while i < len(runs):
        opener = runs[i]
        width = len(opener.group())
        closer = next((j for j in range(i + 1, len(runs)) if len(runs[j].group()) == width), None)
        if closer is not None:
            content = prose[opener.end() : runs[closer].start()]
            if "\n\n" not in content:
                spans.append((opener.start(), runs[closer].end(), content.strip()))
                i = closer + 1
                continue
        i += 1
    return spans


def blank(text: str, ranges: Iterable[tuple[int, int]]) -> str:
    """`text` with the characters of `ranges` replaced by spaces (offsets kept)."""
    chars = list(text)
    for start, end in ranges:
        chars[start:end] = " " * (end - start)
    return "".join(chars)


def _bound_names(blocks: Iterable[str]) -> set[str]:
    """The names an answer's own code defines: it shows them, it does not claim them."""
    bound: set[str] = set()
    for block in blocks:
        for pattern in (_BINDING, _PARAMETERS):
            for found in pattern.finditer(block):
                target = next((group for group in found.groups() if group), "")
                bound.update(_IDENT.findall(target))
                bound.add(target.strip())
    return bound


_BINDING = re.compile(
    r"\b(?:def|class|function|fn|func|struct|enum|interface|type|const|let|var|val)\s+"
    r"([A-Za-z_]\w*)|"
    r"\bfor\s+([\w \t,()]+?)\s+in\b|"
    r"\bas\s+([\w \t,]+?)\s*[:),\n]|"
    r"\bimport\s+([\w \t,.]+)|"
    r"^[ \t]*((?:self\.|this\.)?[A-Za-z_][\w, \t]*?)\s*(?::[^=\n]+)?=(?!=)",
    re.MULTILINE,
)
_PARAMETERS = re.compile(
    r"\b(?:def|function|fn|func)\s+\w+\s*\(([^)]*)\)|\(([^()]*)\)\s*=>|\blambda\s+([^:\n]*):"
)


def _hedged(text: str, start: int, end: int) -> bool:
    """Whether the claim at text[start:end] is proposed or denied, not asserted."""
    line_start = text.rfind("\n", 0, start) + 1
    before = text[max(line_start, start - 100) : start]
    cut_at = 0
    for found in SENTENCE_END.finditer(before):
        cut_at = found.end()
    line_end = text.find("\n", end)
    after = text[end : line_end if line_end != -1 else len(text)][:80]
    return proposed_or_denied(before[cut_at:], after)


class _Collector:
    """Claims in order, once each, without the hedged and the answer's own names."""

    def __init__(self, text: str, *, question: bool, bound: set[str]) -> None:
        self.text = text
        self.question = question
        self.bound = bound
        self.vocabulary = basic_names() if question else generic_names()
        self.paths: dict[str, None] = {}
        self.names: dict[str, None] = {}
        self.options: dict[str, None] = {}
        self.conventional: dict[str, None] = {}
        self._ends = [found.end() for found in SENTENCE_END.finditer(text)]
        self._path_sentences: set[int] = set()
        self._name_sentences: dict[str, int] = {}

    def _keep(self, start: int, end: int) -> bool:
        return self.question or not _hedged(self.text, start, end)

    def path(self, path: str, start: int, end: int) -> None:
        while path.startswith("./"):
            path = path[2:]
        if path and self._keep(start, end):
            self.paths.setdefault(path, None)
            self._path_sentences.add(self.sentence_at(start))

    def option(self, option: str, start: int, end: int) -> None:
        if option not in GENERIC_OPTIONS and self._keep(start, end):
            self.options.setdefault(option, None)

    def name(self, chain: str, start: int, end: int, *, called: bool, span: bool) -> None:
        claim = self._name_claim(chain, called=called, span=span)
        if claim is not None and self._keep(start, end):
            self.names.setdefault(claim, None)
            self._name_sentences.setdefault(claim, self.sentence_at(start))

    def _name_claim(self, chain: str, *, called: bool, span: bool) -> str | None:
        """The name `chain` claims (None: it claims none)."""
        parts = chain.split(".")
        owned = parts[0] in ("self", "cls", "this") and len(parts) > 1
        rest = parts[1:] if owned else parts
        if chain in self.bound or rest[0] in self.bound:
            return None
        if any(made_up(part) for part in rest):
            return None
        if len(rest) == 1 and not owned:
            word = rest[0]
            if len(word) <= 2 or word in self.vocabulary or common_word(word):
                return None
            if _HEX.fullmatch(word):
                return None  # a commit or a digest
            if span and self.question:
                return word
            looks_like_code = "_" in word or looks_camel(word) or called
            if span:
                looks_like_code = (
                    looks_like_code or word[0].isupper() or any(char.isdigit() for char in word)
                )
            return word if looks_like_code else None
        head, last = rest[0], rest[-1]
        if last.lower() in EXTENSIONS or chain.lower() in PRODUCT_FILES:
            return None  # a file name (`Node.js`): a path when it is one
        if not owned and head in self.vocabulary:
            return None  # `list.reverse`, `os.path.join`, `console.log`
        if last in self.vocabulary or len(last) < 2 or len(chain) <= 3:
            return None  # `items.append`, `self.x`
        return chain

    def claims(self) -> Claims:
        placed = (
            name
            for name, sentence in self._name_sentences.items()
            if sentence in self._path_sentences and _function_like(name)
        )
        return Claims(
            tuple(self.paths),
            tuple(self.names),
            tuple(self.options),
            tuple(placed),
            tuple(self.conventional),
        )

    def sentence_at(self, position: int) -> int:
        """The number of the sentence `position` is in."""
        return bisect.bisect_right(self._ends, position)


def _path_shape(word: str) -> str | None:
    """`word` as a workspace path claim (`./`, `:12` and a trailing `.` or `,` cut), or
    None when it is no path: no slash and no known extension, a URL, a version."""
    word = LINE_PLACE.sub("", word.rstrip(".,;:!?)]}'\""))
    if not _PATH_CHARS.fullmatch(word) or word.startswith(("/", "-")) or "//" in word:
        return None
    if _VERSION.fullmatch(word):
        return None
    core = word.removeprefix("./").rstrip("/")
    while core.startswith("./"):
        core = core[2:]
    if not core or core == "." or core.startswith(".."):
        return None  # `../x` is outside the workspace or says nothing certain
    name = core.rsplit("/", 1)[-1]
    stem, dot, extension = name.rpartition(".")
    has_extension = bool(dot and stem.strip(".") and extension.lower() in EXTENSIONS)
    if name.lower() in PRODUCT_FILES or core in CONVENTIONAL_FILES:
        return None
    if core.split("/")[0] in SKIPPED_DIRS:
        return None  # `.venv/bin/activate`, `node_modules/`: tooling, in any project
    if has_extension and "/" not in core:
        head = stem.split(".")[0]
        if head in ("self", "cls", "this") or (
            (extension.lower() in ATTRIBUTE_LIKE or "." in stem) and head in generic_names()
        ):
            return None  # `self.log`, `math.log`, `unittest.mock.patch`
    if "/" in word:
        # `and/or`, `milk/turn/undo` (a method), `Qwen/Qwen2.5-Coder` (a model) are no paths
        if not all(core.split("/")) or ".." in core.split("/"):
            return None
        return word if has_extension or word.endswith("/") or word.startswith("./") else None
    return word if has_extension else None


def _program(words: list[str]) -> tuple[str, int]:
    """The program a command runs and the index of its first argument: `uv run pytest`
    runs pytest; `python app.py` runs `app.py`; `python -m pkg` runs the module `pkg`
    (given as `-m pkg`)."""
    i = 0
    while i < len(words) and words[i] in ("$", ">", "sudo", "env"):
        i += 1
    if i + 1 < len(words) and words[i] in RUN_PREFIXES and words[i + 1] == "run":
        i += 2
    if i >= len(words):
        return "", i
    program = words[i]
    if program in RUNNERS:
        j = i + 1
        while j < len(words):
            if words[j] == "-m" and j + 1 < len(words):
                return "-m " + words[j + 1], j + 2
            if words[j] == "-c":
                return program, len(words)
            if not words[j].startswith("-"):
                return words[j], j + 1
            j += 1
        return program, j
    return program, i + 1


def _command_claims(
    found: _Collector, words: list[str], offset: int, length: int, external_line: bool
) -> None:
    """The claims of a shell command in a code span: its script or module when it is
    this workspace's, their options, and path arguments with a slash."""
    program, first = _program(words)
    external = program in EXTERNAL_TOOLS or program in RUNNERS or external_line
    # A bare program name (`uvicorn`, `ruff`), not a script path or `-m module`: its options
    # are that program's, whatever it is; only a script of this workspace makes claims.
    external = external or re.fullmatch(r"[A-Za-z][\w-]*", program) is not None
    if program.startswith("-m "):
        module = program[3:]
        top = module.split(".")[0]
        if top in sys.stdlib_module_names or top in EXTERNAL_TOOLS:
            external = True
        else:
            found.name(module, offset, offset + length, called=True, span=True)
    elif not external and (script := _path_shape(program)) is not None:
        found.path(script, offset, offset + length)
    for word in words[first:]:
        if word.startswith("--"):
            option = word.split("=", 1)[0]
            if not external and _OPTION.fullmatch(option):
                found.option(option, offset, offset + length)
            continue
        path = _path_shape(word.split("=", 1)[-1])
        if path is not None and ("/" in path or not external):
            found.path(path, offset, offset + length)


def _span_claims(found: _Collector, content: str, start: int, end: int, line: str) -> None:
    """The claims of one inline code span."""
    text = content.strip()
    if not text or TEMPLATE.search(text) or _URL.search(text) or _VERSION.fullmatch(text):
        return
    external_line = _mentions_tool(line)
    if text.startswith("--"):  # `--precision`, `--precision=3`, `--precision 3`
        option = text.split()[0].split("=", 1)[0]
        if _OPTION.fullmatch(option) and not external_line:
            found.option(option, start, end)
        return
    if " " not in text:
        path = _path_shape(text)
        if path is not None:
            found.path(path, start, end)
            return
        if text.removeprefix("./") in CONVENTIONAL_FILES:
            found.conventional.setdefault(text.removeprefix("./"), None)
            return
        called = re.fullmatch(r"([A-Za-z_][\w.]*)\s*\(.*\)", text, re.DOTALL)
        if called or _CHAIN.fullmatch(text):
            chain = called.group(1) if called else text
            # "the `utils` module": a plain word the answer calls a module, function... names it
            named = not called and _named_by_noun(line, content)
            found.name(chain.strip("."), start, end, called=bool(called) or named, span=True)
            return
    words = text.split()
    if _looks_like_command(words):
        _command_claims(found, words, start, end - start, external_line)
        return
    _expression_claims(found, text, start, end)


_NOUN_AFTER = re.compile(r"`\s+(?:module|package|function|class|method|file|folder)s?\b")


def _named_by_noun(line: str, content: str) -> bool:
    """Whether the span `content` is followed on its line by a noun that makes it a name of
    the code ("the `utils` module")."""
    at = line.find(f"`{content}`")
    return at != -1 and _NOUN_AFTER.match(line, at + len(content) + 1) is not None


def _looks_like_command(words: list[str]) -> bool:
    program, _ = _program(words)
    if not program:
        return False
    if program.startswith("-m ") or program in EXTERNAL_TOOLS or words[0] in RUNNERS:
        return True
    return bool(
        re.fullmatch(r"[\w./-]+", program)
        and program not in keyword.kwlist
        and any(re.fullmatch(r"--?[A-Za-z][\w-]*(?:=.*)?", word) for word in words[1:])
    )


def _expression_claims(found: _Collector, text: str, start: int, end: int) -> None:
    """The names a code expression in a span claims: the functions it calls and the dotted
    names it uses, not its own variables (`for x in`, `x =`)."""
    code = _STRING.sub(_spaces, text)
    local = set(_bound_names([code]))
    for match in _CHAIN.finditer(code):
        chain = match.group()
        if chain in local or chain.split(".")[0] in local or keyword.iskeyword(chain):
            continue
        after = code[match.end() :].lstrip()
        called = after.startswith("(")
        if after.startswith("=") and not after.startswith("=="):
            continue  # an assignment target or a keyword argument
        if not called and "." not in chain and not found.question:
            continue  # a plain variable of the example
        found.name(chain, start, end, called=called, span=True)


_WORDLIKE_TOOLS = word_set(
    "which make find less head tail cat top kill touch echo export source code env cd go"
)
"""Programs whose names are also English words: "5 characters or less" names no program."""
_WORDLIKE_RUN = re.compile(
    rf"(?:`|\b)(?:{'|'.join(sorted(_WORDLIKE_TOOLS))})`?\s+(?:[./~*][^\s`]*\s+)?`?-", re.IGNORECASE
)
"""One of them run with an option: `make --jobs 4`, "find . -name", "`less` -R"."""


def _mentions_tool(line: str) -> bool:
    """Whether a line names a well-known program (its options are then that program's); one
    whose name is also a word counts only when it is run with an option or in a code span."""
    words = re.findall(r"[\w+-]+", line.lower())
    if any(word in EXTERNAL_TOOLS and word not in _WORDLIKE_TOOLS for word in words):
        return True
    spans = (span.split()[0].lower() for span in re.findall(r"`([^`\s][^`]*)`", line))
    return any(first in _WORDLIKE_TOOLS for first in spans) or bool(_WORDLIKE_RUN.search(line))


def _line_at(text: str, position: int) -> str:
    start = text.rfind("\n", 0, position) + 1
    end = text.find("\n", position)
    return text[start : end if end != -1 else len(text)]


def _collect(text: str, *, question: bool) -> Claims:
    prose, blocks = split_fences(text)
    spans = code_spans(prose)
    outside = blank(prose, [(start, end) for start, end, _ in spans])
    outside = _ABSOLUTE.sub(lambda m: " " * len(m.group()), _URL.sub(_spaces, outside))
    paths = [
        (path, match.span())
        for match in _WORDISH.finditer(outside)
        if (path := _path_shape(match.group())) is not None
    ]
    conventional = [
        word
        for match in _WORDISH.finditer(outside)
        if (word := match.group().rstrip(".,;:!?)").removeprefix("./")) in CONVENTIONAL_FILES
    ]
    outside = blank(outside, [taken for _, taken in paths])
    # hedges are read in the prose with the code and the paths blanked: `new/app.py` is
    # no "new", and `no_cache` no "no"
    found = _Collector(
        outside, question=question, bound=set() if question else _bound_names(blocks)
    )
    for start, end, content in spans:
        _span_claims(found, content, start, end, _line_at(prose, start))
    for path, (start, end) in paths:
        found.path(path, start, end)
    found.conventional.update(dict.fromkeys(conventional))
    options = list(_OPTION.finditer(outside))
    for match in options:
        if not _mentions_tool(_line_at(outside, match.start())):
            found.option(match.group().rstrip("-"), match.start(), match.end())
    outside = blank(outside, [match.span() for match in options])
    for match in _CHAIN.finditer(outside):
        called = outside.startswith("(", match.end())
        found.name(match.group(), match.start(), match.end(), called=called, span=False)
    if question:
        for pattern in (_NAMED_BEFORE_NOUN, _NAMED_AFTER_NOUN):
            for match in pattern.finditer(outside):
                word = match.group(1)
                if word.lower() not in _NOT_NAMES and len(word) > 2 and word not in basic_names():
                    found.names.setdefault(word, None)
    return found.claims()


def _spaces(match: re.Match[str]) -> str:
    return " " * len(match.group())


def workspace_claims(answer: str) -> Claims:
    """What `answer` asserts about this workspace: paths, code-looking names, options (see
    the module for what is left out)."""
    return _collect(answer, question=False)


def question_claims(question: str) -> Claims:
    """The same for the user's question, where a plain word in a code span counts, and so
    does the word next to `function`, `class`, `file`... ('the add function')."""
    return _collect(question, question=True)
