"""The grounding check of a local answer: what it asserts about this workspace, and whether
that exists.

A small model that guesses names files, functions and options that are not there, and a
good one names those that are. `workspace_claims` takes from an answer what it asserts
about this workspace: file paths (`src/app.py`, `calc.py`, `docs/`), code spans, names that
look like code (snake_case, CamelCase, dotted), `--options`. `ungrounded` returns those found
neither in the turn's evidence (successful tool results, attachments, the user's message)
nor in the `WorkspaceIndex`. The extraction leans towards saying nothing: a claim missed
costs a guess that passes, a claim invented costs a right answer flagged, which is worse.
So it leaves out:

* fenced code blocks (example code the model writes), and names the answer's own code
  defines (`def reverse_list`, `my_list = ...`, `for item in ...`);
* Python keywords, builtins, the methods of the builtin types, the standard library's
  modules and their common names, a few other languages' globals (`console.log`), product
  names (`JavaScript`, `NumPy`, `Node.js`) and placeholders (`my_list`, `foo`, `MyClass`);
* words of plain prose, and single plain words in code spans (`file`, `items`): a word
  counts when it has `_`, an inner capital or a dot, or in a span also a capital, a digit
  or a call (`add()`); names of two characters or less;
* URLs, absolute paths (`/etc/hosts`, `~/.bashrc`), version numbers, the options of
  well-known tools (`pip install --upgrade`);
* what the answer proposes (`create a new file main.py`, `for example foo_bar`) or denies
  (`there is no compute_total()`, `utils.py does not exist`).

`question_claims` is the same extraction for the user's question, where a plain word in a
code span counts too; `about_workspace` says whether the question names something that
exists here, decided by the index. `markup_answer` catches chat-template markup given as
the answer (`<tools></tools>`). Pure: no I/O besides asking the index.
"""

from __future__ import annotations

import builtins
import importlib
import keyword
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from milk_lsp.workspace.index import SKIPPED_DIRS

if TYPE_CHECKING:
    from milk_lsp.workspace.index import WorkspaceIndex

__all__ = [
    "Claims",
    "about_workspace",
    "markup_answer",
    "question_claims",
    "ungrounded",
    "workspace_claims",
]


@dataclass(frozen=True, slots=True)
class Claims:
    """What a text asserts about the workspace, each kind in order of appearance."""

    paths: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    options: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.paths or self.names or self.options)


# --- vocabulary ---------------------------------------------------------------------------


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_EXTENSIONS = _words(
    """py pyi pyx pxd ipynb js jsx mjs cjs ts tsx mts cts vue svelte astro json jsonc json5
    toml yaml yml cfg ini conf env properties md markdown rst txt adoc csv tsv xml html htm
    css scss sass less sql sh bash zsh fish ps1 bat cmd rs go c h cc cpp cxx hpp hh hxx java
    kt kts scala swift m mm rb php pl pm lua r jl dart ex exs erl hrl hs ml mli clj cljs cs
    fs fsx vb gradle lock proto graphql gql tf tfvars hcl mk cmake el vim nix zig sol wasm
    svg png jpg jpeg gif ico webp pdf log tpl j2 jinja jinja2 mako pem crt plist gitignore
    dockerignore editorconfig dockerfile gguf safetensors onnx pt pth ckpt npy npz pkl parquet
    sqlite sqlite3 db zip gz tgz tar whl exe dll so dylib bin wav mp3 mp4 ttf woff woff2"""
)
"""File name extensions that make a dotted word a file name."""
_ATTRIBUTE_LIKE = _words(
    """log lock env conf c h m r d go el ex fs cs ml pl pm rs sh mk tf cc hs jl vb sol lua rb
    pem crt in json html db so bin pt gz tar zip"""
)
"""Extensions that are also attribute names (`math.log`, `response.json`): such a word is a
file name only when what comes before the dot is no known module or object."""
_CONVENTIONAL_FILES = _words(
    """requirements.txt requirements-dev.txt pyproject.toml setup.py setup.cfg tox.ini
    pytest.ini mypy.ini ruff.toml conftest.py __init__.py __main__.py manage.py
    environment.yml Pipfile poetry.lock uv.lock package.json package-lock.json yarn.lock
    tsconfig.json Cargo.toml Cargo.lock go.mod go.sum Gemfile Dockerfile docker-compose.yml
    docker-compose.yaml compose.yaml .gitignore .dockerignore .env .editorconfig
    .pre-commit-config.yaml .bashrc .zshrc .profile README.md CHANGELOG.md LICENSE.md"""
)
"""Files every project of a kind may have: a general answer names them ('add it to
requirements.txt'), so named alone they claim nothing (`src/setup.py` still does)."""
_GENERIC_OPTIONS = frozenset({"--help", "--version"})
"""Options every command line has (argparse adds `--help` without writing it)."""

