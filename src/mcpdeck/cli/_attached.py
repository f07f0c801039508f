"""The commands as they run through a running ``mcpdeck serve`` (see ``_attach``): one function per
command, taking the API client, the config path and the command's own options.

Each prints what the command prints on its own, from the API's JSON: the same renderers
(``tools_text``, ``resources_text``, ``prompts_text``, ``finish_add``) where the output is
built from JSON on both paths, and ``--json`` output byte for byte the same shape. This
path stays light: no MCP SDK, no ``httpx2``; pydantic only for ``add`` (the config models).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast
from urllib.parse import quote, urlencode

import click

from mcpdeck.cli._attach import Attached, AttachError
from mcpdeck.cli._output import ProgressLine, echo_json, safe, state_label, style, table

__all__ = ["RUN", "result_text"]

_SERVER_EXTRAS = ("uptime", "calls", "errors", "lastCallAt")
"""What the API adds to a server's status beyond ``ServerStatus.to_json()``."""


def _status(server: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in server.items() if key not in _SERVER_EXTRAS}


def _path(*parts: str) -> str:
    return "/" + "/".join(quote(part, safe="") for part in parts)


def _query(**values: object) -> str:
    pairs: list[tuple[str, object]] = []
    for key, value in values.items():
        items = cast(tuple[object, ...], value) if isinstance(value, tuple) else (value,)
        pairs.extend((key, item) for item in items)
    return f"?{urlencode(pairs)}" if pairs else ""


def _warn_failed(api: Attached, servers: tuple[str, ...] = ()) -> None:
    from mcpdeck.cli._settle import startup_hint

    for status in api.request("GET", "/servers")["servers"]:
        if status["state"] == "failed" and (not servers or status["name"] in servers):
            message = f"warning: {status['name']} is not connected: {startup_hint(status['error'])}"
            click.echo(style(message, fg="yellow"), err=True)


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


# ----- servers ------------------------------------------------------------------------------


def _list(api: Attached, config: Path, as_json: bool, **_: Any) -> None:
    from mcpdeck.cli._settle import startup_hint

    servers = [_status(s) for s in api.request("GET", "/servers")["servers"]]
    if as_json:
        echo_json({"config": str(config), "servers": servers})
        return
    if not servers:
        click.echo(f"No servers in {config}. Add one with `mcpdeck add NAME -- COMMAND [ARGS...]`.")
        return
    rows = [
        [s["name"], state_label(s["state"]), str(s["toolCount"]) if s["state"] == "connected" else "-", s["transport"],
         s["target"] if s["state"] != "failed" else style(s.get("error") or "", fg="red")]
        for s in servers
    ]  # fmt: skip
    click.echo(table(["name", "status", "tools", "transport", "command / url"], rows))
    for s in servers:
        if s["state"] == "failed":
            click.echo(style(f"\n{s['name']}: {startup_hint(s['error'])}", fg="red"))
        for warning in s.get("warnings") or ():
            click.echo(style(f"\n{s['name']}: warning: {warning}", fg="yellow"))
    connected = sum(s["state"] == "connected" for s in servers)
    tools = sum(s["toolCount"] for s in servers)
    click.echo(f"\n{connected}/{len(servers)} connected, {tools} tools  ({config})  [via mcpdeck serve]")


def _get(api: Attached, config: Path, name: str, as_json: bool, **_: Any) -> None:
    from mcpdeck.cli._settle import startup_hint

    detail = api.request("GET", _path("servers", name))
    status = _status(detail["status"])
    if as_json:
        echo_json({"config": detail["config"], "status": status, "tools": detail["tools"]})
        return
    rows: list[tuple[str, str]] = [("name", status["name"]), ("status", state_label(status["state"]))]
    if status.get("error"):
        rows.append(("error", style(startup_hint(status["error"]), fg="red")))
    rows.extend(("warning", style(w, fg="yellow")) for w in status.get("warnings") or ())
    rows.append(("transport", status["transport"]))
    config_json = cast(dict[str, Any], detail.get("config") or {})
    rows.extend(
        (key, safe(json.dumps(value, ensure_ascii=False))) for key, value in config_json.items() if key != "type"
    )
    info = status.get("serverInfo")
    if info:
        rows.append(("server", safe(f"{info['name']} {info['version']}".strip())))
    if status.get("protocolVersion"):
        rows.append(("protocol", status["protocolVersion"]))
    if status["state"] == "connected":
        rows.append(("tool count", str(status["toolCount"])))
    if status.get("logPath"):
        rows.append(("log", status["logPath"]))
    for key, value in rows:
        click.echo(f"{key:>12}: {value}")
    if detail["tools"]:
        click.echo(f"{'tools':>12}: " + safe(", ".join(detail["tools"])))


