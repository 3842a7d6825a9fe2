"""The cost of the grounding check of a local answer on a 10,000-file workspace.

Makes a synthetic workspace in a temp folder: 10,000 small source files of a few hundred
bytes to a few KB (functions, classes or structs and their methods, constants, command-line
options, imports) in Python (30 %), TypeScript (20 %), JavaScript (15 %), Go (15 %), Rust
(10 %) and Java (10 %), in 20 packages of 10 subpackages each, plus a `.gitignore`d build
folder and a `node_modules`. Then times:

* `WorkspaceIndex.refresh()` cold (a new index; the files are in the page cache), warm
  (nothing changed) and after 10 files changed;
* the check of an agent turn's final answer with a warm index (`AgentAnswers.judge`: the
  same `check_answer` as a guided answer's, against what the turn's tools showed), over ~50
  realistic answers (general Python answers, right answers about the workspace quoting what
  they read, wrong ones naming files, functions and options that do not exist), each timed
  `--repeat` times; prints the median and p95 (target: median <= 50 ms), and how many
  answers of each kind were flagged (general and right ones should be 0, wrong ones all);
* the guided turn's two steps (issue 38) on the same answers: `Locator.locate(question)`
  (its first run in a process splits and stems every file's tokens once; later runs reuse
  them) and `check_answer(reply)`, each answer given as the guided shape (a right one with
  a citation of its module's definition line, the others with none); the same counts.

    .venv/bin/python bench/grounding.py [--files 10000] [--repeat 20]

(about 5 s on an idle 2-core machine).
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from milk_lsp.guided.answers import AgentAnswers
from milk_lsp.guided.locate import DiskTexts, Locator
from milk_lsp.guided.shape import Citation, GuidedReply
from milk_lsp.guided.verify import check_answer
from milk_lsp.workspace.index import WorkspaceIndex

VERBS = [
    "parse",
    "load",
    "save",
    "render",
    "build",
    "fetch",
    "merge",
    "split",
    "flush",
    "close",
    "open",
    "check",
    "apply",
]
NOUNS = [
    "record",
    "order",
    "invoice",
    "user",
    "config",
    "report",
    "cache",
    "token",
    "session",
    "batch",
    "item",
    "rule",
]
PACKAGES = 20
SUBPACKAGES = 10


@dataclass(frozen=True)
class Module:
    path: str
    functions: list[str]
    classes: list[str]
    options: list[str]
    text: str
    fence: str
    """The language's name in a Markdown code fence."""
    signature: str
    """How a function of it is declared ({} is its name)."""


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(part.title() for part in rest)


def _pascal(snake: str) -> str:
    return "".join(part.title() for part in snake.split("_"))


def python_text(functions: list[str], classes: list[str], options: list[str], n: int) -> str:
    lines = ["import os", "from pathlib import Path", "", f"LIMIT_{n} = 10", ""]
    for cls in classes:
        lines += [f"class {cls}:", "    def __init__(self, root):", "        self.root = root"]
        lines += ["", "    def flush(self):", "        return len(self.root)", ""]
    for fn in functions:
        lines += [f"def {fn}(items, limit=10):", f'    """{fn.replace("_", " ")}."""']
        lines += ["    values = [v for v in items if v][:limit]", "    return values", ""]
    if options:
        lines += ["def cli(parser):"]
        lines += [f'    parser.add_argument("{option}", type=int)' for option in options]
    return "\n".join(lines)


def javascript_text(
    functions: list[str], classes: list[str], options: list[str], n: int, typed: bool
) -> str:
    items = "items: string[], limit = 10): string[]" if typed else "items, limit = 10)"
    lines = ['import fs from "node:fs";', 'import { program } from "commander";', ""]
    lines += [f"export const LIMIT_{n} = 10;", ""]
    for cls in classes:
        field = "  private root: string;\n\n" if typed else ""
        root = "root: string" if typed else "root"
        lines += [f"export class {cls} {{", f"{field}  constructor({root}) {{"]
        lines += ["    this.root = root;", "  }", "", "  flush() {"]
        lines += ["    return this.root.length;", "  }", "}", ""]
    for k, fn in enumerate(functions):
        if k % 3 == 2:
            lines += [
                f"export const {fn} = ({items} =>",
                "  items.filter(Boolean).slice(0, limit);",
            ]
        else:
            lines += [f"export function {fn}({items} {{"]
            lines += ["  return items.filter((v) => v).slice(0, limit);", "}"]
        lines.append("")
    for option in options:
        lines.append(f'program.option("{option} <n>", "how many", parseInt);')
    return "\n".join(lines)


