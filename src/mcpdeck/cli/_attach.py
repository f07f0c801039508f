"""The CLI attached to a running ``mcpdeck serve`` for the same config file.

When ``serve`` runs for the config (its state file, keyed by the config's path, names its
port and token), ``list``, ``get``, ``tools``, ``call``, ``test``, ``remove``, ``enable``,
``disable`` and ``logs`` ask its REST API instead of starting servers: a call takes
milliseconds and servers keep their state between commands. ``--json`` output is the same
either way. ``mcpdeck --no-attach ...`` (or ``MCPDECK_NO_ATTACH=1``) never attaches.

A state file whose process is gone, or whose port no longer answers, is stale: it is
removed and the command runs on its own.

This path stays light: the standard library's ``http.client``, ``click`` and the state
file reader; no MCP SDK, no pydantic, no ``httpx2``.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast
from urllib.parse import quote, urlencode

import click

__all__ = ["ATTACHABLE", "NO_ATTACH_ENV", "Attached", "attached_command", "connect"]

NO_ATTACH_ENV = "MCPDECK_NO_ATTACH"
ATTACHABLE = frozenset({"list", "get", "tools", "call", "test", "remove", "enable", "disable", "logs"})
"""The commands that go through a running ``serve``."""

_CONNECT_TIMEOUT = 1.0
_TIMEOUT = 600.0
_CONFIG_CODES = frozenset({"config-error", "server-not-found", "invalid-request", "not-found"})
_SERVER_EXTRAS = ("uptime", "calls", "errors", "lastCallAt")
"""What the API adds to a server's status beyond ``ServerStatus.to_json()``."""


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
        self._conn = http.client.HTTPConnection(host, port, timeout=_TIMEOUT)

    def close(self) -> None:
        self._conn.close()

    def request(self, method: str, path: str, body: Any = None) -> Any:
        """The JSON answer of ``method /api<path>``.

        Raises:
            AttachError: An error answer (its code and message as the API words them).
        """
        headers = {"Authorization": f"Bearer {self._token}", "Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if self._conn.sock is None:
            self._conn.connect()
            # Headers and body go out in two writes: without this, Nagle's algorithm holds the
            # body until the server's delayed ACK of the headers (40 ms on Linux).
            cast(socket.socket, self._conn.sock).setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._conn.request(method, f"/api{path}", body=data, headers=headers)
        response = self._conn.getresponse()
        raw = response.read()
        try:
            answer: Any = json.loads(raw) if raw else None
        except ValueError:
            answer = None
        if response.status >= 400:
            error: Any = cast(dict[str, Any], answer).get("error") if isinstance(answer, dict) else None
            if isinstance(error, dict):
                found = cast(dict[str, Any], error)
                raise AttachError(response.status, str(found.get("code")), str(found.get("message")))
            raise AttachError(response.status, "http-error", f"mcpdeck serve answered HTTP {response.status}")
        return answer


def _open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=_CONNECT_TIMEOUT):
            return True
    except OSError:
        return False


def connect(config: Path) -> Attached | None:
    """A client of the ``serve`` running for ``config``, or None (none runs; a stale state file is removed)."""
    if os.environ.get(NO_ATTACH_ENV, "").strip() not in ("", "0"):
        return None
    from mcpdeck.server._state import read_state, remove_state

    state = read_state(config)
    if state is None:
        return None
    host = "127.0.0.1" if state.host in ("0.0.0.0", "localhost", "") else state.host
    host = "::1" if host == "::" else host
    if not _open(host, state.port):
        remove_state(config, pid=state.pid)  # the process holds a pid but no longer listens: stale
        return None
    return Attached(host, state.port, state.token)


# ----- output -------------------------------------------------------------------------------


def _echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def _status(server: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in server.items() if key not in _SERVER_EXTRAS}


def _size(data: str) -> str:
    size = len(data) * 3 // 4
    return f"{size / 1024:.1f} KB" if size >= 1024 else f"{size} B"


def _block_text(block: dict[str, Any]) -> str:
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind in ("image", "audio"):
        return f"[{kind}: {block.get('mimeType')}, {_size(str(block.get('data', '')))}]"
    if kind == "resource_link":
        label = block.get("title") or block.get("name")
        mime = f" {block['mimeType']}" if block.get("mimeType") else ""
        return f"[resource link: {label} <{block.get('uri')}>{mime}]"
    if kind == "resource":
        resource = cast(dict[str, Any], block.get("resource") or {})
        if "text" in resource:
            return str(resource["text"])
        blob = _size(str(resource.get("blob", "")))
        return f"[binary resource <{resource.get('uri')}> {resource.get('mimeType') or ''}, {blob}]".replace(" ,", ",")
    return f"[{kind or 'unknown'} content]"


