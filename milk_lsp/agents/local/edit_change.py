"""One edit_file call's change, pure: applied to whatever text the file has.

The tool asks the user about the change applied to the file as it is, then applies it
again to the text there once allowed (the file may have changed meanwhile).
"""

from __future__ import annotations

from dataclasses import dataclass

from milk_lsp.agents.local.replace import (
    EditDoesNotApply,
    Replacement,
    Scope,
    replace_all,
    replace_once,
)
from milk_lsp.agents.local.symbols import (
    find_symbol,
    replace_symbol,
    symbol_line_range,
    symbols_work_for,
)


@dataclass(frozen=True)
class EditChange:
    """One edit_file call's change, applied to whatever text the file has (asked about
    first, then applied again to the text there once the user allowed it)."""

    old_text: str
    new_text: str
    symbol: str
    every: bool
    focus: tuple[str, ...]

    def apply(self, current: str | None, where: str) -> Replacement:
        python = where.endswith((".py", ".pyi"))
        if self.symbol and not symbols_work_for(where):
            raise EditDoesNotApply(
                "symbol works for source files milk parses only (Python, JavaScript, Go, Rust,"
                f" Java, C, …); for {where} give old_text instead."
            )
        if self.symbol and current is not None and not self.old_text:
            text, span = replace_symbol(current, self.symbol, self.new_text, where)
            return Replacement(text, span.first_line, span.last_line, f"{span.kind} {span.name}")
        scopes: list[Scope] = []
        if self.symbol and current is not None:
            span = find_symbol(current, self.symbol, where)
            scopes.append(Scope(self.symbol, span.first_line, span.last_line))
        elif python and current is not None:
            for name in self.focus:
                lines = symbol_line_range(current, name)
                if lines is not None:
                    scopes.append(Scope(name, *lines))
        if self.every and current is not None and self.old_text:
            # a rename goes through the whole file, unless the model named a symbol to rename
            # inside (a module-level symbol named as the old text is the name renamed itself)
            given = scopes[:1] if self.symbol and not self._renames_symbol() else []
            return replace_all(current, self.old_text, self.new_text, where, given)
        return replace_once(
            current, self.old_text, self.new_text, where, scopes, scope_given=bool(self.symbol)
        )

    def _renames_symbol(self) -> bool:
        """The call renames the symbol it names (`symbol` and `old_text` are one top-level
        name): its uses are all over the file, not inside the symbol."""
        name = self.symbol.strip().removesuffix("()")
        return name.isidentifier() and name == self.old_text.strip()
