"""The PostgreSQL store's writes run through libpq itself (``PostgresDatabase._write``): every kind of value
the store writes arrives as psycopg would have sent it, a failing write is psycopg's own error and leaves the
connection usable, a lost connection is seen as lost, and statements beyond those kept prepared still run.
On a real PostgreSQL 15."""

from __future__ import annotations

import math
from collections.abc import Generator
from contextlib import contextmanager
from decimal import Decimal
from typing import Any

import psycopg
import pytest

from mcpdeck.store import parse_location
from mcpdeck.store._db import PREPARED_MAX, PostgresDatabase, open_database
from tests.postgres import Postgres

_TABLE = "CREATE TABLE kinds (id BIGINT PRIMARY KEY, label TEXT, size BIGINT, seconds DOUBLE PRECISION, note TEXT)"
_INSERT = "INSERT INTO kinds (id, label, size, seconds, note) VALUES (?, ?, ?, ?, ?)"


@contextmanager
def _opened(url: str) -> Generator[PostgresDatabase]:
    """The store's database at ``url`` (migrated), with a table of every kind of value; closed after."""
    db = open_database(parse_location(url))
    assert isinstance(db, PostgresDatabase)
    try:
        db.run(_TABLE)
        yield db
    finally:
        db.close()


def _direct(db: PostgresDatabase) -> list[str]:
    """Notes the statements ``db`` sends through libpq itself (the others go through psycopg's cursor)."""
    seen: list[str] = []
    write = db._write  # pyright: ignore[reportPrivateUsage]

    def noted(sql: str, values: list[bytes | None], types: list[int], *, prepare: bool) -> int:
        seen.append(sql.split()[0])
        return write(sql, values, types, prepare=prepare)

    db._write = noted  # type: ignore[method-assign]  # pyright: ignore[reportPrivateUsage]
    return seen


def test_every_kind_of_value_is_written_as_psycopg_would_write_it(postgres: Postgres) -> None:
    with postgres.database() as url, _opened(url) as db:
        direct = _direct(db)
        rows: list[tuple[Any, ...]] = [
            (1, "plain", 10, 0.25, None),
            (2, "ünïcödé ✓ 漢字 \"quoted\" 'single' \\ back", -(2**62), 1e-07, "line\nbreak\ttab"),
            (3, "", 0, float("inf"), "x" * 100_000),
            (4, None, None, None, None),
        ]
        for row in rows:
            assert db.run(_INSERT, row) == 1
        db.run_many(_INSERT, [(5, "a", 1, 1.5, None), (6, "b", 2, 2.5, "c")])  # one INSERT of two rows
        assert direct == ["INSERT"] * 5
        assert db.run("UPDATE kinds SET note = ? WHERE size > ?", ("updated", 1)) == 2  # (rows 1 and 6)
        assert db.run("DELETE FROM kinds WHERE id = ?", (5,)) == 1
        assert direct == ["INSERT"] * 5 + ["UPDATE", "DELETE"]
        got = db.rows("SELECT id, label, size, seconds, note FROM kinds ORDER BY id")
        assert got == [
            (1, "plain", 10, 0.25, "updated"),
            rows[1],
            rows[2],
            rows[3],
            (6, "b", 2, 2.5, "updated"),
        ]


def test_a_value_libpq_is_not_given_goes_through_psycopg_which_says_what_is_wrong(postgres: Postgres) -> None:
    with postgres.database() as url, _opened(url) as db:
        direct = _direct(db)
        with pytest.raises(psycopg.DataError, match="NUL"):  # PostgreSQL's text cannot hold it: psycopg says so
            db.run(_INSERT, (1, "a\x00b", 1, 1.0, None))
        db.run(_INSERT, (2, "a", Decimal(7), 1.0, None))  # another type: psycopg's adaptation
        assert direct == []
        assert db.rows("SELECT id, size FROM kinds") == [(2, 7)]


