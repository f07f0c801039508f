"""The history: every tool call and every conversation, in the store.

Secrets never land in it: every text stored passes through a redactor that replaces the literal
secret values of the config (env values, header values, OAuth client secrets) and the values its
``${VAR}`` references bring in from the environment with ``****``, and through any redactor added
since (``add_redactor``). A NUL (U+0000), which PostgreSQL's text cannot hold, and a lone surrogate, which
no encoding takes (a client's or a server's JSON may carry either), are kept as U+FFFD on both stores.

Recording never holds up the event loop: a call's start, a conversation, a message only queue the
write for the store's writer thread (``mcpdeck.store._writer``). A host given the history
(``Host(history=...)``) records each of its calls and awaits ``committed()`` before the call returns,
so a call answered is a call on the record.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from mcpdeck._util.masking import Redactor
from mcpdeck._util.safe_text import storable
from mcpdeck.events import ToolCallFinished, ToolCallStarted
from mcpdeck.store._db import Database
from mcpdeck.store._location import StoreLocation
from mcpdeck.store._store import Store, resolve_location
from mcpdeck.store._writer import Divisible

if TYPE_CHECKING:  # a type only: recording a call imports no SDK
    from mcpdeck.results import ToolResult

__all__ = ["CALL_STATUSES", "RESULT_CHARS", "History", "ToolCallRecord"]

_T = TypeVar("_T")
_DENIED = frozenset({"denied-by-rule", "denied-by-user", "no-approver"})
RESULT_CHARS = 10_000
"""Characters of a call's result (``ToolResult.text()``) the history keeps, with a note of what was cut."""
CALL_STATUSES = ("running", "ok", "tool-error", "error", "denied", "interrupted")
"""What a call's ``status`` may be; ``interrupted``: its replica died while it ran."""
START_DELAY = 0.05
"""Seconds a call's start row may wait in memory for its end, so that a short call is one insert in one commit
(the one its answer waits for) rather than two. A call still running after this is written as ``running``; the
wait holds nothing anyone was answered: an answer always waits for its own commit."""
_COLUMNS = (
    "call_id, started_at, server, tool, name, arguments, status, error, result_size, duration, approved_by, caller,"
    " replica, trace_id"
)
_INSERT_CALL = (
    "INSERT INTO tool_calls (call_id, started_at, server, tool, name, arguments, approved_by, conversation_id,"
    " caller, replica, trace_id, status, error, result_size, duration, result)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (call_id) DO NOTHING"
)
_FINISH_CALL = (
    "UPDATE tool_calls SET status = ?, error = ?, duration = ?, result_size = COALESCE(?, result_size),"
    " approved_by = COALESCE(?, approved_by), result = ? WHERE call_id = ?"
)


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
    replica: str | None = None
    """The ``serve`` replica that made it (``--replica-id``); None for other commands and programs."""
    trace_id: str | None = None
    """The OpenTelemetry trace it belongs to, when one was recorded."""
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
            "replica": self.replica,
            "traceId": self.trace_id,
        }
        if self.result is not None:
            data["result"] = self.result
        return data

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> ToolCallRecord:
        """A record from a row of ``_COLUMNS`` (and ``result`` after them, when read)."""
        return cls(
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
            replica=row[12],
            trace_id=row[13],
            result=row[14] if len(row) > 14 else None,
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
    trace_id: str | None = None
    status: str = "running"
    error: str | None = None
    result_size: int | None = None
    duration: float | None = None
    result: ToolResult | None = None
    pending: bool = True
    """Its start still waits in memory (``START_DELAY``): its insert is not queued yet."""


@dataclass(slots=True)
class _InsertCalls(Divisible):
    """The writer's job that inserts the calls of a batch, as they are when it runs (one INSERT); row by row if the
    database refuses it (``Divisible``)."""

    history: History
    batch: list[_CallRow]

    def __call__(self, db: Database) -> None:
        self.history._insert_calls(db, self.batch)  # pyright: ignore[reportPrivateUsage]

    def parts(self) -> list[_InsertCalls]:
        return [_InsertCalls(self.history, [row]) for row in self.batch] if len(self.batch) > 1 else []


def now() -> str:
    """The time now as the store keeps times (ISO 8601, UTC)."""
    return datetime.now(UTC).isoformat()


class History:
    """The history of tool calls and conversations, in a store.

    Args:
        location: The store: a SQLite path, ``sqlite:///PATH``, ``postgresql://USER@HOST:PORT/DB``, or
            a ``StoreLocation`` (default: ``$MCPDECK_HISTORY``, else ``<data dir>/history.sqlite3``).
        redactor: Replaces known secret values with ``****`` in everything stored.
        replica: The replica recorded with every call and conversation (``serve --replica-id``).

    One writer thread owns the connection: recording a call or a message queues the write and
    returns at once. Reads and ``start_conversation`` (which answers the new id) are queued behind
    the writes before them and wait for their answer: from async code, call them in a worker
    thread. ``await committed()`` waits (without a thread) until everything recorded so far is
    committed; ``flush`` waits from a thread; ``close`` writes it all, then closes.

    Raises:
        ConfigError: The store cannot be opened or reached, or is newer than this mcpdeck.
    """

    def __init__(
        self,
        location: StoreLocation | str | os.PathLike[str] | None = None,
        *,
        redactor: Redactor | None = None,
        replica: str | None = None,
    ):
        self.location = resolve_location(location)
        self.path: Path | None = self.location.path
        """The SQLite file (None on PostgreSQL)."""
        self.where = self.location.shown
        """Where it is, as it may be shown: the path, or the URL with its password masked."""
        self.replica = replica
        self._redactors: list[Callable[[str], str]] = [redactor or Redactor()]
        self.store = Store(self.location)
        self._writer = self.store.writer
        self._keys: dict[str, int] = {}  # conversation key -> id, filled by the writer thread only
        # Calls recorded and not yet written, by call id; and the rows the last queued insert will write
        # (None: that insert has taken its rows, or another job was queued after it). See ``call_started``.
        self._unwritten: dict[str, _CallRow] = {}
        self._batch: list[_CallRow] | None = None
        self._pending: list[_CallRow] = []  # starts not yet queued (``START_DELAY``)
        self._pending_timer: asyncio.TimerHandle | None = None
        self._rows_lock = threading.Lock()

    def add_redactor(self, redact: Callable[[str], str]) -> None:
        """Pass every text stored from now on through ``redact`` too (after the redactor given at start).

        For secrets that come and go while the history is open: ``mcpdeck serve`` adds one that follows
        its config (a server added while it runs brings its secrets).
        """
        self._redactors.append(redact)

    def _redact(self, text: str) -> str:
        for redact in self._redactors:
            text = redact(text)
        return storable(text)

    @property
    def schema_version(self) -> int:
        """The schema version of the open store."""
        from mcpdeck.store._db import PostgresDatabase, SQLiteDatabase

        def version(db: Database) -> int:
            assert isinstance(db, SQLiteDatabase | PostgresDatabase)
            return db.version()

        return self._ask(version)

    async def committed(self) -> None:
        """Wait until everything recorded so far is committed to the store."""
        self._queue_starts()
        await self._writer.committed()

    def flush(self) -> None:
        """Wait until every write queued so far is in the store (blocks: from a thread)."""
        self._queue_starts()
        self._writer.flush()

    def close(self) -> None:
        """Write what is queued, then close the store. Safe to call twice."""
        if not self._writer.closed:
            self._queue_starts()
        self.store.close()

    def __enter__(self) -> History:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _queue(self, job: Callable[[Database], Any]) -> None:
        """Queue a write other than a call's insert: the calls recorded so far are written before it, the
        later ones after it (a call's row may refer to a conversation a job opens)."""
        self._queue_starts()
        with self._rows_lock:
            self._batch = None
            self._writer.submit(job)

    def _ask(self, job: Callable[[Database], _T], *, write: bool = False) -> _T:
        """Queue a job and wait for its answer; it sees every call recorded before it."""
        self._queue_starts()
        with self._rows_lock:
            self._batch = None
        return self._writer.call(job, write=write)

    def _read(self, sql: str, params: Sequence[Any]) -> list[Any]:
        return self._ask(lambda db: db.rows(sql, params))

    # ----- tool calls ------------------------------------------------------------------

    def call_started(self, event: ToolCallStarted, *, conversation_id: int | None = None) -> None:
        """Record that a call was sent (in the conversation its event names, unless one is given).

        The row waits in memory up to ``START_DELAY`` (on an event loop; at once elsewhere), then for the
        writer, which inserts every call recorded meanwhile in one statement; when the call ends before that
        (most do), ``call_finished`` completes the row and the call costs one insert, in the commit its answer
        waits for, and no update. Anything that reads or writes the store through this history queues the
        waiting starts first, so it sees them.
        """
        caller, trace = event.caller, event.trace_id  # (what a client or a server named: NUL too)
        row = _CallRow(
            event.call_id,
            event.at,
            storable(event.server),
            storable(event.tool),
            storable(event.name),
            self._redact(json.dumps(event.arguments, ensure_ascii=False, default=str)),
            event.approved_by,
            conversation_id,
            event.conversation if conversation_id is None else None,
            None if caller is None else storable(caller),
            None if trace is None else storable(trace),
        )
        with self._rows_lock:
            self._unwritten[row.call_id] = row
            self._pending.append(row)
            if self._pending_timer is not None:
                return
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                loop = None
            if loop is not None:
                self._pending_timer = loop.call_later(START_DELAY, self._queue_starts)
                return
        self._queue_starts()

    def _queue_starts(self) -> None:
        """Queue the insert of the starts waiting in memory (they join an insert queued and not run yet)."""
        with self._rows_lock:
            if self._pending_timer is not None:
                self._pending_timer.cancel()
                self._pending_timer = None
            pending, self._pending = self._pending, []
            if not pending:
                return
            for row in pending:
                row.pending = False
            if self._batch is not None:  # an insert is queued and has not run yet: the rows join it
                self._batch.extend(pending)
                return
            batch = self._batch = pending
            self._writer.submit(_InsertCalls(self, batch), quick=True)

    def _insert_calls(self, db: Database, batch: list[_CallRow]) -> None:
        """In the writer thread: insert the calls of ``batch``, as they are now (ended or still running)."""
        with self._rows_lock:
            if self._batch is batch:
                self._batch = None  # from now on a new call starts a new batch
            for row in batch:
                if self._unwritten.get(row.call_id) is row:
                    del self._unwritten[row.call_id]  # its end, from now on, is an update
        db.run_many(
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
                    self.replica,
                    row.trace_id,
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

    def _conversation_of(self, db: Database, key: str) -> int | None:
        """In the writer thread: the id of the conversation opened with ``key``."""
        known = self._keys.get(key)
        if known is None:
            row = db.one("SELECT id FROM conversations WHERE key = ?", (key,))
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
        """Record how a call ended: ``ok``, ``tool-error``, ``error`` or ``denied`` (``result_size``:
        the event's unless given). Does not wait: ``await committed()`` does."""
        if event.approved_by in _DENIED:
            status = "denied"
        else:
            status = "error" if event.error else ("tool-error" if event.is_error else "ok")
        error = self._redact(event.error) if event.error else None
        size = event.result_size if result_size is None else result_size
        with self._rows_lock:
            row = self._unwritten.get(event.call_id)
            if row is not None:  # not written yet: its insert writes the end too
                row.status, row.error, row.duration, row.result = status, error, event.duration, event.result
                if size is not None:
                    row.result_size = size
                if event.approved_by is not None:
                    row.approved_by = event.approved_by
        if row is not None:
            if row.pending:  # its start is still in memory: queue it (and the others waiting) now
                self._queue_starts()
            return
        with self._rows_lock:
            params = (status, error, event.duration, size, event.approved_by)
            result, call_id = event.result, event.call_id
            # after its insert, which has run or is running; under the lock: in order with the others
            self._writer.submit(
                lambda db: db.run(_FINISH_CALL, (*params, self._result_text(result), call_id)), quick=True
            )

    def _where(
        self, server: str | None, status: str | None, text: str | None, replica: str | None = None
    ) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        for column, value in (("server", server), ("status", status), ("replica", replica)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        if text:
            clauses.append(self.store.dialect.contains.format("lower(name)", "lower(?)"))
            params.append(text)
        return (" WHERE " + " AND ".join(clauses) if clauses else ""), params

    def tool_calls(
        self,
        *,
        limit: int = 50,
        server: str | None = None,
        status: str | None = None,
        text: str | None = None,
        replica: str | None = None,
    ) -> list[ToolCallRecord]:
        """The most recent calls of every replica, newest first (after the writes queued before).

        ``server``, ``status`` (one of ``CALL_STATUSES``), ``text`` (in the tool's name, any case) and
        ``replica`` keep only the calls that match; ``limit`` applies after them."""
        where, params = self._where(server, status, text, replica)
        sql = f"SELECT {_COLUMNS} FROM tool_calls{where} ORDER BY started_at DESC, id DESC LIMIT ?"
        params.append(limit)
        return [ToolCallRecord.from_row(row) for row in self._read(sql, params)]

    def count_tool_calls(
        self,
        *,
        server: str | None = None,
        status: str | None = None,
        text: str | None = None,
        replica: str | None = None,
    ) -> int:
        """How many calls ``tool_calls`` with the same filters would list without a limit."""
        where, params = self._where(server, status, text, replica)
        ((count,),) = self._read(f"SELECT count(*) FROM tool_calls{where}", params)
        return int(count)

    def tool_call(self, call_id: str) -> ToolCallRecord | None:
        """One call, with its result (``result``: its text as kept), or None if there is none by that id."""
        rows = self._read(f"SELECT {_COLUMNS}, result FROM tool_calls WHERE call_id = ?", (call_id,))
        return ToolCallRecord.from_row(rows[0]) if rows else None

    # ----- conversations ---------------------------------------------------------------

    def _insert_conversation(
        self, db: Database, started_at: str, model: str | None, title: str | None, key: str | None
    ) -> int:
        row = db.one(
            "INSERT INTO conversations (started_at, model, title, key, replica) VALUES (?, ?, ?, ?, ?) RETURNING id",
            (started_at, model, title, key, self.replica),
        )
        assert row is not None
        conversation = int(row[0])
        if key is not None:
            self._keys[key] = conversation
        return conversation

    def start_conversation(self, *, model: str | None = None, title: str | None = None, key: str | None = None) -> int:
        """A new conversation; returns its id (waits for the writer: from async code, see ``open_conversation``).

        Args:
            model: The model it talks to (``provider:model``).
            title: A short title (the first prompt).
            key: The key its tool-call events carry (``ToolCallStarted.conversation``), so the calls
                made in it are filed under it.
        """
        title = self._redact(title) if title else None  # here, not in the writer thread: redactors read live state
        model = storable(model) if model else model  # (a chat's model may be any name a client of the API sent)
        at = now()
        return self._ask(lambda db: self._insert_conversation(db, at, model, title, key), write=True)

    def open_conversation(self, key: str, *, model: str | None = None, title: str | None = None) -> None:
        """A new conversation known by ``key``, without waiting: messages and the calls whose events
        carry ``key`` are filed under it (``add_message(key, ...)``)."""
        title = self._redact(title) if title else None
        model = storable(model) if model else model
        at = now()
        self._queue(lambda db: self._insert_conversation(db, at, model, title, key))

    def add_message(self, conversation: int | str, role: str, content: Any) -> None:
        """Append a message (any JSON-able content) to a conversation, given by its id or by the key
        it was opened with (a key no conversation has is ignored). Does not wait."""
        text = self._redact(json.dumps(content, ensure_ascii=False, default=str))
        at = now()

        def write(db: Database) -> None:
            found = conversation if isinstance(conversation, int) else self._conversation_of(db, conversation)
            if found is not None:
                db.run(
                    "INSERT INTO messages (conversation_id, at, role, content) VALUES (?, ?, ?, ?)",
                    (found, at, role, text),
                )

        self._queue(write)

    def conversations(self, *, limit: int = 20) -> list[dict[str, Any]]:
        """The most recent conversations with their message counts, newest first."""
        rows = self._read(
            "SELECT c.id, c.started_at, c.model, c.title, COUNT(m.id), c.replica FROM conversations c"
            " LEFT JOIN messages m ON m.conversation_id = c.id GROUP BY c.id ORDER BY c.id DESC LIMIT ?",
            (limit,),
        )
        return [
            {"id": r[0], "startedAt": r[1], "model": r[2], "title": r[3], "messages": r[4], "replica": r[5]}
            for r in rows
        ]

    def messages(self, conversation_id: int) -> list[dict[str, Any]]:
        """A conversation's messages in order (none for an id the store cannot hold)."""
        if not -(2**63) <= conversation_id < 2**63:
            return []
        rows = self._read(
            "SELECT at, role, content FROM messages WHERE conversation_id = ? ORDER BY id", (conversation_id,)
        )
        return [{"at": r[0], "role": r[1], "content": json.loads(r[2])} for r in rows]
