"""Commands that show configured servers (list, get), and the registration of every server command.

Each runs on the backend that answers it (``_switch``: this process, or a running ``serve``) and
renders what it answers in one way."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from mcpdeck.cli._app import CliContext, pass_ctx
from mcpdeck.cli._server_admin import ADMIN_COMMANDS
from mcpdeck.cli._settle import startup_hint
from mcpdeck.cli._switch import on_backend

if TYPE_CHECKING:
    from mcpdeck.cli._backend import Backend, Status

__all__ = ["register_server_commands"]


@click.command("list")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--show-secrets", is_flag=True, help="Show arguments and URLs unmasked.")
@pass_ctx
@on_backend("list")
async def list_servers(ctx: CliContext, backend: Backend, as_json: bool, show_secrets: bool) -> None:
    """Connect every server and show its status and tool count.

    \b
    Examples:
      mcpdeck list
      mcpdeck --startup-timeout 60 list --json
    """
    from mcpdeck.cli._output import echo_json, style, table

    targets = _unmasked_targets(ctx) if show_secrets else {}
    if as_json:
        servers = [
            s.json | ({"target": targets[s.name]} if s.name in targets else {}) for s in await backend.statuses()
        ]
        echo_json({"config": str(ctx.path), "servers": servers})
        return
    headers = ["name", "status", "tools", "transport", "command / url"]
    rows: list[list[str]] = []

    def first(statuses: list[Status], ready: list[str]) -> None:
        # Widths come from every row as it is now (the waiting ones say "connecting"), so the
        # rows printed later line up with the first ones.
        rows.extend(_row(status, targets.get(status.name)) for status in statuses)
        lines = table(headers, rows).splitlines()
        shown = (line for status, line in zip(statuses, lines[1:], strict=True) if status.name in ready)
        click.echo("\n".join([lines[0], *shown]))

    def then(status: Status) -> None:
        click.echo(table(headers, [*rows, _row(status, targets.get(status.name))]).splitlines()[-1])

    statuses = await backend.statuses(first, then)
    if not statuses:
        click.echo(f"No servers in {ctx.path}. Add one with `mcpdeck add NAME -- COMMAND [ARGS...]`.")
        return
    for status in statuses:
        if status.state == "failed":
            click.echo(style(f"\n{status.name}: {startup_hint(status.error)}", fg="red"))
        for warning in status.warnings:
            click.echo(style(f"\n{status.name}: warning: {warning}", fg="yellow"))
    connected = sum(s.state == "connected" for s in statuses)
    tools = sum(s.tool_count for s in statuses)
    via = "  [via mcpdeck serve]" if backend.via_serve else ""
    click.echo(f"\n{connected}/{len(statuses)} connected, {tools} tools  ({ctx.path}){via}")


def _unmasked_targets(ctx: CliContext) -> dict[str, str]:
    """Every server's command line or URL as written (``--show-secrets``)."""
    from mcpdeck.cli._render import target_of

    return {name: target_of(config, show=True) for name, config in ctx.store.read().servers.items()}


def _row(status: Status, target: str | None = None) -> list[str]:
    """One row of ``mcpdeck list`` (``target`` replaces the masked one, for ``--show-secrets``)."""
    from mcpdeck.cli._output import state_label, style

    shown = target if target is not None else status.target
    detail = shown if status.state != "failed" else style(status.error or "", fg="red")
    tools = str(status.tool_count) if status.state == "connected" else "-"
    return [status.name, state_label(status.state), tools, status.transport, detail]


@click.command()
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--no-connect", is_flag=True, help="Only show the config; don't start the server.")
@click.option("--show-secrets", is_flag=True, help="Show env and header values, arguments and URLs unmasked.")
@pass_ctx
@on_backend("get")
async def get(
    ctx: CliContext, backend: Backend, name: str, as_json: bool, no_connect: bool, show_secrets: bool
) -> None:
    """Show one server: its config (secrets masked) and live status.

    \b
    Examples:
      mcpdeck get fs
      mcpdeck get fs --no-connect --json
    """
    from mcpdeck.cli._output import echo_json, safe

    if no_connect:
        from mcpdeck.cli._render import mask_secrets

        server = ctx.server(name)
        if as_json:
            echo_json({"config": mask_secrets(server, show=show_secrets)})
        else:
            config = mask_secrets(server, show=show_secrets)
            _print_rows([("name", name), ("transport", server.transport), *_config_rows(config)])
        return
    detail = await backend.server(name, show_secrets=show_secrets)
    if as_json:
        echo_json(detail.to_json())
        return
    _print_rows(_status_rows(detail.status, detail.config))
    if detail.tools:
        click.echo(f"{'tools':>12}: " + safe(", ".join(detail.tools)))


def _config_rows(config: dict[str, Any]) -> list[tuple[str, str]]:
    from mcpdeck.cli._output import safe

    return [(key, safe(json.dumps(value, ensure_ascii=False))) for key, value in config.items() if key != "type"]


def _print_rows(rows: list[tuple[str, str]]) -> None:
    for key, value in rows:
        click.echo(f"{key:>12}: {value}")


def _status_rows(status: Status, config: dict[str, Any]) -> list[tuple[str, str]]:
    from mcpdeck.cli._output import safe, state_label, style

    rows: list[tuple[str, str]] = [("name", status.name), ("status", state_label(status.state))]
    if status.error:
        rows.append(("error", style(startup_hint(status.error), fg="red")))
    rows.extend(("warning", style(warning, fg="yellow")) for warning in status.warnings)
    rows.append(("transport", status.transport))
    rows.extend(_config_rows(config))
    if status.server_info:
        rows.append(("server", safe(status.server_info)))
    if status.protocol_version:
        rows.append(("protocol", status.protocol_version))
    if status.state == "connected":
        rows.append(("tool count", str(status.tool_count)))
    if status.log_path:
        rows.append(("log", status.log_path))
    return rows


def register_server_commands(group: click.Group) -> None:
    """Add the server commands to the CLI."""
    for command in (list_servers, get, *ADMIN_COMMANDS):
        group.add_command(command)