_PRODUCTS = _words(
    """javascript typescript coffeescript actionscript github gitlab bitbucket pypi npmjs
    numpy scipy pytorch tensorflow keras pandas matplotlib seaborn sklearn scikit fastapi
    flask django pydantic sqlalchemy celery redis mysql postgresql postgres sqlite mongodb
    dynamodb bigquery graphql openapi oauth websocket websockets macos ios ipados iphone ipad
    youtube linkedin powershell openai chatgpt deepseek llama huggingface intellij pycharm
    vscode neovim jetbrains latex cpython pypy micropython ipython jupyter jupyterlab nodejs
    nextjs reactjs jquery wordpress cloudflare digitalocean devops dockerhub kubernetes
    docker linux windows python rust golang java kotlin swift react angular vue svelte
    express webpack vite eslint prettier babel pytest unittest mypy ruff pylint flake8 black
    isort pyright poetry pipenv conda anaconda virtualenv homebrew ubuntu debian fedora
    centos archlinux wsl qwen mistral claude gemini copilot ollama lmstudio llamacpp vllm
    markdown json yaml toml html css sql http https api rest grpc xml csv utf ascii unicode
    stackoverflow readme changelog makefile dockerfile hashmap arraylist phd nosql wifi ebay
    deepmind dotnet resnet bert gpt todo fixme"""
)
"""Product and format names: a capital in these is no claim (compared lower-case)."""
_PRODUCT_FILES = _words(
    """node.js vue.js next.js nuxt.js react.js express.js three.js d3.js chart.js nest.js
    ember.js backbone.js angular.js alpine.js socket.io p5.js llama.cpp whisper.cpp"""
)

_EXTERNAL_TOOLS = _words(
    """pip pip3 pipx uv uvx poetry pipenv conda mamba npm npx yarn pnpm node deno bun git gh
    docker podman kubectl helm pytest ruff mypy black flake8 pylint isort pyright tox nox
    coverage curl wget ls grep rg find fd sed awk cat head tail less tar zip unzip ssh scp
    rsync make cmake ninja gcc g++ clang cargo rustc rustup go java javac mvn gradle brew
    apt apt-get dnf yum pacman systemctl journalctl sudo chmod chown cp mv rm mkdir touch echo
    export source cd code vim nvim emacs ollama llama-server llama-cli ffmpeg jq openssl
    sqlite3 psql mysql redis-cli terraform aws gcloud az heroku twine sphinx-build mkdocs
    pre-commit jupyter ipython bash sh zsh powershell kill ps top du df ln env which"""
)
"""Programs whose options are theirs, not this workspace's."""
_RUNNERS = frozenset({"python", "python3", "py", "pypy3"})
_RUN_PREFIXES = frozenset({"uv", "poetry", "pipenv", "pdm", "hatch", "rye"})
"""`uv run X`: X is the program."""

