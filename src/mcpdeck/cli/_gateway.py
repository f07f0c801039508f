"""The gateway from the command line: ``mcpdeck gateway --stdio`` and ``mcpdeck gateway --port N``.

The functions here are what ``mcpdeck serve`` uses for its ``--stdio``, ``--profile`` and
``--print-client-config`` options; ``mcpdeck gateway`` offers them on their own until then.

Over stdio, stdout carries the protocol and nothing else; messages go to stderr. Over HTTP
the gateway listens on 127.0.0.1 (``--host`` for another address, which needs a token) and
asks for a bearer token: ``$MCPDECK_GATEWAY_TOKEN``, the config's ``gateway.tokens``, or
one made up and printed at start; ``--no-token`` serves loopback clients without one.
"""

from __future__ import annotations

# ipaddress, secrets (hashlib, hmac, base64), shlex and shutil are imported where used: every
# command imports this module, and they would lengthen every command's start (bench/RESULTS.md).
import json
import os
import sys
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast, get_args

import click

from mcpdeck.cli._app import CliContext, pass_ctx, run_async
from mcpdeck.errors import ConfigError

if TYPE_CHECKING:  # the gateway (the SDK's server side, uvicorn) is imported when it is used
    import socket

    from mcpdeck.config import ConfigDocument, GatewayApproval
    from mcpdeck.gateway import GatewayToken
    from mcpdeck.history import History
    from mcpdeck.host import Host

__all__ = [
    "CLIENT_KINDS",
    "ClientKind",
    "approval_option",
    "client_config",
    "gateway_tokens",
    "print_client_config",
    "register_gateway_command",
    "serve_http",
    "serve_stdio",
]

ClientKind = Literal["claude-desktop", "cursor", "vscode", "claude-code"]
CLIENT_KINDS: tuple[str, ...] = get_args(ClientKind)
TOKEN_ENV = "MCPDECK_GATEWAY_TOKEN"


def _launcher() -> list[str]:
    """How a client should start mcpdeck: the absolute path of the script (clients start with a bare PATH)."""
    import shutil

    beside = Path(sys.executable).parent / "mcpdeck"
    found = str(beside) if beside.is_file() else shutil.which("mcpdeck")
    if found:
        return [str(Path(found).resolve())]
    return [sys.executable, "-m", "mcpdeck.cli"]


def client_config(
    kind: ClientKind,
    config_path: Path,
    *,
    profile: str | None = None,
    command: tuple[str, ...] = ("serve", "--stdio"),
    name: str = "mcpdeck",
) -> str:
    """The text to paste into a client's settings so it starts this gateway over stdio.

    Args:
        kind: The client: ``claude-desktop`` and ``cursor`` (``mcpServers`` JSON), ``vscode``
            (``servers`` JSON, ``.vscode/mcp.json``), ``claude-code`` (a ``claude mcp add`` line).
        config_path: The mcpdeck config file the gateway serves.
        profile: Serve only this profile.
        command: The mcpdeck subcommand and options that serve stdio.
        name: The name the client lists the gateway under.
    """
    import shlex

    launcher = _launcher()
    # absolute: a client starts the entry in a folder of its own, where a relative path names nothing
    args = [*launcher[1:], "--config", str(Path(config_path).expanduser().absolute()), *command]
    if profile is not None:
        args += ["--profile", profile]
    if kind == "claude-code":
        return shlex.join(["claude", "mcp", "add", name, "--", launcher[0], *args])
    entry: dict[str, Any] = {"command": launcher[0], "args": args}
    if kind == "vscode":
        return json.dumps({"servers": {name: {"type": "stdio", **entry}}}, indent=2)
    return json.dumps({"mcpServers": {name: entry}}, indent=2)


def print_client_config(kind: ClientKind, config_path: Path, **options: Any) -> None:
    """Print ``client_config`` on stdout; on stderr, a note when the config file does not exist yet (the gateway
    the client starts would stop at once, saying so only in the client's log)."""
    click.echo(client_config(kind, config_path, **options))
    if not config_path.expanduser().exists():
        path = config_path.expanduser().absolute()
        click.echo(
            f"mcpdeck: note: {path} does not exist yet, and the gateway this entry starts needs it: create it with "
            f"`mcpdeck --config {path} add NAME -- COMMAND [ARGS...]` (or `mcpdeck --config {path} import SOURCE`), or "
            "print the entry for another file with --config PATH",
            err=True,
        )


