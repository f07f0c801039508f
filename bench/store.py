"""The durable commit's cost per call, on each store, against the history off, in one run.

    python -m bench.store                      # 16 clients, 3 rounds of 400 calls per case
    python -m bench.store --clients 16 --calls 400 --rounds 3

One ``Host`` per case runs the stdio line server (``bench/servers/line.py``, near-free, in a process of
its own) and is given the history in that case's store; ``--clients`` tasks call ``mcp__line__echo``
at once, each timing its own calls (``host.call_tool``, which returns only once the call's record is
committed). Rounds take the cases in turn, so drift hits all alike. Cases:

- ``off``: no history (the baseline);
- ``sqlite``: the default store (WAL, the default level ``synchronous=normal``: a commit answered once the
  OS has it, which survives mcpdeck dying);
- ``sqlite-full``: ``?synchronous=full`` (each commit synced: what survives a power cut);
- ``postgresql``: a PostgreSQL 15 started for the run (``tests/postgres.py``), configured as in production
  (``fsync`` and ``synchronous_commit`` on), over TCP on 127.0.0.1, at the default level ``normal`` (the
  store's writing connection sets ``synchronous_commit`` off: answered once the server has the commit);
- ``postgresql-full``: the same server with ``?synchronous=full`` (the server's own ``synchronous_commit=on``:
  each commit waits for the WAL's fsync);
- ``postgresql-bare`` and ``postgresql-full-bare``: no history; per call, the row the history would write (in a
  database of its own with the store's schema: the same table, indexes and columns) inserted by bare ``psycopg``
  on the same server at the same level, from this event loop (its ``AsyncConnection``), awaited where the
  history's commit is awaited: the floor under the same load, in the same process (below);
- ``sqlite-unawaited``: the history recorded but not waited for (what the writer that lingered did, less
  its linger): the part of the cost that is the wait itself.

``--cases a,b`` runs only those (and ``off``), for more runs of one comparison in the same time.

It prints the median and p99 latency per call, calls/s, and the p50 each case adds to ``off``; the
goal (issue #29) is at most 1 ms added at 16 concurrent clients. Beside each store, its floor: the p50 of
one row inserted and committed by the bare driver (``sqlite3``, ``psycopg``) on the same kind of database at
the same level, one after the other on an idle process, which no history on that store and level can add less
than; and for PostgreSQL a second floor, taken under load: what the ``-bare`` case added in the same run (the
least any recorder of calls can add there, with this driver, at this load, on this machine). The verdict says
when the goal lies below a floor, and how far above each floor the case is. Then, per case, the event loop's own CPU
per call (its thread alone: the writer thread's work is in "CPU per call" only), the process's thread
switches per call (each one a wait for a core on a busy machine), and each store's group commits in the
measured rounds: how many calls share one, and its mean time from BEGIN to COMMIT (``/metrics``' store
commit latency) against the floor: beyond the floor, that is the writer thread waiting for the GIL.
The load average is printed at the start and the end: on a shared machine, compare runs only at like load.

Two ways to load the host. By default the clients never pause (a closed loop): the host is saturated,
each call's latency is mostly its wait behind the 15 others on one event loop, and whatever CPU the
store adds to a call comes back 16 times in its latency: that mode measures the store's cost in
throughput (calls/s, CPU per call). ``--rate N`` sends N calls a second in all, each client on a schedule
of its own (an open loop): latency is taken from the moment a call was due, so a host that falls behind
is charged for the queue it builds (no coordinated omission). Below saturation that mode measures what
the durable commit adds to a call's latency at that load, which is what a user waits; a case that kept up
with less than 90% of the rate is marked saturated. The printed reading says which of the two it is.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import sqlite3
import sys
import tempfile
import time
from collections.abc import Generator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, LiteralString, cast

import anyio

from bench.stats import median, percentile
from mcpdeck._observability.metrics import store_commits
from mcpdeck.events import ToolCallFinished, ToolCallStarted
from mcpdeck.host import Host
from mcpdeck.store import History
from mcpdeck.store._history import _INSERT_CALL  # pyright: ignore[reportPrivateUsage]
from mcpdeck.store._schema import POSTGRESQL

if TYPE_CHECKING:
    import psycopg

ROOT = Path(__file__).resolve().parent.parent
GOAL = 0.001
CASES = (
    "off",
    "sqlite",
    "sqlite-full",
    "postgresql",
    "postgresql-bare",
    "postgresql-full",
    "postgresql-full-bare",
    "sqlite-unawaited",
)
BARE_OF = {"postgresql": "postgresql-bare", "postgresql-full": "postgresql-full-bare"}
"""The case that is each PostgreSQL case's floor under load (the bare driver, in this process)."""


