"""``mcpdeck serve`` and ``mcpdeck ui``: keep one host running behind the web console and the REST API.

FastAPI and uvicorn are imported only when one of these runs, so other commands start
as fast as before.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar, cast

import click

from mcpdeck.cli._app import CliContext, errors_to_exit, pass_ctx
from mcpdeck.cli._gateway import approval_option

if TYPE_CHECKING:
    from mcpdeck.config import GatewayApproval
    from mcpdeck.server import ServeState

__all__ = ["REPLICA_ENV", "register_serve_commands"]

_LOOPBACK = ("127.0.0.1", "localhost", "::1")
REPLICA_ENV = "MCPDECK_REPLICA_ID"
HISTORY_DAYS_ENV = "MCPDECK_HISTORY_DAYS"
TOKEN_ENV = "MCPDECK_TOKEN"
ALLOWED_HOSTS_ENV = "MCPDECK_ALLOWED_HOSTS"
MIN_TOKEN = 32
"""The fewest characters a token given in ``$MCPDECK_TOKEN`` may have (a generated one has 43)."""
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class _Fleet:
    """What makes this serve one replica of several: its id, the history it keeps, its token, its names."""

    replica: str
    history_days: float | None
    token: str | None
    allowed_hosts: tuple[str, ...]


def _fleet_options(command: F) -> F:
    """``--store``, ``--replica-id``, ``--history-days``, ``--allowed-host``: where the history goes, this
    serve's name in a fleet, the names a load balancer reaches it by."""
    command = click.option(
        "--allowed-host",
        "allowed_hosts",
        multiple=True,
        metavar="NAME[:PORT]",
        help=f"Also admit this Host header, exactly: the name clients reach it by through a load balancer "
        f"(repeat it for more; also ${ALLOWED_HOSTS_ENV}, comma-separated). No wildcards.",
    )(command)
    command = click.option(
        "--history-days",
        type=click.FloatRange(min=0, min_open=True),
        metavar="DAYS",
        help=f"Delete history older than DAYS (one replica of a fleet does it, hourly; also ${HISTORY_DAYS_ENV}). "
        "Default: keep it all.",
    )(command)
    command = click.option(
        "--replica-id",
        metavar="NAME",
        help=f"This serve's name among replicas sharing a store (also ${REPLICA_ENV}; letters, digits, _ and -, "
        "at most 32). Default: the machine's name and a hash of the config file's path.",
    )(command)
    return click.option(
        "--store",
        metavar="URL",
        help="Where the history goes: a SQLite path, sqlite:///PATH or postgresql://USER@HOST:PORT/DB "
        "(also $MCPDECK_STORE; default: the history file, $MCPDECK_HISTORY).",
    )(command)


def _token_from_environment() -> str | None:
    """The token ``$MCPDECK_TOKEN`` gives (replicas behind one balancer share it), or None: a new one.

    Raises:
        ConfigError: Too short to be a secret, or with characters an ``Authorization`` header cannot carry.
    """
    from mcpdeck.errors import ConfigError

    token = os.environ.get(TOKEN_ENV, "")
    if not token:
        return None
    if len(token) < MIN_TOKEN or not all("!" <= char <= "~" for char in token):
        raise ConfigError(
            f"${TOKEN_ENV} must be at least {MIN_TOKEN} printable ASCII characters with no spaces (it has "
            f"{len(token)}); make one with: python -c 'import secrets; print(secrets.token_urlsafe(32))'"
        )
    return token