def gateway_tokens(document: ConfigDocument, environ: Mapping[str, str]) -> dict[str, GatewayToken]:
    """The named tokens of a config's ``gateway.tokens`` (``{"name": {"token": "${VAR}", "profile": "p"}}``),
    their variables expanded.

    Raises:
        ConfigError: The section is malformed or a variable is unset; the message says which.
    """
    from mcpdeck.config import expand_vars
    from mcpdeck.gateway import GatewayToken

    document.check("gateway")
    return {
        name: GatewayToken(expand_vars(token.token, environ, field=f"gateway.tokens.{name}"), token.profile)
        for name, token in document.gateway.tokens.items()
    }


async def serve_stdio(host: Host, profile: str | None, approval: GatewayApproval | None = None) -> None:
    """Serve the host over stdin/stdout until the client closes them (what ``serve --stdio`` does).

    It answers at once, whatever the servers do: the servers still starting are named on stderr, their
    tools follow with ``list_changed``, and a call to one of them waits for it (see ``_report_start``).
    """
    import anyio

    from mcpdeck.gateway import Gateway

    async with Gateway(host, profile=profile, approval=approval) as gateway, anyio.create_task_group() as tg:
        tg.start_soon(_report_start, host)
        await gateway.run_stdio()
        tg.cancel_scope.cancel()


def _is_loopback(address: str) -> bool:
    import ipaddress

    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def _listening(address: str, port: int, tokens: Mapping[str, GatewayToken] | None) -> socket.socket:
    """The socket the HTTP gateway listens on.

    Raises:
        ConfigError: Another address than loopback without a token; a port in use (said in one line).
    """
    from mcpdeck._http_faces.listening import bind

    if not tokens and not _is_loopback(address):
        raise ConfigError(f"serving on {address} needs a token: set ${TOKEN_ENV} or gateway.tokens in the config")
    return bind(address, port)


async def serve_http(
    host: Host,
    *,
    address: str = "127.0.0.1",
    port: int = 0,
    profile: str | None = None,
    tokens: Mapping[str, GatewayToken] | None = None,
    announce: Any = None,
    approval: GatewayApproval | None = None,
    sock: socket.socket | None = None,
) -> None:
    """Serve the host over streamable HTTP at ``/mcp`` until cancelled (on ``sock``, when it is bound already).

    ``announce(url)`` is called once the socket listens (with the real port when ``port`` is 0).
    """
    import uvicorn

    from mcpdeck._http_faces.guard import allowed_hosts
    from mcpdeck._http_faces.listening import ANY_ADDRESS, KEEP_ALIVE, quiet_server, serve_until_cancelled
    from mcpdeck.gateway import Gateway

    if sock is None:
        sock = _listening(address, port, tokens)
    every = address in ANY_ADDRESS
    # The Host names of this port exactly, as serve's (on every address the machine's names too, and
    # the guard lets in its IP addresses).
    allowed = sorted(allowed_hosts(address, sock.getsockname()[1]))
    if not _is_loopback(address):
        click.echo(f"warning: the gateway listens on {address}: other machines can reach it (with a token)", err=True)
    with sock:
        gateway_options: dict[str, Any] = {
            "tokens": tokens,
            "allowed_hosts": allowed,
            "any_address": every,
            "approval": approval,
        }
        async with Gateway(host, profile=profile, **gateway_options) as gateway:
            config = uvicorn.Config(
                gateway.asgi(),
                log_level="warning",
                access_log=False,
                lifespan="off",
                timeout_graceful_shutdown=GRACE,
                timeout_keep_alive=KEEP_ALIVE,
            )
            bound: int = sock.getsockname()[1]
            if announce is not None:
                announce(f"http://{'[' + address + ']' if ':' in address else address}:{bound}/mcp")
            await serve_until_cancelled(quiet_server(config), sock)


GRACE = 1
"""Seconds the HTTP gateway gives requests in flight when it stops (then they are cancelled)."""


ATTACH_WAIT = 1.0
"""Seconds ``serve --stdio`` attached to a running ``serve`` waits for that gateway's answer (its instructions
are passed on) before it answers its own client."""
STARTUP_GRACE = 5.0
"""Seconds after which the stdio gateway names on stderr the servers still starting (it answers its
client at once either way)."""


async def _report_start(host: Host) -> None:
    """Say on stderr (all a client keeps of the gateway's words, in its log) which servers failed to start, as
    each fails, and, ``STARTUP_GRACE`` seconds on, which are still starting. Cancelled (the client left), it
    still says the failures it had not said."""
    import anyio

    from mcpdeck.status import ServerState

    said: set[str] = set()

    def say_failures() -> None:
        for status in host.servers.values():
            if status.state is ServerState.FAILED and status.name not in said:
                said.add(status.name)
                _say_failed(status.name, status.error)

    async def settle(name: str) -> None:
        await host.wait_settled(name)
        say_failures()

    async def late() -> None:
        await anyio.sleep(STARTUP_GRACE)
        for status in host.servers.values():
            if status.state in (ServerState.CONNECTING, ServerState.RECONNECTING):
                said_late = f"mcpdeck: server {status.name!r} is still starting; its tools follow when it is ready"
                click.echo(said_late, err=True)

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(late)
            for name in host.servers:
                tg.start_soon(settle, name)
    finally:
        say_failures()


