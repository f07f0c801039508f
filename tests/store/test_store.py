"""The store on both databases: one schema, migrations under a lock, the history's records, group commits
without a linger, a call that returns only once its record is committed. Every test runs on SQLite and on a
real PostgreSQL 15 (``store_url``)."""

from __future__ import annotations

import dataclasses
import logging
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import psycopg
import pytest
from mcp import types

from mcpdeck import Host
from mcpdeck._observability.metrics import store_commits
from mcpdeck.errors import ConfigError, ServerTimeoutError
from mcpdeck.events import ToolCallFinished, ToolCallStarted
from mcpdeck.history import SCHEMA_VERSION, History, Redactor
from mcpdeck.results import ToolResult
from mcpdeck.store import _history as history_module
from mcpdeck.store import parse_location
from mcpdeck.store._db import Database, PostgresDatabase
from tests.helpers import ROOT, WAIT, closed_port
from tests.postgres import Postgres
from tests.servers import basic

pytestmark = pytest.mark.anyio


def started(n: int, conversation: str | None = None, *, at: datetime | None = None) -> ToolCallStarted:
    event = ToolCallStarted(
        call_id=f"c{n}",
        name="mcp__s__t",
        server="s" if n % 2 else "other",
        tool="t",
        arguments={"n": n},
        conversation=conversation,
    )
    return event if at is None else dataclasses.replace(event, at=at)


def finished(n: int) -> ToolCallFinished:
    server = "s" if n % 2 else "other"
    return ToolCallFinished(call_id=f"c{n}", name="mcp__s__t", server=server, tool="t", duration=0.1, is_error=False)


class Held:
    """The writer thread held up by a job that waits for ``release`` (what a slow commit looks like)."""

    def __init__(self, history: History):
        self.running = threading.Event()
        self.gate = threading.Event()

        def hold(_db: Database) -> None:
            self.running.set()
            self.gate.wait(WAIT)

        history.store.writer.submit(hold)
        assert self.running.wait(WAIT)

    def release(self) -> None:
        self.gate.set()


def test_a_new_store_gets_the_schema_and_reopens_without_migrating(store_url: str) -> None:
    with History(store_url, replica="r1") as history:
        assert history.schema_version == SCHEMA_VERSION
        conversation = history.start_conversation(model="openai:gpt-4.1", title="first")
        history.add_message(conversation, "user", {"text": "hello"})
    with History(store_url) as again:
        assert again.schema_version == SCHEMA_VERSION
        (listed,) = again.conversations()
        assert (listed["messages"], listed["replica"]) == (1, "r1")
        assert [m["content"] for m in again.messages(conversation)] == [{"text": "hello"}]
        assert again.messages(2**70) == []


def test_three_processes_opening_a_new_store_at_once_migrate_it_once(store_url: str) -> None:
    command = [sys.executable, "-m", "tests.store.holder", "open", store_url]
    processes = [subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(3)]
    outputs = [process.communicate(timeout=WAIT * 2) for process in processes]
    assert [process.returncode for process in processes] == [0, 0, 0], [err.decode() for _, err in outputs]
    assert [out.decode().strip() for out, _ in outputs] == [str(SCHEMA_VERSION)] * 3


def test_a_store_from_a_newer_mcpdeck_is_refused_not_misread(store_url: str) -> None:
    History(store_url).close()
    location = parse_location(store_url)
    if location.path is not None:
        import sqlite3

        db = sqlite3.connect(location.path)
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
        db.close()
    else:
        with psycopg.connect(store_url, autocommit=True) as db:
            db.execute("UPDATE mcpdeck_schema SET version = %s", (SCHEMA_VERSION + 1,))
    with pytest.raises(ConfigError, match="newer than this mcpdeck knows"):
        History(store_url)


