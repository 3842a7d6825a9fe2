"""milk-lsp: a language server that pairs a local model with Claude Code."""

__version__ = "0.1.0"
