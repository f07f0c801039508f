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

import functools
import os
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from contextlib import AsyncExitStack
from pathlib import Path
from types import EllipsisType, TracebackType
from typing import Any, Self

import anyio
import mcp_types as types
from anyio.abc import TaskGroup

from mcpdeck._admin import ServerAdmin, ServerSpec, ServerTest, load_config, load_permissions
from mcpdeck._calls import CallPath
from mcpdeck._client_requests import ClientHandlers, as_roots
from mcpdeck._paths import log_dir
from mcpdeck._registry import ConnectionOptions, ServerRegistry, auto_approve_of
from mcpdeck.auth import AuthorizeFunction, OAuthInteraction, TokenStore
from mcpdeck.callbacks import ElicitationHandler, SamplingHandler
from mcpdeck.catalog import Catalog, CatalogTool
from mcpdeck.config import ConfigStore, McpConfig, ServerConfig, resolve_config_path
from mcpdeck.connection import InProcessServer, ProgressCallback
from mcpdeck.errors import InvalidArgumentsError, MCPDeckError
from mcpdeck.events import EventBus
from mcpdeck.permissions import Access, ApprovalCallback, PermissionGate, PermissionRules
from mcpdeck.resources import PromptEntry, ResourceEntry, TemplateEntry
from mcpdeck.results import ToolResult
from mcpdeck.status import RetryPolicy, ServerStatus
from mcpdeck.traffic import Traffic

__all__ = ["Host", "ServerTest"]


