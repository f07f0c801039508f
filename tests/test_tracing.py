"""The OTLP exporter is set up only when the environment asks and the extra is there; otherwise nothing is
imported and nothing is said but one warning when the endpoint is set without the extra.

Each case runs in a fresh interpreter: a tracer provider, once set, is the process's for good."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.helpers import ROOT, WAIT

CHECK = """
import logging, sys
logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
{before}
from mcpdeck._observability.tracing import exporting, tracing
with exporting(environ={environ!r}, replica="r1") as on:
    print("exporting" if on else "not exporting", "tracing" if tracing() else "not tracing")
print("sdk imported" if "opentelemetry.sdk.trace" in sys.modules else "sdk not imported")
"""


def run(environ: dict[str, str], before: str = "") -> subprocess.CompletedProcess[str]:
    code = CHECK.format(environ=environ, before=before)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=WAIT, check=True
    )


@pytest.mark.parametrize(
    "environ",
    [{}, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", "OTEL_SDK_DISABLED": "true"}],
    ids=["no endpoint", "disabled"],
)
def test_without_an_endpoint_nothing_is_set_up_or_imported(environ: dict[str, str]) -> None:
    done = run(environ)
    assert done.stdout.split("\n")[:2] == ["not exporting not tracing", "sdk not imported"]
    assert done.stderr == ""


def test_with_an_endpoint_spans_are_exported() -> None:
    done = run({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:9/v1/traces"})
    assert done.stdout.split("\n")[:2] == ["exporting tracing", "sdk imported"]


def test_an_endpoint_without_the_extra_is_one_clear_warning_and_no_spans() -> None:
    missing = "sys.modules['opentelemetry.sdk'] = None  # as where mcpdeck[otel] is not installed"
    done = run({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}, before=missing)
    assert done.stdout.split("\n")[0] == "not exporting not tracing"
    assert "install the extra (pip install 'mcpdeck[otel]')" in done.stderr
    assert done.stderr.count("WARNING") == 1


def test_a_protocol_it_cannot_export_with_is_said() -> None:
    done = run({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"})
    assert done.stdout.split("\n")[0] == "not exporting not tracing"
    assert "use http/protobuf or grpc" in done.stderr


def test_grpc_without_its_exporter_says_which_package_to_install() -> None:
    missing = "sys.modules['opentelemetry.exporter.otlp.proto.grpc'] = None  # grpcio is not part of the extra"
    environ = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
    done = run(environ, before=missing)
    assert done.stdout.split("\n")[0] == "not exporting not tracing"
    assert "pip install opentelemetry-exporter-otlp-proto-grpc" in done.stderr
