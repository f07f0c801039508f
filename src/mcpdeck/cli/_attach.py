"""The CLI attached to a running ``mcpdeck serve`` for the same config file.

When ``serve`` runs for the config (its state file, keyed by the config's path, names its
port and token), the commands in ``ATTACHABLE`` ask its REST API instead of starting
servers: a call takes milliseconds and servers keep their state between commands.
``--json`` output is the same either way. ``mcpdeck --no-attach ...`` (or
``MCPDECK_NO_ATTACH=1``) never attaches. This module is the client and the switch; what
each command does through the API is in ``_attached``.

A state file whose process is gone, or whose port no longer answers, is stale: it is
removed and the command runs on its own.

This path stays light: a small HTTP/1.1 client over a socket (``_loopback``), ``click`` and
the state file reader; no MCP SDK, no pydantic, no ``httpx2``, not even ``http.client``.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import click

from mcpdeck.cli import _loopback
from mcpdeck.cli._loopback import Connection, Response
from mcpdeck.errors import ConfigError, MCPDeckError

__all__ = ["ATTACHABLE", "NO_ATTACH_ENV", "AttachError", "Attached", "attached_command", "connect"]

NO_ATTACH_ENV = "MCPDECK_NO_ATTACH"
ATTACHABLE = frozenset(
    {"list", "get", "tools", "call", "test", "add", "add-json", "remove", "enable", "disable", "logs"}
    | {"resources", "prompts", "chat"}
)
"""The commands that go through a running ``serve``."""

_TEST_HERE = (
    "note: mcpdeck serve tests a saved server as it runs it, so with --startup-timeout or --root the test runs here"
)
_ROOTS_HERE = "note: mcpdeck serve's servers run with the roots serve offers, so with --root this runs here"
_ROOTS_MATTER = frozenset({"call", "chat", "tools", "resources", "prompts"})
"""Commands whose answer a server's roots may change (a filesystem server keeps to them)."""
MAX_SERVED_STEPS = 200
"""The most model turns a prompt may take in ``serve``'s chats (``maxSteps`` of ``POST /api/chats``)."""
_CONNECT_TIMEOUT = 1.0
_TIMEOUT = 600.0
_CONFIG_CODES = frozenset({"config-error", "server-not-found", "invalid-request", "not-found", "no-log"})


class AttachError(Exception):
    """The running ``serve`` refused or failed a request."""

    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


class Attached:
    """A client of one running ``serve`` (one keep-alive connection)."""

    def __init__(self, host: str, port: int, token: str):
        self.host = host
        self.port = port
        self._token = token
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
        remove_state(config, pid=state.pid)  # the process holds a pid but no longer listens: stale
        return None
    return Attached(host, state.port, state.token)


def _refusal(name: str, kwargs: dict[str, Any], ctx: click.Context) -> str | None:
    """Why ``serve`` cannot answer this command as asked (some options need the command's own host):
    None when it can; "" when the options plainly ask for this process, else a note for stderr."""
    if kwargs.get("show_secrets") or kwargs.get("no_connect") or kwargs.get("no_validate"):
        return ""  # secrets stay masked in the API; the rest asks for this process's own way
    parent = ctx.parent.params if ctx.parent is not None else {}
    if name == "test":
        target: tuple[str, ...] = kwargs.get("target") or ()
        given = ("url", "kind", "headers", "envs", "cwd", "roots")
        if len(target) != 1 or any(kwargs.get(option) for option in given):
            return ""  # not a saved server, by name
        if parent.get("startup_timeout") is not None or parent.get("roots"):
            return _TEST_HERE
    if name in _ROOTS_MATTER and parent.get("roots"):
        return _ROOTS_HERE
    if name == "chat" and (kwargs.get("max_steps") or 0) > MAX_SERVED_STEPS:
        return f"note: mcpdeck serve runs at most {MAX_SERVED_STEPS} model turns a prompt, so this chat runs here"
    return None


def attached_command(name: str, original: click.Command, config_of: Callable[[click.Context], Path]) -> click.Command:
    """``original`` with the same options, run through a running ``serve`` when there is one.

    ``config_of(ctx)`` gives the config file the command is run for (from the group's context).
    """

    def callback(**kwargs: Any) -> Any:
        ctx = click.get_current_context()
        config = config_of(ctx)
        refusal = _refusal(name, kwargs, ctx)
        api = connect(config) if refusal != "" else None
        if api is not None and refusal:
            api.close()
            api = None
            click.echo(refusal, err=True)
        if api is None:
            return ctx.invoke(original, **kwargs)
        from mcpdeck.cli._app import fail
        from mcpdeck.cli._attached import RUN

        try:
            RUN[name](api, config, **kwargs)
        except AttachError as error:
            fail(error.message, 2 if error.code in _CONFIG_CODES else 1)
        except ConfigError as error:  # found before asking (a bad option, an invalid name)
            fail(str(error), 2)
        except MCPDeckError as error:  # found before asking (chat: no model named)
            fail(str(error), 1)
        except OSError as error:  # _loopback.ProtocolError too
            message = f"the running mcpdeck serve for {config} stopped answering ({error})"
            fail(f"{message}; run again, or use --no-attach", 1)
        except KeyboardInterrupt:
            fail("interrupted", 130)
        finally:
            with contextlib.suppress(OSError):
                api.close()
        return None

    return click.Command(
        name,
        params=original.params,
        callback=callback,
        help=original.help,
        short_help=original.short_help,
        context_settings=original.context_settings,
        epilog=original.epilog,
    )
