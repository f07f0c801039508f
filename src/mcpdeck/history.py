"""History: every tool call and every conversation, in SQLite.

The database lives in mcpdeck's data folder (``<data dir>/history.sqlite3``, or
``$MCPDECK_HISTORY``; see ``mcpdeck._paths``) unless a path is given. Its schema is
versioned with SQLite's ``user_version`` and brought up to date by numbered migrations
when it is opened, each in its own transaction, so an old file is upgraded in place and
a newer one is refused rather than misread.

Secrets never land in it: every text stored passes through a redactor that replaces the
literal secret values of the config (env values, header values, OAuth client secrets) and
the values its ``${VAR}`` references bring in from the environment with ``****``.

It is private: the file (and SQLite's ``-wal`` and ``-shm`` beside it) is ``0600``, and a
folder mcpdeck creates for it ``0700`` (mcpdeck's data folder is made ``0700`` too; a folder
the user named for the file is left as it is).

``host.events.on(history.record)`` records a host's tool calls from its events.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from mcpdeck._files import ensure_private_dir, ensure_private_file
from mcpdeck._masking import OAUTH_SECRET_KEYS, Redactor
from mcpdeck._paths import data_dir, history_path
from mcpdeck.config import McpConfig, StdioServerConfig
from mcpdeck.config._expand import referenced_values
from mcpdeck.errors import ConfigError
from mcpdeck.events import Event, ToolCallFinished, ToolCallStarted

__all__ = ["History", "Redactor", "ToolCallRecord", "default_history_path", "secrets_of"]

_MIGRATIONS: tuple[str, ...] = (
    # 1: tool calls and conversations
    """
    CREATE TABLE tool_calls (
        id INTEGER PRIMARY KEY,
        call_id TEXT NOT NULL UNIQUE,
        started_at TEXT NOT NULL,
        server TEXT NOT NULL,
        tool TEXT NOT NULL,
        name TEXT NOT NULL,
        arguments TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'running',
        error TEXT,
        result_size INTEGER,
        duration REAL,
        approved_by TEXT,
        conversation_id INTEGER REFERENCES conversations(id)
    );
    CREATE INDEX tool_calls_started ON tool_calls(started_at);
    CREATE INDEX tool_calls_server ON tool_calls(server, started_at);
    CREATE TABLE conversations (
        id INTEGER PRIMARY KEY,
        started_at TEXT NOT NULL,
        model TEXT,
        title TEXT
    );
    CREATE TABLE messages (
        id INTEGER PRIMARY KEY,
        conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
        at TEXT NOT NULL,
        role TEXT NOT NULL,
        content TEXT NOT NULL
    );
    CREATE INDEX messages_conversation ON messages(conversation_id, id);
    """,
    # 2: conversations get the key their tool-call events carry
    """
    ALTER TABLE conversations ADD COLUMN key TEXT;
    CREATE UNIQUE INDEX conversations_key ON conversations(key);
    """,
    # 3: calls made through the gateway say who made them
    """
    ALTER TABLE tool_calls ADD COLUMN caller TEXT;
    """,
)
_DENIED = frozenset({"denied-by-rule", "denied-by-user", "no-approver"})
SCHEMA_VERSION = len(_MIGRATIONS)


def default_history_path() -> Path:
    """``$MCPDECK_HISTORY``, else ``<data dir>/history.sqlite3`` (see ``mcpdeck._paths``)."""
    return history_path() or data_dir() / "history.sqlite3"


def _oauth_secrets(oauth: object) -> list[str]:
    """The literal secrets of an ``oauth`` config object (nested identity provider included)."""
    if not isinstance(oauth, dict):
        return []
    found: list[str] = []
    for key, value in cast(dict[str, object], oauth).items():
        if isinstance(value, dict):
            found.extend(_oauth_secrets(cast(object, value)))
        elif key in OAUTH_SECRET_KEYS and isinstance(value, str):
            found.append(value)
    return found


def secrets_of(config: McpConfig, environ: Mapping[str, str] | None = None) -> set[str]:
    """The secret values a config holds: env and header values, OAuth client secrets, and
    (given ``environ``) the values its ``${VAR}`` references bring in.

    ``${VAR}`` references are not secrets themselves; literal values shorter than 6
    characters are too likely to be ordinary words to be worth hiding.
    """
    found: set[str] = set() if environ is None else referenced_values(config.servers, environ)
    for server in config.servers.values():
        values: list[str] = []
        if isinstance(server, StdioServerConfig):
            values.extend(server.env.values())
        else:
            values.extend(server.headers.values())
            values.extend(_oauth_secrets(server.to_json().get("oauth")))
        found.update(v for v in values if len(v) >= 6 and not v.startswith("${"))
        # A header like "Bearer abc123..." carries its secret after the scheme.
        found.update(v.split(" ", 1)[1] for v in values if " " in v and len(v.split(" ", 1)[1]) >= 6)
    return found


@dataclass(frozen=True)
class ToolCallRecord:
    """One tool call as the history keeps it."""

    call_id: str
    started_at: datetime
    server: str
    tool: str
    name: str
    arguments: dict[str, Any]
    status: str
    error: str | None
    result_size: int | None
    duration: float | None
    approved_by: str | None
    caller: str | None = None
    """Who made the call through the gateway (client name, profile or token); None for this program."""

    def to_json(self) -> dict[str, Any]:
        """A stable JSON shape (``mcpdeck history --json``)."""
        return {
            "callId": self.call_id,
            "startedAt": self.started_at.isoformat(),
            "server": self.server,
            "tool": self.tool,
            "name": self.name,
            "arguments": self.arguments,
            "status": self.status,
            "error": self.error,
            "resultSize": self.result_size,
            "duration": self.duration,
            "approvedBy": self.approved_by,
            "caller": self.caller,
        }


def _now() -> str:
    return datetime.now(UTC).isoformat()


class History:
    """The history database. Thread-safe; every write is its own short transaction."""

    def __init__(self, path: str | Path | None = None, *, redactor: Redactor | None = None):
        self.path = Path(path) if path is not None else default_history_path()
        self._redact = redactor or Redactor()
        self._lock = threading.Lock()
        self._keys: dict[str, int] = {}  # conversation key -> id, so recording a call reads nothing
        default = self.path == data_dir() / "history.sqlite3"  # mcpdeck's own folder, not one the user named
        ensure_private_dir(self.path.parent, tighten=default)
        ensure_private_file(self.path)  # SQLite gives the -wal and -shm it creates the database file's mode
        for suffix in ("-wal", "-shm"):  # ones an older mcpdeck left readable
            if (beside := self.path.with_name(self.path.name + suffix)).exists():
                ensure_private_file(beside)
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA foreign_keys=ON")
            self._migrate()
        except sqlite3.DatabaseError as error:
            raise ConfigError(f"cannot open the history database: {error}", path=str(self.path)) from None

    def _migrate(self) -> None:
        (version,) = self._db.execute("PRAGMA user_version").fetchone()
        if version > SCHEMA_VERSION:
            raise ConfigError(
                f"the history database has schema version {version}, newer than this mcpdeck knows "
                f"({SCHEMA_VERSION}); upgrade mcpdeck or use another file",
                path=str(self.path),
            )
        for number in range(version + 1, SCHEMA_VERSION + 1):
            with self._lock:
                self._db.execute("BEGIN")
                try:
                    for statement in _MIGRATIONS[number - 1].split(";"):
                        if statement.strip():
                            self._db.execute(statement)
                    self._db.execute(f"PRAGMA user_version = {number}")
                    self._db.execute("COMMIT")
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise

    @property
    def schema_version(self) -> int:
        """The schema version of the open database."""
        return int(self._db.execute("PRAGMA user_version").fetchone()[0])

    def close(self) -> None:
        """Close the database."""
        self._db.close()

    def __enter__(self) -> History:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _write(self, sql: str, params: Sequence[Any]) -> int:
        with self._lock:
            cursor = self._db.execute(sql, params)
            return int(cursor.lastrowid or 0)

    # ----- tool calls ------------------------------------------------------------------

    def call_started(self, event: ToolCallStarted, *, conversation_id: int | None = None) -> None:
        """Record that a call was sent (in the conversation its event names, unless one is given)."""
        if conversation_id is None and event.conversation is not None:
            conversation_id = self.conversation_id(event.conversation)
        arguments = self._redact(json.dumps(event.arguments, ensure_ascii=False, default=str))
        self._write(
            "INSERT OR IGNORE INTO tool_calls"
            " (call_id, started_at, server, tool, name, arguments, approved_by, conversation_id, caller)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                event.call_id,
                event.at.isoformat(),
                event.server,
                event.tool,
                event.name,
                arguments,
                event.approved_by,
                conversation_id,
                event.caller,
            ),
        )

    def conversation_id(self, key: str) -> int | None:
        """The id of the conversation started with ``key``, if there is one."""
        known = self._keys.get(key)
        if known is not None:
            return known
        with self._lock:
            row = self._db.execute("SELECT id FROM conversations WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        self._keys[key] = int(row[0])
        return self._keys[key]

    def call_finished(self, event: ToolCallFinished, *, result_size: int | None = None) -> None:
        """Record how a call ended: ``ok``, ``tool-error``, ``error`` or ``denied``."""
        if event.approved_by in _DENIED:
            status = "denied"
        else:
            status = "error" if event.error else ("tool-error" if event.is_error else "ok")
        error = self._redact(event.error) if event.error else None
        self._write(
            "UPDATE tool_calls SET status = ?, error = ?, duration = ?, result_size = COALESCE(?, result_size),"
            " approved_by = COALESCE(?, approved_by) WHERE call_id = ?",
            (status, error, event.duration, result_size, event.approved_by, event.call_id),
        )

    def tool_calls(self, *, limit: int = 50, server: str | None = None) -> list[ToolCallRecord]:
        """The most recent calls, newest first."""
        sql = (
            "SELECT call_id, started_at, server, tool, name, arguments, status, error, result_size, duration,"
            " approved_by, caller FROM tool_calls"
        )
        params: list[Any] = []
        if server is not None:
            sql += " WHERE server = ?"
            params.append(server)
        sql += " ORDER BY started_at DESC, id DESC LIMIT ?"
        params.append(limit)
        with self._lock:
            rows = self._db.execute(sql, params).fetchall()
        return [
            ToolCallRecord(
                call_id=row[0],
                started_at=datetime.fromisoformat(row[1]),
                server=row[2],
                tool=row[3],
                name=row[4],
                arguments=json.loads(row[5]),
                status=row[6],
                error=row[7],
                result_size=row[8],
                duration=row[9],
                approved_by=row[10],
                caller=row[11],
            )
            for row in rows
        ]

    # ----- conversations ---------------------------------------------------------------

    def start_conversation(self, *, model: str | None = None, title: str | None = None, key: str | None = None) -> int:
        """A new conversation; returns its id.

        Args:
            model: The model it talks to (``provider:model``).
            title: A short title (the first prompt).
            key: The key its tool-call events carry (``ToolCallStarted.conversation``), so
                ``record`` files those calls under it.
        """
        conversation = self._write(
            "INSERT INTO conversations (started_at, model, title, key) VALUES (?, ?, ?, ?)",
            (_now(), model, self._redact(title) if title else None, key),
        )
        if key is not None:
            self._keys[key] = conversation
        return conversation

    def add_message(self, conversation_id: int, role: str, content: Any) -> None:
        """Append a message (any JSON-able content) to a conversation."""
        text = self._redact(json.dumps(content, ensure_ascii=False, default=str))
        self._write(
            "INSERT INTO messages (conversation_id, at, role, content) VALUES (?, ?, ?, ?)",
            (conversation_id, _now(), role, text),
        )

    def conversations(self, *, limit: int = 20) -> list[dict[str, Any]]:
        """The most recent conversations with their message counts, newest first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT c.id, c.started_at, c.model, c.title, COUNT(m.id) FROM conversations c"
                " LEFT JOIN messages m ON m.conversation_id = c.id GROUP BY c.id ORDER BY c.id DESC LIMIT ?",
                (limit,),
            ).fetchall()
        return [{"id": r[0], "startedAt": r[1], "model": r[2], "title": r[3], "messages": r[4]} for r in rows]

    def messages(self, conversation_id: int) -> list[dict[str, Any]]:
        """A conversation's messages in order."""
        with self._lock:
            rows = self._db.execute(
                "SELECT at, role, content FROM messages WHERE conversation_id = ? ORDER BY id", (conversation_id,)
            ).fetchall()
        return [{"at": r[0], "role": r[1], "content": json.loads(r[2])} for r in rows]

    # ----- wiring ------------------------------------------------------------------------

    def record(self, event: Event) -> None:
        """An event callback: records tool calls (``host.events.on(history.record)``)."""
        if isinstance(event, ToolCallStarted):
            self.call_started(event)
        elif isinstance(event, ToolCallFinished):
            self.call_finished(event, result_size=event.result_size)
