"""What the server commands ask of a backend, and the typed answers both backends give.

A command runs against a ``Backend``: the local one starts servers in this process
(``_host_backend.HostBackend``, over ``Host``), the other asks a running ``mcpdeck serve``
for the same config over its REST API (``_serve_backend.ServeBackend``). Both answer with
the objects below, built from the stable JSON shapes of docs/cli.md (the status object, the
tool object, the result object ...): a command renders them once, whichever backend
answered, and ``--json`` prints their JSON.

Every method is ``async``: the host's are real coroutines on anyio; the serve backend's block
on a socket and never wait on an event loop, so its commands run without one (``_attach.drive``)
and without importing anyio or the MCP SDK. This module stays as light: no SDK, no pydantic.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast

if TYPE_CHECKING:
    from mcpdeck.cli._output import ProgressLine
    from mcpdeck.config import ServerConfig

__all__ = [
    "Backend",
    "CallOutcome",
    "ChatOptions",
    "ChatSession",
    "LogTail",
    "OfferKind",
    "Offered",
    "ServerDetail",
    "Status",
    "TestReport",
]

OfferKind = Literal["tools", "resources", "prompts"]
"""What ``tools``, ``resources`` and ``prompts`` list."""


@dataclass(frozen=True)
class Status:
    """One server's status: the status object of docs/cli.md (``ServerStatus.to_json()``), typed to read."""

    json: dict[str, Any]
    """The status object as ``--json`` prints it."""

    @property
    def name(self) -> str:
        return str(self.json["name"])

    @property
    def state(self) -> str:
        return str(self.json["state"])

    @property
    def transport(self) -> str:
        return str(self.json["transport"])

    @property
    def target(self) -> str:
        return str(self.json["target"])

    @property
    def error(self) -> str | None:
        return self.json.get("error")

    @property
    def tool_count(self) -> int:
        return int(self.json["toolCount"])

    @property
    def server_info(self) -> str | None:
        """``name version`` of what the server said it is, or None."""
        info = self.json.get("serverInfo")
        if not info:
            return None
        found = cast(dict[str, Any], info)
        return f"{found.get('name') or ''} {found.get('version') or ''}".strip()

    @property
    def protocol_version(self) -> str | None:
        return self.json.get("protocolVersion")

    @property
    def log_path(self) -> str | None:
        return self.json.get("logPath")

    @property
    def warnings(self) -> list[str]:
        return [str(warning) for warning in self.json.get("warnings") or ()]


@dataclass(frozen=True)
class ServerDetail:
    """``get``: a server's config entry (masked unless asked), its status, its tools' original names."""

    config: dict[str, Any]
    status: Status
    tools: list[str]

    def to_json(self) -> dict[str, Any]:
        return {"config": self.config, "status": self.status.json, "tools": self.tools}


@dataclass(frozen=True)
class TestReport:
    """``test`` (and ``add``'s try): the server's status as tried, whether it connected, how long it took, its tools."""

    __test__ = False  # not a pytest class

    status: Status
    ok: bool
    duration: float
    tools: list[str]

    def to_json(self) -> dict[str, Any]:
        return self.status.json | {"ok": self.ok, "duration": round(self.duration, 3), "tools": self.tools}


@dataclass(frozen=True)
class Offered:
    """What some servers offer (``OfferKind``): the JSON documents of docs/cli.md, and the servers that failed."""

    found: Any
    """``tools``: a list of tool objects; ``resources``: ``{"resources", "templates"}``; ``prompts``: a list."""
    failed: list[Status] = field(default_factory=list[Status])


@dataclass(frozen=True)
class CallOutcome:
    """``call``: the result object of docs/cli.md."""

    json: dict[str, Any]

    @property
    def is_error(self) -> bool:
        return bool(self.json.get("isError"))

    def text(self) -> str:
        """The result as text, as ``ToolResult.text()`` renders it (the same function)."""
        from mcpdeck.results import result_text

        return result_text(
            cast(list[dict[str, Any]], self.json.get("content") or []), self.json.get("structuredContent")
        )


