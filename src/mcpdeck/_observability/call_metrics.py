"""A host's tool calls counted from its events: the Prometheus figures of ``GET /metrics`` and their per-minute
rollups over the last hour (the console's Metrics page).

``host.events.on(metrics.record, ToolCallStarted, ToolCallFinished)`` feeds it. Each call is counted by
server, tool and outcome (the history's statuses: ``ok``, ``tool-error``, ``error``, ``denied``); a call that
was sent (not refused) is timed into ``mcp_client_operation_duration_seconds`` (the OpenTelemetry MCP
semantic conventions' ``mcp.client.operation.duration``, as Prometheus names it) and into its server's
minute. A minute keeps the same buckets, so its p50 and p99 are read the way Prometheus reads the histogram.
Native tools of an agent (no server) are not MCP calls and are left out.

Everything is in this process's memory: each replica of a fleet has its own (Prometheus scrapes each; the
fleet's store is where the per-minute rollups of every replica will meet).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mcpdeck._observability.metrics import DURATION_BUCKETS, Exposition, Histogram, store_commits
from mcpdeck.events import Event, ToolCallFinished, ToolCallStarted

__all__ = ["MINUTES", "CallMetrics", "outcome_of"]

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
        sessions: Reads the gateway's open sessions, by profile (``""``: the default one), when asked.
        clock: Seconds since the epoch (the minutes are cut from it).
    """

    def __init__(
        self,
        *,
        replica: str | None = None,
        sessions: Callable[[], Mapping[str, int]] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.replica = replica
        self._sessions = sessions
        self._clock = clock
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
            out.family("mcpdeck_gateway_sessions_open", "gauge", "The gateway's open MCP sessions, by profile.")
            for profile, count in sorted(self._sessions().items()):
                out.sample("mcpdeck_gateway_sessions_open", (("profile", profile),), count)
        name = "mcpdeck_store_commit_duration_seconds"
        out.family(name, "histogram", "How long the history store's transactions took, from BEGIN to COMMIT done.")
        out.histogram(name, (), store_commits())
        return out.text()

    def minutes(self) -> dict[str, Any]:
        """The last hour by server, one value a minute: calls, errors, p50 and p99 (seconds; None: no call)."""
        now = int(self._clock()) // 60 * 60
        starts = [now - 60 * back for back in range(MINUTES - 1, -1, -1)]
        series: list[dict[str, Any]] = []
        for server, kept in sorted(self._minutes.items()):
            by_start = {minute.start: minute for minute in kept}
            if not any(start in by_start for start in starts):
                continue
            row: dict[str, list[Any]] = {"calls": [], "errors": [], "p50": [], "p99": []}
            for start in starts:
                minute = by_start.get(start)
                row["calls"].append(minute.calls if minute else 0)
                row["errors"].append(minute.errors if minute else 0)
                row["p50"].append(minute.durations.quantile(0.5) if minute else None)
                row["p99"].append(minute.durations.quantile(0.99) if minute else None)
            series.append({"server": server, "replica": self.replica, **row})
        return {"minutes": starts, "series": series}
