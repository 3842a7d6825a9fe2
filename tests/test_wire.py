"""The wire contract in `milk_lsp/wire/`: params errors, camelCase, exclude_none, labels,
and drift against PROTOCOL.md and the editor clients' method tables."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic.alias_generators import to_camel

from milk_lsp import wire

REPO = Path(__file__).resolve().parents[1]
# Copied from PROTOCOL.md (the project never reads ../shared at test time).
PROTOCOL_METHODS = {
    "milk/session/new",
    "milk/session/list",
    "milk/session/get",
    "milk/session/delete",
    "milk/chat",
    "milk/escalate",
    "milk/cancel",
    "milk/context",
    "milk/status",
    "milk/stats",
    "milk/update",
    "milk/requestPermission",
    "milk/turn/changes",
    "milk/turn/undo",
}
PROTOCOL_LABELS = ["Allow once", "Allow for this session", "Deny"]
NVIM_METHODS = REPO / "editors" / "nvim" / "lua" / "milk" / "methods.lua"
VSCODE_METHODS = REPO / "editors" / "vscode" / "src" / "methods.ts"


def wire_models() -> list[type[wire.WireModel]]:
    return [
        obj
        for _, obj in inspect.getmembers(wire, inspect.isclass)
        if issubclass(obj, wire.WireModel) and obj is not wire.WireModel
    ]


def params_models() -> set[type[wire.WireModel]]:
    return {model for model in wire_models() if model.__name__.endswith("Params")}


def _name(model: object) -> str:
    return str(getattr(model, "__name__", model))


def method_constants() -> dict[str, str]:
    """Every constant of the wire package that spells a method name."""
    return {
        name: value
        for name, value in vars(wire).items()
        if name.isupper() and isinstance(value, str) and value.startswith("milk/")
    }


# ---- parse(): errors name the field --------------------------------------------------------

_PERMISSION = {
    "sessionId": "s",
    "turnId": "t",
    "agent": "local",
    "toolCallId": "c",
    "tool": "run_command",
    "input": {"command": "ls"},
    "options": [{"optionId": "deny", "label": "Deny"}],
}

BAD_PARAMS: list[tuple[type[wire.WireModel], Any, str]] = [
    (wire.SessionNewParams, {"workspaceFolder": 5}, "workspaceFolder"),
    (wire.SessionNewParams, {"title": ["x"]}, "title"),
    (wire.SessionListParams, {"workspaceFolder": {"uri": "x"}}, "workspaceFolder"),
    (wire.SessionGetParams, {}, "sessionId"),
    (wire.SessionGetParams, {"sessionId": ""}, "sessionId"),
    (wire.SessionGetParams, {"sessionId": "s", "limit": 0}, "limit"),
    (wire.SessionGetParams, {"sessionId": "s", "limit": "ten"}, "limit"),
    (wire.SessionIdParams, {}, "sessionId"),
    (wire.SessionIdParams, {"sessionId": 7}, "sessionId"),
    (wire.ChatParams, {}, "text"),
    (wire.ChatParams, {"text": ""}, "text"),
    (wire.ChatParams, {"text": "hi", "route": "sideways"}, "route"),
    (wire.ChatParams, {"text": "hi", "sessionId": 5}, "sessionId"),
    (wire.ChatParams, {"text": "hi", "workspaceFolder": 5}, "workspaceFolder"),
    (wire.ChatParams, {"text": "hi", "context": "file.py"}, "context"),
    (wire.ChatParams, {"text": "hi", "context": [{}]}, "context.0.uri"),
    (
        wire.ChatParams,
        {
            "text": "hi",
            "context": [
                {
                    "uri": "file:///a",
                    "range": {
                        "start": {"line": -1, "character": 0},
                        "end": {"line": 0, "character": 0},
                    },
                }
            ],
        },
        "context.0.range.start.line",
    ),
    (
        wire.ChatParams,
        {
            "text": "hi",
            "context": [{"uri": "file:///a", "range": {"start": {"line": 0, "character": 0}}}],
        },
        "context.0.range.end",
    ),
    (
        wire.ChatParams,
        {"text": "hi", "context": [{"uri": "file:///a", "text": 3}]},
        "context.0.text",
    ),
    (wire.EscalateParams, {}, "sessionId"),
    (wire.EscalateParams, {"sessionId": "s", "text": 5}, "text"),
    (wire.EscalateParams, {"sessionId": "s", "reason": ["r"]}, "reason"),
    (wire.TurnParams, {"sessionId": "s"}, "turnId"),
    (wire.TurnParams, {"sessionId": "s", "turnId": ""}, "turnId"),
    (wire.TurnUndoParams, {"sessionId": "s", "turnId": "t", "force": "maybe"}, "force"),
    (wire.StatsParams, {"workspaceFolder": 3}, "workspaceFolder"),
    (wire.StatusParams, {"checkLogin": [True]}, "checkLogin"),
    (wire.ContextParams, {}, "sessionId"),
    (wire.ContextParams, {"sessionId": "s", "reason": 1}, "reason"),
    (wire.RequestPermissionParams, {**_PERMISSION, "agent": "gpt"}, "agent"),
    (wire.RequestPermissionParams, {**_PERMISSION, "input": "ls"}, "input"),
    (
        wire.RequestPermissionParams,
        {**_PERMISSION, "options": [{"optionId": "maybe", "label": "Maybe"}]},
        "options.0.optionId",
    ),
    (
        wire.RequestPermissionParams,
        {k: v for k, v in _PERMISSION.items() if k != "toolCallId"},
        "toolCallId",
    ),
]


def test_the_table_covers_every_params_model() -> None:
    assert {model for model, _, _ in BAD_PARAMS} == params_models()


@pytest.mark.parametrize(
    ("model", "raw", "field"),
    BAD_PARAMS,
    ids=[f"{model.__name__}-{field}-{i}" for i, (model, _, field) in enumerate(BAD_PARAMS)],
)
def test_parse_error_names_the_field(model: type[wire.WireModel], raw: Any, field: str) -> None:
    with pytest.raises(wire.ParamsError) as caught:
        wire.parse(model, raw)
    message = str(caught.value)
    assert message.startswith("invalid params: ")
    assert re.search(rf"(^|[ ;]){re.escape(field)}: ", message), message
    # The wire spelling, never the Python one.
    snake = re.sub(r"(?<!^)([A-Z])", r"_\1", field.split(".")[-1]).lower()
    if snake != field.split(".")[-1]:
        assert snake not in message, message


@pytest.mark.parametrize("model", sorted(params_models(), key=_name), ids=_name)
@pytest.mark.parametrize("raw", [[], "text", 3, True])
def test_params_that_are_not_an_object_are_refused(model: type[wire.WireModel], raw: Any) -> None:
    with pytest.raises(wire.ParamsError, match=r"^invalid params: params: "):
        wire.parse(model, raw)


def test_params_error_is_a_value_error() -> None:
    assert issubclass(wire.ParamsError, ValueError)


def test_parse_of_no_params_is_an_empty_object() -> None:
    assert wire.parse(wire.SessionListParams, None) == wire.SessionListParams()
    with pytest.raises(wire.ParamsError, match="sessionId: Field required"):
        wire.parse(wire.SessionIdParams, None)


def test_parse_reads_camel_case_and_ignores_unknown_keys() -> None:
    parsed = wire.parse(
        wire.ChatParams,
        {
            "sessionId": "s",
            "workspaceFolder": "file:///w",
            "text": "hi",
            "route": "local",
            "context": [
                {
                    "uri": "file:///w/a.py",
                    "range": {
                        "start": {"line": 1, "character": 0},
                        "end": {"line": 3, "character": 2},
                    },
                }
            ],
            "someFutureField": 1,
        },
    )
    assert parsed.session_id == "s"
    assert parsed.workspace_folder == "file:///w"
    assert parsed.route == "local"
    assert parsed.context[0].range is not None
    assert parsed.context[0].range.end.character == 2
    assert wire.parse(wire.SessionGetParams, {"sessionId": "s"}).limit == 50


# ---- camelCase and exclude_none on the wire ----------------------------------------------


@pytest.mark.parametrize("model", wire_models(), ids=_name)
def test_every_field_has_a_camel_case_wire_name(model: type[wire.WireModel]) -> None:
    for name, info in model.model_fields.items():
        assert info.alias == to_camel(name), (model.__name__, name)
        assert "_" not in (info.alias or "")


def _keys(value: Any, free_form: frozenset[str] = frozenset({"input"})) -> list[str]:
    """All keys of nested dicts, skipping the free-form ones (tool input)."""
    keys: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            keys.append(key)
            if key not in free_form:
                keys += _keys(item, free_form)
    elif isinstance(value, list):
        for item in value:
            keys += _keys(item, free_form)
    return keys


def test_results_go_out_in_camel_case_without_nones() -> None:
    result = wire.TurnResult(
        session_id="s",
        turn_id="t",
        agent="local",
        stop_reason="end_turn",
        text="hello",
        usage=wire.Usage(input_tokens=0, output_tokens=3),
    )
    out = result.to_wire()
    assert out == {
        "sessionId": "s",
        "turnId": "t",
        "agent": "local",
        "stopReason": "end_turn",
        "text": "hello",
        "usage": {"inputTokens": 0, "outputTokens": 3},
    }


def test_nested_results_exclude_none_but_keep_falsy_values() -> None:
    got = wire.SessionGetResult(
        session=wire.SessionInfo(
            session_id="s",
            workspace_folder="/w",
            title="",
            state="routing",
            active_agent="local",
            created_at="2025-01-01T00:00:00Z",
            updated_at="2025-01-01T00:00:00Z",
            turn_count=0,
        ),
        turns=[
            wire.TurnRecordWire(
                turn_id="t",
                role="assistant",
                agent="local",
                text="",
                tool_calls=[
                    wire.ToolCallWire(
                        tool_call_id="c", name="read_file", input={"some_path": "a"}, is_error=False
                    )
                ],
                status="ok",
                created_at="2025-01-01T00:00:00Z",
            )
        ],
        bricks=wire.Bricks(
            current_need="", escalation_brief="", last_local_summary="", last_claude_summary=""
        ),
    ).to_wire()
    assert "currentNeed" not in got["session"] and "claudeSessionId" not in got["session"]
    assert got["session"]["title"] == "" and got["session"]["turnCount"] == 0
    call = got["turns"][0]["toolCalls"][0]
    assert call == {
        "toolCallId": "c",
        "name": "read_file",
        "input": {"some_path": "a"},
        "isError": False,
    }
    assert got["bricks"] == {
        "currentNeed": "",
        "escalationBrief": "",
        "lastLocalSummary": "",
        "lastClaudeSummary": "",
    }
    assert all("_" not in key for key in _keys(got)), _keys(got)


def test_status_goes_out_in_camel_case_without_nones() -> None:
    status = wire.Status(
        version="0.1.0",
        local=wire.LocalStatus(base_url="http://x/v1", reachable=False, error="refused"),
        claude=wire.ClaudeStatus(found=False, error="missing"),
        storage="/s",
    ).to_wire()
    assert status == {
        "version": "0.1.0",
        "local": {"baseUrl": "http://x/v1", "reachable": False, "error": "refused"},
        "claude": {"found": False, "error": "missing"},
        "storage": "/s",
    }


def test_context_preview_goes_out_in_camel_case() -> None:
    preview = wire.ContextPreview(
        mode="first",
        argv=["claude", "--print"],
        context_file="static",
        user_message_prefix="",
        chars=wire.ContextChars(context_file=6, user_message_prefix=0),
    ).to_wire()
    assert preview == {
        "mode": "first",
        "argv": ["claude", "--print"],
        "contextFile": "static",
        "userMessagePrefix": "",
        "chars": {"contextFile": 6, "userMessagePrefix": 0},
    }


# ---- permission options ------------------------------------------------------------------

LABELS = {"allow_once": "Allow once", "allow_session": "Allow for this session", "deny": "Deny"}


def test_permission_options_carry_the_protocol_labels() -> None:
    options = wire.permission_options(["allow_once", "allow_session", "deny"])
    assert [o.to_wire() for o in options] == [
        {"optionId": "allow_once", "label": "Allow once"},
        {"optionId": "allow_session", "label": "Allow for this session"},
        {"optionId": "deny", "label": "Deny"},
    ]
    assert wire.PERMISSION_LABELS == LABELS
    assert [o.option_id for o in wire.permission_options(["deny"])] == ["deny"]


def test_permission_labels_match_protocol_md() -> None:
    assert list(LABELS.values()) == PROTOCOL_LABELS


def test_request_permission_params_round_trip() -> None:
    params = wire.RequestPermissionParams.model_validate(
        {
            **_PERMISSION,
            "description": None,
            "options": wire.permission_options(["allow_once", "deny"]),
        }
    )
    out = params.to_wire()
    assert "description" not in out
    assert out["options"] == [
        {"optionId": "allow_once", "label": "Allow once"},
        {"optionId": "deny", "label": "Deny"},
    ]
    assert set(out) == {"sessionId", "turnId", "agent", "toolCallId", "tool", "input", "options"}


# ---- drift: PROTOCOL.md and the editor clients ------------------------------------------


def test_wire_constants_are_the_protocol_md_methods() -> None:
    assert set(method_constants().values()) == PROTOCOL_METHODS


def _editor_methods(path: Path, pattern: str) -> dict[str, str]:
    return dict(re.findall(pattern, path.read_text(encoding="utf-8")))


EDITORS = [
    pytest.param(NVIM_METHODS, r"\bM\.([A-Z_]+)\s*=\s*'(milk/[^']*)'", id="nvim-methods.lua"),
    pytest.param(VSCODE_METHODS, r"\b([A-Z_]+):\s*'(milk/[^']*)'", id="vscode-methods.ts"),
]


@pytest.mark.parametrize(("path", "pattern"), EDITORS)
def test_every_wire_method_appears_in_the_editor_methods_file(path: Path, pattern: str) -> None:
    if not path.is_file():
        pytest.skip(f"{path.relative_to(REPO)} does not exist")
    text = path.read_text(encoding="utf-8")
    missing = [value for value in method_constants().values() if f"'{value}'" not in text]
    assert missing == [], f"{path.relative_to(REPO)} lacks {missing}"
    # Same constant names for the same strings, and no method the server does not know.
    assert _editor_methods(path, pattern) == method_constants()


@pytest.mark.parametrize(("path", "pattern"), EDITORS)
def test_editor_protocol_version_matches(path: Path, pattern: str) -> None:
    if not path.is_file():
        pytest.skip(f"{path.relative_to(REPO)} does not exist")
    found = re.search(r"PROTOCOL_VERSION\s*=\s*(\d+)", path.read_text(encoding="utf-8"))
    assert found is not None
    assert int(found.group(1)) == wire.PROTOCOL_VERSION


# ---- milk/update: the editors name the same kinds and fields as the server ----------------------

BASE_FIELDS = {"sessionId", "turnId", "seq", "kind", "elsewhere"}


def server_update_fields() -> dict[str, set[str]]:
    """Kind → the wire names of its fields (besides the common ones), from the wire package's models."""
    out: dict[str, set[str]] = {}
    for model in wire.UPDATE_MODELS:
        kind = model.model_fields["kind"].annotation.__args__[0]  # type: ignore[union-attr]
        names = {info.alias or name for name, info in model.model_fields.items()}
        out[kind] = names - BASE_FIELDS
    return out