@dataclass(frozen=True)
class LogTail:
    """``logs``: the log file, and its lines: the last ones, then (``--follow``) each new one as it is written."""

    path: str | None
    lines: Iterable[str]


@dataclass(frozen=True)
class ChatOptions:
    """What ``mcpdeck chat`` was given, as click passes it (``ChatOptions(**params)``)."""

    prompt: str | None
    model: str | None
    servers: tuple[str, ...]
    system: str | None
    yes: bool
    max_steps: int
    tool_search: int | None
    no_tool_search: bool
    as_json: bool


class ChatSession(Protocol):
    """A model with the servers' tools: one conversation, run prompt by prompt."""

    model: str
    """The model's name."""
    errors: dict[str, str]
    """The servers (of those asked for) that are not connected, and why."""

    def tool_count(self) -> int:
        """How many MCP tools the model is offered."""
        ...

    def tool_names(self) -> list[str]:
        """Every tool the model is offered (native ones first)."""
        ...

    def run(self, prompt: str) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """Run one prompt: its events as ``(event name, data)`` (``mcpdeck.agent.event_json``'s shape);
        the questions it asks (approvals, a server's elicitation) are asked at the terminal meanwhile."""
        ...

    def reset(self) -> None:
        """A new conversation with the same settings."""
        ...

    async def read_turn(self) -> str | None:
        """The user's next line (``_chat_print.read_turn``), read so that the servers keep running meanwhile."""
        ...


class Backend(Protocol):
    """The servers of one config, as the server commands use them (see the module's docstring)."""

    via_serve: bool
    """Whether a running ``serve`` answers (``list`` says so)."""

    def close(self) -> None:
        """Let go of what the backend holds (a connection)."""
        ...

    async def statuses(
        self,
        first: Callable[[list[Status], list[str]], None] | None = None,
        then: Callable[[Status], None] | None = None,
    ) -> list[Status]:
        """Every server's status, in config order.

        Without ``first``, once every server has settled. With it, ``first(statuses, ready)``
        once the servers that settle soon have (``ready``: their names), then ``then(status)`` for
        each other one as it settles; neither is called when there are no servers.
        """
        ...

    async def offered(
        self, kind: OfferKind, servers: Sequence[str], show: Callable[[Offered], None], *, at_once: bool
    ) -> None:
        """What the servers (``servers``: only these) offer, given to ``show``: in one piece once every server
        has settled (``at_once``), else in pieces, the servers ready first, then each other one as it settles."""
        ...

    async def server(self, name: str, *, show_secrets: bool = False) -> ServerDetail:
        """One server, connected (``show_secrets``: its config and target unmasked)."""
        ...

    async def test(self, name: str) -> TestReport:
        """Try a saved server as it is configured."""
        ...

    async def try_server(self, name: str, server: ServerConfig) -> TestReport:
        """Try a server apart from the config (nothing saved), with the global ``--startup-timeout`` and ``--root``."""
        ...

    async def exists(self, name: str) -> bool:
        """Whether the config has a server (or an unusable entry) of that name."""
        ...

    async def save(self, name: str, server: ServerConfig, *, force: bool) -> None:
        """Save a server in the config file (``force``: replacing one of that name), without trying it."""
        ...

    async def remove(self, name: str) -> None:
        """Delete a server's entry."""
        ...

    async def set_disabled(self, name: str, disabled: bool) -> None:
        """Set or clear a server's ``disabled``."""
        ...

    async def log(self, name: str, lines: int, *, follow: bool) -> LogTail:
        """The last ``lines`` lines of a server's log (0: all); with ``follow`` each new one after, until Ctrl-C."""
        ...

    async def call(
        self,
        tool: str,
        arguments: dict[str, Any],
        *,
        timeout: float | None,
        validate: bool,
        progress: ProgressLine,
    ) -> CallOutcome:
        """Call a tool, its progress drawn on ``progress``; recorded in the history."""
        ...

    def chat(
        self, options: ChatOptions, spec: str, search: bool | int, raw: dict[str, Any]
    ) -> AbstractAsyncContextManager[ChatSession]:
        """A chat with the model ``spec`` (``raw``: the config's document, for its provider settings)."""
        ...