class Unawaited:
    """The history, recorded without waiting for the commit."""

    def __init__(self, history: History):
        self.history = history

    def call_started(self, event: ToolCallStarted) -> None:
        self.history.call_started(event)

    def call_finished(self, event: ToolCallFinished) -> None:
        self.history.call_finished(event)

    async def committed(self) -> None:
        return None


class BareCommit:
    """The floor under load: per call, the row the history would write (its table, its indexes, its 16 columns)
    inserted and committed by bare ``psycopg`` (its ``AsyncConnection``, on this event loop, autocommit,
    ``synchronous_commit`` as given), awaited where the history's commit is; no mcpdeck store code, no grouping.
    ``url``: a database of its own, with the store's schema."""

    def __init__(self, url: str, synchronous_commit: str | None = None):
        self.url, self.synchronous_commit = url, synchronous_commit
        self.connection: psycopg.AsyncConnection[Any] | None = None
        self.inserted = 0
        self.opening = anyio.Lock()
        History(url).close()  # the store's schema, migrations and all

    def call_started(self, event: ToolCallStarted) -> None:
        return None

    def call_finished(self, event: ToolCallFinished) -> None:
        return None

    async def committed(self) -> None:
        import psycopg
        from psycopg import sql

        if self.connection is None:
            async with self.opening:
                if self.connection is None:
                    connection = await psycopg.AsyncConnection.connect(self.url, autocommit=True)
                    if self.synchronous_commit is not None:
                        await connection.execute(
                            sql.SQL("SET synchronous_commit TO {}").format(sql.Identifier(self.synchronous_commit))
                        )
                    self.connection = connection
        self.inserted += 1
        at = datetime.now(UTC).isoformat()
        row = (f"bare-{self.inserted}", at, "line", "echo", "mcp__line__echo", '{"text": "hi"}', None, None, None)
        await self.connection.execute(_INSERT, (*row, "bench", None, "ok", None, 2, 0.0004, "hi"))

    async def rows(self) -> int:
        assert self.connection is not None
        cursor = await self.connection.execute("SELECT count(*) FROM tool_calls")
        row = await cursor.fetchone()
        return int(row[0]) if row else 0

    async def aclose(self) -> None:
        if self.connection is not None:
            await self.connection.close()


_INSERT: LiteralString = cast(LiteralString, POSTGRESQL.sql(_INSERT_CALL))
"""The history's own INSERT of a call's row, as it sends it to PostgreSQL."""


FLOOR_COMMITS = 500


def _floor_sqlite(path: Path, synchronous: str) -> float:
    """The median of one row inserted and committed by the bare ``sqlite3`` module, WAL, as the store opens it."""
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute(f"PRAGMA synchronous={synchronous}")
        connection.execute("CREATE TABLE floor (id INTEGER PRIMARY KEY, text TEXT)")
        times: list[float] = []
        for _ in range(FLOOR_COMMITS):
            began = time.perf_counter()
            connection.execute("BEGIN")
            connection.execute("INSERT INTO floor (text) VALUES (?)", ("hi",))
            connection.execute("COMMIT")
            times.append(time.perf_counter() - began)
        return median(times[50:]) or 0.0
    finally:
        connection.close()


