"""The machinery of `bench/real_tasks.py`: pinned real projects, their tasks and machine checks.

A project is a real package's source archive, pinned by version and sha256, fetched into the
model cache with the registry's ordinary client (a Python sdist with `pip download --no-deps
--no-binary`, an npm package's registry tarball with `npm pack`, a Debian package with
`apt-get download`), never installed, and unpacked afresh into the workspace before every task,
so each task starts from the pristine tree. A Debian package is a `.deb`, not a source archive:
`dpkg-deb -x` unpacks it, the source folder inside it (`Project.tree`) is checked file by file
against a pinned digest (`tree_digest`) and packed into a source archive beside the `.deb`
(`debian_source`), which is what the tasks unpack. The projects are
`bench/real_tasks_slugify.py` (python-slugify: text to URL slugs, an argparse CLI),
`bench/real_tasks_humanize.py` (humanize: numbers, sizes and times in words, no CLI),
`bench/real_tasks_crossenv.py` (cross-env, JavaScript: environment variables for a command on
every OS, two CLI commands) and `bench/real_tasks_uuid.py` (google/uuid, Go: Debian's
golang-github-google-uuid-dev).

Three kinds of task:

* `question`: the answer is a fact in the code; right when the reply contains it.
* `edit`: right when the file holds the change and still parses (`ast` for Python,
  `node --check` for JavaScript: `js_edited`); for Go, right when the diff against the pristine
  tree touches only the files named and `go build`, `go vet` and `go test` pass (`go_edited`).
* `claude`: whole-package design or multi-file work meant for Claude; right only when the turn
  was handed to Claude (`TurnResult.escalated`), since the Claude here is a stand-in.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from milk_lsp.guided.citations import SOURCES_HEADING
from tests.real_model import fetch

Check = Callable[[Path, str], tuple[bool, str]]
"""(workspace, reply text) -> (right?, what was seen)."""


@dataclass(frozen=True)
class Task:
    name: str
    kind: str  # "question" | "edit" | "claude"
    prompt: str
    check: Check


@dataclass(frozen=True)
class ClaudeEdit:
    """A plan step as Claude Code's Edit tool makes it: the stand-in's scripted tool call
    when Claude does the step (alone, or after the local model failed it)."""

    path: str
    old: str
    new: str
    every: bool = False


@dataclass(frozen=True)
class AdvisorTask:
    """A multi-step request run on the advisor route (issue 32): the plan the Claude
    stand-in answers with, as Claude would write it, and a check per step of the files."""

    name: str
    prompt: str
    steps: tuple[tuple[str, Callable[[Path], str], ClaudeEdit], ...]
    """(the step as the plan says it, its check: "" when the workspace shows it done, the
    edit Claude makes for it)."""

    @property
    def files(self) -> list[str]:
        """The files the steps edit, in order: what Claude reads before planning or editing."""
        return list(dict.fromkeys(edit.path for _, _, edit in self.steps))


@dataclass(frozen=True)
class Project:
    """A pinned real package and the tasks asked of it."""

    name: str  # the distribution name on the package index
    version: str
    sha256: str  # of the sdist (PyPI), the registry tarball (npm) or the .deb (Debian)
    tasks: tuple[Task, ...]
    registry: str = "pypi"  # "pypi" | "npm" | "debian"
    advisor_tasks: tuple[AdvisorTask, ...] = ()
    arch: str = "all"
    """debian: the package's architecture, part of the .deb's file name."""
    tree: str = ""
    """debian: the folder inside the unpacked .deb that holds the source the tasks work on."""
    tree_sha256: str = ""
    """debian: `tree_digest` of that folder's files as the .deb ships them."""
    go_module: str = ""
    """Go: the module path; `debian_source` writes a go.mod (or its `go` line) when missing."""
    prepare: Callable[[], None] | None = field(default=None, compare=False)
    """Called once before a run: installs or checks what the checks need (Go: the toolchain)."""

    @property
    def sdist(self) -> str:
        """The archive's file name, as `pip download`, `npm pack` or `apt-get download`
        writes it."""
        if self.registry == "npm":  # `@scope/name` packs as `scope-name-<version>.tgz`
            return f"{self.name.lstrip('@').replace('/', '-')}-{self.version}.tgz"
        if self.registry == "debian":  # an epoch's colon is written %3a
            return f"{self.name}_{self.version.replace(':', '%3a')}_{self.arch}.deb"
        return f"{self.name}-{self.version}.tar.gz"

    @property
    def source(self) -> str:
        """The source archive the tasks unpack: the sdist itself, or for a .deb the
        archive `debian_source` packs beside it."""
        if self.registry == "debian":
            return f"{self.name}_{self.version.replace(':', '%3a')}.source.tar.gz"
        return self.sdist

    def download_command(self, folder: Path) -> list[str]:
        if self.registry == "debian":
            # the .deb itself, into the current folder; nothing is installed
            return ["apt-get", "download", f"{self.name}={self.version}"]
        if self.registry == "npm":
            # a registry spec packs the registry's own tarball bytes (its shasum is the
            # registry's dist.shasum); nothing is installed and no script runs
            return [
                *("npm", "pack", f"{self.name}@{self.version}", "--ignore-scripts"),
                *("--pack-destination", str(folder), "--no-fund", "--no-audit"),
            ]
        return [
            *(sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary=:all:"),
            *("--no-cache-dir", "--disable-pip-version-check", "--dest", str(folder)),
            f"{self.name}=={self.version}",
        ]


def fetch_project(project: Project) -> Path:
    """The verified source archive, from the cache or freshly downloaded (never installed).

    The download goes to a temporary folder first, so the cache never holds half a file;
    for a Debian package the archive returned is `debian_source`'s, made afresh each time
    from the verified .deb."""
    folder = fetch.cache_root() / "projects"
    target = folder / project.sdist
    if not target.exists():
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=folder) as temp:
            command = project.download_command(Path(temp))
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=300, check=False, cwd=temp
            )
            got = Path(temp) / project.sdist
            if done.returncode != 0 or not got.exists():
                hint = (
                    " (run `apt-get update` first; the pinned version is Debian 12's)"
                    if project.registry == "debian"
                    else ""
                )
                raise RuntimeError(f"{' '.join(command[:3])} failed{hint}:\n{done.stderr}")
            got.replace(target)
    digest = hashlib.sha256(target.read_bytes()).hexdigest()
    if digest != project.sha256:
        raise RuntimeError(
            f"{target}: sha256 {digest}, pinned {project.sha256}; remove it to refetch"
        )
    if project.registry == "debian":
        return debian_source(project, target)
    return target


