"""The fleet: calls through HAProxy to 1, 2 and 3 ``serve`` replicas on PostgreSQL against one ``serve`` on SQLite,
split by what stands between (the balancer, the store); issue 29's kill -9 check, measured; then the durable
commit's cost per call on each store (``bench.store``).

    python -m bench.fleet            # 16 clients, 2 rounds of 480 calls per case, 3 recovery runs, bench.store
    python -m bench.fleet --calls 480 --rounds 2 --statements --recovery-runs 5 --skip store

Throughput. Every ``serve`` runs ``bench/servers/line.py`` (near-free) for one config, started at once before the
first round (``tests/support/replicas.py``); PostgreSQL 15 is started for the run, durable as in production
(``tests/postgres.py``: ``fsync`` on). Cases:

- ``sqlite``: one ``serve`` on its default store (SQLite), the clients connected to it directly;
- ``sqlite-lb``: the same ``serve`` behind a HAProxy of its own (what the balancer costs);
- ``pg-direct``: replica r1 on PostgreSQL, the clients connected to it directly (what the store costs);
- ``pg-1``, ``pg-2``, ``pg-3``: replicas r1..rN on PostgreSQL behind a HAProxy of their own (the
  configuration docs/fleet.md shows), the clients connected to HAProxy.

Each case: ``--clients`` handshake-era SDK sessions (HAProxy spreads them round-robin; each stays on its
replica) call ``mcp__line__echo`` one call after the other, ``--calls`` in all per round, each call timed.
Rounds take the cases in turn, so drift hits all alike. Beside the latencies: the CPU each kind of process
spent per call (from /proc: this process, which runs the clients; every ``serve`` and its stdio server, the
idle replicas included, since they hear the others' live events; HAProxy; PostgreSQL) and PostgreSQL's
commits per call; ``--statements`` adds a round per PostgreSQL case with ``log_statement = all`` and counts
the statements it logged per call. The clients run in this process, as in the judged check: on 2 cores they
share the CPU with the replicas, so more replicas than cores cannot add calls/s; the figures say what one
machine carries, not how far the fleet scales.

Recovery (``--recovery-runs``, 3 by default): ``tests.support.fleet_load.killed_mid_load`` (the judged check
``tests/server/test_fleet.py`` asserts) on a durable PostgreSQL, measured: per client, the time from the kill
to its next answered call; the errors by kind; the long calls' time to fail; HAProxy's time to mark the
replica down; the time from an answer to its row in another replica's ``/api/history/calls``; the history
and the survivors' ``/metrics`` against the answered calls.

Then ``bench.store`` runs as it does alone (``--clients`` tasks on one ``Host``, history off, SQLite,
PostgreSQL): the p50 each store adds to a call (goal, issue #29: at most 1 ms at 16 clients).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncGenerator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import httpx2
import psycopg
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from tests.helpers import descendants, stdio_server
from tests.postgres import running_postgres
from tests.support.balancer import haproxy, server_states, until_states
from tests.support.fleet_load import CLIENTS, Killed, Load, killed_mid_load
from tests.support.replicas import BALANCER, TOKEN, Replica, fleet, ready, replica

from bench import store
from bench.stats import median, percentile

ROOT = Path(__file__).resolve().parent.parent
START = 300.0
"""Seconds each ``serve`` gets to start: three at once on PostgreSQL took 39 s at load 18 on 2 cores."""
CASES = ("sqlite", "sqlite-lb", "pg-direct", "pg-1", "pg-2", "pg-3")
REPLICAS = ("r1", "r2", "r3")


@asynccontextmanager
async def sessions(url: str, clients: int) -> AsyncGenerator[list[Client]]:
    """``clients`` handshake-era SDK sessions at ``url`` (by the balancer's name), opened one after the other so
    HAProxy's round-robin spreads them."""
    headers = {"Authorization": f"Bearer {TOKEN}", "Host": BALANCER}
    async with AsyncExitStack() as stack:
        opened: list[Client] = []
        for _ in range(clients):
            http = await stack.enter_async_context(httpx2.AsyncClient(headers=headers, timeout=120))
            transport = streamable_http_client(f"{url}/mcp", http_client=http)
            opened.append(await stack.enter_async_context(Client(transport, mode="legacy")))
        yield opened


async def one_round(clients: list[Client], calls: int) -> tuple[list[float], float]:
    """``calls`` calls shared by the sessions, each one call after the other: the latencies and the wall time."""
    latencies: list[float] = []
    each = calls // len(clients)

    async def calling(mcp: Client) -> None:
        for _ in range(each):
            began = time.perf_counter()
            result = await mcp.call_tool("mcp__line__echo", {"text": "hi"})
            latencies.append(time.perf_counter() - began)
            assert not result.is_error, result

    began = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for mcp in clients:
            tg.start_soon(calling, mcp)
    return latencies, time.perf_counter() - began


class Cpu:
    """CPU seconds spent so far by this process (the clients) and by its descendants, by kind: ``serve`` (the
    replicas and their stdio servers), ``haproxy``, ``postgres`` (read from /proc; a process that ended is
    not counted)."""

    KINDS: tuple[str, ...] = ("clients", "serve", "haproxy", "postgres")

    @staticmethod
    def now() -> dict[str, float]:
        tick = os.sysconf("SC_CLK_TCK")
        spent = dict.fromkeys(Cpu.KINDS, 0.0)
        spent["clients"] = time.process_time()
        for pid in descendants():
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                continue
            name = stat[stat.index("(") + 1 : stat.rindex(")")]
            fields = stat[stat.rindex(")") + 2 :].split()
            seconds = (int(fields[11]) + int(fields[12])) / tick
            kind = "haproxy" if name == "haproxy" else "postgres" if name == "postgres" else "serve"
            if name != "runuser":
                spent[kind] += seconds
        return spent

    @staticmethod
    def since(before: dict[str, float]) -> dict[str, float]:
        after = Cpu.now()
        return {kind: after[kind] - before[kind] for kind in Cpu.KINDS}


def commits(url: str) -> int:
    """Transactions committed so far in the database of ``url`` (``pg_stat_database``, as of its last report)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()").fetchone()
    return int(row[0]) if row else 0


_STATEMENT = re.compile(r"LOG:  (?:statement|execute [^:]*): (.*)")


def statements(log: Path, since: int) -> Counter[str]:
    """The statements PostgreSQL logged (``log_statement = all``) after byte ``since`` of its log, by their first
    words (``SELECT pg_notify``, ``INSERT INTO tool_calls``, ``BEGIN`` ...)."""
    counted: Counter[str] = Counter()
    with log.open("rb") as read:
        read.seek(since)
        for line in read.read().decode(errors="replace").splitlines():
            found = _STATEMENT.search(line)
            if found:
                words = found.group(1).replace("(", " (").split()
                counted[" ".join(words[:3] if words[0] in ("INSERT", "UPDATE", "DELETE") else words[:2])] += 1
    return counted


def log_statements(url: str, on: bool) -> None:
    """Have PostgreSQL log every statement (``on``) or none, from now on."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET log_statement = 'all'" if on else "ALTER SYSTEM RESET log_statement")
        conn.execute("SELECT pg_reload_conf()")


