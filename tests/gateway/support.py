"""Helpers for gateway tests: a host with the conformance server behind a gateway served over HTTP."""

from __future__ import annotations

import warnings
from collections.abc import AsyncGenerator, Generator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.session import ClientRequestContext

from mcpdeck import Host
from mcpdeck.gateway import Gateway
from mcpdeck.history import History
from tests.helpers import serve_asgi, stdio_server

ALLOW_ALL = {"allow": ["mcp__*"]}
"""Permission rules that let every call through (the gate is tested on its own)."""


@contextmanager
def handshake_era() -> Generator[None]:
    """Allow the SDK's deprecation warnings for what 2026-07-28 removed and older peers still use."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


@dataclass
class Served:
    """A gateway in front of a host, served over HTTP."""

    host: Host
    gateway: Gateway
    base: str

    def url(self, profile: str | None = None) -> str:
        """The MCP endpoint of the gateway (or of one profile)."""
        return f"{self.base}/mcp" + (f"/{profile}" if profile else "")


@asynccontextmanager
async def served_gateway(
    log_dir: Path,
    servers: dict[str, Any] | None = None,
    *,
    permissions: dict[str, Any] | None = None,
    roots: list[Path] | None = None,
    history: History | None = None,
    **options: Any,
) -> AsyncGenerator[Served]:
    """The conformance server (``conf``, over stdio) behind a host (with ``roots`` and ``history``, if given)
    and a gateway on 127.0.0.1."""
    specs = servers if servers is not None else {"conf": stdio_server("conformance_server")}
    rules = permissions if permissions is not None else ALLOW_ALL
    async with (
        Host(specs, log_dir=log_dir, permissions=rules, roots=roots, history=history) as host,
        Gateway(host, **options) as gateway,
    ):
        async with serve_asgi(gateway.asgi()) as base:
            yield Served(host, gateway, base)


@dataclass
class Seen:
    """What a client was sent besides answers."""

    logs: list[types.LoggingMessageNotificationParams] = field(
        default_factory=list[types.LoggingMessageNotificationParams]
    )
    notifications: list[str] = field(default_factory=list[str])
    arrived: dict[str, anyio.Event] = field(default_factory=dict[str, anyio.Event])
    elicitations: list[types.ElicitRequestParams] = field(default_factory=list[types.ElicitRequestParams])
    samplings: list[types.CreateMessageRequestParams] = field(default_factory=list[types.CreateMessageRequestParams])

    def arrival(self, method: str) -> anyio.Event:
        """Set once a notification of this method has arrived."""
        return self.arrived.setdefault(method, anyio.Event())


def client(
    target: Any,
    seen: Seen,
    *,
    answer: dict[str, Any] | None = None,
    elicitation: bool = True,
    sampling: bool = True,
    name: str = "test-client",
    **options: Any,
) -> Client:
    """An SDK client that records what it is sent and answers elicitation with ``answer`` (accept); of the
    handshake era unless ``mode`` says otherwise (the gateway offers both; most tests here are about the
    handshake era's back-channel and notifications, the 2026-07-28 ones say ``mode="auto"``)."""
    options.setdefault("mode", "legacy")

    async def on_elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        seen.elicitations.append(params)
        return types.ElicitResult(action="accept", content=answer or {})

    async def on_sample(
        context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        seen.samplings.append(params)
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="sampled by the client"), model="m"
        )

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        seen.logs.append(params)

    async def on_message(message: object) -> None:
        method = getattr(message, "method", None)
        if isinstance(method, str):
            seen.notifications.append(method)
            seen.arrival(method).set()

    return Client(
        target,
        client_info=types.Implementation(name=name, version="1.0"),
        elicitation_callback=on_elicit if elicitation else None,
        sampling_callback=on_sample if sampling else None,
        logging_callback=on_log,
        message_handler=on_message,
        **options,
    )
