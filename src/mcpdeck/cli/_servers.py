"""Commands about configured servers: list, get, add, add-json, remove, enable, disable, test."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from mcpdeck.cli._app import _Context, _fail, _run, _sync, pass_ctx  # pyright: ignore[reportPrivateUsage]
from mcpdeck.cli._render import echo_json, mask_secrets, state_label, status_row, table
from mcpdeck.config import (
    ServerConfig,
    parse_server_config,
    validate_server_name,
)
from mcpdeck.errors import ConfigError
from mcpdeck.host import Host
from mcpdeck.status import ServerState, ServerStatus

__all__ = ["register_server_commands"]


@click.command("list")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_ctx
@_run
async def list_servers(ctx: _Context, as_json: bool) -> None:
    """Connect every server and show its status and tool count."""
    async with ctx.host() as host:
        statuses = list(host.servers.values())
    if as_json:
        echo_json({"config": str(ctx.path), "servers": [s.to_json() for s in statuses]})
        return
    if not statuses:
        click.echo(f"No servers in {ctx.path}. Add one with `mcpdeck add NAME -- COMMAND [ARGS...]`.")
        return
    click.echo(table(["name", "status", "tools", "transport", "command / url"], [status_row(s) for s in statuses]))
    for status in statuses:
        if status.state is ServerState.FAILED:
            click.echo(click.style(f"\n{status.name}: {status.error}", fg="red"))
    connected = sum(s.state is ServerState.CONNECTED for s in statuses)
    tools = sum(s.tool_count for s in statuses)
    click.echo(f"\n{connected}/{len(statuses)} connected, {tools} tools  ({ctx.path})")


@click.command()
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_ctx
@_run
async def get(ctx: _Context, name: str, as_json: bool) -> None:
    """Show one server: its config (secrets masked) and live status."""
    server = ctx.server(name)
    async with ctx.host(only=[name]) as host:
        status = host.servers[name]
        tools = [tool.original_name for tool in host.catalog.for_server(name)]
    if as_json:
        echo_json({"config": mask_secrets(server), "status": status.to_json(), "tools": tools})
        return
    _print_status(status, server)
    if tools:
        click.echo(f"{'tools':>12}: " + ", ".join(tools))


def _print_status(status: ServerStatus, server: ServerConfig | None = None) -> None:
    info = status.server_info
    rows: list[tuple[str, str]] = [("name", status.name), ("status", state_label(status.state))]
    if status.error:
        rows.append(("error", click.style(status.error, fg="red")))
    rows.append(("transport", status.transport))
    if server is not None:
        rows.extend(
            (key, json.dumps(value, ensure_ascii=False)) for key, value in mask_secrets(server).items() if key != "type"
        )
    if info:
        rows.append(("server", f"{info.name} {info.version}".strip()))
    if status.protocol_version:
        rows.append(("protocol", status.protocol_version))
    if status.state is ServerState.CONNECTED:
        rows.append(("tool count", str(status.tool_count)))
    if status.log_path:
        rows.append(("log", str(status.log_path)))
    for key, value in rows:
        click.echo(f"{key:>12}: {value}")


def _parse_pairs(values: tuple[str, ...], sep: str, what: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for value in values:
        key, found, rest = value.partition(sep)
        if not found or not key.strip():
            raise ConfigError(f"{what} {value!r} must look like KEY{sep.strip()}VALUE")
        pairs[key.strip()] = rest.strip() if sep.strip() == ":" else rest
    return pairs


async def _save_and_connect(ctx: _Context, name: str, server: ServerConfig, force: bool, connect: bool) -> None:
    existing = ctx.store.read()
    if (name in existing.servers or name in existing.problems) and not force:
        raise ConfigError(f"server {name!r} already exists in {ctx.path}; use --force to replace it", server=name)
    ctx.store.put_server(name, server)
    click.echo(f"Saved {name!r} to {ctx.path}.")
    if not connect or server.disabled:
        return
    async with ctx.host(only=[name]) as host:
        status = host.servers[name]
    if status.state is ServerState.CONNECTED:
        click.echo(f"{state_label(status.state)}: {status.tool_count} tools.")
    else:
        _fail(f"saved, but it did not connect: {status.error}", 1)


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("name")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@click.option("--url", help="A remote server's URL.")
@click.option("--type", "kind", type=click.Choice(["http", "sse"]), help="Remote transport (default: try both).")
@click.option("--header", "headers", multiple=True, metavar="'K: V'", help="HTTP header for a remote server.")
@click.option("--env", "envs", multiple=True, metavar="K=V", help="Environment variable for a stdio server.")
@click.option("--cwd", help="Working directory for a stdio server.")
@click.option("--timeout", type=float, help="Request timeout in seconds.")
@click.option("--force", is_flag=True, help="Replace a server of the same name.")
@click.option("--no-connect", is_flag=True, help="Only save; don't try to connect.")
@pass_ctx
@_run
async def add(
    ctx: _Context,
    name: str,
    command: tuple[str, ...],
    url: str | None,
    kind: str | None,
    headers: tuple[str, ...],
    envs: tuple[str, ...],
    cwd: str | None,
    timeout: float | None,
    force: bool,
    no_connect: bool,
) -> None:
    """Add a server: `add NAME -- COMMAND [ARGS...]` or `add NAME --url URL`."""
    validate_server_name(name)
    if bool(command) == bool(url):
        raise ConfigError("give either a command after `--` (stdio) or --url (remote), not both or neither")
    raw: dict[str, Any]
    if url:
        if envs or cwd:
            raise ConfigError("--env and --cwd are for stdio servers; a remote server takes --header")
        raw = {"url": url, "headers": _parse_pairs(headers, ":", "header")}
        if kind:
            raw["type"] = kind
    else:
        if headers or kind:
            raise ConfigError("--header and --type are for remote servers (--url)")
        raw = {"command": command[0], "args": list(command[1:]), "env": _parse_pairs(envs, "=", "--env")}
        if cwd:
            raw["cwd"] = cwd
    if timeout is not None:
        raw["timeout"] = timeout
    await _save_and_connect(ctx, name, parse_server_config(name, raw), force, not no_connect)


@click.command("add-json")
@click.argument("name")
@click.argument("config_json", metavar="JSON")
@click.option("--force", is_flag=True, help="Replace a server of the same name.")
@click.option("--no-connect", is_flag=True, help="Only save; don't try to connect.")
@pass_ctx
@_run
async def add_json(ctx: _Context, name: str, config_json: str, force: bool, no_connect: bool) -> None:
    """Add a server from its JSON config, as other hosts write it."""
    try:
        raw = json.loads(config_json)
    except json.JSONDecodeError as error:
        raise ConfigError(f"the JSON is not valid: {error.msg} (column {error.colno})") from None
    await _save_and_connect(ctx, name, parse_server_config(name, raw), force, not no_connect)


@click.command()
@click.argument("name")
@pass_ctx
@_sync
def remove(ctx: _Context, name: str) -> None:
    """Delete a server's config."""
    ctx.store.remove_server(name)
    click.echo(f"Removed {name!r} from {ctx.path}.")