async def test_every_call_of_a_real_host_is_recorded_with_its_outcome_and_replica(store_url: str) -> None:
    with History(store_url, redactor=Redactor({"top-secret-value"}), replica="r1") as history:
        async with Host({"basic": basic.build_server()}, log_dir=Path("/nonexistent"), history=history) as host:
            with anyio.fail_after(10):
                await host.call_tool("mcp__basic__echo", {"text": "hi top-secret-value"})
                await host.call_tool("mcp__basic__fail", {"message": "no"})
                with pytest.raises(ServerTimeoutError):
                    await host.call_tool("mcp__basic__sleep", {"seconds": 1}, timeout=0.05)
        calls = await anyio.to_thread.run_sync(history.tool_calls)
        assert [c.tool for c in calls] == ["sleep", "fail", "echo"]
        sleep, fail, echo = calls
        assert (echo.status, echo.server, echo.replica, echo.trace_id) == ("ok", "basic", "r1", None)
        assert echo.arguments == {"text": "hi ****"}
        assert echo.result_size == len("hi top-secret-value") and echo.duration is not None
        assert fail.status == "tool-error" and fail.error is None
        assert sleep.status == "error" and sleep.error is not None and "did not answer" in sleep.error
        assert history.tool_calls(server="nope") == [] and history.tool_calls(replica="r2") == []
        assert [c.tool for c in history.tool_calls(text="ECH")] == ["echo"]
        assert set(echo.to_json()) >= {"callId", "startedAt", "status", "resultSize", "approvedBy", "replica"}


def test_a_call_whose_texts_hold_nul_or_a_lone_surrogate_is_kept_with_it_replaced_on_both_stores(
    store_url: str,
) -> None:
    """PostgreSQL's text cannot hold NUL (U+0000), which a server may send in a result or an error and a client in
    its name, and no encoding takes a lone surrogate, which a client's JSON arguments may carry (``\\ud800``): the
    history keeps such a call, either replaced with U+FFFD, on both stores alike, rather than lose its row and the
    rows inserted with it."""
    result = ToolResult(
        name="mcp__s__t",
        server="s",
        tool="t",
        content=[types.TextContent(type="text", text="binary\x00junk")],
        structured_content=None,
        is_error=False,
    )
    with History(store_url) as history:
        history.call_started(started(1))
        history.call_finished(dataclasses.replace(finished(1), result=result))
        history.call_started(started(3))
        history.call_finished(dataclasses.replace(finished(3), is_error=True, error="bad\x00byte"))
        held = Held(history)  # a client named with NUL (its clientInfo), and a call written in the same insert
        history.call_started(dataclasses.replace(started(5), caller="evil\x00client 1.0", tool="t\x00", name="n\x00"))
        history.call_started(dataclasses.replace(started(7), arguments={"text": "lone \ud800 surrogate"}))
        held.release()
        kept, failed = history.tool_call("c1"), history.tool_call("c3")
        named, beside = history.tool_call("c5"), history.tool_call("c7")
    assert kept is not None and kept.status == "ok" and kept.result == "binary\ufffdjunk"
    assert failed is not None and failed.status == "error" and failed.error == "bad\ufffdbyte"
    assert named is not None and (named.caller, named.tool, named.name) == (
        "evil\ufffdclient 1.0",
        "t\ufffd",
        "n\ufffd",
    )
    assert beside is not None and beside.arguments == {"text": "lone \ufffd surrogate"}  # (no encoding takes it)


def test_a_call_s_trace_id_is_kept_and_read_back(store_url: str) -> None:
    trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    with History(store_url) as history:
        for n, trace_id in ((1, trace), (2, None)):
            history.call_started(dataclasses.replace(started(n), trace_id=trace_id))
            history.call_finished(finished(n))
        assert {c.call_id: c.trace_id for c in history.tool_calls()} == {"c1": trace, "c2": None}
        one = history.tool_call("c1")
        assert one is not None and one.trace_id == trace and one.to_json()["traceId"] == trace
    with History(store_url) as again:  # read back by another connection: it is in the database
        assert [c.trace_id for c in again.tool_calls(server="s")] == [trace]


def test_each_group_commit_is_timed_for_metrics(store_url: str) -> None:
    with History(store_url) as history:
        history.flush()  # the store's own start is not what is counted
        before = store_commits()
        history.call_started(started(1))
        history.call_finished(finished(1))
        history.flush()
        after = store_commits()
    assert after.count > before.count and after.sum > before.sum


