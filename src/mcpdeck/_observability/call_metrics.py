"""A host's tool calls counted from its events: the Prometheus figures of ``GET /metrics`` and their per-minute
rollups over the last hour (the console's Metrics page).

``host.events.on(metrics.record, ToolCallStarted, ToolCallFinished)`` feeds it. Each call is counted by
server, tool and outcome (the history's statuses: ``ok``, ``tool-error``, ``error``, ``denied``); a call that
was sent (not refused) is timed into ``mcp_client_operation_duration_seconds`` (the OpenTelemetry MCP
semantic conventions' ``mcp.client.operation.duration``, as Prometheus names it) and into its server's
minute. A minute keeps the same buckets, so its p50 and p99 are read the way Prometheus reads the histogram.
Native tools of an agent (no server) are not MCP calls and are left out.

The counters are this process's own: each replica of a fleet has its own (Prometheus scrapes each and sums
them; a killed process's counts die with it, docs/fleet.md). The per-minute rollups are also written to a
shared place when one is given (``shared``: the store's ``call_minutes``, ``mcpdeck.store.StoredMinutes``),
the minutes that changed each time ``flush`` runs (``serve``: every 2 s and when asked for them), so the
Metrics page of any replica shows every replica's minutes (``fleet_minutes``), a dead one's included.
"""

from __future__ import annotations

import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio.to_thread

from mcpdeck._observability.metrics import DURATION_BUCKETS, Exposition, Histogram, MinuteCounts, store_commits
from mcpdeck.events import Event, ToolCallFinished, ToolCallStarted

__all__ = ["MINUTES", "CallMetrics", "SharedMinutes", "outcome_of"]

MINUTES = 60
"""Minutes of rollups kept (the last hour)."""
_DENIED = frozenset({"denied-by-rule", "denied-by-user", "no-approver"})


def outcome_of(event: ToolCallFinished) -> str:
    """How a call ended, as the history says it: ``ok``, ``tool-error``, ``error`` or ``denied``."""
    if event.approved_by in _DENIED:
        return "denied"
    if event.error:
        return "error"
    return "tool-error" if event.is_error else "ok"


class SharedMinutes(Protocol):
    """Where the replicas' minutes meet (``mcpdeck.store.StoredMinutes``)."""

    def save(self, rows: Sequence[MinuteCounts]) -> None:
        """Queue these rows (each whole: it replaces its earlier self); returns at once."""
        ...

    def load(self, since: int) -> list[MinuteCounts]:
        """Every replica's rows from the minute ``since`` on, after every save queued before (blocks)."""
        ...


@dataclass
class _Minute:
    """One server's calls in one minute."""

    start: int
    """The minute, as seconds since the epoch."""
    calls: int = 0
    errors: int = 0
    durations: Histogram = field(default_factory=lambda: Histogram(DURATION_BUCKETS))


