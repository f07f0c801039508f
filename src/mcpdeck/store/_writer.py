"""One thread that owns the store's connection: work is queued to it, and writes are committed in groups.

``submit(job)`` queues a job and returns at once; ``call(job)`` queues one and waits for its answer
(from a thread); ``await committed()`` waits until everything queued before it is committed (from the
event loop, without a thread). Jobs run one at a time, in the order they were queued, so a read sees
every write queued before it.

Group commit without a linger: the thread takes the first job queued, then every job queued while it
waited for the last commit, runs them in one transaction and commits at once. A lone write is
committed as soon as it is queued; under load, the jobs that arrive during one commit share the next,
so the number of commits per second is bounded by the disk, not by the callers. One commit wakes
every task waiting on it with one hand-over to its event loop. A group made only of *quick* jobs (``submit(job,
quick=True)``: writes whose answers nobody reads, such as a call's row) is gathered first and, on PostgreSQL,
sent at once: in one round trip (``Database.pipeline``), and when it is one statement (most groups: one
INSERT of the calls' rows) as a transaction by itself on the autocommit connection, without BEGIN and
COMMIT, which spares the writer thread its waits for the GIL around them (thread switches per call
7.9-8.1 -> 5.2-5.4 measured, bench/RESULTS.md 2026-11-29). On SQLite that was measured no faster, and a group
runs as any other.

Why a thread, on both stores: a commit waits for the database (on PostgreSQL a round trip to the server, and
its WAL fsync at the store's ``synchronous=full``; on SQLite the disk at ``full``), which the thread waits out
without holding up the event loop. On SQLite at ``normal`` the commit does not wait for the disk, so the event
loop could commit a call's row itself instead of handing it to the thread and back; measured
(bench/RESULTS.md, 2026-11-29) it saved thread switches but put SQLite's own work on the event loop and made
smaller groups: it took less CPU per call only on an overloaded machine, more on a quiet one. One design for
both stores stayed.

A job that fails does not lose the others: its batch is rolled back and each job is run again in a
transaction of its own; the failing one is logged (or, for ``call``, raised to its caller). A ``Divisible`` job
(the calls' rows of a group, in one INSERT) that fails alone is run again row by row, so a row the database
refuses loses only itself. A lost
PostgreSQL connection is opened again and the batch's jobs run again one by one; a job that loses the connection
while they do (or while a group's rows are written one by one) is run once more on a new one. When it cannot be
opened again, the writes left are logged as lost and their waiters released.

``close()`` runs everything queued before it, then closes the connection and ends the thread. It also
runs when the writer is garbage collected or the interpreter exits, so nothing queued is lost when a
program forgets to close.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
import time
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, TypeVar

from mcpdeck._observability.metrics import observe_store_commit
from mcpdeck.store._db import ROWS_PER_INSERT, Database

__all__ = ["BATCH", "Divisible", "Job", "Writer"]

logger = logging.getLogger("mcpdeck.store")

T = TypeVar("T")
Job = Callable[[Database], Any]
BATCH = 500
"""Jobs at most in one transaction."""


@dataclass(slots=True)
class _Item:
    seq: int
    job: Job
    future: Future[Any] | None
    write: bool
    quick: bool = False
    """A write whose answer nobody reads (``submit(quick=True)``)."""


@dataclass
class _Shared:
    """What the callers and the thread share, under ``lock``."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    submitted: int = 0
    done: int = 0
    """The last job's number whose batch has ended (committed, or given up)."""
    waiters: list[tuple[int, asyncio.AbstractEventLoop, asyncio.Future[None]]] = field(
        default_factory=list[tuple[int, asyncio.AbstractEventLoop, "asyncio.Future[None]"]]
    )


def _wake(futures: list[asyncio.Future[None]]) -> None:
    for future in futures:
        if not future.done():
            future.set_result(None)


def _run_jobs(db: Database, batch: list[_Item]) -> list[tuple[_Item, Any, BaseException | None]]:
    """Run ``batch`` in one transaction (when it writes); raise on the first failure."""
    if db.dialect.name == "postgresql" and all(item.quick for item in batch):
        return _run_quick(db, batch)  # (on SQLite measured no faster: bench/RESULTS.md, 2026-11-29)
    writes = any(item.write for item in batch)
    answers: list[tuple[_Item, Any, BaseException | None]] = []
    started = time.perf_counter()
    try:
        if writes:
            db.begin()
        answers.extend((item, item.job(db), None) for item in batch)
        if writes:
            db.commit()
            observe_store_commit(time.perf_counter() - started)  # BEGIN to COMMIT: /metrics' store commit latency
    except BaseException:
        with contextlib.suppress(*db.errors):
            db.rollback()
        raise
    return answers


