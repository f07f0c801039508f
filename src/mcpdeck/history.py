"""History: every tool call and every conversation, in SQLite.

The database lives in mcpdeck's data folder (``<data dir>/history.sqlite3``, or
``$MCPDECK_HISTORY``; see ``mcpdeck._paths``) unless a path is given. Its schema is
versioned with SQLite's ``user_version`` and brought up to date by numbered migrations
when it is opened, each in its own transaction, so an old file is upgraded in place and
a newer one is refused rather than misread.

Secrets never land in it: every text stored passes through a redactor that replaces the
literal secret values of the config (env values, header values, OAuth client secrets) and
the values its ``${VAR}`` references bring in from the environment with ``****``, and
through any redactor added since (``add_redactor``: ``mcpdeck serve`` adds one that follows
its config as servers are added and changed).

It is private: the file (and SQLite's ``-wal`` and ``-shm`` beside it) is ``0600``, and a
folder mcpdeck creates for it ``0700`` (mcpdeck's data folder is made ``0700`` too; a folder
the user named for the file is left as it is).

``host.events.on(history.record)`` records a host's tool calls from its events, with the start
of each result as text (``RESULT_CHARS``; ``tool_call(id)`` reads it). Writes go to one writer
thread with a queue, so recording never holds up the event loop (see ``History``).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from mcpdeck._db_writer import DatabaseWriter, Job
from mcpdeck._files import ensure_private_dir, ensure_private_file
from mcpdeck._masking import Redactor
from mcpdeck._paths import data_dir, history_path
from mcpdeck.config import secrets_of
from mcpdeck.errors import ConfigError
from mcpdeck.events import Event, ToolCallFinished, ToolCallStarted

if TYPE_CHECKING:  # a type only: recording a call imports no SDK
    from mcpdeck.results import ToolResult

__all__ = ["RESULT_CHARS", "History", "Redactor", "ToolCallRecord", "default_history_path", "secrets_of"]

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
    # 4: a call's result, as text, its start (RESULT_CHARS)
    """
    ALTER TABLE tool_calls ADD COLUMN result TEXT;
    """,
)
RESULT_CHARS = 10_000
"""Characters of a call's result (``ToolResult.text()``) the history keeps, with a note of what was cut."""
_DENIED = frozenset({"denied-by-rule", "denied-by-user", "no-approver"})
SCHEMA_VERSION = len(_MIGRATIONS)


