"""``Host``: the composition root. Many servers, one catalog, one place to call tools.

::

    async with Host.from_file() as host:            # or Host({"name": config, ...})
        for tool in host.tools: ...
        result = await host.call_tool("mcp__fs__read_file", {"path": "README.md"})
        print(result.text())

Entering the host starts every server's supervisor at once and waits until each has
connected, failed or timed out (each within its own startup timeout), so a slow or broken
server delays nothing but itself. Leaving it stops them all; no child process outlives it.
"""

from __future__ import annotations

import difflib
import functools
import os
import time
import uuid
from collections.abc import Callable, Coroutine, Iterable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from types import EllipsisType, TracebackType
from typing import Any, Self

import anyio
import anyio.to_thread
import mcp_types as types
from anyio.abc import TaskGroup

from mcpdeck._client_requests import ClientHandlers
from mcpdeck._lists import ListKind
from mcpdeck._paths import log_dir
from mcpdeck.auth import AuthorizeFunction, OAuthInteraction, TokenStore
from mcpdeck.callbacks import ElicitationHandler, SamplingHandler
from mcpdeck.catalog import Catalog, CatalogTool, build_catalog
from mcpdeck.config import (
    AnyServerConfig,
    ConfigStore,
    InProcessServer,
    InProcessServerConfig,
    McpConfig,
    as_server_config,
    parse_server_config,
    resolve_config_path,
    validate_server_name,
)
from mcpdeck.connection import ProgressCallback, ServerConnection
from mcpdeck.errors import (
    ConfigError,
    InvalidArgumentsError,
    MCPDeckError,
    PermissionDeniedError,
    PromptNotFoundError,
    ResourceNotFoundError,
    ServerUnavailableError,
    ToolNotFoundError,
)
from mcpdeck.events import (
    ConfigChanged,
    Event,
    EventBus,
    PromptsChanged,
    ResourcesChanged,
    ToolCallFinished,
    ToolCallProgress,
    ToolCallStarted,
    ToolsChanged,
    current_caller,
    current_conversation,
)
from mcpdeck.permissions import Access, ApprovalCallback, PermissionGate, PermissionRules, parse_permissions
from mcpdeck.resources import PromptEntry, ResourceEntry, ResourceIndex, TemplateEntry
from mcpdeck.results import ToolResult
from mcpdeck.status import RetryPolicy, ServerState, ServerStatus
from mcpdeck.traffic import Traffic

__all__ = ["Host", "ServerTest"]

ServerSpec = AnyServerConfig | InProcessServer | Mapping[str, Any]
"""What a server can be given as in code: a config model, its JSON form, or an SDK server object."""


