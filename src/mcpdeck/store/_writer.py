"""One connection to the store, and one queue of work for it: writes are committed in groups.

``submit(job)`` queues a job and returns at once; ``call(job)`` queues one and waits for its answer
(from a thread); ``await committed()`` waits until everything queued before it is committed (from the
event loop, without a thread). Jobs run one at a time, in the order they were queued, so a read sees
every write queued before it.

Group commit without a linger: whoever commits takes every job queued (up to ``BATCH``), runs them in
one transaction and commits at once; jobs queued meanwhile go in the next group. So the number of
commits per second is bounded by the disk, not by the callers, and one commit wakes every task waiting
on it with one hand-over to its event loop.

Who commits. A thread of the writer's own runs every job by default. A *quick* job (``submit(job,
quick=True)``: a write whose answer nobody reads, such as a call's row) queued on an event loop is, on a
database whose commit does not wait for the disk (``Database.quick``: SQLite with ``synchronous=NORMAL``),
committed by that event loop itself, at its next turn, with every quick job queued meanwhile: such a
commit costs tens of microseconds, less than handing the group to a thread and back (two thread switches
and the GIL taken back from a busy loop, each of which a busy 2-core machine charges in milliseconds).
The loop never waits for another process there: its writes do not wait for the write lock
(``Database.patience``), and a group it cannot write, or that fails, is handed to the thread, which waits
and retries as for every other job. On PostgreSQL (and SQLite with ``synchronous=FULL``) the commit waits
for an fsync, which a thread waits out without holding up the loop: there the thread commits everything,
and a group made only of quick jobs is sent in one round trip (``Database.pipeline``).

A group made only of quick jobs is gathered first, then sent at once; when it is one statement (most
groups: one INSERT of the calls' rows) it runs as a transaction by itself, without BEGIN and COMMIT
(on SQLite, in the thread, two fewer waits to take the GIL back from a busy event loop).

A job that fails does not lose the others: its batch is rolled back and each job is run again in a
transaction of its own; the failing one is logged (or, for ``call``, raised to its caller). A lost
PostgreSQL connection is opened again once and the batch retried; if that fails too, the batch's
writes are logged as lost and its waiters released.

``close()`` runs everything queued before it, then closes the connection and ends the thread. It also
runs when the writer is garbage collected or the interpreter exits, so nothing queued is lost when a
program forgets to close.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, TypeVar

from mcpdeck._observability.metrics import observe_store_commit
from mcpdeck.store._db import BUSY_TIMEOUT, Database

__all__ = ["BATCH", "Job", "Writer"]

logger = logging.getLogger("mcpdeck.store")

T = TypeVar("T")
Job = Callable[[Database], Any]
BATCH = 500
"""Jobs at most in one transaction."""
_Answers = list[tuple["_Item", Any, BaseException | None]]


@dataclass(slots=True)
class _Item:
    seq: int
    job: Job
    future: Future[Any] | None
    write: bool
    quick: bool = False
    """A write whose answer nobody reads (``submit(quick=True)``)."""
    here: bool = False
    """Queued on an event loop that commits it itself (a quick job, on a quick database)."""


@dataclass
class _Shared:
    """What the callers, the event loops that commit and the thread share, under ``lock``."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    wake: threading.Condition = field(init=False)
    """Wakes the thread: a job for it (``urgent``), the connection free again, or ``stopping``."""
    jobs: deque[_Item] = field(default_factory=deque[_Item])
    submitted: int = 0
    done: int = 0
    """The last job's number whose batch has ended (committed, or given up)."""
    busy: bool = False
    """A batch is running on the connection (in the thread, or on an event loop)."""
    urgent: bool = False
    """The thread should take the jobs queued: one was queued for it, or a loop could not commit them."""
    stopping: bool = False
    closed: bool = False
    scheduled: set[asyncio.AbstractEventLoop] = field(default_factory=set[asyncio.AbstractEventLoop])
    """The event loops with a commit of quick jobs due at their next turn."""
    waiters: list[tuple[int, asyncio.AbstractEventLoop, asyncio.Future[None]]] = field(
        default_factory=list[tuple[int, asyncio.AbstractEventLoop, "asyncio.Future[None]"]]
    )

    def __post_init__(self) -> None:
        self.wake = threading.Condition(self.lock)

    def take(self, quick_only: bool) -> list[_Item]:
        """Under ``lock``: the jobs at the head of the queue (only its quick ones: ``quick_only``), now busy."""
        batch: list[_Item] = []
        jobs = self.jobs
        while jobs and len(batch) < BATCH and (not quick_only or jobs[0].here):
            batch.append(jobs.popleft())
        if batch:
            self.busy = True
        if not jobs:
            self.urgent = False
        return batch

    def ended(self, seq: int | None) -> list[tuple[int, asyncio.AbstractEventLoop, asyncio.Future[None]]]:
        """Under ``lock``: a batch ended (up to job ``seq``, if it ran); the waiters it releases."""
        self.busy = False
        if self.stopping or (self.jobs and self.urgent):
            self.wake.notify()
        if seq is None:
            return []
        self.done = seq
        ready = [waiter for waiter in self.waiters if waiter[0] <= seq]
        if ready:
            self.waiters = [waiter for waiter in self.waiters if waiter[0] > seq]
        return ready


