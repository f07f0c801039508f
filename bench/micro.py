"""Small costs inside one process, which unit tests once asserted as times and now only assert as behaviour.

    python -m bench.micro                      # both, printed as Markdown tables

- **A look at the config file** (``ConfigStore.document()``): what the follower of ``mcpdeck serve``
  pays per interval while the file does not change, one ``stat`` (goal: microseconds, far below its
  interval). ``tests/server/test_follow.py`` checks that such a look does not read the file.
- **JSONC stripping of hostile text** (``mcpdeck.config._json.strip_jsonc``): each input of
  ``tests/config/test_importers.py`` at 1x, 4x and 16x the size it had there before it became 4x.
  The test bounds each at 15 s, where the quadratic stripping it replaced took minutes.

(The history's cost per call, now a durable commit, is measured by ``python -m bench.store``.)
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.stats import median

HOSTILE: dict[str, Callable[[int], str]] = {
    "unterminated /*": lambda n: "/* " * 10_000 * n,
    "/*x": lambda n: "/*x" * 50_000 * n,
    "/*/": lambda n: "/*/" * 20_000 * n,
    "/**": lambda n: "/**" * 20_000 * n,
    "one string of escapes": lambda n: '"' + '\\"' * 50_000 * n,
    "strings cut at line ends": lambda n: '"\n' * 20_000 * n,
    "commas never trailing": lambda n: ", " * 50_000 * n + "x",
    "slashes": lambda n: "/ " * 50_000 * n,
    "an array": lambda n: "[" + "1," * 50_000 * n + "]",
}
"""The inputs of ``tests/config/test_importers.py`` (by the size it had before it became 4x)."""


def _us(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e6:,.1f} µs" if seconds < 1e-3 else f"{seconds * 1e3:,.2f} ms"


def look(rounds: int) -> str:
    """A look at an unchanged config file: the store's ``document()``, timed over ``rounds`` looks, 5 times."""
    from mcpdeck.config import ConfigStore

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "mcp.json"
        path.write_text("{}")
        store = ConfigStore(path)
        store.document()
        runs: list[float] = []
        for _ in range(5):
            began = time.perf_counter()
            for _ in range(rounds):
                store.document()
            runs.append((time.perf_counter() - began) / rounds)
    return (
        "| what | looks per run | per look (median of 5 runs) | fastest run |\n|---|---:|---:|---:|\n"
        f"| `ConfigStore.document()` of an unchanged `mcp.json` (one `stat`) | {rounds:,} "
        f"| {_us(median(runs))} | {_us(min(runs))} |\n"
    )


def jsonc() -> str:
    """``strip_jsonc`` on each hostile input at 1x, 4x and 16x (best of 3): linear time makes 16x about 4 times 4x
    (from 1x to 4x the text outgrows the CPU's caches on the test machine: 2-3 times more per character)."""
    from mcpdeck.config._json import strip_jsonc

    rows = ["| input | chars (1x) | 1x | 4x | 16x | 16x / 4x |", "|---|---:|---:|---:|---:|---:|"]
    for name, make in HOSTILE.items():
        times: list[float] = []
        for size in (1, 4, 16):
            text = '{"servers": {}}\n' + make(size)
            best = float("inf")
            for _ in range(3):
                began = time.perf_counter()
                strip_jsonc(text)
                best = min(best, time.perf_counter() - began)
            times.append(best)
        shown = " | ".join(_us(t) for t in times)
        rows.append(f"| {name} | {len(make(1)):,} | {shown} | {times[2] / times[1]:.1f}x |")
    return "\n".join(rows) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.micro", description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--looks", type=int, default=20_000, help="looks per run of the follower case")
    args = parser.parse_args()
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"# bench.micro, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average {load}\n")
    print("## A look at an unchanged config file\n\n" + look(args.looks))
    print("## JSONC stripping of hostile input\n\n" + jsonc())


if __name__ == "__main__":
    main()
