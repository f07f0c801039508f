"""Following the config file: edits made elsewhere are applied to the running host as they land.

A cheap poll: every ``interval`` seconds one ``stat`` of the file (a few microseconds); only
when its size, mtime or inode moved is the file read (in a worker thread) and hashed, and
only when the content changed is it parsed and compared with what the host runs. Then only
the servers whose entry changed are touched: new ones are added, changed ones reconnected
with their new config, vanished ones removed, nothing saved (the file already says so).
The ``permissions`` rules and the global switch (``mcpEnabled``) are applied too.

A broken edit never stops what runs: a file that is not valid JSON changes nothing, and a
single unusable entry leaves that server running with its last good config. Both are
reported as a ``ConfigReloadFailed`` event and a warning in the log, and kept in
``ConfigFollower.problems`` until a later edit fixes them.

On a PostgreSQL store, ``serve`` also wakes it when another replica says it wrote the file (a
``NOTIFY``: ``mcpdeck.store.ConfigNotices``), so it looks at once; the interval stays the fallback.

The host's own changes (``add_server`` and friends, as the API makes them) write the file
and then switch what runs. While the API makes one, ``paused()`` is true and the follower
holds off; afterwards it reads the file back, finds what runs, and does nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
from collections.abc import Callable

import anyio
import anyio.to_thread

from mcpdeck.config import AnyServerConfig, ConfigStore, McpConfig, ServerConfig, parse_config_document
from mcpdeck.errors import ConfigError, MCPDeckError
from mcpdeck.events import ConfigReloaded, ConfigReloadFailed
from mcpdeck.host import Host
from mcpdeck.permissions import parse_permissions

__all__ = ["ConfigFollower"]

logger = logging.getLogger(__name__)

_Stamp = tuple[int, int, int] | None  # (size, mtime_ns, inode), None: no file


def _stamp(path: str) -> _Stamp:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ino)


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


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
        self._stamp: _Stamp = _stamp(self._path)
        self._digest: bytes | None = None
        self.problems: dict[str | None, str] = {}
        """What the last reading could not apply: ``None`` for the whole file, else by server."""
        self.checks = 0
        """How many times the file was looked at (for tests and the cost measurement)."""
        self.reads = 0
        """How many times it was read (its size, mtime or inode had moved)."""
        self._woken = anyio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None

    async def prime(self) -> None:
        """Remember the file as it is now (the host was just loaded from it)."""
        self._stamp = _stamp(self._path)
        data = await anyio.to_thread.run_sync(_read, self._path)
        self._digest = hashlib.sha256(data).digest() if data is not None else None

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
        if self._paused():  # looked at again once the change is made (its stamp is not taken yet)
            return False
        self.checks += 1
        stamp = _stamp(self._path)
        if stamp == self._stamp:
            return False
        self._stamp = stamp
        self.reads += 1
        data = await anyio.to_thread.run_sync(_read, self._path)
        digest = hashlib.sha256(data).digest() if data is not None else None
        if digest == self._digest:
            return False
        self._digest = digest
        await self._apply()
        return True

    def _fail(self, error: str, server: str | None = None) -> None:
        if self.problems.get(server) == error:
            return  # said already
        self.problems[server] = error
        where = f" (server {server!r})" if server else ""
        logger.warning("the edit of %s was not applied%s: %s", self._path, where, error)
        self._host.events.publish(ConfigReloadFailed(path=self._path, error=error, server=server))

    async def _apply(self) -> None:
        # Read through the store, which reports a broken file with its line; should the file
        # have changed again since it was hashed, the next check applies that too.
        try:
            raw = await anyio.to_thread.run_sync(self._store.read_raw)
            config = parse_config_document(raw, self._store.path)
        except (ConfigError, UnicodeDecodeError) as error:
            self._fail(str(error))
            return
        self.problems.pop(None, None)
        gate = self._host.permissions
        try:
            gate.rules = parse_permissions(raw, path=self._path)
            gate.problem = None
        except ConfigError as error:  # a broken rule closes the gate, as at start-up
            gate.problem = str(error)
            self._fail(str(error), "permissions")
        else:
            self.problems.pop("permissions", None)
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
            if name not in (None, "permissions") and name not in config.problems:
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
