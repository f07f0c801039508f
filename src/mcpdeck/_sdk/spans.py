"""The SDK's client spans, left out of a process that traces nowhere.

Without a tracer provider every span is a no-op, but building one still costs: the SDK opens a
client span (and injects the trace context) around every request it sends, about 8% of the
gateway's work per call (bench/RESULTS.md). The client span has no switch, so
``drop_client_spans`` replaces the two helpers the SDK's dispatcher calls
(``mcp.shared.jsonrpc_dispatcher.otel_span`` and ``inject_trace_context``) with ones that do
nothing, for the whole process. The caller decides when (``gateway._spans``: only a gateway's own
process, and only when no provider is set).
"""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager
from typing import Any

__all__ = ["drop_client_spans"]


@contextmanager
def _no_span(*args: Any, **kwargs: Any) -> Generator[Any]:
    from opentelemetry.trace import INVALID_SPAN

    yield INVALID_SPAN


def _no_inject(meta: dict[str, Any]) -> None:
    """Without a span there is no trace context to pass on."""


def drop_client_spans() -> None:
    """Replace the SDK dispatcher's client span and trace-context injection with no-ops, for this process."""
    from mcp.shared import jsonrpc_dispatcher

    jsonrpc_dispatcher.otel_span = _no_span  # pyright: ignore[reportPrivateImportUsage]
    jsonrpc_dispatcher.inject_trace_context = _no_inject  # pyright: ignore[reportPrivateImportUsage]
