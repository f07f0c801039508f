"""The one ASGI app of ``mcpdeck serve``: the console at ``/``, the API at ``/api``, the gateway at ``/mcp``,
the Prometheus figures at ``/metrics``.

The console is files of the package, served by ``_console`` (its page at ``/``, the rest under ``/console/``).

Everything sits behind ``mcpdeck._http_faces.guard.Guard`` (Host, Origin, token, rate limit, body size) but a
load balancer's two questions, ``/healthz`` and ``/readyz`` (``_health``), answered in front of it. The gateway
(``mcpdeck.gateway``, opened by the process for the host it runs) gets every path under ``/mcp`` unchanged:
it serves ``/mcp`` and ``/mcp/<profile>`` itself, and a plain ``Mount`` would redirect ``/mcp``.
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from mcpdeck._http_faces.guard import Guard
from mcpdeck._observability.metrics import Exposition
from mcpdeck.api import ApiContext, SafeJSONResponse, create_api, error_response, serve_credentials, sign_in
from mcpdeck.server._console import console_routes, public
from mcpdeck.server._health import Health

__all__ = ["HOST_HINT", "build_app"]


async def _no_gateway(scope: Scope, receive: Receive, send: Send) -> None:
    response = SafeJSONResponse(
        {"error": {"code": "not-found", "message": "this process serves no MCP gateway"}},
        status_code=404,
    )
    await response(scope, receive, send)


async def _not_found(request: Request, _: Exception) -> Response:
    return error_response(404, "not-found", "no such page: the console is at /, the API at /api, the gateway at /mcp")


HOST_HINT = (
    "; if clients reach it by that name (through a load balancer or a proxy), start serve with "
    "`--allowed-host NAME[:PORT]` (or MCPDECK_ALLOWED_HOSTS=NAME[:PORT])"
)
"""What serve's 421 adds for a ``Host`` it does not answer for: how to admit a balancer's name (the
gateway has no such option)."""


class _Paths:
    """``/mcp`` and everything below it to the gateway, the rest to the console and the API."""

    def __init__(self, inner: ASGIApp, gateway: ASGIApp):
        self._inner = inner
        self._gateway = gateway

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope.get("path", "")
        if scope["type"] == "http" and (path == "/mcp" or path.startswith("/mcp/")):
            await self._gateway(scope, receive, send)
        else:
            await self._inner(scope, receive, send)


def _metrics(context: ApiContext) -> Route:
    """``GET /metrics``: the host's figures in Prometheus's text format (behind the token, as everything)."""

    async def metrics(_: Request) -> Response:
        if context.metrics is None:
            return error_response(404, "not-found", "this process keeps no metrics")
        headers = {"cache-control": "no-store"}
        return Response(context.metrics.exposition(), media_type=Exposition.CONTENT_TYPE, headers=headers)

    return Route("/metrics", metrics, methods=["GET"])


def build_app(
    context: ApiContext,
    *,
    token: str,
    hosts: set[str],
    gateway: ASGIApp | None = None,
    any_address: bool = False,
    api: ASGIApp | None = None,
) -> ASGIApp:
    """The whole app: the health checks, then the guard in front of the rest. ``api``: the API app made for
    ``context`` (``create_api``; made here when not given)."""
    inner = Starlette(
        routes=[*console_routes(), _metrics(context), Mount("/api", app=api or create_api(context))],
        exception_handlers={404: _not_found},
    )
    guard = Guard(
        _Paths(inner, gateway or _no_gateway),
        hosts=hosts,
        any_address=any_address,
        credentials=serve_credentials(token, context.logins),
        public=public,
        sign_in=sign_in(context.logins),
        mcp_prefix="/mcp",
        token_hint=" (the token is in the state file); for the console, run `mcpdeck ui`, which opens a signed-in tab",
        host_hint=HOST_HINT,
    )
    return Health(guard, context)
