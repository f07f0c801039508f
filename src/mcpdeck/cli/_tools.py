"""Commands about tools: tools, call."""

from __future__ import annotations

import sys

import click

from mcpdeck.catalog import CatalogTool
from mcpdeck.cli._app import _Context, _run, json_object_option, pass_ctx  # pyright: ignore[reportPrivateUsage]
from mcpdeck.cli._render import echo_json, table
from mcpdeck.cli._terminal import ProgressLine
from mcpdeck.errors import ConfigError
from mcpdeck.status import ServerState

__all__ = ["register_tool_commands"]


@click.command()
@click.option("--server", "servers", multiple=True, metavar="NAME", help="Only this server's tools (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (with schemas).")
@pass_ctx
@_run
async def tools(ctx: _Context, servers: tuple[str, ...], as_json: bool) -> None:
    """List the tools of every connected server, under their namespaced names."""
    if servers:
        known = ctx.store.read().servers
        for name in servers:
            if name not in known:
                raise ConfigError(f"no server named {name!r} in {ctx.path}", server=name)
    async with ctx.host(only=list(servers) or None) as host:
        catalog: list[CatalogTool] = [t for t in host.tools if not servers or t.server in servers]
        failed = [s for s in host.servers.values() if s.state is ServerState.FAILED]
    if as_json:
        echo_json([tool.to_json() for tool in catalog])
    else:
        rows = [[t.name, _first_line(t.description)] for t in catalog]
        click.echo(table(["tool", "description"], rows) if rows else "No tools.")
    for status in failed:
        click.echo(click.style(f"warning: {status.name} is not connected: {status.error}", fg="yellow"), err=True)


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def _servers_for(name: str, known: list[str]) -> list[str]:
    """Which servers a namespaced tool name can belong to (connect only those)."""
    return [server for server in known if name.startswith(f"mcp__{server}__")] or known


@click.command()
@click.argument("tool")
@click.option("--args", "args_json", metavar="JSON", default="{}", help="Arguments as a JSON object.")
@click.option("--json", "as_json", is_flag=True, help="The whole MCP result as JSON.")
@click.option("--timeout", type=float, metavar="SECONDS", help="Request timeout (default: the server's).")
@pass_ctx
@_run
async def call(ctx: _Context, tool: str, args_json: str, as_json: bool, timeout: float | None) -> None:
    """Call TOOL (its namespaced name, e.g. mcp__fs__read_file) with --args JSON."""
    arguments = json_object_option(args_json, "--args", '{"path": "README.md"}')
    known = list(ctx.store.read().servers)
    progress = ProgressLine(tool)
    history = ctx.history()
    try:
        async with ctx.host(only=_servers_for(tool, known), interactive=True) as host:
            if history is not None:
                host.events.on(history.record)
            result = await host.call_tool(tool, arguments, timeout=timeout, progress=progress)
    finally:
        progress.close()
        if history is not None:
            history.close()
    if as_json:
        echo_json(result.to_json())
    else:
        click.echo(result.text())
    if result.is_error:
        sys.exit(1)


def register_tool_commands(group: click.Group) -> None:
    """Add ``tools`` and ``call`` to the CLI."""
    for command in (tools, call):
        group.add_command(command)