def test_a_failing_write_raises_psycopg_s_own_error_and_the_connection_goes_on(postgres: Postgres) -> None:
    with postgres.database() as url, _opened(url) as db:
        db.run(_INSERT, (1, "first", 1, 1.0, None))
        with pytest.raises(psycopg.errors.UniqueViolation):
            db.run(_INSERT, (1, "again", 1, 1.0, None))
        assert not db.broken()
        db.begin()  # in a transaction the failure aborts it; a rollback ends it, the statement stays prepared
        with pytest.raises(psycopg.errors.InvalidTextRepresentation):
            db.run(_INSERT, (2, "size is no number", "ten", 1.0, None))
        db.rollback()
        assert db.run(_INSERT, (3, "third", 3, 3.0, None)) == 1
        with pytest.raises(psycopg.errors.UndefinedTable):  # a statement that cannot be prepared
            db.run("INSERT INTO nowhere (id) VALUES (?)", (1,))
        assert db.run(_INSERT, (4, "fourth", 4, 4.0, None)) == 1
        assert db.rows("SELECT id FROM kinds ORDER BY id") == [(1,), (3,), (4,)]


def test_a_connection_lost_under_a_write_is_seen_as_lost(postgres: Postgres) -> None:
    with postgres.database() as url, _opened(url) as db:
        db.run(_INSERT, (1, "before", 1, 1.0, None))
        ((pid,),) = db.rows("SELECT pg_backend_pid()")
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        with pytest.raises(psycopg.OperationalError):
            db.run(_INSERT, (2, "after", 2, 2.0, None))
        assert db.broken()  # (the writer opens a new connection: tests/store/test_store.py)


def test_statements_beyond_those_kept_prepared_still_run(postgres: Postgres) -> None:
    with postgres.database() as url, _opened(url) as db:
        for n in range(PREPARED_MAX + 5):  # each a statement of its own: the last five are parsed each time
            db.run(f"INSERT INTO kinds (id, label) VALUES (?, ?) -- statement {n}", (n, f"row {n}"))
        db.run(_INSERT, (1000, "again", 1, 1.0, None))
        db.run(_INSERT, (1001, "again", 1, 1.0, None))
        assert db.rows("SELECT count(*) FROM kinds") == [(PREPARED_MAX + 7,)]
        ((prepared,),) = db.rows("SELECT count(*) FROM pg_prepared_statements WHERE name LIKE 'mcpdeck%'")
        assert prepared == PREPARED_MAX


def test_a_rollback_after_many_reads_does_not_drop_the_writes_statements(postgres: Postgres) -> None:
    """psycopg prepares a query it has run five times, and after a ROLLBACK it sends DEALLOCATE ALL, which
    dropped the writes' statements too: the next write in a transaction failed."""
    with postgres.database() as url, _opened(url) as db:
        db.run(_INSERT, (1, "first", 1, 1.0, None))
        for _ in range(8):  # a read run often (the console's pages)
            assert db.rows("SELECT count(*) FROM kinds WHERE id > ?", (0,)) == [(1,)]
        db.begin()
        with pytest.raises(psycopg.errors.UniqueViolation):
            db.run(_INSERT, (1, "again", 1, 1.0, None))
        db.rollback()
        assert db.rows("SELECT count(*) FROM kinds WHERE id > ?", (0,)) == [(1,)]
        db.begin()  # (in a transaction, where a statement found missing cannot be prepared again in time)
        assert db.run(_INSERT, (2, "after the rollback", 2, 2.0, None)) == 1
        db.commit()
        assert db.rows("SELECT count(*) FROM kinds WHERE id > ?", (0,)) == [(2,)]


def test_a_statement_dropped_by_someone_else_is_prepared_again(postgres: Postgres) -> None:
    with postgres.database() as url, _opened(url) as db:
        db.run(_INSERT, (1, "prepared", 1, 1.0, None))
        db.run("DEALLOCATE ALL")  # what a pooler's DISCARD ALL does too
        assert db.run(_INSERT, (2, "prepared again", 2, 2.0, None)) == 1  # outside a transaction: at once
        db.run("DEALLOCATE ALL")
        db.begin()  # inside one the failure ends it; the writer runs the job again, alone
        with pytest.raises(psycopg.errors.InvalidSqlStatementName):
            db.run(_INSERT, (3, "in a transaction", 3, 3.0, None))
        db.rollback()
        assert db.run(_INSERT, (3, "run again", 3, 3.0, None)) == 1
        assert db.rows("SELECT id, label FROM kinds ORDER BY id") == [
            (1, "prepared"),
            (2, "prepared again"),
            (3, "run again"),
        ]