def _run_quick(db: Database, batch: list[_Item]) -> list[tuple[_Item, Any, BaseException | None]]:
    """On PostgreSQL, run a batch of quick jobs: their statements are gathered first, then sent at once (one round
    trip); a lone statement (most groups: one INSERT of the calls' rows, up to ``ROWS_PER_INSERT``) is a
    transaction by itself on the autocommit connection, without BEGIN and COMMIT."""
    started = time.perf_counter()  # (the jobs' own work counted, as in a transaction's)
    gathered = _Gathered(db)
    answers: list[tuple[_Item, Any, BaseException | None]] = [(item, item.job(gathered), None) for item in batch]
    if not gathered.statements:
        return answers
    try:
        lone = gathered.statements[0] if len(gathered.statements) == 1 else None
        if lone is not None and len(lone[1]) <= ROWS_PER_INSERT:
            # one statement on the autocommit connection: a transaction by itself, one round trip
            sql, rows, many = lone
            _send(db, sql, rows, many)
        else:
            with db.pipeline():
                db.begin()
                for sql, rows, many in gathered.statements:
                    _send(db, sql, rows, many)
                db.commit()
        observe_store_commit(time.perf_counter() - started)
    except BaseException:
        with contextlib.suppress(*db.errors):
            db.rollback()
        raise
    return answers


def _send(db: Database, sql: str, rows: Sequence[Sequence[Any]], many: bool) -> None:
    if many:
        db.run_many(sql, rows)
    else:
        db.run(sql, rows[0])


class _Gathered(Database):
    """A quick job's view of the database: its writes are kept, to be sent together; its reads are answered."""

    def __init__(self, db: Database):
        self.dialect, self.errors, self._db = db.dialect, db.errors, db
        self.statements: list[tuple[str, Sequence[Sequence[Any]], bool]] = []

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._db.rows(sql, params)

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        self.statements.append((sql, [params], False))
        return 0  # (a quick job's answer is not read)

    def run_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            self.statements.append((sql, rows, True))

    def rollback(self) -> None:
        self._db.rollback()

    def broken(self) -> bool:
        return self._db.broken()

    def close(self) -> None:
        raise RuntimeError("a job does not close the store")


class Divisible(ABC):
    """A job that writes many rows and, when it fails as a whole, can be run as one job per row (``parts``): a row
    the database refuses then loses itself only, not the rows written with it."""

    @abstractmethod
    def __call__(self, db: Database) -> None: ...

    @abstractmethod
    def parts(self) -> Sequence[Job]:
        """The same writes, one job per row (none when it is one row already)."""


@dataclass
class _Link:
    """The writer's connection while the jobs of a failed batch run one by one: when a job fails because the
    connection was lost, it is opened again and the job run once more (at most once per job, and not again in the
    batch once opening it failed: a database that is gone costs one connect timeout, not one per job)."""

    db: Database
    reopen: Callable[[], Database] | None
    gone: bool = False

    def again(self) -> bool:
        """Open the connection again if it is lost; whether there is a working one now."""
        if not self.db.broken():
            return True
        if self.gone or self.reopen is None:
            return False
        self.db = _reopened(self.db, self.reopen)
        self.gone = self.db.broken()
        return not self.gone

    def run(self, item: _Item) -> list[tuple[_Item, Any, BaseException | None]]:
        """Run ``item`` in a transaction of its own (again on a new connection when the old one was lost
        meanwhile: the writes it retries are idempotent, or were not committed)."""
        try:
            return _run_jobs(self.db, [item])
        except Exception:
            if not self.db.broken() or not self.again():
                raise
        return _run_jobs(self.db, [item])


def _run_parts(link: _Link, item: _Item, parts: Sequence[Job]) -> None:
    """Run a ``Divisible`` job's parts one by one (each in a transaction of its own), and say in one line how many
    were not written (refused by the database, or lost with a connection that could not be opened again)."""
    refused: list[BaseException] = []
    tried = 0
    for part in parts:
        if refused and link.db.broken():
            break
        tried += 1
        try:
            link.run(_Item(item.seq, part, None, item.write, item.quick))
        except Exception as error:
            refused.append(error)
    if refused:
        lost = len(refused) + len(parts) - tried
        logger.error("a history write failed: %d of %d rows written together: %s", lost, len(parts), refused[0])


def _run_alone(link: _Link, batch: list[_Item]) -> list[tuple[_Item, Any, BaseException | None]]:
    """Run each job of a batch that failed in a transaction of its own, noting which fail (a ``Divisible`` job that
    fails alone, each of its parts alone)."""
    answers: list[tuple[_Item, Any, BaseException | None]] = []
    for item in batch:
        try:
            ((_, result, _),) = link.run(item)
        except Exception as error:
            parts = item.job.parts() if isinstance(item.job, Divisible) and item.future is None else ()
            if parts and not link.db.broken():
                _run_parts(link, item, parts)
                answers.append((item, None, None))
                continue
            if item.future is None:
                logger.error("a history write failed: %s", error)
            answers.append((item, None, error))
        else:
            answers.append((item, result, None))
    return answers


