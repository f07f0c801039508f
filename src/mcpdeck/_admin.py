"""Administration of the host's servers, and what is saved of it: the config file's side of ``Host``.

Loading the servers and permission rules a host starts with; adding, changing and removing a
server, and the global switch, each saved to the config file first (in a worker thread: the
store waits for the file's lock and fsyncs) and then applied to the running connections;
trying a server apart from the catalog (``test_server``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types

from mcpdeck._registry import ServerRegistry
from mcpdeck.config import (
    ConfigStore,
    McpConfig,
    RemoteServerConfig,
    ServerConfig,
    StdioServerConfig,
    parse_server_config,
    validate_server_name,
)
from mcpdeck.connection import InProcessServer
from mcpdeck.errors import ConfigError
from mcpdeck.events import ConfigChanged, Event, EventBus
from mcpdeck.permissions import PermissionGate, PermissionRules, parse_permissions
from mcpdeck.status import ServerState, ServerStatus

__all__ = ["ServerAdmin", "ServerSpec", "ServerTest", "load_config", "load_permissions", "to_config"]

ServerSpec = ServerConfig | InProcessServer | Mapping[str, Any]
"""What a server can be given as in code: a config model, its JSON form, or an SDK server object."""


@dataclass(frozen=True)
class ServerTest:
    """What ``Host.test_server`` found.

    Attributes:
        status: The server's status at the end of the attempt (``connected`` on success).
        tools: The tools it listed (after filters).
        duration: Seconds the attempt took.
    """

    status: ServerStatus
    tools: list[types.Tool]
    duration: float

    @property
    def ok(self) -> bool:
        """Whether the server connected and listed its tools."""
        return self.status.state is ServerState.CONNECTED


def to_config(name: str, spec: ServerSpec) -> ServerConfig | InProcessServer:
    """A server given in code as the config it runs with (its JSON form parsed).

    Raises:
        ConfigError: The JSON form is not a valid server config.
    """
    if isinstance(spec, StdioServerConfig | RemoteServerConfig):
        return spec
    if isinstance(spec, Mapping):
        return parse_server_config(name, dict(spec))  # pyright: ignore[reportUnknownArgumentType]
    return spec


def load_config(initial: Mapping[str, ServerSpec] | McpConfig | None, store: ConfigStore | None) -> McpConfig:
    """The servers a host starts with: those given in code (bad entries kept as problems), else the store's."""
    if isinstance(initial, McpConfig):
        return initial
    if initial is not None:
        servers: dict[str, Any] = {}
        problems: dict[str, ConfigError] = {}
        for name, spec in initial.items():
            try:
                validate_server_name(name)
                servers[name] = to_config(name, spec)
            except ConfigError as error:
                problems[name] = error
        return McpConfig(servers=servers, problems=problems)
    if store is not None:
        return store.read()
    return McpConfig()


def load_permissions(
    gate: PermissionGate, rules: PermissionRules | Mapping[str, Any] | None, store: ConfigStore | None
) -> None:
    """Give ``gate`` its rules: those given in code, else the store's. A broken rule file closes the gate."""
    gate.store, gate.problem = store, None
    try:
        if isinstance(rules, PermissionRules):
            gate.rules = rules
        elif rules is not None:
            gate.rules = parse_permissions({"permissions": dict(rules)})
        elif store is not None:
            gate.rules = parse_permissions(store.read_raw(), path=str(store.path))
    except ConfigError as error:  # the servers still start
        gate.problem = str(error)


class ServerAdmin:
    """Adds, changes and removes servers, flips the global switch, and saves each change first.

    Attributes:
        enabled: The global switch: False means no server is connected.
    """

    def __init__(self, registry: ServerRegistry, events: EventBus, store: ConfigStore | None):
        self.enabled = True
        self._registry = registry
        self._events = events
        self._store = store

    async def add(self, name: str, config: ServerSpec, *, save: bool) -> ServerStatus:
        """Add a server or replace its config, (re)connect it, and wait until it has settled."""
        validate_server_name(name)
        resolved = to_config(name, config)
        registry = self._registry
        existed = name in registry.connections
        if save and self._store is not None and isinstance(resolved, StdioServerConfig | RemoteServerConfig):
            await anyio.to_thread.run_sync(self._store.put_server, name, resolved)
        registry.problems.pop(name, None)
        if existed:
            status = await registry.connections[name].reconnect(resolved)
        else:
            status = await registry.start(name, resolved, wanted=self.enabled).wait_settled()
        self._events.publish(ConfigChanged(server=name, change="updated" if existed else "added"))
        return status

    async def update(self, name: str, changes: Mapping[str, Any], *, save: bool) -> ServerStatus:
        """Change some keys of a server's config (JSON names) and reconnect it."""
        current = self._registry.get(name).config
        if not isinstance(current, StdioServerConfig | RemoteServerConfig):
            raise ConfigError(f"server {name!r} runs in-process; replace it with add_server", server=name)
        merged = {**current.to_json(), **changes}
        return await self.add(name, parse_server_config(name, merged), save=save)

    async def remove(self, name: str, *, save: bool) -> None:
        """Disconnect a server and delete its config (also an entry that could not be used)."""
        registry = self._registry
        if name in registry.problems and name not in registry.connections:
            registry.problems.pop(name)
        else:
            await registry.remove(name)
        if save and self._store is not None:
            await anyio.to_thread.run_sync(self._store.remove_server, name)
        self._events.publish(ConfigChanged(server=name, change="removed"))

    async def set_enabled(self, enabled: bool, *, save: bool) -> None:
        """The global switch: off stops every server, on connects every enabled one."""
        self.enabled = enabled
        if save and self._store is not None:
            await anyio.to_thread.run_sync(self._store.set_enabled, enabled)
        async with anyio.create_task_group() as tg:
            for connection in self._registry.connections.values():
                tg.start_soon(connection.reconnect if enabled else connection.disconnect)
        self._events.publish(ConfigChanged(server=None, change="enabled" if enabled else "disabled"))

    async def test(self, config: ServerSpec | str, *, name: str | None) -> ServerTest:
        """Connect a server apart from the catalog, list its tools, disconnect; nothing is saved."""
        if isinstance(config, str):
            name, spec = name or config, self._registry.get(config).config
        else:
            name = validate_server_name(name or "test")
            spec = to_config(name, config)
        if isinstance(spec, StdioServerConfig | RemoteServerConfig) and spec.disabled:
            spec = spec.model_copy(update={"disabled": False})
        events: list[Event] = []
        connection = self._registry.options.connection(
            name, spec, publish=events.append, on_change=lambda _server, _kind: None, trial=True
        )
        started = time.perf_counter()
        tests: list[ServerTest] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(connection.run)
            status = await connection.wait_settled()
            tools = [listed.tool() for listed in connection.tools]
            tests.append(ServerTest(status=status, tools=tools, duration=time.perf_counter() - started))
            await connection.close()
        return tests[0]
