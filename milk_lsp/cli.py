"""Command line: serve LSP on stdio (default), `acp` (the Agent Client Protocol on stdio),
`chat` from a terminal, `undo`, `doctor`, `stats`, `--version`.

stdout carries the protocol when serving: every log line goes to stderr and to a file in
the user log dir, never to stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import logging.handlers
import os
import sys
from pathlib import Path
from typing import Any

from milk_lsp import __version__
from milk_lsp.system.redact import RedactingFilter, register_environment

logger = logging.getLogger("milk_lsp")

LOG_FILE_BYTES = 2_000_000


def setup_logging(verbose: bool) -> Path | None:
    root = logging.getLogger()
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    quiet = _DeliberateErrorFilter()
    secrets = RedactingFilter()
    register_environment()
    stderr = logging.StreamHandler(sys.stderr)
    stderr.addFilter(quiet)
    stderr.addFilter(secrets)
    stderr.setFormatter(fmt)
    stderr.setLevel(logging.DEBUG if verbose else logging.WARNING)
    root.addHandler(stderr)
    logging.getLogger("pygls").setLevel(logging.WARNING)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    from milk_lsp.config import log_dir

    log_path = Path(os.environ.get("MILK_LOG_DIR") or log_dir()) / "milk-lsp.log"
    try:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        file_handler = logging.handlers.RotatingFileHandler(
            log_path, maxBytes=LOG_FILE_BYTES, backupCount=2, encoding="utf-8"
        )
    except OSError as exc:
        logger.warning("cannot write the log file %s: %s", log_path, exc)
        return None
    file_handler.setFormatter(fmt)
    file_handler.addFilter(quiet)
    file_handler.addFilter(secrets)
    root.addHandler(file_handler)
    return log_path


class _DeliberateErrorFilter(logging.Filter):
    """Drops pygls' tracebacks for errors we answer on purpose (-32602, -32803, -32800), and
    the traceback of a client that went away (a broken pipe: one line says so)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(
            record.exc_info[1], BrokenPipeError | ConnectionResetError
        ):
            record.exc_info = record.exc_text = None
            return True
        if record.exc_info and record.name.startswith("pygls"):
            error = record.exc_info[1]
            if isinstance(error, asyncio.CancelledError):
                return False
            # pygls' JsonRpcException family, recognised without importing pygls here.
            if type(error).__module__.startswith("pygls") and type(error).__name__.startswith(
                "JsonRpc"
            ):
                return False
        return True


def _settings_from_args(args: argparse.Namespace) -> dict[str, Any]:
    settings: dict[str, Any] = {}
    local: dict[str, Any] = {}
    if args.base_url:
        local["baseUrl"] = args.base_url
    if args.model:
        local["model"] = args.model
    if local:
        settings["local"] = local
    if args.claude_path:
        settings["claude"] = {"path": args.claude_path}
    if args.storage_dir:
        settings["storageDir"] = args.storage_dir
    return settings


def _add_setting_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--base-url", help="local.baseUrl: the OpenAI-compatible endpoint")
    parser.add_argument("--model", help="local.model")
    parser.add_argument("--claude-path", help="claude.path: the Claude Code CLI")
    parser.add_argument("--storage-dir", help="storageDir: where sessions live")


def _workspace(args: argparse.Namespace) -> Path | None:
    """`--workspace`, resolved; None (said on stderr) when it is not a folder."""
    workspace: Path = args.workspace.resolve()
    if not workspace.is_dir():
        print(f"milk: workspace folder not found: {workspace}", file=sys.stderr)
        return None
    return workspace


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="milk-lsp",
        description="milk-lsp: a language server pairing a local model with Claude Code. "
        "With no command it serves LSP on stdio.",
    )
    parser.add_argument("--version", action="version", version=f"milk-lsp {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging on stderr")
    commands = parser.add_subparsers(dest="command")
    chat = commands.add_parser(
        "chat",
        help="chat from the terminal: one message, or a chat loop when none is given",
        description="Send one message (or a slash command: /undo, /escalate [text], "
        "/local text, /new, /context, /help), or, with no message, chat in a loop on one "
        "session until Ctrl-D.",
    )
    chat.add_argument("text", nargs="*", help="the message (none: the chat loop)")
    chat.add_argument("--workspace", type=Path, default=Path.cwd(), help="workspace folder")
    chat.add_argument("--route", choices=["auto", "local", "claude", "advise"], default="auto")
    chat.add_argument("--session", help="session id (default: the folder's latest)")
    _add_setting_flags(chat)
    undo = commands.add_parser(
        "undo", help="take back the files the last turn with changes changed"
    )
    undo.add_argument("--workspace", type=Path, default=Path.cwd(), help="workspace folder")
    undo.add_argument("--session", help="session id (default: the folder's latest)")
    undo.add_argument(
        "--turn", help="the turn to take back (default: the last one that changed files)"
    )
    undo.add_argument(
        "--force", action="store_true", help="also put back files changed since the turn"
    )
    _add_setting_flags(undo)
    doctor = commands.add_parser("doctor", help="check the local model, claude and storage")
    _add_setting_flags(doctor)
    stats = commands.add_parser(
        "stats", help="what the local model answered, what went to Claude and what it cost"
    )
    stats.add_argument("--workspace", type=Path, default=Path.cwd(), help="workspace folder")
    stats.add_argument("--json", action="store_true", help="print milk/stats' JSON")
    stats.add_argument("--storage-dir", help="storageDir: where sessions live")
    acp = commands.add_parser("acp", help="serve the Agent Client Protocol (ACP) on stdio")
    _add_setting_flags(acp)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "chat":
        from milk_lsp.terminal.chat import run_chat

        text = " ".join(args.text) if args.text else None  # None: the chat loop
        if text is not None and not text.strip():
            print(
                'milk: the message is empty: say what to ask, e.g. milk-lsp chat "what does '
                'main.py do?" (or milk-lsp chat alone to chat in a loop)',
                file=sys.stderr,
            )
            return 2
        workspace = _workspace(args)
        if workspace is None:
            return 2
        return run_chat(
            text,
            workspace,
            args.route,
            args.session,
            _settings_from_args(args),
            verbose=args.verbose,
        )
    if args.command == "undo":
        from milk_lsp.terminal.chat import run_undo

        workspace = _workspace(args)
        if workspace is None:
            return 2
        return asyncio.run(
            run_undo(
                workspace,
                args.session,
                args.force,
                _settings_from_args(args),
                turn_id=args.turn,
                verbose=args.verbose,
            )
        )
    if args.command == "doctor":
        from milk_lsp.terminal.doctor import run_doctor

        return asyncio.run(run_doctor(_settings_from_args(args)))
    if args.command == "stats":
        from milk_lsp.terminal.stats import run_stats

        workspace = _workspace(args)
        if workspace is None:
            return 2
        settings = {"storageDir": args.storage_dir} if args.storage_dir else {}
        return run_stats(workspace, settings, as_json=args.json)
    setup_logging(args.verbose)
    from milk_lsp.agents.claude.processes import kill_all_running
    from milk_lsp.agents.local.commands import kill_running_commands
    from milk_lsp.system.orphans import guard

    with guard(kill_all_running, kill_running_commands):  # both serving modes
        if args.command == "acp":
            from milk_lsp.acp.server import serve as serve_acp  # the ACP SDK loads only here

            return serve_acp(_settings_from_args(args))
        return serve()


def serve() -> int:
    from milk_lsp.lsp.server import server

    logger.info("milk-lsp %s serving on stdio", __version__)
    server.start_io()
    return 0
