"""The backend of a running ``mcpdeck serve`` (``_backend.Backend``): each question asked of its REST API.

Its servers are the ones ``serve`` runs: their states as they are now, without waiting.
Nothing here waits on an event loop (the client blocks on its socket), and nothing imports
the MCP SDK or anyio; pydantic only for ``add``'s config (``ServerConfig.to_json``).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import quote, urlencode

from mcpdeck.cli._attach import Attached, AttachError
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

if TYPE_CHECKING:
    from mcpdeck.cli._output import ProgressLine
    from mcpdeck.config import ServerConfig

__all__ = ["ServeBackend", "as_tried"]

_SERVER_EXTRAS = ("uptime", "calls", "errors", "lastCallAt")
"""What the API adds to a server's status beyond ``ServerStatus.to_json()``."""


def _status(server: dict[str, Any]) -> Status:
    return Status({key: value for key, value in server.items() if key not in _SERVER_EXTRAS})


def _path(*parts: str) -> str:
    return "/" + "/".join(quote(part, safe="") for part in parts)


def _query(**values: object) -> str:
    pairs: list[tuple[str, object]] = []
    for key, value in values.items():
        items = cast(tuple[object, ...], value) if isinstance(value, tuple) else (value,)
        pairs.extend((key, item) for item in items)
    return f"?{urlencode(pairs)}" if pairs else ""


def as_tried(entry: dict[str, Any], startup_timeout: float | None, roots: Sequence[str]) -> dict[str, Any]:
    """The entry as ``add`` tries it: with the global ``--startup-timeout``, and the global ``--root``
    folders (absolute, from this folder) unless it has roots of its own, as a try in this process has
    them. Only the try uses them: the entry is saved as given."""
    tried = dict(entry)
    if startup_timeout is not None:
        tried["startupTimeout"] = startup_timeout
    if roots and "roots" not in tried:
        tried["roots"] = [str(Path(root).expanduser().resolve()) for root in roots]
    return tried


class ServeBackend:
    """The servers of a running ``serve``, through its API (``api``: one client of it)."""

    via_serve = True

    def __init__(self, api: Attached, *, startup_timeout: float | None = None, roots: Sequence[str] = ()):
        self.api = api
        self._startup_timeout = startup_timeout
        self._roots = tuple(roots)

    def close(self) -> None:
        self.api.close()

    async def statuses(
        self,
        first: Callable[[list[Status], list[str]], None] | None = None,
        then: Callable[[Status], None] | None = None,
    ) -> list[Status]:
        found = [_status(server) for server in self.api.request("GET", "/servers")["servers"]]
        if first is not None and found:
            first(found, [status.name for status in found])  # all of them as they are now: none is waited for
        return found

    async def offered(
        self, kind: OfferKind, servers: Sequence[str], show: Callable[[Offered], None], *, at_once: bool
    ) -> None:
        found = self.api.request("GET", f"/{kind}" + _query(server=tuple(servers)))
        failed = [
            status
            for status in await self.statuses()
            if status.state == "failed" and (not servers or status.name in servers)
        ]
        show(Offered(found, failed))

    async def server(self, name: str, *, show_secrets: bool = False) -> ServerDetail:
        detail = self.api.request("GET", _path("servers", name))
        return ServerDetail(detail["config"], _status(detail["status"]), detail["tools"])

    async def test(self, name: str) -> TestReport:
        return self._report(self.api.request("POST", _path("servers", name, "test")))

    async def try_server(self, name: str, server: ServerConfig) -> TestReport:
        entry = as_tried(server.to_json(), self._startup_timeout, self._roots)
        return self._report(self.api.request("POST", "/test", {"name": name, "config": entry}))

    @staticmethod
    def _report(data: dict[str, Any]) -> TestReport:
        status = _status({k: v for k, v in data.items() if k not in ("ok", "duration", "tools")})
        return TestReport(status, bool(data["ok"]), float(data["duration"]), list(data["tools"]))

    async def exists(self, name: str) -> bool:
        try:
            self.api.request("GET", _path("servers", name))
        except AttachError as error:
            if error.code != "server-not-found":
                raise
            return False
        return True

    async def save(self, name: str, server: ServerConfig, *, force: bool) -> None:
        # Tried already (or not to be tried): serve saves and connects it without a try of its own.
        body = {"name": name, "config": server.to_json(), "force": force, "saveAnyway": True}
        self.api.request("POST", "/servers", body)

    async def remove(self, name: str) -> None:
        self.api.request("DELETE", _path("servers", name))

    async def set_disabled(self, name: str, disabled: bool) -> None:
        self.api.request("POST", _path("servers", name, "disable" if disabled else "enable"))

    async def log(self, name: str, lines: int, *, follow: bool) -> LogTail:
        # lines=0 (or less) is the whole log, on both sides.
        if not follow:
            log = self.api.request("GET", _path("servers", name, "logs") + _query(lines=max(lines, 0)))
            return LogTail(log.get("path"), [str(line) for line in log["lines"]])
        log = self.api.request("GET", _path("servers", name, "logs") + _query(lines=1))  # its path, or the error

        def followed() -> Iterator[str]:  # the last lines, then each new one: serve's stream sends both
            path = _path("servers", name, "logs", "follow") + _query(lines=max(lines, 0))
            for _kind, data in self.api.events("GET", path):
                yield str(data["line"])

        return LogTail(log.get("path"), followed())

    async def call(
        self,
        tool: str,
        arguments: dict[str, Any],
        *,
        timeout: float | None,
        validate: bool,
        progress: ProgressLine,
    ) -> CallOutcome:
        body: dict[str, Any] = {"arguments": arguments} | ({"timeout": timeout} if timeout is not None else {})
        path = _path("tools", tool, "call")
        if not progress.live:
            result = self.api.request("POST", path, body)
        else:  # a terminal to draw on: the call's own stream brings its progress
            result = None
            for kind, data in self.api.events("POST", path, body):
                if kind == "progress":
                    progress.draw(data["progress"], data.get("total"), data.get("message"))
                elif kind == "result":
                    result = data
                elif kind == "error":
                    raise AttachError(data["status"], data["error"]["code"], data["error"]["message"])
            if result is None:
                raise AttachError(502, "server-error", "mcpdeck serve ended the call without an answer")
        result.pop("callId", None)
        return CallOutcome(result)

    def chat(
        self, options: ChatOptions, spec: str, search: bool | int, raw: dict[str, Any]
    ) -> AbstractAsyncContextManager[ChatSession]:
        return self._chat(options, spec, search, raw)

    @asynccontextmanager
    async def _chat(
        self, options: ChatOptions, spec: str, search: bool | int, raw: dict[str, Any]
    ) -> AsyncGenerator[ChatSession]:
        from mcpdeck.cli._chat_serve import ServeChat

        errors = {
            status.name: status.error
            for status in await self.statuses()
            if status.error and (not options.servers or status.name in options.servers)
        }
        chat = ServeChat(self.api, options, spec, search, raw, errors)
        chat.open()
        try:
            yield chat
        finally:
            chat.close()
