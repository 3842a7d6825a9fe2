"""Layering: only the LSP glue knows pygls/lsprotocol; the server starts without the heavy
Claude SDK.

Domain modules are everything under `milk_lsp/` except the LSP glue (the `lsp/` folder) and
the terminal front door (`terminal/`: `milk-lsp chat` is an LSP client itself). Pydantic is allowed
where the wire and settings models live (`wire/`, `config.py`). Paths are relative to the
package; one ending in `/` names a folder.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "milk_lsp"
LSP_GLUE = {"lsp/", "terminal/"}
PYDANTIC_ALLOWED = {"wire/", "config.py", "guided/shape.py"}
"""The wire, the settings, and the one shape a guided reply from the model may take."""
LSP_PACKAGES = {"pygls", "lsprotocol"}
HEAVY_PACKAGES = {"claude_agent_sdk", "mcp"}


def module_files() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _package_path(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


def in_set(path: Path, names: set[str]) -> bool:
    """Whether `path` is one of `names` (package-relative files, or folders ending in `/`)."""
    rel = _package_path(path)
    return any(rel == name or (name.endswith("/") and rel.startswith(name)) for name in names)


def domain_files() -> list[Path]:
    return [path for path in module_files() if not in_set(path, LSP_GLUE)]


def imported_packages(path: Path) -> set[str]:
    """Top-level packages a module imports anywhere (module level, functions, TYPE_CHECKING)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id)
            in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.add(node.args[0].value.split(".")[0])
    return found


def imported_milk_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("milk_lsp"))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "milk_lsp":
                found.update(f"milk_lsp.{a.name}" for a in node.names)
            elif node.module.startswith("milk_lsp."):
                found.add(node.module)
    return found


def _rel(path: Path) -> str:
    return str(path.relative_to(PACKAGE.parent))


def test_the_glue_modules_exist() -> None:
    """Guards the exclusions: a rename must update this file, not silently widen it."""
    for name in LSP_GLUE | PYDANTIC_ALLOWED:
        target = PACKAGE / name
        assert target.is_dir() if name.endswith("/") else target.is_file(), name


@pytest.mark.parametrize("path", domain_files(), ids=_rel)
def test_domain_module_does_not_import_pygls_or_lsprotocol(path: Path) -> None:
    assert imported_packages(path) & LSP_PACKAGES == set()


@pytest.mark.parametrize(
    "path", [p for p in domain_files() if not in_set(p, PYDANTIC_ALLOWED)], ids=_rel
)
def test_pydantic_stays_in_the_wire_and_settings_models(path: Path) -> None:
    assert "pydantic" not in imported_packages(path)


@pytest.mark.parametrize(
    "path",
    [p for p in domain_files() if not in_set(p, {"cli.py", "__main__.py"})],
    ids=_rel,
)
def test_domain_module_does_not_import_the_lsp_glue(path: Path) -> None:
    glue = {module_name(p) for p in module_files() if in_set(p, LSP_GLUE)}
    assert imported_milk_modules(path) & glue == set()


def test_the_ast_scan_sees_the_glue_imports() -> None:
    """The scanner itself works: the glue modules are caught importing pygls."""
    assert "pygls" in imported_packages(PACKAGE / "lsp/server.py")
    assert "lsprotocol" in imported_packages(PACKAGE / "lsp/editor.py")


def _run_python(code: str) -> Any:
    """Run `code` in a fresh interpreter; returns the JSON its last stdout line holds."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_domain_modules_do_not_pull_in_pygls_or_the_sdk_even_indirectly() -> None:
    names = [
        ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        for path in domain_files()
        if path.name != "__main__.py"
    ]
    code = (
        "import importlib, json, sys\n"
        f"for name in {names!r}:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules}"
        f" & set({sorted(LSP_PACKAGES | HEAVY_PACKAGES)!r}))))\n"
    )
    assert _run_python(code) == []


def test_server_import_stays_light() -> None:
    """`import milk_lsp.lsp.server` must not load the Claude SDK or MCP (start-up time)."""
    code = (
        "import json, sys, time\n"
        "start = time.perf_counter()\n"
        "import milk_lsp.lsp.server\n"
        "took = time.perf_counter() - start\n"
        "heavy = sorted({m.split('.')[0] for m in sys.modules}"
        f" & set({sorted(HEAVY_PACKAGES)!r}))\n"
        "print(json.dumps({'seconds': took, 'heavy': heavy, 'modules': len(sys.modules)}))\n"
    )
    result = _run_python(code)
    print(
        f"\nimport milk_lsp.lsp.server: {result['seconds'] * 1000:.0f} ms, "
        f"{result['modules']} modules loaded"
    )
    assert result["heavy"] == []


def milk_imports(path: Path, modules: set[str]) -> set[str]:
    """The milk_lsp modules a module imports anywhere (module level, functions,
    TYPE_CHECKING): an import only for types is still a dependency of the design."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                found.add(name if name in modules else node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found & modules


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_import_cycles() -> None:
    """engine ↔ escalation, claude ↔ claude_cli and editor ↔ server were cycles once; the
    hosts a module needs are Protocols it names itself."""
    modules = {module_name(path): path for path in module_files()}
    graph = {name: milk_imports(path, set(modules)) - {name} for name, path in modules.items()}
    cycles: list[list[str]] = []

    def visit(name: str, trail: list[str], done: set[str]) -> None:
        for dep in sorted(graph[name]):
            if dep in trail:
                cycles.append([*trail[trail.index(dep) :], dep])
            elif dep not in done:
                visit(dep, [*trail, dep], done)
        done.add(name)

    finished: set[str] = set()
    for name in sorted(graph):
        if name not in finished:
            visit(name, [name], finished)
    assert cycles == [], " ; ".join(" → ".join(cycle) for cycle in cycles)
    assert "milk_lsp.engine" in graph["milk_lsp.lsp.server"], "the scan sees real imports"