def _test(api: Attached, config: Path, target: tuple[str, ...], as_json: bool, **_: Any) -> None:
    from mcpdeck.cli._settle import startup_hint

    name = target[0]
    data = _status(api.request("POST", _path("servers", name, "test")))
    if as_json:
        echo_json(data)
    else:
        click.echo(f"{name}: {state_label(data['state'])} in {data['duration']:.2f} s")
        if data["ok"]:
            info = data.get("serverInfo")
            click.echo(safe(f"  server: {info['name']} {info['version']}") if info else "  server: (anonymous)")
            click.echo(f"  {len(data['tools'])} tools: " + safe(", ".join(data["tools"])))
        else:
            click.echo(style(f"  {startup_hint(data['error'])}", fg="red"))
    if not data["ok"]:
        sys.exit(1)


def _as_tried(entry: dict[str, Any]) -> dict[str, Any]:
    """The entry as ``add`` tries it: with the global ``--startup-timeout``, and the global ``--root``
    folders (absolute, from this folder) unless it has roots of its own, as ``add`` alone tries it.
    Only the try uses them: the entry is saved as given."""
    from mcpdeck.cli._app import CliContext

    ctx = click.get_current_context().find_object(CliContext)
    tried = dict(entry)
    if ctx is not None and ctx.startup_timeout is not None:
        tried["startupTimeout"] = ctx.startup_timeout
    if ctx is not None and ctx.roots and "roots" not in tried:
        tried["roots"] = [str(Path(root).expanduser().resolve()) for root in ctx.roots]
    return tried


def _save(
    api: Attached,
    config: Path,
    name: str,
    entry: dict[str, Any],
    *,
    force: bool,
    save_anyway: bool,
    as_json: bool = False,
) -> None:
    """``add`` through ``serve``: tried apart first (``/api/test``), then added (which saves and connects it)."""
    from mcpdeck.cli._server_admin import finish_add, warn_literal_secrets
    from mcpdeck.config import validate_server_name
    from mcpdeck.errors import ConfigError

    validate_server_name(name)
    if not force:
        try:
            api.request("GET", _path("servers", name))
        except AttachError as error:
            if error.code != "server-not-found":
                raise
        else:
            raise ConfigError(f"server {name!r} already exists in {config}; use --force to replace it", server=name)
    # Tried here (with this command's --startup-timeout and --root), so serve saves it without a second try.
    body = {"name": name, "config": entry, "force": force, "saveAnyway": True}
    if entry.get("disabled"):
        api.request("POST", "/servers", body)
        click.echo(f"Saved {name!r} to {config} (not connected).")
        warn_literal_secrets(name, entry, config, as_json=as_json)
        return
    report = api.request("POST", "/test", {"name": name, "config": _as_tried(entry)})
    finish_add(
        name,
        config,
        ok=report["ok"],
        state=report["state"],
        tools=len(report["tools"]),
        error=report.get("error"),
        save_anyway=save_anyway,
        save=lambda: api.request("POST", "/servers", body),
        entry=entry,
        as_json=as_json,
    )


def _add(api: Attached, config: Path, name: str, command: tuple[str, ...], **options: Any) -> None:
    from dataclasses import fields

    from mcpdeck.cli._server_admin import ServerOptions, server_from_options

    given = ServerOptions(**{field.name: options[field.name] for field in fields(ServerOptions)})
    server = server_from_options(name, command, given, timeout=options["timeout"])
    _save(api, config, name, server.to_json(), force=options["force"], save_anyway=options["save_anyway"])


def _add_json(
    api: Attached, config: Path, name: str, config_json: str, force: bool, save_anyway: bool, **_: Any
) -> None:
    from mcpdeck.cli._server_admin import server_from_json

    entry = server_from_json(name, config_json).to_json()
    _save(api, config, name, entry, force=force, save_anyway=save_anyway, as_json=True)