async def measure(
    folder: Path, clients: int, calls: int, rounds: int, count: bool = False
) -> tuple[dict[str, dict[str, float]], dict[str, Counter[str]]]:
    """The figures of each case, and (``count``) the statements PostgreSQL saw per case in one more round."""
    config = folder / "mcp.json"
    line = {"command": sys.executable, "args": ["-S", str(ROOT / "bench" / "servers" / "line.py")]}
    config.write_text(json.dumps({"mcpServers": {"line": line}, "permissions": {"allow": ["mcp__line"]}}))
    samples: dict[str, list[float]] = {case: [] for case in CASES}
    walls = dict.fromkeys(CASES, 0.0)
    cpus = {case: dict.fromkeys(Cpu.KINDS, 0.0) for case in CASES}
    committed = dict.fromkeys(CASES, 0)
    seen: dict[str, Counter[str]] = {}
    (folder / "alone").mkdir()
    (folder / "fleet").mkdir()
    with running_postgres(durable=True) as postgres, postgres.database() as url:
        flags = ("--allowed-host", BALANCER)
        async with replica(folder / "alone", config, "alone", *flags, "--replica-id", "alone", start=START) as alone:
            await ready(alone)  # then the three: four processes starting at once on 2 busy cores take too long
            async with fleet(folder / "fleet", config, REPLICAS, "--store", url, *flags, start=START) as replicas:
                async with AsyncExitStack() as stack:
                    urls = {"sqlite": alone.url, "pg-direct": replicas["r1"].url}
                    behind = {"sqlite-lb": {"alone": alone.state["port"]}} | {
                        f"pg-{n}": {name: replicas[name].state["port"] for name in REPLICAS[:n]} for n in (1, 2, 3)
                    }
                    for case, ports in behind.items():
                        (folder / f"haproxy-{case}").mkdir()
                        port, stats = await stack.enter_async_context(haproxy(folder / f"haproxy-{case}", ports))
                        await until_states(stats, dict.fromkeys(ports, "UP"))
                        urls[case] = f"http://127.0.0.1:{port}"
                    opened = {case: await stack.enter_async_context(sessions(urls[case], clients)) for case in CASES}
                    for case in CASES:  # warm up
                        await one_round(opened[case], clients * 4)
                    for _ in range(rounds):
                        for case in CASES:
                            before, first = Cpu.now(), commits(url)
                            latencies, wall = await one_round(opened[case], calls)
                            spent = Cpu.since(before)
                            committed[case] += commits(url) - first
                            samples[case] += latencies
                            walls[case] += wall
                            cpus[case] = {kind: cpus[case][kind] + spent[kind] for kind in Cpu.KINDS}
                    if count:
                        log = postgres.folder / "log"
                        log_statements(url, True)
                        try:
                            for case in CASES:
                                if case.startswith("pg"):
                                    since = log.stat().st_size
                                    await one_round(opened[case], calls)
                                    await anyio.sleep(1)  # what the writers queued last, and the log's own flush
                                    seen[case] = statements(log, since)
                        finally:
                            log_statements(url, False)
    figures = {
        case: {
            "p50": median(samples[case]) or 0.0,
            "p99": percentile(samples[case], 99) or 0.0,
            "calls_per_s": len(samples[case]) / walls[case],
            "commits_per_call": committed[case] / len(samples[case]),
            **{f"cpu_{kind}": cpus[case][kind] / len(samples[case]) for kind in Cpu.KINDS},
        }
        for case in CASES
    }
    return figures, seen