_OTHER_GENERIC = _words(
    """self cls this args kwargs argv foo bar baz qux quux spam eggs world
    console window document navigator Array Object String Number Boolean Math JSON Promise
    Map Set Date RegExp Error Symbol BigInt prototype forEach toString toLowerCase
    toUpperCase indexOf lastIndexOf push pop shift unshift splice slice concat filter reduce
    includes length querySelector querySelectorAll getElementById addEventListener innerHTML
    textContent parseInt parseFloat setTimeout setInterval fetch require exports module
    function const let var null undefined println printf sprintf fmt Println Printf Sprintf
    std cout cin endl vector main np pd plt tf torch nn df sns cv2 sk
    snake_case camelCase PascalCase kebab_case SCREAMING_SNAKE_CASE UPPER_CASE lower_case
    PATH HOME USER SHELL TERM LANG PWD TMPDIR HTTP_PROXY HTTPS_PROXY NO_PROXY PYTHONPATH
    PYTHONHOME VIRTUAL_ENV LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES NODE_ENV JAVA_HOME GOPATH
    XDG_CONFIG_HOME XDG_DATA_HOME XDG_CACHE_HOME OPENAI_API_KEY ANTHROPIC_API_KEY
    useState useEffect useContext useReducer useCallback useMemo useRef useLayoutEffect
    componentDidMount setState getState createElement appendChild preventDefault
    stopPropagation localStorage sessionStorage"""
)
_STDLIB_LOOKS = _words(
    """os os.path sys re json math random itertools functools operator
    collections typing dataclasses enum abc pathlib string time datetime shutil subprocess
    logging contextlib io argparse asyncio threading unittest unittest.mock hashlib copy heapq
    bisect statistics textwrap csv tempfile glob pickle urllib.parse urllib.request
    http.server socket sqlite3 concurrent.futures queue uuid base64 decimal secrets zipfile
    configparser platform signal traceback inspect types pprint timeit difflib shlex fnmatch
    tomllib struct"""
)
"""Standard modules whose names (and those of their main classes) are general knowledge;
imported on the first check (about 0.1 s, once)."""
_STDLIB_CLASSES = _words(
    """pathlib.Path datetime.datetime datetime.timedelta collections.Counter
    collections.defaultdict collections.deque collections.OrderedDict unittest.TestCase
    unittest.mock.Mock unittest.mock.MagicMock argparse.ArgumentParser argparse.Namespace
    logging.Logger re.Pattern re.Match io.StringIO subprocess.Popen
    subprocess.CompletedProcess threading.Thread asyncio.AbstractEventLoop asyncio.Task
    http.server.HTTPServer http.server.BaseHTTPRequestHandler
    http.server.SimpleHTTPRequestHandler concurrent.futures.ThreadPoolExecutor
    concurrent.futures.Future sqlite3.Connection sqlite3.Cursor socket.socket queue.Queue
    decimal.Decimal zipfile.ZipFile configparser.ConfigParser
    tempfile.TemporaryDirectory"""
)
_BUILTIN_TYPES = (
    str,
    bytes,
    bytearray,
    list,
    dict,
    set,
    frozenset,
    tuple,
    int,
    float,
    complex,
    bool,
    object,
    type,
    range,
    memoryview,
    BaseException,
)


@cache
def _basic() -> frozenset[str]:
    """Names no question makes about a workspace: keywords, builtins, standard modules."""
    return frozenset(
        {*keyword.kwlist, *keyword.softkwlist, *dir(builtins), *sys.stdlib_module_names}
        | {"self", "cls", "this", "args", "kwargs"}
    )


@cache
def _generic() -> frozenset[str]:
    """Names no answer asserts about a workspace (built on first use: it imports the
    standard modules it looks into)."""
    names = set(_basic()) | _OTHER_GENERIC
    for kind in _BUILTIN_TYPES:
        names.update(dir(kind))
    for module_name in _STDLIB_LOOKS:
        try:
            module = importlib.import_module(module_name)
        except ImportError:  # pragma: no cover - a trimmed Python
            continue
        names.update(dir(module))
    for dotted in _STDLIB_CLASSES:
        module_name, _, class_name = dotted.rpartition(".")
        names.update(dir(getattr(sys.modules.get(module_name), class_name, None)))
    return frozenset(names)


_PLACEHOLDER = re.compile(
    r"(?:my|your|some|example|sample|dummy|fake)_\w+|My[A-Z]\w*|"
    r"(?:foo|bar|baz|qux|foobar)(?:_\w+)?|\w*(?:Example|Sample)",
)
"""Names made up to show something (`my_list`, `MyClass`, `foo_bar`)."""
_NUMBERED = re.compile(
    r"(?:int|uint|float|utf|ucs|ipv|http|es|h|py|python|pip|x|arm|md|sha|base|win|i|u|f|v)"
    r"\d+",
    re.IGNORECASE,
)
"""`utf8`, `int64`, `python3`, `sha256`, `v2`: a digit that makes no name of this code."""


