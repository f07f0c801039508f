"""One server's lists: tools, resources, resource templates, prompts.

Each list is read whole (every page) and replaced as a unit. A change notification marks
that one list stale and the session's own task reads it again (``keep_fresh``: no task of
its own, so a connected server costs no more tasks than its session needs).

Only the tool list is needed for a working server: a resource, template or prompt list the
server fails to give is left empty and becomes a warning (``warnings``), and is asked for
again on that list's change notice or the next connect. Servers on protocol
2026-07-28 deliver change notifications and resource updates only to a
``subscriptions/listen`` stream, which is (re)opened with the current set of resource
subscriptions; older servers send them as notifications, and take
``resources/subscribe`` requests.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import anyio
import mcp_types as types
from mcp import Client, MCPError
from mcp.client.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ToolsListChanged,
)
from mcp_types.jsonrpc import CONNECTION_CLOSED
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcpdeck._util.listed_tool import ListedTool
from mcpdeck.connection._flag import Flag
from mcpdeck.errors import leaf_errors, protocol_error_text

__all__ = ["ListKind", "ServerLists"]

logger = logging.getLogger(__name__)

ListKind = Literal["tools", "resources", "prompts"]
_KINDS: tuple[ListKind, ...] = ("tools", "resources", "prompts")
_OPTIONAL = {"resources/list": "resources", "resources/templates/list": "resource templates", "prompts/list": "prompts"}
_MAX_PAGES = 1000


def _ignore(_: str) -> None:
    pass


def _ignore_warning(_: str, __: str | None) -> None:
    pass


def _list_error_text(error: Exception, method: str) -> str:
    """Why ``method`` failed, in words."""
    leaf = next(iter(leaf_errors(error)), error)
    if isinstance(leaf, MCPError):
        return protocol_error_text(leaf.code, leaf.message, method)
    text = str(leaf)
    return f"{type(leaf).__name__}: {text}" if text else type(leaf).__name__


def _connection_gone(error: Exception) -> bool:
    """Whether ``error`` says the connection itself ended (no list is to blame for that)."""
    for leaf in leaf_errors(error):
        if isinstance(leaf, MCPError) and leaf.code == CONNECTION_CLOSED:
            return True
        if isinstance(leaf, anyio.ClosedResourceError | anyio.BrokenResourceError | anyio.EndOfStream):
            return True
    return False


async def _all_pages(fetch: Callable[[str | None], Awaitable[Any]], attribute: str, server: str) -> list[Any]:
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        page = await fetch(cursor)
        items.extend(getattr(page, attribute))
        cursor = page.next_cursor
        if not cursor:
            return items
    logger.warning("server %r: stopped reading %s after %d pages", server, attribute, _MAX_PAGES)
    return items


async def _at_once(*steps: Awaitable[Any]) -> list[Any]:
    """The results of ``steps``, run side by side. If one fails, the others are stopped and that failure is
    raised as it is (not in an exception group), as if they had run one after the other."""
    results: list[Any] = [None] * len(steps)
    failures: list[Exception] = []

    async def run(index: int, step: Awaitable[Any]) -> None:
        try:
            results[index] = await step
        except Exception as error:
            failures.append(error)
            group.cancel_scope.cancel()

    async with anyio.create_task_group() as group:
        for index, step in enumerate(steps):
            group.start_soon(run, index, step)
    if failures:
        raise failures[0]
    return results


async def _both(first: Awaitable[list[Any]], second: Awaitable[list[Any]]) -> tuple[list[Any], list[Any]]:
    one, two = await _at_once(first, second)
    return one, two


class ServerLists:
    """The lists of one server, for one session at a time."""

    def __init__(
        self,
        server: str,
        *,
        allows_tool: Callable[[str], bool],
        on_change: Callable[[ListKind], None],
        on_resource_updated: Callable[[str], None],
        on_warning: Callable[[str, str | None], None] = _ignore_warning,
    ):
        """``on_warning(method, text)`` hears when an optional list fails (``text``: "could not list
        prompts: ...") or works again (None)."""
        self._server = server
        self._allows_tool = allows_tool
        self._on_change = on_change
        self._on_resource_updated = on_resource_updated
        self.tools: list[ListedTool] = []
        self.resources: list[types.Resource] = []
        self.templates: list[types.ResourceTemplate] = []
        self.prompts: list[types.Prompt] = []
        self.warnings: dict[str, str] = {}  # method -> why its (optional) list is missing, in _OPTIONAL's order
        self._on_warning = on_warning
        self.subscriptions: set[str] = set()
        self._stale: set[ListKind] = set()
        self._wake = Flag()
        self._listen_scope: anyio.CancelScope | None = None
        self._listening = Flag()  # set once a listen stream with the current subscriptions is acknowledged

    # ----- loading ---------------------------------------------------------------------

    async def load_all(self, client: Client) -> None:
        """Read every list the server offers, all at once.

        Each list is at least one round trip (over streamable HTTP in the handshake era, each an
        SSE stream of the server's session), and none waits for another (``_at_once``).
        """
        await _at_once(*(self.load(client, kind) for kind in _KINDS))

    async def load(self, client: Client, kind: ListKind) -> None:
        """Read one list whole and swap it in."""
        caps = client.server_capabilities
        if kind == "tools":
            tools: list[types.Tool] = []
            if caps.tools is not None:
                tools = await _all_pages(lambda c: client.list_tools(cursor=c), "tools", self._server)
            seen: set[str] = set()
            kept: list[ListedTool] = []
            for tool in tools:
                if tool.name in seen:
                    logger.warning("server %r lists tool %r twice; keeping the first", self._server, tool.name)
                elif self._allows_tool(tool.name):
                    kept.append(ListedTool(tool))  # compact: the SDK's models and dicts are dropped
                seen.add(tool.name)
            self._swap("tools", kept)
        elif kind == "resources":
            resources: list[types.Resource] = []
            templates: list[types.ResourceTemplate] = []
            if caps.resources is not None:
                resources, templates = await _both(
                    self._optional("resources/list", lambda c: client.list_resources(cursor=c), "resources"),
                    self._optional(
                        "resources/templates/list",
                        lambda c: client.list_resource_templates(cursor=c),
                        "resource_templates",
                    ),
                )
            if resources or templates or self.resources or self.templates:
                self.resources, self.templates = resources, templates
                self._on_change("resources")
        else:
            prompts: list[types.Prompt] = []
            if caps.prompts is not None:
                prompts = await self._optional("prompts/list", lambda c: client.list_prompts(cursor=c), "prompts")
            self._swap("prompts", prompts)

    async def _optional(self, method: str, fetch: Callable[[str | None], Awaitable[Any]], attribute: str) -> list[Any]:
        """Every page of a list the server need not give: a failure leaves it empty, as a warning."""
        try:
            items = await _all_pages(fetch, attribute, self._server)
        except Exception as error:
            if _connection_gone(error):
                raise
            text = f"could not list {_OPTIONAL[method]}: {_list_error_text(error, method)}"
            if self.warnings.get(method) != text:
                self.warnings[method] = text
                # In the lists' own order, whichever failed first (they are read side by side).
                self.warnings = {m: self.warnings[m] for m in _OPTIONAL if m in self.warnings}
                self._on_warning(method, text)
            return []
        if self.warnings.pop(method, None) is not None:
            self._on_warning(method, None)
        return items

    def _swap(self, kind: Literal["tools", "prompts"], items: list[Any]) -> None:
        if not items and not getattr(self, kind):
            return
        setattr(self, kind, items)
        self._on_change(kind)

    def detach(self) -> None:
        """Report nothing more (the connection's supervisor has ended).

        The callbacks lead back to the host; dropping them leaves the host and everything
        it holds (catalog, tools) to be freed when it is let go, not at the next cyclic GC.
        """
        self._on_change = _ignore
        self._on_resource_updated = _ignore
        self._on_warning = _ignore_warning

    def clear(self) -> None:
        """Forget every list (the server is gone for good)."""
        self.warnings.clear()
        for kind in ("tools", "prompts"):
            self._swap(kind, [])
        if self.resources or self.templates:
            self.resources, self.templates = [], []
            self._on_change("resources")

    # ----- keeping them fresh ------------------------------------------------------------

    def mark_stale(self, kind: ListKind) -> None:
        """The server said this list changed."""
        self._stale.add(kind)
        self._wake.set()

    def on_notification(self, message: object, protocol_version: str | None) -> None:
        """Legacy (pre-2026) change notifications and resource updates.

        On 2026-07-28 sessions the SDK hands the listen stream's notifications to the
        message handler too; those are taken from the stream alone, so none counts twice.
        """
        if protocol_version in MODERN_PROTOCOL_VERSIONS:
            return
        if isinstance(message, types.ToolListChangedNotification):
            self.mark_stale("tools")
        elif isinstance(message, types.ResourceListChangedNotification):
            self.mark_stale("resources")
        elif isinstance(message, types.PromptListChangedNotification):
            self.mark_stale("prompts")
        elif isinstance(message, types.ResourceUpdatedNotification):
            self._on_resource_updated(message.params.uri)

    async def keep_fresh(
        self,
        client: Client,
        ready: Callable[[], None],
        *,
        reload_timeout: float,
        tick: float = math.inf,
        on_tick: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """Until cancelled, in the caller's task: reload stale lists, and listen for changes on 2026-07-28 sessions.

        ``ready()`` is called once the lists are followed: at once, or on a 2026-07-28 session with
        resource subscriptions once the listen stream that carries them is acknowledged. Each reload
        is bounded by ``reload_timeout``. On older sessions ``on_tick()`` is awaited after every
        ``tick`` seconds without a change (the session's health ping).

        One loop in the caller's task, not tasks of its own: a connected server costs no more
        tasks than its session needs.
        """
        self._listening = Flag()
        if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
            await self._listen(client, ready, reload_timeout)
            return
        ready()
        while True:
            if not self._stale:
                with anyio.move_on_after(tick) as idle:
                    await self._wake.wait()
                self._wake = Flag()
                if idle.cancelled_caught:
                    if on_tick is not None:
                        await on_tick()
                    continue
            await self._reload_stale(client, reload_timeout)

    async def _reload_stale(self, client: Client, timeout: float) -> None:
        for kind in ("tools", "resources", "prompts"):
            if kind not in self._stale:
                continue
            self._stale.discard(kind)  # (marked again while it loads: loaded again after)
            try:
                with anyio.fail_after(timeout):
                    await self.load(client, kind)
            except TimeoutError:
                logger.warning("server %r: could not reload %s: no answer within %g s", self._server, kind, timeout)
            except Exception as error:
                logger.warning("server %r: could not reload %s: %s", self._server, kind, error)
            except BaseException:
                self._stale.add(kind)  # cancelled (the listen stream reopens): still to do
                raise

    async def _listen(self, client: Client, ready: Callable[[], None], reload_timeout: float) -> None:
        """The 2026-07-28 way: a ``subscriptions/listen`` stream with what is wanted, reopened when the
        subscriptions change (``subscribe`` cancels ``_listen_scope``); its events reload lists here."""
        if not self.subscriptions:
            ready()  # nothing a caller could miss: connected without waiting for the stream
        caps = client.server_capabilities
        while True:
            wanted = {
                "tools_list_changed": bool(caps.tools and caps.tools.list_changed),
                "prompts_list_changed": bool(caps.prompts and caps.prompts.list_changed),
                "resources_list_changed": bool(caps.resources and caps.resources.list_changed),
            }
            subscriptions = sorted(self.subscriptions)
            with anyio.CancelScope() as scope:
                self._listen_scope = scope
                if not any(wanted.values()) and not subscriptions:
                    self._listening.set()  # nothing to listen for, so nothing to wait for
                    ready()
                    await anyio.sleep_forever()
                try:
                    async with client.listen(**wanted, resource_subscriptions=subscriptions) as subscription:
                        if set(subscriptions) == self.subscriptions:
                            self._listening.set()
                        ready()
                        async for event in subscription:
                            self._on_listen_event(event)
                            await self._reload_stale(client, reload_timeout)
                except Exception as error:
                    logger.info("server %r: change notifications unavailable: %s", self._server, error)
                    self._listening.set()  # nothing to wait for: subscribers must not hang on it
                    ready()
                    await anyio.sleep_forever()  # until the subscriptions change
            self._listen_scope = None

    def _on_listen_event(self, event: object) -> None:
        if isinstance(event, ResourceUpdated):
            self._on_resource_updated(event.uri)
            return
        if isinstance(event, ToolsListChanged):
            self.mark_stale("tools")
        elif isinstance(event, PromptsListChanged):
            self.mark_stale("prompts")
        elif isinstance(event, ResourcesListChanged):
            self.mark_stale("resources")

    # ----- resource subscriptions ----------------------------------------------------------

    async def resubscribe(self, client: Client) -> None:
        """After a (re)connect, ask a pre-2026 server again for every kept subscription.

        (2026-07-28 sessions carry them in the listen stream, which opens with the whole set.)
        """
        if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return
        caps = client.server_capabilities.resources
        if not self.subscriptions or caps is None or not caps.subscribe:
            return
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # resources/subscribe is deprecated as of 2026-07-28
            for uri in sorted(self.subscriptions):
                try:
                    await client.subscribe_resource(uri)  # pyright: ignore[reportDeprecated]
                except Exception as error:
                    logger.warning("server %r: could not subscribe again to %s: %s", self._server, uri, error)

    async def subscribe(self, client: Client | None, uri: str, subscribe: bool) -> None:
        """Add or drop a resource subscription, on this session and the ones after it."""
        if subscribe:
            self.subscriptions.add(uri)
        else:
            self.subscriptions.discard(uri)
        if client is None:
            return
        if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
            # Reopen the listen stream with the new set, and return once the server has
            # acknowledged it: an update made right after this returns is not missed. Changes
            # made while a reopening is pending share its event (replacing it would leave the
            # earlier callers waiting on one that is never set).
            if self._listening.is_set():
                self._listening = Flag()
            acknowledged = self._listening
            if self._listen_scope is not None:
                self._listen_scope.cancel()
            await acknowledged.wait()
            return
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # resources/subscribe is the pre-2026 way, deprecated since
            if subscribe:
                await client.subscribe_resource(uri)  # pyright: ignore[reportDeprecated]
            else:
                await client.unsubscribe_resource(uri)  # pyright: ignore[reportDeprecated]
