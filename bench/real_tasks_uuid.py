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

The advisor tasks (`bench/real_tasks.py --advise --project uuid`): a rename across two files
(`rename-timestamp`), a new parameter and a test using it (`time-parameter`), a doc-comment
pass (`doc-comments-time`) and a longer one, seven steps over five files
(`version-variant-setters`); each step leaves the module building and testing, as milk's
check after each step asks.

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
from collections.abc import Callable
from pathlib import Path

if __name__ == "__main__":  # run as a script: the repository's packages first
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.real_tasks_suite import (
    GO_SUFFIXES,
    AdvisorTask,
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
VERSION1 = "version1.go"
DCE = "dce.go"


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
    line_comment = above.startswith("//") and len(above.strip("/ \t")) >= 3
    block = "\n".join(lines[:at]).rstrip()  # Go doc comments may be /* … */ blocks too
    block_comment = block.endswith("*/") and len(block[block.rfind("/*") :].strip("/* \t\n")) >= 3
    if not (line_comment or block_comment):
        return "no doc comment (// or /* */) right above func getTime"
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


# -- advisor tasks (issue 32): each step's check of the files, and Claude's edit for it ---------
#
# A step's check reads only that step's change in its file (every check also runs once the
# whole plan ran); the last step of each task also builds, vets and tests the module
# (`go_check`), so a plan whose steps each look right but leave the package broken fails.
#
# Every step leaves the module building and its tests passing: milk runs the project's check
# (`go vet`, `go test -short`: milk_lsp/guided/project_check.py) around each step it applies
# and puts back a step that breaks it, so a plan whose steps only build together (a
# package-level name renamed one file a step, a parameter added before its calls) cannot be
# carried out here. Hence a rename of local variables, and a new parameter whose one caller
# is changed in the same step.


def _go_step(rel: str, test: Callable[[str], str], build: bool = False) -> Callable[[Path], str]:
    """A step's check: `test(source)` finds no fault in `rel` (its text, `//` comments
    included); with `build`, then `go build`, `go vet` and `go test` pass in the module."""

    def check(workspace: Path) -> str:
        try:
            source = (workspace / rel).read_text(encoding="utf-8")
        except (OSError, ValueError) as exc:
            return f"{rel} unreadable: {exc}"
        return test(source) or (go_check(workspace) if build else "")

    return check


def _go_has(pattern: str, what: str, gone: str = "") -> Callable[[str], str]:
    """Matches `pattern` in the code (comments left out) and, when given, no longer `gone`."""

    def test(source: str) -> str:
        code = _code(source)
        if gone and re.search(gone, code):
            return f"{what}: /{gone}/ still there"
        return "" if re.search(pattern, code) else what

    return test


def _in_func(name: str, pattern: str, what: str, gone: str = "") -> Callable[[str], str]:
    """`_go_has` within the body of `func name(` (to its closing `}` at the line start)."""

    def test(source: str) -> str:
        found = re.search(rf"(?ms)^func {re.escape(name)}\(.*?^\}}$", _code(source))
        if found is None:
            return f"func {name} is gone"
        return _go_has(pattern, f"{name}: {what}", gone)(found.group(0))

    return test


def _doc_above(name: str) -> Callable[[str], str]:
    """A `// name ...` doc comment on the line right above `func name(`."""

    def test(source: str) -> str:
        found = re.search(rf"(?m)^// {re.escape(name)}\b[^\n]*\nfunc {re.escape(name)}\(", source)
        return "" if found else f"no // {name} ... doc comment right above func {name}"

    return test


_GET_TIME_CALL = (
    "\treturn getTime()\n}\n\nfunc getTime() (Time, uint16, error) {\n\tt := timeNow()\n"
)
_GET_TIME_AT = (
    "\treturn getTime(timeNow())\n}\n\n"
    "// getTime is GetTime at the current time t, for a caller that holds timeMu.\n"
    "func getTime(t time.Time) (Time, uint16, error) {\n"
)
_GET_TIME_TEST = """func TestGetTimeBackwards(t *testing.T) {
\ttimeMu.Lock()
\tdefer timeMu.Unlock()
\tat := time.Date(2020, time.February, 2, 0, 0, 0, 0, time.UTC)
\tnow1, seq1, _ := getTime(at)
\tnow2, seq2, _ := getTime(at.Add(-time.Second))
\tif now2 >= now1 {
\t\tt.Errorf("getTime(a second earlier) = %d, not before %d", now2, now1)
\t}
\tif seq2 == seq1 {
\t\tt.Errorf("the clock sequence stayed %d when the time went backwards", seq1)
\t}
}

"""
_TEST_CLOCK_SEQ = "func TestClockSeq(t *testing.T) {\n"
_GET_TIME = "func getTime() (Time, uint16, error) {"
_CLOCK_SEQUENCE = "func clockSequence() int {"
_SET_CLOCK_SEQUENCE = "func setClockSequence(seq int) {"
_V4 = "uuid[6] = (uuid[6] & 0x0f) | 0x40 // Version 4"
_VARIANT = "uuid[8] = (uuid[8] & 0x3f) | 0x80 // Variant is 10"
_HASH_VERSION = "uuid[6] = (uuid[6] & 0x0f) | uint8((version&0xf)<<4)"
_HASH_VARIANT = "uuid[8] = (uuid[8] & 0x3f) | 0x80 // RFC 4122 variant"
_V2 = "uuid[6] = (uuid[6] & 0x0f) | 0x20 // Version 2"
_XVALUES = "// xvalues returns the value of a byte as a hexadecimal digit or 255.\n"
_SETTERS = """// setVersion sets the version of uuid (the high 4 bits of byte 6) to v&0x0f.
func (uuid *UUID) setVersion(v byte) {
\tuuid[6] = (uuid[6] & 0x0f) | (v&0x0f)<<4
}

// setVariant sets the variant of uuid to RFC4122's: the high 2 bits of byte 8 to 10.
func (uuid *UUID) setVariant() {
\tuuid[8] = (uuid[8] & 0x3f) | 0x80
}

"""
_SETTERS_TEST = """func TestSetVersionAndVariant(t *testing.T) {
\tfor v := byte(0); v < 16; v++ {
\t\tuuid := Must(Parse("f47ac10b-58cc-4372-8567-0e02b2c3d479"))
\t\tuuid.setVersion(v)
\t\tuuid.setVariant()
\t\tif got := uuid.Version(); got != Version(v) {
\t\t\tt.Errorf("setVersion(%d): Version() = %d", v, got)
\t\t}
\t\tif got := uuid.Variant(); got != RFC4122 {
\t\t\tt.Errorf("setVariant(): Variant() = %v", got)
\t\t}
\t\tif uuid[6]&0x0f != 0x03 || uuid[8]&0x3f != 0x05 {
\t\t\tt.Errorf("setVersion(%d), setVariant(): other bits changed: % x", v, uuid[6:9])
\t\t}
\t}
}

"""
_TEST_NEW = "func TestNew(t *testing.T) {\n"

ADVISOR_TASKS = (
    AdvisorTask(
        "rename-timestamp",
        "Rename the local variable now to timestamp where it holds a UUID timestamp (100s of "
        "nanoseconds since 15 Oct 1582), not the wall-clock time: in getTime (time.go) and "
        "NewUUID (version1.go).",
        (
            (
                f"In `{TIME}`, replace every `now` with `timestamp` (the four uses of the local "
                "variable `now := uint64(t.UnixNano()/100) + g1582ns100` in getTime).",
                _go_step(
                    TIME,
                    _in_func(
                        "getTime",
                        r"\btimestamp\s*:=\s*uint64\(",
                        "no local timestamp := uint64(...)",
                        gone=r"\bnow\b",
                    ),
                ),
                ClaudeEdit(TIME, "now", "timestamp", every=True),
            ),
            (
                f"In `{VERSION1}`, replace every `now` with `timestamp` (the local variable of "
                "`now, seq, err := GetTime()` in NewUUID and its three uses).",
                _go_step(
                    VERSION1,
                    _in_func(
                        "NewUUID",
                        r"\btimestamp\s*,\s*seq\s*,\s*err\s*:=\s*GetTime\(\)",
                        "no timestamp, seq, err := GetTime()",
                        gone=r"\bnow\b",
                    ),
                    build=True,
                ),
                ClaudeEdit(VERSION1, "now", "timestamp", every=True),
            ),
        ),
    ),
    AdvisorTask(
        "time-parameter",
        "Give getTime in time.go a parameter t time.Time, the current time, instead of calling "
        "timeNow itself (GetTime passes timeNow()), so that a test can call it at a time of its "
        "choosing, and add such a test to uuid_test.go: a time that goes backwards changes the "
        "clock sequence.",
        (
            (
                f"In `{TIME}`, replace the lines `return getTime()`, `}}`, a blank line, "
                "`func getTime() (Time, uint16, error) {` and `t := timeNow()` (GetTime's end "
                "and getTime's start) with `return getTime(timeNow())`, `}`, a blank line, the "
                "doc comment `// getTime is GetTime at the current time t, for a caller that "
                "holds timeMu.` and `func getTime(t time.Time) (Time, uint16, error) {`.",
                _go_step(
                    TIME,
                    lambda source: (
                        _in_func(
                            "getTime",
                            r"^func getTime\(\s*t\s+time\.Time\s*\)",
                            "getTime has no parameter t time.Time",
                            gone=r"timeNow",
                        )(source)
                        or _in_func(
                            "GetTime",
                            r"return getTime\(\s*timeNow\(\)\s*\)",
                            "does not pass timeNow() to getTime",
                        )(source)
                    ),
                ),
                ClaudeEdit(TIME, _GET_TIME_CALL, _GET_TIME_AT),
            ),
            (
                f"In `{UUID_TEST}`, right above the line `{_TEST_CLOCK_SEQ.strip()}`, add the "
                "test `func TestGetTimeBackwards(t *testing.T)`: holding timeMu, getTime at a "
                "fixed time and then a second earlier gives an earlier Time and another clock "
                "sequence.",
                _go_step(
                    UUID_TEST,
                    _go_has(
                        r"func TestGetTimeBackwards\(t \*testing\.T\) \{[^}]*getTime\(\s*\w",
                        "no TestGetTimeBackwards calling getTime(t)",
                    ),
                    build=True,
                ),
                ClaudeEdit(UUID_TEST, _TEST_CLOCK_SEQ, _GET_TIME_TEST + _TEST_CLOCK_SEQ),
            ),
        ),
    ),
    AdvisorTask(
        "doc-comments-time",
        f"Give every function of {TIME} without a doc comment one (a line starting with its name).",
        (
            (
                f"In `{TIME}`, right above the line `{_GET_TIME}`, add the line `// getTime is "
                "GetTime for a caller that holds timeMu.`.",
                _go_step(TIME, _doc_above("getTime")),
                ClaudeEdit(
                    TIME,
                    _GET_TIME,
                    f"// getTime is GetTime for a caller that holds timeMu.\n{_GET_TIME}",
                ),
            ),
            (
                f"In `{TIME}`, right above the line `{_CLOCK_SEQUENCE}`, add the line "
                "`// clockSequence is ClockSequence for a caller that holds timeMu.`.",
                _go_step(TIME, _doc_above("clockSequence")),
                ClaudeEdit(
                    TIME,
                    _CLOCK_SEQUENCE,
                    "// clockSequence is ClockSequence for a caller that holds timeMu.\n"
                    + _CLOCK_SEQUENCE,
                ),
            ),
            (
                f"In `{TIME}`, right above the line `{_SET_CLOCK_SEQUENCE}`, add the line "
                "`// setClockSequence is SetClockSequence for a caller that holds timeMu.`.",
                _go_step(TIME, _doc_above("setClockSequence"), build=True),
                ClaudeEdit(
                    TIME,
                    _SET_CLOCK_SEQUENCE,
                    "// setClockSequence is SetClockSequence for a caller that holds timeMu.\n"
                    + _SET_CLOCK_SEQUENCE,
                ),
            ),
        ),
    ),
    AdvisorTask(
        "version-variant-setters",
        "Replace the bit twiddling that sets a UUID's version and variant with two helpers: "
        "add the methods setVersion(v byte) and setVariant() on *UUID to util.go, use them in "
        "version4.go (NewRandomFromReader and newRandomFromPool), hash.go (NewHash) and dce.go "
        "(NewDCESecurity), and test them in uuid_test.go.",
        (
            (
                f"In `{UTIL}`, right above the line `{_XVALUES.strip()}`, add the methods "
                "`func (uuid *UUID) setVersion(v byte)` (`uuid[6] = (uuid[6] & 0x0f) | "
                "(v&0x0f)<<4`) and `func (uuid *UUID) setVariant()` (`uuid[8] = (uuid[8] & "
                "0x3f) | 0x80`), each with a doc comment and a blank line after it.",
                _go_step(
                    UTIL,
                    lambda source: (
                        _go_has(
                            r"func \(uuid \*UUID\) setVersion\(v byte\) \{",
                            "no func (uuid *UUID) setVersion(v byte)",
                        )(source)
                        or _go_has(
                            r"func \(uuid \*UUID\) setVariant\(\) \{",
                            "no func (uuid *UUID) setVariant()",
                        )(source)
                    ),
                ),
                ClaudeEdit(UTIL, _XVALUES, _SETTERS + _XVALUES),
            ),
            (
                f"In `{VERSION4}`, in NewRandomFromReader (right after its `return Nil, err` and "
                f"`}}`), replace the lines `{_V4}` and `{_VARIANT}` with `uuid.setVersion(4)` and "
                "`uuid.setVariant()`.",
                _go_step(
                    VERSION4,
                    _in_func(
                        "NewRandomFromReader",
                        r"uuid\.setVersion\(4\)\s*\n\s*uuid\.setVariant\(\)",
                        "does not call uuid.setVersion(4) and uuid.setVariant()",
                        gone=r"0x40|0x80",
                    ),
                ),
                ClaudeEdit(
                    VERSION4,
                    f"\t\treturn Nil, err\n\t}}\n\t{_V4}\n\t{_VARIANT}\n",
                    "\t\treturn Nil, err\n\t}\n\tuuid.setVersion(4)\n\tuuid.setVariant()\n",
                ),
            ),
            (
                f"In `{VERSION4}`, in newRandomFromPool (right after `poolMu.Unlock()` and a "
                f"blank line), replace the lines `{_V4}` and `{_VARIANT}` with "
                "`uuid.setVersion(4)` and `uuid.setVariant()`.",
                _go_step(
                    VERSION4,
                    _in_func(
                        "newRandomFromPool",
                        r"uuid\.setVersion\(4\)\s*\n\s*uuid\.setVariant\(\)",
                        "does not call uuid.setVersion(4) and uuid.setVariant()",
                        gone=r"0x40|0x80",
                    ),
                ),
                ClaudeEdit(
                    VERSION4,
                    f"\tpoolMu.Unlock()\n\n\t{_V4}\n\t{_VARIANT}\n",
                    "\tpoolMu.Unlock()\n\n\tuuid.setVersion(4)\n\tuuid.setVariant()\n",
                ),
            ),
            (
                f"In `{HASH}`, replace `{_HASH_VERSION}` with `uuid.setVersion(byte(version))`.",
                _go_step(
                    HASH,
                    _in_func(
                        "NewHash",
                        r"uuid\.setVersion\(\s*byte\(\s*version\s*\)\s*\)",
                        "does not call uuid.setVersion(byte(version))",
                        gone=r"uuid\[6\]\s*=",
                    ),
                ),
                ClaudeEdit(HASH, _HASH_VERSION, "uuid.setVersion(byte(version))"),
            ),
            (
                f"In `{HASH}`, replace `{_HASH_VARIANT}` with `uuid.setVariant()`.",
                _go_step(
                    HASH,
                    _in_func(
                        "NewHash",
                        r"uuid\.setVariant\(\)",
                        "does not call uuid.setVariant()",
                        gone=r"uuid\[8\]\s*=",
                    ),
                ),
                ClaudeEdit(HASH, _HASH_VARIANT, "uuid.setVariant()"),
            ),
            (
                f"In `{DCE}`, replace `{_V2}` with `uuid.setVersion(2)`.",
                _go_step(
                    DCE,
                    _in_func(
                        "NewDCESecurity",
                        r"uuid\.setVersion\(2\)",
                        "does not call uuid.setVersion(2)",
                        gone=r"uuid\[6\]\s*=",
                    ),
                ),
                ClaudeEdit(DCE, _V2, "uuid.setVersion(2)"),
            ),
            (
                f"In `{UUID_TEST}`, right above the line `{_TEST_NEW.strip()}`, add the test "
                "`func TestSetVersionAndVariant(t *testing.T)`: for every v from 0 to 15, "
                "setVersion(v) and setVariant() on a parsed UUID give Version() v and Variant() "
                "RFC4122 and leave the other bits of bytes 6 and 8 alone.",
                _go_step(
                    UUID_TEST,
                    _go_has(
                        r"func TestSetVersionAndVariant\(t \*testing\.T\) \{[^}]*\.setVersion\(",
                        "no TestSetVersionAndVariant calling setVersion",
                    ),
                    build=True,
                ),
                ClaudeEdit(UUID_TEST, _TEST_NEW, _SETTERS_TEST + _TEST_NEW),
            ),
        ),
    ),
)


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
    advisor_tasks=ADVISOR_TASKS,
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
