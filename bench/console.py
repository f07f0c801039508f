"""The console with 50 servers and 2000 tools, timed in Chromium against the goals of issue #12.

    python -m bench.console              # 3 rounds, each in a fresh page
    python -m bench.console --rounds 5

Each round loads the console of 50 in-process servers with 40 tools each (the scenario of
``tests/console/test_load.py``, which checks what the page shows) and measures, in the page:
the first render of the servers and of the tools, the worst filter keystroke, and a status
change from its event to the screen. The medians over the rounds are held against the goals:
first render under 1 s, a keystroke under 50 ms, a status change under 100 ms. Run it on a
machine that is doing nothing else: the figures are times, not ratios. Exit status 1 when a
goal is missed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright
from tests.console.conftest import CHROMIUM, CHROMIUM_ARGS, serve_in_process, sign_in
from tests.support.console_load import FIRST_RENDER, KEYSTROKE, STATUS, LoadFigures, fifty, measure

from bench.stats import median


def main() -> int:
    parser = argparse.ArgumentParser(description="The console with 50 servers and 2000 tools, timed in Chromium.")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rounds: list[LoadFigures] = []
    with tempfile.TemporaryDirectory() as tmp, serve_in_process(Path(tmp), fifty) as served, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        for number in range(args.rounds):
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            sign_in(page, served.url, served.token)
            figures = measure(page, served)
            page.close()
            print(f"round {number + 1}: {figures}")
            rounds.append(figures)
            served.call(served.host.reconnect, "srv07")  # measure() disconnected it
        browser.close()
    goals = [
        ("servers first render", [r.servers_render for r in rounds], FIRST_RENDER),
        ("tools first render", [r.tools_render for r in rounds], FIRST_RENDER),
        ("servers filter, worst keystroke", [r.servers_keystroke for r in rounds], KEYSTROKE),
        ("tools filter, worst keystroke", [r.tools_keystroke for r in rounds], KEYSTROKE),
        ("status change, event to screen", [r.status for r in rounds], STATUS),
    ]
    missed = 0
    print(f"\nmedians over {len(rounds)} rounds:")
    for label, values, goal in goals:
        value = median(values) or 0.0
        ok = value < goal
        missed += not ok
        print(f"  {label:34} {value:8.1f} ms  goal < {goal:.0f} ms  {'ok' if ok else 'MISSED'}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
