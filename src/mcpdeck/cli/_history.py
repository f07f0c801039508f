"""``mcpdeck history``: the tool calls the CLI (and the agent) made, from the history database."""

from __future__ import annotations

import click

from mcpdeck.cli._app import HISTORY_ENV, _Context, _sync, pass_ctx  # pyright: ignore[reportPrivateUsage]
from mcpdeck.cli._render import echo_json, table

__all__ = ["register_history_command"]


@click.command("history")
@click.option("-n", "--limit", type=int, default=30, show_default=True, help="How many calls, newest first.")
@click.option("--server", metavar="NAME", help="Only this server's calls.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_ctx
@_sync
def history(ctx: _Context, limit: int, server: str | None, as_json: bool) -> None:
    """Show the tool calls made through mcpdeck (time, tool, status, duration, size)."""
    db = ctx.history()
    if db is None:
        click.echo(f"History is off (${HISTORY_ENV}=off).")
        return
    with db:
        calls = db.tool_calls(limit=limit, server=server)
    if as_json:
        echo_json({"path": str(db.path), "toolCalls": [call.to_json() for call in calls]})
        return
    if not calls:
        click.echo(f"No tool calls recorded yet ({db.path}).")
        return
    rows = [
        [
            call.started_at.astimezone().strftime("%Y-%m-%d %H:%M:%S"),
            call.name,
            call.status if call.status != "error" else click.style("error", fg="red"),
            f"{call.duration * 1000:.0f} ms" if call.duration is not None else "-",
            str(call.result_size) if call.result_size is not None else "-",
            call.error or "",
        ]
        for call in calls
    ]
    click.echo(table(["time", "tool", "status", "took", "size", "error"], rows))


def register_history_command(group: click.Group) -> None:
    """Add ``history`` to the CLI."""
    group.add_command(history)
