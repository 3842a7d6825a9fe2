"""google/uuid 1.3.0 (BSD-3-Clause, Go) and its tasks for `bench/real_tasks.py`.

The fourth real package, and the first in Go: Debian 12's `golang-github-google-uuid-dev`
1.3.0-1, fetched with `apt-get download` (pinned by the .deb's sha256) and unpacked with
`dpkg-deb -x`; the source under `usr/share/gocode/src/github.com/google/uuid` is checked file
by file against a pinned digest (`real_tasks_suite.tree_digest`) and laid out as the Go module
`github.com/google/uuid` (its go.mod ships without a `go` line: the one of the toolchain here is
added, `real_tasks_suite.debian_source`). About 1,000 lines in 15 files and 1,200 of tests, no
dependencies. Its names are what small models guess wrong: unexported one-line helpers
(`xtob`, `randomBits`), bit twiddling that sets the version (`| 0x40 // Version 4`), a
constant written as a product (`16 * 16`), an error message a test compares word for word.

Questions come in English, German, Spanish, Chinese and Russian, each checked by the fact it
asks for appearing in the reply; edits are checked by the diff against the pristine tree
(only the files named, nothing deleted, a bounded number of lines) and by `go build ./...`,
`go vet ./...` and `go test ./...` of the edited module, offline (`real_tasks_suite.go_edited`).

Go itself: when `go` is missing, `ensure_go` (the project's `prepare`, run before the tasks)
installs Debian's `golang-go` with `apt-get install -y golang-go` when the bench runs as root,
and otherwise stops with that command to run.

    .venv/bin/python bench/real_tasks_uuid.py --self-test

shows that every edit check fails on the pristine package, passes with a correct edit made by
hand and fails with a few plausible wrong ones, and that every question's check takes a right
reply and refuses a wrong one.
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

if __name__ == "__main__":  # run as a script: the repository's packages first
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.real_tasks_suite import (
    GO_SUFFIXES,
    ClaudeEdit,
    FileDiff,
    Project,
    Task,
    fetch_project,
    for_claude,
    go_check,
    go_edited,
    lay_out,
    mentions,
    pristine_sources,
)

UUID_GO = "uuid.go"
UTIL = "util.go"
NODE = "node.go"
TIME = "time.go"
HASH = "hash.go"
VERSION4 = "version4.go"
UUID_TEST = "uuid_test.go"


def ensure_go() -> None:
    """The Go toolchain on PATH: Debian's `golang-go`, installed when missing and root."""
    if shutil.which("go"):
        return
    install = ["apt-get", "install", "-y", "-q", "golang-go"]
    if os.geteuid() != 0:
        raise SystemExit(
            "go is not installed: the Go edit checks need it. Install Debian's toolchain "
            f"(`sudo {' '.join(install[:3])} golang-go`) and start the bench again."
        )
    print(f"go is not installed: {' '.join(install)}", flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    done = subprocess.run(install, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:  # no package lists yet: read them once and try again
        subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True, check=False)
        done = subprocess.run(install, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0 or not shutil.which("go"):
        raise SystemExit(f"{' '.join(install)} failed:\n{done.stderr[-2000:]}")


@functools.cache
def _pristine() -> dict[str, str]:
    """The pinned module's `.go` files and go.mod, by path: what the diffs are taken from."""
    return pristine_sources(fetch_project(UUID), GO_SUFFIXES)


def _code(text: str) -> str:
    """Go source without its `//` comments (enough for these files: no `//` in a string)."""
    return re.sub(r"//[^\n]*", "", text)


def _xtob_renamed(sources: dict[str, str], _: dict[str, FileDiff]) -> str:
    left = sorted(rel for rel, text in sources.items() if re.search(r"\bxtob\b", _code(text)))
    if left:
        return f"xtob still used in {left}"
    if not re.search(r"(?m)^func\s+hexPairToByte\s*\(", sources.get(UTIL, "")):
        return f"{UTIL} does not define func hexPairToByte"
    uses = len(re.findall(r"\bhexPairToByte\s*\(", _code(sources.get(UUID_GO, ""))))
    return "" if uses >= 4 else f"{UUID_GO} calls hexPairToByte {uses} time(s), xtob had 4 calls"


def _bits_reader(sources: dict[str, str], _: dict[str, FileDiff]) -> str:
    util = _code(sources.get(UTIL, ""))
    head = re.search(r"func\s+randomBits\s*\(\s*b\s+\[\]byte\s*,\s*(\w+)\s+io\.Reader\s*\)", util)
    if head is None:
        return "randomBits(b []byte, r io.Reader) not found"
    if not re.search(rf"io\.ReadFull\(\s*{head.group(1)}\s*,\s*b\s*\)", util):
        return f"randomBits does not read from {head.group(1)}"
    for rel in (NODE, TIME):
        if not re.search(r"\brandomBits\([^()]*,\s*rander\s*\)", _code(sources.get(rel, ""))):
            return f"{rel} does not pass rander to randomBits"
    return ""


def _get_time_documented(sources: dict[str, str], diff: dict[str, FileDiff]) -> str:
    lines = sources.get(TIME, "").splitlines()
    at = next((n for n, line in enumerate(lines) if re.match(r"func\s+getTime\s*\(", line)), -1)
    if at < 0:
        return "func getTime is gone"
    above = lines[at - 1].strip() if at > 0 else ""
    if not (above.startswith("//") and len(above.strip("/ \t")) >= 3):
        return "no // doc comment right above func getTime"
    if diff[TIME].removed:
        return f"lines removed from {TIME}, not only a comment added: {list(diff[TIME].removed)}"
    return ""


def _pool_size(sources: dict[str, str], _: dict[str, FileDiff]) -> str:
    text = _code(sources.get(UUID_GO, ""))
    found = re.search(r"const\s+randPoolSize\s*=\s*([^\n]*)", text)
    if found is None:
        return "const randPoolSize is gone"
    value = found.group(1).strip()
    doubled = re.fullmatch(r"16\s*\*\s*32|32\s*\*\s*16|512", value)
    return "" if doubled else f"randPoolSize = {value}"


def _length_error(sources: dict[str, str], _: dict[str, FileDiff]) -> str:
    """The message changed in uuid.go; the test that compares it is `go test`'s to check."""
    source = sources.get(UUID_GO, "")
    if "invalid UUID length" in source:
        return f"{UUID_GO} still says invalid UUID length"
    return "" if '"invalid UUID string length: %d"' in source else f"{UUID_GO}: no new message"


UUID = Project(
    "golang-github-google-uuid-dev",
    "1.3.0-1",
    "f79ead959ee04842fcb410347e7023a3c4c357c17f77b9bb13cff30ef4353351",
    (
        Task(
            "where-uuid-type",
            "question",
            "In which file of this project is the UUID type defined? Give its path.",
            mentions(r"(?<![\w-])uuid\.go(?!\w)"),
        ),
        Task(
            "random-version-de",
            "question",
            "Welche UUID-Version erzeugt die Funktion NewRandom?",
            mentions(r"(?<![\d.])4(?!\d|\.\d)"),
        ),
        Task(
            "parse-forms-es",
            "question",
            "¿Qué formatos de texto acepta la función Parse? Enuméralos.",
            mentions(r"urn:uuid", r"\{|microsoft"),
        ),
        Task(
            "uuid-bytes-zh",
            "question",
            "UUID 类型占多少字节？",  # noqa: RUF001
            mentions(r"(?<![\d.])16(?!\d|\.\d)"),
        ),
        Task(
            "sha1-version-ru",
            "question",
            "Какую версию UUID создаёт функция NewSHA1?",
            mentions(r"(?<![\d.])5(?!\d|\.\d)"),
        ),
        Task(
            "sha1-input",
            "question",
            "What does NewSHA1 feed into the SHA-1 hash to make the UUID?",
            mentions(r"space", r"data"),
        ),
        Task(
            "rename-xtob",
            "edit",
            "Rename the unexported helper xtob in util.go to hexPairToByte, with all its uses.",
            go_edited(_pristine, (UTIL, UUID_GO), _xtob_renamed),
        ),
        Task(
            "bits-reader",
            "edit",
            "In util.go add a parameter r io.Reader to the function randomBits so that it reads "
            "from r instead of the package variable rander, and pass rander at every call of "
            "randomBits.",
            go_edited(_pristine, (UTIL, NODE, TIME), _bits_reader),
        ),
        Task(
            "doc-get-time",
            "edit",
            "Add a doc comment to the unexported function getTime in time.go.",
            go_edited(_pristine, (TIME,), _get_time_documented, most=6),
        ),
        Task(
            "pool-size-de",
            "edit",
            "Ändere in uuid.go die Konstante randPoolSize von 16 * 16 auf 16 * 32.",
            go_edited(_pristine, (UUID_GO,), _pool_size, most=4),
        ),
        Task(
            "length-error-es",
            "edit",
            'En uuid.go cambia el mensaje de error de invalidLengthError de "invalid UUID '
            'length: %d" a "invalid UUID string length: %d", y actualiza la prueba de '
            "uuid_test.go que comprueba ese mensaje.",
            go_edited(_pristine, (UUID_GO, UUID_TEST), _length_error, most=8),
        ),
        Task(
            "v6-v7",
            "claude",
            "Add UUID versions 6 and 7 (RFC 9562) to the package: NewV6 and NewV7 with a "
            "monotonic timestamp and counter shared safely between goroutines, Time() and "
            "ClockSequence() decoding for both, the NullUUID and SQL paths, table-driven tests "
            "and benchmarks for each, and an updated package doc.",
            for_claude(),
        ),
    ),
    registry="debian",
    tree="usr/share/gocode/src/github.com/google/uuid",
    tree_sha256="a6780a0ea040709db1c8d6fb0880d281137da3fad1820ace1abf901bdc895e6a",
    go_module="github.com/google/uuid",
    prepare=ensure_go,
)


# -- the self-test: every check against the pristine tree, hand-made edits and replies ----------

HAND_MADE: dict[str, tuple[ClaudeEdit, ...]] = {
    "rename-xtob": (
        ClaudeEdit(UTIL, "xtob", "hexPairToByte", every=True),
        ClaudeEdit(UUID_GO, "xtob(", "hexPairToByte(", every=True),
    ),
    "bits-reader": (
        ClaudeEdit(
            UTIL,
            "func randomBits(b []byte) {\n\tif _, err := io.ReadFull(rander, b)",
            "func randomBits(b []byte, r io.Reader) {\n\tif _, err := io.ReadFull(r, b)",
        ),
        ClaudeEdit(NODE, "randomBits(nodeID[:])", "randomBits(nodeID[:], rander)"),
        ClaudeEdit(TIME, "randomBits(b[:])", "randomBits(b[:], rander)"),
    ),
    "doc-get-time": (
        ClaudeEdit(
            TIME,
            "\nfunc getTime(",
            "\n// getTime returns the current Time and clock sequence; the caller holds timeMu.\n"
            "func getTime(",
        ),
    ),
    "pool-size-de": (
        ClaudeEdit(UUID_GO, "const randPoolSize = 16 * 16", "const randPoolSize = 16 * 32"),
    ),
    "length-error-es": (
        ClaudeEdit(UUID_GO, '"invalid UUID length: %d"', '"invalid UUID string length: %d"'),
        ClaudeEdit(UUID_TEST, '"invalid UUID length: 5"', '"invalid UUID string length: 5"'),
    ),
}
"""A correct edit per edit task, as a careful person would make it."""

WRONG_EDITS: dict[str, tuple[str, tuple[ClaudeEdit, ...]]] = {
    "rename, calls left": ("rename-xtob", HAND_MADE["rename-xtob"][:1]),
    "parameter, calls not updated": ("bits-reader", HAND_MADE["bits-reader"][:1]),
    "comment on GetTime": (
        "doc-get-time",
        (ClaudeEdit(TIME, "\nfunc GetTime(", "\n// GetTime, again.\nfunc GetTime("),),
    ),
    "comment, a blank line between": (
        "doc-get-time",
        (ClaudeEdit(TIME, "\nfunc getTime(", "\n// getTime returns the time.\n\nfunc getTime("),),
    ),
    "constant added above the old one": (
        "pool-size-de",
        (
            ClaudeEdit(
                UUID_GO,
                "const randPoolSize = 16 * 16",
                "const randPoolSize = 16 * 32\nconst randPoolSize = 16 * 16",
            ),
        ),
    ),
    "constant, the test deleted": (
        "pool-size-de",
        (*HAND_MADE["pool-size-de"], ClaudeEdit(UUID_TEST, "", "")),
    ),
    "message, test not updated": ("length-error-es", HAND_MADE["length-error-es"][:1]),
    "message in a new file": (
        "length-error-es",
        (*HAND_MADE["length-error-es"], ClaudeEdit("notes.go", "", "package uuid\n")),
    ),
}
"""Plausible wrong edits (name: (task, edits)); `ClaudeEdit(path, "", "")` deletes the file,
`ClaudeEdit(new path, "", text)` writes a new one."""

REPLIES: dict[str, tuple[str, str]] = {
    "where-uuid-type": (
        "The UUID type is defined in uuid.go: `type UUID [16]byte`.",
        "It is defined in uuid_test.go.",
    ),
    "random-version-de": (
        "NewRandom erzeugt eine zufällige UUID der Version 4.",
        "NewRandom erzeugt UUIDs der Version 1 nach RFC 4122.",
    ),
    "parse-forms-es": (
        "Parse acepta xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, urn:uuid:xxxxxxxx-xxxx-xxxx-xxxx-"
        "xxxxxxxxxxxx, la forma de Microsoft {xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx} y 32 "
        "dígitos hexadecimales.",
        "Solo la forma estándar xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx.",
    ),
    "uuid-bytes-zh": ("UUID 是 [16]byte，占16字节（128 位）。", "UUID 占 128 位。"),  # noqa: RUF001
    "sha1-version-ru": ("NewSHA1 создаёт UUID версии 5.", "Версии 3, по RFC 4122."),
    "sha1-input": (
        "NewHash(sha1.New(), space, data, 5): the name space UUID's 16 bytes, then the data.",
        "It hashes 16 random bytes read from crypto/rand.",
    ),
}
"""(a right reply, a wrong reply) per question, in the question's language."""

FACTS: dict[str, tuple[str, str]] = {
    "where-uuid-type": (UUID_GO, r"(?m)^type UUID \[16\]byte$"),
    "random-version-de": (VERSION4, r"0x40 // Version 4"),
    "parse-forms-es": (UUID_GO, r"urn:uuid:xxxxxxxx-.*\n.*\{xxxxxxxx-xxxx"),
    "uuid-bytes-zh": (UUID_GO, r"A UUID is a 128 bit \(16 byte\)"),
    "sha1-version-ru": (HASH, r"NewSHA1 returns a new SHA1 \(Version 5\) UUID"),
    "sha1-input": (HASH, r"h\.Write\(space\[:\]\).*\n\s*h\.Write\(data\)"),
}
"""Where the pristine code says each question's answer (file, regex)."""


def apply(workspace: Path, edits: tuple[ClaudeEdit, ...]) -> None:
    for edit in edits:
        path = workspace / edit.path
        if not edit.old and not edit.new:
            path.unlink()
            continue
        if not edit.old:
            path.write_text(edit.new, encoding="utf-8")
            continue
        text = path.read_text(encoding="utf-8")
        if edit.old not in text:
            raise RuntimeError(f"{edit.path} has no {edit.old!r}")
        count = -1 if edit.every else 1
        path.write_text(text.replace(edit.old, edit.new, count), encoding="utf-8")


def self_test() -> int:
    """Every check on the pristine tree, hand-made edits and canned replies; 0 when all
    behave. Prints one line per case and a closing `N passed, N failed`."""
    ensure_go()
    archive = fetch_project(UUID)
    print(
        f"{UUID.name} {UUID.version} ({UUID.sdist}, sha256 {UUID.sha256[:12]}…; "
        f"{len(_pristine())} Go files and go.mod, laid out from {archive.name})"
    )
    tasks = {task.name: task for task in UUID.tasks}
    results: list[bool] = []

    def case(label: str, ok: bool, seen: str) -> None:
        results.append(ok)
        print(f"{'ok  ' if ok else 'FAIL'} {label}: {seen}", flush=True)

    with tempfile.TemporaryDirectory(prefix="milk-uuid-self-test-") as temp:
        workspace = Path(temp)
        lay_out(archive, workspace)
        problem = go_check(workspace)
        case("pristine module builds, vets and tests", not problem, problem or "go all pass")
        for name, (rel, pattern) in FACTS.items():
            found = re.search(pattern, (workspace / rel).read_text(encoding="utf-8"))
            case(f"{name}: the code says it", found is not None, f"{rel} /{pattern}/")
        for name, (right, wrong) in REPLIES.items():
            ok, seen = tasks[name].check(workspace, right)
            case(f"{name}: a right reply passes", ok, seen)
            ok, seen = tasks[name].check(workspace, wrong)
            case(f"{name}: a wrong reply fails", not ok, seen)
        for name, edits in HAND_MADE.items():
            lay_out(archive, workspace)
            ok, seen = tasks[name].check(workspace, "")
            case(f"{name}: pristine fails", not ok, seen)
            apply(workspace, edits)
            ok, seen = tasks[name].check(workspace, "")
            case(f"{name}: hand-made edit passes", ok, seen)
        for label, (name, edits) in WRONG_EDITS.items():
            lay_out(archive, workspace)
            apply(workspace, edits)
            ok, seen = tasks[name].check(workspace, "")
            case(f"{name}: {label} fails", not ok, seen)
    edit_tasks = {t.name for t in UUID.tasks if t.kind == "edit"}
    missing = sorted(edit_tasks - set(HAND_MADE))
    case("every edit task has a hand-made edit", not missing, f"missing {missing}")
    passed = sum(results)
    print(f"{passed} passed, {len(results) - passed} failed")
    return 0 if passed == len(results) else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--self-test", action="store_true", help="check the checks (see above)")
    args = parser.parse_args()
    if not args.self_test:
        parser.error("nothing to do: this module holds the tasks; run --self-test")
    raise SystemExit(self_test())


if __name__ == "__main__":
    main()