async def test_a_group_of_call_rows_is_one_insert_committed_by_itself_in_one_round_trip(postgres: Postgres) -> None:
    """On PostgreSQL the calls' rows of a group are one INSERT, its own transaction (no BEGIN and COMMIT to wait
    for), sent alone, or in a pipeline with the group's other writes inside BEGIN and COMMIT; a group with a job
    that reads its answers is neither gathered nor pipelined."""
    with postgres.database() as url, History(url) as history:
        sent: list[tuple[str, bool]] = []

        def spy(db: Database) -> None:  # every statement the connection sends, and whether in a pipeline
            assert isinstance(db, PostgresDatabase)
            conn: psycopg.Connection[Any] = db._conn  # pyright: ignore[reportPrivateUsage]
            cursor: psycopg.Cursor[Any] = db._cursor  # pyright: ignore[reportPrivateUsage]
            write = db._write  # pyright: ignore[reportPrivateUsage]

            def note(query: Any) -> None:
                sent.append((str(query).split()[0], conn.info.pipeline_status != psycopg.pq.PipelineStatus.OFF))

            class Traced:  # the cursor psycopg runs statements with
                def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
                    note(query)
                    return cursor.execute(query, params, **kwargs)

                def executemany(self, query: Any, params: Any, **kwargs: Any) -> Any:
                    note(query)
                    return cursor.executemany(query, params, **kwargs)

            def written(sql: str, values: list[bytes | None], types: list[int], *, prepare: bool) -> int:  # libpq's own
                note(sql)
                return write(sql, values, types, prepare=prepare)

            db._cursor = Traced()  # type: ignore[assignment]  # pyright: ignore[reportPrivateUsage]
            db._write = written  # type: ignore[method-assign]  # pyright: ignore[reportPrivateUsage]

        history.store.writer.call(spy)
        held = await anyio.to_thread.run_sync(Held, history)  # a job of its own, which is not pipelined
        for n in range(1, 21):
            history.call_started(started(n))
            history.call_finished(finished(n))
        held.release()
        with anyio.fail_after(WAIT):
            await history.committed()
        assert sent == [("BEGIN", False), ("COMMIT", False), ("INSERT", False)]  # alone: no pipeline to enter
        sent.clear()
        history.call_started(started(21))  # a call still running when written: its end is an update
        await anyio.to_thread.run_sync(history.flush)
        held = await anyio.to_thread.run_sync(Held, history)
        sent.clear()
        history.call_finished(finished(21))
        history.call_started(started(22))
        history.call_finished(finished(22))
        held.release()
        with anyio.fail_after(WAIT):
            await history.committed()
        assert sent == [("COMMIT", False), ("BEGIN", True), ("UPDATE", True), ("INSERT", True), ("COMMIT", True)]
        sent.clear()
        assert await anyio.to_thread.run_sync(history.count_tool_calls) == 22 and sent == [("SELECT", False)]


def test_filters_apply_before_the_limit(store_url: str) -> None:
    with History(store_url) as history:
        for n in range(20):
            history.call_started(started(n))
            history.call_finished(finished(n))
        newest_of_s = history.tool_calls(server="s", limit=3)
        assert [c.call_id for c in newest_of_s] == ["c19", "c17", "c15"]
        assert history.count_tool_calls(server="s") == 10 and history.count_tool_calls(status="running") == 0


def test_reads_see_every_write_queued_before_them(store_url: str) -> None:
    with History(store_url) as history:
        conversation = history.start_conversation(model="m", title="t", key="k")
        for n in range(300):
            history.call_started(started(n, conversation="k"))
            history.call_finished(finished(n))
            history.add_message("k", "user", {"n": n})
        assert len(history.tool_calls(limit=1000)) == 300  # no flush: the read waits behind the writes
        assert [m["content"]["n"] for m in history.messages(conversation)] == list(range(300))
        assert history.conversation_id("k") == conversation


def test_close_writes_everything_queued_before_it(store_url: str) -> None:
    history = History(store_url)
    for n in range(3000):
        history.call_started(started(n))
        history.call_finished(finished(n))
    history.close()  # right away: the queue is still full
    history.close()  # twice is harmless
    with History(store_url) as again:
        calls = again.tool_calls(limit=10_000)
    assert len(calls) == 3000 and {c.status for c in calls} == {"ok"}