def _floor_postgresql(url: str, table: str, synchronous_commit: str | None = None) -> float:
    """The median of one row inserted and committed by bare ``psycopg`` over the same TCP connection kind, with
    ``synchronous_commit`` set as given for the session (None: the server's own)."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(url) as connection:
        if synchronous_commit is not None:
            connection.execute(sql.SQL("SET synchronous_commit TO {}").format(sql.Identifier(synchronous_commit)))
        connection.execute(sql.SQL("CREATE TABLE {} (id SERIAL PRIMARY KEY, text TEXT)").format(sql.Identifier(table)))
        connection.commit()
        insert = sql.SQL("INSERT INTO {} (text) VALUES (%s)").format(sql.Identifier(table))
        times: list[float] = []
        for _ in range(FLOOR_COMMITS):
            began = time.perf_counter()
            connection.execute(insert, ("hi",))
            connection.commit()
            times.append(time.perf_counter() - began)
        return median(times[50:]) or 0.0


LOAD: dict[str, float] = {}
"""The load average when ``measure`` began (``start``)."""
FLOORS: dict[str, float] = {}
"""Each store's floor: a bare driver's one-row insert and commit, p50 (what no history on that store can beat)."""


BARES: dict[str, BareCommit] = {}
"""The in-process floors, by case (``stores``)."""


@contextlib.contextmanager
def stores(folder: Path) -> Generator[dict[str, History | None]]:
    from tests.postgres import running_postgres

    with (
        running_postgres(durable=True) as postgres,
        postgres.database() as url,
        postgres.database() as full_url,
        postgres.database() as bare_url,
        postgres.database() as bare_full_url,
    ):
        FLOORS["sqlite"] = _floor_sqlite(folder / "floor-normal.sqlite3", "NORMAL")
        FLOORS["sqlite-full"] = _floor_sqlite(folder / "floor-full.sqlite3", "FULL")
        FLOORS["postgresql"] = _floor_postgresql(url, "floor_normal", "off")
        FLOORS["postgresql-full"] = _floor_postgresql(url, "floor_full")
        BARES["postgresql-bare"] = BareCommit(bare_url, "off")
        BARES["postgresql-full-bare"] = BareCommit(bare_full_url)
        opened: dict[str, History | None] = {
            "off": None,
            "sqlite": History(folder / "normal.sqlite3", replica="bench"),
            "sqlite-full": History(f"sqlite:///{folder / 'full.sqlite3'}?synchronous=full", replica="bench"),
            "postgresql": History(url, replica="bench"),
            "postgresql-full": History(f"{full_url}?synchronous=full", replica="bench"),
            "sqlite-unawaited": History(folder / "unawaited.sqlite3", replica="bench"),
        }
        try:
            yield opened
        finally:
            for history in opened.values():
                if history is not None:
                    history.close()


async def one_round(
    host: Host, clients: int, calls: int, rate: float | None = None
) -> tuple[list[float], float, float]:
    """``calls`` calls by ``clients`` tasks at once: each call's latency, the wall time of the round, and the
    CPU time this process spent in it (every thread: the event loop's and the store's writer). With ``rate``
    (calls a second in all) each client sends on a schedule and a call's latency counts from when it was due."""
    latencies: list[float] = []
    each = calls // clients

    async def client(offset: float) -> None:
        gap = clients / rate if rate else 0.0
        due = time.perf_counter() + offset
        for _ in range(each):
            if rate:
                await anyio.sleep(max(0.0, due - time.perf_counter()))
            began = due if rate else time.perf_counter()
            await host.call_tool("mcp__line__echo", {"text": "hi"})
            latencies.append(time.perf_counter() - began)
            due += gap

    began, cpu = time.perf_counter(), time.process_time()
    async with anyio.create_task_group() as tg:
        for n in range(clients):
            tg.start_soon(client, n / rate if rate else 0.0)  # spread over the first gap
    return latencies, time.perf_counter() - began, time.process_time() - cpu


