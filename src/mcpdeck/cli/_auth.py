"""``mcpdeck auth``: log in to remote servers that use OAuth, log out, see what is stored.

Only ``auth login`` ever asks the user to authorize; every other command uses the tokens
stored here and reports "needs authorization" when there are none. No command prints a
token or a client secret.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, cast

import click

from mcpdeck._util.masking import Redactor, mask_url
from mcpdeck.cli._app import SECONDS, CliContext, errors_to_exit, fail, run_async
from mcpdeck.errors import ServerError

if TYPE_CHECKING:
    from mcpdeck.auth import StoredAuth

LOGIN_TIMEOUT = 300.0
"""``auth login --timeout`` by default (``sign_in.LOGIN_TIMEOUT``, spelled out: ``--help`` imports nothing)."""

__all__ = ["auth_group"]

P = ParamSpec("P")
R = TypeVar("R")


def _context() -> CliContext:
    return cast(CliContext, click.get_current_context().obj)


def _when(moment: datetime | None) -> str:
    if moment is None:
        return "-"
    seconds = (moment - datetime.now(UTC)).total_seconds()
    if seconds <= 0:
        return "expired"
    if seconds < 3600:
        return f"in {int(seconds // 60)} min"
    if seconds < 2 * 86400:
        return f"in {seconds / 3600:.1f} h"
    return moment.astimezone().strftime("%Y-%m-%d %H:%M")


def _state(stored: StoredAuth | None) -> str:
    if stored is None or not stored.has_tokens:
        return "not logged in"
    if stored.expired:
        return "expired, refreshable" if stored.refreshable else "expired"
    return "authorized"


@click.group("auth")
def auth_group() -> None:
    """OAuth for remote servers: log in, log out, see what is stored."""


@auth_group.command()
@click.argument("name")
@click.option("--no-browser", is_flag=True, help="Only print the URL; don't try to open a browser.")
@click.option(
    "--timeout",
    type=SECONDS,
    default=LOGIN_TIMEOUT,
    show_default=True,
    metavar="SECONDS",
    help="How long to wait for the browser.",
)
@run_async
async def login(name: str, no_browser: bool, timeout: float) -> None:
    """Authorize mcpdeck for server NAME in a browser, and store the tokens.

    \b
    Example:
      mcpdeck auth login github --no-browser
    """
    from mcpdeck.auth import BrowserInteraction
    from mcpdeck.sign_in import sign_in

    ctx = _context()
    server = ctx.server(name)
    import logging

    # The SDK logs a failed flow with a traceback; the error below already says what happened.
    logging.getLogger("mcp.client.auth").setLevel(logging.CRITICAL)
    interaction = BrowserInteraction(open_browser=not no_browser, timeout=timeout)
    try:
        done = await sign_in(name, server, interaction, log_dir=ctx.log_dir, timeout=timeout)
    except ServerError as error:
        fail(error.reason)
        return
    if done.authorized:
        scopes = f" with scopes: {' '.join(done.scopes)}" if done.scopes else ""
        expiry = f"; the access token expires {_when(done.expires_at)}" if done.expires_at else ""
        refresh = " (renewed automatically)" if done.refreshable else ""
        click.echo(f"Authorized {name!r}{scopes}{expiry}{refresh}.")
    else:
        click.echo(f"{name!r} did not ask for authorization; nothing was stored.")
    click.echo(f"Connected: {done.tool_count} tools.")


@auth_group.command()
@click.argument("name")
@errors_to_exit
def logout(name: str) -> None:
    """Delete server NAME's stored tokens and client registration."""
    from mcpdeck.auth import TokenStore
    from mcpdeck.config import validate_server_name

    validate_server_name(name)
    removed = TokenStore().clear(name)
    if removed:
        click.echo(f"Logged out of {name!r}: its tokens and client registration are deleted.")
    else:
        click.echo(f"Nothing was stored for {name!r}.")


def _status_rows(name: str | None) -> list[dict[str, Any]]:
    from mcpdeck.auth import TokenStore, oauth_settings, token_url
    from mcpdeck.config import RemoteServerConfig, referenced_values

    ctx = _context()
    config = ctx.store.read()
    store = TokenStore()
    rows: list[dict[str, Any]] = []
    shown: set[str] = set()
    for server_name, server in config.servers.items():
        if name is not None and server_name != name:
            continue
        if not isinstance(server, RemoteServerConfig) or oauth_settings(server) is None:
            continue
        url = token_url(server_name, server)
        stored = store.get(server_name, url)
        if stored is not None:
            shown.add(str(stored.path))
        rows.append(_row(server_name, mask_url(server.url), stored, configured=True))  # as written, masked
    hide = Redactor(referenced_values(config.servers, os.environ))
    rows.extend(
        _row(stored.server, hide(mask_url(stored.url)), stored, configured=False)
        for stored in store.records(name)
        if str(stored.path) not in shown
    )
    return rows


def _row(server: str, url: str, stored: StoredAuth | None, *, configured: bool) -> dict[str, Any]:
    row: dict[str, Any] = {"server": server, "url": url, "configured": configured, "state": _state(stored)}
    if stored is None:
        return row | {"hasTokens": False, "expiresAt": None, "scopes": [], "refreshable": False, "clientId": None}
    return row | stored.to_json()


@auth_group.command()
@click.argument("name", required=False)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@errors_to_exit
def status(name: str | None, as_json: bool) -> None:
    """Show which remote servers are authorized: expiry and scopes (never a token)."""
    from mcpdeck.auth import TokenStore
    from mcpdeck.cli._render import echo_json, table

    rows = _status_rows(name)
    if as_json:
        echo_json({"backend": TokenStore().backend, "servers": rows})
        return
    if not rows:
        click.echo(f"No remote server of {_context().path} uses OAuth, and nothing is stored.")
        return
    lines: list[list[str]] = []
    for row in rows:
        expires = row.get("expiresAt")
        when = _when(datetime.fromisoformat(expires)) if expires else "-"
        note = "" if row["configured"] else " (not in the config)"
        lines.append([row["server"], row["state"], when, " ".join(row["scopes"]) or "-", row["url"] + note])
    click.echo(table(["server", "status", "expires", "scopes", "url"], lines))