def _fleet_settings(
    ctx: CliContext,
    store: str | None,
    replica_id: str | None,
    history_days: float | None,
    allowed_hosts: tuple[str, ...],
) -> _Fleet:
    """This serve's replica id, how many days of history it keeps, its token and extra host names, checked
    before anything starts; the store it was given becomes the CLI context's.

    Raises:
        ConfigError: A replica id that cannot be one, a store URL that cannot be read, a bad number of days,
            a token too weak, a host name that cannot be one.
    """
    from mcpdeck._http_faces.listening import check_allowed_host
    from mcpdeck.errors import ConfigError
    from mcpdeck.store import check_replica_id, default_replica_id, parse_location

    if store is not None:
        if parse_location(store).has_password:
            click.echo(
                click.style("warning: ", fg="yellow", bold=True)
                + "the --store URL holds a password, which other local users can read in the process list; "
                "give it in $MCPDECK_STORE, $PGPASSWORD or ~/.pgpass instead",
                err=True,
            )
        ctx.history_store = store
    if history_days is None and os.environ.get(HISTORY_DAYS_ENV):
        text = os.environ[HISTORY_DAYS_ENV]
        try:
            history_days = float(text)
        except ValueError:
            history_days = 0
        if not history_days > 0:
            raise ConfigError(f"${HISTORY_DAYS_ENV} is {text!r}; give a number of days above 0, or unset it")
    name = replica_id or os.environ.get(REPLICA_ENV) or default_replica_id(ctx.path)
    if not allowed_hosts:
        allowed_hosts = tuple(part for part in os.environ.get(ALLOWED_HOSTS_ENV, "").replace(",", " ").split())
    return _Fleet(
        replica=check_replica_id(name),
        history_days=history_days,
        token=_token_from_environment(),
        allowed_hosts=tuple(check_allowed_host(name) for name in allowed_hosts),
    )


def _run(
    ctx: CliContext,
    host: str,
    port: int,
    open_browser: bool,
    fleet: _Fleet,
    approval: GatewayApproval | None = None,
) -> None:
    import anyio

    from mcpdeck.server import ServeOptions, run_serve

    if host not in _LOOPBACK:
        click.echo(
            click.style("warning: ", fg="yellow", bold=True)
            + f"listening on {host}, beyond this machine: whoever reaches it with the token can run "
            "programs as you. Use --host 127.0.0.1 unless you mean it.",
            err=True,
        )

    def ready(state: ServeState, login_code: Callable[[], str]) -> None:
        click.echo(f"mcpdeck serves {state.config}")
        _show_console(state, login_code(), open_browser)
        click.echo(f"  API:     {state.url}/api (Authorization: Bearer <token>; described at /api/openapi.json)")
        click.echo(f"  MCP:     {state.url}/mcp and /mcp/<profile> (streamable HTTP; Authorization: Bearer <token>)")
        click.echo("Press Ctrl-C to stop.")

    options = ServeOptions(
        config=ctx.path,
        host=host,
        port=port,
        log_dir=ctx.log_dir,
        history=ctx.history(replica=fleet.replica),  # opened now: a bad store stops us before anything starts
        roots=ctx.roots,
        replica=fleet.replica,
        keep_days=fleet.history_days,
        token=fleet.token,
        allowed_hosts=fleet.allowed_hosts,
        approval=approval,
    )

    async def main() -> None:
        await run_serve(options, ready=ready)

    anyio.run(main)
    click.echo("Stopped.")


def _show_console(state: ServeState, code: str, open_browser: bool) -> None:
    """Open the console signed in, or print its one-time link.

    The browser is given the path of a 0600 page that redirects to the link, never the link:
    a command line is readable by every local user. The link's code works once.
    """
    link = f"{state.url}/#code={code}"
    if not open_browser:
        click.echo(f"  console: {link}")
        click.echo("           (signs in one browser tab, once, within 10 minutes; `mcpdeck ui` opens another)")
        return
    import webbrowser

    from mcpdeck.server import write_login_page

    page = write_login_page(state.config, link, state.replica)
    click.echo(f"  console: {state.url}/ (opening it in the browser, signed in; `mcpdeck ui` opens another tab)")
    webbrowser.open(page.as_uri())


def _ui_attached(ctx: CliContext, open_browser: bool) -> bool:
    """With a ``serve`` already running for the config: a login code from it, and the console opened
    (or its link printed). False when none runs."""
    from mcpdeck.cli._attach import connect

    attached = connect(ctx.path)
    if attached is None:
        return False
    state = attached.state
    try:
        answer = attached.request("POST", "/login")
    finally:
        attached.close()
    if state is None:
        return False
    click.echo(f"mcpdeck serve already runs for {state.config} (pid {state.pid})")
    _show_console(state, str(answer["code"]), open_browser)
    return True


def _known_profile(ctx: CliContext, name: str) -> None:
    """Refuse to print an entry for a profile the config does not have: the client would fail to start it.

    Raises:
        ConfigError: No such profile (or the profiles cannot be read); the message says which exist.
    """
    from mcpdeck.errors import ConfigError

    document = ctx.store.document()
    document.check("profiles")
    profiles = document.profiles
    if name not in profiles:
        known = ", ".join(profiles) or "none"
        raise ConfigError(f'no profile named {name!r} in {ctx.path} (known: {known}); add it under "profiles" first')


