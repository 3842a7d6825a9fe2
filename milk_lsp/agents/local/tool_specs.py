"""What the local model is told about its workspace tools: their names and JSON schemas.

The entries are the same bytes for every workspace, session and turn (the local model server
caches the prompt prefix they are part of): nothing here depends on the folder or the turn.
The tools themselves are `milk_lsp.agents.local.tools`; `LocalTools` is what the agent loop
and milk's own look need of them.
"""

from __future__ import annotations

from typing import Any, Protocol

READ_FILE = "read_file"
LIST_DIRECTORY = "list_directory"
SEARCH_TEXT = "search_text"
EDIT_FILE = "edit_file"
RUN_COMMAND = "run_command"
TOOL_ORDER = (READ_FILE, LIST_DIRECTORY, SEARCH_TEXT, EDIT_FILE, RUN_COMMAND)
"""The order the model is offered them in."""

MAX_SEARCH_MATCHES = 200
"""search_text's most matches (the model is told the number)."""


def _function(
    name: str, description: str, properties: dict[str, Any], required: list[str]
) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            },
        },
    }


ESCALATE_TOOL_NAME = "escalate_to_claude"

ESCALATE_TOOL_SPEC: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": ESCALATE_TOOL_NAME,
        "description": (
            "Hand this request over to Claude, a much stronger coding agent that works in the "
            "same workspace. Call it instead of guessing when the task is beyond you: changes "
            "across many files, a design decision, a bug you could not find after looking, "
            "an answer you are not sure of, or when the user asks for Claude. Your part of the "
            "turn ends when you call it, so call it alone, after any tool calls you still need. "
            "In `reason`, tell Claude what the user needs and what you found so far."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "reason": {
                    "type": "string",
                    "description": (
                        "Why Claude should take over: the user's need, what you tried or "
                        "learned, and what is left to do."
                    ),
                }
            },
            "required": ["reason"],
        },
    },
}


def _path(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


def tool_specs(default_timeout_seconds: float) -> list[dict[str, Any]]:
    """The tool entries. Their text is fixed (no folder, session or time in it), and a fresh
    copy each call, so that callers may change theirs."""
    return [
        _function(
            READ_FILE,
            "Use this to see what a file contains, before you answer about it and before you"
            " edit it. Returns the file's text exactly (the editor's unsaved text when the file"
            " is open). For a long file, read part of it with start_line and end_line (1-based,"
            " inclusive).",
            {
                "path": _path("The file, relative to the workspace folder, as listed or found."),
                "start_line": {"type": "integer", "minimum": 1, "description": "First line."},
                "end_line": {"type": "integer", "minimum": 1, "description": "Last line."},
            },
            ["path"],
        ),
        _function(
            LIST_DIRECTORY,
            "Use this to see which files and folders a folder holds, when you do not know the"
            " file names yet. Returns the names sorted, one per line; folders end with '/'.",
            {
                "path": {
                    **_path("The folder, relative to the workspace folder; '.' is the top."),
                    "default": ".",
                }
            },
            [],
        ),
        _function(
            SEARCH_TEXT,
            "Use this to find where a name or some text occurs when you do not know which file"
            " holds it. Searches the text files under path (a folder or one file) and returns"
            f" 'file:line: text' lines, at most {MAX_SEARCH_MATCHES}. The pattern is plain text,"
            " case-sensitive; with regex=true it is a Python regular expression (keep it"
            " simple). Skips .git, node_modules, .venv and binary files.",
            {
                "pattern": {"type": "string", "description": "Text to find, case-sensitive."},
                "path": {
                    **_path("Where to search, relative to the workspace folder; '.' is all."),
                    "default": ".",
                },
                "regex": {"type": "boolean", "default": False},
            },
            ["pattern"],
        ),
        _function(
            EDIT_FILE,
            "Use this to change a file or to create a new one. old_text is text copied from"
            " the file (from read_file or from the file shown to you), new_text replaces it;"
            " old_text must occur once in the file: include nearby lines to make it unique."
            " With replace_all=true every occurrence is replaced (a rename). In a source file,"
            " symbol names a function, class, method (Class.method; in Go Type.Method, in Rust"
            " the impl's Type.method), module-level variable or, in Python, a parameter's"
            " default (function.parameter): with an empty old_text, new_text replaces that"
            " whole definition (or its default value); with old_text, only the text inside it"
            " is replaced. To create a new file, give an empty old_text and the whole file as"
            " new_text. The user is asked first.",
            {
                "path": _path("The file, relative to the workspace folder, as listed or found."),
                "old_text": {
                    "type": "string",
                    "description": "The text to replace, copied from the file.",
                },
                "new_text": {"type": "string", "description": "Text to put in its place."},
                "symbol": {
                    "type": "string",
                    "description": "The definition to edit, e.g. main, Parser.run,"
                    " slugify.max_length (a Python default).",
                },
                "replace_all": {"type": "boolean", "default": False},
            },
            ["path", "new_text"],
        ),
        _function(
            RUN_COMMAND,
            "Use this to run tests, builds, linters or other programs. Runs a shell command"
            " (sh -c) in the workspace folder and returns its output (stdout and stderr"
            " together) and exit code. It gets no input, so it must not wait for typing. The"
            " user is asked first.",
            {
                "command": {"type": "string", "description": "The shell command to run."},
                "timeout_seconds": {
                    "type": "number",
                    "description": "Stop the command after this many seconds"
                    f" (default {default_timeout_seconds:g}).",
                },
            },
            ["command"],
        ),
    ]


class ToolOutcomeLike(Protocol):
    """What `LocalTools.call` returns (`milk_lsp.agents.local.tools.ToolOutcome` fits)."""

    @property
    def output(self) -> str: ...

    @property
    def is_error(self) -> bool: ...

    @property
    def denied(self) -> bool: ...

    @property
    def made_already(self) -> bool: ...


class LocalTools(Protocol):
    """The workspace tools the local model may call (`tools.WorkspaceTools`)."""

    @property
    def names(self) -> frozenset[str]: ...

    def specs(self) -> list[dict[str, Any]]:
        """OpenAI `tools` entries."""
        ...

    async def call(
        self, tool_call_id: str, name: str, arguments: dict[str, Any]
    ) -> ToolOutcomeLike: ...
