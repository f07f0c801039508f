"""A stdio server's stdin as ``StdinPipe`` writes it and its stdout as ``StdoutPipe`` reads it, with real child
processes: whole and in order however big, a send that waits while a server does not read, a server that closes
its stdin, a reader that falls behind, a pipe closed under a waiting reader."""

from __future__ import annotations

import hashlib
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from subprocess import PIPE

import anyio
import pytest
from anyio.abc import Process
from anyio.streams.text import TextReceiveStream

from mcpdeck._sdk.child_process import StdinPipe, StdoutPipe
from tests.helpers import WAIT

pytestmark = pytest.mark.anyio

# Reads its stdin to the end, then says how much it read and its digest.
_DIGEST = "import hashlib, sys; d = sys.stdin.buffer.read(); print(len(d), hashlib.sha256(d).hexdigest(), flush=True)"
# Never reads its stdin.
_DEAF = "import sys; print('up', flush=True); sys.stdout.close(); import time; time.sleep(60)"
# Closes its stdin at once, then waits to be ended.
_CLOSER = "import os, time; os.close(0); print('closed', flush=True); time.sleep(60)"


@asynccontextmanager
async def python(script: str, *, stdin: int = PIPE, stdout: int = PIPE) -> AsyncGenerator[Process]:
    """A Python child running ``script`` on these pipe ends (else pipes to this process); killed if it still runs,
    and waited for, on the way out."""
    process = await anyio.open_process([sys.executable, "-c", script], stdin=stdin, stdout=stdout)
    try:
        yield process
    finally:
        if process.returncode is None:
            process.kill()
        with anyio.CancelScope(shield=True):
            await process.wait()


@asynccontextmanager
async def child(script: str) -> AsyncGenerator[tuple[StdinPipe, Process]]:
    """A Python child whose stdin is a ``StdinPipe``; ended (and the pipe closed) on the way out."""
    pipe = StdinPipe()
    async with python(script, stdin=pipe.child_end) as process:
        try:
            await pipe.start()
            yield pipe, process
        finally:
            pipe.abort()


@asynccontextmanager
async def fail_after(seconds: float) -> AsyncGenerator[None]:
    """``anyio.fail_after`` in a form that shares an ``async with`` with ``child``."""
    with anyio.fail_after(seconds):
        yield


async def first_line(process: Process) -> str:
    assert process.stdout is not None
    text = ""
    async for chunk in TextReceiveStream(process.stdout):
        text += chunk
        if "\n" in text:
            break
    return text.strip()


async def test_messages_from_many_senders_arrive_whole_and_in_the_order_they_were_sent() -> None:
    sizes = [1, 5_000_000, 70_000, 3, 1_000_000, 200, 65_536, 12]  # some far past the pipe's 64 KiB
    sent: list[bytes] = []
    async with fail_after(WAIT), child(_DIGEST) as (pipe, process):

        async def send(n: int, size: int) -> None:
            data = bytes([65 + n]) * (size - 1) + b"\n"
            sent.append(data)  # the order they go out in: each send writes before it may wait
            await pipe.send(data)

        async with anyio.create_task_group() as senders:
            for n, size in enumerate(sizes):
                senders.start_soon(send, n, size)
        pipe.close()  # what is still buffered goes out first, then the server sees the end
        answer = await first_line(process)
    whole = b"".join(sent)
    assert len(sent) == len(sizes)
    assert answer == f"{len(whole)} {hashlib.sha256(whole).hexdigest()}"


async def test_a_send_waits_while_the_server_does_not_read() -> None:
    async with child(_DEAF) as (pipe, process):
        with anyio.fail_after(WAIT):
            assert await first_line(process) == "up"
            await pipe.send(b"x" * 1000 + b"\n")  # the pipe takes it: no wait
            assert not pipe.full
        with anyio.move_on_after(0.5) as waited:
            await pipe.send(b"y" * 1_000_000 + b"\n")  # past the pipe and the high-water mark
        assert waited.cancelled_caught  # it waited for the server instead of buffering without bound
        assert pipe.full