def tree_digest(root: Path) -> tuple[str, int]:
    """(sha256 of the listing `<sha256 of the file>  <path>` of every file under `root`,
    sorted by path, as `sha256sum` prints it; the number of files). A link or anything but a
    plain file is an error: the pinned tree has none."""
    lines = []
    for path in sorted(root.rglob("*"), key=lambda p: p.relative_to(root).as_posix()):
        if path.is_symlink() or not (path.is_file() or path.is_dir()):
            raise RuntimeError(f"{path}: not a plain file or folder")
        if path.is_file():
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            lines.append(f"{digest}  {path.relative_to(root).as_posix()}\n")
    return hashlib.sha256("".join(lines).encode()).hexdigest(), len(lines)


def go_version() -> str:
    """The Go toolchain's language version, `1.19` for go1.19.8."""
    done = subprocess.run(
        ["go", "env", "GOVERSION"], capture_output=True, text=True, timeout=60, check=False
    )
    found = re.match(r"go(\d+\.\d+)", done.stdout.strip())
    if found is None:
        raise RuntimeError(f"go env GOVERSION said {done.stdout!r} {done.stderr!r}")
    return found.group(1)


def debian_source(project: Project, deb: Path) -> Path:
    """Unpack the verified .deb with `dpkg-deb -x`, check `project.tree`'s files against
    `project.tree_sha256`, and pack that folder into `project.source` beside the .deb (one top
    folder, which `lay_out` strips). A Go module gets its go.mod, or the go.mod's `go` line,
    when the package lacks it, for the toolchain here: otherwise `go build -mod=mod` writes
    that line itself into the workspace, inside the diff the edit checks read."""
    target = deb.with_name(project.source)
    with tempfile.TemporaryDirectory(dir=deb.parent) as temp:
        unpacked = Path(temp) / "unpacked"
        done = subprocess.run(
            ["dpkg-deb", "-x", str(deb), str(unpacked)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"dpkg-deb -x {deb.name} failed:\n{done.stderr}")
        root = unpacked / project.tree
        if not root.is_dir():
            raise RuntimeError(f"{deb.name} has no {project.tree}")
        digest, count = tree_digest(root)
        if digest != project.tree_sha256:
            raise RuntimeError(
                f"{deb.name}: {project.tree} (tree digest of {count} files) {digest}, "
                f"pinned {project.tree_sha256}"
            )
        if project.go_module:
            go_mod = root / "go.mod"
            if not go_mod.exists():
                go_mod.write_text(f"module {project.go_module}\n")
            text = go_mod.read_text(encoding="utf-8")
            if not re.search(r"(?m)^go\s+\d", text):
                go_mod.write_text(text.rstrip("\n") + f"\n\ngo {go_version()}\n")
        packed = Path(temp) / project.source
        with tarfile.open(packed, "w:gz") as archive:
            archive.add(root, arcname=root.name, filter=_plain)
        packed.replace(target)
    return target


def _plain(member: tarfile.TarInfo) -> tarfile.TarInfo:
    member.uid = member.gid = 0
    member.uname = member.gname = ""
    member.mtime = 0
    return member


def pristine_sources(archive: Path, suffixes: tuple[str, ...]) -> dict[str, str]:
    """The files of a source archive (top folder stripped) whose names end in `suffixes`."""
    sources = {}
    with tarfile.open(fileobj=io.BytesIO(archive.read_bytes()), mode="r:gz") as packed:
        for member in packed.getmembers():
            _, _, inner = member.name.partition("/")
            if inner and member.isfile() and inner.endswith(suffixes):
                extracted = packed.extractfile(member)
                if extracted is not None:
                    sources[inner] = extracted.read().decode("utf-8")
    return sources


def lay_out(sdist: Path, workspace: Path) -> None:
    """Empty `workspace` and unpack the sdist's tree into it (its top folder stripped)."""
    for entry in workspace.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    with tarfile.open(fileobj=io.BytesIO(sdist.read_bytes()), mode="r:gz") as archive:
        members = []
        for member in archive.getmembers():
            _, _, inner = member.name.partition("/")
            if inner:
                member.name = inner
                members.append(member)
        archive.extractall(workspace, members=members, filter="data")


# -- checks -------------------------------------------------------------------------------------


def mentions(*patterns: str) -> Check:
    """Right when the reply matches every regex (case-insensitive), milk's "Sources" block
    after it left out: it lists the files the citations are from, which the answer may
    contradict ("defined in `dce.go`" citing uuid.go had counted right)."""

    def check(_: Path, reply: str) -> tuple[bool, str]:
        said = reply.split(SOURCES_HEADING, 1)[0]
        missing = [p for p in patterns if not re.search(p, said, re.IGNORECASE)]
        return not missing, f"answer lacks {' and '.join(missing)}" if missing else "answer found"

    return check


def module(workspace: Path, rel: str) -> tuple[ast.Module | None, str]:
    try:
        return ast.parse((workspace / rel).read_text(encoding="utf-8")), ""
    except (OSError, SyntaxError, ValueError) as exc:
        return None, f"{rel} does not parse: {exc}"


def function(tree: ast.Module, name: str) -> ast.FunctionDef | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    return None


def defaults(fn: ast.FunctionDef) -> dict[str, ast.expr]:
    args = fn.args.args
    return {
        a.arg: d
        for a, d in zip(args[len(args) - len(fn.args.defaults) :], fn.args.defaults, strict=True)
    }


def python_matches(rel: str, pattern: str, what: str) -> Callable[[Path], str]:
    """A step's check of a Python file: it parses and matches `pattern` (else `what`)."""

    def check(workspace: Path) -> str:
        tree, problem = module(workspace, rel)
        if tree is None:
            return problem
        found = re.search(pattern, (workspace / rel).read_text(encoding="utf-8"))
        return "" if found else what

    return check


def edited(rel: str, keep: tuple[str, ...], test: Callable[[ast.Module, str], str]) -> Check:
    """Right when `rel` parses, still defines `keep`, and `test(tree, source)` finds no fault."""

    def check(workspace: Path, _: str) -> tuple[bool, str]:
        tree, problem = module(workspace, rel)
        if tree is None:
            return False, problem
        lost = [name for name in keep if function(tree, name) is None]
        if lost:
            return False, f"{rel} lost {lost}"
        fault = test(tree, (workspace / rel).read_text(encoding="utf-8"))
        return not fault, fault or f"{rel} edited and parses"

    return check


def for_claude() -> Check:
    """A task meant for Claude is never right locally (the stand-in's answer is canned)."""
    return lambda _w, _r: (False, "meant for Claude")


def js_defines(source: str, name: str) -> bool:
    """`source` still defines the function `name` (`function name(`, `name = (…) =>`,
    `name = function`), by text: enough for the plain CommonJS/ESM files of a small package."""
    name = re.escape(name)
    return bool(
        re.search(rf"\bfunction\s+{name}\s*\(", source)
        or re.search(rf"\b{name}\s*=\s*(?:async\s+)?(?:function\b|\([^)]*\)\s*=>|\w+\s*=>)", source)
    )


def node_check(path: Path) -> str:
    """'' when `node --check` parses the file, else its first error line."""
    try:
        done = subprocess.run(
            ["node", "--check", str(path)], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"node --check did not run: {exc}"
    if done.returncode == 0:
        return ""
    lines = [line for line in done.stderr.splitlines() if "Error" in line] or [done.stderr]
    return f"{path.name} does not parse (node --check): {lines[0].strip()}"


def js_edited_and_run(
    rel: str, keep: tuple[str, ...], test: Callable[[str], str], behaves: Callable[[Path], str]
) -> Check:
    """`js_edited`, then the edited workspace run (`behaves`: '' when node runs it as asked,
    else what went wrong)."""
    by_text = js_edited(rel, keep, test)

    def check(workspace: Path, reply: str) -> tuple[bool, str]:
        right, seen = by_text(workspace, reply)
        if not right:
            return right, seen
        fault = behaves(workspace)
        return not fault, fault or f"{seen}; node runs it as asked"

    return check


def js_renamed(old: str, new: str, named_at_least: int = 3) -> Callable[[str], str]:
    """A `js_edited` test: `old` is gone, `new` is defined (a function or a binding) and
    named at least `named_at_least` times, its definition included."""

    def test(source: str) -> str:
        if re.search(rf"\b{old}\b", source):
            return f"{old} still there"
        defined = bool(
            re.search(rf"\bfunction\s+{new}\s*\(", source)
            or re.search(rf"\b(?:const|let|var)\s+{new}\s*=", source)
        )
        named = len(re.findall(rf"(?<![\w$.]){new}\b", source))
        found = f"{new} defined={defined}, named {named} time(s)"
        return "" if defined and named >= named_at_least else found

    return test


def no_text(_: str) -> str:
    """A `js_edited` test with no text to look for: node checks the behaviour."""
    return ""


def node_runs(script: str, argument: str, cwd: Path, what: str) -> str:
    """'' when `node -e script argument` exits 0 in `cwd` (a script of asserts on an edited
    package), else `what` followed by node's error line and what it saw."""
    try:
        done = subprocess.run(
            ["node", "-e", script, argument],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            cwd=cwd,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"node did not run: {exc}"
    if done.returncode == 0:
        return ""
    said = done.stderr.splitlines()
    # the error's own line (`AssertionError [ERR_ASSERTION]: <what>`), then what it saw
    lines = [line for line in said if re.match(r"[A-Z]\w*Error\b", line)] or [done.stderr]
    lines += [line.strip() for line in said if re.match(r"\s+(actual|expected): ", line)]
    return f"{what}: {' '.join(lines).strip()[:300]}"


def js_edited(rel: str, keep: tuple[str, ...], test: Callable[[str], str]) -> Check:
    """`edited` for JavaScript: right when `rel` passes `node --check`, still defines `keep`,
    and `test(source)` finds no fault."""

    def check(workspace: Path, _: str) -> tuple[bool, str]:
        path = workspace / rel
        try:
            source = path.read_text(encoding="utf-8")
        except (OSError, ValueError) as exc:
            return False, f"{rel} unreadable: {exc}"
        problem = node_check(path)
        if problem:
            return False, problem
        lost = [name for name in keep if not js_defines(source, name)]
        if lost:
            return False, f"{rel} lost {lost}"
        fault = test(source)
        return not fault, fault or f"{rel} edited and passes node --check"

    return check


# -- Go: the module built and tested, and the diff against the pristine tree ------------------


GO_COMMANDS = (("build", "./..."), ("vet", "./..."), ("test", "-count=1", "./..."))


def go_env() -> dict[str, str]:
    """Offline and local: no module proxy, no checksum database, no toolchain switch (the
    pinned module has no dependencies); the build cache kept beside the projects so the
    standard library is compiled once."""
    cache = fetch.cache_root()
    return {
        **os.environ,
        "GOFLAGS": "-mod=mod",
        "GOTOOLCHAIN": "local",
        "GOPROXY": "off",
        "GOSUMDB": "off",
        "GONOSUMDB": "*",
        "GOWORK": "off",
        "GO111MODULE": "on",
        "GOENV": "off",
        "GOTELEMETRY": "off",
        "CGO_ENABLED": "0",
        "GOCACHE": str(cache / "go-build"),
        "GOPATH": str(cache / "gopath"),
    }


def go_check(workspace: Path) -> str:
    """'' when `go build ./...`, `go vet ./...` and `go test ./...` all pass in the module at
    `workspace`, else the first that failed with its first lines of output."""
    for args in GO_COMMANDS:
        try:
            done = subprocess.run(
                ["go", *args],
                cwd=workspace,
                env=go_env(),
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"go {args[0]} did not run: {exc}"
        if done.returncode != 0:
            said = [line for line in (done.stderr + done.stdout).splitlines() if line.strip()]
            return f"go {args[0]} failed: {' | '.join(said[:4])[:400]}"
    return ""


@dataclass(frozen=True)
class FileDiff:
    """How a file of the workspace differs from the pristine tree."""

    status: str  # "changed" | "new" | "deleted"
    removed: tuple[str, ...]
    added: tuple[str, ...]


def source_diff(
    pristine: dict[str, str], workspace: Path, suffixes: tuple[str, ...]
) -> dict[str, FileDiff]:
    """The files ending in `suffixes` that differ between `pristine` (path: text) and the
    workspace, with the lines removed and added (`difflib`, as `diff -u` counts them)."""
    here = {
        path.relative_to(workspace).as_posix(): path
        for path in workspace.rglob("*")
        if path.is_file() and path.name.endswith(suffixes)
    }
    out: dict[str, FileDiff] = {}
    for rel in sorted(set(pristine) | set(here)):
        old = pristine.get(rel)
        try:
            new = here[rel].read_text(encoding="utf-8") if rel in here else None
        except (OSError, ValueError):
            new = ""
        if old == new:
            continue
        before, after = (old or "").splitlines(), (new or "").splitlines()
        lines = list(difflib.unified_diff(before, after, lineterm="", n=0))[2:]
        out[rel] = FileDiff(
            "new" if old is None else "deleted" if new is None else "changed",
            tuple(line[1:] for line in lines if line.startswith("-")),
            tuple(line[1:] for line in lines if line.startswith("+")),
        )
    return out


def go_edited(
    pristine: Callable[[], dict[str, str]],
    files: tuple[str, ...],
    test: Callable[[dict[str, str], dict[str, FileDiff]], str],
    most: int = 30,
) -> Check:
    """Right when the diff against the pristine tree (`pristine()`: its `.go` files and
    go.mod) changes only `files`, deletes nothing, changes at most `most` lines (removed plus
    added), `test(sources, diff)` finds no fault (`sources`: the workspace's `.go` files by
    path) and `go build`, `go vet` and `go test` pass (`go_check`)."""

    def check(workspace: Path, _: str) -> tuple[bool, str]:
        diff = source_diff(pristine(), workspace, GO_SUFFIXES)
        if not diff:
            return False, "no Go file changed"
        deleted = [rel for rel, d in diff.items() if d.status == "deleted"]
        if deleted:
            return False, f"deleted {deleted}"
        others = [rel for rel in diff if rel not in files]
        if others:
            return False, f"changed {others} too (expected only {list(files)})"
        lines = sum(len(d.removed) + len(d.added) for d in diff.values())
        if lines > most:
            return False, f"{lines} lines changed (at most {most} expected)"
        sources = {}
        for path in workspace.rglob("*.go"):
            try:
                sources[path.relative_to(workspace).as_posix()] = path.read_text(encoding="utf-8")
            except (OSError, ValueError) as exc:
                return False, f"{path.name} unreadable: {exc}"
        fault = test(sources, diff) or go_check(workspace)
        changed = ", ".join(diff)
        return not fault, fault or f"{changed} edited ({lines} lines); go build, vet, test pass"

    return check


GO_SUFFIXES = (".go", "go.mod", "go.sum")
