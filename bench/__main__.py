"""``python -m bench``: run the benchmark and write its report.

Examples::

    python -m bench --results bench/RESULTS.md             # everything (what bench/run does)
    python -m bench --clients mcpdeck --metrics stdio-latency,payload-stdio
    python -m bench --profile quick                          # fewer rounds and calls
    python -m bench --list                                   # clients, metrics, profiles
    python -m bench --render bench/.results/latest.json      # the tables of a past run

The baselines (``sdk-session``, and ``sdk-client`` for HTTP) are always run, so every
subset still has its ratios. Raw samples go to ``<out>/latest.json`` and the tables to
``<out>/latest.md`` (``bench/.results`` by default); ``--results`` also writes the tables there.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from bench.clients import BASELINE, BASELINE_HTTP, CLIENTS
from bench.harness import METRICS, PROFILES, Harness
from bench.report import render
from bench.venvs import peer

__all__ = ["main"]

DEFAULT_OUT = Path(__file__).resolve().parent / ".results"
PREFACE = (
    "Numbers from one run on one machine: compare ratios within the run, not absolute times across "
    "machines. A busy machine (see the load average) makes every number noisy."
)


def _split(value: str | None, known: list[str], what: str) -> list[str]:
    if not value:
        return list(known)
    chosen = [v.strip() for v in value.split(",") if v.strip()]
    unknown = [v for v in chosen if v not in known]
    if unknown:
        raise SystemExit(f"unknown {what}: {', '.join(unknown)}; known: {', '.join(known)}")
    return chosen


def _listing() -> str:
    lines = ["clients:"]
    for info in CLIENTS:
        where = "main .venv" if info.venv is None else f"bench/.venvs/{info.venv} ({_peer_state(info.venv)})"
        lines.append(f"  {info.name:18} {info.label} [{where}]")
    lines.append("metrics:")
    lines += [f"  {mid:20} {title}" for mid, title in METRICS.items()]
    lines.append("profiles: " + ", ".join(PROFILES))
    return "\n".join(lines)


def _peer_state(name: str) -> str:
    status = peer(name).status()
    return f"ready: {status.get('installed')}" if status.get("ok") else "not installed"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description="mcpdeck beside the bare SDK and its peers.")
    parser.add_argument("--profile", choices=list(PROFILES), default="full", help="how much to do (default: full)")
    parser.add_argument("--clients", help="comma-separated clients (default: all); baselines are always added")
    parser.add_argument("--metrics", help="comma-separated metrics (default: all)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder for latest.json, latest.md and logs")
    parser.add_argument("--results", type=Path, help="also write the Markdown tables to this file")
    parser.add_argument("--list", action="store_true", help="list clients, metrics and profiles, and exit")
    parser.add_argument("--render", type=Path, metavar="JSON", help="only render the tables of a results file")
    args = parser.parse_args(argv)
    if args.list:
        print(_listing())
        return 0
    if args.render is not None:
        report = render(json.loads(args.render.read_text()), preface=PREFACE)
        if args.results is not None:
            args.results.write_text(report)
        print(report)
        return 0
    clients = _split(args.clients, [c.name for c in CLIENTS], "clients")
    clients += [b for b in (BASELINE, BASELINE_HTTP) if b not in clients]
    metrics = _split(args.metrics, list(METRICS), "metrics")
    out: Path = args.out
    logs = out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    harness = Harness(PROFILES[args.profile], clients, metrics, log_dir=logs)
    results = harness.run()
    text = json.dumps(results, indent=1)
    (out / "latest.json").write_text(text)
    (out / f"run-{time.strftime('%Y%m%d-%H%M%S')}.json").write_text(text)
    report = render(results, preface=PREFACE)
    (out / "latest.md").write_text(report)
    if args.results is not None:
        args.results.write_text(report)
    print(report)
    print(f"bench: raw samples in {out / 'latest.json'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
