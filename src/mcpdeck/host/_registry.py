"""The host's servers: one connection per name, and the catalog and resource index built from their lists.

A server's list change (tools, resources, prompts) rebuilds what it touches, once, then
publishes each changed server's news. While the host starts its servers, changes are held
back and applied in one rebuild when every server has settled.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import anyio
import mcp_types as types
from anyio.abc import TaskGroup

from mcpdeck.auth import AuthorizeFunction, OAuthInteraction, TokenStore
from mcpdeck.catalog import Catalog, CatalogTool, build_catalog
from mcpdeck.config import AnyServerConfig
from mcpdeck.connection import ServerConnection
from mcpdeck.connection._server_lists import ListKind
from mcpdeck.connection._server_requests import ClientHandlers
from mcpdeck.errors import (
    ConfigError,
    MCPDeckError,
    PromptNotFoundError,
    ResourceNotFoundError,
    ServerUnavailableError,
    ToolNotFoundError,
)
from mcpdeck.events import Event, EventBus, PromptsChanged, ResourcesChanged, ToolsChanged
from mcpdeck.resources import PromptEntry, ResourceIndex
from mcpdeck.status import RetryPolicy, ServerState, ServerStatus
from mcpdeck.traffic import Traffic

__all__ = ["ConnectionOptions", "ServerRegistry", "auto_approve_of"]


@dataclass
class ConnectionOptions:
    """What every connection of a host is given besides its name and config."""

    log_dir: Path
    handlers: ClientHandlers
    environ: Mapping[str, str] | None
    retry: RetryPolicy
    auth_store: TokenStore
    oauth_interaction: OAuthInteraction | AuthorizeFunction | None
    traffic: Traffic | None
    npm_registry: str | None = None

    def connection(
        self,
        name: str,
        config: AnyServerConfig,
        *,
        publish: Callable[[Event], None],
        on_change: Callable[[str, ListKind], None],
        wanted: bool = True,
        trial: bool = False,
    ) -> ServerConnection:
        """A connection (its supervisor not started yet). A ``trial`` one never reconnects and taps no traffic."""
        return ServerConnection(
            name,
            config,
            log_dir=self.log_dir,
            publish=publish,
            on_change=on_change,
            handlers=self.handlers,
            npm_registry=self.npm_registry,
            environ=self.environ,
            retry=RetryPolicy(attempts=0) if trial else self.retry,
            auth_store=self.auth_store,
            oauth_interaction=self.oauth_interaction,
            traffic=None if trial else self.traffic,
            wanted=wanted,
        )


def auto_approve_of(connections: Mapping[str, ServerConnection], server: str) -> list[str]:
    """The ``autoApprove`` patterns of the config a server runs with now.

    The permission gate is given this over the connections dict, not the registry or the host:
    a gate that held them would make a cycle only the cyclic GC frees (with the catalog).
    """
    connection = connections.get(server)
    return list(connection.config.auto_approve) if connection is not None else []


async def wait_all_settled(connections: Iterable[ServerConnection]) -> None:
    """Wait until every one of ``connections`` has settled, side by side."""
    async with anyio.create_task_group() as tg:
        for connection in connections:
            tg.start_soon(connection.wait_settled)


class ServerRegistry:
    """The connections by name, the entries that could not be used, and what their lists make.

    Attributes:
        connections: Every server with a usable config, by name.
        problems: The configured entries that could not be used, with why.
        catalog: The tool catalog now (replaced, with a higher version, on every change).
        index: The resources, templates and prompts of every server now.
    """

    def __init__(self, options: ConnectionOptions, events: EventBus):
        self.options = options
        self.connections: dict[str, ServerConnection] = {}
        self.problems: dict[str, ConfigError] = {}
        self.catalog = Catalog()
        self.index = ResourceIndex()
        self._events = events
        self._tg: TaskGroup | None = None
        self._held: set[tuple[str, ListKind]] | None = None  # list changes held back while servers start

    async def open(
        self,
        tg: TaskGroup,
        servers: Mapping[str, AnyServerConfig],
        *,
        wanted: Callable[[str], bool],
        wait: bool,
    ) -> None:
        """Start a supervisor for each server in ``tg``; with ``wait``, return once all have settled."""
        self._tg = tg
        if wait:
            self._held = set()
        for name, config in servers.items():
            self.start(name, config, wanted=wanted(name))
        if wait:
            await wait_all_settled(self.connections.values())
            held, self._held = self._held or set(), None
            if held:
                self._apply(held)

    async def close(self) -> None:
        """End every supervisor (each closes its session in its own task)."""
        for connection in self.connections.values():
            await connection.close()

    def start(self, name: str, config: AnyServerConfig, *, wanted: bool) -> ServerConnection:
        """Make a server's connection and start its supervisor; ``wanted`` False leaves it stopped."""
        assert self._tg is not None, "the host is not open"
        connection = self.options.connection(
            name, config, publish=self._events.publish, on_change=self.on_change, wanted=wanted
        )
        self.connections[name] = connection
        self._tg.start_soon(connection.run, name=f"mcpdeck server {name}")
        return connection

    async def remove(self, name: str) -> None:
        """Close a server's connection and take its lists out of the catalog and index."""
        connection = self.get(name)
        await connection.close()
        await connection.wait_settled()
        del self.connections[name]
        self._apply({(name, "tools"), (name, "resources"), (name, "prompts")})

    def get(self, name: str) -> ServerConnection:
        """The connection of server ``name``.

        Raises:
            RuntimeError: The host is not open.
            ConfigError: No server has that name.
        """
        if self._tg is None:
            raise RuntimeError("the host is not open; use `async with host:` first")
        connection = self.connections.get(name)
        if connection is None:
            raise ConfigError(f"no server named {name!r}; known: {', '.join(self.connections) or 'none'}", server=name)
        return connection

    def statuses(self) -> dict[str, ServerStatus]:
        """Every configured server's status; an entry that is not usable shows as failed."""
        result = {name: connection.status() for name, connection in self.connections.items()}
        for name, problem in self.problems.items():
            result[name] = ServerStatus(
                name=name, state=ServerState.FAILED, transport="?", target="", error=str(problem), unreadable=True
            )
        return result

    # ----- the catalog and the index -------------------------------------------------------

    def on_change(self, server: str, kind: ListKind) -> None:
        """A connection's list changed (its ``on_change``)."""
        if self._held is not None:  # servers are still starting: one rebuild when all have settled
            self._held.add((server, kind))
            return
        self._apply({(server, kind)})

    def _apply(self, changes: set[tuple[str, ListKind]]) -> None:
        """Rebuild what the changes touch, once, then tell each changed server's news."""
        live = list(self.connections.values())
        kinds = {kind for _, kind in changes}
        if "tools" in kinds:
            self.catalog = build_catalog({c.name: c.tools for c in live if c.tools}, self.catalog.version + 1)
        if kinds & {"resources", "prompts"}:
            self.index = ResourceIndex(
                resources={c.name: c.resources for c in live},
                templates={c.name: c.resource_templates for c in live},
                prompts={c.name: c.prompts for c in live},
            )
        for server, kind in sorted(changes):
            self._events.publish(self._list_changed_event(server, kind))

    def _list_changed_event(self, server: str, kind: ListKind) -> Event:
        connection = self.connections.get(server)
        if kind == "tools":
            count = len(connection.tools) if connection else 0
            return ToolsChanged(server=server, tool_count=count, catalog_version=self.catalog.version)
        if kind == "resources":
            resources = len(connection.resources) if connection else 0
            templates = len(connection.resource_templates) if connection else 0
            return ResourcesChanged(server=server, resource_count=resources, template_count=templates)
        return PromptsChanged(server=server, prompt_count=len(connection.prompts) if connection else 0)

    # ----- finding things --------------------------------------------------------------------

    def tool(self, name: str) -> CatalogTool:
        """The catalog's tool ``name``.

        Raises:
            ToolNotFoundError: No tool of that name (with close names).
            ServerUnavailableError: The name is of a server that is not connected.
        """
        entry = self.catalog.get(name)
        if entry is None:
            raise self.tool_not_found(name)
        return entry

    def tool_not_found(self, name: str) -> MCPDeckError:
        """The error for a tool name the catalog does not have, saying why when it can."""
        # A tool of a server that is down is not "unknown": say why it is missing.
        for server, connection in self.connections.items():
            if name.startswith(f"mcp__{server}__") and connection.state is not ServerState.CONNECTED:
                return ServerUnavailableError(server, connection.unavailable_reason())
        # A server's own name for a tool (`echo`) points at its public name(s) first.
        same = [tool.name for tool in self.catalog if tool.original_name == name]
        close = difflib.get_close_matches(name, self.catalog.names(), n=3)
        return ToolNotFoundError(name, suggestions=same + [n for n in close if n not in same][: max(0, 3 - len(same))])

    def server_for_uri(self, uri: str, server: str | None) -> ServerConnection:
        """The connection to read ``uri`` from: ``server``'s, else the one server that offers it.

        Raises:
            ResourceNotFoundError: No server (or more than one) offers it and none was named.
        """
        if server is not None:
            return self.get(server)
        candidates = self.index.servers_for_uri(uri)
        if len(candidates) == 1:
            return self.get(candidates[0])
        if not candidates:
            # A URI no one lists may still be readable (servers need not list everything):
            # with a single server that offers resources at all, ask it.
            offering = [c for c in self.connections.values() if c.state is ServerState.CONNECTED and c.offers_resources]
            if len(offering) == 1:
                return offering[0]
        raise ResourceNotFoundError(uri, servers=candidates)

    def prompt(self, name: str) -> PromptEntry:
        """The prompt with public name ``name``.

        Raises:
            PromptNotFoundError: No prompt of that name (with close names).
        """
        entry = self.index.prompt(name)
        if entry is None:
            names = [p.name for p in self.index.prompts]
            raise PromptNotFoundError(name, suggestions=difflib.get_close_matches(name, names, n=3))
        return entry

    # ----- asking every server -----------------------------------------------------------------

    async def set_log_level(self, level: types.LoggingLevel, servers: Iterable[str] | None) -> None:
        """Ask connected servers (all, or ``servers``) to send log messages from ``level`` up."""
        names = list(self.connections) if servers is None else list(servers)
        for name in names:
            connection = self.connections.get(name)
            if connection is None or connection.state is not ServerState.CONNECTED:
                continue
            await connection.set_log_level(level)

    async def roots_changed(self, servers: Iterable[str] | None = None, *, offer: bool = False) -> None:
        """Tell connected servers (all, or ``servers``) that their roots changed; with ``offer``, those opened
        without roots that would be offered some now connect again (``ServerConnection.roots_changed``)."""
        names = list(self.connections) if servers is None else list(servers)
        for name in names:
            connection = self.connections.get(name)
            if connection is not None:
                await connection.roots_changed(offer=offer)

    def answerers_changed(self) -> None:
        """Someone may answer servers' questions now: sessions opened without a back-channel because nobody
        could connect again with one (``ServerConnection.answerers_changed``)."""
        for connection in self.connections.values():
            connection.answerers_changed()
