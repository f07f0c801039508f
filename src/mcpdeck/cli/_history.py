"""``mcpdeck history``: the tool calls and conversations the CLI (and the agent) made, from the history database."""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING

import click

from mcpdeck.cli._app import HISTORY_ENV, CliContext, errors_to_exit, pass_ctx
from mcpdeck.errors import ConfigError

if TYPE_CHECKING:
    from mcpdeck.history import History

__all__ = ["register_history_command"]


@click.command("history", short_help="Show the tool calls and chats made through mcpdeck.")
@click.option(
    "-n",
    "--limit",
    type=click.IntRange(min=1),
    metavar="N",
    default=30,
    show_default=True,
    help="How many calls, newest first.",
)
@click.option("--server", metavar="NAME", help="Only this server's calls.")
@click.option("--replica", metavar="NAME", help="Only the calls of this serve replica (its --replica-id).")
@click.option(
    "--store",
    metavar="URL",
    help="The store to read: a SQLite path, sqlite:///PATH or postgresql://USER@HOST:PORT/DB (also $MCPDECK_STORE).",
)
@click.option("--conversations", is_flag=True, help="List the chat conversations instead.")
@click.option("--conversation", "conversation", type=int, metavar="ID", help="Show one conversation's messages.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_ctx
@errors_to_exit
def history(
    ctx: CliContext,
    limit: int,
    server: str | None,
    replica: str | None,
    store: str | None,
    conversations: bool,
    conversation: int | None,
    as_json: bool,
) -> None:
    """Show the tool calls made through mcpdeck (time, tool, status, who approved, duration, size).

    With --conversations, the chat conversations; with --conversation ID, one conversation.

    \b
    Examples:
      mcpdeck history -n 10 --server fs
      mcpdeck history --conversations
    """
    if conversations and conversation is not None:
        raise click.UsageError("give --conversations (the list) or --conversation ID (one), not both")
    db = ctx.history(store=store)
    if db is None:
        click.echo(f"History is off (${HISTORY_ENV}=off).")
        return
    if conversations or conversation is not None:
        with db:
            _conversations(db, limit, conversation, as_json)
        return
    with db:
        _tool_calls(db, limit, server, replica, as_json)


def _tool_calls(db: History, limit: int, server: str | None, replica: str | None, as_json: bool) -> None:
    from mcpdeck.cli._render import echo_json, style, table

    calls = db.tool_calls(limit=limit, server=server, replica=replica)
    if as_json:
        echo_json({"path": db.where, "toolCalls": [call.to_json() for call in calls]})
        return
    if not calls:
        click.echo(f"No tool calls recorded yet ({db.where}).")
        return
    # Calls that came through the gateway name their client, calls of a serve replica their replica; each
    # column is there only when some call has it.
    via = any(call.caller for call in calls)
    fleet = any(call.replica for call in calls)
    rows = [
        [
            call.started_at.astimezone().strftime("%Y-%m-%d %H:%M:%S"),
            call.name,
            call.status if call.status not in ("error", "denied", "interrupted") else style(call.status, fg="red"),
            call.approved_by or "-",
            f"{call.duration * 1000:.0f} ms" if call.duration is not None else "-",
            str(call.result_size) if call.result_size is not None else "-",
            *([call.caller or "-"] if via else []),
            *([call.replica or "-"] if fleet else []),
            call.error or "",
        ]
        for call in calls
    ]
    headers = ["time", "tool", "status", "approved", "took", "size", *(["client"] if via else [])]
    headers += [*(["replica"] if fleet else []), "error"]
    click.echo(table(headers, rows))


def _conversations(db: History, limit: int, conversation: int | None, as_json: bool) -> None:
    from mcpdeck.cli._render import echo_json, safe, style, table

    if conversation is None:
        found = db.conversations(limit=limit)
        if as_json:
            echo_json({"path": db.where, "conversations": found})
        elif not found:
            click.echo(f"No conversations recorded yet ({db.where}).")
        else:
            rows = [
                [str(c["id"]), _local(c["startedAt"]), c["model"] or "", str(c["messages"]), c["title"] or ""]
                for c in found
            ]
            click.echo(table(["id", "started", "model", "messages", "title"], rows))
        return
    messages = db.messages(conversation)
    if as_json:
        echo_json({"path": db.where, "id": conversation, "messages": messages})
        return
    if not messages:
        raise ConfigError(f"no conversation {conversation} in {db.where}; see `mcpdeck history --conversations`")
    for message in messages:
        click.echo(style(f"[{_local(message['at'])}] {message['role']}", bold=True))
        click.echo(safe(json.dumps(message["content"], indent=2, ensure_ascii=False), multiline=True))


def _local(iso: str) -> str:
    return datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d %H:%M:%S")


def register_history_command(group: click.Group) -> None:
    """Add ``history`` to the CLI."""
    group.add_command(history)
