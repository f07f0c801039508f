"""Tables from a run's results: medians, p99, ratios against the baseline, and the targets.

``summarize`` reduces each row of raw samples to numbers; ``targets`` checks the issue's
targets for mcpdeck; ``render`` writes the Markdown of ``bench/RESULTS.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bench.harness import AFTER_SEARCH, SEARCH_RUN
from bench.stats import median, percentile, ratio

__all__ = ["Summary", "Target", "render", "summarize", "targets"]

SUBJECT = "mcpdeck"
HTTP_METRICS = (
    "http-latency",
    "http-latency-modern",
    "http-inflight",
    "http-inflight-modern",
    "http-inflight-default",
    "payload-http-sse",
    "payload-http-json",
)


@dataclass(frozen=True)
class Summary:
    """One client's numbers for one metric."""

    client: str
    status: str
    note: str
    n: int
    median: float | None
    p99: float | None
    ratio: float | None
    """Against the baseline (``sdk-session``), or the row's own ``baseline_row``."""
    ratio_http: float | None
    """Against ``sdk-client`` (HTTP metrics)."""
    cpu: float | None
    """Client CPU seconds per call (or per operation)."""
    cpu_delta: float | None
    """``cpu`` minus the baseline's."""
    server_cpu: float | None
    """Server CPU seconds per call, where known."""


def _summary(row: dict[str, Any], kind: str) -> tuple[int, float | None, float | None, float | None, float | None]:
    samples: list[float] = row["samples"]
    if kind == "rate":
        tail: list[float] = row["tail"]
        p99 = percentile(tail, 99)
    else:
        p99 = percentile(samples, 99)
    units = row["units"]
    cpu = row["cpu_s"] / units if units else None
    server = row["server_cpu_s"] / units if units and row["server_cpu_s"] is not None else None
    return len(samples), median(samples), p99, cpu, server


def _delta(value: float | None, baseline: float | None) -> float | None:
    return None if value is None or baseline is None else value - baseline


def summarize(results: dict[str, Any]) -> dict[str, dict[str, Summary]]:
    """Every metric's rows as numbers, ratios included."""
    baseline, baseline_http = results["baseline"], results["baseline_http"]
    out: dict[str, dict[str, Summary]] = {}
    for mid, metric in results["metrics"].items():
        rows: dict[str, dict[str, Any]] = metric["rows"]
        kind: str = metric["kind"]
        numbers = {name: _summary(row, kind) for name, row in rows.items()}
        base_http = numbers.get(baseline_http) if mid in HTTP_METRICS else None
        out[mid] = {}
        for name, row in rows.items():
            n, med, p99, cpu, server = numbers[name]
            ok = row["status"] == "ok"
            base_name: str = row.get("baseline_row") or baseline
            base = numbers.get(base_name)
            base_ok = base is not None and rows[base_name]["status"] == "ok"
            http_ok = base_http is not None and rows[baseline_http]["status"] == "ok"
            out[mid][name] = Summary(
                client=name,
                status=row["status"],
                note=row["note"],
                n=n,
                median=med if ok else None,
                p99=p99 if ok else None,
                ratio=ratio(med, base[1]) if ok and base_ok and base is not None else None,
                ratio_http=ratio(med, base_http[1]) if ok and http_ok and base_http is not None else None,
                cpu=cpu if ok else None,
                cpu_delta=_delta(cpu, base[3] if base is not None and base_ok else None) if ok else None,
                server_cpu=server if ok else None,
            )
    return out


@dataclass(frozen=True)
class Target:
    what: str
    goal: str
    measured: str
    verdict: str
    """``met``, ``MISSED``, ``pending`` or ``n/a`` (not measured in this run)."""


def _get(summaries: dict[str, dict[str, Summary]], mid: str, client: str = SUBJECT) -> Summary | None:
    summary = summaries.get(mid, {}).get(client)
    return summary if summary is not None and summary.status == "ok" and summary.median is not None else None


