"""One connection to the store's database, SQLite or PostgreSQL, and the migrations run when it opens.

``open_database(location)`` connects and brings the schema up to date in one transaction under a
lock, so three processes starting at once apply each migration once: SQLite's ``BEGIN IMMEDIATE``
(one writer at a time, the others wait), PostgreSQL's ``pg_advisory_xact_lock`` (released with the
transaction). SQLite keeps the version in ``user_version`` (as the history file always did),
PostgreSQL in a one-row table ``mcpdeck_schema``. A database newer than this mcpdeck is refused.

How durable a commit is follows the store URL's ``synchronous`` level (``StoreLocation.synchronous``), with
one meaning on both: ``normal`` answers once the database has the commit (SQLite's ``synchronous=NORMAL`` in
WAL mode: in the OS's page cache; PostgreSQL's ``synchronous_commit=off``: in the server's WAL buffers, flushed
within ~3 x ``wal_writer_delay``), which survives mcpdeck dying; ``full`` answers once it is on the disk
(``synchronous=FULL``; PostgreSQL's own setting, ``on`` unless the server, role or database says otherwise).

A ``Database`` is used by one thread at a time (the store's writer thread); it runs the queries of
``mcpdeck.store`` written with ``?`` parameters in its own dialect.
"""

from __future__ import annotations

import contextlib
import itertools
import sqlite3
import zlib
from abc import ABC, abstractmethod
from collections.abc import Generator, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, LiteralString, cast

from mcpdeck._util.files import ensure_private_dir, ensure_private_file
from mcpdeck._util.paths import data_dir
from mcpdeck.errors import ConfigError
from mcpdeck.store._location import StoreLocation
from mcpdeck.store._schema import POSTGRESQL, SCHEMA_VERSION, SQLITE, Dialect

if TYPE_CHECKING:
    import psycopg

__all__ = ["BUSY_TIMEOUT", "LOCK_CLASS", "ROWS_PER_INSERT", "Database", "lock_key", "open_database"]

BUSY_TIMEOUT = 30.0
"""Seconds a SQLite writer waits for another process's transaction before it gives up."""
CONNECT_TIMEOUT = 10
"""Seconds to reach PostgreSQL (unless the URL says ``connect_timeout``)."""
LOCK_CLASS = 0x6D6364  # "mcd": the first key of every advisory lock mcpdeck takes
_MIGRATION_KEY = 0
Row = tuple[Any, ...]
ROWS_PER_INSERT = 500
"""Rows at most in one INSERT (each row's values are parameters; SQLite takes 32,766, PostgreSQL 65,535)."""
PREPARED_MAX = 64
"""Writes at most the PostgreSQL store's connection keeps prepared; others are parsed at each run."""
_WRITES = ("INSERT", "UPDATE", "DELETE")
_FLOAT8 = 701
"""The type OID of ``float8`` (``double precision``)."""
_NO_SUCH_STATEMENT = b"26000"
"""SQLSTATE invalid_sql_statement_name: a prepared statement the connection does not have."""


def _numbered(sql: str) -> str:
    """``sql``, written with ``?`` parameters, with libpq's numbered ones (``$1``, ``$2`` ...)."""
    parts = sql.split("?")
    return "".join(f"{part}${number}" for number, part in enumerate(parts[:-1], 1)) + parts[-1]


def _in_chunks(sql: str, rows: Sequence[Sequence[Any]]) -> Iterator[tuple[str, list[Any]]]:
    """``sql``, an ``INSERT ... VALUES (...)`` of one row, as statements of up to ``ROWS_PER_INSERT`` rows each,
    with their parameters; nothing for another statement or a single row (``executemany`` runs those)."""
    head, values, tail = sql.partition(" VALUES (")
    if not values or not head.startswith("INSERT") or len(rows) < 2:
        return
    group, _, rest = tail.partition(")")
    for first in range(0, len(rows), ROWS_PER_INSERT):
        chunk = rows[first : first + ROWS_PER_INSERT]
        yield f"{head} VALUES {', '.join(f'({group})' for _ in chunk)}{rest}", [value for row in chunk for value in row]


def lock_key(name: str) -> int:
    """The second key of the advisory lock named ``name`` (a signed 32-bit integer)."""
    key = zlib.crc32(name.encode())
    return key - (1 << 32) if key >= 1 << 31 else key


