"""What mcpdeck tells an operator about itself: ``metrics`` (Prometheus histograms and their text
format, the store-commit histogram), ``call_metrics`` (``CallMetrics``: a host's tool calls counted from
their events, for ``/metrics`` and the console's Metrics page), ``tracing`` (OpenTelemetry spans and the
OTLP exporter). A private package with plain module names inside, like ``mcpdeck._util``; this file
imports nothing, so the store's commit timer does not load OpenTelemetry. See docs/observability.md."""
