"""The figures behind ``/metrics``: quantiles read from buckets as Prometheus reads them, the text format read
back by Prometheus's own parser, whatever a server names its tools, and the minutes of the last hour."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from mcpdeck._observability.call_metrics import MINUTES, CallMetrics
from mcpdeck._observability.metrics import Histogram, quantile
from mcpdeck.events import ToolCallFinished, ToolCallStarted


def test_quantiles_are_read_linearly_inside_the_bucket_they_fall_in() -> None:
    histogram = Histogram((1.0, 2.0, 4.0))
    assert histogram.quantile(0.5) is None
    for value in (0.5, 0.5, 1.5, 1.5):
        histogram.observe(value)
    assert histogram.counts == [2, 2, 0, 0]
    assert histogram.quantile(0.5) == pytest.approx(1.0)
    assert histogram.quantile(0.99) == pytest.approx(1.98)
    assert quantile(0.5, (1.0, 2.0), [0, 0, 5]) == 2.0  # all over the last bound: that bound, as Prometheus says


def _finished(
    server: str, tool: str, duration: float, *, is_error: bool = False, error: str | None = None, denied: bool = False
) -> ToolCallFinished:
    return ToolCallFinished(
        call_id="c",
        name=f"mcp__{server}__x",
        server=server,
        tool=tool,
        duration=duration,
        is_error=is_error,
        error=error,
        approved_by="denied-by-rule" if denied else None,
    )


def test_any_server_or_tool_name_survives_the_text_format() -> None:
    metrics = CallMetrics(replica="r1")
    odd_server, odd_tool = 's"1\\', "a\nb} 7\n# TYPE x counter"
    metrics.record(ToolCallStarted(call_id="c", name="n", server=odd_server, tool=odd_tool, arguments={}))
    metrics.record(_finished(odd_server, odd_tool, 0.003))
    metrics.record(_finished("other", "x", 0.1, denied=True))
    families = {f.name: f for f in text_string_to_metric_families(metrics.exposition())}
    samples = families["mcpdeck_tool_calls"].samples
    labels = {(s.labels["server"], s.labels["tool"], s.labels["outcome"]) for s in samples}
    assert labels == {(odd_server, odd_tool, "ok"), ("other", "x", "denied")}
    assert all(s.labels["replica"] == "r1" for s in families["mcpdeck_tool_calls"].samples)
    counts = [s for s in families["mcp_client_operation_duration_seconds"].samples if s.name.endswith("_count")]
    assert [(s.labels["server"], s.value) for s in counts] == [(odd_server, 1)]  # a refused call was never sent
    assert "x" not in families


def test_the_minutes_keep_the_last_hour_and_cut_on_the_minute() -> None:
    now = [1_800_000_000.0]  # a minute's start
    metrics = CallMetrics(clock=lambda: now[0])
    metrics.record(_finished("s", "t", 0.002))
    now[0] += 59
    metrics.record(_finished("s", "t", 0.004, is_error=True))
    now[0] += 1  # the next minute
    metrics.record(_finished("s", "t", 0.5, error="timed out"))
    rollup = metrics.minutes()
    (series,) = rollup["series"]
    assert rollup["minutes"][-1] == 1_800_000_060 and len(rollup["minutes"]) == MINUTES
    assert series["calls"][-2:] == [2, 1] and series["errors"][-2:] == [1, 1]
    assert series["p50"][-2] == pytest.approx(0.0025) and series["p99"][-1] == pytest.approx(0.5, rel=0.05)
    assert series["p50"][0] is None and sum(series["calls"]) == 3
    now[0] += 60 * MINUTES  # an hour later nothing is left to show
    assert metrics.minutes()["series"] == []
