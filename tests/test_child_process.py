"""A stdio server's stdin as ``StdinPipe`` writes it, with real child processes: whole and in order
however big, a send that waits while a server does not read, a server that closes its stdin."""

from __future__ import annotations

import hashlib
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

import anyio
import pytest
from anyio.abc import Process
from anyio.streams.text import TextReceiveStream

from mcpdeck._child_process import StdinPipe
from tests.helpers import WAIT

pytestmark = pytest.mark.anyio

# Reads its stdin to the end, then says how much it read and its digest.
_DIGEST = "import hashlib, sys; d = sys.stdin.buffer.read(); print(len(d), hashlib.sha256(d).hexdigest(), flush=True)"
# Never reads its stdin.
_DEAF = "import sys; print('up', flush=True); sys.stdout.close(); import time; time.sleep(60)"
# Closes its stdin at once, then waits to be ended.
_CLOSER = "import os, time; os.close(0); print('closed', flush=True); time.sleep(60)"


@asynccontextmanager
async def child(script: str) -> AsyncGenerator[tuple[StdinPipe, Process]]:
    """A Python child whose stdin is a ``StdinPipe``; ended (and the pipe closed) on the way out."""
    pipe = StdinPipe()
    process = await anyio.open_process([sys.executable, "-c", script], stdin=pipe.child_end)
    try:
        await pipe.start()
        yield pipe, process
    finally:
        pipe.abort()
        if process.returncode is None:
            process.kill()
        with anyio.CancelScope(shield=True):
            await process.wait()


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