def lua_update_fields() -> dict[str, set[str]]:
    text = NVIM_METHODS.read_text(encoding="utf-8")
    kinds = set(
        re.findall(r"^\s+[A-Z_]+ = '([a-z_]+)',$", text.split("M.kind = {")[1].split("}")[0], re.M)
    )
    block = text.split("M.fields = {")[1].split("\n}\n")[0]
    fields = {
        kind: set(re.findall(r"'([A-Za-z]+)'", names))
        for kind, names in re.findall(r"^\s+([a-z_]+) = \{([^}]*)\}", block, re.M)
    }
    assert set(fields) == kinds, "methods.lua: M.fields covers exactly the kinds of M.kind"
    return fields


def ts_update_fields() -> dict[str, set[str]]:
    """Kind → fields of the `…Update` interfaces of methods.ts (extends resolved)."""
    text = VSCODE_METHODS.read_text(encoding="utf-8")
    interfaces = {
        name: (extends or "", body)
        for name, extends, body in re.findall(
            r"interface (\w+)(?: extends ([\w, ]+))? \{(.*?)\n\}", text, re.S
        )
    }

    def fields(name: str) -> set[str]:
        extends, body = interfaces[name]
        own = set(re.findall(r"^\s+(\w+)\??:", body, re.M))
        for parent in filter(None, (p.strip() for p in extends.split(","))):
            own |= fields(parent)
        return own

    out: dict[str, set[str]] = {}
    for name in interfaces:
        if not name.endswith("Update") or name == "UpdateBase":
            continue
        kinds = re.findall(r"'([a-z_]+)'", re.search(r"kind: ([^;]+);", interfaces[name][1])[1])  # type: ignore[index]
        for kind in kinds:
            out[kind] = fields(name) - BASE_FIELDS
    return out


@pytest.mark.parametrize(
    "editor",
    [pytest.param(lua_update_fields, id="nvim"), pytest.param(ts_update_fields, id="vscode")],
)
def test_editors_name_the_same_update_kinds_and_fields(editor: Any) -> None:
    assert editor() == server_update_fields()


def test_every_update_the_server_sends_is_checked_against_its_model() -> None:
    update = {"sessionId": "s", "turnId": "t", "seq": 1, "kind": "text", "agent": "local"}
    assert wire.build_update({**update, "delta": "hi"})["delta"] == "hi"
    with pytest.raises(ValueError, match="text"):
        wire.build_update(update)  # no delta
    with pytest.raises(ValueError, match="extra"):
        wire.build_update({**update, "delta": "hi", "surprise": 1})
    with pytest.raises(ValueError, match="no_such_kind"):
        wire.build_update({**update, "kind": "no_such_kind", "delta": "hi"})
