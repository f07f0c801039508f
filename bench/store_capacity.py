"""How far one PostgreSQL carries: the calls per second it commits for 1, 2, 4 and 8 replicas' writers at once.

    python -m bench.store_capacity                       # 8 s per case, 16 callers per writer
    python -m bench.store_capacity --writers 1,2,4,8 --seconds 8 --callers 16 --synchronous full

Each writer is a process of its own, as a replica is: one ``History`` on the shared database (its own
connection and writer thread) and ``--callers`` tasks that record a call's start and end and wait for its
commit, as a replica's call path does, as fast as they can. Nothing else runs in the writer (no MCP server,
no HTTP): what is measured is the store's side of a call, so the figure is how many calls a second the
database and the writers' group commits take, an upper bound on what replicas could ask of it. The database
is a PostgreSQL 15 started for the run (``tests/postgres.py``), configured as in production (``fsync`` and
``synchronous_commit`` on), on this machine: writers and database share its cores, so on a database host of
its own the figure is higher. The writers use the store's durability level ``--synchronous``: ``normal`` (the
default: their connections set ``synchronous_commit`` off) or ``full`` (the server's ``on``: a WAL fsync per
group commit). Every case checks that the rows in the database are the calls reported.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import uuid

import anyio

from bench.stats import median, percentile
from mcpdeck.events import ToolCallFinished, ToolCallStarted
from mcpdeck.store import History
from mcpdeck.store._location import SYNCHRONOUS

NAME = "mcp__line__echo"


async def _write(url: str, name: str, callers: int, seconds: float) -> dict[str, object]:
    """One writer: ``callers`` tasks recording calls and awaiting their commit for ``seconds``."""
    history = History(url, replica=name)
    latencies: list[float] = []
    try:
        await history.committed()  # connected and migrated before the clock starts
        deadline = time.perf_counter() + seconds

        async def caller() -> None:
            while (began := time.perf_counter()) < deadline:
                call_id = uuid.uuid4().hex
                history.call_started(
                    ToolCallStarted(call_id=call_id, name=NAME, server="line", tool="echo", arguments={"text": "hi"})
                )
                history.call_finished(
                    ToolCallFinished(
                        call_id=call_id, name=NAME, server="line", tool="echo", duration=1e-4, is_error=False
                    )
                )
                await history.committed()
                latencies.append(time.perf_counter() - began)

        cpu = time.process_time()
        async with anyio.create_task_group() as tg:
            for _ in range(callers):
                tg.start_soon(caller)
        return {"calls": len(latencies), "latencies": latencies, "cpu": time.process_time() - cpu}
    finally:
        history.close()


def _case(url: str, writers: int, callers: int, seconds: float) -> dict[str, float]:
    """``writers`` processes at once; the committed calls per second of them all, and their commit waits."""
    command = [sys.executable, "-m", "bench.store_capacity", "--worker", url, "--callers", str(callers)]
    processes = [
        subprocess.Popen(
            [*command, "--name", f"w{n}-{uuid.uuid4().hex[:6]}", "--seconds", str(seconds)], stdout=subprocess.PIPE
        )
        for n in range(writers)
    ]
    reports = [json.loads(process.communicate(timeout=seconds + 120)[0]) for process in processes]
    assert all(process.returncode == 0 for process in processes), "a writer failed: see its output above"
    latencies = [value for report in reports for value in report["latencies"]]
    calls = sum(report["calls"] for report in reports)
    return {
        "calls": calls,
        "calls_per_s": calls / seconds,
        "p50": median(latencies) or 0.0,
        "p99": percentile(latencies, 99) or 0.0,
        "writer_cpu_per_call": sum(report["cpu"] for report in reports) / max(calls, 1),
    }


def _rows(url: str) -> int:
    with History(url, replica="bench-count") as history:
        return history.count_tool_calls()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--writers", default="1,2,4,8", help="writer processes per case, comma-separated")
    parser.add_argument("--callers", type=int, default=16, help="tasks per writer, each with one call at a time")
    parser.add_argument("--seconds", type=float, default=8.0, help="seconds per case")
    parser.add_argument("--synchronous", choices=SYNCHRONOUS, default="normal", help="the store's durability level")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--name", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.worker:
        report = anyio.run(_write, options.worker, options.name, options.callers, options.seconds)
        print(json.dumps(report))
        return

    from tests.postgres import running_postgres

    counts = [int(n) for n in options.writers.split(",")]
    figures: dict[int, dict[str, float]] = {}
    with running_postgres(durable=True) as postgres, postgres.database() as database:
        url = f"{database}?synchronous={options.synchronous}"
        rows = _rows(url)
        for writers in counts:
            figures[writers] = _case(url, writers, options.callers, options.seconds)
            now = _rows(url)
            assert now - rows == figures[writers]["calls"], (writers, now - rows, figures[writers]["calls"])
            rows = now
    print(
        f"{options.callers} callers per writer, {options.seconds:g} s per case, PostgreSQL 15 (fsync on), "
        f"?synchronous={options.synchronous}, on this "
        f"machine ({os.cpu_count()} cores, shared with the writers); load average {os.getloadavg()[0]:.1f} at the end."
    )
    print()
    print("| Writers (replicas) | calls committed/s | p50 commit wait | p99 commit wait | writer CPU per call |")
    print("|---|---|---|---|---|")
    for writers, got in figures.items():
        print(
            f"| {writers} | {got['calls_per_s']:,.0f} | {got['p50'] * 1000:.2f} ms | {got['p99'] * 1000:.2f} ms | "
            f"{got['writer_cpu_per_call'] * 1e6:.0f} us |"
        )


if __name__ == "__main__":
    main()