def _wake(futures: list[asyncio.Future[None]]) -> None:
    for future in futures:
        if not future.done():
            future.set_result(None)


def _release(ready: list[tuple[int, asyncio.AbstractEventLoop, asyncio.Future[None]]]) -> None:
    """Wake the tasks waiting for a commit: at once on this thread's loop, by a hand-over to any other."""
    if not ready:
        return
    try:
        here: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        here = None
    by_loop: dict[asyncio.AbstractEventLoop, list[asyncio.Future[None]]] = {}
    for _, loop, future in ready:
        by_loop.setdefault(loop, []).append(future)
    for loop, futures in by_loop.items():
        if loop is here:
            _wake(futures)
            continue
        with contextlib.suppress(RuntimeError):  # that loop is closed: nobody waits any more
            loop.call_soon_threadsafe(_wake, futures)


def _run_jobs(db: Database, batch: list[_Item]) -> list[tuple[_Item, Any, BaseException | None]]:
    """Run ``batch`` in one transaction (when it writes); raise on the first failure."""
    if all(item.quick for item in batch):
        return _run_quick(db, batch)
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
    """Run a batch of quick jobs: their statements are gathered first, then sent at once (one round trip on
    PostgreSQL); a lone statement (most groups: one INSERT of the calls' rows) is a transaction by itself, without
    BEGIN and COMMIT, which on SQLite spares the writer thread two waits for the GIL from a busy event loop."""
    started = time.perf_counter()  # (the jobs' own work counted, as in a transaction's)
    gathered = _Gathered(db)
    answers: list[tuple[_Item, Any, BaseException | None]] = [(item, item.job(gathered), None) for item in batch]
    if not gathered.statements:
        return answers
    try:
        with db.pipeline():
            if len(gathered.statements) == 1:
                ((sql, rows, many),) = gathered.statements
                _send(db, sql, rows, many)
            else:
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


def _run_alone(db: Database, batch: list[_Item]) -> _Answers:
    """Run each job of a batch that failed in a transaction of its own, noting which fail."""
    answers: _Answers = []
    for item in batch:
        try:
            ((_, result, _),) = _run_jobs(db, [item])
        except Exception as error:
            if item.future is None:
                logger.error("a history write failed: %s", error)
            answers.append((item, None, error))
        else:
            answers.append((item, result, None))
    return answers


