"""`blank_space_only`: edits that add invisible blank space and change no code (ini's
whitespace-default-fr: asked for spaces around `=`, the 1.5B model added lines of two spaces)
are no change; edits that remove blanks, add empty lines or change code are left alone."""

from __future__ import annotations

import pytest

from milk_lsp.text import blank_space_only

JS = "const encode = (obj, opt = {}) => {\n  opt.align = opt.align === true\n  return obj\n}\n"
PY = "def area(w, h):\n    return w * h\n\n\ndef perimeter(w, h):\n    return 2 * (w + h)\n"
GO = "package shape\n\nfunc Area(w, h int) int {\n\treturn w * h\n}\n"

JUNK = [
    pytest.param(
        {"lib/ini.js": (JS, JS.replace("{\n", "{\n  \n", 1).replace("true\n", "true\n  \n"))},
        id="js-lines-of-two-spaces",
    ),
    pytest.param({"area.py": (PY, PY.replace("h):\n", "h):    \n", 1))}, id="py-trailing-spaces"),
    pytest.param({"shape.go": (GO, GO.replace("{\n", "{\n\t\n"))}, id="go-a-line-of-a-tab"),
]


@pytest.mark.parametrize("edited", JUNK)
def test_blank_space_added_and_nothing_else_is_no_change(
    edited: dict[str, tuple[str, str]],
) -> None:
    said = blank_space_only(dict(edited))
    assert said is not None and "change no code" in said
    assert next(iter(edited)) in said


KEPT = [
    # asked for: trailing blanks removed, empty lines between functions (PEP 8), code changed
    pytest.param({"lib/ini.js": (JS.replace("{\n", "{  \n"), JS)}, id="trailing-removed"),
    pytest.param({"area.py": (PY.replace("\n\n\n", "\n"), PY)}, id="empty-lines-added"),
    pytest.param({"shape.go": (GO, GO.replace("w * h", "w*h"))}, id="go-code-spacing"),
    pytest.param(
        {"lib/ini.js": (JS, JS.replace("=== true\n", "=== true  \n  opt.sort = true\n"))},
        id="code-and-a-blank",
    ),
    pytest.param({"area.py": (PY, PY.replace("    return w", "        return w"))}, id="reindent"),
    pytest.param({"new.py": (None, "  \n")}, id="a-new-file"),
    pytest.param({"area.py": (PY, PY)}, id="unchanged"),
    pytest.param(
        {"a.py": (PY, PY.replace("h):\n", "h):  \n", 1)), "b.js": (JS, JS.replace("obj\n", "{}\n"))},
        id="one-file-of-two-changed",
    ),
]


@pytest.mark.parametrize("edited", KEPT)
def test_changes_and_asked_for_blank_space_are_left_alone(
    edited: dict[str, tuple[str | None, str | None]],
) -> None:
    assert blank_space_only(dict(edited)) is None
