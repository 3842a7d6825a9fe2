"""What the store's companions (`elsewhere.py`, `routes.py`) need of `SessionStore`: its
transactions and its reads. A protocol, so that they need not import the store that holds
them."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol


class Database(Protocol):
    """`SessionStore`'s transactions and reads."""

    def transaction(self) -> AbstractContextManager[sqlite3.Connection]: ...

    def read(self, sql: str, args: Sequence[Any] = ()) -> list[sqlite3.Row]: ...
