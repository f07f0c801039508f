"""Where a recorded call's CPU goes, thread by thread: the history's recording path against the drivers' own cost.

    python -m bench.store_cpu                  # 3,000 calls per case, 300 to warm up
    python -m bench.store_cpu --calls 5000

Calls one after the other (no load: what is measured is CPU, which another call's work does not move much), on
a PostgreSQL 15 started for the run (``tests/postgres.py``, the store's default level ``normal``). Each case's
CPU per call is read from each thread's own CPU clock, so the event loop's and the store's writer thread's are
told apart; p50 is a call's wall time. Cases:

- ``history``: what a host given the history does per call: ``History.call_started``, ``call_finished`` (a
  result of one text block), ``await committed()``: the row is inserted by the writer thread and the loop woken;
- ``hand-over``: a job that writes nothing through the same writer (``Writer.submit(quick=True)``, ``await
  Writer.committed()``): the cost of handing work to the thread and being woken, which ``history`` includes;
- ``psycopg conn.execute``, ``psycopg one cursor``, ``libpq exec_prepared``: the history's own INSERT of a call's
  row (its table, its 16 values) in a tight loop on one thread, through a psycopg cursor made per statement (what
  the writer did before 2026-11-30), one cursor kept, and libpq itself (``psycopg.pq``, prepared once: what it
  does now);
- ``psycopg async``: the same INSERT from an event loop through psycopg's ``AsyncConnection`` (what
  ``bench.store``'s ``postgresql-bare`` case pays per call on the loop).

The writer thread's CPU per call in ``history`` less ``hand-over``'s is its work per row; the drivers' rows are
the floors under it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, LiteralString, cast

from mcp import types

from mcpdeck.events import ToolCallFinished, ToolCallStarted
from mcpdeck.results import ToolResult
from mcpdeck.store import History
from mcpdeck.store._history import _INSERT_CALL  # pyright: ignore[reportPrivateUsage]
from mcpdeck.store._schema import POSTGRESQL

WARM = 300
_INSERT: LiteralString = cast(LiteralString, POSTGRESQL.sql(_INSERT_CALL))
_RESULT = ToolResult(
    name="mcp__line__echo",
    server="line",
    tool="echo",
    content=[types.TextContent(type="text", text="hello world")],
    structured_content=None,
    is_error=False,
)


def _row(n: int, tag: str) -> tuple[Any, ...]:
    at = "2026-11-30T00:00:00+00:00"
    return (f"{tag}-{n}", at, "line", "echo", "mcp__line__echo", '{"text": "hi"}', None, None, "bench", "r1", None,
            "ok", None, 11, 0.001, "hello world")  # fmt: skip


def _thread_cpu(thread: threading.Thread) -> float:
    assert thread.ident is not None
    return time.clock_gettime(time.pthread_getcpuclockid(thread.ident))


def _writer_thread(history: History) -> threading.Thread:
    """The store's writer thread (``mcpdeck store ...``): the one thread the history started."""
    (thread,) = [t for t in threading.enumerate() if t.name.startswith("mcpdeck store") and t.is_alive()]
    return thread


def _figures(loop: float, writer: float | None, walls: list[float], calls: int) -> dict[str, float | None]:
    return {
        "loop_us": 1e6 * loop / calls,
        "writer_us": None if writer is None else 1e6 * writer / calls,
        "p50_us": 1e6 * statistics.median(walls),
    }


async def _on_loop(
    one: Callable[[int], Awaitable[None]], calls: int, writer: threading.Thread | None
) -> dict[str, float | None]:
    for n in range(WARM):
        await one(-n - 1)
    walls: list[float] = []
    loop0, writer0 = time.thread_time(), _thread_cpu(writer) if writer else 0.0
    for n in range(calls):
        began = time.perf_counter()
        await one(n)
        walls.append(time.perf_counter() - began)
    loop = time.thread_time() - loop0
    return _figures(loop, _thread_cpu(writer) - writer0 if writer else None, walls, calls)


def _tight(one: Callable[[int], object], calls: int) -> dict[str, float | None]:
    for n in range(WARM):
        one(-n - 1)
    walls: list[float] = []
    cpu0 = time.thread_time()
    for n in range(calls):
        began = time.perf_counter()
        one(n)
        walls.append(time.perf_counter() - began)
    return {
        "loop_us": None,
        "writer_us": 1e6 * (time.thread_time() - cpu0) / calls,
        "p50_us": 1e6 * statistics.median(walls),
    }