class Writer:
    """Runs every job on the store's connection; ``reopen`` makes a new one when it is lost."""

    def __init__(self, db: Database, *, name: str, reopen: Callable[[], Database] | None = None):
        self._shared = _Shared()
        self._db = db
        self.quick = db.quick
        """Whether an event loop commits the quick jobs queued on it (the database's ``quick``; bench.store turns
        it off to compare with the thread committing them)."""
        worker = _Worker(self._shared, reopen)  # holds nothing of this object: it can be collected
        self._worker = worker
        if db.quick:
            db.patience(0)  # an event loop's BEGIN never waits: the thread does (``_Worker._run``)
        self._thread = threading.Thread(target=worker.serve, args=(db,), name=name, daemon=True)
        self._thread.start()
        self._close = weakref.finalize(self, _stop, self._shared, self._thread)

    @property
    def closed(self) -> bool:
        """Whether ``close`` ran."""
        return not self._close.alive

    def _put(self, job: Job, future: Future[Any] | None, write: bool, quick: bool = False) -> None:
        if not self._close.alive:
            raise RuntimeError("the history database is closed")
        loop: asyncio.AbstractEventLoop | None = None
        if quick and self.quick:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                loop = None  # from a thread: the writer's thread commits it
        shared = self._shared
        with shared.lock:  # numbers in queue order
            shared.submitted += 1
            shared.jobs.append(_Item(shared.submitted, job, future, write, quick, loop is not None))
            if loop is None:
                shared.urgent = True
                if not shared.busy:
                    shared.wake.notify()
            elif loop not in shared.scheduled:
                shared.scheduled.add(loop)
                loop.call_soon(self._commit_here, loop)

    def submit(self, job: Job, *, quick: bool = False) -> None:
        """Queue a write; it is committed with the next group, after everything queued before it.

        ``quick``: a short write whose answer nobody reads; queued on an event loop, on a database whose
        commit does not wait for the disk, that loop commits it itself at its next turn (see the module)."""
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
        """Wait until everything queued so far is committed (without a thread: whoever commits wakes the loop)."""
        shared = self._shared
        with shared.lock:
            target = shared.submitted
            if shared.done >= target:
                return
            loop = asyncio.get_running_loop()
            future: asyncio.Future[None] = loop.create_future()
            shared.waiters.append((target, loop, future))
        await future

    def _commit_here(self, loop: asyncio.AbstractEventLoop) -> None:
        """On ``loop``, at its turn: commit the quick jobs at the head of the queue, unless the connection is busy
        (then the thread takes them after) or its write lock is held by another process (they go to the thread)."""
        shared, db = self._shared, self._db
        with shared.lock:
            shared.scheduled.discard(loop)
            if shared.busy or shared.closed:
                shared.urgent = bool(shared.jobs)  # whoever holds the connection hands them on
                return
            batch = shared.take(quick_only=True)
            if not batch:
                return
        try:  # without waiting: another process writing now is the thread's to wait for (``patience``)
            answers = _run_jobs(db, batch)
        except Exception as error:
            logger.debug("a commit on the event loop gave its %d jobs to the writer thread: %s", len(batch), error)
            with shared.lock:
                shared.jobs.extendleft(reversed(batch))
                shared.urgent = True
                shared.ended(None)
            return
        _answer(answers)
        with shared.lock:
            ready = shared.ended(batch[-1].seq)
        _release(ready)

    def close(self) -> None:
        """Run everything queued, close the connection, end the thread. Safe to call twice."""
        self._close()


def _answer(answers: _Answers) -> None:
    for item, result, failure in answers:
        if item.future is None:
            continue
        if failure is None:
            item.future.set_result(result)
        else:
            item.future.set_exception(failure)


@dataclass
class _Worker:
    """The writer thread's side."""

    shared: _Shared
    reopen: Callable[[], Database] | None

    def serve(self, db: Database) -> None:
        shared = self.shared
        try:
            while True:
                with shared.lock:
                    while shared.busy or not (shared.jobs and (shared.urgent or shared.stopping)):
                        if shared.stopping and not shared.jobs and not shared.busy:
                            shared.closed = True
                            return
                        shared.wake.wait()
                    batch = shared.take(quick_only=False)
                db = self._run(db, batch)
                with shared.lock:
                    ready = shared.ended(batch[-1].seq)
                _release(ready)
        finally:
            db.close()

    def _run(self, db: Database, batch: list[_Item]) -> Database:
        if db.quick:
            db.patience(BUSY_TIMEOUT)  # the thread waits for another process's write lock
        try:
            answers = _run_jobs(db, batch)
        except db.errors as error:
            if db.broken() and self.reopen is not None:
                db = _reopened(db, self.reopen)
            try:
                answers = _run_alone(db, batch) if not db.broken() else _lost(batch, error)
            except db.errors as again:  # the database itself fails (disk full, I/O error, gone)
                answers = _lost(batch, again)
        except Exception:
            answers = _run_alone(db, batch)
        finally:
            if db.quick:
                with contextlib.suppress(*db.errors):
                    db.patience(0)
        _answer(answers)
        return db


def _reopened(db: Database, reopen: Callable[[], Database]) -> Database:
    with contextlib.suppress(Exception):
        db.close()
    try:
        return reopen()
    except Exception as error:
        logger.error("the store's connection was lost and cannot be opened again: %s", error)
        return db


def _lost(batch: list[_Item], error: BaseException) -> _Answers:
    logger.error("%d history writes were lost: %s", sum(item.write for item in batch), error)
    return [(item, None, error) for item in batch]


def _stop(shared: _Shared, thread: threading.Thread) -> None:
    with shared.lock:
        shared.stopping = True
        shared.wake.notify()
    if thread is not threading.current_thread():
        thread.join()
