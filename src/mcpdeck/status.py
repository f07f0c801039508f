"""The public face of a server's connection: its state, a status snapshot, the retry policy."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: importing the status costs no SDK import
    import mcp_types as types

__all__ = ["RetryPolicy", "ServerState", "ServerStatus"]


class ServerState(StrEnum):
    """Where a server's connection stands."""

    DISABLED = "disabled"
    CONNECTING = "connecting"
    CONNECTED = "connected"
    RECONNECTING = "reconnecting"
    FAILED = "failed"
    STOPPED = "stopped"


@dataclass(frozen=True)
class ServerStatus:
    """A snapshot of one server, for display and for callers.

    Attributes:
        name: The server's name.
        state: Its state now.
        transport: ``stdio``, ``http``, ``sse``, ``http|sse`` (not yet known) or ``in-process``.
        target: The command line (as configured, variables unexpanded) or the URL.
        error: Why it is not connected, when it failed.
        error_at: When that error happened.
        connected_at: When the current session started.
        server_info: Name and version the server gave.
        protocol_version: The MCP version negotiated.
        instructions: The server's instructions for the model, if any.
        capabilities: What the server offers.
        tool_count: Tools in the catalog from this server (after filters).
        log_path: The file its stderr (stdio servers) and host notes go to.
        pid: The server process's id (stdio servers, while connected).
        warnings: What is missing although the server is connected: a resource, template or
            prompt list it failed to give ("could not list prompts: ..."). Each is asked for
            again on that list's change notice and at the next connect.
        unreadable: The server's entry in the config file could not be read (``error`` says why):
            it is failed, with no config behind it (``transport`` shows ``?``) until the entry is fixed.
    """

    name: str
    state: ServerState
    transport: str
    target: str
    error: str | None = None
    error_at: datetime | None = None
    connected_at: datetime | None = None
    server_info: types.Implementation | None = None
    protocol_version: str | None = None
    instructions: str | None = None
    capabilities: types.ServerCapabilities | None = None
    tool_count: int = 0
    log_path: Path | None = None
    pid: int | None = None
    warnings: tuple[str, ...] = ()
    unreadable: bool = False

    def to_json(self) -> dict[str, Any]:
        """A stable JSON shape (used by ``--json`` output and the web API)."""
        return {
            "name": self.name,
            "state": self.state.value,
            "transport": self.transport,
            "target": self.target,
            "error": self.error,
            "errorAt": self.error_at.isoformat() if self.error_at else None,
            "connectedAt": self.connected_at.isoformat() if self.connected_at else None,
            "serverInfo": (
                {"name": self.server_info.name, "version": self.server_info.version} if self.server_info else None
            ),
            "protocolVersion": self.protocol_version,
            "instructions": self.instructions,
            "toolCount": self.tool_count,
            "logPath": str(self.log_path) if self.log_path else None,
            "pid": self.pid,
            "warnings": list(self.warnings),
        }


@dataclass(frozen=True)
class RetryPolicy:
    """How a connection is kept alive: health pings, and retries with exponential backoff and jitter.

    Attempt ``n`` waits ``initial * 2**(n-1)`` seconds, capped at ``maximum``, times a random
    factor in ``[1 - jitter, 1 + jitter]``. After ``attempts`` failed tries the server is failed.
    """

    attempts: int = 5
    initial: float = 1.0
    maximum: float = 30.0
    jitter: float = 0.2
    health_interval: float = 30.0
    """Seconds without a list change after which a connected server is pinged (0: never). A missed ping counts as a
    lost connection."""

    def delay(self, attempt: int) -> float:
        """Seconds to wait before reconnect attempt ``attempt`` (1-based)."""
        base = min(self.initial * 2 ** (attempt - 1), self.maximum)
        return base * random.uniform(1 - self.jitter, 1 + self.jitter)