@click.command()
@click.argument("name")
@pass_ctx
@_sync
def enable(ctx: _Context, name: str) -> None:
    """Enable a server (clear "disabled")."""
    ctx.store.set_server_disabled(name, False)
    click.echo(f"Enabled {name!r}.")


@click.command()
@click.argument("name")
@pass_ctx
@_sync
def disable(ctx: _Context, name: str) -> None:
    """Disable a server: keep its config, don't connect it."""
    ctx.store.set_server_disabled(name, True)
    click.echo(f"Disabled {name!r}.")


@click.command()
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_ctx
@_run
async def test(ctx: _Context, name: str, as_json: bool) -> None:
    """Connect one server, list its tools, disconnect. Saves nothing."""
    server = ctx.server(name)
    async with Host({}, log_dir=ctx.log_dir) as host:
        if ctx.startup_timeout is not None:
            server = server.model_copy(update={"startup_timeout": ctx.startup_timeout})
        report = await host.test_server(server, name=name)
    status = report.status
    if as_json:
        data = status.to_json() | {"name": name, "ok": report.ok, "duration": round(report.duration, 3)}
        echo_json(data | {"tools": [tool.name for tool in report.tools]})
    else:
        click.echo(f"{name}: {state_label(status.state)} in {report.duration:.2f} s")
        if report.ok:
            info = status.server_info
            click.echo(f"  server: {info.name} {info.version}" if info else "  server: (anonymous)")
            click.echo(f"  {len(report.tools)} tools: " + ", ".join(tool.name for tool in report.tools))
        else:
            click.echo(click.style(f"  {status.error}", fg="red"))
    if not report.ok:
        sys.exit(1)


def register_server_commands(group: click.Group) -> None:
    """Add the server commands to the CLI."""
    for command in (list_servers, get, add, add_json, remove, enable, disable, test):
        group.add_command(command)