def _made_up(name: str) -> bool:
    """A placeholder of an example (`my_list`, `foo_bar`, `MyClass`)."""
    return _PLACEHOLDER.fullmatch(name) is not None


def _common_word(word: str) -> bool:
    """A product or format name (`NumPy`, `APIs`), or a word with a number that names none
    of this code (`utf8`, `python3`)."""
    lower = word.lower()
    return lower in _PRODUCTS or lower.rstrip("s") in _PRODUCTS or bool(_NUMBERED.fullmatch(word))


def _looks_camel(word: str) -> bool:
    """An inner capital (`getValue`, `WorkspaceIndex`, `HTTPServer`), not the plural of an
    acronym (`APIs`, `GPUs`)."""
    core = word[:-1] if len(word) > 2 and word[-1] == "s" and word[:-1].isupper() else word
    return _INNER_CAPITAL.search(core) is not None


# --- the shapes of claims -----------------------------------------------------------------

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
_INNER_CAPITAL = re.compile(r"[a-z0-9][A-Z]|[A-Z]{2}[a-z]")
_PATH_CHARS = re.compile(r"[\w.@+-]+(?:/[\w.@+-]*)*")
_LINE_PLACE = re.compile(r"(?::\d+){1,2}$|#L\d+(?:-L?\d+)?$")