def _say_failed(name: str, error: str | None) -> None:
    from mcpdeck._util.masking import mask_urls

    click.echo(f"mcpdeck: server {name!r} failed to start: {mask_urls(error or '')}", err=True)


async def _run(host: Host, faces: Callable[[], Awaitable[None]], history: History | None = None) -> None:
    """Run a gateway mode on the process runner (``server._runner``): the host and its history, SIGINT and
    SIGTERM (how clients and service managers stop a program) ending it with its servers shut down, none
    left running. Ctrl-C exits as it does for every command (130)."""
    import signal

    from mcpdeck.server._runner import ProcessRunner

    if await ProcessRunner(host, history=history, grace=GRACE).run(faces) is signal.SIGINT:
        raise KeyboardInterrupt


async def _through_running_serve(address: str, port: int, token: str, profile: str | None) -> None:
    """Serve stdio as a window on a running ``serve``'s gateway: its servers, gate and history, not copies.

    A host of one server (that gateway, over HTTP) served under the upstream's own names; the
    running ``serve`` applies the permission rules and records the calls, and its questions
    (approvals, servers' forms) reach this client through the two gateways.
    """
    import anyio

    from mcpdeck.gateway import Gateway
    from mcpdeck.host import Host

    where = f"[{address}]" if ":" in address else address
    url = f"http://{where}:{port}/mcp" + (f"/{profile}" if profile else "")
    bearer = {"Authorization": f"Bearer {token}"}
    # forwardCaller: the serve's history names this stdio client (Claude Desktop ...), not this bridge.
    # The handshake: the serve's questions come over its back-channel to this gateway's client, whose
    # router is given only after this host connected (auto would open with server/discover, then again).
    upstream = {
        "serve": {"type": "http", "url": url, "headers": bearer, "forwardCaller": True, "protocol": "handshake"}
    }
    window = {"serve": {"servers": ["serve"], "prefix": False}}
    # Its client sees the running serve's gateway: that one's name, and its instructions once it answered.
    name = "mcpdeck" if profile is None else f"mcpdeck/{profile}"
    what = f"profile {profile!r} of " if profile else ""
    said = f"This is {what}an mcpdeck gateway: several MCP servers served as one, by the mcpdeck serve on port {port}."

    host = Host(upstream, wait=False)

    async def faces() -> None:
        with anyio.move_on_after(ATTACH_WAIT):  # a running serve on this machine answers at once
            await host.wait_settled("serve")
        instructions = host.servers["serve"].instructions or said
        options: dict[str, Any] = {"name": name, "instructions": instructions, "check_permission": False}
        async with (
            Gateway(host, profile="serve", profiles=window, **options) as gateway,
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(_report_start, host)
            await gateway.run_stdio()
            tg.cancel_scope.cancel()

    await _run(host, faces)


async def stdio_gateway(
    ctx: CliContext, profile: str | None, approval: GatewayApproval | None = None, *, replica: str | None = None
) -> None:
    """``serve --stdio`` (and ``gateway --stdio``): the config's host served to one client over stdin/stdout,
    every call recorded in the history. With a ``serve`` running for the config (and attaching not turned
    off), its servers are the ones served: the clients share one set of running servers (and its gate:
    ``approval`` is then the running ``serve``'s). ``replica`` names the process on its spans
    (``serve --stdio --replica-id``)."""
    from mcpdeck._observability.tracing import exporting

    with exporting(replica=replica):
        await _stdio_gateway(ctx, profile, approval)


async def _stdio_gateway(ctx: CliContext, profile: str | None, approval: GatewayApproval | None) -> None:
    from mcpdeck.cli._attach import connect
    from mcpdeck.gateway._spans import drop_idle_client_spans

    drop_idle_client_spans()

    running = connect(ctx.path)
    if running is not None:
        running.close()
        click.echo(f"mcpdeck: serving the servers of the mcpdeck serve on port {running.port}", err=True)
        if approval is not None:
            click.echo(
                f"mcpdeck: --approval {approval} is not applied: the running serve's gate decides "
                "(its gateway.approval, or its own --approval)",
                err=True,
            )
        await _through_running_serve(running.host, running.port, running.token, profile)
        return
    history = ctx.history()
    host = _host_or_close(ctx, history)
    await _run(host, partial(serve_stdio, host, profile, approval), history)


def _host_or_close(ctx: CliContext, history: History | None) -> Host:
    """The config's host, not yet entered; the history is closed if the host cannot be made."""
    try:
        return ctx.host(wait=False)
    except BaseException:
        if history is not None:
            history.close()
        raise


async def http_gateway(
    ctx: CliContext,
    profile: str | None,
    address: str,
    port: int,
    no_token: bool,
    approval: GatewayApproval | None = None,
) -> None:
    """``gateway --port N``: the config's host served over streamable HTTP, every call recorded in the history.

    Each client needs a bearer token (the config's ``gateway.tokens``, else ``$MCPDECK_GATEWAY_TOKEN``, else
    one made up and printed) unless ``no_token``. The tokens are settled and the port bound before anything
    starts (a port in use is one line, not a server started for nothing), and the tokens are kept out of the
    history (a client that pastes its token into a call's arguments must not leave it there). It listens at
    once: servers still starting come up behind it, as for ``serve --stdio``."""
    from mcpdeck._observability.tracing import exporting

    with exporting():
        await _http_gateway(ctx, profile, address, port, no_token, approval)


async def _http_gateway(
    ctx: CliContext, profile: str | None, address: str, port: int, no_token: bool, approval: GatewayApproval | None
) -> None:
    import secrets

    from mcpdeck.gateway._spans import drop_idle_client_spans

    drop_idle_client_spans()
    tokens = {} if no_token else gateway_tokens(ctx.store.document(), os.environ)
    if not no_token and not tokens:
        from mcpdeck.gateway import GatewayToken

        secret = os.environ.get(TOKEN_ENV) or secrets.token_urlsafe(24)
        tokens = {"default": GatewayToken(secret)}
        if TOKEN_ENV not in os.environ:
            click.echo(f"bearer token (set ${TOKEN_ENV} to choose one): {secret}", err=True)
    sock = _listening(address, port, tokens)

    def announce(url: str) -> None:
        click.echo(f"mcpdeck gateway at {url}" + (f"/{profile}" if profile else ""), err=True)

    with sock:
        history = ctx.history(also=[token.secret for token in tokens.values()])
        host = _host_or_close(ctx, history)
        options: dict[str, Any] = {"profile": profile, "tokens": tokens, "approval": approval}
        await _run(host, partial(serve_http, host, address=address, sock=sock, announce=announce, **options), history)


approval_option = click.option(
    "--approval",
    type=click.Choice(["client", "ask"]),
    default=None,
    help="Who approves a call no permission rule covers: the calling client, which asks its own user (client, the "
    'default), or the gateway, asking the client each time (ask). Default: the config\'s "gateway.approval".',
)
"""``--approval``: the config file's ``gateway.approval`` for this run."""


def register_gateway_command(cli: click.Group) -> None:
    """Add ``mcpdeck gateway`` to the command line."""

    @cli.command("gateway")
    @click.option("--stdio", is_flag=True, help="Serve one client over stdin/stdout (for Claude Desktop, Cursor ...).")
    @click.option("--profile", metavar="NAME", help='Serve only this profile (see "profiles" in the config).')
    @click.option("--port", type=int, default=None, metavar="N", help="Serve streamable HTTP at /mcp on this port.")
    @click.option("--host", "address", default="127.0.0.1", show_default=True, help="Address to listen on (HTTP).")
    @click.option("--no-token", is_flag=True, help="HTTP without a bearer token (loopback only).")
    @approval_option
    @click.option(
        "--print-client-config",
        "kind",
        type=click.Choice(CLIENT_KINDS),
        help="Print the entry to paste into a client's settings, and exit.",
    )
    @pass_ctx
    @run_async
    async def gateway(
        ctx: CliContext,
        stdio: bool,
        profile: str | None,
        port: int | None,
        address: str,
        no_token: bool,
        approval: GatewayApproval | None,
        kind: str | None,
    ) -> None:
        """Serve every configured server (or one profile) as one MCP server.

        Over stdio for clients that start it (`--stdio`), or over streamable HTTP at
        http://127.0.0.1:PORT/mcp and /mcp/PROFILE (`--port`). The permission rules apply to
        every call: `deny` refuses, `ask` is put to the client as a question, and the calling
        client approves what no rule covers (`--approval ask`: the gateway asks about that too).
        """
        if kind is not None:
            print_client_config(cast(ClientKind, kind), ctx.path, profile=profile, command=("gateway", "--stdio"))
            return
        if stdio == (port is not None):
            raise click.UsageError("give --stdio or --port N (one of them)")
        if stdio:
            await stdio_gateway(ctx, profile, approval)
            return
        assert port is not None
        await http_gateway(ctx, profile, address, port, no_token, approval)

    _ = gateway  # registered by the decorator
