"""The backend that starts servers in this process (``_backend.Backend``), over ``Host``.

Each question opens a host for just the servers it needs, waits until they have connected or
failed (or shows them as they settle), and closes it before it returns: no server process
outlives the command. Changes go to the config file through ``ConfigStore``.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcpdeck.cli._app import CliContext
from mcpdeck.cli._backend import (
    CallOutcome,
    ChatOptions,
    ChatSession,
    LogTail,
    Offered,
    OfferKind,
    ServerDetail,
    Status,
    TestReport,
)
from mcpdeck.errors import ConfigError

if TYPE_CHECKING:
    from mcpdeck.cli._output import ProgressLine
    from mcpdeck.config import ServerConfig
    from mcpdeck.host import Host

__all__ = ["FOLLOW_INTERVAL", "HostBackend"]

FOLLOW_INTERVAL = 0.25
"""Seconds between looks at a followed log file."""


def _offered(kind: OfferKind, host: Host, wanted: Callable[[str], bool]) -> Any:
    """The JSON document of what the servers named ``wanted`` offer."""
    if kind == "tools":
        return [tool.to_json() for tool in host.tools if wanted(tool.server)]
    if kind == "prompts":
        return [prompt.to_json() for prompt in host.prompts if wanted(prompt.server)]
    return {
        "resources": [r.to_json() for r in host.resources if wanted(r.server)],
        "templates": [t.to_json() for t in host.resource_templates if wanted(t.server)],
    }


class HostBackend:
    """The servers of the config file, started here for each question (``ctx``: the command line's context)."""

    via_serve = False

    def __init__(self, ctx: CliContext):
        self.ctx = ctx

    def close(self) -> None:
        pass  # each question closes its own host

    async def statuses(
        self,
        first: Callable[[list[Status], list[str]], None] | None = None,
        then: Callable[[Status], None] | None = None,
    ) -> list[Status]:
        if first is None:
            async with self.ctx.host() as host:
                return [Status(status.to_json()) for status in host.servers.values()]
        from mcpdeck.cli._settle import as_they_settle

        async with self.ctx.host(wait=False) as host:
            if not host.servers:
                return []

            def ready(names: list[str], _waiting: list[str]) -> None:
                first([Status(status.to_json()) for status in host.servers.values()], names)

            def settled(name: str) -> None:
                if then is not None:
                    then(Status(host.servers[name].to_json()))

            await as_they_settle(host, ready, settled)
            return [Status(status.to_json()) for status in host.servers.values()]

    async def offered(
        self, kind: OfferKind, servers: Sequence[str], show: Callable[[Offered], None], *, at_once: bool
    ) -> None:
        from mcpdeck.cli._settle import as_they_settle

        for name in servers:
            self.ctx.server(name)  # an unknown name is an error, not an empty list

        def failed(host: Host, names: Sequence[str]) -> list[Status]:
            statuses = (host.servers[name] for name in names)
            return [Status(status.to_json()) for status in statuses if status.state.value == "failed"]

        if at_once:  # one document: every server settled first
            async with self.ctx.host(only=list(servers) or None) as host:
                wanted: Callable[[str], bool] = lambda server: not servers or server in servers  # noqa: E731
                offered = Offered(_offered(kind, host, wanted), failed(host, list(host.servers)))
            show(offered)
            return
        async with self.ctx.host(only=list(servers) or None, wait=False) as host:

            def block(names: list[str]) -> None:
                show(Offered(_offered(kind, host, names.__contains__), failed(host, names)))

            await as_they_settle(host, lambda ready, _waiting: block(ready), lambda name: block([name]))

    async def server(self, name: str, *, show_secrets: bool = False) -> ServerDetail:
        from mcpdeck.cli._render import mask_secrets, target_of

        config = self.ctx.server(name)
        async with self.ctx.host(only=[name]) as host:
            status = host.servers[name].to_json()
            tools = [tool.original_name for tool in host.catalog.for_server(name)]
        if show_secrets:
            status["target"] = target_of(config, show=True)
        return ServerDetail(mask_secrets(config, show=show_secrets), Status(status), tools)

    async def test(self, name: str) -> TestReport:
        return await self.try_server(name, self.ctx.server(name))

    async def try_server(self, name: str, server: ServerConfig) -> TestReport:
        from mcpdeck.host import Host

        ctx = self.ctx
        if ctx.startup_timeout is not None:
            server = server.model_copy(update={"startup_timeout": ctx.startup_timeout})
        async with Host({}, log_dir=ctx.log_dir, roots=list(ctx.roots) or None) as host:
            report = await host.test_server(server, name=name)
        status = Status(report.status.to_json() | {"name": name})
        return TestReport(status, report.ok, report.duration, [tool.name for tool in report.tools])

    async def exists(self, name: str) -> bool:
        existing = self.ctx.store.read()
        return name in existing.servers or name in existing.problems

    async def save(self, name: str, server: ServerConfig, *, force: bool) -> None:
        self.ctx.store.put_server(name, server, replace=force)  # checked again under the lock: another add may race

    async def remove(self, name: str) -> None:
        self.ctx.store.remove_server(name)

    async def set_disabled(self, name: str, disabled: bool) -> None:
        self.ctx.store.set_server_disabled(name, disabled)

    async def log(self, name: str, lines: int, *, follow: bool) -> LogTail:
        from mcpdeck._util.log_tail import read_new
        from mcpdeck.config import RemoteServerConfig, validate_server_name

        ctx = self.ctx
        validate_server_name(name)
        path = ctx.log_dir / f"{name}.log"
        server = ctx.store.read().servers.get(name)
        if not path.exists():
            if isinstance(server, RemoteServerConfig):
                raise ConfigError(f"{name!r} is a remote server; it has no stderr log")
            if server is None:
                raise ConfigError(f"no server named {name!r} in {ctx.path}, and no log at {path}")
            raise ConfigError(f"no log yet for {name!r} at {path}; it is written when the server starts")
        offset, data = read_new(path, 0)
        text = data.decode("utf-8", "replace").splitlines()
        tail = text[-lines:] if lines > 0 else text
        if not follow:
            return LogTail(str(path), tail)
        partial = b"" if data.endswith(b"\n") else data.rpartition(b"\n")[2]
        return LogTail(str(path), _chain(tail, _follow_file(path, offset, partial)))

    async def call(
        self,
        tool: str,
        arguments: dict[str, Any],
        *,
        timeout: float | None,
        validate: bool,
        progress: ProgressLine,
    ) -> CallOutcome:
        ctx = self.ctx
        only = ctx.servers_for(tool)
        history = ctx.history()
        try:
            async with ctx.host(only=only, interactive=True, history=history) as host:
                result = await host.call_tool(tool, arguments, timeout=timeout, progress=progress, validate=validate)
        finally:
            if history is not None:
                history.close()
        return CallOutcome(result.to_json())

    def chat(
        self, options: ChatOptions, spec: str, search: bool | int, raw: dict[str, Any]
    ) -> AbstractAsyncContextManager[ChatSession]:
        return self._chat(options, spec, search, raw)

    @asynccontextmanager
    async def _chat(
        self, options: ChatOptions, spec: str, search: bool | int, raw: dict[str, Any]
    ) -> AsyncGenerator[ChatSession]:
        from mcpdeck.cli._chat_host import host_chat

        async with host_chat(self.ctx, options, spec, search, raw) as chat:
            yield chat


def _chain(first: list[str], then: Iterator[str]) -> Iterator[str]:
    yield from first
    yield from then


def _follow_file(path: Path, offset: int, partial: bytes) -> Iterator[str]:
    """Each line written to ``path`` past ``offset`` as it comes (a rotated file from its start), until Ctrl-C."""
    import time

    from mcpdeck._util.log_tail import read_new

    while True:  # until Ctrl-C, which ends the command
        time.sleep(FOLLOW_INTERVAL)
        offset, data = read_new(path, offset)
        if data:
            *complete, partial = (partial + data).split(b"\n")
            for line in complete:
                yield line.decode("utf-8", "replace")