_host_option = click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on. Anything but loopback lets other machines in (with the token).",
)
_port_option = click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8765,
    show_default=True,
    help="Port to listen on (0: any free one).",
)


@click.command(short_help="Run the servers behind the web console, the API and the gateway.")
@_host_option
@_port_option
@_fleet_options
@click.option("--stdio", is_flag=True, help="Be the MCP gateway for one client over stdin/stdout instead.")
@click.option("--profile", metavar="NAME", help='With --stdio: serve only this profile (see "profiles").')
@approval_option
@click.option(
    "--print-client-config",
    "kind",
    type=click.Choice(["claude-desktop", "cursor", "vscode", "claude-code"]),
    help="Print the entry that makes a client start `serve --stdio`, and exit.",
)
@pass_ctx
@errors_to_exit
def serve(
    ctx: CliContext,
    host: str,
    port: int,
    store: str | None,
    replica_id: str | None,
    history_days: float | None,
    allowed_hosts: tuple[str, ...],
    stdio: bool,
    profile: str | None,
    approval: GatewayApproval | None,
    kind: str | None,
) -> None:
    """Keep the servers running behind the web console, the REST API and the gateway.

    One process, one port on 127.0.0.1: the console at /, the REST API at /api, the MCP
    gateway at /mcp. It prints the console's address with its token.

    \b
    With --stdio it is the gateway for one MCP client that starts it (Claude Desktop,
    Cursor, VS Code, Claude Code): --print-client-config prints the entry to paste.

    \b
    Several serve processes (replicas) for one config share a store: --store
    postgresql://USER@HOST:PORT/DB, a --replica-id each.

    \b
    Examples:
      mcpdeck serve
      mcpdeck --config examples/mcp.json serve --port 0
      mcpdeck serve --store postgresql://mcpdeck@db:5432/mcpdeck --replica-id r1
      mcpdeck serve --print-client-config claude-desktop
    """
    fleet = _fleet_settings(ctx, store, replica_id, history_days, allowed_hosts)
    if kind is not None or stdio:
        import anyio

        from mcpdeck.cli._gateway import ClientKind, print_client_config, stdio_gateway

        if kind is not None:
            if profile is not None:
                _known_profile(ctx, profile)
            # absolute: a client starts the entry in a folder of its own, where a relative path names nothing
            print_client_config(cast(ClientKind, kind), ctx.path.absolute(), profile=profile)
        else:
            # a name given (not the default one, which a serve of this config would share) is on its spans
            named = fleet.replica if replica_id or os.environ.get(REPLICA_ENV) else None
            anyio.run(partial(stdio_gateway, ctx, profile, approval, replica=named))
        return
    if profile is not None:
        raise click.UsageError("--profile goes with --stdio (over HTTP every profile is at /mcp/<profile>)")
    _run(ctx, host, port, open_browser=False, fleet=fleet, approval=approval)


@click.command()
@_host_option
@_port_option
@_fleet_options
@click.option("--no-browser", is_flag=True, help="Don't open the browser; just print the URL.")
@pass_ctx
@errors_to_exit
def ui(
    ctx: CliContext,
    host: str,
    port: int,
    store: str | None,
    replica_id: str | None,
    history_days: float | None,
    allowed_hosts: tuple[str, ...],
    no_browser: bool,
) -> None:
    """Run `serve` and open the web console in the browser, signed in.

    With a `serve` already running for the config, open another signed-in tab on it.
    The browser gets a one-time login code, never the token, and never on its command line.

    \b
    Examples:
      mcpdeck ui
      mcpdeck ui --no-browser --port 9000
    """
    fleet = _fleet_settings(ctx, store, replica_id, history_days, allowed_hosts)
    if not _ui_attached(ctx, open_browser=not no_browser):
        _run(ctx, host, port, open_browser=not no_browser, fleet=fleet)


def register_serve_commands(group: click.Group) -> None:
    """Add ``serve`` and ``ui`` to the CLI."""
    group.add_command(serve)
    group.add_command(ui)
