"""The gateway's stdin/stdout streams over real pipes: lines split and joined as they arrive, big
lines written in part, concurrent senders, a closed reader."""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path

import anyio
import anyio.lowlevel
import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage

from mcpdeck.gateway import _stdio
from mcpdeck.gateway._stdio import StdinLines, StdoutLines
from tests.helpers import WAIT

pytestmark = pytest.mark.anyio


class Pipe:
    """A pipe whose ends do not block (as the gateway makes its stdin and stdout)."""

    def __init__(self) -> None:
        self.read, self.write = os.pipe()
        os.set_blocking(self.read, False)
        os.set_blocking(self.write, False)
        self._open = {self.read, self.write}

    def close(self, fd: int) -> None:
        """Close one end (once: a number closed twice could be someone else's by then)."""
        if fd in self._open:
            self._open.discard(fd)
            os.close(fd)


@contextmanager
def pipe() -> Generator[Pipe]:
    made = Pipe()
    try:
        yield made
    finally:
        for fd in (made.read, made.write):
            made.close(fd)


def _request(n: int, text: str = "") -> bytes:
    body = {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": "echo", "arguments": {"t": text}}}
    return json.dumps(body).encode() + b"\n"


def _ids(items: list[SessionMessage | Exception]) -> list[object]:
    """Each request's id, or the kind of error a line that is not a message became."""
    ids: list[object] = []
    for item in items:
        message = item.message if isinstance(item, SessionMessage) else None
        ids.append(message.id if isinstance(message, types.JSONRPCRequest) else type(item).__name__)
    return ids


async def test_stdin_lines_are_read_however_the_pipe_cuts_them() -> None:
    data = _request(1) + b"\n  \n" + _request(2, "x" * 100_000) + b"not json\n" + _request(3)
    received: list[SessionMessage | Exception] = []
    with pipe() as p, anyio.fail_after(WAIT):
        read, write = p.read, p.write
        lines = StdinLines(read)

        async def feed() -> None:
            view, sizes = memoryview(data), itertools.cycle((7, 1, 50, 3000, 65_536, 10))
            while view:  # pieces cut inside lines and across them
                try:
                    view = view[os.write(write, view[: next(sizes)]) :]
                except BlockingIOError:
                    await anyio.wait_writable(write)
                await anyio.lowlevel.checkpoint()  # let the reader take each piece on its own
            p.close(write)

        async with anyio.create_task_group() as tg:
            tg.start_soon(feed)
            received.extend([item async for item in lines])
    assert _ids(received) == [1, 2, "ValueError", 3]
    second = received[1]
    assert isinstance(second, SessionMessage) and isinstance(second.message, types.JSONRPCRequest)
    assert second.message.params is not None and len(second.message.params["arguments"]["t"]) == 100_000


async def test_a_last_line_without_newline_is_not_a_message_and_receive_ends() -> None:
    with pipe() as p, anyio.fail_after(WAIT):
        read, write = p.read, p.write
        os.write(write, _request(1) + b'{"jsonrpc": "2.0", "id": 2')
        p.close(write)
        lines = StdinLines(read)
        first = await lines.receive()
        with pytest.raises(anyio.EndOfStream):
            await lines.receive()
    assert _ids([first]) == [1]


async def test_a_burst_larger_than_the_reader_keeps_arrives_whole_and_in_order() -> None:
    data = b"".join(_request(n, "w" * 1000) for n in range(3000))  # ~3 MB: reading pauses and resumes
    ids: list[object] = []
    with pipe() as p, anyio.fail_after(WAIT):
        lines = StdinLines(p.read)

        async def feed() -> None:
            view = memoryview(data)
            while view:
                try:
                    view = view[os.write(p.write, view) :]
                except BlockingIOError:
                    await anyio.wait_writable(p.write)
            p.close(p.write)

        async with anyio.create_task_group() as tg:
            tg.start_soon(feed)
            async for item in lines:
                ids.extend(_ids([item]))
                if len(ids) % 100 == 0:
                    await anyio.sleep(0.001)  # a slow reader: the loop must stop filling the buffer meanwhile
    assert ids == list(range(3000))


async def test_stdin_redirected_from_a_file_is_read_to_its_end(tmp_path: Path) -> None:
    source = tmp_path / "requests.jsonl"
    source.write_bytes(_request(1) + _request(2) + _request(3))
    fd = os.open(source, os.O_RDONLY)  # a regular file: the event loop cannot watch it
    try:
        with anyio.fail_after(WAIT):
            received = [item async for item in StdinLines(fd)]
    finally:
        os.close(fd)
    assert _ids(received) == [1, 2, 3]


async def test_a_closed_reader_ends_and_leaves_the_rest_in_the_pipe() -> None:
    with pipe() as p, anyio.fail_after(WAIT):
        lines = StdinLines(p.read)
        os.write(p.write, _request(1))
        assert _ids([await lines.receive()]) == [1]
        lines.close()
        os.write(p.write, _request(2))
        with pytest.raises(anyio.EndOfStream):
            await lines.receive()
        await anyio.wait_readable(p.read)
        assert os.read(p.read, 1 << 16) == _request(2)  # nobody else read it: the loop let go of the pipe


async def test_lines_bigger_than_the_pipe_go_out_whole_while_other_senders_wait() -> None:
    big = "y" * 300_000  # several times a pipe's buffer: written in parts
    messages = [
        SessionMessage(types.JSONRPCResponse(jsonrpc="2.0", id=n, result={"text": big if n % 2 else str(n)}))
        for n in range(6)
    ]
    out = bytearray()
    with pipe() as p, anyio.fail_after(WAIT):
        read, write = p.read, p.write
        stdout = StdoutLines(write)

        async def drain() -> None:
            while out.count(b"\n") < len(messages):
                await anyio.wait_readable(read)
                out.extend(os.read(read, 1 << 20))

        async with anyio.create_task_group() as tg:
            tg.start_soon(drain)
            async with anyio.create_task_group() as senders:
                for message in messages:
                    senders.start_soon(stdout.send, message)
    lines = [json.loads(line) for line in bytes(out).splitlines()]
    assert sorted(line["id"] for line in lines) == list(range(6))
    assert all(line["result"]["text"] == (big if line["id"] % 2 else str(line["id"])) for line in lines)


async def test_writing_to_a_closed_pipe_is_a_broken_stream() -> None:
    message = SessionMessage(types.JSONRPCResponse(jsonrpc="2.0", id=1, result={}))
    with pipe() as p, anyio.fail_after(WAIT):
        read, write = p.read, p.write
        p.close(read)
        stdout = StdoutLines(write)
        with pytest.raises(anyio.BrokenResourceError):
            await stdout.send(message)
        await stdout.aclose()
        with pytest.raises(anyio.ClosedResourceError):
            await stdout.send(message)


async def test_a_client_that_stops_reading_ends_the_stream_instead_of_holding_the_gateway(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_stdio, "STALLED_WRITE", 0.2)
    big = SessionMessage(types.JSONRPCResponse(jsonrpc="2.0", id=1, result={"text": "z" * 300_000}))
    with pipe() as p, anyio.fail_after(WAIT):
        stdout = StdoutLines(p.write)  # nobody reads p.read: the pipe fills after 64 KiB
        with pytest.raises(anyio.BrokenResourceError):
            await stdout.send(big)
        with pytest.raises(anyio.ClosedResourceError):
            await stdout.send(big)
