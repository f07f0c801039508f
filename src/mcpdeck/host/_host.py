"""``Host``, the composition root: each method hands its work to one of the rooms beside this module."""

from __future__ import annotations

import functools
import os
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from pathlib import Path
from typing import Any, Self

import mcp_types as types

from mcpdeck._util.paths import log_dir as default_log_dir
from mcpdeck.auth import AuthorizeFunction, OAuthInteraction, TokenStore
from mcpdeck.callbacks import ElicitationHandler, SamplingHandler, ServerRequestRouter
from mcpdeck.catalog import Catalog, CatalogTool, unlisted_tool
from mcpdeck.config import AnyServerConfig, ConfigStore, McpConfig, resolve_config_path
from mcpdeck.connection import ProgressCallback
from mcpdeck.connection._server_requests import ClientHandlers, as_roots
from mcpdeck.errors import InvalidArgumentsError, ServerUnavailableError
from mcpdeck.events import EventBus
from mcpdeck.host._admin import ServerAdmin, ServerSpec, ServerTest
from mcpdeck.host._call_path import CallPath, CallRecorder
from mcpdeck.host._lifecycle import HostLifecycle
from mcpdeck.host._registry import ConnectionOptions, ServerRegistry, auto_approve_of
from mcpdeck.host._server_content import ServerContent
from mcpdeck.permissions import (
    GATE_APPROVER,
    ApprovalCallback,
    CallingClient,
    GateApprover,
    PermissionGate,
    PermissionRules,
)
from mcpdeck.resources import PromptEntry, ResourceEntry, TemplateEntry
from mcpdeck.results import ToolResult
from mcpdeck.status import RetryPolicy, ServerStatus
from mcpdeck.traffic import Traffic

__all__ = ["Host", "ServerTest"]


