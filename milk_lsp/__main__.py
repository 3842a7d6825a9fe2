"""`python -m milk_lsp` runs the command-line entry point."""

from milk_lsp.cli import main

raise SystemExit(main())