def default_history_path() -> Path:
    """``$MCPDECK_HISTORY``, else ``<data dir>/history.sqlite3`` (see ``mcpdeck._paths``)."""
    return history_path() or data_dir() / "history.sqlite3"


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
    result: str | None = None
    """Its result as text, the first ``RESULT_CHARS`` of it (read by ``History.tool_call`` only)."""

    def to_json(self) -> dict[str, Any]:
        """A stable JSON shape (``mcpdeck history --json``); ``result`` only when it was read."""
        data = {
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
        if self.result is not None:
            data["result"] = self.result
        return data


_T = TypeVar("_T")
_INSERT_CALL = (
    "INSERT OR IGNORE INTO tool_calls (call_id, started_at, server, tool, name, arguments, approved_by,"
    " conversation_id, caller, status, error, result_size, duration, result)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


@dataclass(slots=True)
class _CallRow:
    """A call recorded and not yet written: its start, and its end once that is known."""

    call_id: str
    at: datetime
    server: str
    tool: str
    name: str
    arguments: str
    approved_by: str | None
    conversation_id: int | None
    conversation_key: str | None
    """The key of the conversation it was made in, looked up by the writer (``conversation_id`` given: None)."""
    caller: str | None
    status: str = "running"
    error: str | None = None
    result_size: int | None = None
    duration: float | None = None
    result: ToolResult | None = None


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _migrate(db: sqlite3.Connection, path: Path) -> None:
    """Bring the schema up to date, each migration in its own transaction."""
    (version,) = db.execute("PRAGMA user_version").fetchone()
    if version > SCHEMA_VERSION:
        raise ConfigError(
            f"the history database has schema version {version}, newer than this mcpdeck knows "
            f"({SCHEMA_VERSION}); upgrade mcpdeck or use another file",
            path=str(path),
        )
    for number in range(version + 1, SCHEMA_VERSION + 1):
        db.execute("BEGIN")
        try:
            for statement in _MIGRATIONS[number - 1].split(";"):
                if statement.strip():
                    db.execute(statement)
            db.execute(f"PRAGMA user_version = {number}")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise


class History:
    """The history database.

    One writer thread owns the connection (``mcpdeck._db_writer``): recording a call or a
    message queues the write and returns at once, so an event callback or an async caller
    never waits on SQLite or the disk. Reads and ``start_conversation`` (which answers the
    new id) are queued behind the writes before them and wait for their answer: from async
    code, call them in a worker thread. ``flush`` waits until everything queued is written;
    ``close`` writes it all, then closes.
    """

    def __init__(self, path: str | Path | None = None, *, redactor: Redactor | None = None):
        self.path = Path(path) if path is not None else default_history_path()
        self._redactors: list[Callable[[str], str]] = [redactor or Redactor()]
        self._keys: dict[str, int] = {}  # conversation key -> id, filled by the writer thread only
        default = self.path == data_dir() / "history.sqlite3"  # mcpdeck's own folder, not one the user named
        ensure_private_dir(self.path.parent, tighten=default)
        ensure_private_file(self.path)  # SQLite gives the -wal and -shm it creates the database file's mode
        for suffix in ("-wal", "-shm"):  # ones an older mcpdeck left readable
            if (beside := self.path.with_name(self.path.name + suffix)).exists():
                ensure_private_file(beside)
        db: sqlite3.Connection | None = None
        try:
            db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA foreign_keys=ON")
            db.execute("PRAGMA synchronous=NORMAL")
            _migrate(db, self.path)
        except sqlite3.DatabaseError as error:
            if db is not None:
                db.close()
            raise ConfigError(f"cannot open the history database: {error}", path=str(self.path)) from None
        except BaseException:
            if db is not None:
                db.close()
            raise
        self._writer = DatabaseWriter(db, name=f"mcpdeck history {self.path.name}")
        # Calls recorded and not yet written, by call id; and the rows the last queued insert will write
        # (None: that insert has taken its rows, or another job was queued after it). See ``call_started``.
        self._unwritten: dict[str, _CallRow] = {}
        self._batch: list[_CallRow] | None = None
        self._rows_lock = threading.Lock()

    def add_redactor(self, redact: Callable[[str], str]) -> None:
        """Pass every text stored from now on through ``redact`` too (after the redactor given at start).

        For secrets that come and go while the history is open: ``mcpdeck serve`` adds one that
        follows its config (a server added while it runs brings its secrets).
        """
        self._redactors.append(redact)

    def _redact(self, text: str) -> str:
        for redact in self._redactors:
            text = redact(text)
        return text

    @property
    def schema_version(self) -> int:
        """The schema version of the open database."""
        return self._ask(lambda db: int(db.execute("PRAGMA user_version").fetchone()[0]))

    def flush(self) -> None:
        """Wait until every write queued so far is in the database."""
        self._writer.flush()

    def close(self) -> None:
        """Write what is queued, then close the database. Safe to call twice."""
        self._writer.close()

    def __enter__(self) -> History:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _queue(self, job: Job) -> None:
        """Queue a job other than a call's insert: the calls recorded so far are written before it, the
        later ones after it (a call's row may refer to a conversation a job opens)."""
        with self._rows_lock:
            self._batch = None
            self._writer.submit(job)

    def _ask(self, job: Callable[[sqlite3.Connection], _T]) -> _T:
        """Queue a job and wait for its answer; it sees every call recorded before it."""
        with self._rows_lock:
            self._batch = None
        return self._writer.call(job)

    def _read(self, sql: str, params: Sequence[Any]) -> list[Any]:
        return self._ask(lambda db: db.execute(sql, params).fetchall())

    # ----- tool calls ------------------------------------------------------------------

    def call_started(self, event: ToolCallStarted, *, conversation_id: int | None = None) -> None:
        """Record that a call was sent (in the conversation its event names, unless one is given).

        The row waits in memory for the writer, which inserts every call recorded meanwhile in one
        statement; when the call ends before that (most do: the writer lets writes gather for up to
        ``LINGER``), ``call_finished`` completes the row and the call costs one insert and no update.
        """
        row = _CallRow(
            event.call_id,
            event.at,
            event.server,
            event.tool,
            event.name,
            self._redact(json.dumps(event.arguments, ensure_ascii=False, default=str)),
            event.approved_by,
            conversation_id,
            event.conversation if conversation_id is None else None,
            event.caller,
        )
        with self._rows_lock:
            self._unwritten[row.call_id] = row
            if self._batch is not None:  # its insert is queued and has not run yet: the row joins it
                self._batch.append(row)
                return
            batch = self._batch = [row]
            self._writer.submit(lambda db: self._insert_calls(db, batch))

    def _insert_calls(self, db: sqlite3.Connection, batch: list[_CallRow]) -> None:
        """In the writer thread: insert the calls of ``batch``, as they are now (ended or still running)."""
        with self._rows_lock:
            if self._batch is batch:
                self._batch = None  # from now on a new call starts a new batch
            for row in batch:
                if self._unwritten.get(row.call_id) is row:
                    del self._unwritten[row.call_id]  # its end, from now on, is an update
        db.executemany(
            _INSERT_CALL,
            [
                (
                    row.call_id,
                    row.at.isoformat(),
                    row.server,
                    row.tool,
                    row.name,
                    row.arguments,
                    row.approved_by,
                    row.conversation_id
                    if row.conversation_key is None
                    else self._conversation_of(db, row.conversation_key),
                    row.caller,
                    row.status,
                    row.error,
                    row.result_size,
                    row.duration,
                    self._result_text(row.result),
                )
                for row in batch
            ],
        )

    def _result_text(self, result: ToolResult | None) -> str | None:
        """In the writer thread: a result as the history keeps it (its start, as text, secrets redacted)."""
        return None if result is None else self._redact(result.text(RESULT_CHARS))

    def _conversation_of(self, db: sqlite3.Connection, key: str) -> int | None:
        """In the writer thread: the id of the conversation opened with ``key``."""
        known = self._keys.get(key)
        if known is None:
            row = db.execute("SELECT id FROM conversations WHERE key = ?", (key,)).fetchone()
            if row is None:
                return None
            known = self._keys[key] = int(row[0])
        return known

    def conversation_id(self, key: str) -> int | None:
        """The id of the conversation opened with ``key``, if there is one (waits for the writer
        unless the id is already known)."""
        known = self._keys.get(key)
        return known if known is not None else self._ask(lambda db: self._conversation_of(db, key))

    def call_finished(self, event: ToolCallFinished, *, result_size: int | None = None) -> None:
        """Record how a call ended: ``ok``, ``tool-error``, ``error`` or ``denied``."""
        if event.approved_by in _DENIED:
            status = "denied"
        else:
            status = "error" if event.error else ("tool-error" if event.is_error else "ok")
        error = self._redact(event.error) if event.error else None
        with self._rows_lock:
            row = self._unwritten.get(event.call_id)
            if row is not None:  # not written yet: its insert writes the end too
                row.status, row.error, row.duration, row.result = status, error, event.duration, event.result
                if result_size is not None:
                    row.result_size = result_size
                if event.approved_by is not None:
                    row.approved_by = event.approved_by
                return
        params = (status, error, event.duration, result_size, event.approved_by)
        result, call_id = event.result, event.call_id
        self._writer.submit(  # after its insert, which has run or is running
            lambda db: db.execute(
                "UPDATE tool_calls SET status = ?, error = ?, duration = ?, result_size = COALESCE(?, result_size),"
                " approved_by = COALESCE(?, approved_by), result = ? WHERE call_id = ?",
                (*params, self._result_text(result), call_id),
            )
        )

    @staticmethod
    def _where(server: str | None, status: str | None, text: str | None) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        if server is not None:
            clauses.append("server = ?")
            params.append(server)
        if status is not None:
            clauses.append("status = ?")
            params.append(status)
        if text:
            clauses.append("instr(lower(name), lower(?)) > 0")
            params.append(text)
        return (" WHERE " + " AND ".join(clauses) if clauses else ""), params

    def tool_calls(
        self, *, limit: int = 50, server: str | None = None, status: str | None = None, text: str | None = None
    ) -> list[ToolCallRecord]:
        """The most recent calls, newest first (after the writes queued before).

        ``server``, ``status`` (``running``, ``ok``, ``tool-error``, ``error``, ``denied``) and
        ``text`` (in the tool's name, any case) keep only the calls that match."""
        where, params = self._where(server, status, text)
        sql = (
            "SELECT call_id, started_at, server, tool, name, arguments, status, error, result_size, duration,"
            f" approved_by, caller FROM tool_calls{where} ORDER BY started_at DESC, id DESC LIMIT ?"
        )
        params.append(limit)
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
            for row in self._read(sql, params)
        ]

    def count_tool_calls(self, *, server: str | None = None, status: str | None = None, text: str | None = None) -> int:
        """How many calls ``tool_calls`` with the same filters would list without a limit."""
        where, params = self._where(server, status, text)
        ((count,),) = self._read(f"SELECT count(*) FROM tool_calls{where}", params)
        return int(count)

    def tool_call(self, call_id: str) -> ToolCallRecord | None:
        """One call, with its result (``result``: its text as kept), or None if there is none by that id."""
        rows = self._read(
            "SELECT call_id, started_at, server, tool, name, arguments, status, error, result_size, duration,"
            " approved_by, caller, result FROM tool_calls WHERE call_id = ?",
            (call_id,),
        )
        if not rows:
            return None
        row = rows[0]
        return ToolCallRecord(
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
            result=row[12],
        )

    # ----- conversations ---------------------------------------------------------------

    def _insert_conversation(
        self, db: sqlite3.Connection, model: str | None, title: str | None, key: str | None
    ) -> int:
        cursor = db.execute(
            "INSERT INTO conversations (started_at, model, title, key) VALUES (?, ?, ?, ?)",
            (_now(), model, title, key),
        )
        conversation = int(cursor.lastrowid or 0)
        if key is not None:
            self._keys[key] = conversation
        return conversation

    def start_conversation(self, *, model: str | None = None, title: str | None = None, key: str | None = None) -> int:
        """A new conversation; returns its id (waits for the writer: from async code, see ``open_conversation``).

        Args:
            model: The model it talks to (``provider:model``).
            title: A short title (the first prompt).
            key: The key its tool-call events carry (``ToolCallStarted.conversation``), so
                ``record`` files those calls under it.
        """
        title = self._redact(title) if title else None  # here, not in the writer thread: redactors read live state
        return self._ask(lambda db: self._insert_conversation(db, model, title, key))

    def open_conversation(self, key: str, *, model: str | None = None, title: str | None = None) -> None:
        """A new conversation known by ``key``, without waiting: messages and the calls whose events
        carry ``key`` are filed under it (``add_message(key, ...)``)."""
        title = self._redact(title) if title else None
        self._queue(lambda db: self._insert_conversation(db, model, title, key))

    def add_message(self, conversation: int | str, role: str, content: Any) -> None:
        """Append a message (any JSON-able content) to a conversation, given by its id or by the key
        it was opened with (a key no conversation has is ignored). Does not wait."""
        text = self._redact(json.dumps(content, ensure_ascii=False, default=str))
        at = _now()

        def write(db: sqlite3.Connection) -> None:
            found = conversation if isinstance(conversation, int) else self._conversation_of(db, conversation)
            if found is not None:
                db.execute(
                    "INSERT INTO messages (conversation_id, at, role, content) VALUES (?, ?, ?, ?)",
                    (found, at, role, text),
                )

        self._queue(write)

    def conversations(self, *, limit: int = 20) -> list[dict[str, Any]]:
        """The most recent conversations with their message counts, newest first."""
        rows = self._read(
            "SELECT c.id, c.started_at, c.model, c.title, COUNT(m.id) FROM conversations c"
            " LEFT JOIN messages m ON m.conversation_id = c.id GROUP BY c.id ORDER BY c.id DESC LIMIT ?",
            (limit,),
        )
        return [{"id": r[0], "startedAt": r[1], "model": r[2], "title": r[3], "messages": r[4]} for r in rows]

    def messages(self, conversation_id: int) -> list[dict[str, Any]]:
        """A conversation's messages in order (none for an id SQLite cannot hold)."""
        if not -(2**63) <= conversation_id < 2**63:
            return []
        rows = self._read(
            "SELECT at, role, content FROM messages WHERE conversation_id = ? ORDER BY id", (conversation_id,)
        )
        return [{"at": r[0], "role": r[1], "content": json.loads(r[2])} for r in rows]

    # ----- wiring ------------------------------------------------------------------------

    def record(self, event: Event) -> None:
        """An event callback: records tool calls (``host.events.on(history.record)``)."""
        if isinstance(event, ToolCallStarted):
            self.call_started(event)
        elif isinstance(event, ToolCallFinished):
            self.call_finished(event, result_size=event.result_size)
