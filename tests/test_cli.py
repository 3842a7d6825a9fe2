"""The command line as a user meets it: real subprocesses, each in its own XDG/MILK dirs.

`milk-lsp --version`, `milk-lsp chat` against the scripted OpenAI-compatible server,
`milk-lsp doctor` on an empty machine and on a working one, and serving mode spoken to
by hand (every stdout byte is an LSP frame; logs go to the log file; SIGTERM ends it).

The non-interactive runs are started together by one module fixture (`runs`) and the tests
read their results, so the file costs about one server start-up instead of seven.
"""

from __future__ import annotations

import io
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from milk_lsp import __version__
from milk_lsp.agents.claude.cli import bundled_cli_path
from milk_lsp.terminal.chat import ChatPrinter
from milk_lsp.terminal.commands import parse
from tests.fakes.openai_server import FakeOpenAIServer

pytestmark = pytest.mark.e2e

RUN_TIMEOUT = 90.0
"""Generous: up to seven Python start-ups share two cores while the runs start together."""

FAKE_CLAUDE_VERSION = "2.1.0"
SCRIPTED_ANSWER = "The greeting is hello."


# ---- environments --------------------------------------------------------------------------


def isolated_env(root: Path, **extra: str) -> dict[str, str]:
    """The parent's environment without any XDG_*/MILK_* of its own, pointed into `root`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "MILK_"))}
    env.update(
        {
            "XDG_CONFIG_HOME": str(root / "config"),
            "XDG_DATA_HOME": str(root / "data"),
            "XDG_STATE_HOME": str(root / "state"),
            "XDG_CACHE_HOME": str(root / "cache"),
            "MILK_LOG_DIR": str(root / "logs"),
            "MILK_CONFIG_FILE": str(root / "config" / "milk" / "config.json"),
            "PYTHONUNBUFFERED": "1",
            "PYTHONIOENCODING": "utf-8",
        }
    )
    env.update(extra)
    return env


def path_without_claude() -> str:
    entries = os.environ.get("PATH", "").split(os.pathsep)
    kept = [e for e in entries if e and not (Path(e) / "claude").exists()]
    python_dir = str(Path(sys.executable).parent)
    if python_dir not in kept and not (Path(python_dir) / "claude").exists():
        kept.insert(0, python_dir)
    return os.pathsep.join(kept)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def make_workspace(root: Path) -> Path:
    workspace = root / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "hello.py").write_text("def greet():\n    return 'hello'\n")
    return workspace


def fake_claude(bin_dir: Path) -> Path:
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "claude"
    script.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "--version" ]; then\n'
        f'  echo "{FAKE_CLAUDE_VERSION} (Claude Code)"\n'
        "  exit 0\n"
        "fi\n"
        'if [ "$1 $2 $3" = "auth status --json" ]; then\n'
        """  echo '{"loggedIn": true, "authMethod": "claude.ai"}'\n"""
        "  exit 0\n"
        "fi\n"
        "exit 1\n"
    )
    script.chmod(0o755)
    return script


# ---- runs of the CLI -----------------------------------------------------------------------


@dataclass
class Run:
    argv: list[str]
    root: Path
    proc: subprocess.Popen[str]
    started: float
    stdout: str = ""
    stderr: str = ""
    returncode: int | None = None
    seconds: float = 0.0

    def finish(self) -> Run:
        if self.returncode is None:
            try:
                self.stdout, self.stderr = self.proc.communicate(timeout=RUN_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.stdout, self.stderr = self.proc.communicate()
                self.stderr += f"\n[test] killed after {RUN_TIMEOUT} s"
            self.returncode = self.proc.returncode
            self.seconds = time.monotonic() - self.started
        return self

    def describe(self) -> str:
        return (
            f"argv: {self.argv}\nrc: {self.returncode}\n--- stdout\n{self.stdout}"
            f"\n--- stderr\n{self.stderr}"
        )


def start(argv: list[str], root: Path, env: dict[str, str]) -> Run:
    root.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        argv,
        cwd=root,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        errors="replace",
    )
    return Run(argv, root, proc, time.monotonic())


def milk(*args: str) -> list[str]:
    return [sys.executable, "-m", "milk_lsp", *args]


@dataclass
class Runs:
    chat_ok: Run
    chat_fail: Run
    chat_unknown: Run
    doctor_bare: Run
    doctor_good: Run
    doctor_no_models: Run
    doctor_bad_storage: Run
    doctor_api_key: Run
    doctor_logged_out: Run
    chat_blank: Run
    chat_empty: Run
    servers: dict[str, FakeOpenAIServer]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    base = tmp_path_factory.mktemp("cli")
    servers = {
        "ok": FakeOpenAIServer(
            [
                {"tool_calls": [{"name": "read_file", "arguments": {"path": "hello.py"}}]},
                {"text": SCRIPTED_ANSWER, "chunk_chars": 4},
            ]
        ),
        "fail": FakeOpenAIServer([{"status": 500}]),
        "unknown": FakeOpenAIServer(),
        "good": FakeOpenAIServer(),
        "no_models": FakeOpenAIServer(models=[]),
        "blank": FakeOpenAIServer(),
    }
    for server in servers.values():
        server.start()
    started: dict[str, Run] = {}
    try:

        def chat(name: str, *extra: str) -> None:
            root = base / name
            workspace = make_workspace(root)
            url = servers[name].base_url
            argv = milk(
                "chat",
                "--workspace",
                str(workspace),
                "--base-url",
                url,
                "--model",
                "fake-model",
                "--claude-path",
                str(root / "no-claude-here"),
                *extra,
            )
            started[name] = start(argv, root, isolated_env(root))

        chat("ok", "what does", "hello.py do?")
        chat("fail", "hello")
        chat("unknown", "--session", "no-such-session-id", "hello")
        chat("blank", "   ")
        started["chat_empty"] = start(milk("chat", ""), base / "chat_empty", isolated_env(base))

        # the real Claude Code CLI (bundled), asked whether it is logged in
        for name, key in (
            ("doctor_api_key", {"ANTHROPIC_API_KEY": "sk-test"}),
            ("doctor_logged_out", {}),
        ):
            root = base / name
            (root / "home").mkdir(parents=True)
            cli_env = {k: v for k, v in isolated_env(root).items() if not k.startswith("ANTHROPIC")}
            cli_env.update(
                HOME=str(root / "home"), CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", **key
            )
            started[name] = start(
                milk(
                    "doctor",
                    "--base-url",
                    servers["good"].base_url,
                    "--claude-path",
                    str(bundled_cli_path()),
                ),
                root,
                cli_env,
            )

        bare = base / "doctor_bare"
        started["doctor_bare"] = start(
            milk(
                "doctor",
                "--base-url",
                f"http://127.0.0.1:{closed_port()}/v1",
                "--claude-path",
                str(bare / "missing" / "claude"),
            ),
            bare,
            isolated_env(bare, PATH=path_without_claude()),
        )
        good = base / "doctor_good"
        bin_dir = good / "bin"
        fake_claude(bin_dir)
        started["doctor_good"] = start(
            milk("doctor", "--base-url", servers["good"].base_url),
            good,
            isolated_env(good, PATH=f"{bin_dir}{os.pathsep}{path_without_claude()}"),
        )
        empty = base / "doctor_no_models"
        fake_claude(empty / "bin")
        started["doctor_no_models"] = start(
            milk(
                "doctor",
                "--base-url",
                servers["no_models"].base_url,
                "--claude-path",
                str(empty / "bin" / "claude"),
            ),
            empty,
            isolated_env(empty, PATH=path_without_claude()),
        )
        broken = base / "doctor_bad_storage"
        broken.mkdir()
        (broken / "a-file").write_text("not a folder")
        started["doctor_bad_storage"] = start(
            milk(
                "doctor",
                "--base-url",
                f"http://127.0.0.1:{closed_port()}/v1",
                "--claude-path",
                str(broken / "missing" / "claude"),
                "--storage-dir",
                str(broken / "a-file" / "sessions"),
            ),
            broken,
            isolated_env(broken, PATH=path_without_claude()),
        )
        with ThreadPoolExecutor(len(started)) as pool:
            list(pool.map(Run.finish, started.values()))
        print("\n" + ", ".join(f"{name} {run.seconds:.1f} s" for name, run in started.items()))
        yield Runs(
            chat_ok=started["ok"],
            chat_fail=started["fail"],
            chat_unknown=started["unknown"],
            doctor_bare=started["doctor_bare"],
            doctor_good=started["doctor_good"],
            doctor_no_models=started["doctor_no_models"],
            doctor_bad_storage=started["doctor_bad_storage"],
            doctor_api_key=started["doctor_api_key"],
            doctor_logged_out=started["doctor_logged_out"],
            chat_blank=started["blank"],
            chat_empty=started["chat_empty"],
            servers=servers,
        )
    finally:
        for run in started.values():
            if run.proc.poll() is None:
                run.proc.kill()
                run.proc.wait()
        for server in servers.values():
            server.stop()


# ---- --version -----------------------------------------------------------------------------


def test_version_prints_the_version(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("milk-lsp")
    argv = [str(script), "--version"] if script.exists() else milk("--version")
    done = subprocess.run(
        argv, env=isolated_env(tmp_path), capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"milk-lsp {__version__}"


# ---- chat ----------------------------------------------------------------------------------


def test_chat_streams_the_answer_with_agent_and_tool_marks(runs: Runs) -> None:
    run = runs.chat_ok
    assert run.returncode == 0, run.describe()
    lines = run.stdout.splitlines()
    assert lines[0].startswith("── local"), run.describe()
    tool_line = next((i for i, line in enumerate(lines) if "⚙ read_file" in line), None)
    assert tool_line is not None, run.describe()
    assert '"path": "hello.py"' in lines[tool_line]
    result_line = next(i for i, line in enumerate(lines) if line.strip().startswith("→"))
    assert "def greet():" in lines[result_line]
    answer_line = next(i for i, line in enumerate(lines) if SCRIPTED_ANSWER in line)
    assert tool_line < result_line < answer_line
    assert lines[-1] == "── done"
    # before the message: the session it joins (a new one here) and where the message goes
    assert re.fullmatch(
        r"milk: new session [0-9a-f-]{36}: this message goes to the local model \(.+\)\n",
        run.stderr,
    ), run.describe()
    # The model was asked twice: the tool round, then with the tool's result.
    requests = runs.servers["ok"].requests
    assert len(requests) == 2
    assert requests[1]["messages"][-1]["role"] == "tool"
    assert "def greet():" in requests[1]["messages"][-1]["content"]


def test_chat_writes_only_the_conversation_to_stdout(runs: Runs) -> None:
    """No log line or traceback leaks into what the user reads on stdout."""
    run = runs.chat_ok
    for line in run.stdout.splitlines():
        assert " INFO " not in line and " WARNING " not in line and "Traceback" not in line
    # the server's window/logMessage notifications are handled (shown only with -v)
    assert "Ignoring notification" not in run.stderr, run.stderr
    assert "unknown method" not in run.stderr, run.stderr


def test_chat_failed_turn_exits_nonzero_with_the_reason(runs: Runs) -> None:
    run = runs.chat_fail
    assert run.returncode not in (0, None), run.describe()
    assert "turn failed (local_failed)" in run.stderr, run.describe()
    assert "500" in run.stderr
    assert run.stdout.splitlines()[-1] == "── failed"


def test_chat_unknown_session_exits_nonzero(runs: Runs) -> None:
    run = runs.chat_unknown
    assert run.returncode not in (0, None), run.describe()
    assert "no-such-session-id" in run.stderr, run.describe()
    assert runs.servers["unknown"].requests == [], "no turn may run for an unknown session"


def test_chat_unknown_session_names_session_not_found(runs: Runs) -> None:
    assert "session_not_found" in runs.chat_unknown.stderr, runs.chat_unknown.describe()


def test_chat_with_an_empty_message_exits_2_with_one_sentence(runs: Runs) -> None:
    for run in (runs.chat_blank, runs.chat_empty):
        assert run.returncode == 2, run.describe()
        assert run.stderr.startswith("milk: the message is empty") and run.stderr.count("\n") == 1
        assert run.stdout == "" and "validation" not in run.stderr.lower()
    assert runs.servers["blank"].requests == [], "no model turn for a blank message"


# ---- doctor --------------------------------------------------------------------------------


def test_doctor_on_a_bare_machine_explains_each_missing_piece(runs: Runs) -> None:
    run = runs.doctor_bare
    assert run.returncode not in (0, None), run.describe()
    out = run.stdout
    lines = out.splitlines()
    local = next(i for i, line in enumerate(lines) if line.startswith("✗ no local model"))
    assert "connection refused" in lines[local] or "refused" in lines[local].lower()
    assert lines[local + 1].strip().startswith("fix:")
    assert "local.baseUrl" in lines[local + 1]
    claude = next(i for i, line in enumerate(lines) if line.startswith("✗ claude"))
    assert "claude.path" in lines[claude] and "does not exist" in lines[claude]
    assert lines[claude + 1].strip().startswith("fix:")
    assert "install Claude Code" in lines[claude + 1]
    assert "2 problem(s) found" in out
    assert "all good" not in out


def test_doctor_with_a_model_server_and_claude_reports_all_good(runs: Runs) -> None:
    run = runs.doctor_good
    assert run.returncode == 0, run.describe()
    out = run.stdout
    assert f"✓ local model server reachable at {runs.servers['good'].base_url}" in out
    assert "model fake-model" in out
    assert "✓ claude found:" in out and f"({FAKE_CLAUDE_VERSION})" in out
    assert "✓ Claude Code logged in via claude.ai" in out
    assert str(run.root / "bin" / "claude") in out, "claude is found on PATH"
    assert f"✓ sessions stored in {run.root / 'data' / 'milk'}" in out
    assert out.strip().splitlines()[-1] == "all good"
    assert "✗" not in out


@pytest.mark.claude
@pytest.mark.skipif(bundled_cli_path() is None, reason="claude-agent-sdk's bundled CLI is missing")
def test_doctor_asks_claude_code_whether_it_is_logged_in(runs: Runs) -> None:
    keyed = runs.doctor_api_key
    assert keyed.returncode == 0, keyed.describe()
    assert "✓ Claude Code logged in via API key (ANTHROPIC_API_KEY)" in keyed.stdout
    assert keyed.stdout.strip().splitlines()[-1] == "all good"
    out = runs.doctor_logged_out
    assert out.returncode == 1, out.describe()
    lines = out.stdout.splitlines()
    at = next(
        i for i, line in enumerate(lines) if line.startswith("✗ Claude Code is not logged in")
    )
    assert lines[at - 1].startswith("✓ claude found:")
    assert "auth login" in lines[at + 1] and "ANTHROPIC_API_KEY" in lines[at + 1]
    assert "1 problem(s) found" in out.stdout


def test_doctor_reports_a_server_without_models_as_a_problem(runs: Runs) -> None:
    run = runs.doctor_no_models
    assert run.returncode != 0, run.describe()
    assert "all good" not in run.stdout


def test_doctor_with_unusable_storage_fails_naming_it(runs: Runs) -> None:
    run = runs.doctor_bad_storage
    assert run.returncode not in (0, None), run.describe()
    assert "storage" in run.stdout + run.stderr
    assert "a-file" in run.stdout + run.stderr


def test_doctor_with_unusable_storage_still_reports_everything(runs: Runs) -> None:
    run = runs.doctor_bad_storage
    assert "✗ no local model" in run.stdout, run.describe()
    assert "✗ claude" in run.stdout
    assert "storageDir" in run.stdout


# ---- serving mode, spoken to by hand ------------------------------------------------------


def frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def parse_frames(data: bytes) -> tuple[list[dict[str, Any]], bytes]:
    """Every complete frame in `data`, strictly; returns the frames and what is left over."""
    frames: list[dict[str, Any]] = []
    pos = 0
    while True:
        end = data.find(b"\r\n\r\n", pos)
        if end < 0:
            return frames, data[pos:]
        length = None
        for header in data[pos:end].split(b"\r\n"):
            name, sep, value = header.partition(b":")
            assert sep, f"not an LSP header: {header!r}"
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
            else:
                assert name.strip().lower() == b"content-type", f"unexpected header {header!r}"
        assert length is not None, f"a frame without Content-Length: {data[pos:end]!r}"
        if len(data) < end + 4 + length:
            return frames, data[pos:]
        body = json.loads(data[end + 4 : end + 4 + length])
        assert body.get("jsonrpc") == "2.0", body
        frames.append(body)
        pos = end + 4 + length


class Wire:
    """A hand-driven LSP client over a server subprocess's stdio."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.raw = bytearray()
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while True:
            chunk = os.read(fd, 65536)
            with self._changed:
                if not chunk:
                    self._changed.notify_all()
                    return
                self.raw.extend(chunk)
                self._changed.notify_all()

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(frame({"jsonrpc": "2.0", **message}))
        self.proc.stdin.flush()

    def frames(self) -> list[dict[str, Any]]:
        with self._changed:
            return parse_frames(bytes(self.raw))[0]

    def wait_for(
        self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 30.0
    ) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for message in parse_frames(bytes(self.raw))[0]:
                    if predicate(message):
                        return message
                left = deadline - time.monotonic()
                if left <= 0 or (not self._reader.is_alive() and self.proc.poll() is not None):
                    raise AssertionError(
                        f"no matching message within {timeout} s; got {bytes(self.raw)!r}"
                    )
                self._changed.wait(min(left, 0.5))

    def response(self, msg_id: int, timeout: float = 30.0) -> dict[str, Any]:
        return self.wait_for(lambda m: m.get("id") == msg_id and "method" not in m, timeout)

    def join(self, timeout: float = 10.0) -> None:
        self._reader.join(timeout)


