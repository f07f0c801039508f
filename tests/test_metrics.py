"""The figures behind ``/metrics``: quantiles read from buckets as Prometheus reads them, the text format read
back by Prometheus's own parser, whatever a server names its tools, and the minutes of the last hour."""

from __future__ import annotations

from pathlib import Path

import anyio
import anyio.to_thread
import pytest
from prometheus_client.parser import text_string_to_metric_families

from mcpdeck._observability.call_metrics import MINUTES, CallMetrics
from mcpdeck._observability.metrics import Histogram, quantile
from mcpdeck.events import ToolCallFinished, ToolCallStarted
from mcpdeck.store import History, StoredMinutes


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


@pytest.mark.anyio
async def test_every_replica_s_minutes_meet_in_the_store_and_a_replica_s_runs_add_up(store_url: str) -> None:
    now = [1_800_000_000.0]
    with History(store_url, replica="r1") as one, History(store_url, replica="r2") as two:
        r1 = CallMetrics(replica="r1", clock=lambda: now[0], shared=StoredMinutes(one))
        r2 = CallMetrics(replica="r2", clock=lambda: now[0], shared=StoredMinutes(two))
        for _ in range(3):
            r1.record(_finished("s", "t", 0.002))
        r2.record(_finished("s", "t", 0.3, is_error=True))
        r2.flush()
        assert r2.minutes()["series"][0]["replica"] == "r2"
        later = CallMetrics(replica="r2", clock=lambda: now[0], shared=StoredMinutes(two))  # r2 started again
        later.record(_finished("s", "t", 0.004))
        later.flush()
        await anyio.to_thread.run_sync(two.flush)  # r2's writes are committed; r1's own are queued on its reads
        seen = await r1.fleet_minutes()
        again = await r1.fleet_minutes()  # nothing changed: nothing written twice
    by_replica = {series["replica"]: series for series in seen["series"]}
    assert set(by_replica) == {"r1", "r2"} and {s["server"] for s in seen["series"]} == {"s"}
    assert by_replica["r1"]["calls"][-1] == 3 and by_replica["r1"]["errors"][-1] == 0
    assert by_replica["r2"]["calls"][-1] == 2 and by_replica["r2"]["errors"][-1] == 1  # both of r2's runs
    assert by_replica["r1"]["p50"][-1] == pytest.approx(0.0015, rel=0.5)
    assert 0.2 < by_replica["r2"]["p99"][-1] <= 0.5  # the bucket of 0.3 s: the second run's fast call did not hide it
    assert len(seen["minutes"]) == MINUTES and again == seen


def test_minutes_shared_with_other_replicas_need_a_replica_id(tmp_path: Path) -> None:
    with History(tmp_path / "h.sqlite3") as history, pytest.raises(ValueError, match="replica id"):
        CallMetrics(shared=StoredMinutes(history))
