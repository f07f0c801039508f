"""Summaries of samples: median, p99 and ratios. Standard library only."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

__all__ = ["median", "percentile", "ratio"]


def median(samples: Sequence[float]) -> float | None:
    return statistics.median(samples) if samples else None


def percentile(samples: Sequence[float], q: float) -> float | None:
    """The nearest-rank ``q``-th percentile (``q`` in 0..100): a value that was measured."""
    if not samples:
        return None
    ordered = sorted(samples)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def ratio(value: float | None, baseline: float | None) -> float | None:
    if value is None or baseline is None or baseline == 0:
        return None
    return value / baseline