def test_a_float_is_written_as_psycopg_writes_it_whatever_the_column(postgres: Postgres) -> None:
    """A float goes typed ``float8``, as psycopg sends it, so PostgreSQL casts it to the column's type (an integer
    column rounds it, a text column gets PostgreSQL's spelling), even where the statement's first run had None."""
    floats = [None, 100.0, 0.30000000000000004, 2.5, -0.0, 1e-07, float("inf"), float("nan")]
    with postgres.database() as url, _opened(url) as db:
        db.run("CREATE TABLE floats (k TEXT, whole BIGINT, exact NUMERIC, shown TEXT)")
        cursor = db._cursor  # pyright: ignore[reportPrivateUsage]
        for n, value in enumerate(floats):
            whole = None if value is not None and not math.isfinite(value) else value  # (no integer holds those)
            db.run("INSERT INTO floats (k, whole, exact, shown) VALUES (?, ?, ?, ?)", (f"ours{n}", whole, value, value))
            cursor.execute(
                "INSERT INTO floats (k, whole, exact, shown) VALUES (%s, %s, %s, %s)",
                (f"psycopg{n}", whole, value, value),
            )
        ours = db.rows("SELECT whole::text, exact::text, shown FROM floats WHERE k LIKE 'ours%' ORDER BY k")
        theirs = db.rows("SELECT whole::text, exact::text, shown FROM floats WHERE k LIKE 'psycopg%' ORDER BY k")
        assert ours == theirs and ("100", "100", "100") in ours and ("0", "0", "-0") in ours


def test_a_write_that_returns_rows_goes_through_psycopg(postgres: Postgres) -> None:
    with postgres.database() as url, _opened(url) as db:
        direct = _direct(db)
        assert db.run(_INSERT + " RETURNING id", (1, "returned", 1, 1.0, None)) == 1
        assert db.one("INSERT INTO kinds (id) VALUES (?) RETURNING id", (2,)) == (2,)
        assert direct == [] and db.rows("SELECT id FROM kinds ORDER BY id") == [(1,), (2,)]


def test_after_a_deallocate_all_every_statement_of_a_transaction_is_prepared_again(postgres: Postgres) -> None:
    """DEALLOCATE ALL drops every statement: a transaction run again after the first one found missing prepares
    each of its statements again, not only that first one."""
    update = "UPDATE kinds SET label = ? WHERE id = ?"
    with postgres.database() as url, _opened(url) as db:
        db.run(_INSERT, (1, "first", 1, 1.0, None))
        db.run(update, ("updated", 1))
        db.run("DEALLOCATE ALL")
        db.begin()
        with pytest.raises(psycopg.errors.InvalidSqlStatementName):
            db.run(_INSERT, (2, "second", 2, 2.0, None))
        db.rollback()
        db.begin()  # the job again, as the writer runs it after a failure
        assert db.run(_INSERT, (2, "second", 2, 2.0, None)) == 1
        assert db.run(update, ("updated too", 2)) == 1
        db.commit()
        assert db.rows("SELECT id, label FROM kinds ORDER BY id") == [(1, "updated"), (2, "updated too")]


def test_on_a_sql_ascii_database_strings_go_as_psycopg_sends_them(postgres: Postgres) -> None:
    with psycopg.connect(postgres.url(), autocommit=True) as admin:
        admin.execute("CREATE DATABASE ascii_store ENCODING 'SQL_ASCII' TEMPLATE template0 LC_COLLATE 'C' LC_CTYPE 'C'")
    try:
        with _opened(postgres.url("ascii_store")) as db:
            db.run(_INSERT, (1, "café ✓", 1, 1.0, None))
            db._cursor.execute(_INSERT.replace("?", "%s"), (2, "café ✓", 2, 2.0, None))  # pyright: ignore[reportPrivateUsage]
            assert db.rows("SELECT count(DISTINCT label), count(*) FROM kinds") == [(1, 2)]
    finally:
        with psycopg.connect(postgres.url(), autocommit=True) as admin:
            admin.execute("DROP DATABASE ascii_store WITH (FORCE)")
