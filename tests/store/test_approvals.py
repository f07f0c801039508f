"""Gateway clients' session approvals in the store, on both databases: what one replica records another finds for
the same client (token, profile and name) and for no other; a session that ends takes its rows; a dead replica's
rows (and a stopping one's leftovers) are orphaned, still found for a while, then dropped."""

from __future__ import annotations

import time

import anyio
import pytest

from mcpdeck.permissions import ClientKey
from mcpdeck.store import History, Replica, SessionApprovals
from mcpdeck.store._history import now
from tests.helpers import WAIT

pytestmark = pytest.mark.anyio

ALICE = ClientKey(token="laptop", profile="", client="alice 1.0")
TOOL = "mcp__fs__write_file"


def _rows(history: History) -> list[tuple[str, str, str | None]]:
    return history.store.writer.call(
        lambda db: db.rows("SELECT session, replica, orphaned_at FROM approvals ORDER BY session")
    )


async def test_an_approval_given_on_one_replica_holds_on_another_for_that_client_only(store_url: str) -> None:
    with History(store_url, replica="a") as on_a, History(store_url, replica="b") as on_b:
        a, b = SessionApprovals(on_a.store, "a"), SessionApprovals(on_b.store, "b")
        with anyio.fail_after(WAIT):
            assert not await b.holds(ALICE, TOOL, "s-b")
            await a.give(ALICE, TOOL, "s-a")
            assert await b.holds(ALICE, TOOL, "s-b")  # the same client, another session, another replica
            others = [
                ClientKey("laptop", "", "mallory 1.0"),  # another client under the same token
                ClientKey("ci", "", "alice 1.0"),  # the same name under another token
                ClientKey("laptop", "coding", "alice 1.0"),  # another profile
            ]
            assert [await b.holds(other, TOOL, "s-x") for other in others] == [False, False, False]
            assert not await b.holds(ALICE, "mcp__fs__delete_file", "s-b")  # another tool
        # B's session keeps a row of its own: it holds the approval once A's session has ended
        assert [(session, replica) for session, replica, _ in _rows(on_b)] == [("s-a", "a"), ("s-b", "b")]
        with anyio.fail_after(WAIT):
            await a.end("s-a")
            assert await b.holds(ALICE, TOOL, "s-c")
            await b.end("s-b")
            await b.end("s-c")
            assert not await a.holds(ALICE, TOOL, "s-d")  # every session that held it ended
        assert _rows(on_a) == []


async def test_a_client_whose_name_holds_nul_or_a_lone_surrogate_keeps_its_approvals(store_url: str) -> None:
    """A client's name is what its ``clientInfo`` said: a NUL (which PostgreSQL's text cannot hold) or a lone
    surrogate (which no encoding takes) in it made its approval's row fail, and the lookup raise."""
    with History(store_url, replica="a") as on_a, History(store_url, replica="b") as on_b:
        a, b = SessionApprovals(on_a.store, "a"), SessionApprovals(on_b.store, "b")
        for n, name in enumerate(("nul\x00 1.0", "surrogate\ud800 1.0")):
            odd = ClientKey(token="laptop", profile="", client=name)
            with anyio.fail_after(WAIT):
                assert not await b.holds(odd, TOOL, f"s-b{n}")
                await a.give(odd, TOOL, f"s-a{n}")
                assert await b.holds(odd, TOOL, f"s-b{n}")
        assert len(_rows(on_a)) == 4


async def test_a_dead_replica_s_approvals_are_kept_for_its_clients_then_dropped(store_url: str) -> None:
    with History(store_url, replica="alive") as history, History(store_url, replica="doomed") as doomed:
        survivor = Replica(history, orphaned_for=3600)
        survivor.join()
        at = now()  # a row and no lock: a replica whose process is gone
        doomed.store.writer.call(
            lambda db: db.run(
                "INSERT INTO replicas (id, pid, host, started_at, last_seen) VALUES ('doomed', 1, 'h', ?, ?)", (at, at)
            ),
            write=True,
        )
        with anyio.fail_after(WAIT):
            await SessionApprovals(doomed.store, "doomed").give(ALICE, TOOL, "s-doomed")
        assert survivor.reap() == {"doomed": 0}
        ((session, replica, orphaned),) = _rows(history)
        assert (session, replica) == ("s-doomed", "doomed") and orphaned is not None
        alive = SessionApprovals(history.store, "alive")
        with anyio.fail_after(WAIT):
            assert await alive.holds(ALICE, TOOL, "s-back")  # its client came back to this replica
        survivor.orphaned_for = 0
        deadline = time.monotonic() + WAIT
        while len(_rows(history)) > 1 and time.monotonic() < deadline:
            survivor.reap()  # the orphan is older than 0 s from the next reap on
        assert [(session, replica) for session, replica, _ in _rows(history)] == [("s-back", "alive")]
        survivor.leave()  # a replica that stops orphans what its sessions left (they end before it, as a rule)
        ((_, _, orphaned),) = _rows(history)
        assert orphaned is not None
