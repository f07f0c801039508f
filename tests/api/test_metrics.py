"""``GET /metrics`` (Prometheus) and ``GET /api/metrics`` (the console's per-minute figures) after real calls."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import anyio
import pytest

from mcpdeck.events import ToolCallStarted
from tests.api.conftest import running_api
from tests.helpers import next_event, stdio_server
from tests.support.prometheus_text import Sample, scraped, value

pytestmark = pytest.mark.anyio


async def test_metrics_count_every_call_by_outcome_and_add_up_to_the_history(tmp_path: Path) -> None:
    servers = {"basic": stdio_server("basic")}
    async with running_api(tmp_path, servers) as api:
        for a in range(3):
            answer = await api.client.post("/api/tools/mcp__inproc__add/call", json={"arguments": {"a": a, "b": 1}})
            assert answer.status_code == 200 and not answer.json()["isError"]
        for _ in range(2):
            answer = await api.client.post("/api/tools/mcp__basic__fail/call", json={"arguments": {"message": "no"}})
            assert answer.json()["isError"]

        # A call in flight is counted as such until it ends (here: cancelled).
        async def sleep() -> None:
            body = {"arguments": {"seconds": 30}, "callId": "long"}
            await api.client.post("/api/tools/mcp__basic__sleep/call", json=body)

        during: dict[str, list[Sample]] = {}
        async with api.host.events.subscribe() as events, anyio.create_task_group() as tg:
            tg.start_soon(sleep)
            await next_event(events, ToolCallStarted, lambda e: e.tool == "sleep")
            during = scraped((await api.client.get("/metrics")).text)
            assert (await api.client.post("/api/calls/long/cancel")).status_code == 200
        assert value(during["mcpdeck_tool_calls_in_flight"], "mcpdeck_tool_calls_in_flight", server="basic") == 1

        answer = await api.client.get("/metrics")
        assert answer.headers["content-type"].startswith("text/plain; version=0.0.4")
        figures = scraped(answer.text)
        db = api.ctx.history
        assert db is not None
        history = await anyio.to_thread.run_sync(lambda: db.tool_calls(limit=100))
        minutes = (await api.client.get("/api/metrics")).json()
        unauthorised = await api.client.get("/metrics", headers={"Authorization": "Bearer wrong"})

    calls = figures["mcpdeck_tool_calls"]
    counted = {(s.labels["server"], s.labels["tool"], s.labels["outcome"]): s.value for s in calls}
    assert counted == {
        ("inproc", "add", "ok"): 3,
        ("basic", "fail", "tool-error"): 2,
        ("basic", "sleep", "error"): 1,  # cancelled: as the history says it
    }
    in_history = Counter((c.server, c.tool, c.status) for c in history)
    assert counted == dict(in_history)
    assert value(figures["mcpdeck_tool_calls_in_flight"], "mcpdeck_tool_calls_in_flight", server="basic") == 0

    durations = figures["mcp_client_operation_duration_seconds"]
    name = "mcp_client_operation_duration_seconds"
    assert value(durations, f"{name}_count", server="inproc", tool="add", mcp_method_name="tools/call") == 3
    assert value(durations, f"{name}_count", server="basic", tool="fail", error_type="tool_error") == 2
    assert value(durations, f"{name}_sum", server="inproc", tool="add") > 0
    buckets = [s for s in durations if s.name == f"{name}_bucket" and s.labels["tool"] == "add"]
    assert [s.value for s in buckets] == sorted(s.value for s in buckets)  # cumulative
    assert buckets[-1].labels["le"] == "+Inf" and buckets[-1].value == 3
    commits = figures["mcpdeck_store_commit_duration_seconds"]
    assert value(commits, "mcpdeck_store_commit_duration_seconds_count") >= 1  # the history wrote these calls

    by_server = {series["server"]: series for series in minutes["series"]}
    assert len(minutes["minutes"]) == 60 and minutes["minutes"] == sorted(minutes["minutes"])
    assert sum(by_server["inproc"]["calls"]) == 3 and sum(by_server["inproc"]["errors"]) == 0
    assert sum(by_server["basic"]["calls"]) == 3 and sum(by_server["basic"]["errors"]) == 3
    latest = [p for p in by_server["inproc"]["p50"] if p is not None]
    assert latest and 0 < latest[-1] <= 300
    assert unauthorised.status_code == 401


async def test_the_api_says_so_when_this_process_counts_nothing(tmp_path: Path) -> None:
    async with running_api(tmp_path, {}) as api:
        api.ctx.metrics = None
        answers = [await api.client.get(path) for path in ("/metrics", "/api/metrics")]
    assert [a.status_code for a in answers] == [404, 404]
    assert "not counted" in answers[1].json()["error"]["message"]
