"""Commands that show configured servers (list, get), and the registration of every server command."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from mcpdeck.cli._app import CliContext, pass_ctx, run_async
from mcpdeck.cli._server_admin import ADMIN_COMMANDS
from mcpdeck.cli._settle import as_they_settle, startup_hint

if TYPE_CHECKING:
    from mcpdeck.config import ServerConfig
    from mcpdeck.status import ServerStatus

__all__ = ["register_server_commands"]


@click.command("list")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--show-secrets", is_flag=True, help="Show arguments and URLs unmasked.")
@pass_ctx
@run_async
async def list_servers(ctx: CliContext, as_json: bool, show_secrets: bool) -> None:
    """Connect every server and show its status and tool count.

    \b
    Examples:
      mcpdeck list
      mcpdeck --startup-timeout 60 list --json
    """
    from mcpdeck.cli._render import echo_json, style, target_of
    from mcpdeck.status import ServerState

    configs = ctx.store.read().servers if show_secrets else {}
    targets = {name: target_of(config, show=True) for name, config in configs.items()}
    if as_json:
        async with ctx.host() as host:
            statuses = list(host.servers.values())
        servers = [s.to_json() | ({"target": targets[s.name]} if s.name in targets else {}) for s in statuses]
        echo_json({"config": str(ctx.path), "servers": servers})
        return
    statuses = await _list_as_they_settle(ctx, targets)
    if not statuses:
        click.echo(f"No servers in {ctx.path}. Add one with `mcpdeck add NAME -- COMMAND [ARGS...]`.")
        return
    for status in statuses:
        if status.state is ServerState.FAILED:
            click.echo(style(f"\n{status.name}: {startup_hint(status.error)}", fg="red"))
        for warning in status.warnings:
            click.echo(style(f"\n{status.name}: warning: {warning}", fg="yellow"))
    connected = sum(s.state is ServerState.CONNECTED for s in statuses)
    tools = sum(s.tool_count for s in statuses)
    click.echo(f"\n{connected}/{len(statuses)} connected, {tools} tools  ({ctx.path})")


async def _list_as_they_settle(ctx: CliContext, targets: dict[str, str]) -> list[ServerStatus]:
    """Print the table of the servers that settle within ``READY_WAIT``, then a row for each other one as it settles.

    ``targets`` holds the unmasked command lines and URLs to show instead (``--show-secrets``).
    """
    from mcpdeck.cli._render import status_row, table

    headers = ["name", "status", "tools", "transport", "command / url"]
    now: list[list[str]] = []
    async with ctx.host(wait=False) as host:
        if not host.servers:
            return []

        def first(ready: list[str], waiting: list[str]) -> None:
            # Widths come from every row as it is now (the waiting ones say "connecting"), so the
            # rows printed later line up with the first ones.
            now.extend(status_row(status, targets.get(status.name)) for status in host.servers.values())
            lines = table(headers, now).splitlines()
            names = list(host.servers)
            click.echo("\n".join([lines[0], *(line for n, line in zip(names, lines[1:], strict=True) if n in ready)]))

        def then(name: str) -> None:
            row = status_row(host.servers[name], targets.get(name))
            click.echo(table(headers, [*now, row]).splitlines()[-1])

        await as_they_settle(host, first, then)
        return list(host.servers.values())


@click.command()
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--no-connect", is_flag=True, help="Only show the config; don't start the server.")
@click.option("--show-secrets", is_flag=True, help="Show env and header values, arguments and URLs unmasked.")
@pass_ctx
@run_async
async def get(ctx: CliContext, name: str, as_json: bool, no_connect: bool, show_secrets: bool) -> None:
    """Show one server: its config (secrets masked) and live status.

    \b
    Examples:
      mcpdeck get fs
      mcpdeck get fs --no-connect --json
    """
    from mcpdeck.cli._render import echo_json, mask_secrets, safe, target_of

    server = ctx.server(name)
    if no_connect:
        if as_json:
            echo_json({"config": mask_secrets(server, show=show_secrets)})
        else:
            _print_config(name, server, show_secrets=show_secrets)
        return
    async with ctx.host(only=[name]) as host:
        status = host.servers[name]
        tools = [tool.original_name for tool in host.catalog.for_server(name)]
    if as_json:
        status_json = status.to_json() | ({"target": target_of(server, show=True)} if show_secrets else {})
        echo_json({"config": mask_secrets(server, show=show_secrets), "status": status_json, "tools": tools})
        return
    _print_status(status, server, show_secrets=show_secrets)
    if tools:
        click.echo(f"{'tools':>12}: " + safe(", ".join(tools)))


def _config_rows(server: ServerConfig, *, show_secrets: bool = False) -> list[tuple[str, str]]:
    from mcpdeck.cli._render import mask_secrets, safe

    shown = mask_secrets(server, show=show_secrets)
    return [(key, safe(json.dumps(value, ensure_ascii=False))) for key, value in shown.items() if key != "type"]


def _print_config(name: str, server: ServerConfig, *, show_secrets: bool = False) -> None:
    rows = [("name", name), ("transport", server.transport), *_config_rows(server, show_secrets=show_secrets)]
    for key, value in rows:
        click.echo(f"{key:>12}: {value}")


def _print_status(status: ServerStatus, server: ServerConfig | None = None, *, show_secrets: bool = False) -> None:
    from mcpdeck.cli._render import safe, state_label, style
    from mcpdeck.status import ServerState

    info = status.server_info
    rows: list[tuple[str, str]] = [("name", status.name), ("status", state_label(status.state))]
    if status.error:
        rows.append(("error", style(startup_hint(status.error), fg="red")))
    rows.extend(("warning", style(warning, fg="yellow")) for warning in status.warnings)
    rows.append(("transport", status.transport))
    if server is not None:
        rows.extend(_config_rows(server, show_secrets=show_secrets))
    if info:
        rows.append(("server", safe(f"{info.name} {info.version}".strip())))
    if status.protocol_version:
        rows.append(("protocol", status.protocol_version))
    if status.state is ServerState.CONNECTED:
        rows.append(("tool count", str(status.tool_count)))
    if status.log_path:
        rows.append(("log", str(status.log_path)))
    for key, value in rows:
        click.echo(f"{key:>12}: {value}")


def register_server_commands(group: click.Group) -> None:
    """Add the server commands to the CLI."""
    for command in (list_servers, get, *ADMIN_COMMANDS):
        group.add_command(command)
