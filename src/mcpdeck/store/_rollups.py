"""Each replica's tool calls a minute at a time, by server, in the store: what the console's Metrics page shows
for every replica of a fleet.

A replica keeps its minutes in memory (``mcpdeck._observability.call_metrics``) and writes the ones that changed now and
then (``StoredMinutes.save``); each process writes rows of its own (``life``), whole, so writing one again
is harmless and no replica ever adds to another's counts. ``StoredMinutes.load`` reads every replica's rows
since a minute; rows older than ``KEEP`` seconds are deleted as new ones are written.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

from mcpdeck._observability.metrics import MinuteCounts
from mcpdeck.store._db import Database
from mcpdeck.store._history import History

__all__ = ["KEEP", "StoredMinutes"]

KEEP = 2 * 3600
"""Seconds of minutes kept in the store (the page shows the last hour)."""
_UPSERT = (
    "INSERT INTO call_minutes (replica, life, server, minute, calls, errors, durations) VALUES (?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (replica, life, server, minute) DO UPDATE SET calls = excluded.calls, errors = excluded.errors,"
    " durations = excluded.durations"
)


class StoredMinutes:
    """The ``call_minutes`` of ``history``'s store: ``CallMetrics(shared=StoredMinutes(history))``."""

    def __init__(self, history: History):
        self.history = history

    def save(self, rows: Sequence[MinuteCounts]) -> None:
        """Queue ``rows`` (whole: each replaces its earlier self) and the deletion of minutes older than ``KEEP``;
        returns at once."""
        if not rows:
            return
        values = [
            (row.replica, row.life, row.server, row.minute, row.calls, row.errors, json.dumps(row.durations))
            for row in rows
        ]
        cutoff = int(time.time()) - KEEP

        def save(db: Database) -> None:
            db.run_many(_UPSERT, values)
            db.run("DELETE FROM call_minutes WHERE minute < ?", (cutoff,))

        self.history.store.writer.submit(save)

    def load(self, since: int) -> list[MinuteCounts]:
        """Every replica's rows from the minute ``since`` on, after every save queued before (blocks)."""

        def load(db: Database) -> list[MinuteCounts]:
            found = db.rows(
                "SELECT replica, life, server, minute, calls, errors, durations FROM call_minutes WHERE minute >= ?",
                (since,),
            )
            return [
                MinuteCounts(str(r[0]), str(r[1]), str(r[2]), int(r[3]), int(r[4]), int(r[5]), tuple(json.loads(r[6])))
                for r in found
            ]

        return self.history.store.writer.call(load)
