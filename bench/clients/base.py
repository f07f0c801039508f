"""What every benchmarked client library implements. Standard library only.

A worker process (``bench/worker.py``) loads one ``ClientLib`` and drives it. Peer
libraries run in their own virtual environments with their own ``mcp``, so nothing here
may import anything but the standard library.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import sys
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, Literal, cast

__all__ = [
    "ClientLib",
    "Connection",
    "ServerSpec",
    "Unsupported",
    "group",
    "handshake_only",
    "package_versions",
    "rss_bytes",
    "text_size",
]

Transport = Literal["stdio", "http"]
Protocol = Literal["", "handshake", "modern"]
"""The protocol era a client is asked to speak: ``handshake`` (``initialize``), ``modern`` (2026-07-28,
``server/discover``), or ``""``: the client's own default."""


class Unsupported(Exception):
    """The library has no way to do this (reported as n/a, with the reason)."""


@dataclass(frozen=True)
class ServerSpec:
    """One server to connect: a command (stdio) or a URL (streamable HTTP), and the era to speak to it in."""

    name: str
    transport: Transport
    command: str = ""
    args: tuple[str, ...] = ()
    url: str = ""
    protocol: Protocol = ""

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "transport": self.transport, "command": self.command, "args": list(self.args),
                "url": self.url, "protocol": self.protocol}  # fmt: skip

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ServerSpec:
        return cls(
            name=str(data["name"]),
            transport="http" if data["transport"] == "http" else "stdio",
            command=str(data.get("command", "")),
            args=tuple(str(a) for a in data.get("args", ())),
            url=str(data.get("url", "")),
            protocol=_protocol(data.get("protocol", "")),
        )


def _protocol(value: object) -> Protocol:
    if value in ("", "handshake", "modern"):
        return value
    raise ValueError(f"unknown protocol {value!r}: handshake, modern or empty")


def handshake_only(spec: ServerSpec) -> None:
    """For a client that speaks only the ``initialize`` handshake: refuse a server to be spoken to in 2026-07-28."""
    if spec.protocol == "modern":
        raise Unsupported("speaks only the initialize handshake (its mcp is 1.x), not 2026-07-28")


class Connection(ABC):
    """Open connections to one or more servers, as the library keeps them."""

    @abstractmethod
    async def call(self, server: str, tool: str, arguments: dict[str, Any]) -> int:
        """Call a tool the library's usual way; return the characters of text it got back."""

    def tool_count(self) -> int:
        """Tools the library knows after connecting (listed as part of connecting)."""
        raise Unsupported("this client does not list tools when it connects")

    async def relist(self, server: str) -> int:
        """List one server's tools again; return how many."""
        raise Unsupported("this client has no way to list again")

    async def convert(self, server: str, provider: str, *, again: bool = False) -> int:
        """Turn the listed tools into a provider's tool format; return how many.

        ``again``: the same, unchanged tools a second time, right after a first conversion
        (a library that caches answers from its cache; a first conversion starts afresh).
        """
        raise Unsupported("this client has no provider conversion")

    async def agent_requests(self, server: str, provider: str, queries: list[str]) -> dict[str, Any]:
        """The ``tools`` value of each model request an agent over the listed tools would send.

        Runs the library's agent loop against a stand-in model (no network) that records each
        request's ``tools`` value as compact JSON: once with every tool offered (tool search
        off), and once per query with tool search as the agent does it by default (the model
        searches with ``query``, calls the first tool found, then answers: three requests).

        Returns ``{"all": request, "searching": bool, "runs": [{"query", "found", "requests"}]}``,
        each request ``{"json": text, "tools": count}``; ``found`` names the tools the search found.
        """
        raise Unsupported("this client has no agent with tool search")

    def protocol_version(self, server: str) -> str:
        """The protocol version the client got from this server."""
        raise Unsupported("this client does not say which protocol version it got")

    async def server_cpu(self) -> float | None:
        """CPU seconds the server processes used so far, where the client knows them."""
        return None


class ClientLib(ABC):
    """A client library under test: how it connects."""

    packages: tuple[str, ...] = ()
    """Distributions whose versions the report names."""

    def versions(self) -> dict[str, str]:
        return package_versions(self.packages)

    @abstractmethod
    def connect(self, servers: list[ServerSpec], *, concurrent: bool) -> AbstractAsyncContextManager[Connection]:
        """Connect every server (at once, or one after the other) and list their tools."""


def package_versions(names: tuple[str, ...]) -> dict[str, str]:
    found = {"python": sys.version.split()[0]}
    for name in names:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return found


def rss_bytes() -> int:
    """This process's resident memory after a full garbage collection."""
    gc.collect()
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def text_size(value: object) -> int:
    """Characters of text in a tool result of any library's shape."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        text = cast(dict[str, object], value).get("text")
        return len(text) if isinstance(text, str) else 0
    if isinstance(value, list | tuple):
        return sum(text_size(item) for item in cast(list[object], value))
    content = getattr(value, "content", None)
    if content is not None:
        return text_size(content)
    text = getattr(value, "text", None)
    return len(text) if isinstance(text, str) else 0


@dataclass
class _Held:
    ready: asyncio.Future[Any]
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None


async def _hold(open_one: Callable[[], AbstractAsyncContextManager[Any]], held: _Held) -> None:
    """Enter and exit one connection in this one task (the SDK requires it)."""
    try:
        async with open_one() as conn:
            held.ready.set_result(conn)
            await held.stop.wait()
    except Exception as error:
        if not held.ready.done():
            held.ready.set_exception(error)
        else:
            print(f"bench: closing a connection failed: {error!r}", file=sys.stderr)
    finally:
        if not held.ready.done():
            held.ready.set_exception(RuntimeError("the connection ended before it was ready"))


@asynccontextmanager
async def group(
    servers: list[ServerSpec],
    open_one: Callable[[ServerSpec], AbstractAsyncContextManager[Any]],
    *,
    concurrent: bool,
) -> AsyncGenerator[dict[str, Any]]:
    """Open one connection per server, each held by its own task; yield them by server name."""
    helds: dict[str, _Held] = {}
    loop = asyncio.get_running_loop()

    def start(spec: ServerSpec) -> Awaitable[Any]:
        held = helds[spec.name] = _Held(ready=loop.create_future())
        held.task = asyncio.create_task(_hold(lambda: open_one(spec), held))
        return held.ready

    try:
        if concurrent:
            opened = await asyncio.gather(*(start(spec) for spec in servers))
        else:
            opened = [await start(spec) for spec in servers]
        yield {spec.name: conn for spec, conn in zip(servers, opened, strict=True)}
    finally:
        for held in helds.values():
            held.stop.set()
        tasks = [held.task for held in helds.values() if held.task is not None]
        with contextlib.suppress(Exception):
            await asyncio.gather(*tasks, return_exceptions=True)
