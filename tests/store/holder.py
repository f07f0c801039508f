"""A process that opens a store and holds something in it until it is killed (``python -m tests.store.holder``).

``open URL``: open the store (running its migrations) and print its schema version.
``lock URL NAME``: take the non-blocking lock NAME, print ``held``, wait for ever.
``replica URL ID``: join the fleet as replica ID, start a call that never ends, print ``ready``, wait for ever.

Imports the standard library and ``mcpdeck.store`` only, so it starts fast.
"""

from __future__ import annotations

import sys
import threading

from mcpdeck.events import ToolCallStarted
from mcpdeck.store import History, Replica


def main(mode: str, url: str, *args: str) -> None:
    if mode == "open":
        with History(url) as history:
            print(history.schema_version, flush=True)
        return
    if mode == "lock":
        history = History(url)
        if not history.store.locks.try_lock(args[0]):
            print("taken", flush=True)
            return
        print("held", flush=True)
    elif mode == "replica":
        history = History(url, replica=args[0])
        Replica(history).join()
        history.call_started(
            ToolCallStarted(call_id=f"running-{args[0]}", name="mcp__s__t", server="s", tool="t", arguments={})
        )
        history.flush()
        print("ready", flush=True)
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    threading.Event().wait()  # until killed


if __name__ == "__main__":
    main(*sys.argv[1:])
