"""Sessions: the data model, its SQLite store and the summary bricks."""
