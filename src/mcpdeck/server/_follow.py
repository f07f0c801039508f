"""Following the config file: edits made elsewhere are applied to the running host as they land.

A cheap poll: every ``interval`` seconds the store's ``document()`` (``mcpdeck.config``): one ``stat`` of the
file (a few microseconds); only when its size, mtime or inode moved is the file read (in a worker thread), and
only when its text changed is it parsed, once, into the ``ConfigDocument`` every reader of that store shares.
A new document is compared with what the host runs, and only the servers whose entry changed are touched: new
ones are added, changed ones reconnected with their new config, vanished ones removed, nothing saved (the file
already says so). The ``permissions`` rules and the global switch (``mcpEnabled``) are applied too.

A broken edit never stops what runs: a file that is not valid JSON changes nothing (the store keeps the last good
document), a broken ``permissions`` object closes the gate, and a single unusable entry leaves that server
running with its last good config. Each is reported as a ``ConfigReloadFailed`` event and a warning in the log,
and kept in ``ConfigFollower.problems`` until a later edit fixes it.

On a PostgreSQL store, ``serve`` also wakes it when another replica says it wrote the file (a
``NOTIFY``: ``mcpdeck.store.ConfigNotices``), so it looks at once; the interval stays the fallback.

The host's own changes (``add_server`` and friends, as the API makes them) write the file
and then switch what runs. While the API makes one, ``paused()`` is true and the follower
holds off; afterwards it takes the document the change wrote, finds what runs, and does nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable

import anyio
import anyio.to_thread

from mcpdeck.config import AnyServerConfig, ConfigDocument, ConfigSection, ConfigStore, McpConfig, ServerConfig
from mcpdeck.errors import ConfigError, MCPDeckError
from mcpdeck.events import ConfigReloaded, ConfigReloadFailed
from mcpdeck.host import Host

__all__ = ["ConfigFollower"]

logger = logging.getLogger(__name__)

_SECTIONS: tuple[ConfigSection, ...] = ("permissions", "profiles", "gateway")
"""The parts besides the servers whose problems are kept under their name in ``ConfigFollower.problems``."""


def _same(running: AnyServerConfig, wanted: ServerConfig) -> bool:
    return running.to_json() == wanted.to_json()  # (an in-process server's never equals a file's entry)


class ConfigFollower:
    """Applies edits of one config file to a running ``Host``."""

    def __init__(
        self, host: Host, store: ConfigStore, *, interval: float = 0.5, paused: Callable[[], bool] = lambda: False
    ):
        """Follow ``store``'s file for ``host``; ``paused()`` true means "a change of ours is being made: wait"."""
        self._host = host
        self._paused = paused
        self._store = store
        self._path = os.fspath(store.path)
        self.interval = interval
        self._applied: ConfigDocument | None = None
        self.problems: dict[str | None, str] = {}
        """What the last reading could not apply: ``None`` for the whole file, else by server."""
        self.checks = 0
        """How many times the file was looked at (for tests and the cost measurement)."""
        self._woken = anyio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None

    async def prime(self) -> None:
        """Take the document the host was loaded from (the store's; the file as it is now if it has none)."""
        self._applied = self._store.cached
        if self._applied is None:
            with contextlib.suppress(ConfigError):  # said at the first check
                self._applied = await anyio.to_thread.run_sync(self._store.document)

    def wake(self) -> None:
        """Look at the file now rather than at the next interval (from any thread: a notice that it was written)."""
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody follows any more
                loop.call_soon_threadsafe(self._woken.set)

    async def run(self) -> None:
        """Check the file every ``interval`` seconds, or when woken (``wake``), until cancelled."""
        self._loop = asyncio.get_running_loop()
        while True:
            with anyio.move_on_after(self.interval):
                await self._woken.wait()
            self._woken = anyio.Event()
            try:
                await self.check()
            except Exception:  # a bug here must not close the host
                logger.exception("following %s failed", self._path)

    async def check(self) -> bool:
        """Look at the file once; apply it if its content changed. Returns whether it was applied."""
        if self._paused():  # looked at again once the change is made
            return False
        self.checks += 1
        try:
            document = await anyio.to_thread.run_sync(self._store.document)
        except ConfigError as error:  # unusable, and no good document before it
            self._fail(str(error))
            return False
        if self._store.problem is not None:  # the last good document stays in use
            self._fail(str(self._store.problem))
        else:
            self.problems.pop(None, None)
        if document is self._applied:
            return False
        self._applied = document
        await self._apply(document)
        return True

    def _fail(self, error: str, server: str | None = None) -> None:
        if self.problems.get(server) == error:
            return  # said already
        self.problems[server] = error
        where = f" (server {server!r})" if server else ""
        logger.warning("the edit of %s was not applied%s: %s", self._path, where, error)
        self._host.events.publish(ConfigReloadFailed(path=self._path, error=error, server=server))

    async def _apply(self, document: ConfigDocument) -> None:
        for section in _SECTIONS:  # a broken part keeps its last good value (the gateway's profiles and settings)
            problem = document.problems.get(section)
            if problem is None:
                self.problems.pop(section, None)
            else:
                self._fail(str(problem), section)
        gate = self._host.permissions
        problem = document.problems.get("permissions")
        if problem is None:
            gate.rules, gate.problem = document.permissions, None
        else:  # a broken rule closes the gate, as at start-up
            gate.problem = str(problem)
        config = document.config
        if config.enabled != self._host.enabled:
            await self._host.set_enabled(config.enabled, save=False)
        await self._servers(config)

    async def _servers(self, config: McpConfig) -> None:
        host = self._host
        running = host.servers
        added: list[str] = []
        updated: list[str] = []
        removed: list[str] = []
        for name, problem in config.problems.items():
            self._fail(str(problem), name)  # the last good config keeps running
        for name in list(self.problems):
            if name is not None and name not in _SECTIONS and name not in config.problems:
                del self.problems[name]
        for name, server in config.servers.items():
            if name not in running or running[name].unreadable:
                added.append(name)
            elif not _same(host.config_of(name), server):
                updated.append(name)
        removed = [name for name in running if name not in config.servers and name not in config.problems]
        if not (added or updated or removed):
            return

        async def change(name: str) -> None:
            try:
                if name in removed:
                    await host.remove_server(name, save=False)
                else:
                    await host.add_server(name, config.servers[name], save=False, wait=False)
            except MCPDeckError as error:
                self._fail(str(error), name)

        async with anyio.create_task_group() as tg:
            for name in [*removed, *updated, *added]:
                tg.start_soon(change, name)
        host.events.publish(ConfigReloaded(path=self._path, added=added, updated=updated, removed=removed))
