"""Error translation: what a transport, the SDK or our own checks raised, in one clear sentence."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import httpx2
from mcp import MCPError
from mcp_types.jsonrpc import CONNECTION_CLOSED, INVALID_REQUEST

from mcpdeck.errors import ConfigError, ServerError, leaf_errors, protocol_error_text

__all__ = ["describe_error", "missing_command", "session_expired", "unreachable"]


def _leaves(error: BaseException) -> list[BaseException]:
    """The errors inside ``error`` (groups opened), cancellations left out; ``[error]`` if nothing else."""
    return [e for e in leaf_errors(error) if not isinstance(e, anyio.get_cancelled_exc_class())] or [error]


def describe_error(error: BaseException) -> str:
    """One clear sentence for an error out of a transport, the SDK or our own checks."""
    leaves = _leaves(error)
    first = next((e for e in leaves if not isinstance(e, MCPError | anyio.ClosedResourceError)), leaves[0])
    if isinstance(first, ServerError):
        return first.reason
    if isinstance(first, ConfigError):
        return str(first)
    if isinstance(first, MCPError):
        if first.code == CONNECTION_CLOSED:
            return "the server closed the connection"
        return protocol_error_text(first.code, first.message)
    if isinstance(first, httpx2.HTTPStatusError):
        return f"HTTP {first.response.status_code} from {first.request.url}"
    if isinstance(first, httpx2.ConnectError):
        return f"cannot connect: {first} (is the server running, and is its URL right?)"
    if isinstance(first, httpx2.TimeoutException):
        return "the HTTP request timed out"
    if isinstance(first, FileNotFoundError | PermissionError):
        return f"cannot start the command: {first.strerror}: {first.filename}"
    text = str(first)
    return f"{type(first).__name__}: {text}" if text else type(first).__name__


def unreachable(error: BaseException) -> bool:
    """Whether ``error`` is only that nothing answered at the address (no connection was made)."""
    leaves = _leaves(error)
    return all(isinstance(e, httpx2.ConnectError | anyio.ClosedResourceError) for e in leaves) and any(
        isinstance(e, httpx2.ConnectError) for e in leaves
    )


def session_expired(error: MCPError, last_http_status: int | None) -> bool:
    """Whether the server no longer knows the HTTP session: a 404 on a request that carried its id.

    The SDK client says "Session terminated" for a bare 404; a server that sends a
    JSON-RPC error body with its 404 (the SDK's own says "Session not found") has it
    passed through as is, so the status is what tells.
    """
    if error.code != INVALID_REQUEST:
        return False
    return error.message in ("Session terminated", "Session not found") or last_http_status == 404


def missing_command(command: str, path: str) -> str:
    """Why a stdio server's command cannot be run: not on PATH, or (given as a path) missing or not executable."""
    if os.sep in command or (os.altsep is not None and os.altsep in command):
        target = Path(command).expanduser()
        if target.is_dir():
            return f"command {command!r} is a folder, not a program; give the program's path"
        if target.exists():
            return f"command {command!r} is not executable; make it so (chmod +x) or run it through its interpreter"
        return f"command {command!r} does not exist; check the path"
    return f"command {command!r} was not found on PATH; install it or give its full path (searched {path})"