def test_a_history_a_program_never_closed_is_written_at_exit(store_url: str) -> None:
    script = (
        "from mcpdeck.history import History\n"
        "from tests.store.test_store import started, finished\n"
        f"history = History({store_url!r})\n"
        "for n in range(2000):\n"
        "    history.call_started(started(n))\n"
        "    history.call_finished(finished(n))\n"
    )
    subprocess.run([sys.executable, "-c", script], cwd=ROOT, check=True, timeout=WAIT * 4)
    with History(store_url) as history:
        calls = history.tool_calls(limit=10_000)
    assert len(calls) == 2000 and {c.status for c in calls} == {"ok"}


def test_a_write_that_fails_is_logged_and_the_others_are_kept(store_url: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="mcpdeck.store"), History(store_url) as history:
        held = Held(history)  # the four writes share one transaction
        history.call_started(started(1))
        history.add_message(424242, "user", "no such conversation")  # the foreign key refuses it
        history.call_started(started(2))
        history.add_message("no-such-key", "user", "dropped quietly")
        held.release()
        history.flush()
        assert sorted(c.call_id for c in history.tool_calls()) == ["c1", "c2"]
    assert "a history write failed" in caplog.text and "foreign key" in caplog.text.lower()


def _group_refused_for_c3(history: History) -> None:
    """Four calls written in one group, which the database refuses for the third (a conversation that does not
    exist); waits until the writer is done with it."""
    held = Held(history)
    for n in (1, 2, 3, 4):
        history.call_started(started(n), conversation_id=424242 if n == 3 else None)
        history.call_finished(finished(n))
    held.release()
    history.flush()


def test_a_row_the_database_refuses_loses_only_itself_not_the_calls_inserted_with_it(
    store_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The calls' rows of a group go in one INSERT: when the database refuses it for one row (here a conversation
    that does not exist), the rows are inserted again one by one, and only that one is lost (and logged)."""
    with caplog.at_level(logging.ERROR, logger="mcpdeck.store"), History(store_url) as history:
        _group_refused_for_c3(history)
        assert sorted((c.call_id, c.status) for c in history.tool_calls()) == [("c1", "ok"), ("c2", "ok"), ("c4", "ok")]
    assert caplog.text.count("a history write failed") == 1 and "foreign key" in caplog.text.lower()
    assert "1 of 4 rows written together" in caplog.text


def test_a_connection_lost_while_a_group_s_rows_are_written_one_by_one_is_opened_again_and_no_row_is_lost(
    postgres: Postgres, caplog: pytest.LogCaptureFixture
) -> None:
    """A group refused for one row is written again row by row; when the connection is lost meanwhile (here a
    trigger ends it the third time the last row is inserted: in the group, in the group alone, then by itself), it
    is opened again and that row written again: only the refused row is lost."""
    with postgres.database() as url:
        with caplog.at_level(logging.WARNING, logger="mcpdeck.store"), History(url) as history:
            with psycopg.connect(url, autocommit=True) as admin:
                admin.execute("CREATE SEQUENCE c4_inserts")
                admin.execute(
                    "CREATE FUNCTION end_on_third() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
                    " IF nextval('c4_inserts') = 3 THEN PERFORM pg_terminate_backend(pg_backend_pid()); END IF;"
                    " RETURN NEW; END $$"
                )
                admin.execute(
                    "CREATE TRIGGER end_on_third BEFORE INSERT ON tool_calls FOR EACH ROW"
                    " WHEN (NEW.call_id = 'c4') EXECUTE FUNCTION end_on_third()"
                )
            pid = _ask_one(history, "SELECT pg_backend_pid()")
            _group_refused_for_c3(history)
            assert sorted((c.call_id, c.status) for c in history.tool_calls()) == [
                ("c1", "ok"),
                ("c2", "ok"),
                ("c4", "ok"),
            ]
            assert _ask_one(history, "SELECT pg_backend_pid()") != pid
            assert _ask_one(history, "SELECT last_value FROM c4_inserts") == 4
    assert "the store's connection was lost and is open again" in caplog.text
    assert caplog.text.count("a history write failed") == 1 and "1 of 4 rows written together" in caplog.text


def test_a_conversation_whose_model_name_holds_nul_or_a_lone_surrogate_is_kept(store_url: str) -> None:
    """A chat's model is whatever name a client of the REST API sent: kept as the history keeps texts, so the
    conversation, its messages and its calls' link to it are not lost."""
    with History(store_url) as history:
        history.open_conversation("k1", model="openai:gpt\x00", title="first")
        history.add_message("k1", "user", "hello")
        history.call_started(started(1, "k1"))
        second = history.start_conversation(model="openai:gpt\ud800", title="second")
        conversations = history.conversations()
        (call,) = history.tool_calls()
    assert [(c["title"], c["model"], c["messages"]) for c in conversations] == [
        ("second", "openai:gpt\ufffd", 0),
        ("first", "openai:gpt\ufffd", 1),
    ]
    assert second == conversations[0]["id"] and call.call_id == "c1"