def _verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def _slowest_provider(summaries: dict[str, dict[str, Summary]], mid: str, what: str, goal: str) -> Target:
    """A conversion target, judged on mcpdeck's slowest provider (rows ``mcpdeck / <provider>``)."""
    rows = [r for name, r in summaries.get(mid, {}).items() if name.startswith(f"{SUBJECT} / ")]
    measured = [r for r in rows if r.status == "ok" and r.median is not None]
    if not measured or len(measured) < len(rows):
        return Target(what, goal, "not measured", "n/a")
    if mid == "list-convert":
        if any(r.ratio is None for r in measured):
            return Target(what, goal, "not measured", "n/a")
        worst = max(measured, key=lambda r: r.ratio or 0.0)
        value = worst.ratio or 0.0
        shown, ok = f"{value:.2f}x", value <= 1.0
    else:
        worst = max(measured, key=lambda r: r.median or 0.0)
        value = worst.median or 0.0
        shown, ok = _time(value), value < 1e-3
    provider = worst.client.partition(" / ")[2]
    return Target(what, goal, f"{shown} (slowest of {len(measured)} providers: {provider})", _verdict(ok))


def _best_other(summaries: dict[str, dict[str, Summary]], mid: str, what: str) -> Target:
    """mcpdeck's calls/s against the best of the other clients measured in the run (the floors aside)."""
    goal = "≥ 1x the best other client"
    own = _get(summaries, mid)
    others = [
        r
        for name, r in summaries.get(mid, {}).items()
        if name != SUBJECT and not name.startswith("floor") and r.status == "ok" and r.median is not None
    ]
    if own is None or own.median is None or not others:
        return Target(what, goal, "not measured", "n/a")
    best = max(others, key=lambda r: r.median or 0.0)
    value = own.median / (best.median or 1.0)
    return Target(what, goal, f"{value:.2f}x (best other: {best.client})", _verdict(value >= 1.0))


def targets(results: dict[str, Any]) -> list[Target]:
    """The issue's targets, checked for mcpdeck against this run's baselines."""
    s = summarize(results)
    found: list[Target] = []

    def ratio_target(what: str, mid: str, limit: float, *, http: bool = False, higher: bool = False) -> None:
        row = _get(s, mid)
        value = None if row is None else (row.ratio_http if http else row.ratio)
        base = results["baseline_http" if http else "baseline"]
        goal = f"{'≥' if higher else '≤'} {limit:g}x {base}"
        if value is None:
            found.append(Target(what, goal, "not measured", "n/a"))
        else:
            found.append(Target(what, goal, f"{value:.2f}x", _verdict(value >= limit if higher else value <= limit)))

    ratio_target("sequential latency, stdio", "stdio-latency", 1.05)
    row = _get(s, "stdio-latency")
    if row is None or row.cpu_delta is None:
        found.append(Target("client CPU per call, stdio", "≤ +30 µs vs sdk-session", "not measured", "n/a"))
    else:
        found.append(
            Target(
                "client CPU per call, stdio",
                "≤ +30 µs vs sdk-session",
                f"{row.cpu_delta * 1e6:+.0f} µs",
                _verdict(row.cpu_delta <= 30e-6),
            )
        )
    ratio_target("sequential latency, HTTP", "http-latency", 1.0, http=True)
    ratio_target("sequential latency, HTTP, 2026-07-28", "http-latency-modern", 1.0, http=True)
    ratio_target("32 in flight, stdio (calls/s)", "stdio-inflight", 1.0, higher=True)
    ratio_target("32 in flight, HTTP (calls/s)", "http-inflight", 1.0, higher=True)
    found.append(_best_other(s, "http-inflight", "32 in flight, HTTP (calls/s), against every client"))
    found.append(
        _best_other(s, "http-inflight-modern", "32 in flight, HTTP, 2026-07-28 (calls/s), against every client")
    )
    found.append(_best_other(s, "http-inflight-default", "32 in flight, HTTP, each client's own era (calls/s)"))
    ratio_target("connect + list, concurrent", "connect-concurrent", 1.1)
    concurrent, sequential = _get(s, "connect-concurrent"), _get(s, "connect-sequential")
    if concurrent is None or sequential is None or concurrent.median is None or sequential.median is None:
        found.append(Target("concurrent vs own sequential connect", "≤ 0.6x", "not measured", "n/a"))
    else:
        value = concurrent.median / sequential.median
        found.append(Target("concurrent vs own sequential connect", "≤ 0.6x", f"{value:.2f}x", _verdict(value <= 0.6)))
    ratio_target("connect + list a 1000-tool server", "list", 1.0)
    found.append(_slowest_provider(s, "list-convert", "list + convert 1000 tools", "≤ 1.0x sdk-session (list only)"))
    found.append(_slowest_provider(s, "convert-again", "convert an unchanged catalog again", "< 1 ms"))
    ratio_target("5 MB result, stdio", "payload-stdio", 0.5)
    ratio_target("memory per connected server", "memory", 1.1)
    ratio_target("memory per connected server, SDK server", "memory-sdk", 1.1)
    found.append(_tokens_target(s, results))
    return found


