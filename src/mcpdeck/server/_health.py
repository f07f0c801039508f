"""``GET /healthz`` and ``GET /readyz``: what a load balancer asks a replica, answered in front of the guard.

A balancer's health check carries no token and often no ``Host`` header (HAProxy's ``option httpchk``
sends none unless told), so these two paths are answered before the guard (``mcpdeck.api.Guard``)
looks at either. They say nothing a stranger could use: no server names, no config, no data, and
they change nothing, so a page that reaches them by DNS rebinding learns only that the process runs.

- ``/healthz``: the process answers HTTP (200, ``{"status": "alive"}``): restart it when this fails.
- ``/readyz``: it can take calls (200) or not yet / no longer (503), with what is missing: its store
  answered a query within ``PROBE`` seconds (a history that is off needs nothing); every server has
  settled (connected, failed or disabled: none is still making its first connection); it is not
  stopping (a stopping replica answers 503 at once, so the balancer sends it nothing new).

The store is asked by one probe at a time: while one is still waiting (a store that hangs), the next
check answers "no answer" without asking again, so a hung store holds one thread, not one per check.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
from starlette.types import ASGIApp, Receive, Scope, Send

from mcpdeck.status import ServerState

if TYPE_CHECKING:
    from mcpdeck.api import ApiContext

__all__ = ["PROBE", "Health"]

PROBE = 2.0
"""Seconds the store gets to answer a readiness check."""
_PATHS = ("/healthz", "/readyz")


class _StoreProbe:
    """Asks the history's store a trivial query, one probe at a time."""

    def __init__(self, context: ApiContext):
        self._context = context
        self._running = False
        self._answer: str = "not asked yet"

    async def check(self) -> str | None:
        """None when the store answered in time, else why not."""
        history = self._context.history
        if history is None:
            return None
        if self._running:
            return "no answer yet from the store (an earlier check still waits for it)"
        self._running = True

        def ask() -> None:
            try:
                _ = history.schema_version
            except Exception as error:
                self._answer = f"the store cannot be reached: {type(error).__name__}"
            else:
                self._answer = ""
            finally:
                self._running = False

        self._answer = f"the store did not answer within {PROBE:g} s"
        with anyio.move_on_after(PROBE):
            await anyio.to_thread.run_sync(ask, abandon_on_cancel=True)
        return self._answer or None


class Health:
    """ASGI middleware: ``/healthz`` and ``/readyz`` answered here, everything else handed to ``app`` (the guard)."""

    def __init__(self, app: ASGIApp, context: ApiContext):
        self._app = app
        self._context = context
        self._store = _StoreProbe(context)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") not in _PATHS:
            await self._app(scope, receive, send)
            return
        if scope.get("method") not in ("GET", "HEAD"):
            await _answer(scope, send, 405, {"error": {"code": "method-not-allowed", "message": "use GET"}})
            return
        replica = self._context.replica
        if scope["path"] == "/healthz":
            await _answer(scope, send, 200, {"status": "alive", "replica": replica})
            return
        waiting = await self._waiting()
        body: dict[str, Any] = {"ready": not waiting, "replica": replica}
        if waiting:
            body["waiting"] = waiting
        await _answer(scope, send, 503 if waiting else 200, body)

    async def _waiting(self) -> list[str]:
        """What keeps this replica from taking calls (nothing: ready)."""
        if self._context.shutdown.is_set():
            return ["the process is stopping"]
        waiting: list[str] = []
        connecting = sum(status.state is ServerState.CONNECTING for status in self._context.host.servers.values())
        if connecting:
            waiting.append(f"{connecting} server(s) still connecting for the first time")
        store = await self._store.check()
        if store is not None:
            waiting.append(store)
        return waiting


async def _answer(scope: Scope, send: Send, status: int, body: dict[str, Any]) -> None:
    data = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode()),
                (b"cache-control", b"no-store"),
                (b"x-content-type-options", b"nosniff"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": b"" if scope.get("method") == "HEAD" else data})
