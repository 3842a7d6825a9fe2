"""A rename the model began, finished by milk (`milk_lsp.guided.apply`): which name becomes
which is read from the model's own edit, never from the request's words."""

from __future__ import annotations

from milk_lsp.guided.apply import renamed, rest_of_rename

UTIL = "// xtob converts hex characters.\nfunc hexPairToByte(x1, x2 byte) (byte, bool) {\n}\n"
UUID = (
    "func Parse(s string) {\n"
    "\tfor i := range uuid {\n\t\tuuid[i], ok = xtob(s[i*2], s[i*2+1])\n\t\tif !ok {\n"
    "\t\t\treturn\n\t\t}\n\t}\n"
    "\tfor i := range uuid {\n\t\tuuid[i], ok = xtob(s[i*2], s[i*2+1])\n\t\tif !ok {\n"
    "\t\t\treturn\n\t\t}\n\t}\n}\n"
)


def test_a_rename_is_read_from_the_models_own_edit() -> None:
    assert renamed(
        "func xtob(x1, x2 byte) (byte, bool) {", "func hexPairToByte(x1, x2 byte) (byte, bool) {"
    ) == ("xtob", "hexPairToByte")
    assert renamed("def digits(n):", "def count_digits(n):") == ("digits", "count_digits")
    assert renamed("const limit = 10", "const limit = 20") is None  # a value, not a name
    assert renamed("a = f(x)", "b = g(x)") is None  # two names changed
    assert renamed("x = y + y", "x = z + y") is None  # not replaced wherever it stands


def test_the_rest_of_a_rename_is_an_edit_per_use_each_unique_in_its_file() -> None:
    texts = {"util.go": UTIL, "uuid.go": UUID}
    edits = rest_of_rename("xtob", "hexPairToByte", texts)
    assert [edit["path"] for edit in edits] == ["util.go", "uuid.go", "uuid.go"]
    for edit in edits:
        text = texts[edit["path"]]
        assert text.count(edit["old_text"]) == 1
        assert "xtob" not in edit["new_text"] and "hexPairToByte" in edit["new_text"]
    applied = UUID
    for edit in edits[1:]:
        applied = applied.replace(edit["old_text"], edit["new_text"])
    assert "xtob" not in applied and applied.count("hexPairToByte(s[i*2]") == 2


def test_a_name_with_many_uses_is_left_to_the_model() -> None:
    many = "".join(f"v{n} := add({n}, 1)\n" for n in range(12))
    assert rest_of_rename("add", "plus", {"a.go": many}) == []