class CallMetrics:
    """The calls of one host, counted (see the module).

    Args:
        replica: This process's replica name: a ``replica`` label on every figure and in every rollup.
        sessions: Reads the gateway's open sessions (handshake-era clients'), by profile (``""``: the default one),
            when asked.
        listening: Reads the gateway's open ``subscriptions/listen`` streams (2026-07-28 clients'), by profile.
        clients_seen: Reads how many gateway clients made a request in the last minute (either era).
        clock: Seconds since the epoch (the minutes are cut from it).
        shared: Where every replica's minutes meet (needs ``replica``); None: this process's alone.
    """

    def __init__(
        self,
        *,
        replica: str | None = None,
        sessions: Callable[[], Mapping[str, int]] | None = None,
        listening: Callable[[], Mapping[str, int]] | None = None,
        clients_seen: Callable[[], int] | None = None,
        clock: Callable[[], float] = time.time,
        shared: SharedMinutes | None = None,
    ) -> None:
        if shared is not None and replica is None:
            raise ValueError("minutes shared with other replicas need this one's replica id")
        self.replica = replica
        self.shared = shared
        self.life = uuid.uuid4().hex[:12]
        """This run of the process, apart from the replica's earlier and later ones in the shared minutes."""
        self._sessions = sessions
        self._listening = listening
        self._clients_seen = clients_seen
        self._clock = clock
        self._changed: set[tuple[str, int]] = set()
        self._calls: dict[tuple[str, str, str], int] = {}
        self._durations: dict[tuple[str, str, str], Histogram] = {}
        self._in_flight: dict[str, int] = {}
        self._minutes: dict[str, deque[_Minute]] = {}

    def record(self, event: Event) -> None:
        """An event callback (``host.events.on(metrics.record, ToolCallStarted, ToolCallFinished)``)."""
        if isinstance(event, ToolCallStarted):
            if event.server:
                self._in_flight[event.server] = self._in_flight.get(event.server, 0) + 1
        elif isinstance(event, ToolCallFinished) and event.server:
            self._finished(event)

    def _finished(self, event: ToolCallFinished) -> None:
        server = event.server
        self._in_flight[server] = max(self._in_flight.get(server, 0) - 1, 0)
        outcome = outcome_of(event)
        key = (server, event.tool, outcome)
        self._calls[key] = self._calls.get(key, 0) + 1
        minute = self._minute(server)
        self._changed.add((server, minute.start))
        minute.calls += 1
        if outcome != "ok":
            minute.errors += 1
        if outcome == "denied":  # never sent: no operation to time
            return
        error_type = {"ok": "", "tool-error": "tool_error"}.get(outcome, "error")
        timed = (server, event.tool, error_type)
        histogram = self._durations.get(timed)
        if histogram is None:
            histogram = self._durations[timed] = Histogram(DURATION_BUCKETS)
        histogram.observe(event.duration)
        minute.durations.observe(event.duration)

    def _minute(self, server: str) -> _Minute:
        start = int(self._clock()) // 60 * 60
        minutes = self._minutes.get(server)
        if minutes is None:
            minutes = self._minutes[server] = deque(maxlen=MINUTES)
        if not minutes or minutes[-1].start != start:
            minutes.append(_Minute(start))
        return minutes[-1]

    # ----- what is read -----------------------------------------------------------------

    def calls(self) -> dict[tuple[str, str, str], int]:
        """Calls so far by (server, tool, outcome)."""
        return dict(self._calls)

    def exposition(self) -> str:
        """Every figure in Prometheus's text format."""
        out = Exposition((("replica", self.replica),) if self.replica is not None else ())
        out.family("mcpdeck_tool_calls_total", "counter", "Tool calls that ended, by server, tool and outcome.")
        for (server, tool, outcome), count in sorted(self._calls.items()):
            out.sample("mcpdeck_tool_calls_total", (("server", server), ("tool", tool), ("outcome", outcome)), count)
        name = "mcp_client_operation_duration_seconds"
        said = "Duration of the tools/call requests sent to MCP servers (mcp.client.operation.duration)."
        out.family(name, "histogram", said)
        for (server, tool, error_type), histogram in sorted(self._durations.items()):
            labels = [("mcp_method_name", "tools/call"), ("server", server), ("tool", tool)]
            if error_type:
                labels.append(("error_type", error_type))
            out.histogram(name, labels, histogram)
        out.family("mcpdeck_tool_calls_in_flight", "gauge", "Tool calls sent and not yet answered, by server.")
        for server, count in sorted(self._in_flight.items()):
            out.sample("mcpdeck_tool_calls_in_flight", (("server", server),), count)
        if self._sessions is not None:
            said = "The gateway's open MCP sessions (handshake-era clients; 2026-07-28 has none), by profile."
            out.family("mcpdeck_gateway_sessions_open", "gauge", said)
            for profile, count in sorted(self._sessions().items()):
                out.sample("mcpdeck_gateway_sessions_open", (("profile", profile),), count)
        if self._listening is not None:
            name = "mcpdeck_gateway_listen_streams_open"
            out.family(name, "gauge", "The gateway's open subscriptions/listen streams (2026-07-28), by profile.")
            for profile, count in sorted(self._listening().items()):
                out.sample(name, (("profile", profile),), count)
        if self._clients_seen is not None:
            name = "mcpdeck_gateway_clients_seen"
            said = "Gateway clients (token and clientInfo, either era) that made a request in the last minute."
            out.family(name, "gauge", said)
            out.sample(name, (), self._clients_seen())
        name = "mcpdeck_store_commit_duration_seconds"
        out.family(name, "histogram", "How long the history store's transactions took, from BEGIN to COMMIT done.")
        out.histogram(name, (), store_commits())
        return out.text()

    def minutes(self) -> dict[str, Any]:
        """The last hour by server, one value a minute: calls, errors, p50 and p99 (seconds; None: no call);
        this process's own."""
        rows = [
            MinuteCounts(self.replica or "", self.life, server, m.start, m.calls, m.errors, tuple(m.durations.counts))
            for server, kept in self._minutes.items()
            for m in kept
        ]
        return self._series(rows, lambda _: self.replica)

    def flush(self) -> None:
        """Queue the minutes that changed since the last flush to ``shared`` (returns at once)."""
        if self.shared is None or not self._changed:
            return
        changed, self._changed = self._changed, set()
        rows: list[MinuteCounts] = []
        for server, start in sorted(changed):
            minute = next((m for m in self._minutes.get(server, ()) if m.start == start), None)
            if minute is not None:  # else: older than the hour kept
                counts = tuple(minute.durations.counts)
                rows.append(
                    MinuteCounts(self.replica or "", self.life, server, start, minute.calls, minute.errors, counts)
                )
        self.shared.save(rows)

    async def fleet_minutes(self) -> dict[str, Any]:
        """As ``minutes``, for every replica that wrote to ``shared`` in the hour (each a series of its own, a
        replica's runs added up), this one's latest minutes included; ``minutes()`` without ``shared``."""
        shared = self.shared
        if shared is None:
            return self.minutes()
        self.flush()
        since = self._now() - 60 * (MINUTES - 1)
        rows = await anyio.to_thread.run_sync(shared.load, since)
        return self._series(rows, lambda replica: replica)

    def _now(self) -> int:
        return int(self._clock()) // 60 * 60

    def _series(self, rows: Iterable[MinuteCounts], name: Callable[[str], str | None]) -> dict[str, Any]:
        now = self._now()
        starts = [now - 60 * back for back in range(MINUTES - 1, -1, -1)]
        first = starts[0]
        grouped: dict[tuple[str, str], dict[int, _Minute]] = {}
        for row in rows:
            if row.minute < first or row.minute > now:
                continue
            by_start = grouped.setdefault((row.replica, row.server), {})
            minute = by_start.get(row.minute)
            if minute is None:
                minute = by_start[row.minute] = _Minute(row.minute)
            minute.calls += row.calls
            minute.errors += row.errors
            counted = Histogram(DURATION_BUCKETS)
            if len(row.durations) == len(counted.counts):  # else: buckets of another version: left out
                counted.counts = list(row.durations)
                counted.count = sum(row.durations)
                minute.durations.add(counted)
        series: list[dict[str, Any]] = []
        for (replica, server), by_start in sorted(grouped.items(), key=lambda item: (item[0][1], item[0][0])):
            data: dict[str, list[Any]] = {"calls": [], "errors": [], "p50": [], "p99": []}
            for start in starts:
                minute = by_start.get(start)
                data["calls"].append(minute.calls if minute else 0)
                data["errors"].append(minute.errors if minute else 0)
                data["p50"].append(minute.durations.quantile(0.5) if minute else None)
                data["p99"].append(minute.durations.quantile(0.99) if minute else None)
            series.append({"server": server, "replica": name(replica), **data})
        return {"minutes": starts, "series": series}