class Host:
    """Connects MCP servers and serves their tools as one catalog.

    The rooms behind it: ``_lifecycle`` (entering and leaving), ``_registry`` (the connections,
    the catalog and index they make), ``_call_path`` (the one instrumented path of every tool call),
    ``_server_content`` (resources, prompts, completions), ``_admin`` (adding, changing, removing and
    testing servers, saved to the config file).

    Args:
        servers: Servers given in code (configs, their JSON form, or SDK server objects), or a
            loaded ``McpConfig``. Leave out to read ``store``.
        store: The config file to load from and save changes to.
        log_dir: Where server logs go (default: ``$MCPDECK_LOG_DIR``, ``$MCPDECK_HOME/logs``, else the user log dir).
        environ: The environment for ``${VAR}`` expansion and stdio children (default: os.environ).
        only: Connect only these servers; the others are loaded but stay stopped.
        wait: Whether entering the host waits until every server has settled.
        retry: How a lost connection is reconnected (default: 5 tries, 1 s doubling to 30 s, jitter).
        elicitation: Answers servers' requests for user input; without it they are declined.
        sampling: Answers servers' requests for a model completion; without it they are refused.
        roots: Folders (paths or ``file://`` URIs) offered to servers as roots. Without them the
            roots capability is not announced (a server's ``roots`` config key gives it its own).
        oauth_interaction: How to ask the user to authorize a remote server that needs OAuth (e.g.
            ``mcpdeck.auth.BrowserInteraction()``; the user's time counts against the startup
            timeout). Without it such a server fails with "needs authorization: run `mcpdeck auth login NAME`".
        auth_store: Where OAuth tokens and client registrations are kept (default: the user data
            dir; the OS keyring with ``MCPDECK_KEYRING=1``).
        approve: Asks the user about a call the permission rules leave to ``ask`` (``call_tool(...,
            check_permission=True)``, the agent loop); without it such a call is denied, saying why.
        yes: Approve every ``ask`` without asking (``--yes``); ``deny`` rules still win.
        permissions: ``allow``/``ask``/``deny`` rules given in code (the ``permissions`` object's
            form, or ``PermissionRules``); default: the config file's.
        traffic: Keeps every server's recent JSON-RPC messages (in memory) for display; without it
            no stream is tapped.
        history: Where every tool call is recorded (``mcpdeck.history.History``); a call returns once
            its record is committed, whatever face it came through.

    Attributes:
        events: Typed events: subscribe with ``events.on(fn)`` or ``async with events.subscribe() as s``.
        permissions: The permission gate model-made calls pass (rules loaded when the host is entered).
        traffic: The servers' recent JSON-RPC messages, when the host was given ``traffic=``.
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
        history: CallRecorder | None = None,
    ):
        """Create a host; nothing connects until it is entered (the arguments are described on the class)."""
        self.traffic = traffic
        self.events = EventBus()
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
        auto_approve = functools.partial(auto_approve_of, self._servers.connections)
        self.permissions = PermissionGate(approver=approve, yes_to_all=yes, auto_approve=auto_approve)
        self._calls = CallPath(self.events, self.permissions, history)
        self._content = ServerContent(self._servers, self._calls)
        self._lifecycle = HostLifecycle(self._admin, self.permissions, servers, permissions, only=only, wait=wait)

    @property
    def history(self) -> CallRecorder | None:
        """Where its calls are recorded (``history=``); may be set while the host is open (None: nowhere)."""
        return self._calls.recorder

    @history.setter
    def history(self, history: CallRecorder | None) -> None:
        self._calls.recorder = history

    @classmethod
    def from_file(cls, path: str | os.PathLike[str] | None = None, **options: Any) -> Host:
        """A host for a config file: ``path``, else ``$MCPDECK_CONFIG``, else the user config dir."""
        return cls(store=ConfigStore(resolve_config_path(path)), **options)

    # ----- lifecycle -------------------------------------------------------------------
    async def __aenter__(self) -> Self:
        await self._lifecycle.open()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._lifecycle.close()

    def start_task(self, fn: Callable[..., Coroutine[Any, Any, Any]], *args: Any, name: str | None = None) -> None:
        """Run ``fn(*args)`` in the host's task group, beside the servers; it is cancelled when the host closes.

        ``fn`` must handle its own errors: one escaping would close the host.

        Raises:
            RuntimeError: The host is not open.
        """
        self._lifecycle.start_task(fn, *args, name=name)

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

    def tool(self, name: str) -> CatalogTool:
        """The tool with catalog name ``name``.

        Raises:
            ToolNotFoundError: No tool of that name (with close names).
            ServerUnavailableError: The name is of a server that is not connected.
        """
        return self._servers.tool(name)

    def tool_of(self, server: str, name: str) -> CatalogTool:
        """The catalog entry of a server's tool by its own name; for one the server does not list, an entry
        that stands for it (no schema, nothing to check), for ``call_tool(name, server=server)``.

        Raises:
            ConfigError: The host has no such server.
        """
        self._servers.get(server)  # (ServerNotFoundError for a server the host does not have)
        found = self.catalog.find(server, name)
        if found is not None:
            return found
        return unlisted_tool(server, name)

    def config_of(self, name: str) -> AnyServerConfig:
        """The config a server runs with (variables unexpanded)."""
        return self._servers.get(name).config

    @property
    def environ(self) -> Mapping[str, str]:
        """The variables ``${VAR}`` references are expanded from: ``Host(environ=...)``, else the process's."""
        given = self._servers.options.environ
        return os.environ if given is None else given

    @property
    def _handlers(self) -> ClientHandlers:
        """How servers' requests to the host (elicitation, sampling, roots) are answered, for every connection."""
        return self._servers.options.handlers

    def route_server_requests(self, router: ServerRequestRouter) -> Callable[[], None]:
        """Let ``router`` answer the servers' requests (elicitation, sampling, roots, who a ``forwardCaller``
        connection presents itself as) that are its own, before the host's handlers do; returns the function
        that takes it away (idempotent). The contract is ``mcpdeck.callbacks.ServerRequestRouter``'s: a router
        says None for a request that is not its, which goes to the router given before it, and in the end to
        the handlers given to ``Host`` (``elicitation``, ``sampling``, ``roots``), which stay as they are.
        The gateway is one: a server's question goes to the client whose call is running.

        A server reached over streamable HTTP while nobody could answer its questions was opened without a
        back-channel (``server/discover`` first, see docs/architecture.md, "Protocol era"): it connects
        again now, with the ``initialize`` handshake, so that its questions reach the router."""
        remove = self._handlers.route(router)
        self._servers.answerers_changed()
        return remove

    async def set_log_level(self, level: types.LoggingLevel, servers: Iterable[str] | None = None) -> None:
        """Ask connected servers (all, or ``servers``) to send log messages from ``level`` up.

        Servers that do not offer logging, or refuse, are left as they are (and noted in the log)."""
        await self._servers.set_log_level(level, servers)

    @property
    def config_path(self) -> Path | None:
        """The config file this host saves to, if any."""
        return self._admin.store.path if self._admin.store else None

    @property
    def config_store(self) -> ConfigStore | None:
        """The config file's store, if any: its ``document()`` is the file's one parse, shared by whoever reads it
        (the gate's rules, the gateway's profiles and settings, ``serve``'s follower and API)."""
        return self._admin.store

    # ----- calls -----------------------------------------------------------------------
    async def call_tool(
        self,
        name: str | CatalogTool,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress: ProgressCallback | None = None,
        check_permission: bool = False,
        validate: bool = True,
        approver: ApprovalCallback | CallingClient | GateApprover | None = GATE_APPROVER,
        server: str | None = None,
    ) -> ToolResult:
        """Call a tool by its catalog name (``mcp__server__tool``); a tool that fails returns ``is_error``.

        Args:
            name: The tool's catalog name, or its entry as this host's catalog gave it (``Host.tool``, ``catalog``:
                not looked up again).
            timeout: Seconds without an answer or progress before giving up (default: the server's).
            progress: Called with each progress notification.
            check_permission: Pass ``permissions`` first, asking the approver when the rules say
                ``ask``: for calls a model made (a call the user makes directly needs no gate).
            validate: Check the arguments against the input schema first (only what is certain to
                fail; declared defaults fill missing required properties); False lets the server judge.
            approver: Who to ask for this call instead of the gate's approver (None: no one, so
                ``ask`` means denied); for calls made on behalf of someone else: a gateway's client, as a
                ``CallingClient``, which approves what no rule covers and is asked what ``ask`` rules ask.
                The default, ``GATE_APPROVER`` (``mcpdeck.permissions``), asks the gate's own approver.
            server: Call the tool ``name`` (the server's own name) of this server, listed or not: the server
                says what it makes of a name it does not list (another gateway: why the tool is missing).
                Nothing is checked against a schema it does not have.

        Raises:
            ToolNotFoundError: No tool of that name.
            InvalidArgumentsError: The arguments do not fit the input schema (nothing was sent).
            PermissionDeniedError: The gate refused the call (nothing was sent).
            ServerUnavailableError: Its server is not connected.
            ServerTimeoutError: No answer (and no progress) within the timeout.
            ServerCrashedError: The server's connection was lost during the call.
            ServerError: The server answered with a protocol error.
        """
        if isinstance(name, CatalogTool):
            entry, name = name, name.name
        else:
            entry = self.tool(name) if server is None else self.tool_of(server, name)
        args = dict(arguments or {})
        if validate and (server is None or self.catalog.find(server, name) is entry):
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
        approver: ApprovalCallback | CallingClient | GateApprover | None = GATE_APPROVER,
    ) -> ToolResult:
        """Run a tool of this program (an agent's native tool, no ``mcp__`` prefix) as ``call_tool`` runs one.

        ``run(arguments)`` runs it (a failure is a result with ``is_error``). The gate
        (``check_permission``, ``approver``: as for ``call_tool``), the ``ToolCallStarted`` /
        ``ToolCallFinished`` events (``server=""``), the timing, and so the history and the
        faces, treat it as a server's tool.

        Raises:
            PermissionDeniedError: The gate refused the call (``run`` was not called).
        """
        return await self._calls.call_native(
            name, dict(arguments or {}), run, check_permission=check_permission, approver=approver
        )

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
        approver: ApprovalCallback | CallingClient | GateApprover | None = GATE_APPROVER,
    ) -> types.ReadResourceResult:
        """Read a resource from ``server``, which may be left out when only one server offers the URI.

        ``check_permission`` asks the gate about ``mcp__<server>__resource:<uri>`` (for reads a
        model asked for); it, ``approver`` and ``timeout`` are as for ``call_tool``.

        Raises:
            ResourceNotFoundError: No server (or more than one) offers it and none was named.
            PermissionDeniedError: The gate refused the read (nothing was sent).
            ServerError: The server could not read it (and the subclasses, as for call_tool).
        """
        return await self._content.read_resource(
            uri, server, timeout=timeout, check_permission=check_permission, approver=approver
        )

    async def subscribe_resource(self, uri: str, *, server: str | None = None, subscribe: bool = True) -> None:
        """Get a ``ResourceUpdated`` event each time the resource changes (kept across reconnects)."""
        await self._content.subscribe_resource(uri, server, subscribe=subscribe)

    async def unsubscribe_resource(self, uri: str, *, server: str | None = None) -> None:
        """Stop the updates ``subscribe_resource`` asked for."""
        await self._content.subscribe_resource(uri, server, subscribe=False)

    async def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        timeout: float | None = None,
        check_permission: bool = False,
        validate: bool = True,
        approver: ApprovalCallback | CallingClient | GateApprover | None = GATE_APPROVER,
    ) -> types.GetPromptResult:
        """Get a prompt by its public name (``mcp__<server>__<prompt>``), with its arguments.

        ``check_permission`` asks the gate about ``mcp__<server>__prompt:<name>`` (for prompts
        fetched on a model's or a remote client's behalf); it, ``approver`` and ``timeout`` are
        as for ``call_tool``. ``validate`` checks first that every required argument is given;
        False lets the server judge (its own error then reaches the caller).

        Raises:
            PromptNotFoundError: No prompt of that name.
            InvalidArgumentsError: A required argument is missing (nothing was sent).
            PermissionDeniedError: The gate refused it (nothing was sent).
        """
        return await self._content.get_prompt(
            name, arguments, timeout=timeout, check_permission=check_permission, validate=validate, approver=approver
        )

    async def complete_prompt_argument(
        self, prompt: str, argument: str, value: str, context: Mapping[str, str] | None = None
    ) -> types.Completion:
        """The server's completion of an argument of a prompt: ``values``, and ``total`` and ``has_more`` when
        the server gives them."""
        return await self._content.complete_prompt_argument(prompt, argument, value, context)

    async def complete_resource_argument(
        self, server: str, uri_template: str, argument: str, value: str, context: Mapping[str, str] | None = None
    ) -> types.Completion:
        """The server's completion of a variable of one of its resource templates (as ``complete_prompt_argument``)."""
        return await self._content.complete_resource_argument(server, uri_template, argument, value, context)

    # ----- roots ---------------------------------------------------------------------------
    @property
    def roots(self) -> list[types.Root]:
        """The folders offered to servers as roots ([] when the host offers none)."""
        return list(self._handlers.roots or [])

    async def set_roots(self, roots: Iterable[str | os.PathLike[str]]) -> None:
        """Offer other roots, and tell connected servers that they changed.

        A server that connected while the host offered no roots was not told the host has any;
        it sees them from its next connect (``reconnect``)."""
        self._handlers.roots = as_roots(roots)
        await self._servers.roots_changed()

    async def roots_changed(self, servers: Iterable[str] | None = None, *, offer: bool = False) -> None:
        """The roots some servers (all, or ``servers``) are given changed, because someone who decides them
        (a router's ``roots_for``, e.g. a gateway's client) has others now: tell them.

        A server connected in the handshake era with the roots capability gets
        ``notifications/roots/list_changed`` (and asks again). With ``offer``, a server whose session was
        opened without offering roots, and that would be offered some now (a router's ``roots_offered``),
        connects again, offering them: a client's capabilities are fixed when it connects. Servers with
        their own ``roots`` (a list, or ``false``) are left alone."""
        await self._servers.roots_changed(servers, offer=offer)

    # ----- managing servers ------------------------------------------------------------
    async def add_server(self, name: str, config: ServerSpec, *, save: bool = True, wait: bool = True) -> ServerStatus:
        """Add a server, or replace its config, and (re)connect it. Waits until it has settled (``wait=False``:
        returns once it is in the catalog's servers and connecting, as the config follower does).

        With a config file, the entry is saved first (``save=False`` keeps it in memory only)."""
        return await self._admin.add(name, config, save=save, wait=wait)

    async def update_server(
        self, name: str, changes: Mapping[str, Any], *, save: bool = True, wait: bool = True
    ) -> ServerStatus:
        """Change some keys of a server's config (JSON names, e.g. ``{"timeout": 120}``) and reconnect it (``wait``:
        until it has settled)."""
        return await self._admin.update(name, changes, save=save, wait=wait)

    async def remove_server(self, name: str, *, save: bool = True) -> None:
        """Disconnect a server and delete its config."""
        await self._admin.remove(name, save=save)

    async def set_server_disabled(
        self, name: str, disabled: bool, *, save: bool = True, wait: bool = True
    ) -> ServerStatus:
        """Disable (keep the config, don't connect) or enable a server (``wait``: until it has settled)."""
        return await self._admin.update(name, {"disabled": disabled}, save=save, wait=wait)

    async def wait_settled(self, name: str) -> ServerStatus:
        """Wait until the server has connected, failed, or is disabled or stopped (with ``Host(wait=False)``)."""
        return await self._servers.get(name).wait_settled()

    async def reconnect(self, name: str) -> ServerStatus:
        """Close the server's session and connect again.

        Raises:
            ServerUnavailableError: The server is disabled: it is not connected until enabled
                (``set_server_disabled(name, False)``).
        """
        connection = self._servers.get(name)
        if connection.config.disabled:
            raise ServerUnavailableError(
                name, f"is disabled, so it was not reconnected; enable it first (`mcpdeck enable {name}`)"
            )
        return await connection.reconnect()

    async def disconnect(self, name: str) -> ServerStatus:
        """Close the server's session and leave it stopped; its config is kept."""
        return await self._servers.get(name).disconnect()

    async def set_enabled(self, enabled: bool, *, save: bool = True) -> None:
        """The global switch: off stops every server, on connects every enabled one."""
        await self._admin.set_enabled(enabled, save=save)

    async def test_server(self, config: ServerSpec | str, *, name: str | None = None) -> ServerTest:
        """Connect a server apart from the catalog, list its tools, disconnect. Nothing is saved.

        ``config`` is a server's config, or the name of a configured server. ``name`` is the name it
        is tried under (messages, log file); by default the configured name, or "test"."""
        return await self._admin.test(config, name=name)
