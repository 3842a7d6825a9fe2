"""The advisor route: Claude plans from a brief, milk and the local model do (`route`)."""

from milk_lsp.engine.advisor.route import Advisor, Checklist

__all__ = ["Advisor", "Checklist"]
