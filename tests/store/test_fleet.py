"""Replicas on one store, on both databases: the lock a dead holder never keeps, the reaper of a dead
replica's running calls, an id taken twice, an old file upgraded in place."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path

import pytest

from mcpdeck.errors import ConfigError
from mcpdeck.store import SCHEMA_VERSION, History, Replica, parse_location
from tests.helpers import ROOT, WAIT


@contextmanager
def holder(*args: str) -> Generator[subprocess.Popen[str]]:
    """``python -m tests.store.holder ARGS``, once it said it holds what it was asked to; killed at the end."""
    command = [sys.executable, "-m", "tests.store.holder", *args]
    with subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True) as process:
        try:
            assert process.stdout is not None
            line = process.stdout.readline().strip()  # the holder says so once it holds (or dies: EOF)
            assert line in ("held", "ready"), line
            yield process
        finally:
            process.kill()
            process.wait(WAIT)


def taken_at_once(history: History, name: str) -> bool:
    """Whether ``name`` can be taken now; on PostgreSQL the server drops a dead client's session when it notices
    the closed socket, a moment after the process died, so it is tried again for at most ``WAIT`` seconds."""
    deadline = time.monotonic() + WAIT
    while not history.store.locks.try_lock(name):
        if history.location.kind == "sqlite" or time.monotonic() > deadline:
            return False
        time.sleep(0.02)  # a bounded wait for the server to see the connection gone, not a guess at a time
    return True


def test_a_lock_whose_holder_was_killed_is_taken_at_once(store_url: str) -> None:
    with History(store_url) as history:
        with holder("lock", store_url, "reaper") as process:
            assert not history.store.locks.try_lock("reaper")  # held: refused at once, never waited for
            process.kill()
            process.wait(WAIT)
        assert taken_at_once(history, "reaper")
        history.store.locks.release("reaper")


def test_a_dead_replicas_running_calls_are_marked_interrupted_by_a_survivor(store_url: str) -> None:
    with History(store_url, replica="alive") as history:
        survivor = Replica(history)
        survivor.join()
        with holder("replica", store_url, "doomed") as process:
            assert survivor.reap() == {}  # its lock is held: it is alive
            assert history.tool_calls(status="running")[0].replica == "doomed"
            process.kill()
            process.wait(WAIT)
        deadline = time.monotonic() + WAIT
        while not (marked := survivor.reap()) and time.monotonic() < deadline:
            time.sleep(0.02)  # PostgreSQL: until the server has dropped the dead session's lock
        assert marked == {"doomed": 1}
        (call,) = history.tool_calls()
        assert (call.status, call.replica) == ("interrupted", "doomed")
        assert call.error == "its replica doomed stopped while the call ran (found by alive)"
        rows = history.store.writer.call(lambda db: db.rows("SELECT id FROM replicas"))
        assert rows == [("alive",)]
        survivor.leave()


def test_a_replica_id_held_by_a_running_process_is_refused_and_a_restart_marks_its_leftovers(store_url: str) -> None:
    with holder("replica", store_url, "r1") as process:
        with History(store_url, replica="r1") as twin, pytest.raises(ConfigError, match="the replica id 'r1' is taken"):
            Replica(twin).join()
        process.kill()
        process.wait(WAIT)
    with History(store_url, replica="r1") as again:
        replica = Replica(again)
        deadline = time.monotonic() + WAIT
        while True:  # PostgreSQL: until the server has dropped the dead session's lock
            try:
                replica.join()
                break
            except ConfigError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.02)
        (call,) = again.tool_calls()
        assert call.status == "interrupted" and "found when it started again" in (call.error or "")
        replica.leave()


def test_a_replica_that_stopped_beating_is_reaped_even_with_its_lock_held(store_url: str) -> None:
    with History(store_url, replica="alive") as history, holder("replica", store_url, "hung"):
        survivor = Replica(history, stale_after=0.0)  # every other heartbeat is too old
        assert survivor.reap() == {"hung": 1}


def test_a_history_file_of_an_older_mcpdeck_is_upgraded_in_place(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite3"
    old = sqlite3.connect(path)  # the schema mcpdeck wrote before the store (user_version 3)
    old.executescript(
        """
        CREATE TABLE tool_calls (id INTEGER PRIMARY KEY, call_id TEXT NOT NULL UNIQUE, started_at TEXT NOT NULL,
            server TEXT NOT NULL, tool TEXT NOT NULL, name TEXT NOT NULL, arguments TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'running', error TEXT, result_size INTEGER, duration REAL,
            approved_by TEXT, conversation_id INTEGER REFERENCES conversations(id));
        CREATE INDEX tool_calls_started ON tool_calls(started_at);
        CREATE INDEX tool_calls_server ON tool_calls(server, started_at);
        CREATE TABLE conversations (id INTEGER PRIMARY KEY, started_at TEXT NOT NULL, model TEXT, title TEXT);
        CREATE TABLE messages (id INTEGER PRIMARY KEY,
            conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
            at TEXT NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL);
        CREATE INDEX messages_conversation ON messages(conversation_id, id);
        ALTER TABLE conversations ADD COLUMN key TEXT;
        CREATE UNIQUE INDEX conversations_key ON conversations(key);
        ALTER TABLE tool_calls ADD COLUMN caller TEXT;
        INSERT INTO tool_calls (call_id, started_at, server, tool, name, arguments, status, caller)
            VALUES ('old', '2026-11-01T10:00:00+00:00', 'fs', 'read', 'mcp__fs__read', '{}', 'ok', 'claude');
        PRAGMA user_version = 3;
        """
    )
    old.close()
    with History(path, replica="r1") as history:
        assert history.schema_version == SCHEMA_VERSION
        (call,) = history.tool_calls()
        assert (call.call_id, call.caller, call.replica, call.status) == ("old", "claude", None, "ok")
        Replica(history).join()  # the fleet's tables are there


def test_store_locations_that_cannot_be_used_say_what_works() -> None:
    assert parse_location("sqlite:////tmp/h.db").path == Path("/tmp/h.db")
    assert parse_location("sqlite:///h.db").path == Path("h.db")
    assert parse_location("sqlite:///h.db?synchronous=full").synchronous == "full"
    assert parse_location("postgres://u:secret@db:5432/x").shown == "postgres://u:****@db:5432/x"
    assert parse_location("~/h.db").path == Path("~/h.db").expanduser()
    for bad, said in (
        ("mysql://u@h/db", "scheme 'mysql' is not one mcpdeck knows"),
        ("postgresql://u@h:5432", "names no database"),
        ("postgresql://u@h:port/db", "port that is not a number"),
        ("sqlite://host/x.db", "a SQLite URL has no host"),
        ("sqlite:///x.db?mode=ro", "the only setting a SQLite store takes is synchronous"),
        ("", "the store is empty"),
    ):
        with pytest.raises(ConfigError, match=said):
            parse_location(bad)
