"""One JSON shape for every error: ``{"error": {"code": ..., "message": ...}}``.

The message is the one the CLI prints for the same error (``str(error)``), with the
config's secrets redacted. The code is a stable word a program can branch on.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from mcp import MCPError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from mcpdeck.api._respond import SafeJSONResponse
from mcpdeck.errors import (
    ConfigError,
    InvalidArgumentsError,
    MCPDeckError,
    NotOfferedError,
    PermissionDeniedError,
    PromptNotFoundError,
    ResourceNotFoundError,
    ServerCrashedError,
    ServerError,
    ServerTimeoutError,
    ServerUnavailableError,
    ToolNotFoundError,
)

__all__ = ["ApiError", "error_response", "install_error_handlers", "status_of"]

logger = logging.getLogger(__name__)

# Most specific first: the first class an error is an instance of decides.
_STATUS: list[tuple[type[MCPDeckError], int, str]] = [
    (ToolNotFoundError, 404, "tool-not-found"),
    (PromptNotFoundError, 404, "prompt-not-found"),
    (ResourceNotFoundError, 404, "resource-not-found"),
    (InvalidArgumentsError, 422, "invalid-arguments"),
    (PermissionDeniedError, 403, "permission-denied"),
    (ServerUnavailableError, 409, "server-unavailable"),  # the server's state forbids it: not the API's failure
    (NotOfferedError, 409, "not-offered"),  # a capability the server did not declare: nor is this
    (ServerTimeoutError, 504, "server-timeout"),
    (ServerCrashedError, 502, "server-crashed"),
    (ServerError, 502, "server-error"),
    (ConfigError, 400, "config-error"),
]


class ApiError(Exception):
    """An error the API raises itself (unknown server, a call id that is not running ...)."""

    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


# JSON-RPC errors a server answers when the request was wrong, not the server: the
# caller's fault, so a 4xx (invalid params, method not found, resource not found).
_CALLER_ERRORS = {-32602: (400, "server-refused"), -32601: (400, "not-supported"), -32002: (404, "resource-not-found")}


def status_of(error: MCPDeckError) -> tuple[int, str]:
    """The HTTP status and error code of a mcpdeck error."""
    cause = error.__cause__
    if isinstance(error, ServerError) and isinstance(cause, MCPError) and cause.code in _CALLER_ERRORS:
        return _CALLER_ERRORS[cause.code]
    for kind, status, code in _STATUS:
        if isinstance(error, kind):
            return status, code
    return 500, "error"


def error_response(status: int, code: str, message: str) -> SafeJSONResponse:
    """The one error shape."""
    return SafeJSONResponse({"error": {"code": code, "message": message}}, status_code=status)


def install_error_handlers(app: FastAPI) -> None:
    """Answer every error in the one shape (FastAPI's own 404, 405 and 422 included)."""

    async def on_api_error(_: Request, error: Exception) -> Response:
        assert isinstance(error, ApiError)
        return error_response(error.status, error.code, error.message)

    async def on_mcpdeck_error(_: Request, error: Exception) -> Response:
        assert isinstance(error, MCPDeckError)
        status, code = status_of(error)
        return error_response(status, code, str(error))

    async def on_validation(_: Request, error: Exception) -> Response:
        assert isinstance(error, RequestValidationError)
        parts: list[str] = []
        for item in error.errors():
            where = ".".join(str(p) for p in item.get("loc", ()) if p != "body") or "request"
            parts.append(f"{where}: {item.get('msg', 'invalid')}")
        return error_response(422, "invalid-request", "; ".join(parts) or "the request is not valid")

    async def on_http(_: Request, error: Exception) -> Response:
        assert isinstance(error, StarletteHTTPException)
        code = {404: "not-found", 405: "method-not-allowed"}.get(error.status_code, "http-error")
        message = {404: "no such endpoint; see /api/openapi.json", 405: "this endpoint does not take that method"}
        return error_response(error.status_code, code, message.get(error.status_code, str(error.detail)))

    async def on_unexpected(_: Request, error: Exception) -> Response:
        logger.exception("the API failed", exc_info=error)
        return error_response(500, "internal", f"mcpdeck failed: {type(error).__name__}; see its log")

    app.add_exception_handler(ApiError, on_api_error)
    app.add_exception_handler(MCPDeckError, on_mcpdeck_error)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(Exception, on_unexpected)