def default_log_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Where server logs go: ``$MCPDECK_LOG_DIR``, ``$MCPDECK_HOME/logs``, else ``<user log dir>/mcpdeck/servers``."""
    return log_dir(environ)


class Host:
    """Connects MCP servers and serves their tools as one catalog.

    The rooms behind it: ``_registry`` (the connections, the catalog and index they make),
    ``_calls`` (the one instrumented path of every tool call), ``_admin`` (adding, changing,
    removing and testing servers, saved to the config file).
    """

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
        self._only = set(only) if only is not None else None
        self._wait = wait
        self._rules = permissions
        self._tg: TaskGroup | None = None
        self._stack: AsyncExitStack | None = None
        self.traffic = traffic
        """The servers' recent JSON-RPC messages, when the host was given ``traffic=``."""
        self.events = EventBus()
        """Typed events: subscribe with ``events.on(fn)`` or ``async with events.subscribe() as s``."""
        options = ConnectionOptions(
            log_dir=Path(log_dir) if log_dir is not None else default_log_dir(environ),
            handlers=ClientHandlers(elicitation=elicitation, sampling=sampling, roots=as_roots(roots)),
            environ=environ,
            retry=retry or RetryPolicy(),
            auth_store=auth_store or TokenStore(environ=environ),
            oauth_interaction=oauth_interaction,
            traffic=traffic,
        )
        self._servers = ServerRegistry(options, self.events)
        self._admin = ServerAdmin(self._servers, self.events, store)
        self.permissions = PermissionGate(
            approver=approve,
            yes_to_all=yes,
            auto_approve=functools.partial(auto_approve_of, self._servers.connections),
        )
        """The permission gate model-made calls pass (rules loaded when the host is entered)."""
        self._calls = CallPath(self.events, self.permissions)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str] | None = None, **options: Any) -> Host:
        """A host for a config file: ``path``, else ``$MCPDECK_CONFIG``, else the user config dir."""
        return cls(store=ConfigStore(resolve_config_path(path)), **options)

    # ----- lifecycle -------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        if self._stack is not None:
            raise RuntimeError("this Host is already open; create a new one")
        config = load_config(self._initial, self._store)
        load_permissions(self.permissions, self._rules, self._store)
        self._servers.options.npm_registry = config.npm_registry
        self._servers.problems = dict(config.problems)
        self._admin.enabled = enabled = config.enabled
        only = self._only
        async with AsyncExitStack() as stack:
            self._tg = await stack.enter_async_context(anyio.create_task_group())
            stack.push_async_callback(self._servers.close)
            await self._servers.open(
                self._tg,
                config.servers,
                wanted=lambda name: enabled and (only is None or name in only),
                wait=self._wait,
            )
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
        return self._servers.statuses()

    @property
    def enabled(self) -> bool:
        """The global switch: False means no server is connected."""
        return self._admin.enabled

    @property
    def catalog(self) -> Catalog:
        """The tool catalog now; a new one (higher ``version``) replaces it on every change."""
        return self._servers.catalog

    @property
    def tools(self) -> list[CatalogTool]:
        """All tools from all connected servers."""
        return list(self._servers.catalog)

    def config_of(self, name: str) -> ServerConfig | InProcessServer:
        """The config a server runs with (variables unexpanded)."""
        return self._servers.get(name).config

    @property
    def client_handlers(self) -> ClientHandlers:
        """How servers' requests to the host (elicitation, sampling, roots) are answered, for every
        connection. A face that serves other clients (the gateway) may wrap these to forward them."""
        return self._servers.options.handlers

    async def set_log_level(self, level: types.LoggingLevel, servers: Iterable[str] | None = None) -> None:
        """Ask connected servers (all, or ``servers``) to send log messages from ``level`` up.

        Servers that do not offer logging, or refuse, are left as they are (and noted in the log).
        """
        await self._servers.set_log_level(level, servers)

    @property
    def config_path(self) -> Path | None:
        """The config file this host saves to, if any."""
        return self._store.path if self._store else None

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
        entry = self._servers.catalog.get(name)
        if entry is None:
            raise self._servers.tool_not_found(name)
        args = dict(arguments or {})
        if validate:
            args = entry.with_defaults(args)
            problems = entry.validate_arguments(args)
            if problems:
                raise InvalidArgumentsError(name, problems)
        connection, tool = self._servers.get(entry.server), entry.original_name

        def send(relay: ProgressCallback | None) -> Awaitable[types.CallToolResult]:
            return connection.call_tool(tool, args, timeout=timeout, progress=relay)

        return await self._calls.call(
            entry, args, send, check_permission=check_permission, approver=approver, progress=progress
        )

    async def call_native(
        self,
        name: str,
        arguments: Mapping[str, Any] | None,
        run: Callable[[dict[str, Any]], Awaitable[ToolResult]],
        *,
        check_permission: bool = False,
        approver: ApprovalCallback | EllipsisType | None = ...,
    ) -> ToolResult:
        """Run a tool of this program (an agent's native tool) on the path ``call_tool`` takes.

        The permission gate, the ``ToolCallStarted``/``ToolCallFinished`` events (with
        ``server=""``), the timing, and so the history and the faces, treat it as a server's tool.

        Args:
            name: The tool's name (no ``mcp__`` prefix).
            arguments: The arguments, handed to ``run``.
            run: Runs the tool; a failure is a result with ``is_error``.
            check_permission: Pass ``permissions`` first, as for ``call_tool``.
            approver: Who to ask instead of the gate's approver, as for ``call_tool``.

        Raises:
            PermissionDeniedError: The gate refused the call (``run`` was not called).
        """
        return await self._calls.call_native(
            name, dict(arguments or {}), run, check_permission=check_permission, approver=approver
        )

    def _not_found(self, name: str) -> MCPDeckError:
        """The error for a tool name the catalog does not have (used by ``mcpdeck tool``)."""
        return self._servers.tool_not_found(name)

    # ----- resources, prompts, completions ---------------------------------------------

    @property
    def resources(self) -> list[ResourceEntry]:
        """Every connected server's resources (each with its server)."""
        return list(self._servers.index.resources)

    @property
    def resource_templates(self) -> list[TemplateEntry]:
        """Every connected server's resource templates."""
        return list(self._servers.index.templates)

    @property
    def prompts(self) -> list[PromptEntry]:
        """Every connected server's prompts, under public names ``mcp__<server>__<prompt>``."""
        return list(self._servers.index.prompts)

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
        connection = self._servers.server_for_uri(uri, server)
        if check_permission:
            await self._calls.check_access(Access("resource", connection.name, uri), {"uri": uri}, approver)
        return await connection.read_resource(uri, timeout=timeout)

    async def subscribe_resource(self, uri: str, *, server: str | None = None, subscribe: bool = True) -> None:
        """Get a ``ResourceUpdated`` event each time the resource changes (kept across reconnects)."""
        await self._servers.server_for_uri(uri, server).subscribe(uri, subscribe)

    async def unsubscribe_resource(self, uri: str, *, server: str | None = None) -> None:
        """Stop the updates ``subscribe_resource`` asked for."""
        await self.subscribe_resource(uri, server=server, subscribe=False)

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
        entry = self._servers.prompt(name)
        args = {key: str(value) for key, value in (arguments or {}).items()}
        missing = [a.name for a in entry.arguments if a.required and a.name not in args]
        if missing:
            raise InvalidArgumentsError(name, [f"{arg!r} is a required argument" for arg in missing])
        if check_permission:
            await self._calls.check_access(Access("prompt", entry.server, entry.original_name), args, approver)
        return await self._servers.get(entry.server).get_prompt(entry.original_name, args or None, timeout=timeout)

    async def complete_prompt_argument(
        self, prompt: str, argument: str, value: str, context: Mapping[str, str] | None = None
    ) -> list[str]:
        """Completions the server suggests for an argument of a prompt."""
        entry = self._servers.prompt(prompt)
        ref = types.PromptReference(type="ref/prompt", name=entry.original_name)
        connection = self._servers.get(entry.server)
        result = await connection.complete(ref, {"name": argument, "value": value}, dict(context or {}))
        return list(result.completion.values)

    async def complete_resource_argument(
        self, server: str, uri_template: str, argument: str, value: str, context: Mapping[str, str] | None = None
    ) -> list[str]:
        """Completions the server suggests for a variable of one of its resource templates."""
        ref = types.ResourceTemplateReference(type="ref/resource", uri=uri_template)
        connection = self._servers.get(server)
        result = await connection.complete(ref, {"name": argument, "value": value}, dict(context or {}))
        return list(result.completion.values)

    # ----- roots ---------------------------------------------------------------------------

    @property
    def roots(self) -> list[types.Root]:
        """The folders offered to servers as roots ([] when the host offers none)."""
        return list(self.client_handlers.roots or [])

    async def set_roots(self, roots: Iterable[str | os.PathLike[str]]) -> None:
        """Offer other roots, and tell connected servers that they changed.

        A server that connected while the host offered no roots was not told the host has
        any; it sees them from its next connect (``reconnect``).
        """
        self.client_handlers.roots = as_roots(roots)
        await self._servers.roots_changed()

    # ----- managing servers ------------------------------------------------------------

    async def add_server(self, name: str, config: ServerSpec, *, save: bool = True) -> ServerStatus:
        """Add a server, or replace its config, and (re)connect it. Waits until it has settled.

        With a config file, the entry is saved first (``save=False`` keeps it in memory only).
        """
        return await self._admin.add(name, config, save=save)

    async def update_server(self, name: str, changes: Mapping[str, Any], *, save: bool = True) -> ServerStatus:
        """Change some keys of a server's config (JSON names, e.g. ``{"timeout": 120}``) and reconnect it."""
        return await self._admin.update(name, changes, save=save)

    async def remove_server(self, name: str, *, save: bool = True) -> None:
        """Disconnect a server and delete its config."""
        await self._admin.remove(name, save=save)

    async def set_server_disabled(self, name: str, disabled: bool, *, save: bool = True) -> ServerStatus:
        """Disable (keep the config, don't connect) or enable a server."""
        return await self._admin.update(name, {"disabled": disabled}, save=save)

    async def wait_settled(self, name: str) -> ServerStatus:
        """Wait until the server has connected, failed, or is disabled or stopped (with ``Host(wait=False)``)."""
        return await self._servers.get(name).wait_settled()

    async def reconnect(self, name: str) -> ServerStatus:
        """Close the server's session and connect again."""
        return await self._servers.get(name).reconnect()

    async def disconnect(self, name: str) -> ServerStatus:
        """Close the server's session and leave it stopped; its config is kept."""
        return await self._servers.get(name).disconnect()

    async def set_enabled(self, enabled: bool, *, save: bool = True) -> None:
        """The global switch: off stops every server, on connects every enabled one."""
        await self._admin.set_enabled(enabled, save=save)

    async def test_server(self, config: ServerSpec | str, *, name: str | None = None) -> ServerTest:
        """Connect a server apart from the catalog, list its tools, disconnect. Nothing is saved.

        ``config`` is a server's config, or the name of a configured server. ``name`` is the
        name it is tried under (messages, log file); by default the configured name, or "test".
        """
        return await self._admin.test(config, name=name)