async def measure(
    folder: Path,
    clients: int,
    calls: int,
    rounds: int,
    rate: float | None = None,
    cases: tuple[str, ...] = CASES,
) -> dict[str, dict[str, float]]:
    line = {"command": sys.executable, "args": ["-S", str(ROOT / "bench" / "servers" / "line.py")]}
    LOAD["start"] = os.getloadavg()[0]
    samples: dict[str, list[float]] = {case: [] for case in cases}
    walls: dict[str, float] = dict.fromkeys(cases, 0.0)
    cpus: dict[str, float] = dict.fromkeys(cases, 0.0)
    commits: dict[str, float] = dict.fromkeys(cases, 0.0)
    committing: dict[str, float] = dict.fromkeys(cases, 0.0)  # seconds, BEGIN to COMMIT, summed
    loop_cpus: dict[str, float] = dict.fromkeys(cases, 0.0)  # the event loop's thread alone
    switches: dict[str, float] = dict.fromkeys(cases, 0.0)  # the process's context switches
    with stores(folder) as opened:
        async with contextlib.AsyncExitStack() as stack:
            hosts: dict[str, Host] = {}
            for case in cases:
                history = opened.get(case)
                recorder = BARES.get(case) or (
                    Unawaited(history) if case == "sqlite-unawaited" and history is not None else history
                )
                hosts[case] = await stack.enter_async_context(
                    Host({"line": line}, log_dir=folder / "logs", history=recorder)
                )
            for case in cases:  # warm up: connections, caches, prepared statements
                await one_round(hosts[case], clients, clients * 4)
            for _ in range(rounds):
                for case in cases:
                    before, loop_cpu, usage = (
                        store_commits(),
                        time.thread_time(),
                        resource.getrusage(resource.RUSAGE_SELF),
                    )
                    latencies, wall, cpu = await one_round(hosts[case], clients, calls, rate)
                    after, used = store_commits(), resource.getrusage(resource.RUSAGE_SELF)
                    loop_cpus[case] += time.thread_time() - loop_cpu
                    switches[case] += used.ru_nvcsw + used.ru_nivcsw - usage.ru_nvcsw - usage.ru_nivcsw
                    commits[case] += after.count - before.count
                    committing[case] += after.sum - before.sum
                    samples[case] += latencies
                    walls[case] += wall
                    cpus[case] += cpu
            expected = (rounds * (calls // clients) + 4) * clients  # every call, warm-up included
            for case, history in opened.items():
                if history is not None and case in cases:
                    await anyio.to_thread.run_sync(history.flush)
                    recorded = await anyio.to_thread.run_sync(history.count_tool_calls)
                    assert recorded == expected, (case, recorded, expected)
            for case, bare in BARES.items():
                if case in cases:
                    recorded = await bare.rows()
                    assert recorded == bare.inserted == expected, (case, recorded, expected)
                    await bare.aclose()
    figures: dict[str, dict[str, float]] = {}
    for case in cases:
        figures[case] = {
            "p50": median(samples[case]) or 0.0,
            "p99": percentile(samples[case], 99) or 0.0,
            "calls_per_s": len(samples[case]) / walls[case],
            "cpu_per_call": cpus[case] / len(samples[case]),
            "loop_cpu_per_call": loop_cpus[case] / len(samples[case]),
            "switches_per_call": switches[case] / len(samples[case]),
            "commits": commits[case],
            "commit_mean": committing[case] / commits[case] if commits[case] else 0.0,
        }
    return figures


def render(
    figures: dict[str, dict[str, float]], clients: int, calls: int, rounds: int, rate: float | None = None
) -> str:
    base = figures["off"]["p50"]
    paced = f"{rate:g} calls/s in all, each client on a schedule" if rate else "no pause between calls"
    lines = [
        f"{clients} clients at once ({paced}), {rounds} rounds of {calls} calls per case (`mcp__line__echo`, stdio "
        f"line server); load average {LOAD.get('start', 0.0):.1f} at the start, {os.getloadavg()[0]:.1f} at the end.",
        "",
        reading(figures, rate),
        "",
        "| Case | p50 per call | p99 per call | calls/s | CPU per call | p50 added to `off` | floor: bare commit p50 |"
        " verdict |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for case, got in figures.items():
        added = got["p50"] - base
        lines.append(
            f"| `{case}` | {got['p50'] * 1000:.2f} ms | {got['p99'] * 1000:.2f} ms | {got['calls_per_s']:.0f} | "
            f"{got['cpu_per_call'] * 1e6:.0f} us | "
            + ("baseline" if case == "off" else f"{added * 1000:+.2f} ms")
            + (f" | {FLOORS[case] * 1000:.2f} ms |" if case in FLOORS else " | - |")
            + f" {verdict(case, added, _bare_added(figures, case))}{' (saturated)' if _saturated(got, rate) else ''} |"
        )
    lines += [
        "",
        "| Case | event loop's CPU per call | thread switches per call | commits | calls per commit |"
        " BEGIN to COMMIT, mean | floor |",
        "|---|---|---|---|---|---|---|",
    ]
    for case, got in figures.items():
        floor = f"{FLOORS[case] * 1000:.2f} ms" if case in FLOORS else "-"
        stored = case != "off" and got.get("commits")
        lines.append(
            f"| `{case}` | {got.get('loop_cpu_per_call', 0.0) * 1e6:.0f} us | "
            f"{got.get('switches_per_call', 0.0):.2f} | "
            + (
                f"{got['commits']:.0f} | {calls * rounds / got['commits']:.1f} | {got['commit_mean'] * 1000:.2f} ms |"
                if stored
                else "- | - | - |"
            )
            + f" {floor} |"
        )
    return "\n".join(lines)


SATURATED = 0.9
"""An open-loop case that kept up with less than this share of ``--rate`` was saturated."""


def _saturated(got: dict[str, float], rate: float | None) -> bool:
    return rate is not None and got["calls_per_s"] < SATURATED * rate


def reading(figures: dict[str, dict[str, float]], rate: float | None) -> str:
    """How to read the table: which mode measures what a user waits, which the CPU per call."""
    if rate is None:
        return (
            "Closed loop: the clients never pause, so the host is saturated and a call's latency is mostly its wait "
            "behind the other clients; the p50 added multiplies whatever CPU the store adds to a call by the "
            "number of clients. Read it as CPU per call (throughput), not as what a user waits: that is the open "
            "loop's (`--rate N` below saturation)."
        )
    behind = [case for case, got in figures.items() if _saturated(got, rate)]
    return (
        f"Open loop at {rate:g} calls/s: latency counts from when each call was due, so the p50 added is what a "
        "user waits for the durable commit at this load"
        + (
            f"; {', '.join(f'`{case}`' for case in behind)} kept up with less than {SATURATED:.0%} of the rate "
            "(saturated): there the figure is the queue it built, as in the closed loop."
            if behind
            else "; every case kept up with the rate (below saturation)."
        )
    )


def _bare_added(figures: dict[str, dict[str, float]], case: str) -> float | None:
    """What the bare driver added in this run, under the same load, for the store case ``case`` (None: no floor)."""
    bare = BARE_OF.get(case)
    return None if bare not in figures else figures[bare]["p50"] - figures["off"]["p50"]


def verdict(case: str, added: float, bare: float | None = None) -> str:
    """The goal met or not; when a floor for the store is above the goal (this machine's bare commit, or the
    bare driver in this process under this run's load), that it cannot be; and how far above each floor the case is."""
    if case == "off":
        return "-"
    floor = FLOORS.get(case)
    if floor is None:
        return "goal met" if added <= GOAL else "over the 1 ms goal"
    above = f"{(added - floor) * 1000:+.2f} ms from the floor"
    if bare is not None:
        above += f", {(added - bare) * 1000:+.2f} ms from the bare driver here ({bare * 1000:+.2f} ms)"
    if floor > GOAL:
        return f"goal below this machine's floor ({floor * 1000:.2f} ms); {above}"
    if bare is not None and bare > GOAL and added > GOAL:
        return f"goal below this run's floor under load (the bare driver here added {bare * 1000:.2f} ms); {above}"
    return ("goal met" if added <= GOAL else "over the 1 ms goal") + f"; {above}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--calls", type=int, default=400, help="calls per case per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rate", type=float, help="calls a second in all, on a schedule (default: no pause)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    parser.add_argument("--switch", type=float, help="sys.setswitchinterval (seconds), to study the GIL's part")
    parser.add_argument(
        "--cases", help=f"the cases to run, comma-separated (default: all; `off` always): {', '.join(CASES)}"
    )
    options = parser.parse_args()
    cases = CASES
    if options.cases:
        asked = {"off", *options.cases.split(",")}
        unknown = asked - set(CASES)
        if unknown:
            parser.error(f"no such case: {', '.join(sorted(unknown))} (the cases: {', '.join(CASES)})")
        cases = tuple(case for case in CASES if case in asked)
    if options.switch:
        sys.setswitchinterval(options.switch)
    with tempfile.TemporaryDirectory(prefix="mcpdeck-bench-store-") as folder:
        figures = anyio.run(measure, Path(folder), options.clients, options.calls, options.rounds, options.rate, cases)
    print(render(figures, options.clients, options.calls, options.rounds, options.rate))
    if options.json:
        print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