class Database(ABC):
    """A connection to the store, in its database's dialect; one thread uses it at a time."""

    dialect: Dialect
    errors: tuple[type[Exception], ...]
    """What the driver raises for a database error."""

    @abstractmethod
    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        """The rows a query answers."""

    def one(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        """The first row a query answers, if any."""
        found = self.rows(sql, params)
        return found[0] if found else None

    @abstractmethod
    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run a statement; returns the rows it changed."""

    @abstractmethod
    def run_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run a statement once per row of parameters."""

    def begin(self) -> None:
        """Start a transaction that writes."""
        self.run("BEGIN")

    def commit(self) -> None:
        self.run("COMMIT")

    @contextlib.contextmanager
    def pipeline(self) -> Generator[None]:
        """Statements whose answers are not read, sent together (one round trip on PostgreSQL)."""
        yield

    @abstractmethod
    def rollback(self) -> None:
        """End the transaction without its changes (nothing when none is open)."""

    @abstractmethod
    def broken(self) -> bool:
        """Whether the connection is lost (PostgreSQL restarted, the network dropped)."""

    @abstractmethod
    def close(self) -> None: ...


class SQLiteDatabase(Database):
    dialect = SQLITE
    errors = (sqlite3.Error,)

    def __init__(self, location: StoreLocation):
        assert location.path is not None
        self.path = location.path
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=BUSY_TIMEOUT)
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA foreign_keys=ON")
            self._db.execute(f"PRAGMA synchronous={location.synchronous.upper()}")
        except BaseException:
            self._db.close()
            raise

    @property
    def connection(self) -> sqlite3.Connection:
        """The sqlite3 connection (for a test's look at the statements it runs)."""
        return self._db

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        return self._db.execute(sql, params).fetchall()

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self._db.execute(sql, params).rowcount

    def run_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        # An INSERT of many rows as one statement: sqlite3 lets the GIL go and takes it back around every
        # statement it steps, and taking it back from a busy event loop costs more than the row itself
        chunks = list(_in_chunks(sql, rows))
        for statement, params in chunks:
            self._db.execute(statement, params)
        if not chunks:
            self._db.executemany(sql, rows)

    def begin(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")  # the write lock now (waiting for it), not at the first write

    def rollback(self) -> None:
        if self._db.in_transaction:
            self._db.execute("ROLLBACK")

    def broken(self) -> bool:
        return False

    def close(self) -> None:
        self._db.close()

    def version(self) -> int:
        return int(self._db.execute("PRAGMA user_version").fetchone()[0])

    def set_version(self, version: int) -> None:
        self._db.execute(f"PRAGMA user_version = {int(version)}")


class PostgresDatabase(Database):
    dialect = POSTGRESQL

    def __init__(self, location: StoreLocation):
        assert location.url is not None
        self._conn = connect_postgres(location)
        import psycopg

        self.errors = (psycopg.Error,)
        if location.synchronous == "normal":
            # Once per connection (the writer's, opened again after a loss by this same code), so a call's commit
            # pays nothing more for it: not a SET LOCAL in each transaction (a statement per commit), nor libpq's
            # startup options, which would have to merge with the URL's own options= and which PgBouncer refuses
            # unless told to ignore them. Behind a transaction-mode pooler a session setting does not hold:
            # docs/fleet.md gives the role setting for that case.
            try:
                self._conn.execute("SET synchronous_commit TO off")
            except psycopg.Error as error:
                self._conn.close()
                raise unreachable(location, error) from None
        self._cursor = self._conn.cursor()  # one for every statement: a new cursor each costs ~30 us of CPU
        # a write's statement and its values' types -> its name, prepared on this connection
        self._prepared: dict[tuple[str, tuple[int, ...]], bytes] = {}
        self._names = itertools.count()
        # psycopg prepares none of its own: once it has, a ROLLBACK makes it send DEALLOCATE ALL, which would
        # drop the writes' statements too (the reads it runs are few: the console's pages, the store's checks)
        self._conn.prepare_threshold = None
        # (on a SQL_ASCII database psycopg sends its strings as UTF-8: so does this)
        self._encoding = "utf-8" if self._conn.info.encoding == "ascii" else self._conn.info.encoding
        self._piped = False

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        return self._cursor.execute(self._sql(sql), params or None).fetchall()

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        text = self._as_text(sql, params)
        if text is None:
            return self._cursor.execute(self._sql(sql), params or None).rowcount
        return self._write(sql, *text, prepare=True)

    def run_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if len(rows) <= 1:
            for row in rows:
                self.run(sql, row)
            return
        chunks = list(_in_chunks(sql, rows))  # one statement (one plan, one round trip) per ROWS_PER_INSERT rows
        for statement, params in chunks:
            text = self._as_text(statement, params)
            if text is None:
                self._cursor.execute(self._sql(statement), params)
            else:  # a statement per number of rows: parsed each time, as psycopg does with one of over 50 values
                self._write(statement, *text, prepare=False)
        if not chunks:
            self._cursor.executemany(self._sql(sql), rows)

    def _as_text(self, sql: str, params: Sequence[Any]) -> tuple[list[bytes | None], list[int]] | None:
        """A write's values as libpq takes them, as text, and their types: a float's is ``float8`` (as psycopg sends
        it: PostgreSQL casts it to the column's type), the others' none (PostgreSQL takes the column's, as psycopg
        lets it for a string). None when psycopg runs the statement: one that is not an INSERT, UPDATE or DELETE, that
        returns rows, that has no values or is in a pipeline, or a value that is not None, a string (without NUL,
        which PostgreSQL's text refuses: psycopg says so), an integer or a float."""
        if self._piped or not params or not sql.startswith(_WRITES) or " RETURNING " in sql:
            return None
        values: list[bytes | None] = []
        types: list[int] = []
        for value in cast(Sequence[object], params):
            kind = type(value)  # (exactly: a bool, a subclass of str or int go through psycopg)
            if value is None:
                values.append(None)
            elif isinstance(value, str) and kind is str:
                if "\x00" in value:
                    return None
                values.append(value.encode(self._encoding))
            elif kind is int:
                values.append(str(value).encode())
            elif kind is float:
                values.append(repr(value).encode())
            else:
                return None
            types.append(_FLOAT8 if kind is float else 0)
        return values, types

    def _write(self, sql: str, values: list[bytes | None], types: list[int], *, prepare: bool) -> int:
        """Run a write through libpq itself (``psycopg.pq``): its answer is a row count, and psycopg's cursor, which
        reads rows, costs the writer thread ~60 us more CPU per statement than this (bench/RESULTS.md, 2026-11-30).
        ``types``: the values' type OIDs (0: the column's). ``prepare``: parsed once per
        connection for each statement and types (up to ``PREPARED_MAX``), not at each run."""
        from psycopg import pq

        pgconn = self._conn.pgconn
        key = (sql, tuple(types))
        again = True
        while True:
            name = self._prepared.get(key)
            if name is None and prepare and len(self._prepared) < PREPARED_MAX:
                name = f"mcpdeck_{next(self._names)}".encode()
                prepared = pgconn.prepare(name, _numbered(sql).encode(self._encoding), types)
                if prepared.status != pq.ExecStatus.COMMAND_OK:
                    raise self._failure(prepared)
                self._prepared[key] = name
            if name is None:
                result = pgconn.exec_params(_numbered(sql).encode(self._encoding), values, types)
            else:  # (None is NULL, as in exec_params)
                result = pgconn.exec_prepared(name, cast(Sequence[bytes], values))
            if result.status == pq.ExecStatus.COMMAND_OK:
                return result.command_tuples or 0
            if name is None or result.error_field(pq.DiagnosticField.SQLSTATE) != _NO_SUCH_STATEMENT:
                raise self._failure(result)
            # dropped by someone else (a DEALLOCATE ALL, a pooler's DISCARD ALL, which drop them all): each prepared
            # again at its next run, this one at once unless a transaction was open (this failure ended it: the writer
            # runs the job again, in one of its own)
            self._prepared.clear()
            if not again or pgconn.transaction_status != pq.TransactionStatus.IDLE:
                raise self._failure(result)
            again = False

    def _failure(self, result: psycopg.pq.abc.PGresult) -> psycopg.Error:
        """The error psycopg would raise for a statement that failed with ``result``."""
        from psycopg import OperationalError, errors, pq

        if self._conn.pgconn.status == pq.ConnStatus.BAD:  # the connection is lost (no SQLSTATE to tell it)
            return OperationalError(result.error_message.decode(self._encoding, "replace").strip())
        return errors.error_from_result(result, encoding=self._encoding)

    @contextlib.contextmanager
    def pipeline(self) -> Generator[None]:
        with self._conn.pipeline():
            self._piped = True  # (libpq runs no statement by itself in a pipeline)
            try:
                yield
            finally:
                self._piped = False

    def _sql(self, sql: str) -> LiteralString:
        # every query is a literal of mcpdeck.store's (values always go as parameters), in psycopg's dialect
        return cast(LiteralString, self.dialect.sql(sql))

    def rollback(self) -> None:
        from psycopg.pq import TransactionStatus

        if not self._conn.closed and self._conn.info.transaction_status != TransactionStatus.IDLE:
            self._conn.execute("ROLLBACK")

    def broken(self) -> bool:
        from psycopg import pq

        # (a connection lost in a statement run through libpq itself is not known to psycopg: libpq knows)
        return self._conn.broken or self._conn.closed or self._conn.pgconn.status == pq.ConnStatus.BAD

    def close(self) -> None:
        self._conn.close()

    def version(self) -> int:
        self.run("CREATE TABLE IF NOT EXISTS mcpdeck_schema (version INTEGER NOT NULL)")
        row = self.one("SELECT version FROM mcpdeck_schema")
        if row is None:
            self.run("INSERT INTO mcpdeck_schema (version) VALUES (0)")
            return 0
        return int(row[0])

    def set_version(self, version: int) -> None:
        self.run("UPDATE mcpdeck_schema SET version = ?", (version,))


def postgres_arguments(location: StoreLocation) -> tuple[str, dict[str, Any]]:
    """The URL and the keyword arguments psycopg connects to the PostgreSQL store with (sync or async).

    Raises:
        ConfigError: psycopg is not installed, or the URL cannot be read.
    """
    assert location.url is not None
    try:
        import psycopg
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:
        raise ConfigError(
            f"the store {location.shown} is PostgreSQL, and talking to it needs psycopg: "
            "pip install 'mcpdeck[postgres]'"
        ) from None
    url = (
        location.url.replace("postgres://", "postgresql://", 1)
        if location.url.startswith("postgres:")
        else location.url
    )
    try:
        given = conninfo_to_dict(url)
    except psycopg.ProgrammingError as error:
        raise ConfigError(f"the store URL {location.shown} cannot be read: {error}") from None
    extra: dict[str, Any] = {"application_name": "mcpdeck", "autocommit": True}
    if "connect_timeout" not in given:
        extra["connect_timeout"] = CONNECT_TIMEOUT
    return url, extra


def unreachable(location: StoreLocation, error: Exception) -> ConfigError:
    """The error for a PostgreSQL store that cannot be reached or refused us."""
    reason = " ".join(str(error).split())
    return ConfigError(
        f"cannot connect to the store {location.shown}: {reason}; check that PostgreSQL runs there and "
        "that the user, password (PGPASSWORD or ~/.pgpass) and database are right"
    )


def connect_postgres(location: StoreLocation) -> psycopg.Connection[Row]:
    """An autocommit connection to the PostgreSQL store.

    Raises:
        ConfigError: psycopg is not installed, or the database cannot be reached or refused us.
    """
    url, extra = postgres_arguments(location)
    import psycopg

    try:
        return psycopg.connect(url, **extra)
    except psycopg.Error as error:
        raise unreachable(location, error) from None


def open_database(location: StoreLocation) -> Database:
    """A connection to the store at ``location``, its schema brought up to date.

    A SQLite file (and its ``-wal`` and ``-shm``) is made ``0600``, a folder mcpdeck makes for it ``0700``.

    Raises:
        ConfigError: The store cannot be opened or reached, is not a database, or is newer than this mcpdeck.
    """
    if location.kind == "sqlite":
        assert location.path is not None
        _private(location.path)
        try:
            db: Database = SQLiteDatabase(location)
        except sqlite3.Error as error:
            raise ConfigError(f"cannot open the history database: {error}", path=str(location.path)) from None
    else:
        db = PostgresDatabase(location)
    try:
        migrate(db, location)
    except db.errors as error:
        db.close()
        raise ConfigError(f"cannot open the history database: {error}", path=location.shown) from None
    except BaseException:
        db.close()
        raise
    return db


def _private(path: Path) -> None:
    default = path == data_dir() / "history.sqlite3"  # mcpdeck's own folder, not one the user named
    ensure_private_dir(path.parent, tighten=default)
    ensure_private_file(path)  # SQLite gives the -wal and -shm it creates the database file's mode
    for suffix in ("-wal", "-shm"):  # ones an older mcpdeck left readable
        if (beside := path.with_name(path.name + suffix)).exists():
            ensure_private_file(beside)


def migrate(db: Database, location: StoreLocation) -> None:
    """Apply the migrations the database lacks, all in one transaction, under the migration lock."""
    assert isinstance(db, SQLiteDatabase | PostgresDatabase)
    db.begin()
    try:
        if isinstance(db, PostgresDatabase):
            db.run("SELECT pg_advisory_xact_lock(?, ?)", (LOCK_CLASS, _MIGRATION_KEY))
        version = db.version()
        if version > SCHEMA_VERSION:
            raise ConfigError(
                f"the history database has schema version {version}, newer than this mcpdeck knows "
                f"({SCHEMA_VERSION}); upgrade mcpdeck or use another store",
                path=location.shown,
            )
        for number in range(version + 1, SCHEMA_VERSION + 1):
            for statement in db.dialect.migration(number):
                db.run(statement)
        if version != SCHEMA_VERSION:
            db.set_version(SCHEMA_VERSION)
        db.commit()
    except BaseException:
        db.rollback()
        raise
