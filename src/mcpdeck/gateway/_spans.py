"""The SDK's OpenTelemetry spans, left out of the gateway's hot path when they go nowhere.

Without a tracer provider every span is a no-op, but building one still costs: the SDK opens a
client span around every request it sends and a server span around every request it serves,
together about an eighth of the gateway's work per call (bench/RESULTS.md). ``build_server``
leaves the server's span middleware out (``Server.middleware``, public); the client span has no
switch, so ``drop_idle_client_spans`` has ``mcpdeck._sdk.spans`` replace the SDK's helpers (a
private reach, kept in that package). Only the gateway's own processes do that, and only when no
provider is set: a program that traces keeps its spans.
"""

from __future__ import annotations

from mcpdeck._observability.tracing import tracing
from mcpdeck._sdk.spans import drop_client_spans

__all__ = ["drop_idle_client_spans", "tracing"]


def drop_idle_client_spans() -> bool:
    """Stop the SDK from building a client span per request sent, when no tracer provider is set.

    For a process that is the gateway (``mcpdeck gateway``, ``serve --stdio``): it changes the SDK
    for the whole process. Returns whether it did (False: a provider is set, spans are kept).
    """
    if tracing():
        return False
    drop_client_spans()
    return True