def _tokens_target(summaries: dict[str, dict[str, Summary]], results: dict[str, Any]) -> Target:
    """Tool search's request against the all-tools request, judged on the provider where it is largest."""
    what, goal = "tool search tokens", "≤ 5% of all-tools tokens"
    rows = summaries.get("tokens", {})
    after = {name.partition(" / ")[0]: r for name, r in rows.items() if name.endswith(f" / {AFTER_SEARCH}")}
    measured = {provider: r.ratio for provider, r in after.items() if r.status == "ok" and r.ratio is not None}
    if not measured or len(measured) < len(after):
        return Target(what, goal, "not measured", "n/a")
    provider = max(measured, key=lambda p: measured[p] or 0.0)
    value = measured[provider] or 0.0
    shown = f"{value:.2%} after one search (largest of {len(measured)} providers: {provider})"
    run = rows.get(f"{provider} / {SEARCH_RUN}")
    if run is not None and run.ratio is not None:
        shown += f"; {run.ratio:.2%} per request over a 3-request run"
    unit = results["metrics"].get("tokens", {}).get("unit_note", "")
    if unit:
        shown += f" ({unit})"
    return Target(what, goal, shown, _verdict(value <= 0.05))


# ----- rendering -----------------------------------------------------------------------------


def _time(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms" if seconds < 0.01 else f"{seconds * 1e3:.1f} ms"
    return f"{seconds:.2f} s"


def _bytes(value: float | None) -> str:
    if value is None:
        return "-"
    if abs(value) >= 1024 * 1024:
        return f"{value / 1024 / 1024:.2f} MiB"
    return f"{value / 1024:.0f} KiB"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _cpu_delta(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value * 1e6:+.0f} µs" if abs(value) < 1e-3 else f"{value * 1e3:+.2f} ms"


def _note(summary: Summary) -> str:
    text = summary.note.replace("|", "\\|").replace("\n", " ")
    if summary.status not in ("ok",):
        text = f"**{summary.status}**: {text}" if text else f"**{summary.status}**"
    return text


def _table(mid: str, metric: dict[str, Any], rows: dict[str, Summary], results: dict[str, Any]) -> list[str]:
    kind = metric["kind"]
    http = mid in HTTP_METRICS
    baseline = results["baseline"]
    lines: list[str] = []
    if mid == "tokens":
        return _tokens_table(metric, rows)
    if kind == "rate":
        head = f"| client | rounds | calls/s (median) | p99 call latency | x {baseline} |"
        head += f" x {results['baseline_http']} |" if http else ""
        head += " client CPU/call | Δ CPU/call | notes |"
        lines += [head, "|---|---:|---:|---:|---:|" + ("---:|" if http else "") + "---:|---:|---|"]
        for name, s in rows.items():
            med = "-" if s.median is None else f"{s.median:,.0f}"
            line = f"| {name} | {s.n} | {med} | {_time(s.p99)} | {_ratio(s.ratio)} |"
            line += f" {_ratio(s.ratio_http)} |" if http else ""
            line += f" {_time(s.cpu)} | {_cpu_delta(s.cpu_delta)} | {_note(s)} |"
            lines.append(line)
        return lines
    if kind == "bytes":
        lines += [f"| client | n | median | max | x {baseline} | notes |", "|---|---:|---:|---:|---:|---|"]
        for name, s in rows.items():
            lines.append(f"| {name} | {s.n} | {_bytes(s.median)} | {_bytes(s.p99)} | {_ratio(s.ratio)} | {_note(s)} |")
        return lines
    per = "call" if mid.endswith("latency") or mid.startswith("payload") else "op"
    server = any(s.server_cpu is not None for s in rows.values())
    head = f"| client | n | median | p99 | x {baseline} |" + (f" x {results['baseline_http']} |" if http else "")
    head += f" client CPU/{per} | Δ CPU/{per} |" + (f" server CPU/{per} |" if server else "") + " notes |"
    align = (
        "|---|---:|---:|---:|---:|" + ("---:|" if http else "") + "---:|---:|" + ("---:|" if server else "") + "---|"
    )
    lines += [head, align]
    for name, s in rows.items():
        line = f"| {name} | {s.n} | {_time(s.median)} | {_time(s.p99)} | {_ratio(s.ratio)} |"
        line += f" {_ratio(s.ratio_http)} |" if http else ""
        line += f" {_time(s.cpu)} | {_cpu_delta(s.cpu_delta)} |"
        line += f" {_time(s.server_cpu)} |" if server else ""
        line += f" {_note(s)} |"
        lines.append(line)
    return lines


def _tokens_table(metric: dict[str, Any], rows: dict[str, Summary]) -> list[str]:
    """Rows ``<provider> / <request>``: tools, tokens, bytes and estimate per request; share of all tools."""
    lines = [
        "| provider | request | tools | tokens | bytes | characters / 4 | of all tools | notes |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]

    def number(values: list[float] | None, ok: bool, *, tenths: bool = False) -> str:
        value = median(values or []) if ok else None
        if value is None:
            return "-"
        return f"{value:,.1f}" if tenths and value != round(value) else f"{value:,.0f}"

    for name, s in rows.items():
        provider, _, request = name.partition(" / ")
        if not request:
            provider, request = "-", name
        extra: dict[str, list[float]] = metric["rows"][name]["extra"]
        ok = s.status == "ok"
        share = "-" if s.ratio is None else f"{s.ratio:.2%}"
        cells = [number(extra.get("tools"), ok, tenths=True), number(extra.get("bytes"), ok)]
        cells.append(number(extra.get("estimate"), ok))
        tokens = number([s.median] if s.median is not None else None, ok)
        lines.append(
            f"| {provider} | {request} | {cells[0]} | {tokens} | {cells[1]} | {cells[2]} | {share} | {_note(s)} |"
        )
    return lines


def render(results: dict[str, Any], *, preface: str = "") -> str:
    """The Markdown report of one run."""
    machine = results["machine"]
    load = ", ".join(f"{x:.2f}" for x in machine["load_average"])
    load_end = ", ".join(f"{x:.2f}" for x in machine.get("load_average_end", machine["load_average"]))
    out = ["# mcpdeck benchmark results", ""]
    if preface:
        out += [preface.strip(), ""]
    busiest = max(machine["load_average"][0], machine.get("load_average_end", machine["load_average"])[0])
    if busiest > 0.5 * (machine["cores"] or 1):
        out += [
            f"**Noisy run:** the machine was busy (1-minute load average up to {busiest:.1f} on "
            f"{machine['cores']} cores), so these numbers are noisy; measure again on a quiet machine.",
            "",
        ]
    out += [
        f"Run {results['started']}, profile `{results['profile']['name']}`, {results['seconds']:g} s. "
        f"Ratios are against `{results['baseline']}` measured in the same run (HTTP also against "
        f"`{results['baseline_http']}`); below 1x is faster (or smaller), except for calls/s. p99 is the "
        "nearest-rank 99th percentile of all samples; CPU is `time.process_time()` of the client's process.",
        "",
        f"Machine: {machine['cpu']}, {machine['cores']} cores, {machine['memory']}, {machine['system']}, "
        f"Python {machine['python']}, node {machine['node']}. Load average at start: {load}; at end: {load_end}.",
        "",
        "## Targets (mcpdeck)",
        "",
        "| target | goal | measured | verdict |",
        "|---|---|---|---|",
    ]
    out += [f"| {t.what} | {t.goal} | {t.measured} | {t.verdict} |" for t in targets(results)]
    out += ["", "## Clients", "", "| client | what | versions | status | environment |", "|---|---|---|---|---|"]
    for name, client in results["clients"].items():
        versions = ", ".join(f"{k} {v}" for k, v in client["versions"].items() if k != "python") or "-"
        status = client["status"] if not client["note"] else f"{client['status']}: {client['note']}"
        install = client.get("install", "")
        out.append(f"| {name} | {client['label']} | {versions} | {status.replace('|', '/')} | {install} |")
    summaries = summarize(results)
    for mid, metric in results["metrics"].items():
        unit = f" ({metric['unit_note']})" if metric["unit_note"] else ""
        out += ["", f"## {metric['title']}{unit}", "", f"`{mid}`", ""]
        out += _table(mid, metric, summaries[mid], results)
        for note in metric["notes"]:
            out += ["", note]
    return "\n".join(out) + "\n"