def start_server(root: Path, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], Wire, Path]:
    stderr_path = root / "server.stderr"
    with stderr_path.open("wb") as stderr:
        proc = subprocess.Popen(
            milk(),
            cwd=root,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
    return proc, Wire(proc), stderr_path


def initialize(wire: Wire, workspace: Path, options: dict[str, Any] | None) -> dict[str, Any]:
    uri = workspace.as_uri()
    wire.send(
        {
            "id": 1,
            "method": "initialize",
            "params": {
                "processId": os.getpid(),
                "rootUri": uri,
                "workspaceFolders": [{"uri": uri, "name": workspace.name}],
                "capabilities": {},
                "initializationOptions": options,
            },
        }
    )
    answer = wire.response(1)
    wire.send({"method": "initialized", "params": {}})
    return answer


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait(10)


def test_serving_writes_only_lsp_frames_to_stdout_and_logs_to_the_file(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path)
    config_file = tmp_path / "config" / "milk" / "config.json"
    config_file.parent.mkdir(parents=True)
    # One unknown key (logged) and one wrong type (shown, and logged at info).
    config_file.write_text(json.dumps({"bogusKey": 1, "local": {"maxToolRounds": "many"}}))
    env = isolated_env(tmp_path)
    proc, wire, stderr_path = start_server(tmp_path, env)
    try:
        answer = initialize(
            wire,
            workspace,
            {"storageDir": str(tmp_path / "storage"), "claude": {"path": str(tmp_path / "nope")}},
        )
        assert answer["result"]["capabilities"]["experimental"]["milk"] == {"protocolVersion": 1}
        assert answer["result"]["serverInfo"]["version"] == __version__
        wire.send({"id": 2, "method": "shutdown", "params": None})
        assert wire.response(2).get("result", "missing") is None
        wire.send({"method": "exit", "params": None})
        assert proc.wait(15) == 0, "exit after shutdown is a clean exit"
        wire.join()
    finally:
        stop(proc)
    frames, rest = parse_frames(bytes(wire.raw))
    assert rest == b"", f"stdout bytes outside any LSP frame: {rest!r}"
    methods = [f.get("method") for f in frames]
    assert "window/showMessage" in methods, frames
    shown = next(f for f in frames if f.get("method") == "window/showMessage")
    assert "local.maxToolRounds" in shown["params"]["message"]
    logged = [f["params"]["message"] for f in frames if f.get("method") == "window/logMessage"]
    assert any("bogusKey" in message for message in logged), frames

    log_file = tmp_path / "logs" / "milk-lsp.log"
    assert log_file.is_file()
    log = log_file.read_text()
    assert f"milk-lsp {__version__} serving on stdio" in log
    assert "bogusKey" in log and "local.maxToolRounds" in log
    stderr = stderr_path.read_text()
    # Shown to the user, so logged at info (issue 21): in the log file, not on stderr.
    assert "local.maxToolRounds" not in stderr
    assert "INFO milk_lsp.lsp.editor: milk: setting 'local.maxToolRounds' is invalid" in log
    assert "serving on stdio" not in stderr, "info lines stay out of stderr unless -v"


def test_sigterm_ends_the_server_promptly_mid_turn(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path)
    env = isolated_env(tmp_path)
    del env["MILK_LOG_DIR"]  # the platformdirs default log dir is used then
    with FakeOpenAIServer([{"stall": 60}]) as fake:
        proc, wire, _ = start_server(tmp_path, env)
        try:
            initialize(
                wire,
                workspace,
                {
                    "local": {"baseUrl": fake.base_url, "model": "fake-model"},
                    "storageDir": str(tmp_path / "storage"),
                    "claude": {"path": str(tmp_path / "nope")},
                },
            )
            wire.send(
                {
                    "id": 2,
                    "method": "milk/chat",
                    "params": {"text": "hello", "workspaceFolder": workspace.as_uri()},
                }
            )
            deadline = time.monotonic() + 30
            while not fake.requests and time.monotonic() < deadline:
                time.sleep(0.02)
            assert fake.requests, "the turn never reached the model server"
            began = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            proc.wait(10)
            took = time.monotonic() - began
        finally:
            stop(proc)
        print(f"\nSIGTERM to exit: {took * 1000:.0f} ms")
        assert took < 5.0
        assert proc.returncode in (128 + signal.SIGTERM, -signal.SIGTERM)
        assert fake.wait_for_disconnects(1, timeout=5), "the model stream was left open"
    log_file = tmp_path / "state" / "milk" / "log" / "milk-lsp.log"
    assert log_file.is_file(), "the log goes to the platformdirs user log dir by default"


def test_chat_shows_milks_own_read_which_arrives_completed_once() -> None:
    """milk's read-first and look calls are never `running`: the call line is still shown,
    once, before its result (the demo must show the tool call, not only its output)."""
    out = io.StringIO()
    printer = ChatPrinter(out)
    call = {"kind": "tool_call", "toolCallId": "milk-look-1", "name": "read_file"}
    printer.on_update(call | {"status": "completed", "input": {"path": "a.py"}})
    printer.on_update({"kind": "tool_result", "toolCallId": "milk-look-1", "output": "x = 1"})
    printer.on_update(call | {"status": "completed", "input": {"path": "a.py"}})
    running = {"kind": "tool_call", "toolCallId": "c2", "name": "list_directory", "input": {}}
    printer.on_update(running | {"status": "running"})
    printer.on_update(running | {"status": "completed"})
    lines = out.getvalue().splitlines()
    assert lines == [
        '  ⚙ read_file {"path": "a.py"} [completed]',
        "    → x = 1",
        "  ⚙ list_directory {} [running]",
    ]


def test_chat_says_how_many_files_changed_in_words() -> None:
    """Files changed counted in words: "1 file", "2 files", never "file(s)"."""
    out = io.StringIO()
    printer = ChatPrinter(out)
    change = {"uri": "file:///w/a.py", "kind": "modified", "added": 1, "removed": 1}
    printer.on_update({"kind": "changes", "changes": [change]})
    printer.on_update({"kind": "changes", "changes": [change, change | {"uri": "file:///w/b"}]})
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("✎ 1 file changed: ") and lines[1].startswith("✎ 2 files changed")


def test_chat_keeps_a_failed_turns_notice_for_the_one_line_with_its_reason() -> None:
    out, err = io.StringIO(), io.StringIO()
    printer = ChatPrinter(out, err)
    printer.on_update({"kind": "notice", "severity": "error", "message": "HTTP 500"})
    printer.on_update({"kind": "notice", "severity": "warning", "message": "cut off"})
    printer.on_update({"kind": "turn_ended", "stopReason": "error"})
    assert out.getvalue() == "[warning] cut off\n── failed\n" and err.getvalue() == ""


def test_chat_colours_a_diff_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    question = {
        "tool": "edit_file",
        "agent": "local",
        "edits": [{"uri": "file:///w/a.py", "before": "x = 1\n", "after": "x = 2\n"}],
        "options": [{"optionId": "allow_once", "label": "Allow once"}],
    }
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("MILK_COLOR", "1")
    coloured, keys = ChatPrinter(io.StringIO()).question(question)
    assert "\x1b[31m-x = 1\x1b[0m" in coloured and "\x1b[32m+x = 2\x1b[0m" in coloured
    assert "\x1b[36m@@" in coloured and keys["o"] == "allow_once"
    monkeypatch.setenv("NO_COLOR", "1")
    plain, _ = ChatPrinter(io.StringIO()).question(question)
    assert "\x1b[" not in plain and "-x = 1" in plain


def test_chat_slash_words_are_commands_but_paths_are_messages() -> None:
    escalate = parse("/escalate  fix the parser ")
    assert escalate is not None and (escalate.name, escalate.text) == ("escalate", "fix the parser")
    bogus = parse("/Bogus")
    assert bogus is not None and bogus.name == "bogus" and not bogus.known
    assert parse("/etc/hosts is what?") is None and parse("//undo") is None
    assert parse("what is /undo?") is None


def test_chat_prints_an_advisor_plan_and_each_step_once_with_who_did_it() -> None:
    """Issue 32: the checklist when it comes, then a line as each step starts and ends."""
    out = io.StringIO()
    printer = ChatPrinter(out)

    def plan(*states: tuple[str, str | None]) -> dict[str, Any]:
        steps = [
            {"content": f"step {n}", "status": status} | ({"agent": agent} if agent else {})
            for n, (status, agent) in enumerate(states, 1)
        ]
        return {"kind": "plan", "steps": steps}

    printer.on_update(plan(("pending", None), ("pending", None)))
    printer.on_update(plan(("in_progress", "local"), ("pending", None)))
    printer.on_update(plan(("completed", "local"), ("pending", None)))
    printer.on_update(plan(("completed", "local"), ("in_progress", "local")))
    printer.on_update(plan(("completed", "local"), ("in_progress", "claude")))
    printer.on_update(plan(("completed", "local"), ("completed", "claude")))
    printer.on_update(plan(("completed", "local"), ("completed", "claude")))  # no change
    assert out.getvalue().splitlines() == [
        "☐ Claude's plan, 2 steps:",
        "   1. step 1",
        "   2. step 2",
        "▸ step 1: the local model",
        "☑ step 1 done by the local model",
        "▸ step 2: the local model",
        "▸ step 2: Claude",
        "☑ step 2 done by Claude",
    ]
    out.truncate(0), out.seek(0)
    printer = ChatPrinter(out)  # issue 39: a step milk applied itself
    printer.on_update(plan(("pending", None)))
    milk = plan(("completed", "local"))
    milk["steps"][0]["byMilk"] = True
    printer.on_update(milk)
    assert out.getvalue().splitlines()[-1] == "☑ step 1 done by milk itself"


def test_chat_does_not_print_another_doors_turn_over_the_prompt() -> None:
    out = io.StringIO()
    printer = ChatPrinter(out)
    printer.on_update({"kind": "text", "agent": "local", "delta": "theirs", "elsewhere": True})
    assert out.getvalue() == ""
