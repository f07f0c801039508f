"""The store's one schema: numbered migrations in the SQL both databases speak, and the few words that differ.

A migration is written once, with ``{id}``, ``{bigint}`` and ``{real}`` where SQLite and PostgreSQL
spell a type differently; ``Dialect.migration`` fills them in. Queries are written with ``?``
parameters; ``Dialect.sql`` turns them into psycopg's ``%s``. Migrations 1-4 are the history
file's before the store existed (SQLite's ``user_version`` 1-4), unchanged in effect, so such a
file is brought up to date in place.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["MIGRATIONS", "POSTGRESQL", "SCHEMA_VERSION", "SQLITE", "Dialect"]

MIGRATIONS: tuple[str, ...] = (
    # 1: tool calls and conversations
    """
    CREATE TABLE conversations (
        id {id},
        started_at TEXT NOT NULL,
        model TEXT,
        title TEXT
    );
    CREATE TABLE tool_calls (
        id {id},
        call_id TEXT NOT NULL UNIQUE,
        started_at TEXT NOT NULL,
        server TEXT NOT NULL,
        tool TEXT NOT NULL,
        name TEXT NOT NULL,
        arguments TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'running',
        error TEXT,
        result_size {bigint},
        duration {real},
        approved_by TEXT,
        conversation_id {bigint} REFERENCES conversations(id)
    );
    CREATE INDEX tool_calls_started ON tool_calls(started_at);
    CREATE INDEX tool_calls_server ON tool_calls(server, started_at);
    CREATE TABLE messages (
        id {id},
        conversation_id {bigint} NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
        at TEXT NOT NULL,
        role TEXT NOT NULL,
        content TEXT NOT NULL
    );
    CREATE INDEX messages_conversation ON messages(conversation_id, id)
    """,
    # 2: conversations get the key their tool-call events carry
    """
    ALTER TABLE conversations ADD COLUMN key TEXT;
    CREATE UNIQUE INDEX conversations_key ON conversations(key)
    """,
    # 3: calls made through the gateway say who made them
    """
    ALTER TABLE tool_calls ADD COLUMN caller TEXT
    """,
    # 4: a call's result, as text, its start (RESULT_CHARS)
    """
    ALTER TABLE tool_calls ADD COLUMN result TEXT
    """,
    # 5: the fleet: every row says which replica wrote it (and a call its trace); the replicas alive, the
    # one-replica jobs' leases, the approvals clients gave
    """
    ALTER TABLE tool_calls ADD COLUMN replica TEXT;
    ALTER TABLE tool_calls ADD COLUMN trace_id TEXT;
    ALTER TABLE conversations ADD COLUMN replica TEXT;
    CREATE INDEX tool_calls_running ON tool_calls(replica) WHERE status = 'running';
    CREATE TABLE replicas (
        id TEXT PRIMARY KEY,
        pid INTEGER NOT NULL,
        host TEXT NOT NULL,
        started_at TEXT NOT NULL,
        last_seen TEXT NOT NULL
    );
    CREATE TABLE leases (
        job TEXT PRIMARY KEY,
        replica TEXT NOT NULL,
        last_run TEXT NOT NULL
    );
    CREATE TABLE approvals (
        id {id},
        client TEXT NOT NULL,
        session TEXT,
        tool TEXT NOT NULL,
        scope TEXT NOT NULL,
        decision TEXT NOT NULL,
        replica TEXT,
        given_at TEXT NOT NULL
    );
    CREATE INDEX approvals_client ON approvals(client, tool)
    """,
    # 6: the approvals gateway clients give for their session, as the replicas share them (the table of 5 was
    # never used): keyed by the client (its token, profile and name), each row held by the session that gave
    # it; a dead replica's rows are orphaned, kept a while for its clients to come back elsewhere, then dropped
    """
    DROP TABLE approvals;
    CREATE TABLE approvals (
        id {id},
        token TEXT NOT NULL,
        profile TEXT NOT NULL,
        client TEXT NOT NULL,
        tool TEXT NOT NULL,
        session TEXT NOT NULL,
        replica TEXT NOT NULL,
        given_at TEXT NOT NULL,
        orphaned_at TEXT
    );
    CREATE INDEX approvals_client ON approvals(client, token, profile, tool);
    CREATE INDEX approvals_session ON approvals(session);
    CREATE INDEX approvals_replica ON approvals(replica)
    """,
    # 7: each replica's calls a minute at a time, by server (the console's Metrics page across a fleet): one row
    # per life of a replica (its process), which only that process writes; durations are the bucket counts
    # of mcpdeck._observability.metrics.DURATION_BUCKETS, as JSON
    """
    CREATE TABLE call_minutes (
        replica TEXT NOT NULL,
        life TEXT NOT NULL,
        server TEXT NOT NULL,
        minute {bigint} NOT NULL,
        calls {bigint} NOT NULL,
        errors {bigint} NOT NULL,
        durations TEXT NOT NULL,
        PRIMARY KEY (replica, life, server, minute)
    );
    CREATE INDEX call_minutes_minute ON call_minutes(minute)
    """,
    # 8: a 2026-07-28 call's round relayed to the replica that holds the call, and the outcome sent back
    # (PostgreSQL only: each row is announced by NOTIFY on its recipient's channel, and deleted when read)
    """
    CREATE TABLE relayed (
        id {id},
        recipient TEXT NOT NULL,
        sender TEXT NOT NULL,
        reply_to {bigint},
        body TEXT NOT NULL,
        sent_at TEXT NOT NULL
    );
    CREATE INDEX relayed_recipient ON relayed(recipient)
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)


@dataclass(frozen=True)
class Dialect:
    """What differs between the two databases, for the schema and the queries."""

    name: str
    id: str
    """An integer primary key the database numbers itself."""
    bigint: str
    real: str
    param: str
    """How a query's parameter is written (queries are written with ``?``)."""
    contains: str
    """``{0}`` holds ``{1}`` (both strings), as a condition."""
    _cache: dict[str, str] = field(default_factory=dict[str, str], compare=False, repr=False)

    def migration(self, number: int) -> list[str]:
        """Migration ``number``'s statements in this dialect."""
        text = MIGRATIONS[number - 1].format(id=self.id, bigint=self.bigint, real=self.real)
        return [statement.strip() for statement in text.split(";") if statement.strip()]

    def sql(self, query: str) -> str:
        """``query`` (written with ``?`` parameters) in this dialect."""
        known = self._cache.get(query)
        if known is None:
            known = self._cache[query] = query.replace("?", self.param) if self.param != "?" else query
        return known


SQLITE = Dialect(
    name="sqlite", id="INTEGER PRIMARY KEY", bigint="INTEGER", real="REAL", param="?", contains="instr({0}, {1}) > 0"
)
POSTGRESQL = Dialect(
    name="postgresql",
    id="BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY",
    bigint="BIGINT",
    real="DOUBLE PRECISION",
    param="%s",
    contains="strpos({0}, {1}) > 0",
)