def result_text(result: dict[str, Any]) -> str:
    """A call result's text, as ``ToolResult.text()`` renders it."""
    content = cast(list[dict[str, Any]], result.get("content") or [])
    parts = [_block_text(block) for block in content]
    structured = result.get("structuredContent")
    if structured is not None and not any(block.get("type") == "text" for block in content):
        parts.append(json.dumps(structured, indent=2, ensure_ascii=False))
    return "\n".join(parts)


_MARKS = {
    "connected": ("●", "green"),
    "connecting": ("◌", "yellow"),
    "reconnecting": ("◌", "yellow"),
    "failed": ("✖", "red"),
    "disabled": ("○", "bright_black"),
    "stopped": ("○", "bright_black"),
}


def _label(state: str) -> str:
    symbol, color = _MARKS.get(state, ("?", "white"))
    return click.style(f"{symbol} {state}", fg=color)


def _rows(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(click.unstyle(str(row[i]))) for row in [headers, *rows]) for i in range(len(headers))]

    def pad(text: str, width: int) -> str:
        return text + " " * (width - len(click.unstyle(text)))

    lines = [
        click.style("  ".join(pad(h.upper(), w) for h, w in zip(headers, widths, strict=True)).rstrip(), bold=True)
    ]
    lines += ["  ".join(pad(str(c), w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    return "\n".join(lines)


# ----- the commands -------------------------------------------------------------------------


def _list(api: Attached, config: Path, as_json: bool, **_: Any) -> None:
    servers = [_status(s) for s in api.request("GET", "/servers")["servers"]]
    if as_json:
        _echo_json({"config": str(config), "servers": servers})
        return
    if not servers:
        click.echo(f"No servers in {config}. Add one with `mcpdeck add NAME -- COMMAND [ARGS...]`.")
        return
    rows = [
        [s["name"], _label(s["state"]), str(s["toolCount"]) if s["state"] == "connected" else "-", s["transport"],
         s["target"] if s["state"] != "failed" else click.style(s.get("error") or "", fg="red")]
        for s in servers
    ]  # fmt: skip
    click.echo(_rows(["name", "status", "tools", "transport", "command / url"], rows))
    for s in servers:
        if s["state"] == "failed":
            click.echo(click.style(f"\n{s['name']}: {s['error']}", fg="red"))
        for warning in s.get("warnings") or ():
            click.echo(click.style(f"\n{s['name']}: warning: {warning}", fg="yellow"))
    connected = sum(s["state"] == "connected" for s in servers)
    tools = sum(s["toolCount"] for s in servers)
    click.echo(f"\n{connected}/{len(servers)} connected, {tools} tools  ({config})  [via mcpdeck serve]")


def _get(api: Attached, config: Path, name: str, as_json: bool, **_: Any) -> None:
    detail = api.request("GET", f"/servers/{quote(name, safe='')}")
    status = _status(detail["status"])
    if as_json:
        _echo_json({"config": detail["config"], "status": status, "tools": detail["tools"]})
        return
    rows: list[tuple[str, str]] = [("name", status["name"]), ("status", _label(status["state"]))]
    if status.get("error"):
        rows.append(("error", click.style(status["error"], fg="red")))
    rows.extend(("warning", click.style(w, fg="yellow")) for w in status.get("warnings") or ())
    rows.append(("transport", status["transport"]))
    config_json = cast(dict[str, Any], detail.get("config") or {})
    for key, value in config_json.items():
        if key != "type":
            rows.append((key, json.dumps(value, ensure_ascii=False)))
    info = status.get("serverInfo")
    if info:
        rows.append(("server", f"{info['name']} {info['version']}".strip()))
    if status.get("protocolVersion"):
        rows.append(("protocol", status["protocolVersion"]))
    if status["state"] == "connected":
        rows.append(("tool count", str(status["toolCount"])))
    if status.get("logPath"):
        rows.append(("log", status["logPath"]))
    for key, value in rows:
        click.echo(f"{key:>12}: {value}")
    if detail["tools"]:
        click.echo(f"{'tools':>12}: " + ", ".join(detail["tools"]))


def _tools(api: Attached, config: Path, servers: tuple[str, ...], as_json: bool, **_: Any) -> None:
    query = urlencode([("server", s) for s in servers])
    found = api.request("GET", "/tools" + (f"?{query}" if query else ""))
    if as_json:
        _echo_json(found)
    else:
        rows = [[t["name"], (t.get("description") or "").strip().splitlines()[0] if t.get("description") else ""]
                for t in found]  # fmt: skip
        click.echo(_rows(["tool", "description"], rows) if rows else "No tools.")
    statuses = api.request("GET", "/servers")["servers"]
    for status in statuses:
        if status["state"] == "failed" and (not servers or status["name"] in servers):
            message = f"warning: {status['name']} is not connected: {status['error']}"
            click.echo(click.style(message, fg="yellow"), err=True)


def _call(
    api: Attached, config: Path, tool: str, args_json: str, as_json: bool, timeout: float | None, **_: Any
) -> None:
    try:
        arguments: Any = json.loads(args_json)
    except json.JSONDecodeError as error:
        raise AttachError(
            400, "config-error", f"--args is not valid JSON: {error.msg} (column {error.colno})"
        ) from None
    if not isinstance(arguments, dict):
        raise AttachError(400, "config-error", '--args must be a JSON object, like {"path": "README.md"}')
    body: dict[str, Any] = {"arguments": arguments}
    if timeout is not None:
        body["timeout"] = timeout
    result = api.request("POST", f"/tools/{quote(tool, safe='')}/call", body)
    result.pop("callId", None)
    if as_json:
        _echo_json(result)
    else:
        click.echo(result_text(result))
    if result.get("isError"):
        sys.exit(1)


def _test(api: Attached, config: Path, target: tuple[str, ...], as_json: bool, **_: Any) -> None:
    name = target[0]
    report = api.request("POST", f"/servers/{quote(name, safe='')}/test")
    data = _status(report)
    if as_json:
        _echo_json(data)
    else:
        click.echo(f"{name}: {_label(data['state'])} in {data['duration']:.2f} s")
        if data["ok"]:
            info = data.get("serverInfo")
            click.echo(f"  server: {info['name']} {info['version']}" if info else "  server: (anonymous)")
            click.echo(f"  {len(data['tools'])} tools: " + ", ".join(data["tools"]))
        else:
            click.echo(click.style(f"  {data['error']}", fg="red"))
    if not data["ok"]:
        sys.exit(1)


def _remove(api: Attached, config: Path, name: str, **_: Any) -> None:
    api.request("DELETE", f"/servers/{quote(name, safe='')}")
    click.echo(f"Removed {name!r} from {config}.")


def _enable(api: Attached, config: Path, name: str, **_: Any) -> None:
    api.request("POST", f"/servers/{quote(name, safe='')}/enable")
    click.echo(f"Enabled {name!r}.")


def _disable(api: Attached, config: Path, name: str, **_: Any) -> None:
    api.request("POST", f"/servers/{quote(name, safe='')}/disable")
    click.echo(f"Disabled {name!r}.")


def _logs(api: Attached, config: Path, name: str, lines: int, **_: Any) -> None:
    # lines=0 reads no lines, so the whole log is asked for with a large number, as `logs -n 0` shows all.
    log = api.request("GET", f"/servers/{quote(name, safe='')}/logs?lines={lines if lines > 0 else 1_000_000}")
    if log.get("path"):
        click.echo(f"==> {log['path']} <==", err=True)
    for line in log["lines"]:
        click.echo(line)


_RUN: dict[str, Callable[..., None]] = {
    "list": _list,
    "get": _get,
    "tools": _tools,
    "call": _call,
    "test": _test,
    "remove": _remove,
    "enable": _enable,
    "disable": _disable,
    "logs": _logs,
}


def _attachable(name: str, kwargs: dict[str, Any]) -> bool:
    """Whether ``serve`` can answer this command as asked (some options need the command's own host)."""
    if kwargs.get("show_secrets") or kwargs.get("no_connect") or kwargs.get("no_validate"):
        return False  # secrets stay masked in the API; the rest asks for this process's own way
    if name == "test":
        target: tuple[str, ...] = kwargs.get("target") or ()
        given = ("url", "kind", "headers", "envs", "cwd", "roots")
        return len(target) == 1 and not any(kwargs.get(option) for option in given)  # a saved server, by name
    return True


def attached_command(name: str, original: click.Command, config_of: Callable[[click.Context], Path]) -> click.Command:
    """``original`` with the same options, run through a running ``serve`` when there is one.

    ``config_of(ctx)`` gives the config file the command is run for (from the group's context).
    """

    def callback(**kwargs: Any) -> Any:
        ctx = click.get_current_context()
        config = config_of(ctx)
        api = connect(config) if _attachable(name, kwargs) else None
        if api is None:
            return ctx.invoke(original, **kwargs)
        try:
            _RUN[name](api, config, **kwargs)
        except AttachError as error:
            click.echo(click.style("error: ", fg="red", bold=True) + error.message, err=True)
            sys.exit(2 if error.code in _CONFIG_CODES else 1)
        except (OSError, http.client.HTTPException) as error:
            message = (
                f"the running mcpdeck serve for {config} stopped answering ({error}); run again, or use --no-attach"
            )
            click.echo(click.style("error: ", fg="red", bold=True) + message, err=True)
            sys.exit(1)
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