async def test_a_server_that_closed_its_stdin_makes_sends_fail_as_a_broken_stream() -> None:
    async with fail_after(WAIT), child(_CLOSER) as (pipe, process):
        assert await first_line(process) == "closed"
        with pytest.raises(anyio.BrokenResourceError):
            for _ in range(100):  # the loop may see the closed end only at the first write
                await pipe.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
                await anyio.lowlevel.checkpoint()
        with pytest.raises(anyio.BrokenResourceError):
            await pipe.send(b"more\n")


async def test_a_closed_pipe_refuses_sends_and_closing_twice_is_harmless() -> None:
    async with fail_after(WAIT), child(_DIGEST) as (pipe, process):
        await pipe.send(b"one\n")
        pipe.close()
        pipe.close()
        with pytest.raises(anyio.BrokenResourceError):
            await pipe.send(b"two\n")
        assert await first_line(process) == f"4 {hashlib.sha256(b'one' + bytes([10])).hexdigest()}"


# Writes 8 MiB in lines of every length up to 64 KiB, then exits.
_WRITER = """
import sys
out, n, total = sys.stdout.buffer, 0, 0
while total < 8 * 1024 * 1024:
    line = bytes([65 + n % 26]) * (n * 7919 % 65536) + bytes([10])
    out.write(line)
    total += len(line)
    n += 1
out.flush()
"""


def _expected_writer_output() -> bytes:
    lines: list[bytes] = []
    n = total = 0
    while total < 8 * 1024 * 1024:
        line = bytes([65 + n % 26]) * (n * 7919 % 65536) + bytes([10])
        lines.append(line)
        total += len(line)
        n += 1
    return b"".join(lines)


@asynccontextmanager
async def reading(script: str) -> AsyncGenerator[tuple[StdoutPipe, Process]]:
    """A Python child whose stdout is a ``StdoutPipe``; ended (and the pipe closed) on the way out."""
    pipe = StdoutPipe()
    async with python(script, stdout=pipe.child_end) as process:
        try:
            await pipe.start()
            yield pipe, process
        finally:
            pipe.close()


async def _read_to_the_end(pipe: StdoutPipe) -> bytes:
    chunks: list[bytes] = []
    while True:
        try:
            chunk = await pipe.receive()
        except anyio.EndOfStream:
            return b"".join(chunks)
        assert chunk  # never an empty read before the end
        chunks.append(chunk)


async def test_what_a_server_writes_arrives_whole_and_in_order_then_the_end() -> None:
    async with fail_after(WAIT), reading(_WRITER) as (pipe, _):
        got = await _read_to_the_end(pipe)
        with pytest.raises(anyio.EndOfStream):  # and again: the end stays the end
            await pipe.receive()
    assert got == _expected_writer_output()


async def test_a_reader_that_falls_behind_makes_the_server_wait_and_loses_nothing() -> None:
    async with reading(_WRITER) as (pipe, process):
        with anyio.move_on_after(1.0):  # the scenario: nobody reads for a second
            while process.returncode is None:  # noqa: ASYNC110 - no event tells of a child's exit
                await anyio.sleep(0.01)
        # 8 MiB is far past what the loop reads ahead: the server is still blocked on its full pipe,
        # where a reader without a bound would have taken it all into memory and let it exit.
        assert process.returncode is None
        with anyio.fail_after(WAIT):
            got = await _read_to_the_end(pipe)
            assert await process.wait() == 0
    assert got == _expected_writer_output()


async def test_closing_the_pipe_wakes_a_waiting_reader_and_closing_twice_is_harmless() -> None:
    async with fail_after(WAIT), reading("import os, time; os.write(1, b'up'); time.sleep(60)") as (pipe, _):
        assert await pipe.receive() == b"up"

        async def close_soon() -> None:
            await anyio.wait_all_tasks_blocked()
            pipe.close()
            pipe.close()

        async with anyio.create_task_group() as tg:
            tg.start_soon(close_soon)
            with pytest.raises(anyio.ClosedResourceError):
                await pipe.receive()  # the server wrote nothing more: only the close ends this wait
