"""The client of a running ``mcpdeck serve`` for the same config file.

When ``serve`` runs for the config (its state file, keyed by the config's path, names its
port and token), ``connect`` gives a client of its REST API: the server commands then ask it
(``_serve_backend``) instead of starting servers, and ``serve --stdio`` and ``ui`` use it too.
``mcpdeck --no-attach ...`` (or ``MCPDECK_NO_ATTACH=1``) never attaches (``_switch``).

A state file whose process is gone, or whose port no longer answers, is stale: it is
removed and the command runs on its own.

This path stays light: a small HTTP/1.1 client over a socket (``_loopback``) and the state
file reader; no MCP SDK, no pydantic, no ``httpx2``, not even ``http.client``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from mcpdeck.cli import _loopback
from mcpdeck.cli._loopback import Connection, Response
from mcpdeck.errors import MCPDeckError

if TYPE_CHECKING:
    from mcpdeck.server import ServeState

__all__ = ["NO_ATTACH_ENV", "AttachError", "Attached", "connect"]

NO_ATTACH_ENV = "MCPDECK_NO_ATTACH"
_CONNECT_TIMEOUT = 1.0
_TIMEOUT = 600.0
_CONFIG_CODES = frozenset({"config-error", "server-not-found", "invalid-request", "not-found", "no-log"})
"""The API's error codes that are a config or usage problem (exit 2, as the command alone)."""


class AttachError(MCPDeckError):
    """The running ``serve`` refused or failed a request: its code and message as the API words them."""

    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message

    @property
    def exit_code(self) -> int:
        """2 for a config or usage problem, else 1."""
        return 2 if self.code in _CONFIG_CODES else 1


class Attached:
    """A client of one running ``serve`` (one keep-alive connection)."""

    def __init__(self, host: str, port: int, token: str, state: ServeState | None = None):
        self.host = host
        self.port = port
        self._token = token
        self.state = state
        """What the ``serve`` it reached wrote in its state file (None: given by hand)."""
        self._conn = Connection(host, port, timeout=_TIMEOUT)

    @property
    def token(self) -> str:
        """The running ``serve``'s token (its API and its gateway at ``/mcp``)."""
        return self._token

    def close(self) -> None:
        self._conn.close()

    def fork(self) -> Attached:
        """Another client of the same ``serve`` (a request of its own while this one streams)."""
        return Attached(self.host, self.port, self._token)

    def _send(self, method: str, path: str, body: Any, accept: str) -> Response:
        headers = {"Authorization": f"Bearer {self._token}", "Accept": accept}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        response = self._conn.request(method, f"/api{path}", data, headers)
        if response.status >= 400:
            raise _error_of(response.status, response.read())
        return response

    def request(self, method: str, path: str, body: Any = None) -> Any:
        """The JSON answer of ``method /api<path>``.

        Raises:
            AttachError: An error answer (its code and message as the API words them).
        """
        raw = self._send(method, path, body, "application/json").read()
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return None

    def events(self, method: str, path: str, body: Any = None) -> Iterator[tuple[str, Any]]:
        """The server-sent events ``method /api<path>`` answers, as ``(event, data)``, while the stream lasts.

        Raises:
            AttachError: An error answer before the stream began.
        """
        response = self._send(method, path, body, "text/event-stream")
        kind, data = "message", ""
        while line := response.readline():
            text = line.decode("utf-8", "replace").rstrip("\r\n")
            if text.startswith("event:"):
                kind = text[6:].strip()
            elif text.startswith("data:"):
                data += text[5:].strip()
            elif not text and data:
                yield kind, json.loads(data)
                kind, data = "message", ""


def _error_of(status: int, raw: bytes) -> AttachError:
    try:
        answer: Any = json.loads(raw) if raw else None
    except ValueError:
        answer = None
    error: Any = cast(dict[str, Any], answer).get("error") if isinstance(answer, dict) else None
    if isinstance(error, dict):
        found = cast(dict[str, Any], error)
        return AttachError(status, str(found.get("code")), str(found.get("message")))
    return AttachError(status, "http-error", f"mcpdeck serve answered HTTP {status}")


def _open(host: str, port: int) -> bool:
    try:
        with _loopback.connect(host, port, _CONNECT_TIMEOUT):
            return True
    except OSError:
        return False


def connect(config: Path) -> Attached | None:
    """A client of the ``serve`` running for ``config``, or None (none runs; a stale state file is removed)."""
    if os.environ.get(NO_ATTACH_ENV, "").strip() not in ("", "0"):
        return None
    from mcpdeck.server import read_state, remove_state

    state = read_state(config)
    if state is None:
        return None
    host = "127.0.0.1" if state.host in ("0.0.0.0", "localhost", "") else state.host
    host = "::1" if host == "::" else host
    if not _open(host, state.port):
        remove_state(config, replica=state.replica, pid=state.pid)  # it holds a pid but no longer listens: stale
        return None
    return Attached(host, state.port, state.token, state)