def _remove(api: Attached, config: Path, name: str, **_: Any) -> None:
    api.request("DELETE", _path("servers", name))
    click.echo(f"Removed {name!r} from {config}.")


def _enable(api: Attached, config: Path, name: str, **_: Any) -> None:
    api.request("POST", _path("servers", name, "enable"))
    click.echo(f"Enabled {name!r}.")


def _disable(api: Attached, config: Path, name: str, **_: Any) -> None:
    api.request("POST", _path("servers", name, "disable"))
    click.echo(f"Disabled {name!r}.")


def _logs(api: Attached, config: Path, name: str, lines: int, follow: bool = False, **_: Any) -> None:
    # lines=0 (or less) is the whole log, on both sides.
    log = api.request("GET", _path("servers", name, "logs") + _query(lines=1 if follow else max(lines, 0)))
    if log.get("path"):
        click.echo(f"==> {log['path']} <==", err=True)
    if not follow:
        for line in log["lines"]:
            click.echo(safe(line, multiline=True))
        return
    try:
        for _kind, data in api.events("GET", _path("servers", name, "logs", "follow") + _query(lines=max(lines, 0))):
            click.echo(safe(data["line"], multiline=True))
    except KeyboardInterrupt:
        return  # Ctrl-C is how following ends


# ----- tools, resources, prompts ------------------------------------------------------------


def _tools(api: Attached, config: Path, servers: tuple[str, ...], verbose: bool, as_json: bool, **_: Any) -> None:
    from mcpdeck.cli._tools import tools_text

    found = api.request("GET", "/tools" + _query(server=servers))
    if as_json:
        echo_json(found)
    else:
        click.echo(tools_text(found, verbose=verbose) or "No tools.")
    _warn_failed(api, servers)


def _call(
    api: Attached, config: Path, tool: str, args_json: str, as_json: bool, timeout: float | None, **_: Any
) -> None:
    from mcpdeck.cli._app import json_object_option

    body: dict[str, Any] = {"arguments": json_object_option(args_json, "--args", '{"path": "README.md"}')}
    if timeout is not None:
        body["timeout"] = timeout
    path = _path("tools", tool, "call")
    progress = ProgressLine(tool)
    if not progress.live:
        result = api.request("POST", path, body)
    else:  # a terminal to draw on: the call's own stream brings its progress
        result = None
        try:
            for kind, data in api.events("POST", path, body):
                if kind == "progress":
                    progress.draw(data["progress"], data.get("total"), data.get("message"))
                elif kind == "result":
                    result = data
                elif kind == "error":
                    raise AttachError(data["status"], data["error"]["code"], data["error"]["message"])
        finally:
            progress.close()
        if result is None:
            raise AttachError(502, "server-error", "mcpdeck serve ended the call without an answer")
    result.pop("callId", None)
    if as_json:
        echo_json(result)
    else:
        click.echo(safe(result_text(result), multiline=True))
    if result.get("isError"):
        sys.exit(1)


def _resources(api: Attached, config: Path, servers: tuple[str, ...], as_json: bool, **_: Any) -> None:
    from mcpdeck.cli._content import resources_text

    found = api.request("GET", "/resources" + _query(server=servers))
    if as_json:
        echo_json(found)
    else:
        click.echo(resources_text(found["resources"], found["templates"]) or "No resources.")
    _warn_failed(api, servers)


def _prompts(api: Attached, config: Path, servers: tuple[str, ...], as_json: bool, **_: Any) -> None:
    from mcpdeck.cli._content import prompts_text

    found = api.request("GET", "/prompts" + _query(server=servers))
    if as_json:
        echo_json(found)
    else:
        click.echo(prompts_text(found) or "No prompts.")
    _warn_failed(api, servers)


def _chat(api: Attached, config: Path, **options: Any) -> None:
    from mcpdeck.cli._chat_attached import run_attached_chat

    run_attached_chat(api, config, **options)


RUN: dict[str, Callable[..., None]] = {
    "list": _list,
    "get": _get,
    "tools": _tools,
    "call": _call,
    "test": _test,
    "add": _add,
    "add-json": _add_json,
    "remove": _remove,
    "enable": _enable,
    "disable": _disable,
    "logs": _logs,
    "resources": _resources,
    "prompts": _prompts,
    "chat": _chat,
}
