"""The one ASGI app of ``mcpdeck serve``: the console at ``/``, the API at ``/api``, the gateway at ``/mcp``.

The console is files of the package, served by ``_console`` (its page at ``/``, the rest under ``/console/``).

Everything sits behind ``Guard`` (token, Host, Origin, rate limit). The gateway is mounted
when ``mcpdeck.gateway`` exists and offers ``create_gateway(host)``; until then ``/mcp``
answers 404 in the API's error shape.
"""

from __future__ import annotations

import importlib
import logging
from typing import Any

from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.types import ASGIApp, Receive, Scope, Send

from mcpdeck.api import ApiContext, Guard, create_api
from mcpdeck.api._respond import SafeJSONResponse
from mcpdeck.server._console import console_routes

__all__ = ["build_app", "gateway_app"]

logger = logging.getLogger(__name__)


async def _no_gateway(scope: Scope, receive: Receive, send: Send) -> None:
    response = SafeJSONResponse(
        {"error": {"code": "not-found", "message": "the MCP gateway is not part of this mcpdeck yet"}},
        status_code=404,
    )
    await response(scope, receive, send)


def gateway_app(context: ApiContext) -> ASGIApp:
    """The gateway's ASGI app when ``mcpdeck.gateway`` offers one, else a 404 answer."""
    try:
        module: Any = importlib.import_module("mcpdeck.gateway")
    except ImportError:
        return _no_gateway
    factory = getattr(module, "create_gateway", None)
    if factory is None:
        logger.warning("mcpdeck.gateway has no create_gateway(host); /mcp is not served")
        return _no_gateway
    return factory(context.host)


def build_app(context: ApiContext, *, token: str, hosts: set[str], port: int, gateway: ASGIApp | None = None) -> Guard:
    """The whole app, behind the guard."""
    inner = Starlette(
        routes=[
            *console_routes(),
            Mount("/api", app=create_api(context)),
            Mount("/mcp", app=gateway if gateway is not None else gateway_app(context)),
        ]
    )
    return Guard(inner, token=token, hosts=hosts, port=port)
