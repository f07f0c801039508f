"""OpenTelemetry: a ``mcpdeck.tool_call`` span around every tool call, and the OTLP exporter set up from the
environment.

The span (``tool_call_span``) is made only when a program set a tracer provider: without one every span
would go nowhere and still cost. It is a child of whatever span is current when the call starts (the
gateway's: the SDK's server span of the client's ``tools/call``, itself a child of the trace context the
client sent in ``_meta``), and the SDK's client span of the request to the server is its child: the SDK
opens that span in the caller's task and sends its W3C trace context (``traceparent``) to the server in the
request's ``_meta``, so the server's own span joins the same trace. Its trace id goes on the call's
``ToolCallStarted`` event, and from there into the history.

``exporting()`` (``mcpdeck serve``, the gateway commands) sets up the OTLP exporter when
``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) is set and the ``mcpdeck[otel]``
extra is installed; otherwise it does nothing and imports nothing (OpenTelemetry's API is imported by the
``mcp`` SDK already, its SDK and exporter only here).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Generator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import cast

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, StatusCode

from mcpdeck._util.version import __version__

__all__ = [
    "TOOL_CALL_SPAN",
    "call_attributes",
    "exporting",
    "note_approval",
    "note_outcome",
    "set_replica",
    "tool_call_span",
    "trace_id_of",
    "tracing",
]

logger = logging.getLogger(__name__)

TOOL_CALL_SPAN = "mcpdeck.tool_call"
"""The name of the span around one tool call."""

call_attributes: ContextVar[Mapping[str, str] | None] = ContextVar("mcpdeck_call_attributes", default=None)
"""Span attributes of the calls a task makes for someone (set by the gateway: ``mcpdeck.profile``,
``mcpdeck.token``)."""

_tracer = trace.get_tracer("mcpdeck", __version__)  # a proxy until a provider is set, then that provider's
_replica: str | None = None


_NOT_THERE = object()
_PROVIDER_FROM_ENVIRONMENT = "OTEL_PYTHON_TRACER_PROVIDER" in os.environ  # the API loads it on first use


def tracing() -> bool:
    """Whether a program set an OpenTelemetry tracer provider (without one, every span is a no-op).

    Asked on every call. ``trace.get_tracer_provider()`` looks an environment variable up each time while no
    provider is set (a miss raises ``KeyError`` inside ``os.environ``: about 1.5 us); the API's own global
    says the same for nothing. It is read with ``getattr``: should the API rename it, the public way is used.
    """
    if not _PROVIDER_FROM_ENVIRONMENT and getattr(trace, "_TRACER_PROVIDER", _NOT_THERE) is None:
        return False
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def set_replica(name: str | None) -> None:
    """Name this process's replica on every span from now on (``mcpdeck.replica``)."""
    global _replica
    _replica = name


@contextmanager
def tool_call_span(name: str, server: str, tool: str) -> Generator[Span]:
    """The span of one call (``name`` the catalog's name, ``tool`` the server's), current while it runs.

    An exception (a failure, a refusal, a cancellation) is recorded on it and sets its status to error.
    """
    attributes: dict[str, str] = {
        "mcp.method.name": "tools/call",
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": tool,
        "mcpdeck.tool": tool,
        "mcpdeck.name": name,
    }
    if server:
        attributes["mcpdeck.server"] = server
    if _replica is not None:
        attributes["mcpdeck.replica"] = _replica
    if (extra := call_attributes.get()) is not None:
        attributes.update(extra)
    with _tracer.start_as_current_span(TOOL_CALL_SPAN, kind=SpanKind.INTERNAL, attributes=attributes) as span:
        yield span


def note_approval(span: Span, approved_by: str | None) -> None:
    """Who let the call through (or refused it); ``unchecked`` when no gate was asked."""
    span.set_attribute("mcpdeck.approval", approved_by or "unchecked")


def note_outcome(span: Span, *, is_error: bool, denied: bool = False) -> None:
    """A tool that answered with an error, or a refusal: the span's status is error (as the SDK marks its own)."""
    if denied:
        span.set_attribute("error.type", "denied")
        span.set_status(StatusCode.ERROR)
    elif is_error:
        span.set_attribute("error.type", "tool_error")
        span.set_status(StatusCode.ERROR)


def trace_id_of(span: Span) -> str | None:
    """The span's trace id as 32 hex digits (None for a span that records nothing)."""
    context = span.get_span_context()
    return f"{context.trace_id:032x}" if context.is_valid else None


def _export_from(environ: Mapping[str, str], replica: str | None) -> Callable[[], None] | None:
    """Set up the OTLP exporter as the environment asks; returns how to flush and stop it (None: not set up)."""
    if not (environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")):
        return None
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true" or tracing():
        return None  # turned off, or the program set up its own provider
    protocol = (
        environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or ""
    ).strip() or "http/protobuf"
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
    except ImportError:
        logger.warning(
            "OTEL_EXPORTER_OTLP_ENDPOINT is set but OpenTelemetry's SDK is not installed, so no spans are "
            "exported: install the extra (pip install 'mcpdeck[otel]')"
        )
        return None
    exporter: SpanExporter
    try:
        if protocol == "grpc":
            import importlib  # the gRPC exporter is not part of the extra: it brings grpcio

            grpc = importlib.import_module("opentelemetry.exporter.otlp.proto.grpc.trace_exporter")
            exporter = cast(SpanExporter, grpc.OTLPSpanExporter())
        elif protocol == "http/protobuf":
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            exporter = OTLPSpanExporter()
        else:
            logger.warning(
                "OTEL_EXPORTER_OTLP_PROTOCOL=%s is not one mcpdeck exports with: use http/protobuf or grpc", protocol
            )
            return None
    except ImportError:
        package = "opentelemetry-exporter-otlp-proto-" + ("grpc" if protocol == "grpc" else "http")
        logger.warning("no spans are exported: the %s exporter needs %s (pip install %s)", protocol, package, package)
        return None
    attributes = {"service.name": environ.get("OTEL_SERVICE_NAME") or "mcpdeck", "service.version": __version__}
    if replica is not None:
        attributes["service.instance.id"] = replica
    provider = TracerProvider(resource=Resource.create(attributes))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return provider.shutdown


@contextmanager
def exporting(*, replica: str | None = None, environ: Mapping[str, str] | None = None) -> Generator[bool]:
    """Export spans over OTLP while the block runs, when the environment asks for it (see the module);
    yields whether it does. At the end, the spans not yet sent are sent (bounded by the exporter's timeout)."""
    set_replica(replica)
    stop = _export_from(os.environ if environ is None else environ, replica)
    try:
        yield stop is not None
    finally:
        if stop is not None:
            stop()