def test_recording_after_close_is_a_clear_error(store_url: str) -> None:
    history = History(store_url)
    history.close()
    with pytest.raises(RuntimeError, match="the history database is closed"):
        history.call_started(started(1))


def test_writes_queued_during_a_commit_share_the_next_one_and_a_lone_write_waits_for_nothing(tmp_path: Path) -> None:
    with History(tmp_path / "h.sqlite3") as history:
        history.flush()
        before = store_commits().count  # (commits of call rows alone are one INSERT: no COMMIT statement to count)
        history.call_started(started(1))  # alone: committed at once, with no read or close to end a wait
        history.flush()
        assert store_commits().count - before == 1
        held = Held(history)
        for n in range(2, 22):
            history.call_started(started(n))
        held.release()
        history.flush()
        assert store_commits().count - before == 3  # the held job's batch, then one for the twenty
        assert history.count_tool_calls() == 21


def test_a_call_that_ends_before_it_is_written_costs_one_insert_and_no_update(tmp_path: Path) -> None:
    with History(tmp_path / "h.sqlite3") as history:
        statements: list[str] = []
        history.store.writer.call(lambda db: db.connection.set_trace_callback(statements.append))  # type: ignore[attr-defined]
        held = Held(history)
        history.call_started(started(1))
        history.call_finished(finished(1))
        history.call_started(started(2))  # still running when it is written
        held.release()
        assert {c.call_id: c.status for c in history.tool_calls()} == {"c1": "ok", "c2": "running"}
        (insert,) = [s for s in statements if s.startswith("INSERT")]  # both rows in one statement
        assert "'c1'" in insert and "'ok'" in insert and "'c2'" in insert and "'running'" in insert
        assert not [s for s in statements if s.startswith("UPDATE")]
        history.call_finished(finished(2))  # its row is written: its end is an update
        assert {c.call_id: c.status for c in history.tool_calls()} == {"c1": "ok", "c2": "ok"}
        assert len([s for s in statements if s.startswith("UPDATE")]) == 1


