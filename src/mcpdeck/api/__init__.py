"""The REST API of ``mcpdeck serve``: the seeds' IPC channels over HTTP, on FastAPI.

``create_api(context)`` returns the ASGI app mounted at ``/api``; its OpenAPI description
is at ``/api/openapi.json``. (No Swagger page: it would run scripts from a CDN in an
origin that can start programs.) The whole process sits behind ``mcpdeck._http_faces.guard.Guard``
(Host, Origin, token, rate limit, body size), given ``serve_credentials`` and ``sign_in``. See
``docs/api.md`` for every endpoint.
"""

from __future__ import annotations

from fastapi import FastAPI
from starlette.types import ASGIApp, Message, Scope

from mcpdeck._util.version import __version__
from mcpdeck.api._context import ApiContext, CallStats
from mcpdeck.api._errors import ApiError, error_response, install_error_handlers
from mcpdeck.api._events import event_json
from mcpdeck.api._login import Logins, serve_credentials, sign_in
from mcpdeck.api._models import ErrorOut
from mcpdeck.api._respond import Redacting, SafeJSONResponse
from mcpdeck.api._sessions import ChatRoom

__all__ = [
    "ApiContext",
    "ApiError",
    "CallStats",
    "ChatRoom",
    "Logins",
    "SafeJSONResponse",
    "create_api",
    "error_response",
    "event_json",
    "prepare_routes",
    "serve_credentials",
    "sign_in",
]

_ERRORS = {
    status: {"model": ErrorOut, "description": description}
    for status, description in {
        400: "The request or a config in it cannot be used.",
        401: "No token, or a wrong one (`Authorization: Bearer TOKEN`: the state file's, or a console session's).",
        403: "A request from another site's page (its Origin), or a rule denies the read or prompt.",
        404: "No such server, tool, prompt, resource or call.",
        409: "Conflicts with what exists or runs (a server that is not connected, a name taken).",
        413: "The request body is over 4 MiB.",
        421: "The Host header does not name this server.",
        422: "The request does not fit its schema.",
        429: "Too many wrong tokens from this address: wait `Retry-After` seconds.",
        502: "The server failed the request.",
        504: "The server did not answer in time.",
    }.items()
}


def create_api(context: ApiContext) -> Redacting:
    """The API app for one running host (mount it at ``/api``, behind ``mcpdeck._http_faces.guard.Guard``)."""
    from mcpdeck.api import (
        _chat_routes,
        _content_routes,
        _login_codes,
        _metrics,
        _profiles,
        _records,
        _servers,
        _sign_in,
        _tools,
        _traffic,
    )
    from mcpdeck.api import _events as events

    app = FastAPI(
        title="mcpdeck",
        version=__version__,
        summary="The REST API of a running mcpdeck host.",
        default_response_class=SafeJSONResponse,
        responses=_ERRORS,  # pyright: ignore[reportArgumentType]
        openapi_url="/openapi.json",
        docs_url=None,
        redoc_url=None,
        generate_unique_id_function=lambda route: route.name,  # operation ids: the endpoint's name
    )
    app.state.ctx = context
    install_error_handlers(app)
    for module in (
        _servers,
        _profiles,
        _sign_in,
        _tools,
        _content_routes,
        _records,
        events,
        _traffic,
        _metrics,
        _chat_routes,
    ):
        app.include_router(module.router)
    app.include_router(_login_codes.router)
    return Redacting(app, context.redactor)


async def prepare_routes(api: ASGIApp) -> None:
    """Have FastAPI build every route's request handling now, before the process serves (``serve`` awaits it).

    FastAPI (0.165) builds each included router's routes (their parameter and body models, pydantic type
    adapters) on the first request that looks through that router, in the event loop: ~0.3 s of CPU for this
    API, during which nothing else of the process runs. On a replica under load that froze its gateway for
    1-1.9 s at its first ``/api`` request (bench/RESULTS.md: a survivor's first ``/api/history/calls`` after a
    ``kill -9`` held every client that had moved there). One request for a path no route matches, sent to the
    app in this process, looks through every router, ordinary and low-priority routes alike, and builds them
    all; it is answered 404 and nothing else happens.
    """
    scope: Scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": "/.prepare-routes",
        "raw_path": b"/.prepare-routes",
        "root_path": "",
        "query_string": b"",
        "headers": [],
        "client": ("127.0.0.1", 0),
        "server": ("127.0.0.1", 0),
        "state": {},
    }

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        pass

    await api(scope, receive, send)