def go_text(functions: list[str], classes: list[str], n: int) -> str:
    lines = [f"package pkg{n % 7}", "", 'import "strings"', "", f"const Limit{n} = 10", ""]
    for cls in classes:
        lines += [f"type {cls} struct {{", "\troot string", "}", ""]
        lines += [f"func (s *{cls}) Flush() int {{", "\treturn len(s.root)", "}", ""]
    for fn in functions:
        lines += [f"func {fn}(items []string, limit int) []string {{", "\tvar values []string"]
        lines += ["\tfor _, v := range items {", '\t\tif strings.TrimSpace(v) != "" {']
        lines += ["\t\t\tvalues = append(values, v)", "\t\t}", "\t}"]
        lines += ["\treturn values[:min(limit, len(values))]", "}", ""]
    return "\n".join(lines)


def rust_text(functions: list[str], classes: list[str], n: int) -> str:
    lines = ["use std::path::PathBuf;", "", f"pub const LIMIT_{n}: usize = 10;", ""]
    for cls in classes:
        lines += [f"pub struct {cls} {{", "    root: PathBuf,", "}", ""]
        lines += [f"impl {cls} {{", "    pub fn flush(&self) -> usize {"]
        lines += ["        self.root.as_os_str().len()", "    }", "}", ""]
    for fn in functions:
        lines += [f"pub fn {fn}(items: &[String], limit: usize) -> Vec<String> {{"]
        lines += ["    items.iter().filter(|v| !v.is_empty()).take(limit).cloned().collect()"]
        lines += ["}", ""]
    return "\n".join(lines)


def java_text(functions: list[str], classes: list[str], options: list[str], n: int) -> str:
    main = classes[0] if classes else f"Helpers{n}"
    lines = [f"package pkg{n % 7};", "", "import java.util.List;", ""]
    lines += [f"public class {main} {{", f"    public static final int LIMIT_{n} = 10;"]
    lines += ["    private final String root;", ""]
    lines += [f"    public {main}(String root) {{", "        this.root = root;", "    }", ""]
    for option in options:
        lines += [f'    @Option(names = "{option}")', "    int count;", ""]
    lines += ["    public int flush() {", "        return root.length();", "    }", ""]
    for fn in functions:
        lines += [f"    public static List<String> {fn}(List<String> items, int limit) {{"]
        lines += ["        return items.stream().filter(v -> !v.isEmpty()).limit(limit).toList();"]
        lines += ["    }", ""]
    lines.append("}")
    return "\n".join(lines)


LANGUAGE_SHARES = [
    ("py", 30),
    ("ts", 20),
    ("js", 15),
    ("go", 15),
    ("rs", 10),
    ("java", 10),
]
"""File extension, percent of the files."""
FENCES = {"py": "python", "ts": "typescript", "js": "javascript", "go": "go", "rs": "rust"}
SIGNATURES = {
    "py": "def {}(...):\n    ...",
    "ts": "export function {}(...) {{ ... }}",
    "js": "export function {}(...) {{ ... }}",
    "go": "func {}(...) {{ ... }}",
    "rs": "pub fn {}(...) {{ ... }}",
    "java": "public static List<String> {}(...) {{ ... }}",
}


def module_text(rng: random.Random, n: int, extension: str) -> Module:
    """One file of the language of `extension` (path left empty)."""
    names = [f"{rng.choice(VERBS)}_{rng.choice(NOUNS)}_{n}_{k}" for k in range(rng.randint(1, 12))]
    classes = [f"{rng.choice(NOUNS).title()}Store{n}_{k}" for k in range(rng.randint(0, 2))]
    options = [f"--{rng.choice(VERBS)}-{rng.choice(NOUNS)}-{n}" for _ in range(rng.randint(0, 1))]
    header = f"{rng.choice(VERBS)}s {rng.choice(NOUNS)}s."
    if extension == "py":
        functions = names
        text = f'"""Module {n}: {header}"""\n\n' + python_text(functions, classes, options, n)
    elif extension in ("js", "ts"):
        functions = [_camel(name) for name in names]
        body = javascript_text(functions, classes, options, n, typed=extension == "ts")
        text = f"/** Module {n}: {header} */\n" + body
    elif extension == "go":
        functions, options = [_pascal(name) for name in names], []
        text = f"// Module {n}: {header}\n" + go_text(functions, classes, n)
    elif extension == "rs":
        functions, options = names, []
        text = f"//! Module {n}: {header}\n\n" + rust_text(functions, classes, n)
    else:
        functions, classes = [_camel(name) for name in names], classes[:1]
        text = f"/** Module {n}: {header} */\n" + java_text(functions, classes, options, n)
    return Module(
        "", functions, classes, options, text + "\n", FENCES.get(extension, extension),
        SIGNATURES[extension],
    )  # fmt: skip