def default_log_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Where server logs go: ``$MCPDECK_LOG_DIR``, ``$MCPDECK_HOME/logs``, else ``<user log dir>/mcpdeck/servers``."""
    return log_dir(environ)


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


def _roots(roots: Iterable[str | os.PathLike[str]] | None) -> list[types.Root] | None:
    """Roots as the protocol gives them: ``file://`` URIs of absolute folders, named after the folder.

    None (nobody asked for roots) stays None: the host then offers no roots at all.
    """
    if roots is None:
        return None
    result: list[types.Root] = []
    for root in roots:
        text = os.fspath(root)
        if text.startswith("file://"):
            result.append(types.Root.model_validate({"uri": text, "name": Path(text[7:]).name or text}))
        else:
            path = Path(text).expanduser().resolve()
            result.append(types.Root.model_validate({"uri": path.as_uri(), "name": path.name or str(path)}))
    return result


def _auto_approve(connections: Mapping[str, ServerConnection], server: str) -> list[str]:
    """The ``autoApprove`` patterns of the config a server runs with now."""
    connection = connections.get(server)
    return list(connection.config.auto_approve) if connection is not None else []


class Host:
    """Connects MCP servers and serves their tools as one catalog."""

    def __init__(
        self,
        servers: Mapping[str, ServerSpec] | McpConfig | None = None,
        *,
        store: ConfigStore | None = None,
        log_dir: str | os.PathLike[str] | None = None,
        environ: Mapping[str, str] | None = None,
        only: Iterable[str] | None = None,
        wait: bool = True,
        retry: RetryPolicy | None = None,
        elicitation: ElicitationHandler | None = None,
        sampling: SamplingHandler | None = None,
        roots: Iterable[str | os.PathLike[str]] | None = None,
        oauth_interaction: OAuthInteraction | AuthorizeFunction | None = None,
        auth_store: TokenStore | None = None,
        approve: ApprovalCallback | None = None,
        yes: bool = False,
        permissions: PermissionRules | Mapping[str, Any] | None = None,
        traffic: Traffic | None = None,
    ):
        """Create a host; nothing connects until it is entered.

        Args:
            servers: Servers given in code (configs, their JSON form, or SDK server objects),
                or a loaded ``McpConfig``. Leave out to read ``store``.
            store: The config file to load from and save changes to.
            log_dir: Where server logs go (default: the user log dir).
            environ: The environment for ``${VAR}`` expansion and stdio children (default: os.environ).
            only: Connect only these servers; the others are loaded but stay stopped.
            wait: Whether entering the host waits until every server has settled.
            retry: How servers whose connection is lost are reconnected (default: 5 tries,
                1 s doubling to 30 s, with jitter).
            elicitation: Answers servers' requests for user input; without it they are declined.
            sampling: Answers servers' requests for a model completion; without it they are refused.
            roots: Folders (paths or ``file://`` URIs) offered to servers as roots. Default: none,
                and the roots capability is not announced, so a server keeps to what its own
                command line says (a server's ``roots`` config key still gives it its own).
            oauth_interaction: How to ask the user to authorize a remote server that needs OAuth
                (e.g. ``mcpdeck.auth.BrowserInteraction()``). Without it the host never asks: such a
                server fails with "needs authorization: run `mcpdeck auth login NAME`". The user's
                time counts against the server's startup timeout.
            auth_store: Where OAuth tokens and client registrations are kept (default: the user
                data dir; the OS keyring with ``MCPDECK_KEYRING=1``).
            approve: Asks the user about a tool call the permission rules leave to ``ask``
                (``call_tool(..., check_permission=True)``, the agent loop); without it such a
                call is denied, saying how to allow it.
            yes: Approve every ``ask`` without asking (``--yes``); ``deny`` rules still win.
            permissions: ``allow``/``ask``/``deny`` rules given in code (the ``permissions``
                object's form, or ``PermissionRules``); default: the config file's.
            traffic: Keeps every server's recent JSON-RPC messages (in memory) for display;
                without it no stream is tapped.
        """
        self._initial = servers
        self._store = store
        self._log_dir = Path(log_dir) if log_dir is not None else default_log_dir(environ)
        self._environ = environ
        self._only = set(only) if only is not None else None
        self._wait = wait
        self._retry = retry or RetryPolicy()
        self._oauth_interaction = oauth_interaction
        self._auth_store = auth_store or TokenStore(environ=environ)
        self.traffic = traffic
        """The servers' recent JSON-RPC messages, when the host was given ``traffic=``."""
        self.events = EventBus()
        """Typed events: subscribe with ``events.on(fn)`` or ``async with events.subscribe() as s``."""
        self._connections: dict[str, ServerConnection] = {}
        self._problems: dict[str, ConfigError] = {}
        self._handlers = ClientHandlers(elicitation=elicitation, sampling=sampling, roots=_roots(roots))
        self._index = ResourceIndex()
        self._catalog = Catalog()
        self._npm_registry: str | None = None
        self._enabled = True
        self._tg: TaskGroup | None = None
        self._held: set[tuple[str, ListKind]] | None = None  # list changes held back while servers start
        self._stack: AsyncExitStack | None = None
        self._rules = permissions
        # The gate looks up autoApprove in the connections dict, not through the host: a gate
        # that held the host would make a cycle only the cyclic GC frees (with the catalog).
        self.permissions = PermissionGate(
            approver=approve, yes_to_all=yes, auto_approve=functools.partial(_auto_approve, self._connections)
        )
        """The permission gate model-made calls pass (rules loaded when the host is entered)."""

    @classmethod
    def from_file(cls, path: str | os.PathLike[str] | None = None, **options: Any) -> Host:
        """A host for a config file: ``path``, else ``$MCPDECK_CONFIG``, else the user config dir."""
        return cls(store=ConfigStore(resolve_config_path(path)), **options)

    # ----- lifecycle -------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        if self._stack is not None:
            raise RuntimeError("this Host is already open; create a new one")
        config = self._load_config()
        self._load_permissions()
        self._npm_registry = config.npm_registry
        self._enabled = config.enabled
        self._problems = dict(config.problems)
        async with AsyncExitStack() as stack:
            self._tg = await stack.enter_async_context(anyio.create_task_group())
            stack.push_async_callback(self._close_all)
            if self._wait:
                self._held = set()
            for name, server in config.servers.items():
                self._start(name, server, wanted=self._enabled and (self._only is None or name in self._only))
            if self._wait:
                await self._wait_settled(self._connections.values())
                held, self._held = self._held or set(), None
                if held:
                    self._apply_changes(held)
            self._stack = stack.pop_all()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        stack, self._stack = self._stack, None
        if stack is not None:
            # The body's own exception is not handed to the task group: it would come out
            # wrapped in an ExceptionGroup, and `except ToolNotFoundError` would miss it.
            await stack.aclose()
        return None

    async def _close_all(self) -> None:
        for connection in self._connections.values():
            await connection.close()

    def _load_config(self) -> McpConfig:
        initial = self._initial
        if isinstance(initial, McpConfig):
            return initial
        if initial is not None:
            servers: dict[str, Any] = {}
            problems: dict[str, ConfigError] = {}
            for name, spec in initial.items():
                try:
                    validate_server_name(name)
                    servers[name] = as_server_config(name, spec)
                except ConfigError as error:
                    problems[name] = error
            return McpConfig(servers=servers, problems=problems)
        if self._store is not None:
            return self._store.read()
        return McpConfig()

    def _load_permissions(self) -> None:
        gate, rules = self.permissions, self._rules
        gate.store, gate.problem = self._store, None
        try:
            if isinstance(rules, PermissionRules):
                gate.rules = rules
            elif rules is not None:
                gate.rules = parse_permissions({"permissions": dict(rules)})
            elif self._store is not None:
                gate.rules = parse_permissions(self._store.read_raw(), path=str(self._store.path))
        except ConfigError as error:  # a broken rule file closes the gate; the servers still start
            gate.problem = str(error)

    def _start(self, name: str, config: AnyServerConfig, *, wanted: bool) -> ServerConnection:
        assert self._tg is not None, "the host is not open"
        connection = ServerConnection(
            name,
            config,
            log_dir=self._log_dir,
            publish=self.events.publish,
            on_change=self._on_change,
            handlers=self._handlers,
            npm_registry=self._npm_registry,
            environ=self._environ,
            retry=self._retry,
            auth_store=self._auth_store,
            oauth_interaction=self._oauth_interaction,
            traffic=self.traffic,
            wanted=wanted,
        )
        self._connections[name] = connection
        self._tg.start_soon(connection.run, name=f"mcpdeck server {name}")
        return connection

    @staticmethod
    async def _wait_settled(connections: Iterable[ServerConnection]) -> None:
        async with anyio.create_task_group() as tg:
            for connection in connections:
                tg.start_soon(connection.wait_settled)

    def _connection(self, name: str) -> ServerConnection:
        if self._tg is None:
            raise RuntimeError("the host is not open; use `async with host:` first")
        connection = self._connections.get(name)
        if connection is None:
            raise ConfigError(f"no server named {name!r}; known: {', '.join(self._connections) or 'none'}", server=name)
        return connection

    def start_task(self, fn: Callable[..., Coroutine[Any, Any, Any]], *args: Any, name: str | None = None) -> None:
        """Run ``fn(*args)`` in the host's task group, beside the servers; it is cancelled when the host closes.

        ``fn`` must handle its own errors: one escaping would close the host.

        Raises:
            RuntimeError: The host is not open.
        """
        if self._tg is None:
            raise RuntimeError("the host is not open; use `async with host:` first")
        self._tg.start_soon(fn, *args, name=name)

    # ----- reading ---------------------------------------------------------------------

    @property
    def servers(self) -> dict[str, ServerStatus]:
        """Every configured server's status, including entries that are not usable (as failed)."""
        result = {name: connection.status() for name, connection in self._connections.items()}
        for name, problem in self._problems.items():
            result[name] = ServerStatus(
                name=name, state=ServerState.FAILED, transport="?", target="", error=str(problem)
            )
        return result

    @property
    def enabled(self) -> bool:
        """The global switch: False means no server is connected."""
        return self._enabled

    @property
    def catalog(self) -> Catalog:
        """The tool catalog now; a new one (higher ``version``) replaces it on every change."""
        return self._catalog

    @property
    def tools(self) -> list[CatalogTool]:
        """All tools from all connected servers."""
        return list(self._catalog)

    def config_of(self, name: str) -> AnyServerConfig:
        """The config a server runs with (variables unexpanded)."""
        return self._connection(name).config

    @property
    def client_handlers(self) -> ClientHandlers:
        """How servers' requests to the host (elicitation, sampling, roots) are answered, for every
        connection. A face that serves other clients (the gateway) may wrap these to forward them."""
        return self._handlers

    async def set_log_level(self, level: types.LoggingLevel, servers: Iterable[str] | None = None) -> None:
        """Ask connected servers (all, or ``servers``) to send log messages from ``level`` up.

        Servers that do not offer logging, or refuse, are left as they are (and noted in the log).
        """
        names = list(self._connections) if servers is None else list(servers)
        for name in names:
            connection = self._connections.get(name)
            if connection is None or connection.state is not ServerState.CONNECTED:
                continue
            await connection.set_log_level(level)

    @property
    def config_path(self) -> Path | None:
        """The config file this host saves to, if any."""
        return self._store.path if self._store else None

    def _on_change(self, server: str, kind: ListKind) -> None:
        if self._held is not None:  # servers are still starting: one rebuild when all have settled
            self._held.add((server, kind))
            return
        self._apply_changes({(server, kind)})

    def _apply_changes(self, changes: set[tuple[str, ListKind]]) -> None:
        """Rebuild what the changes touch, once, then tell each changed server's news."""
        live = list(self._connections.values())
        kinds = {kind for _, kind in changes}
        if "tools" in kinds:
            self._catalog = build_catalog({c.name: c.tools for c in live if c.tools}, self._catalog.version + 1)
        if kinds & {"resources", "prompts"}:
            self._index = ResourceIndex(
                resources={c.name: c.resources for c in live},
                templates={c.name: c.resource_templates for c in live},
                prompts={c.name: c.prompts for c in live},
            )
        for server, kind in sorted(changes):
            connection = self._connections.get(server)
            if kind == "tools":
                count = len(connection.tools) if connection else 0
                self.events.publish(
                    ToolsChanged(server=server, tool_count=count, catalog_version=self._catalog.version)
                )
            elif kind == "resources":
                resources = len(connection.resources) if connection else 0
                templates = len(connection.resource_templates) if connection else 0
                self.events.publish(ResourcesChanged(server=server, resource_count=resources, template_count=templates))
            else:
                count = len(connection.prompts) if connection else 0
                self.events.publish(PromptsChanged(server=server, prompt_count=count))

    # ----- calls -----------------------------------------------------------------------

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress: ProgressCallback | None = None,
        check_permission: bool = False,
        validate: bool = True,
        approver: ApprovalCallback | EllipsisType | None = ...,
    ) -> ToolResult:
        """Call a tool by its catalog name.

        Args:
            name: The catalog name (``mcp__server__tool``).
            arguments: The arguments (checked against the input schema first).
            timeout: Seconds without an answer or progress before giving up (default: the server's).
            progress: Called with each progress notification.
            check_permission: Pass ``permissions`` first, asking the approver when the rules
                say ``ask``: for calls a model made. A call the user makes directly needs no gate.
            validate: Check the arguments against the input schema first (only what is certain
                to fail: declared defaults fill missing required properties). ``False`` sends them
                as they are and lets the server judge.
            approver: Who to ask for this call instead of the gate's approver (None: no one, so
                ``ask`` means denied); for calls made on behalf of someone else (the gateway's clients).

        A tool that runs and fails returns a result with ``is_error``; these raise:

        Raises:
            ToolNotFoundError: No tool of that name.
            InvalidArgumentsError: The arguments do not fit the input schema (nothing was sent).
            PermissionDeniedError: The gate refused the call (nothing was sent).
            ServerUnavailableError: Its server is not connected.
            ServerTimeoutError: No answer (and no progress) within the timeout.
            ServerCrashedError: The server's connection was lost during the call.
            ServerError: The server answered with a protocol error.
        """
        entry = self._catalog.get(name)
        if entry is None:
            raise self._not_found(name)
        args = dict(arguments or {})
        if validate:
            args = entry.with_defaults(args)
            problems = entry.validate_arguments(args)
            if problems:
                raise InvalidArgumentsError(name, problems)
        server, tool = entry.server, entry.original_name
        connection = self._connection(server)
        approved_by: str | None = None
        events = self.events
        if check_permission:
            decision = await self.permissions.check(entry, args, approver=approver)
            approved_by = decision.approved_by
            if not decision.allowed:
                if events.active:  # on the record: who refused what
                    call_id = self._started(entry, args, approved_by)
                    self._finished(
                        call_id,
                        entry,
                        time.perf_counter(),
                        is_error=True,
                        error=decision.message,
                        approved_by=approved_by,
                    )
                raise PermissionDeniedError(decision.message, tool=name, approved_by=decision.approved_by)
        if not events.active:  # the common case in a hot loop: nothing to tell anyone
            started = time.perf_counter()
            raw = await connection.call_tool(tool, args, timeout=timeout, progress=progress)
            duration = time.perf_counter() - started
            return ToolResult.from_mcp(
                raw, name=name, server=server, tool=tool, duration=duration, approved_by=approved_by
            )
        call_id = self._started(entry, args, approved_by)
        started = time.perf_counter()

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            update = ToolCallProgress(
                call_id=call_id, name=name, server=server, progress=value, total=total, message=message
            )
            events.publish(update)
            if progress is not None:
                await progress(value, total, message)

        try:
            raw = await connection.call_tool(tool, args, timeout=timeout, progress=on_progress)
        except MCPDeckError as error:
            self._finished(call_id, entry, started, is_error=True, error=str(error), approved_by=approved_by)
            raise
        except anyio.get_cancelled_exc_class():
            self._finished(call_id, entry, started, is_error=True, error="cancelled", approved_by=approved_by)
            raise
        duration = time.perf_counter() - started
        result = ToolResult.from_mcp(
            raw, name=name, server=server, tool=tool, duration=duration, approved_by=approved_by
        )
        self._finished(
            call_id,
            entry,
            started,
            is_error=result.is_error,
            size=result.size,
            duration=duration,
            approved_by=approved_by,
        )
        return result

    def _started(self, entry: CatalogTool, args: dict[str, Any], approved_by: str | None) -> str:
        """Publish ``ToolCallStarted`` for a call of ``entry``; returns the call's new id."""
        call_id = uuid.uuid4().hex
        self.events.publish(
            ToolCallStarted(
                call_id=call_id,
                name=entry.name,
                server=entry.server,
                tool=entry.original_name,
                arguments=args,
                approved_by=approved_by,
                conversation=current_conversation.get(),
                caller=current_caller.get(),
            )
        )
        return call_id

    def _finished(
        self,
        call_id: str,
        entry: CatalogTool,
        started: float,
        *,
        is_error: bool,
        error: str | None = None,
        size: int | None = None,
        duration: float | None = None,
        approved_by: str | None = None,
    ) -> float:
        duration = time.perf_counter() - started if duration is None else duration
        self.events.publish(
            ToolCallFinished(
                call_id=call_id,
                name=entry.name,
                server=entry.server,
                tool=entry.original_name,
                duration=duration,
                is_error=is_error,
                error=error,
                result_size=size,
                approved_by=approved_by,
            )
        )
        return duration

    def _not_found(self, name: str) -> MCPDeckError:
        # A tool of a server that is down is not "unknown": say why it is missing.
        for server, connection in self._connections.items():
            if name.startswith(f"mcp__{server}__") and connection.state is not ServerState.CONNECTED:
                return ServerUnavailableError(server, connection.unavailable_reason())
        # A server's own name for a tool (`echo`) points at its public name(s) first.
        same = [tool.name for tool in self._catalog if tool.original_name == name]
        close = difflib.get_close_matches(name, self._catalog.names(), n=3)
        return ToolNotFoundError(name, suggestions=same + [n for n in close if n not in same][: max(0, 3 - len(same))])

    # ----- resources, prompts, completions ---------------------------------------------

    @property
    def resources(self) -> list[ResourceEntry]:
        """Every connected server's resources (each with its server)."""
        return list(self._index.resources)

    @property
    def resource_templates(self) -> list[TemplateEntry]:
        """Every connected server's resource templates."""
        return list(self._index.templates)

    @property
    def prompts(self) -> list[PromptEntry]:
        """Every connected server's prompts, under public names ``mcp__<server>__<prompt>``."""
        return list(self._index.prompts)

    def _server_for_uri(self, uri: str, server: str | None) -> ServerConnection:
        if server is not None:
            return self._connection(server)
        candidates = self._index.servers_for_uri(uri)
        if len(candidates) == 1:
            return self._connection(candidates[0])
        if not candidates:
            # A URI no one lists may still be readable (servers need not list everything):
            # with a single server that offers resources at all, ask it.
            offering = [
                c for c in self._connections.values() if c.state is ServerState.CONNECTED and c.offers_resources
            ]
            if len(offering) == 1:
                return offering[0]
        raise ResourceNotFoundError(uri, servers=candidates)

    async def _check_access(
        self, access: Access, arguments: Mapping[str, Any], approver: ApprovalCallback | EllipsisType | None = ...
    ) -> None:
        decision = await self.permissions.check(access, arguments, approver=approver)
        if not decision.allowed:
            raise PermissionDeniedError(decision.message, tool=access.name, approved_by=decision.approved_by)

    async def read_resource(
        self,
        uri: str,
        *,
        server: str | None = None,
        timeout: float | None = None,
        check_permission: bool = False,
        approver: ApprovalCallback | EllipsisType | None = ...,
    ) -> types.ReadResourceResult:
        """Read a resource. ``server`` may be left out when only one server offers the URI.

        Args:
            uri: The resource's URI.
            server: The server to read it from (default: the one that offers the URI).
            timeout: Seconds to wait for the answer (default: the server's).
            check_permission: Pass ``permissions`` first, as ``mcp__<server>__resource:<uri>`` of
                the server the read would go to: for reads a model asked for.
            approver: Who to ask instead of the gate's approver, as for ``call_tool``.

        Raises:
            ResourceNotFoundError: No server (or more than one) offers it and none was named.
            PermissionDeniedError: The gate refused the read (nothing was sent).
            ServerError: The server could not read it (and the subclasses, as for call_tool).
        """
        connection = self._server_for_uri(uri, server)
        if check_permission:
            await self._check_access(Access("resource", connection.name, uri), {"uri": uri}, approver)
        return await connection.read_resource(uri, timeout=timeout)

    async def subscribe_resource(self, uri: str, *, server: str | None = None, subscribe: bool = True) -> None:
        """Get a ``ResourceUpdated`` event each time the resource changes (kept across reconnects)."""
        await self._server_for_uri(uri, server).subscribe(uri, subscribe)

    async def unsubscribe_resource(self, uri: str, *, server: str | None = None) -> None:
        """Stop the updates ``subscribe_resource`` asked for."""
        await self.subscribe_resource(uri, server=server, subscribe=False)

    def _prompt(self, name: str) -> PromptEntry:
        entry = self._index.prompt(name)
        if entry is None:
            names = [p.name for p in self._index.prompts]
            raise PromptNotFoundError(name, suggestions=difflib.get_close_matches(name, names, n=3))
        return entry

    async def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        timeout: float | None = None,
        check_permission: bool = False,
        approver: ApprovalCallback | EllipsisType | None = ...,
    ) -> types.GetPromptResult:
        """Get a prompt by its public name, with its arguments.

        Args:
            name: The prompt's public name (``mcp__<server>__<prompt>``).
            arguments: The prompt's arguments.
            timeout: Seconds to wait for the answer (default: the server's).
            check_permission: Pass ``permissions`` first, as ``mcp__<server>__prompt:<name>``:
                for prompts fetched on a model's or a remote client's behalf.
            approver: Who to ask instead of the gate's approver, as for ``call_tool``.

        Raises:
            PromptNotFoundError: No prompt of that name.
            InvalidArgumentsError: A required argument is missing (nothing was sent).
            PermissionDeniedError: The gate refused it (nothing was sent).
        """
        entry = self._prompt(name)
        args = {key: str(value) for key, value in (arguments or {}).items()}
        missing = [a.name for a in entry.arguments if a.required and a.name not in args]
        if missing:
            raise InvalidArgumentsError(name, [f"{arg!r} is a required argument" for arg in missing])
        if check_permission:
            await self._check_access(Access("prompt", entry.server, entry.original_name), args, approver)
        return await self._connection(entry.server).get_prompt(entry.original_name, args or None, timeout=timeout)

    async def complete_prompt_argument(
        self, prompt: str, argument: str, value: str, context: Mapping[str, str] | None = None
    ) -> list[str]:
        """Completions the server suggests for an argument of a prompt."""
        entry = self._prompt(prompt)
        ref = types.PromptReference(type="ref/prompt", name=entry.original_name)
        result = await self._connection(entry.server).complete(
            ref, {"name": argument, "value": value}, dict(context or {})
        )
        return list(result.completion.values)

    async def complete_resource_argument(
        self, server: str, uri_template: str, argument: str, value: str, context: Mapping[str, str] | None = None
    ) -> list[str]:
        """Completions the server suggests for a variable of one of its resource templates."""
        ref = types.ResourceTemplateReference(type="ref/resource", uri=uri_template)
        result = await self._connection(server).complete(ref, {"name": argument, "value": value}, dict(context or {}))
        return list(result.completion.values)

    # ----- roots ---------------------------------------------------------------------------

    @property
    def roots(self) -> list[types.Root]:
        """The folders offered to servers as roots ([] when the host offers none)."""
        return list(self._handlers.roots or [])

    async def set_roots(self, roots: Iterable[str | os.PathLike[str]]) -> None:
        """Offer other roots, and tell connected servers that they changed.

        A server that connected while the host offered no roots was not told the host has
        any; it sees them from its next connect (``reconnect``).
        """
        self._handlers.roots = _roots(roots)
        for connection in self._connections.values():
            await connection.roots_changed()

    # ----- managing servers ------------------------------------------------------------

    async def add_server(self, name: str, config: ServerSpec, *, save: bool = True) -> ServerStatus:
        """Add a server, or replace its config, and (re)connect it. Waits until it has settled.

        With a config file, the entry is saved first (``save=False`` keeps it in memory only).
        """
        validate_server_name(name)
        resolved = as_server_config(name, config)
        existed = name in self._connections
        if save and self._store is not None and not isinstance(resolved, InProcessServerConfig):
            # The store waits for the file's lock and fsyncs: not on the event loop.
            await anyio.to_thread.run_sync(self._store.put_server, name, resolved)
        self._problems.pop(name, None)
        if existed:
            status = await self._connections[name].reconnect(resolved)
        else:
            connection = self._start(name, resolved, wanted=self._enabled)
            status = await connection.wait_settled()
        self.events.publish(ConfigChanged(server=name, change="updated" if existed else "added"))
        return status

    async def update_server(self, name: str, changes: Mapping[str, Any], *, save: bool = True) -> ServerStatus:
        """Change some keys of a server's config (JSON names, e.g. ``{"timeout": 120}``) and reconnect it."""
        current = self._connection(name).config
        if isinstance(current, InProcessServerConfig):
            raise ConfigError(f"server {name!r} runs in-process; replace it with add_server", server=name)
        merged = {**current.to_json(), **changes}
        return await self.add_server(name, parse_server_config(name, merged), save=save)

    async def remove_server(self, name: str, *, save: bool = True) -> None:
        """Disconnect a server and delete its config."""
        if name in self._problems and name not in self._connections:
            self._problems.pop(name)
        else:
            connection = self._connection(name)
            await connection.close()
            await connection.wait_settled()
            del self._connections[name]
            self._apply_changes({(name, "tools"), (name, "resources"), (name, "prompts")})
        if save and self._store is not None:
            await anyio.to_thread.run_sync(self._store.remove_server, name)
        self.events.publish(ConfigChanged(server=name, change="removed"))

    async def set_server_disabled(self, name: str, disabled: bool, *, save: bool = True) -> ServerStatus:
        """Disable (keep the config, don't connect) or enable a server."""
        return await self.update_server(name, {"disabled": disabled}, save=save)

    async def wait_settled(self, name: str) -> ServerStatus:
        """Wait until the server has connected, failed, or is disabled or stopped (with ``Host(wait=False)``)."""
        return await self._connection(name).wait_settled()

    async def reconnect(self, name: str) -> ServerStatus:
        """Close the server's session and connect again."""
        return await self._connection(name).reconnect()

    async def disconnect(self, name: str) -> ServerStatus:
        """Close the server's session and leave it stopped; its config is kept."""
        return await self._connection(name).disconnect()

    async def set_enabled(self, enabled: bool, *, save: bool = True) -> None:
        """The global switch: off stops every server, on connects every enabled one."""
        self._enabled = enabled
        if save and self._store is not None:
            await anyio.to_thread.run_sync(self._store.set_enabled, enabled)
        async with anyio.create_task_group() as tg:
            for connection in self._connections.values():
                tg.start_soon(connection.reconnect if enabled else connection.disconnect)
        self.events.publish(ConfigChanged(server=None, change="enabled" if enabled else "disabled"))

    async def test_server(self, config: ServerSpec | str, *, name: str | None = None) -> ServerTest:
        """Connect a server apart from the catalog, list its tools, disconnect. Nothing is saved.

        ``config`` is a server's config, or the name of a configured server. ``name`` is the
        name it is tried under (messages, log file); by default the configured name, or "test".
        """
        if isinstance(config, str):
            name, spec = name or config, self._connection(config).config
        else:
            name = validate_server_name(name or "test")
            spec = as_server_config(name, config)
        if spec.disabled:
            spec = spec.model_copy(update={"disabled": False})
        events: list[Event] = []
        connection = ServerConnection(
            name,
            spec,
            log_dir=self._log_dir,
            publish=events.append,
            on_change=lambda _server, _kind: None,
            handlers=self._handlers,
            npm_registry=self._npm_registry,
            environ=self._environ,
            retry=RetryPolicy(attempts=0),
            auth_store=self._auth_store,
            oauth_interaction=self._oauth_interaction,
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