def render(
    figures: dict[str, dict[str, float]], clients: int, calls: int, rounds: int, seen: dict[str, Counter[str]]
) -> str:
    base = figures["sqlite"]["calls_per_s"]
    lines = [
        f"{clients} handshake-era sessions calling at once, {rounds} rounds of {calls} calls per case "
        f"(`mcp__line__echo`); load average {os.getloadavg()[0]:.1f} at the end. CPU per call, by process: the "
        "clients (this process), every `serve` (all of them: an idle replica hears the others' live events) and "
        "its stdio servers, HAProxy, PostgreSQL; commits: PostgreSQL's transactions per call.",
        "",
        "| Case | p50 per call | p99 per call | calls/s | against `sqlite` | CPU: clients | serve | haproxy "
        "| postgres | commits |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for case, got in figures.items():
        lines.append(
            f"| `{case}` | {got['p50'] * 1000:.1f} ms | {got['p99'] * 1000:.1f} ms | {got['calls_per_s']:.0f} | "
            f"{got['calls_per_s'] / base:.2f}x | {got['cpu_clients'] * 1000:.2f} ms | {got['cpu_serve'] * 1000:.2f} ms"
            f" | {got['cpu_haproxy'] * 1000:.2f} ms | {got['cpu_postgres'] * 1000:.2f} ms | "
            f"{got['commits_per_call']:.2f} |"
        )
    if seen:
        lines += ["", f"Statements PostgreSQL logged per call (one more round of {calls} calls per case):", ""]
        kinds = sorted({kind for counted in seen.values() for kind in counted})
        lines += ["| Statement | " + " | ".join(f"`{case}`" for case in seen) + " |"]
        lines += ["|---|" + "---|" * len(seen)]
        for kind in kinds:
            lines.append(f"| `{kind}` | " + " | ".join(f"{seen[case][kind] / calls:.2f}" for case in seen) + " |")
    return "\n".join(lines)


RECOVERY_GOAL = 5.0
"""Seconds within which every client must make progress again after the kill (issue #29)."""
VISIBLE_GOAL = 2.0
"""Seconds within which a call answered through one replica must be in another's ``/api/history/calls``."""
LOOK_FOR = 5.0
"""Seconds the watcher looks for one call on another replica before it counts it missing."""


@dataclass
class Watched:
    """What the watcher saw beside the load: for each call it followed, the seconds from its answer to its row in
    another replica's ``/api/history/calls``; the calls not there within ``LOOK_FOR``; the seconds from the kill
    to HAProxy marking the replica down."""

    visible: list[float] = field(default_factory=list[float])
    looks: list[int] = field(default_factory=list[int])
    """For each call followed, the lists asked for until it was there (1: at the first look)."""
    missing: list[str] = field(default_factory=list[str])
    down_after: float | None = None


async def watching(watched: Watched, replicas: dict[str, Replica], load: Load) -> None:
    """Follow the newest answered call to another live replica's list until it is there (asking every 10 ms), again
    and again until the load stops; and, once the replica is killed, HAProxy's view of it."""

    async def down() -> None:
        while load.killed_at is None:  # noqa: ASYNC110
            await anyio.sleep(0.01)
        while (await server_states(load.stats)).get(load.doomed, "").split(" ")[0] != "DOWN":  # noqa: ASYNC110
            await anyio.sleep(0.02)
        watched.down_after = time.monotonic() - load.killed_at

    async def follow(http: httpx2.AsyncClient) -> None:
        followed: set[str] = set()
        while not load.stop.is_set():
            fresh = [c for c in load.answered() if c.replica in replicas and c.text not in followed]
            if not fresh:
                await anyio.sleep(0.01)
                continue
            call = fresh[-1]
            followed.add(call.text)
            other = next(name for name in replicas if name not in (call.replica, load.doomed))
            looks = 0
            while True:
                looks += 1
                listed = await http.get(
                    f"{replicas[other].url}/api/history/calls", params={"replica": call.replica, "limit": 50}
                )
                if any(c["arguments"].get("text") == call.text for c in listed.json()["toolCalls"]):
                    watched.visible.append(time.monotonic() - call.ended)
                    watched.looks.append(looks)
                    break
                if time.monotonic() - call.ended > LOOK_FOR:
                    watched.missing.append(call.text)
                    break
                await anyio.sleep(0.01)

    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as http,
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(down)
        await follow(http)
        tg.cancel_scope.cancel()


def error_kind(error: str) -> str:
    """A client's error (its ``repr``) by kind: the 404 that ends a session, or the exception's class."""
    if "Session not found" in error:
        return "404 Session not found"
    return error.split("(", 1)[0] or error[:40]


def judged(killed: Killed, watched: Watched) -> dict[str, Any]:
    """One run's figures: how soon each client made progress again, the errors by kind, how soon calls were
    visible on another replica, and whether the history and ``/metrics`` hold every answered call."""
    load = killed.load
    killed_at = load.killed_at
    assert killed_at is not None
    back: dict[int, float] = {}
    for index in range(CLIENTS):
        ends = [c.ended for c in load.answered() if c.client == index and c.ended > killed_at]
        back[index] = min(ends) - killed_at if ends else math.inf
    hit = sorted({c.client for c in load.calls if c.error is not None and c.ended >= killed_at and c.client >= 0})
    errors = Counter(error_kind(c.error) for c in load.calls if c.error is not None and c.client >= 0)
    longs = [c.ended - killed_at for c in load.calls if c.client == -1 and c.error is not None]
    rows: list[dict[str, Any]] = killed.listed.json()["toolCalls"]
    by_text = Counter((str(row["arguments"].get("text", "")), row["replica"], row["status"]) for row in rows)
    answered = load.answered()
    once = sum(by_text[(c.text, c.replica, "ok")] == 1 for c in answered)
    texts = Counter(str(row["arguments"].get("text", "")) for row in rows)
    twice = sum(texts[c.text] > 1 for c in answered)
    counted = {
        name: sum(
            sample.value
            for sample in families["mcpdeck_tool_calls"]
            if sample.name == "mcpdeck_tool_calls_total" and sample.labels["tool"] == "echo"
        )
        for name, families in killed.metrics.items()
    }
    metrics_ok = all(counted[name] == sum(c.replica == name for c in answered) for name in counted)
    calls = {c.text: c for c in load.calls}
    interrupted = [
        {
            "text": text,
            "client": call.client if call else None,
            "error": call.error if call else None,
            "answered_by": call.replica if call else None,
            "in_flight": bool(call and call.started <= killed_at <= (call.ended or math.inf)),
        }
        for row in rows
        if row["status"] == "interrupted"
        for text in [str(row["arguments"].get("text", row["tool"]))]
        for call in [calls.get(text)]
    ]
    slowest = max(back, key=lambda index: back[index])
    dead_at = load.dead_at if load.dead_at is not None else killed_at
    stray = [  # errors of calls not in flight on the replica while it died (a 404 after it is the protocol's)
        c.text
        for c in load.calls
        if c.error is not None
        and "Session not found" not in c.error
        and not (c.started <= dead_at and killed_at <= c.ended)
    ]
    return {
        "slowest": [
            (c.text, round(c.started - killed_at, 3), round(c.ended - killed_at, 3), c.replica, c.session, c.error)
            for c in load.calls
            if c.client == slowest and (c.ended or math.inf) > killed_at - 1
        ],
        "dying": dead_at - killed_at,
        "stray": stray,
        "back": {index: round(seconds, 3) for index, seconds in back.items()},
        "unfinished": [c.text for c in load.calls if not c.ended],
        "interrupted_calls": interrupted,
        "back_max": max(back.values()),
        "back_p50": median(list(back.values())) or 0.0,
        "hit": hit,
        "hit_max": max((back[i] for i in hit), default=0.0),
        "errors": dict(errors),
        "long_errors": sorted(longs),
        "down_after": watched.down_after,
        "visible_p50": median(watched.visible) or 0.0,
        "visible_max": max(watched.visible, default=0.0),
        "visible_n": len(watched.visible),
        "first_look": sum(looks == 1 for looks in watched.looks),
        "missing": len(watched.missing),
        "answered": len(answered),
        "once": once,
        "twice": twice,
        "interrupted": sum(row["status"] == "interrupted" for row in rows),
        "metrics_ok": metrics_ok,
        "load": os.getloadavg()[0],
    }


async def recover(folder: Path, runs: int) -> list[dict[str, Any]]:
    """``runs`` times the judged check (``tests.support.fleet_load``) on one durable PostgreSQL (a database per run),
    measured."""
    config = folder / "mcp.json"
    config.write_text(
        json.dumps({"mcpServers": {"basic": stdio_server("basic")}, "permissions": {"allow": ["mcp__basic"]}})
    )
    figures: list[dict[str, Any]] = []
    with running_postgres(durable=True) as postgres:
        for run in range(runs):
            (folder / f"run-{run}").mkdir()
            watched = Watched()
            with postgres.database() as url:
                killed = await killed_mid_load(folder / f"run-{run}", config, url, partial(watching, watched))
            figures.append(judged(killed, watched))
            print(f"recovery run {run + 1}: {json.dumps(figures[-1])}", flush=True)
    return figures


def render_recovery(figures: list[dict[str, Any]]) -> str:
    def ms(seconds: float | None) -> str:
        return "-" if seconds is None else f"{seconds * 1000:.0f} ms"

    lines = [
        f"The judged check, {len(figures)} runs: three replicas on PostgreSQL behind HAProxy, {CLIENTS} SDK clients "
        "(half 2026-07-28, half handshake), `kill -9` of the replica running two long calls mid-load.",
        "",
        "- back: from the kill to a client's next answered call (all clients: max, p50; hit: the clients that saw an "
        "error, and their max);",
        "- long calls: from the kill to their error; down: from the kill to HAProxy marking the replica down; dying: "
        "from the signal to the process's end (a request that reached it meanwhile was in flight there);",
        "- errors by kind; stray: errors of calls not in flight on the replica while it died (other than the 404 "
        "after);",
        "- visible: from an answer to its row in another replica's `/api/history/calls`, asked every 10 ms (n: calls "
        "followed; first: listed at the first look, so the time is that request's own);",
        "- history: answered calls there exactly once with their replica / answered; twice: any there more than once.",
        "",
        "| Run | load | back max | back p50 | hit: max | long calls | down | dying | errors (stray) "
        "| visible p50 / max (n, first) | history | twice | interrupted | /metrics |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for n, got in enumerate(figures, 1):
        errors = ", ".join(f"{kind}: {count}" for kind, count in sorted(got["errors"].items())) or "none"
        longs = ", ".join(ms(t) for t in got["long_errors"]) or "-"
        visible = f"{ms(got['visible_p50'])} / {ms(got['visible_max'])} ({got['visible_n']}, {got['first_look']})"
        lines.append(
            f"| {n} | {got['load']:.1f} | {ms(got['back_max'])} | {ms(got['back_p50'])} | "
            f"{len(got['hit'])}: {ms(got['hit_max'])} | {longs} | {ms(got['down_after'])} | {ms(got['dying'])} | "
            f"{errors} ({len(got['stray'])}) | {visible} | {got['once']} / {got['answered']} | {got['twice']} | "
            f"{got['interrupted']} | {'adds up' if got['metrics_ok'] else 'DOES NOT add up'} |"
        )
    worst = max(got["back_max"] for got in figures)
    seen = max(got["visible_max"] for got in figures)
    missing = sum(got["missing"] for got in figures)
    lines += [
        "",
        f"Worst client back after {worst:.2f} s (goal {RECOVERY_GOAL:g} s: "
        f"{'met' if worst <= RECOVERY_GOAL else 'NOT met'}); slowest call visible after {seen:.2f} s (goal "
        f"{VISIBLE_GOAL:g} s: {'met' if seen <= VISIBLE_GOAL else 'NOT met'}); {missing} calls not listed within "
        f"{LOOK_FOR:g} s.",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--calls", type=int, default=480, help="calls per case per round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--store-calls", type=int, default=400, help="bench.store's calls per case per round")
    parser.add_argument("--store-rounds", type=int, default=3)
    parser.add_argument("--recovery-runs", type=int, default=3, help="runs of the kill -9 check (0: none)")
    parser.add_argument("--skip", action="append", default=[], choices=("throughput", "store"), help="leave a part out")
    parser.add_argument(
        "--statements", action="store_true", help="count the statements PostgreSQL sees per call (one more round)"
    )
    options = parser.parse_args()
    print(f"load average at the start: {os.getloadavg()[0]:.1f}", flush=True)
    results: dict[str, Any] = {}
    if "throughput" not in options.skip:
        with tempfile.TemporaryDirectory(prefix="mcpdeck-bench-fleet-") as folder:
            figures, seen = anyio.run(
                measure, Path(folder), options.clients, options.calls, options.rounds, options.statements
            )
        print(render(figures, options.clients, options.calls, options.rounds, seen), flush=True)
        results["fleet"] = figures
    if options.recovery_runs > 0:
        with tempfile.TemporaryDirectory(prefix="mcpdeck-bench-recovery-") as folder:
            recovered = anyio.run(recover, Path(folder), options.recovery_runs)
        print()
        print(render_recovery(recovered), flush=True)
        results["recovery"] = recovered
    if "store" not in options.skip:
        with tempfile.TemporaryDirectory(prefix="mcpdeck-bench-store-") as folder:
            stored = anyio.run(store.measure, Path(folder), options.clients, options.store_calls, options.store_rounds)
        print()
        print(store.render(stored, options.clients, options.store_calls, options.store_rounds))
        results["store"] = stored
    with contextlib.suppress(OSError):
        (ROOT / "bench" / ".results").mkdir(exist_ok=True)
        (ROOT / "bench" / ".results" / "fleet.json").write_text(json.dumps(results))


if __name__ == "__main__":
    main()
