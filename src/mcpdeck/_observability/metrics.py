"""Figures for Prometheus: histograms kept in memory, quantiles read from them, and the text exposition format.

Written here rather than with ``prometheus_client``: the figures ``/metrics`` exposes are also rolled up per
minute for the console's Metrics page (``_observability.call_metrics``), from the same buckets, which that library
does not keep; the format itself is a few lines (the tests read it back with ``prometheus_client``'s parser).

The store writer's transactions are timed here, BEGIN to COMMIT on SQLite and PostgreSQL alike
(``observe_store_commit``): one function call in the writer thread, into one histogram for the whole
process (``STORE_COMMITS``).
"""

from __future__ import annotations

import math
import threading
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "COMMIT_BUCKETS",
    "DURATION_BUCKETS",
    "STORE_COMMITS",
    "Exposition",
    "Histogram",
    "MinuteCounts",
    "observe_store_commit",
    "quantile",
    "store_commits",
]

DURATION_BUCKETS: tuple[float, ...] = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.02,
    0.05,
    0.1,
    0.2,
    0.5,
    1.0,
    2.0,
    5.0,
    10.0,
    30.0,
    60.0,
    120.0,
    300.0,
)
"""Upper bounds (seconds) of a call's duration buckets: the OpenTelemetry MCP semantic conventions' advice for
``mcp.client.operation.duration`` (10 ms to 300 s), with four below it, since a call to a local server
takes about a millisecond."""

COMMIT_BUCKETS: tuple[float, ...] = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)
"""Upper bounds (seconds) of a store commit's buckets."""


class Histogram:
    """Counts of values at or under each bound (the last count: over every bound), their sum and number."""

    __slots__ = ("bounds", "count", "counts", "sum")

    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = tuple(bounds)
        self.counts = [0] * (len(self.bounds) + 1)
        self.sum = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.sum += value
        self.count += 1

    def add(self, other: Histogram) -> None:
        """Add ``other``'s counts (same bounds) to these."""
        for index, count in enumerate(other.counts):
            self.counts[index] += count
        self.sum += other.sum
        self.count += other.count

    def quantile(self, q: float) -> float | None:
        """See ``quantile``."""
        return quantile(q, self.bounds, self.counts)


def quantile(q: float, bounds: Sequence[float], counts: Sequence[int]) -> float | None:
    """The ``q`` quantile (0..1) of values counted in buckets, as Prometheus's ``histogram_quantile`` reads it.

    Linear within the bucket it falls in (the first from 0); in the bucket over every bound, that last bound.
    None when nothing was counted.
    """
    total = sum(counts)
    if total == 0:
        return None
    rank = q * total
    seen = 0
    for index, count in enumerate(counts):
        if count and seen + count >= rank:
            if index == len(bounds):
                return bounds[-1]
            low = bounds[index - 1] if index else 0.0
            return low + (bounds[index] - low) * (rank - seen) / count
        seen += count
    return bounds[-1]


@dataclass(frozen=True)
class MinuteCounts:
    """One server's calls in one minute on one replica (one life of its process): a row of the store's
    ``call_minutes``, which the console's Metrics page reads for every replica."""

    replica: str
    life: str
    """Which run of the replica's process counted them (each writes rows of its own, whole)."""
    server: str
    minute: int
    """The minute's start, seconds since the epoch."""
    calls: int
    errors: int
    durations: tuple[int, ...]
    """The calls sent that minute counted by ``DURATION_BUCKETS`` (then over the last), as ``Histogram.counts``."""


STORE_COMMITS = Histogram(COMMIT_BUCKETS)
"""How long the history's transactions took, from ``BEGIN`` to the end of ``COMMIT``, in this process."""
_commits_lock = threading.Lock()


def observe_store_commit(seconds: float) -> None:
    """Count one commit of the history store (called by its writer thread)."""
    with _commits_lock:
        STORE_COMMITS.observe(seconds)


def store_commits() -> Histogram:
    """A copy of ``STORE_COMMITS`` as it is now."""
    copy = Histogram(COMMIT_BUCKETS)
    with _commits_lock:
        copy.add(STORE_COMMITS)
    return copy


def _number(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value)) if not float(value).is_integer() else str(int(value))


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(labels: Iterable[tuple[str, str]]) -> str:
    text = ",".join(f'{name}="{_label(value)}"' for name, value in labels)
    return f"{{{text}}}" if text else ""


class Exposition:
    """Prometheus's text format (0.0.4), written one metric family at a time."""

    CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

    def __init__(self, constant: Sequence[tuple[str, str]] = ()) -> None:
        self._lines: list[str] = []
        self._constant = tuple(constant)

    def family(self, name: str, kind: str, help_text: str) -> None:
        """Begin a family: its ``HELP`` and ``TYPE`` lines."""
        self._lines.append(f"# HELP {name} {help_text}")
        self._lines.append(f"# TYPE {name} {kind}")

    def sample(self, name: str, labels: Sequence[tuple[str, str]], value: float) -> None:
        self._lines.append(f"{name}{_labels((*self._constant, *labels))} {_number(value)}")

    def histogram(self, name: str, labels: Sequence[tuple[str, str]], histogram: Histogram) -> None:
        """A histogram's samples: cumulative ``_bucket`` counts (``le``), ``_sum`` and ``_count``."""
        running = 0
        for bound, count in zip((*histogram.bounds, math.inf), histogram.counts, strict=True):
            running += count
            self.sample(f"{name}_bucket", (*labels, ("le", _number(bound))), running)
        self.sample(f"{name}_sum", labels, histogram.sum)
        self.sample(f"{name}_count", labels, histogram.count)

    def text(self) -> str:
        return "\n".join(self._lines) + "\n"