class Writer:
    """The thread that runs every job on the store's connection; ``reopen`` makes a new one when it is lost."""

    def __init__(self, db: Database, *, name: str, reopen: Callable[[], Database] | None = None):
        self._jobs: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        self._shared = _Shared()
        worker = _Worker(self._jobs, self._shared, reopen)  # holds nothing of this object: it can be collected
        self._thread = threading.Thread(target=worker.serve, args=(db,), name=name, daemon=True)
        self._thread.start()
        self._close = weakref.finalize(self, _stop, self._jobs, self._thread)

    @property
    def closed(self) -> bool:
        """Whether ``close`` ran."""
        return not self._close.alive

    def _put(self, job: Job, future: Future[Any] | None, write: bool, quick: bool = False) -> None:
        if not self._close.alive:
            raise RuntimeError("the history database is closed")
        shared = self._shared
        with shared.lock:  # numbers in queue order
            shared.submitted += 1
            self._jobs.put(_Item(shared.submitted, job, future, write, quick))

    def submit(self, job: Job, *, quick: bool = False) -> None:
        """Queue a write; it is committed with the next group, after everything queued before it.

        ``quick``: nobody reads what it answers (a group of such writes is sent in one round trip)."""
        self._put(job, None, True, quick)

    def call(self, job: Callable[[Database], T], *, write: bool = False) -> T:
        """Queue ``job`` and wait for its answer (or its exception). Blocks: from async code, run it in a
        worker thread. ``write``: it changes the database (a transaction is opened for it)."""
        future: Future[T] = Future()
        self._put(job, future, write)
        return future.result()

    def flush(self) -> None:
        """Wait until everything queued so far is done."""
        self.call(lambda _db: None)

    async def committed(self) -> None:
        """Wait until everything queued so far is committed (without a thread: the writer wakes the loop)."""
        shared = self._shared
        with shared.lock:
            target = shared.submitted
            if shared.done >= target:
                return
            loop = asyncio.get_running_loop()
            future: asyncio.Future[None] = loop.create_future()
            shared.waiters.append((target, loop, future))
        await future

    def close(self) -> None:
        """Run everything queued, close the connection, end the thread. Safe to call twice."""
        self._close()


@dataclass
class _Worker:
    """The writer thread's side."""

    jobs: queue.SimpleQueue[_Item | None]
    shared: _Shared
    reopen: Callable[[], Database] | None

    def serve(self, db: Database) -> None:
        try:
            stop = False
            while not stop:
                batch: list[_Item] = []
                item = self.jobs.get()
                while True:
                    if item is None:
                        stop = True
                        break
                    batch.append(item)
                    if len(batch) >= BATCH:
                        break
                    try:
                        item = self.jobs.get_nowait()
                    except queue.Empty:
                        break
                if batch:
                    db = self._run(db, batch)
        finally:
            db.close()

    def _run(self, db: Database, batch: list[_Item]) -> Database:
        link = _Link(db, self.reopen)
        try:
            answers = _run_jobs(db, batch)
        except db.errors as error:
            try:
                answers = _run_alone(link, batch) if link.again() else _lost(batch, error)
            except db.errors as again:  # the database itself fails (disk full, I/O error, gone)
                answers = _lost(batch, again)
        except Exception:
            answers = _run_alone(link, batch)
        db = link.db
        for item, result, failure in answers:
            if item.future is None:
                continue
            if failure is None:
                item.future.set_result(result)
            else:
                item.future.set_exception(failure)
        self._done(batch[-1].seq)
        return db

    def _done(self, seq: int) -> None:
        shared = self.shared
        with shared.lock:
            shared.done = seq
            ready = [waiter for waiter in shared.waiters if waiter[0] <= seq]
            if not ready:
                return
            shared.waiters = [waiter for waiter in shared.waiters if waiter[0] > seq]
        by_loop: dict[asyncio.AbstractEventLoop, list[asyncio.Future[None]]] = {}
        for _, loop, future in ready:
            by_loop.setdefault(loop, []).append(future)
        for loop, futures in by_loop.items():
            with contextlib.suppress(RuntimeError):  # that loop is closed: nobody waits any more
                loop.call_soon_threadsafe(_wake, futures)


def _reopened(db: Database, reopen: Callable[[], Database]) -> Database:
    with contextlib.suppress(Exception):
        db.close()
    try:
        opened = reopen()
    except Exception as error:
        logger.error("the store's connection was lost and cannot be opened again: %s", error)
        return db
    logger.warning("the store's connection was lost and is open again")
    return opened


def _lost(batch: list[_Item], error: BaseException) -> list[tuple[_Item, Any, BaseException | None]]:
    logger.error("%d history writes were lost: %s", sum(item.write for item in batch), error)
    return [(item, None, error) for item in batch]


def _stop(jobs: queue.SimpleQueue[_Item | None], thread: threading.Thread) -> None:
    jobs.put(None)
    if thread is not threading.current_thread():
        thread.join()
