"""The words of the grounding check: names and words that claim nothing about a workspace
(keywords, builtins, standard modules, product names, placeholders, well-known tools).
Pure data and predicates; `claims.py` reads answers with them."""

from __future__ import annotations

import builtins
import keyword
import re
import sys
from functools import cache


def word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


EXTENSIONS = word_set(
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
ATTRIBUTE_LIKE = word_set("log lock env conf pem crt in json html db so bin pt gz tar zip")
"""Extensions that are also attribute names (`math.log`, `response.json`): such a word is a
file name only when what comes before the dot is no known module or object. A source file
of another language (`sha1.go`, `hash.rs`) is a file name whatever its stem is (issue 29:
Go's `sha1.go` was read as Python's `hashlib.sha1`)."""
CONVENTIONAL_FILES = word_set(
    """requirements.txt requirements-dev.txt pyproject.toml setup.py setup.cfg tox.ini
    pytest.ini mypy.ini ruff.toml conftest.py __init__.py __main__.py manage.py
    environment.yml Pipfile poetry.lock uv.lock package.json package-lock.json yarn.lock
    tsconfig.json Cargo.toml Cargo.lock go.mod go.sum Gemfile Dockerfile docker-compose.yml
    docker-compose.yaml compose.yaml .gitignore .dockerignore .env .editorconfig
    .pre-commit-config.yaml .bashrc .zshrc .profile README.md CHANGELOG.md LICENSE.md"""
)
"""Files every project of a kind may have: a general answer names them ('add it to
requirements.txt'), so named alone they claim nothing (`src/setup.py` still does)."""
GENERIC_OPTIONS = frozenset({"--help", "--version"})
"""Options every command line has (argparse adds `--help` without writing it)."""

PRODUCT_FILES = word_set(
    """node.js vue.js next.js nuxt.js react.js express.js three.js d3.js chart.js nest.js
    ember.js backbone.js angular.js alpine.js socket.io p5.js llama.cpp whisper.cpp"""
)

EXTERNAL_TOOLS = word_set(
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
RUNNERS = frozenset({"python", "python3", "py", "pypy3"})
RUN_PREFIXES = frozenset({"uv", "poetry", "pipenv", "pdm", "hatch", "rye"})
"""`uv run X`: X is the program."""

_OTHER_GENERIC = word_set(
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
def basic_names() -> frozenset[str]:
    """Names no question makes about a workspace: keywords, builtins, standard modules."""
    return frozenset(
        {*keyword.kwlist, *keyword.softkwlist, *dir(builtins), *sys.stdlib_module_names}
        | {"self", "cls", "this", "args", "kwargs"}
    )


@cache
def generic_names() -> frozenset[str]:
    """Names no answer asserts about a workspace: `basic_names`, the methods of the builtin
    types (`items.append`) and a few receivers of other languages (`console.log`). Which
    other names are a language's or a library's is not listed: a name that resolves nowhere
    here and is near nothing here is outside knowledge (`grounding.asked.near`)."""
    names = set(basic_names()) | _OTHER_GENERIC
    for kind in _BUILTIN_TYPES:
        names.update(dir(kind))
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


def made_up(name: str) -> bool:
    """A placeholder of an example (`my_list`, `foo_bar`, `MyClass`)."""
    return _PLACEHOLDER.fullmatch(name) is not None


def common_word(word: str) -> bool:
    """A word with a number that names none of this code (`utf8`, `python3`)."""
    return bool(_NUMBERED.fullmatch(word))


def looks_camel(word: str) -> bool:
    """An inner capital (`getValue`, `WorkspaceIndex`, `HTTPServer`), not the plural of an
    acronym (`APIs`, `GPUs`)."""
    core = word[:-1] if len(word) > 2 and word[-1] == "s" and word[:-1].isupper() else word
    return _INNER_CAPITAL.search(core) is not None


_INNER_CAPITAL = re.compile(r"[a-z0-9][A-Z]|[A-Z]{2}[a-z]")
