"""The benchmark harness still runs and still writes a well-formed report.

A smoke run with tiny counts, mcpdeck and the bare SDK only (no peer venvs needed). It
checks shape, never speed: timing thresholds belong to the benchmark, not the test suite.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from bench.__main__ import main
from bench.clients import BASELINE
from bench.harness import PROFILES, PROVIDERS, Harness
from bench.report import render, summarize, targets

METRICS = ["stdio-latency", "http-latency", "stdio-inflight", "connect-concurrent", "list", "payload-stdio", "memory"]
CLIENTS = ["mcpdeck", BASELINE]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    harness = Harness(PROFILES["smoke"], CLIENTS, [*METRICS, "tokens"], log_dir=tmp_path_factory.mktemp("bench"))
    results: dict[str, Any] = json.loads(json.dumps(harness.run()))  # what latest.json holds
    return results, render(results)


def test_the_command_lists_clients_metrics_and_profiles(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--list"]) == 0
    listing = capsys.readouterr().out
    assert "mcpdeck" in listing and "stdio-latency" in listing and "smoke" in listing


def test_every_metric_has_samples_for_mcpdeck_and_the_baseline(run: tuple[dict[str, Any], str]) -> None:
    results, _ = run
    assert list(results["clients"]) == [BASELINE, "mcpdeck"]
    for metric in METRICS:
        rows = results["metrics"][metric]["rows"]
        for client in CLIENTS:
            row = rows[client]
            assert row["status"] == "ok", (metric, client, row["note"])
            assert row["samples"], (metric, client)
            if results["metrics"][metric]["kind"] != "bytes":  # an RSS delta may be 0
                assert all(sample > 0 for sample in row["samples"]), (metric, client)


def test_results_reduce_to_medians_and_ratios(run: tuple[dict[str, Any], str]) -> None:
    results, _ = run
    summaries = summarize(results)
    for metric in METRICS:
        baseline = summaries[metric][BASELINE]
        assert baseline.ratio == pytest.approx(1.0)  # pyright: ignore[reportUnknownMemberType]
        mine = summaries[metric]["mcpdeck"]
        assert mine.median is not None and mine.p99 is not None
        assert mine.ratio is not None and mine.ratio > 0
        if results["metrics"][metric]["kind"] == "latency":
            assert mine.median <= mine.p99


def test_the_catalog_is_converted_to_every_provider_first_and_again(run: tuple[dict[str, Any], str]) -> None:
    results, report = run
    summaries = summarize(results)
    for mid in ("convert-first", "convert-again", "list-convert"):
        rows = results["metrics"][mid]["rows"]
        for provider in PROVIDERS:
            for client in CLIENTS:
                row = rows[f"{client} / {provider}"]
                assert row["status"] == "ok" and not row["note"], (mid, client, provider, row["note"])  # all tools
                assert row["samples"] and all(sample > 0 for sample in row["samples"]), (mid, client, provider)
            mine = summaries[mid][f"mcpdeck / {provider}"]
            assert mine.median is not None and mine.ratio is not None and mine.ratio > 0
        assert f"| mcpdeck / {PROVIDERS[-1]} |" in report
    # a conversion is against the SDK's of the same provider; list + convert against the SDK's listing alone
    assert results["metrics"]["convert-first"]["rows"]["mcpdeck / gemini"]["baseline_row"] == f"{BASELINE} / gemini"
    assert summaries["convert-first"][f"{BASELINE} / gemini"].ratio == pytest.approx(1.0)  # pyright: ignore[reportUnknownMemberType]
    listed = results["metrics"]["list-convert"]["rows"][BASELINE]
    assert listed["samples"] == results["metrics"]["list"]["rows"][BASELINE]["samples"]
    verdicts = {t.what: t.verdict for t in targets(results)}
    assert verdicts["list + convert 1000 tools"] in ("met", "MISSED")
    assert verdicts["convert an unchanged catalog again"] in ("met", "MISSED")


def test_the_pending_slots_are_marked(run: tuple[dict[str, Any], str]) -> None:
    results, _ = run
    assert results["metrics"]["tokens"]["rows"]["with tool search"]["status"] == "pending"
    verdicts = {t.what: t.verdict for t in targets(results)}
    assert verdicts["tool search tokens"] == "pending"
    assert set(verdicts.values()) <= {"met", "MISSED", "pending", "n/a"}


def test_the_report_has_the_targets_and_a_table_per_metric(run: tuple[dict[str, Any], str]) -> None:
    results, report = run
    assert report.startswith("# mcpdeck benchmark results")
    assert "## Targets (mcpdeck)" in report
    for metric in results["metrics"]:
        assert f"`{metric}`" in report
    assert "| mcpdeck |" in report


def test_peer_workers_import_nothing_outside_the_standard_library() -> None:
    # They run in venvs with another `mcp` (or none): the shared modules must stay stdlib-only.
    shared = ["bench/__init__.py", "bench/worker.py", "bench/clients/__init__.py", "bench/clients/base.py"]
    root = Path(__file__).resolve().parent.parent
    for path in shared:
        for line in (root / path).read_text().splitlines():
            if line.startswith(("import ", "from ")) and not line.startswith("from __future__"):
                module = line.split()[1].split(".")[0]
                assert module == "bench" or module in _STDLIB, (path, line)


_STDLIB = {"asyncio", "contextlib", "gc", "importlib", "json", "os", "sys", "time", "traceback", "abc",
           "collections", "dataclasses", "typing"}  # fmt: skip