_SENTENCE_END = re.compile(r"(?<!\b\w)[.!?](?=\s)|\n")
"""The end of a sentence, not of `e.g.` or `i.e.`."""
_PROPOSAL = re.compile(
    r"\b(?:creat(?:e|es|ed|ing)|add(?:ing)?\s+an?|sav(?:e|ing)(?:\s+\w+){0,2}\s+as|"
    r"e\.g|for\s+example|for\s+instance|suppose|say\s+you\s+have|"
    r"if\s+you\s+(?:have|had|want|need)|something\s+like|example|called\s+something\s+like|"
    r"rename(?:d)?\s+(?:[\w'-]+\s+){0,3}?to|would\s+(?:be|look)|hypothetical|"
    r"you\s+(?:could|can|might|may|should|would)\s+(?:also\s+)?"
    r"(?:add|create|write|define|introduce|implement))\b",
    re.IGNORECASE,
)
"""Before a claim in its sentence: the answer proposes the thing, it does not assert it."""
_NEGATED_BEFORE = re.compile(
    r"\b(?:no|not|never|without|cannot|can't|couldn't|didn't|doesn't|don't|isn't|aren't|"
    r"wasn't|nor)\s+(?:(?!but\b)[\w'-]+\s+){0,4}$",
    re.IGNORECASE,
)
_NEGATED_AFTER = re.compile(
    r"^[\s`'\")\]]*(?:[\w'-]+\s+){0,3}?(?:(?:does|do|did|is|are|was|were)\s*(?:not|n't)\s+"
    r"(?:exist|found|defined|present|there|appear|seem|in\b)|(?:is|are|was|were)\s+"
    r"(?:missing|absent|undefined|not\s+there)|(?:not\s+found|missing|doesn't|don't)|"
    r"(?:but\s+)?(?:found|find|got|returned)\s+(?:nothing|no\s+match))",
    re.IGNORECASE,
)
_THIS_PROJECT = re.compile(
    r"\b(?:this|our|my|the\s+current)\s+(?:project|repo|repository|codebase|code\s+base|"
    r"workspace|package|module|file|folder|directory|function|class|method|code)\b",
    re.IGNORECASE,
)
_CODE_NOUN = (
    r"(?:function|method|class|module|variable|constant|field|attribute|option|flag|"
    r"command|file|folder|directory|package|test|fixture|decorator|property|parameter|"
    r"argument|setting|endpoint|handler|helper)s?"
)
_NAMED_BEFORE_NOUN = re.compile(rf"\b([A-Za-z_]\w*)\s+{_CODE_NOUN}\b", re.IGNORECASE)
_NAMED_AFTER_NOUN = re.compile(rf"\b{_CODE_NOUN}\s+(?:called\s+|named\s+)?([A-Za-z_]\w*)\b")
_NOT_NAMES = _words(
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

_TEMPLATE = re.compile(
    r"<\|[A-Za-z0-9_.:-]{1,40}\|>|<\uff5c[^\uff5c<>\n]{1,40}\uff5c>|"
    r"</?(?:tools|tool_call|tool_calls|tool_response|tool_result|tool_use|function_calls?|"
    r"functions)>|<function=[^>\n]{0,80}>|</function>|<(?:start|end)_of_turn>|"
    r"\[/?(?:TOOL_CALLS|TOOL_RESULTS|AVAILABLE_TOOLS|INST|SYSTEM_PROMPT|TOOL_CONTENT)\]"
)
"""Special tokens and tags of chat templates (ChatML, Hermes, Llama 3, Mistral, Gemma)."""
_TEMPLATE_BLOCK = re.compile(
    r"<(tools|tool_call|tool_calls|tool_response|tool_result|tool_use|function_calls?|"
    r"functions)>.*?</\1>|<function=[^>\n]{0,80}>.*?</function>|"
    r"\[(?:TOOL_CALLS|AVAILABLE_TOOLS|TOOL_RESULTS)\].*|"
    r"<\|(?:im_start|start_header_id)\|>\s*(?:system|user|assistant|tool|ipython)?",
    re.DOTALL,
)
_JSON_BLOCK = re.compile(r"[\[{].*[\]}]", re.DOTALL)
"""The arguments of a call whose closing tag never came."""


def _split_fences(text: str) -> tuple[str, list[str]]:
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


def _code_spans(prose: str) -> list[tuple[int, int, str]]:
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


def _blank(text: str, ranges: Iterable[tuple[int, int]]) -> str:
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
    for found in _SENTENCE_END.finditer(before):
        cut_at = found.end()
    before = before[cut_at:]
    if _PROPOSAL.search(before) or _NEGATED_BEFORE.search(before):
        return True
    line_end = text.find("\n", end)
    after = text[end : line_end if line_end != -1 else len(text)][:80]
    return _NEGATED_AFTER.match(after) is not None


class _Collector:
    """Claims in order, once each, without the hedged and the answer's own names."""

    def __init__(self, text: str, *, question: bool, bound: set[str]) -> None:
        self.text = text
        self.question = question
        self.bound = bound
        self.vocabulary = _basic() if question else _generic()
        self.paths: dict[str, None] = {}
        self.names: dict[str, None] = {}
        self.options: dict[str, None] = {}

    def _keep(self, start: int, end: int) -> bool:
        return self.question or not _hedged(self.text, start, end)

    def path(self, path: str, start: int, end: int) -> None:
        while path.startswith("./"):
            path = path[2:]
        if path and self._keep(start, end):
            self.paths.setdefault(path, None)

    def option(self, option: str, start: int, end: int) -> None:
        if option not in _GENERIC_OPTIONS and self._keep(start, end):
            self.options.setdefault(option, None)

    def name(self, chain: str, start: int, end: int, *, called: bool, span: bool) -> None:
        claim = self._name_claim(chain, called=called, span=span)
        if claim is not None and self._keep(start, end):
            self.names.setdefault(claim, None)

    def _name_claim(self, chain: str, *, called: bool, span: bool) -> str | None:
        """The name `chain` claims (None: it claims none)."""
        parts = chain.split(".")
        owned = parts[0] in ("self", "cls", "this") and len(parts) > 1
        rest = parts[1:] if owned else parts
        if chain in self.bound or rest[0] in self.bound:
            return None
        if any(_made_up(part) for part in rest):
            return None
        if len(rest) == 1 and not owned:
            word = rest[0]
            if len(word) <= 2 or word in self.vocabulary or _common_word(word):
                return None
            if _HEX.fullmatch(word):
                return None  # a commit or a digest
            if span and self.question:
                return word
            looks_like_code = "_" in word or _looks_camel(word) or called
            if span:
                looks_like_code = (
                    looks_like_code or word[0].isupper() or any(char.isdigit() for char in word)
                )
            return word if looks_like_code else None
        head, last = rest[0], rest[-1]
        if last.lower() in _EXTENSIONS or chain.lower() in _PRODUCT_FILES:
            return None  # a file name (`Node.js`): a path when it is one
        if not owned and head in self.vocabulary:
            return None  # `list.reverse`, `os.path.join`, `console.log`
        if last in self.vocabulary or len(last) < 2 or len(chain) <= 3:
            return None  # `items.append`, `self.x`
        return chain

    def claims(self) -> Claims:
        return Claims(tuple(self.paths), tuple(self.names), tuple(self.options))


def _path_shape(word: str) -> str | None:
    """`word` as a workspace path claim (`./`, `:12` and a trailing `.` or `,` cut), or
    None when it is no path: no slash and no known extension, a URL, a version."""
    word = _LINE_PLACE.sub("", word.rstrip(".,;:!?)]}'\""))
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
    has_extension = bool(dot and stem.strip(".") and extension.lower() in _EXTENSIONS)
    if name.lower() in _PRODUCT_FILES or core in _CONVENTIONAL_FILES:
        return None
    if core.split("/")[0] in SKIPPED_DIRS:
        return None  # `.venv/bin/activate`, `node_modules/`: tooling, in any project
    if has_extension and "/" not in core:
        head = stem.split(".")[0]
        if head in ("self", "cls", "this") or (
            (extension.lower() in _ATTRIBUTE_LIKE or "." in stem) and head in _generic()
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
    if i + 1 < len(words) and words[i] in _RUN_PREFIXES and words[i + 1] == "run":
        i += 2
    if i >= len(words):
        return "", i
    program = words[i]
    if program in _RUNNERS:
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
    external = program in _EXTERNAL_TOOLS or program in _RUNNERS or external_line
    # A bare program name (`uvicorn`, `ruff`), not a script path or `-m module`: its options
    # are that program's, whatever it is; only a script of this workspace makes claims.
    external = external or re.fullmatch(r"[A-Za-z][\w-]*", program) is not None
    if program.startswith("-m "):
        module = program[3:]
        top = module.split(".")[0]
        if top in sys.stdlib_module_names or top in _EXTERNAL_TOOLS or top in _PRODUCTS:
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
    if not text or _TEMPLATE.search(text) or _URL.search(text) or _VERSION.fullmatch(text):
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
    if program.startswith("-m ") or program in _EXTERNAL_TOOLS or words[0] in _RUNNERS:
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


_WORDLIKE_TOOLS = _words(
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
    if any(word in _EXTERNAL_TOOLS and word not in _WORDLIKE_TOOLS for word in words):
        return True
    spans = (span.split()[0].lower() for span in re.findall(r"`([^`\s][^`]*)`", line))
    return any(first in _WORDLIKE_TOOLS for first in spans) or bool(_WORDLIKE_RUN.search(line))


def _line_at(text: str, position: int) -> str:
    start = text.rfind("\n", 0, position) + 1
    end = text.find("\n", position)
    return text[start : end if end != -1 else len(text)]


def _collect(text: str, *, question: bool) -> Claims:
    prose, blocks = _split_fences(text)
    spans = _code_spans(prose)
    outside = _blank(prose, [(start, end) for start, end, _ in spans])
    outside = _ABSOLUTE.sub(lambda m: " " * len(m.group()), _URL.sub(_spaces, outside))
    paths = [
        (path, match.span())
        for match in _WORDISH.finditer(outside)
        if (path := _path_shape(match.group())) is not None
    ]
    outside = _blank(outside, [taken for _, taken in paths])
    # hedges are read in the prose with the code and the paths blanked: `new/app.py` is
    # no "new", and `no_cache` no "no"
    found = _Collector(
        outside, question=question, bound=set() if question else _bound_names(blocks)
    )
    for start, end, content in spans:
        _span_claims(found, content, start, end, _line_at(prose, start))
    for path, (start, end) in paths:
        found.path(path, start, end)
    options = list(_OPTION.finditer(outside))
    for match in options:
        if not _mentions_tool(_line_at(outside, match.start())):
            found.option(match.group().rstrip("-"), match.start(), match.end())
    outside = _blank(outside, [match.span() for match in options])
    for match in _CHAIN.finditer(outside):
        called = outside.startswith("(", match.end())
        found.name(match.group(), match.start(), match.end(), called=called, span=False)
    if question:
        for pattern in (_NAMED_BEFORE_NOUN, _NAMED_AFTER_NOUN):
            for match in pattern.finditer(outside):
                word = match.group(1)
                if word.lower() not in _NOT_NAMES and len(word) > 2 and word not in _basic():
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


def about_workspace(question: str, index: WorkspaceIndex) -> bool:
    """Whether `question` is about this workspace: it says so ('this project', 'my code')
    or names a path, a name or an option that exists here."""
    if _THIS_PROJECT.search(question):
        return True
    claims = question_claims(question)
    return (
        any(index.has_path(path) for path in claims.paths)
        or any(_indexed_name(index, name) for name in claims.names)
        or any(index.has_option(option) for option in claims.options)
        or any(index.has_definition(word) for word in _plain_words(question))
    )


def question_names(question: str, index: WorkspaceIndex) -> list[str]:
    """The code names a question asks about: those it writes as code, and its plain words
    that stand where a name does and that this workspace defines ("the default of
    naturalday?")."""
    names = list(question_claims(question).names)
    names += [w for w in _plain_words(question) if w not in names and index.has_definition(w)]
    return names


_NAME_PLACE = re.compile(
    r"\b(?:does|do|did|will|would|can|could|should)\s+([A-Za-z_]\w{2,})\s+"
    r"(?:return|do|take|raise|print|yield|compute|output|accept|expect|mean|handle)\b|"
    r"\b(?:rename|remove|delete|change|fix|update|refactor|document|rewrite|simplify|"
    r"call|calls|calling|test|tests|testing)\s+([A-Za-z_]\w{2,})\b|"
    r"\bwhere\s+(?:is|are|was|were)\s+([A-Za-z_]\w{2,})\s+(?:defined|declared|implemented|"
    r"used|set|called|raised|located|created|handled)\b|"
    r"\bwhat\s+(?:is|are)\s+([A-Za-z_]\w{2,})\s*\?|"
    r"\b(?:of|in|by|from)\s+(?:the\s+)?(?:function\s+|method\s+|class\s+)?([A-Za-z_]\w{2,})"
    r"(?=\s*(?:\?|$|\(\)|\s(?:CLI|command-line|command)\b))",
    re.IGNORECASE,
)
"""Where a plain word of a question stands as a name ("what does greet return", "rename
greet", "the default of naturalsize?", "an option of the slugify CLI"): only there is a word
the workspace defines taken as that definition, so "How do I add an item to a set?" stays a
general question where `add` is defined."""


def _plain_words(question: str) -> list[str]:
    """The question's plain words that stand where a name does (see `_NAME_PLACE`), other
    than words of every question such as `what` or `does`."""
    words = [next(word for word in found if word) for found in _NAME_PLACE.findall(question)]
    return [word for word in words if word.lower() not in _QUESTION_WORDS]


_QUESTION_WORDS = _words(
    """what which where when why how who whom whose does did do done doing the this that
    these those there here with from into onto for and but not are was were is be been being
    can could should would will shall may might must have has had get gets got make makes made
    use uses used find show tell explain mean means return returns work works call calls
    about file files code function functions method methods class classes module modules
    please thanks you your our my its it they them"""
)


def markup_answer(answer: str) -> str | None:
    """A short description when `answer` is chat-template markup rather than an answer
    (`<tools></tools>`, `<tool_call>{...}</tool_call>`, `<|im_start|>assistant`); None
    otherwise, also for an answer that shows markup in code or around a real answer."""
    prose, _ = _split_fences(answer)
    prose = _blank(prose, [(start, end) for start, end, _ in _code_spans(prose)])
    tags = list(dict.fromkeys(_TEMPLATE.findall(prose)))
    if not tags:
        return None
    rest = _JSON_BLOCK.sub(" ", _TEMPLATE.sub(" ", _TEMPLATE_BLOCK.sub(" ", prose)))
    solid, left = len("".join(prose.split())), len("".join(rest.split()))
    if len(re.findall(r"[A-Za-z]{2,}", rest)) >= 3 and left * 2 > solid:
        return None  # a real answer with a stray tag, or one that talks about tags
    shown = " ".join(tags[:3]) + (" …" if len(tags) > 3 else "")
    return f"chat-template markup instead of an answer ({shown})"


# --- the check ----------------------------------------------------------------------------


def ungrounded(
    claims: Claims, evidence: Sequence[str], index: WorkspaceIndex | None
) -> tuple[str, ...]:
    """The claims found neither in `evidence` (the turn's successful tool results, the
    attachments, the user's message) nor in `index`; () when all are grounded. Without an
    index (no workspace folder) only the evidence grounds; an index not refreshed yet, or
    cut short at its file limit, proves no absence, so it then grounds every claim."""
    if not claims or (index is not None and (index.truncated or index.refreshed_at is None)):
        return ()
    text = "\n".join(evidence)
    missing: list[str] = []
    checks: tuple[tuple[tuple[str, ...], Callable[[str], bool]], ...] = (
        (claims.paths, lambda path: _path_in(text, path) or _indexed_path(index, path)),
        (claims.names, lambda name: _name_in(text, name) or _indexed_name(index, name)),
        (claims.options, lambda option: _token_in(text, option) or _indexed_option(index, option)),
    )
    for items, grounded in checks:
        missing.extend(item for item in items if not grounded(item))
    return tuple(missing)


def _indexed_path(index: WorkspaceIndex | None, path: str) -> bool:
    return index is not None and index.has_path(path)


def _indexed_name(index: WorkspaceIndex | None, name: str) -> bool:
    """A name in the text of a file, or of a file or folder (`Makefile`, module `calc`).
    A dotted name whose lowercase head is no module, folder or name of this workspace
    belongs to another library (`pytest.approx`, `click.command`): it claims nothing here.
    One whose head is a module here must have its last part here (`hello.greet_everyone`)."""
    if index is None:
        return False
    parts = [part for part in name.removesuffix("()").split(".") if part]
    if len(parts) > 1:
        head = parts[0]
        module = index.has_path(head + ".py") or index.has_path(head + "/")
        if not module and not index.has_name(head) and head[:1].islower():
            return True  # a module of another library; a class (`ReportBuilder`) is checked
        if module:
            return index.has_name(parts[-1]) or index.has_path("/".join(parts) + ".py")
    return index.has_name(name) or index.has_path(name) or index.has_path(name + ".py")


def _indexed_option(index: WorkspaceIndex | None, option: str) -> bool:
    return index is not None and index.has_option(option)


def _token_in(text: str, token: str) -> bool:
    """Whether `token` occurs in `text` not as part of a longer name or option."""
    if not token or token not in text:
        return False
    pattern = rf"(?<![\w-]){re.escape(token)}(?![\w-])"
    return re.search(pattern, text) is not None


def _path_in(text: str, path: str) -> bool:
    """Whether the evidence shows `path`: whole, or each of its parts (a listing shows
    `src/` and then `app.py`)."""
    core = _LINE_PLACE.sub("", path).removeprefix("./").rstrip("/")
    if _token_in(text, core):
        return True
    parts = [part for part in core.split("/") if part not in ("", ".")]
    return len(parts) > 1 and all(_token_in(text, part) for part in parts)


def shows_name(text: str, name: str) -> bool:
    """Whether `text` (what the model saw) shows the code name `name` (see `_name_in`)."""
    return _name_in(text, name)


def shows_line_of(text: str, path: str) -> bool:
    """Whether `text` shows a line of the file `path`, as a search hit does
    (`src/humanize/time.py:12: ...`)."""
    return re.search(rf"(?<![\w/.-]){re.escape(path)}:\d+", text) is not None


def _name_in(text: str, name: str) -> bool:
    """Whether the evidence shows `name`: whole, its last part (`calc.add` after reading
    calc.py), or as a module path (`pkg.mod` in `pkg/mod.py`)."""
    if _token_in(text, name):
        return True
    parts = name.split(".")
    if len(parts) == 1:
        return False
    return _token_in(text, parts[-1]) or "/".join(parts) in text
