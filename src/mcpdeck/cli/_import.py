"""Commands about files: import another host's config, show a server's log."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from mcpdeck.cli._app import CliContext, errors_to_exit, pass_ctx
from mcpdeck.cli._switch import on_backend

if TYPE_CHECKING:
    from mcpdeck.cli._backend import Backend
    from mcpdeck.config import ImportSource, ServerConfig

__all__ = ["register_file_commands"]

SOURCES = ("claude-desktop", "claude-code", "cursor", "vscode", "goose")
"""The hosts ``import`` reads (``config._importers.IMPORT_SOURCES``; spelled out so ``--help`` imports nothing)."""


@click.command("import")
@click.argument("source", type=click.Choice(SOURCES), metavar="SOURCE")
@click.argument("path", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Replace servers of the same name.")
@click.option("--dry-run", is_flag=True, help="Show what would be imported; change nothing.")
@click.option(
    "--keep-auto-approve",
    is_flag=True,
    help="Keep the servers' autoApprove lists (tools that then run without asking); default: ask, or drop them.",
)
@pass_ctx
@errors_to_exit
def import_(
    ctx: CliContext, source: ImportSource, path: Path | None, force: bool, dry_run: bool, keep_auto_approve: bool
) -> None:
    """Import servers from another host's config file.

    SOURCE is one of claude-desktop, claude-code, cursor, vscode, goose. Without PATH the
    host's usual file is read.

    \b
    Examples:
      mcpdeck import claude-desktop --dry-run
      mcpdeck import vscode .vscode/mcp.json
    """
    from mcpdeck.cli._render import safe, style, table
    from mcpdeck.config import default_import_path, import_servers

    result = import_servers(source, path or default_import_path(source))
    existing = ctx.store.read()
    taken = set(existing.servers) | set(existing.problems)
    added = {n: s for n, s in result.servers.items() if force or n not in taken}
    kept = [n for n in result.servers if n not in added]
    for note in result.notes:
        click.echo(f"note: {safe(note)}")
    for name, why in result.skipped.items():
        click.echo(style(f"skipped {name}: {why}", fg="yellow"))
    for name in kept:
        click.echo(click.style(f"skipped {name}: already in {ctx.path} (use --force to replace)", fg="yellow"))
    if not added:
        click.echo(f"Nothing to import from {result.path}.")
        return
    rows = [[name, server.transport, server.target] for name, server in added.items()]
    click.echo(table(["name", "transport", "command / url"], rows))
    approving = {name: list(server.auto_approve) for name, server in added.items() if server.auto_approve}
    if dry_run:
        _show_auto_approve(approving)
        if approving and not keep_auto_approve:
            click.echo("(dry run) without --keep-auto-approve (or a yes when asked), these lists would be dropped.")
        click.echo(f"\n(dry run) {len(added)} servers would be imported into {ctx.path}.")
        return
    keep = _keep_auto_approve(approving, keep_auto_approve)
    entries = {name: _import_entry(server, keep) for name, server in added.items()}
    written = _write(ctx, entries, force=force)
    for name in entries.keys() - set(written):
        click.echo(click.style(f"skipped {name}: added to {ctx.path} meanwhile (use --force to replace)", fg="yellow"))
    count = f"{len(written)} server{'s' if len(written) != 1 else ''}"
    click.echo(f"\nImported {count} from {result.path} into {ctx.path}.")


def _write(ctx: CliContext, entries: dict[str, dict[str, Any]], *, force: bool) -> list[str]:
    """Add the entries to the config file; returns the names written (with ``force``, all of them)."""
    written: list[str] = []

    def change(doc: dict[str, Any]) -> None:  # under the file's lock: decide on what is there now
        written.clear()
        servers = doc.setdefault("mcpServers", {})
        for name, entry in entries.items():
            if force or name not in servers:
                servers[name] = entry
                written.append(name)

    ctx.store.edit(change)
    return written


def _show_auto_approve(approving: dict[str, list[str]]) -> None:
    from mcpdeck.cli._render import safe

    if not approving:
        return
    heading = "\nautoApprove: these tools would run without asking, even where a rule says ask:"
    click.echo(click.style(heading, bold=True))
    for name, patterns in approving.items():
        click.echo(safe(f"  {name}: {', '.join(patterns)}"))  # from another host's file


def _keep_auto_approve(approving: dict[str, list[str]], keep: bool) -> bool:
    """Whether to keep the imported autoApprove lists: --keep-auto-approve, else the user's yes; never silently."""
    if not approving:
        return False
    _show_auto_approve(approving)
    if keep:
        click.echo("Keeping them (--keep-auto-approve).")
        return True
    if sys.stdin.isatty():
        return click.confirm("Keep these autoApprove lists?", default=False)
    click.echo(
        click.style(
            "Dropped these autoApprove lists: no terminal to ask; run with --keep-auto-approve to keep them.",
            fg="yellow",
        )
    )
    return False


def _import_entry(server: ServerConfig, keep_auto_approve: bool) -> dict[str, Any]:
    entry = server.to_json()
    if not keep_auto_approve:
        entry.pop("autoApprove", None)
    return entry


@click.command(short_help="Show the end of a server's log, or follow it.")
@click.argument("name")
@click.option(
    "-n", "--lines", type=int, metavar="N", default=50, show_default=True, help="How many lines from the end."
)
@click.option("-f", "--follow", is_flag=True, help="Then print each new line as it is written, until Ctrl-C.")
@pass_ctx
@on_backend("logs", loop=False)
async def logs(ctx: CliContext, backend: Backend, name: str, lines: int, follow: bool) -> None:
    """Show the end of a server's log (its stderr, with a line per start).

    \b
    Examples:
      mcpdeck logs fs -n 20
      mcpdeck logs fs --follow
    """
    from mcpdeck.cli._output import safe

    tail = await backend.log(name, lines, follow=follow)
    if tail.path:
        click.echo(f"==> {tail.path} <==", err=True)
    printed = False
    try:
        for line in tail.lines:
            click.echo(safe(line, multiline=True))
            printed = True
    except KeyboardInterrupt:
        return  # Ctrl-C is how following ends
    if not printed and not follow:
        click.echo("(empty)")


def register_file_commands(group: click.Group) -> None:
    """Add ``import`` and ``logs`` to the CLI."""
    for command in (import_, logs):
        group.add_command(command)
