"""The SDK's OpenTelemetry spans, left out of the gateway's hot path when they go nowhere.

Without a tracer provider every span is a no-op, but building one still costs: the SDK opens a
client span (and injects the trace context) around every request it sends and a server span
around every request it serves, together about an eighth of the gateway's work per call
(bench/RESULTS.md).
``build_server`` leaves the server's span middleware out (``Server.middleware``, public); the
client span has no switch, so ``drop_idle_client_spans`` replaces the two helpers the SDK's
dispatcher calls (``mcp.shared.jsonrpc_dispatcher.otel_span`` and ``inject_trace_context``, a
private reach pinned by the exact SDK version) with ones that do nothing. Only the gateway's own
processes do that, and only when no provider is set: a program that traces keeps its spans.
"""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager
from typing import Any

from mcpdeck._observability.tracing import tracing

__all__ = ["drop_idle_client_spans", "tracing"]


@contextmanager
def _no_span(*args: Any, **kwargs: Any) -> Generator[Any]:
    from opentelemetry.trace import INVALID_SPAN

    yield INVALID_SPAN


def _no_inject(meta: dict[str, Any]) -> None:
    """Without a span there is no trace context to pass on."""


def drop_idle_client_spans() -> bool:
    """Stop the SDK from building a client span per request sent, when no tracer provider is set.

    For a process that is the gateway (``mcpdeck gateway``, ``serve --stdio``): it changes the SDK
    for the whole process. Returns whether it did (False: a provider is set, spans are kept).
    """
    if tracing():
        return False
    from mcp.shared import jsonrpc_dispatcher

    jsonrpc_dispatcher.otel_span = _no_span  # pyright: ignore[reportPrivateImportUsage]
    jsonrpc_dispatcher.inject_trace_context = _no_inject  # pyright: ignore[reportPrivateImportUsage]
    return True