async def test_on_an_event_loop_a_short_call_is_one_insert_in_the_commit_its_answer_waits_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its start waits in memory (``START_DELAY``, long here so that no clock decides) for its end: an idle writer
    does not commit the start alone and then the end as an update. A read through the history sees the start."""
    monkeypatch.setattr(history_module, "START_DELAY", 60.0)
    with History(tmp_path / "h.sqlite3") as history:
        statements: list[str] = []
        history.store.writer.call(lambda db: db.connection.set_trace_callback(statements.append))  # type: ignore[attr-defined]
        history.call_started(started(1))
        await anyio.to_thread.run_sync(history.store.writer.flush)  # the writer is idle: it wrote what it had
        assert not [s for s in statements if s.startswith("INSERT")]
        history.call_finished(finished(1))
        with anyio.fail_after(WAIT):
            await history.committed()
        (insert,) = [s for s in statements if s.startswith("INSERT")]
        assert "'c1'" in insert and "'ok'" in insert and not [s for s in statements if s.startswith("UPDATE")]

        history.call_started(started(3))  # a read through the history queues the waiting start first
        assert {c.call_id: c.status for c in await anyio.to_thread.run_sync(history.tool_calls)} == {
            "c1": "ok",
            "c3": "running",
        }


async def test_a_call_still_running_is_in_the_store_for_another_reader_soon(store_url: str) -> None:
    """After ``START_DELAY`` a running call's start is committed by itself: another replica (here another
    ``History`` on the same store) lists it ``running``, and a survivor could mark it interrupted."""
    with History(store_url, replica="a") as writer, History(store_url, replica="b") as reader:
        writer.call_started(started(1))
        with anyio.fail_after(WAIT):
            while not await anyio.to_thread.run_sync(reader.tool_calls):  # noqa: ASYNC110 (another store reader: nothing to wait on)
                await anyio.sleep(0.01)
        assert [(c.call_id, c.status) for c in await anyio.to_thread.run_sync(reader.tool_calls)] == [("c1", "running")]


def test_a_call_made_after_a_conversation_opened_is_filed_under_it(store_url: str) -> None:
    with History(store_url) as history:
        held = Held(history)  # c1's insert is queued before the conversation is opened, c2's after
        history.call_started(started(1))
        history.open_conversation("k", model="m")
        history.call_started(started(2, conversation="k"))
        held.release()
        conversation = history.conversation_id("k")
        rows = history.store.writer.call(lambda db: dict(db.rows("SELECT call_id, conversation_id FROM tool_calls")))
    assert conversation is not None and rows == {"c1": None, "c2": conversation}


def test_calls_recorded_from_many_threads_are_all_written_with_their_ends(store_url: str) -> None:
    threads, per_thread = 6, 200
    with History(store_url) as history:

        def record(first: int) -> None:
            for n in range(first, first + per_thread):
                history.call_started(started(n))
                if n % 50 == 0:
                    history.tool_calls(limit=1)  # a read in between: the rows so far are written
                history.call_finished(finished(n))

        workers = [threading.Thread(target=record, args=(t * per_thread,)) for t in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(WAIT * 4)
        assert not any(worker.is_alive() for worker in workers)
    with History(store_url) as again:
        calls = again.tool_calls(limit=10_000)
    assert len(calls) == threads * per_thread and {c.status for c in calls} == {"ok"}


async def test_a_call_returns_only_once_its_record_is_committed(store_url: str, tmp_path: Path) -> None:
    """The guarantee behind "nothing acknowledged is lost": with the writer held up (a slow disk), a call the
    server has answered does not return to its caller until its record is committed."""
    with History(store_url, replica="r1") as history:
        async with Host({"basic": basic.build_server()}, log_dir=tmp_path, history=history) as host:
            held = await anyio.to_thread.run_sync(Held, history)
            answered, returned = anyio.Event(), anyio.Event()
            host.events.on(lambda _: answered.set(), ToolCallFinished)  # published when the server has answered

            async def call() -> None:
                await host.call_tool("mcp__basic__echo", {"text": "durable"})
                returned.set()

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                with anyio.fail_after(WAIT):
                    await answered.wait()
                await anyio.wait_all_tasks_blocked()  # the call has gone as far as it can: waiting for its record
                assert not returned.is_set()
                held.release()
                with anyio.fail_after(WAIT):
                    await returned.wait()
            with History(store_url) as reader:  # another connection sees it: it is committed
                (record,) = await anyio.to_thread.run_sync(reader.tool_calls)
            assert (record.status, record.arguments, record.replica) == ("ok", {"text": "durable"}, "r1")


def test_old_events_are_deleted_by_retention(store_url: str) -> None:
    from mcpdeck.store import Replica

    old = datetime.now(UTC) - timedelta(days=10)
    with History(store_url, replica="r1") as history:
        history.call_started(started(1, at=old))
        history.call_finished(finished(1))
        history.call_started(started(2))
        history.call_finished(finished(2))
        history.call_started(started(3, at=old))  # still running: kept
        replica = Replica(history, keep_days=5)
        assert replica.retain() == 1
        assert replica.retain() is None  # it ran less than an hour ago (anywhere in the fleet)
        assert sorted(c.call_id for c in history.tool_calls()) == ["c2", "c3"]


def test_an_unreachable_postgresql_is_a_clear_error_before_anything_starts() -> None:
    with closed_port() as port, pytest.raises(ConfigError) as raised:
        History(f"postgresql://mcpdeck@127.0.0.1:{port}/mcpdeck")
    message = str(raised.value)
    assert f"cannot connect to the store postgresql://mcpdeck@127.0.0.1:{port}/mcpdeck" in message
    assert "check that PostgreSQL runs there" in message


def _durability(history: History) -> str:
    """The durability the store's writing connection commits with: SQLite's ``synchronous`` pragma, PostgreSQL's
    ``synchronous_commit``."""

    def read(db: Database) -> str:
        if isinstance(db, PostgresDatabase):
            return str(_one(db, "SHOW synchronous_commit"))
        return {1: "NORMAL", 2: "FULL"}[int(_one(db, "PRAGMA synchronous"))]

    return history._ask(read)  # pyright: ignore[reportPrivateUsage]


def _one(db: Database, query: str) -> Any:
    row = db.one(query)
    assert row is not None
    return row[0]


def _ask_one(history: History, query: str) -> Any:
    return history._ask(lambda db: _one(db, query))  # pyright: ignore[reportPrivateUsage]


def _database_commits(url: str, level: str) -> None:
    """Give the database at ``url`` its own ``synchronous_commit`` (the tests' server runs with it off, for speed)."""
    from psycopg import sql

    with psycopg.connect(url, autocommit=True) as admin:
        name = sql.Identifier(url.rsplit("/", 1)[1])
        admin.execute(sql.SQL("ALTER DATABASE {} SET synchronous_commit = {}").format(name, sql.Literal(level)))


def test_the_store_url_s_synchronous_level_means_the_same_on_both_stores(store_url: str) -> None:
    location = parse_location(store_url)
    if location.path is not None:
        normal, full = "NORMAL", "FULL"
        with_level = f"sqlite:///{location.path}?synchronous="
    else:
        _database_commits(store_url, "on")  # as a server does by default: full must leave it so
        normal, full = "off", "on"
        with_level = f"{store_url}?synchronous="
    for url, expected in ((store_url, normal), (f"{with_level}normal", normal), (f"{with_level}FULL", full)):
        with History(url) as history:
            history.call_started(started(1))
            history.flush()
            assert (_durability(history), history.count_tool_calls()) == (expected, 1), url


def test_on_postgresql_full_keeps_the_database_s_own_setting_and_the_url_s_libpq_settings(postgres: Postgres) -> None:
    with postgres.database() as url:
        _database_commits(url, "remote_write")
        options = "options=-c%20work_mem%3D7MB&sslmode=disable"
        for level, expected in (("full", "remote_write"), ("normal", "off")):
            with History(f"{url}?synchronous={level}&{options}") as history:
                assert (_durability(history), _ask_one(history, "SHOW work_mem")) == (expected, "7MB")


def test_on_postgresql_a_writer_connection_opened_again_after_a_loss_keeps_the_level(postgres: Postgres) -> None:
    with postgres.database() as url, History(url) as history:
        _database_commits(url, "on")
        pid = _ask_one(history, "SELECT pg_backend_pid()")
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        history.call_started(started(1))
        history.flush()
        assert history.count_tool_calls() == 1
        assert _ask_one(history, "SELECT pg_backend_pid()") != pid
        assert _durability(history) == "off"


def test_a_durability_level_the_stores_do_not_have_is_a_clear_error() -> None:
    for url in ("sqlite:///h.db?synchronous=extra", "postgresql://u:secret@h:5432/db?sslmode=require&synchronous=off"):
        with pytest.raises(ConfigError) as raised:
            parse_location(url)
        message = str(raised.value)
        assert (
            "which is not a durability level; write ?synchronous=normal" in message and "?synchronous=full" in message
        )
        assert "secret" not in message
    location = parse_location("postgres://u@h:5432/db?sslmode=require&synchronous=Full&application_name=a%20b")
    assert (location.url, location.synchronous) == (
        "postgres://u@h:5432/db?sslmode=require&application_name=a%20b",
        "full",
    )
    assert parse_location("postgresql://u@h/db").synchronous == "normal"
