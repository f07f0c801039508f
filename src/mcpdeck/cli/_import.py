"""Commands about files: import another host's config, show a server's log."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from mcpdeck.cli._app import _Context, _sync, pass_ctx  # pyright: ignore[reportPrivateUsage]
from mcpdeck.errors import ConfigError

if TYPE_CHECKING:
    from mcpdeck.config._importers import ImportSource

__all__ = ["register_file_commands"]

SOURCES = ("claude-desktop", "claude-code", "cursor", "vscode", "goose")
"""The hosts ``import`` reads (``config._importers.IMPORT_SOURCES``; spelled out so ``--help`` imports nothing)."""


@click.command("import")
@click.argument("source", type=click.Choice(SOURCES), metavar="SOURCE")
@click.argument("path", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Replace servers of the same name.")
@click.option("--dry-run", is_flag=True, help="Show what would be imported; change nothing.")
@pass_ctx
@_sync
def import_(ctx: _Context, source: ImportSource, path: Path | None, force: bool, dry_run: bool) -> None:
    """Import servers from another host's config file.

    SOURCE is one of claude-desktop, claude-code, cursor, vscode, goose. Without PATH the
    host's usual file is read.

    \b
    Examples:
      mcpdeck import claude-desktop --dry-run
      mcpdeck import vscode .vscode/mcp.json
    """
    from mcpdeck.cli._render import table
    from mcpdeck.config._importers import default_import_path, import_servers

    result = import_servers(source, path or default_import_path(source))
    existing = ctx.store.read()
    taken = set(existing.servers) | set(existing.problems)
    added = {n: s for n, s in result.servers.items() if force or n not in taken}
    kept = [n for n in result.servers if n not in added]
    for note in result.notes:
        click.echo(f"note: {note}")
    for name, why in result.skipped.items():
        click.echo(click.style(f"skipped {name}: {why}", fg="yellow"))
    for name in kept:
        click.echo(click.style(f"skipped {name}: already in {ctx.path} (use --force to replace)", fg="yellow"))
    if not added:
        click.echo(f"Nothing to import from {result.path}.")
        return
    rows = [[name, server.transport, server.target] for name, server in added.items()]
    click.echo(table(["name", "transport", "command / url"], rows))
    if dry_run:
        click.echo(f"\n(dry run) {len(added)} servers would be imported into {ctx.path}.")
        return

    def change(doc: dict[str, Any]) -> None:
        servers = doc.setdefault("mcpServers", {})
        for name, server in added.items():
            servers[name] = server.to_json()

    ctx.store.edit(change)
    count = f"{len(added)} server{'s' if len(added) != 1 else ''}"
    click.echo(f"\nImported {count} from {result.path} into {ctx.path}.")


@click.command(short_help="Show the end of a server's log.")
@click.argument("name")
@click.option(
    "-n", "--lines", type=int, metavar="N", default=50, show_default=True, help="How many lines from the end."
)
@pass_ctx
@_sync
def logs(ctx: _Context, name: str, lines: int) -> None:
    """Show the end of a server's log (its stderr, with a line per start).

    \b
    Example:
      mcpdeck logs fs -n 20
    """
    from mcpdeck.config import RemoteServerConfig, StdioServerConfig, validate_server_name

    validate_server_name(name)
    path = ctx.log_dir / f"{name}.log"
    config = ctx.store.read()
    server = config.servers.get(name)
    if not path.exists():
        if isinstance(server, RemoteServerConfig):
            raise ConfigError(f"{name!r} is a remote server; it has no stderr log")
        if server is None:
            raise ConfigError(f"no server named {name!r} in {ctx.path}, and no log at {path}")
        raise ConfigError(f"no log yet for {name!r} at {path}; it is written when the server starts")
    text = path.read_text(encoding="utf-8", errors="replace").splitlines()
    click.echo(f"==> {path} <==", err=True)
    for line in text[-lines:] if lines > 0 else text:
        click.echo(line)
    if isinstance(server, StdioServerConfig) and not text:
        click.echo("(empty)")


def register_file_commands(group: click.Group) -> None:
    """Add ``import`` and ``logs`` to the CLI."""
    for command in (import_, logs):
        group.add_command(command)