def measure(calls: int) -> dict[str, dict[str, float | None]]:
    import psycopg
    from tests.postgres import running_postgres

    results: dict[str, dict[str, float | None]] = {}
    with running_postgres() as postgres, postgres.database() as url, postgres.database() as bare_url:
        with History(url, replica="r1") as history:
            writer = _writer_thread(history)

            async def record(n: int) -> None:
                call_id = f"c{time.time_ns()}-{n}"
                history.call_started(
                    ToolCallStarted(
                        call_id=call_id,
                        name="mcp__line__echo",
                        server="line",
                        tool="echo",
                        arguments={"text": "hello world", "n": n},
                        caller="bench",
                    )
                )
                history.call_finished(
                    ToolCallFinished(
                        call_id=call_id,
                        name="mcp__line__echo",
                        server="line",
                        tool="echo",
                        duration=0.001,
                        is_error=False,
                        result_size=11,
                        result=_RESULT,
                    )
                )
                await history.committed()

            async def hand_over(_: int) -> None:
                history.store.writer.submit(lambda _db: None, quick=True)  # (a quick job writing nothing: no SQL)
                await history.store.writer.committed()

            results["history"] = asyncio.run(_on_loop(record, calls, writer))
            results["hand-over"] = asyncio.run(_on_loop(hand_over, calls, writer))
        History(bare_url).close()  # the store's schema
        with psycopg.connect(bare_url, autocommit=True) as conn:
            conn.execute("SET synchronous_commit TO off")
            results["psycopg conn.execute"] = _tight(lambda n: conn.execute(_INSERT, _row(n, "execute")), calls)
            cursor = conn.cursor()
            results["psycopg one cursor"] = _tight(lambda n: cursor.execute(_INSERT, _row(n, "cursor")), calls)
            pgconn = conn.pgconn
            numbered = _INSERT
            for number in range(1, 17):
                numbered = cast(LiteralString, numbered.replace("%s", f"${number}", 1))
            assert pgconn.prepare(b"bench_insert", numbered.encode()).status == psycopg.pq.ExecStatus.COMMAND_OK

            def exec_prepared(n: int) -> None:
                values = [None if value is None else str(value).encode() for value in _row(n, "libpq")]
                result = pgconn.exec_prepared(b"bench_insert", cast(list[bytes], values))
                assert result.status == psycopg.pq.ExecStatus.COMMAND_OK, result.error_message

            results["libpq exec_prepared"] = _tight(exec_prepared, calls)

        async def on_async() -> dict[str, float | None]:
            connection = await psycopg.AsyncConnection.connect(bare_url, autocommit=True)
            await connection.execute("SET synchronous_commit TO off")

            async def insert(n: int) -> None:
                await connection.execute(_INSERT, _row(n, "async"))

            try:
                return await _on_loop(insert, calls, None)
            finally:
                await connection.close()

        results["psycopg async"] = asyncio.run(on_async())
    return results


def render(results: dict[str, dict[str, float | None]], calls: int) -> str:
    def cell(value: float | None) -> str:
        return "-" if value is None else f"{value:.0f} us"

    lines = [
        f"{calls} calls one after the other per case, PostgreSQL 15 at `normal`; load average "
        f"{os.getloadavg()[0]:.1f}. CPU per call on each thread's own clock; p50: a call's wall time.",
        "",
        "| Case | event loop's CPU | writer's CPU (or the one thread's) | p50 |",
        "|---|---|---|---|",
    ]
    for case, figures in results.items():
        lines.append(
            f"| {case} | {cell(figures['loop_us'])} | {cell(figures['writer_us'])} | {cell(figures['p50_us'])} |"
        )
    history, hand_over = results["history"], results["hand-over"]
    if history["writer_us"] is not None and hand_over["writer_us"] is not None:
        work = history["writer_us"] - hand_over["writer_us"]
        floor = results["libpq exec_prepared"]["writer_us"] or 0.0
        if floor:
            lines += [
                "",
                f"The writer's work per row beyond the hand-over: {work:.0f} us, against {floor:.0f} us for libpq's "
                f"own INSERT of the row ({work / floor:.1f}x).",
            ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=3000, help="calls per case (after 300 to warm up)")
    options = parser.parse_args()
    print(render(measure(options.calls), options.calls))


if __name__ == "__main__":
    main()