def make_workspace(root: Path, files: int, rng: random.Random) -> list[Module]:
    modules: list[Module] = []
    per_folder = -(-files // (PACKAGES * SUBPACKAGES))
    extensions = [extension for extension, share in LANGUAGE_SHARES for _ in range(share)]
    n = 0
    for p in range(PACKAGES):
        for s in range(SUBPACKAGES):
            folder = root / f"pkg{p}" / f"sub{s}"
            folder.mkdir(parents=True)
            for m in range(per_folder):
                if n >= files:
                    break
                extension = extensions[n % len(extensions)]
                module = module_text(rng, n, extension)
                stem = f"mod{m}"
                if extension == "java":  # a public class is in the file of its name
                    stem = module.classes[0] if module.classes else f"Helpers{n}"
                path = f"pkg{p}/sub{s}/{stem}.{extension}"
                (root / path).write_text(module.text)
                modules.append(replace(module, path=path))
                n += 1
    (root / ".gitignore").write_text("build/\n*.log\n")
    for skipped in ("build", "node_modules/lib"):
        (root / skipped).mkdir(parents=True)
        (root / skipped / "x.py").write_text("ignored_token = 1\n")
    return modules


@dataclass(frozen=True)
class Case:
    kind: str
    question: str
    answer: str
    evidence: tuple[str, ...]


GENERAL = [
    (
        "How do I reverse a list in Python?",
        "Use `reversed(items)` to iterate backwards, `items[::-1]` for a reversed copy, or "
        "`list.reverse()` in place:\n\n```python\nitems = [1, 2, 3]\nitems.reverse()\n```",
    ),
    (
        "How do I sort a dict by value?",
        "`sorted(d.items(), key=lambda kv: kv[1])` gives pairs; wrap it in `dict(...)` to "
        "get a dict back (insertion order is kept since Python 3.7).",
    ),
    (
        "How do I read a JSON file?",
        "```python\nimport json\nfrom pathlib import Path\n\ndata = json.loads(Path("
        "'config.json').read_text())\n```\n\n`json.loads` parses the text; `json.load(f)` "
        "takes an open file.",
    ),
    (
        "What's the difference between a list and a tuple?",
        "A list is mutable (`append`, `extend`, `pop`); a tuple is immutable and hashable, "
        "so it can be a dict key. See https://docs.python.org/3/tutorial/datastructures.html.",
    ),
    (
        "How do I upgrade pip?",
        "Run `python -m pip install --upgrade pip` (pip 24.2 is current).",
    ),
    (
        "How do I write a context manager?",
        "Use `contextlib.contextmanager`:\n\n```python\nfrom contextlib import contextmanager"
        "\n\n@contextmanager\ndef opened(path):\n    f = open(path)\n    try:\n        yield f"
        "\n    finally:\n        f.close()\n```\n\nThen `with opened('a.txt') as f:` works.",
    ),
    (
        "How do I count words?",
        "`collections.Counter(text.split())` counts them; `.most_common(3)` gives the top three.",
    ),
    (
        "How do I make a dataclass?",
        "```python\nfrom dataclasses import dataclass\n\n@dataclass\nclass Point:\n    x: int"
        "\n    y: int\n```\n\n`Point(1, 2)` then has `__eq__` and `__repr__` for free.",
    ),
    (
        "How do I run a shell command?",
        "`subprocess.run(['ls', '-l'], check=True, capture_output=True)` returns a "
        "`CompletedProcess`; read `.stdout`.",
    ),
    (
        "How do I fix my last git commit?",
        "`git commit --amend --no-edit`, then `git push --force-with-lease`.",
    ),
    (
        "What is a generator?",
        "A function with `yield`; calling it returns an iterator. `next(gen)` advances it, "
        "and `itertools.islice(gen, 5)` takes five values.",
    ),
    (
        "How do I reverse a string?",
        "`text[::-1]`, or `''.join(reversed(text))`.",
    ),
    (
        "How do I flatten a list of lists?",
        "`[x for row in rows for x in row]` or `list(itertools.chain.from_iterable(rows))`.",
    ),
    (
        "How do I merge two dicts?",
        "`a | b` (Python 3.9+) or `{**a, **b}`; `a.update(b)` changes `a` in place.",
    ),
    (
        "How do I time code?",
        "`time.perf_counter()` before and after, or `python -m timeit -n 100 'sum(range(9))'`.",
    ),
]


def build_cases(modules: list[Module], rng: random.Random) -> list[Case]:
    cases = [Case("general", q, a, (q,)) for q, a in GENERAL]
    with_options = [m for m in modules if m.options]
    with_classes = [m for m in modules if m.classes and not m.path.endswith(".go")]
    for i in range(20):  # right answers: what was read, and what exists
        module = rng.choice(modules)
        fn = rng.choice(module.functions)
        folder = module.path.rsplit("/", 1)[0]
        answers = [
            f"`{fn}()` in {module.path} keeps at most `limit` values and returns them.",
            f"It is defined in `{module.path}`:\n\n```{module.fence}\n"
            + module.signature.format(fn)
            + f"\n```\n\n`{fn}` drops empty values first.",
            f"The files are under `{folder}/`; `{fn}` is the one you want.",
        ]
        if i % 4 == 1:
            option_module = rng.choice(with_options)
            answers = [
                f"Pass `{option_module.options[0]}` (see {option_module.path}); it is an int."
            ]
        if i % 4 == 2:
            class_module = rng.choice(with_classes)
            cls = class_module.classes[0]
            answers = [f"`{cls}.flush()` returns the length of `self.root` ({class_module.path})."]
        question = f"what does {module.path.rsplit('/', 1)[-1]} in {folder} do?"
        evidence = (question, module.text) if i % 2 else (question,)
        cases.append(Case("right", question, rng.choice(answers), evidence))
    wrong = [
        "The entry point is `src/app.py`, which calls `create_app()`.",
        "Totals are computed by `compute_total()` in `billing/totals.py`.",
        "The helpers live in the `utils` module (`utils.py`).",
        "Run it with `python -m pkg0 --frobnicate` to enable caching.",
        "Start the server with --listen-port 8080.",
        "`RecordManager.flush_all()` writes everything to disk.",
        "It is configured in `settings.yaml` under `cache_ttl_seconds`.",
        "`pkg0/sub0/helpers.py` defines `normalize_record`.",
        "Tests are in `tests/test_records.py`; run `pytest tests/`.",
        "The `SessionFactory` class in pkg3/session.py builds sessions.",
        "Call `load_everything(path)` from `loader.py` first.",
        "See `docs/architecture.md` for the `EventBus` design.",
        "The `--dry-run` flag of `scripts/deploy.sh` skips the upload.",
        "It reads `config/defaults.toml` through `read_defaults()`.",
        "`OrderService.place_order` validates and saves the order.",
    ]
    for answer in wrong:
        module = rng.choice(modules)
        question = f"how does `{rng.choice(module.functions)}` save records?"
        cases.append(Case("wrong", question, answer, (question, "No matches for 'save'.")))
    return cases


def ms(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return (
        f"median {statistics.median(ordered) * 1000:.2f} ms, p95 {p95 * 1000:.2f} ms "
        f"(min {ordered[0] * 1000:.2f}, max {ordered[-1] * 1000:.2f}; n={len(ordered)})"
    )


def timed(run: Callable[[], object]) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def rss_mb() -> float:
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * 4096 / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=20)
    options = parser.parse_args()
    rng = random.Random(17)
    root = Path(tempfile.mkdtemp(prefix="milk-grounding-"))
    try:
        started = time.perf_counter()
        modules = make_workspace(root / "ws", options.files, rng)
        size = sum(len(m.text) for m in modules)
        print(
            f"workspace: {len(modules):,} files, {size / 1e6:.1f} MB "
            f"({min(len(m.text) for m in modules)}-{max(len(m.text) for m in modules)} bytes), "
            f"written in {time.perf_counter() - started:.1f} s"
        )
        time.sleep(0.2)  # past the window in which a just-written file is read again

        before = rss_mb()
        index = WorkspaceIndex(root / "ws")
        cold = [timed(index.refresh)]
        grew = rss_mb() - before
        for _ in range(2):
            index = WorkspaceIndex(root / "ws")
            cold.append(timed(index.refresh))
        print(f"refresh cold ({index.files:,} files, {index.files_read:,} read): {ms(cold)}")
        print(f"  the process grew by {grew:.0f} MB for the first index")

        warm = [timed(index.refresh) for _ in range(10)]
        print(f"refresh warm (nothing changed, {index.files_read} read): {ms(warm)}")

        changed: list[float] = []
        for round_ in range(10):
            for module in rng.sample(modules, 10):
                (root / "ws" / module.path).write_text(module.text + f"changed_{round_} = 1\n")
            time.sleep(0.15)
            changed.append(timed(index.refresh))
        print(f"refresh after 10 files changed ({index.files_read} read): {ms(changed)}")

        cases = build_cases(modules, rng)
        first_case = cases[0]
        first = timed(
            lambda: AgentAnswers(first_case.question, first_case.question, index).judge(
                first_case.answer, first_case.evidence, looked=True, finish=None
            )
        )
        print(f"first check in a process (builds the name lists): {first * 1000:.1f} ms")
        samples: list[float] = []
        flagged: dict[str, int] = {}
        about: dict[str, int] = {}
        for case in cases:
            for _ in range(options.repeat):
                started = time.perf_counter()
                answers = AgentAnswers(case.question, case.question, index)
                looked = bool(case.evidence)
                grounded = answers.judge(case.answer, case.evidence, looked=looked, finish=None)
                samples.append(time.perf_counter() - started)
            missing = grounded.problems or grounded.unseen or grounded.uncited
            flagged[case.kind] = flagged.get(case.kind, 0) + bool(missing)
            about[case.kind] = about.get(case.kind, 0) + answers.about_workspace
        print(
            f"agent answer check per answer (AgentAnswers: asked + check_answer, "
            f"{len(cases)} answers x {options.repeat}): {ms(samples)} (target median <= 50 ms)"
        )
        for kind in ("general", "right", "wrong"):
            total = sum(case.kind == kind for case in cases)
            print(
                f"  {kind:>7} answers: {flagged.get(kind, 0)} of {total} flagged, "
                f"{about.get(kind, 0)} of {total} questions about the workspace"
            )
        guided_checks(index, root / "ws", cases, modules, options.repeat)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _reply(case: Case, modules: list[Module]) -> GuidedReply:
    """The answer in the guided shape: a right one cites, as a good model would, the line
    of each name of the workspace it writes as code (for `Store.flush()`, the class's and
    the method's)."""
    citations: list[Citation] = []
    if case.kind == "right":
        named = set(
            re.findall(r"[A-Za-z_][A-Za-z0-9_]*", " ".join(re.findall(r"`([^`]+)`", case.answer)))
        )
        for module in modules:
            if module.path not in case.answer and not named & {*module.functions, *module.classes}:
                continue
            lines = module.text.splitlines()
            for name in sorted(named):
                for number, line in enumerate(lines, 1):
                    if re.search(rf"\b{re.escape(name)}\b", line):
                        citations.append(Citation(path=module.path, line=number, quote=line))
                        break
    return GuidedReply(kind="answer", answer=case.answer, citations=citations[:6])


def guided_checks(
    index: WorkspaceIndex, root: Path, cases: list[Case], modules: list[Module], repeat: int
) -> None:
    import asyncio

    locator = Locator(index)
    texts = DiskTexts(root)
    first = timed(lambda: asyncio.run(locator.locate(cases[0].question, texts)))
    print(
        f"guided: first locate in a process (splits and stems every file's tokens): "
        f"{first * 1000:.0f} ms"
    )
    locates: list[float] = []
    checks: list[float] = []
    flagged: dict[str, int] = {}
    for case in cases:
        reply = _reply(case, modules)
        for _ in range(max(1, repeat // 4)):
            started = time.perf_counter()
            located = asyncio.run(locator.locate(case.question, texts))
            locates.append(time.perf_counter() - started)
        for _ in range(repeat):
            started = time.perf_counter()
            verdict = check_answer(reply, located, index, case.question)
            checks.append(time.perf_counter() - started)
        flagged[case.kind] = flagged.get(case.kind, 0) + (not verdict.ok)
    print(f"guided locate per question ({len(cases)} questions): {ms(locates)}")
    print(
        f"guided check per answer ({len(cases)} answers x {repeat}): {ms(checks)}"
        " (target median <= 50 ms)"
    )
    for kind in ("general", "right", "wrong"):
        total = sum(case.kind == kind for case in cases)
        print(f"  {kind:>7} answers: {flagged.get(kind, 0)} of {total} flagged")


if __name__ == "__main__":
    main()
