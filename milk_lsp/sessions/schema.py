"""The session database's schema: its version and the migrations that reach it.

Each migration takes the database from the version before; `SessionStore` runs the ones a
file lacks when it opens it, in one transaction.
"""

from __future__ import annotations

SCHEMA_VERSION = 9

# v1 is the schema from before bricks existed; v2 adds the ADR 0029 / ADR 0004 columns;
# v3 the claims of running turns; v4 the requests to cancel a turn run by another process;
# v5 how each turn ended (stop reason, escalation, error, usage, the files it changed);
# v6 where each turn went and what Claude cost (the routing numbers of `milk/stats`);
# v7 the live updates of running turns, for the other processes' doors;
# v8 an advisor turn's steps (who did them) and what Claude's plan cost;
# v9 the advisor steps milk applied itself (issue 39).
MIGRATIONS: dict[int, str] = {
    1: """
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            workspace TEXT NOT NULL,
            title TEXT NOT NULL DEFAULT '',
            state TEXT NOT NULL DEFAULT 'routing',
            active_agent TEXT NOT NULL DEFAULT 'local',
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            turn_count INTEGER NOT NULL DEFAULT 0,
            record_count INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX sessions_by_workspace ON sessions (workspace, updated_at);
        CREATE TABLE records (
            session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            turn_id TEXT NOT NULL,
            role TEXT NOT NULL,
            agent TEXT NOT NULL,
            text TEXT NOT NULL,
            tool_calls TEXT NOT NULL DEFAULT '[]',
            status TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (session_id, position)
        );
        CREATE INDEX records_by_agent ON records (session_id, role, agent, position);
        CREATE INDEX records_by_turn ON records (turn_id);
        CREATE TABLE percepts (
            workspace TEXT NOT NULL,
            text TEXT NOT NULL,
            agent TEXT NOT NULL,
            created_at TEXT NOT NULL,
            UNIQUE (workspace, text)
        );
    """,
    2: """
        ALTER TABLE sessions ADD COLUMN current_need TEXT;
        ALTER TABLE sessions ADD COLUMN current_need_set_at INTEGER;
        ALTER TABLE sessions ADD COLUMN escalation_brief TEXT;
        ALTER TABLE sessions ADD COLUMN last_local_summary TEXT;
        ALTER TABLE sessions ADD COLUMN last_claude_summary TEXT;
        ALTER TABLE sessions ADD COLUMN handoff TEXT;
    """,
    3: """
        CREATE TABLE running_turns (
            session_id TEXT PRIMARY KEY,
            turn_id TEXT NOT NULL,
            pid INTEGER NOT NULL,
            process_start TEXT NOT NULL DEFAULT '',
            started_at TEXT NOT NULL
        );
    """,
    4: """
        CREATE TABLE cancel_requests (
            session_id TEXT NOT NULL,
            turn_id TEXT NOT NULL,
            requested_at TEXT NOT NULL,
            PRIMARY KEY (session_id, turn_id)
        );
    """,
    5: """
        CREATE TABLE turn_info (
            session_id TEXT NOT NULL,
            turn_id TEXT NOT NULL,
            info TEXT NOT NULL,
            PRIMARY KEY (session_id, turn_id)
        );
    """,
    6: """
        CREATE TABLE turn_routes (
            session_id TEXT NOT NULL,
            turn_id TEXT NOT NULL,
            workspace TEXT NOT NULL,
            day TEXT NOT NULL,
            model TEXT NOT NULL DEFAULT '',
            kind TEXT NOT NULL,
            signal TEXT,
            claude_cost_usd REAL,
            local_edits INTEGER NOT NULL DEFAULT 0,
            undone INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (session_id, turn_id)
        );
        CREATE INDEX turn_routes_by_workspace ON turn_routes (workspace, day);
    """,
    7: """
        CREATE TABLE live_updates (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            origin TEXT NOT NULL,
            workspace TEXT NOT NULL,
            session_id TEXT NOT NULL,
            turn_id TEXT NOT NULL,
            payload TEXT NOT NULL,
            at REAL NOT NULL
        );
        CREATE INDEX live_updates_by_turn ON live_updates (session_id, turn_id);
        CREATE TABLE live_watchers (
            origin TEXT PRIMARY KEY,
            pid INTEGER NOT NULL,
            process_start TEXT NOT NULL DEFAULT '',
            workspaces TEXT NOT NULL
        );
    """,
    8: """
        ALTER TABLE turn_routes ADD COLUMN steps_local INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE turn_routes ADD COLUMN steps_claude INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE turn_routes ADD COLUMN steps_failed INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE turn_routes ADD COLUMN plan_cost_usd REAL;
    """,
    9: """
        ALTER TABLE turn_routes ADD COLUMN steps_milk INTEGER NOT NULL DEFAULT 0;
    """,
}
