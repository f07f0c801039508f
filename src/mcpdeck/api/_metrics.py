"""``/api/metrics``: the host's tool calls per minute over the last hour, by server (the console's Metrics page).

The same figures ``GET /metrics`` gives Prometheus (``_observability.call_metrics``), rolled up per minute: calls,
errors, and the p50 and p99 of the calls' durations read from the minute's buckets. Under ``serve`` every
replica writes its minutes to the store, so each replica answers with all of theirs, one series per server and
replica; elsewhere, this process's own.
"""

from __future__ import annotations

from fastapi import APIRouter

from mcpdeck.api._common import ApiContextDep
from mcpdeck.api._errors import ApiError
from mcpdeck.api._models import MetricsOut

__all__ = ["router"]

router = APIRouter(tags=["metrics"])


@router.get("/metrics", summary="Tool calls per minute, the last hour")
async def metrics(ctx: ApiContextDep) -> MetricsOut:
    """Per server and replica: calls, errors, p50 and p99 durations, one value per minute for the last 60
    minutes."""
    if ctx.metrics is None:
        raise ApiError(404, "not-found", "this host's calls are not counted; they are by `mcpdeck serve`")
    return MetricsOut.model_validate(await ctx.metrics.fleet_minutes())
