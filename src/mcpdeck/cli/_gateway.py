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
# command imports this module, and they cost ~10 ms of each start.
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast, get_args

import click

from mcpdeck.cli._app import pass_ctx, run_async
from mcpdeck.errors import ConfigError

if TYPE_CHECKING:  # the gateway (the SDK's server side, uvicorn) is imported when it is used
    from mcpdeck.gateway import GatewayToken
    from mcpdeck.history import History
    from mcpdeck.host import Host

__all__ = [
    "CLIENT_KINDS",
    "ClientKind",
    "client_config",
    "gateway_tokens",
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
    args = [*launcher[1:], "--config", str(config_path), *command]
    if profile is not None:
        args += ["--profile", profile]
    if kind == "claude-code":
        return shlex.join(["claude", "mcp", "add", name, "--", launcher[0], *args])
    entry: dict[str, Any] = {"command": launcher[0], "args": args}
    if kind == "vscode":
        return json.dumps({"servers": {name: {"type": "stdio", **entry}}}, indent=2)
    return json.dumps({"mcpServers": {name: entry}}, indent=2)


def gateway_tokens(doc: Mapping[str, Any], environ: Mapping[str, str]) -> dict[str, GatewayToken]:
    """The named tokens of a config's ``gateway.tokens`` (``{"name": {"token": "${VAR}", "profile": "p"}}``).

    Raises:
        ConfigError: The section is malformed or a variable is unset; the message says which.
    """
    section: object = doc.get("gateway") or {}
    if not isinstance(section, dict):
        raise ConfigError('"gateway" must be an object')
    raw: object = cast(dict[str, object], section).get("tokens") or {}
    if not isinstance(raw, dict):
        raise ConfigError('"gateway.tokens" must be an object mapping token names to {"token": ..., "profile": ...}')
    from mcpdeck.config import expand_vars
    from mcpdeck.gateway import GatewayToken

    tokens: dict[str, GatewayToken] = {}
    for name, entry in cast(dict[str, object], raw).items():
        spec = cast(dict[str, object], entry) if isinstance(entry, dict) else {}
        secret, profile = spec.get("token"), spec.get("profile")
        if not isinstance(secret, str) or not secret or not (profile is None or isinstance(profile, str)):
            hint = 'give "token" (use "${VAR}" to keep it out of the file) and optionally "profile"'
            raise ConfigError(f"gateway.tokens.{name}: {hint}")
        tokens[name] = GatewayToken(expand_vars(secret, environ, field=f"gateway.tokens.{name}"), profile)
    return tokens


async def serve_stdio(host: Host, profile: str | None) -> None:
    """Serve the host over stdin/stdout until the client closes them (what ``serve --stdio`` does)."""
    from mcpdeck.gateway import Gateway

    async with Gateway(host, profile=profile) as gateway:
        await gateway.run_stdio()


def _is_loopback(address: str) -> bool:
    import ipaddress

    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


async def serve_http(
    host: Host,
    *,
    address: str = "127.0.0.1",
    port: int = 0,
    profile: str | None = None,
    tokens: Mapping[str, GatewayToken] | None = None,
    announce: Any = None,
) -> None:
    """Serve the host over streamable HTTP at ``/mcp`` until cancelled.

    ``announce(url)`` is called once the socket listens (with the real port when ``port`` is 0).
    """
    import uvicorn

    from mcpdeck._listen import bind
    from mcpdeck.gateway import Gateway

    if not tokens and not _is_loopback(address):
        raise ConfigError(f"serving on {address} needs a token: set ${TOKEN_ENV} or gateway.tokens in the config")
    allowed = None if _is_loopback(address) else [address, f"{address}:*"]
    sock = bind(address, port)
    with sock:
        async with Gateway(host, profile=profile, tokens=tokens, allowed_hosts=allowed) as gateway:
            config = uvicorn.Config(gateway.asgi(), log_level="warning", access_log=False, lifespan="off")
            server = uvicorn.Server(config)
            bound: int = sock.getsockname()[1]
            if announce is not None:
                announce(f"http://{'[' + address + ']' if ':' in address else address}:{bound}/mcp")
            try:
                await server.serve([sock])
            finally:
                server.should_exit = True


def _record(host: Host, history: History) -> None:
    """Record every call in the history. ``History.record`` only queues the write for the history's own
    writer thread, so it runs in the event callback: no task, no thread hop, and no event but a call's."""
    from mcpdeck.events import ToolCallFinished, ToolCallStarted

    host.events.on(history.record, ToolCallStarted, ToolCallFinished)


async def stdio_gateway(ctx: Any, profile: str | None) -> None:
    """``serve --stdio`` (and ``gateway --stdio``): the config's host served to one client over stdin/stdout,
    every call recorded in the history."""
    from mcpdeck.gateway._spans import drop_idle_client_spans

    drop_idle_client_spans()
    history = ctx.history()
    async with ctx.host() as host:
        if history is not None:
            _record(host, history)
        await serve_stdio(host, profile)


def register_gateway_command(cli: click.Group) -> None:
    """Add ``mcpdeck gateway`` to the command line."""

    @cli.command("gateway")
    @click.option("--stdio", is_flag=True, help="Serve one client over stdin/stdout (for Claude Desktop, Cursor ...).")
    @click.option("--profile", metavar="NAME", help='Serve only this profile (see "profiles" in the config).')
    @click.option("--port", type=int, default=None, metavar="N", help="Serve streamable HTTP at /mcp on this port.")
    @click.option("--host", "address", default="127.0.0.1", show_default=True, help="Address to listen on (HTTP).")
    @click.option("--no-token", is_flag=True, help="HTTP without a bearer token (loopback only).")
    @click.option(
        "--print-client-config",
        "kind",
        type=click.Choice(CLIENT_KINDS),
        help="Print the entry to paste into a client's settings, and exit.",
    )
    @pass_ctx
    @run_async
    async def gateway(
        ctx: Any,
        stdio: bool,
        profile: str | None,
        port: int | None,
        address: str,
        no_token: bool,
        kind: str | None,
    ) -> None:
        """Serve every configured server (or one profile) as one MCP server.

        Over stdio for clients that start it (`--stdio`), or over streamable HTTP at
        http://127.0.0.1:PORT/mcp and /mcp/PROFILE (`--port`). The permission rules apply to
        every call; `ask` is put to the client as a question where it can answer one.
        """
        import secrets

        if kind is not None:
            click.echo(client_config(cast(ClientKind, kind), ctx.path, profile=profile, command=("gateway", "--stdio")))
            return
        if stdio == (port is not None):
            raise click.UsageError("give --stdio or --port N (one of them)")
        if stdio:
            await stdio_gateway(ctx, profile)
            return
        from mcpdeck.gateway._spans import drop_idle_client_spans

        drop_idle_client_spans()
        history = ctx.history()
        async with ctx.host() as host:
            if history is not None:
                _record(host, history)
            tokens = {} if no_token else gateway_tokens(ctx.store.read_raw(), os.environ)
            if not no_token and not tokens:
                from mcpdeck.gateway import GatewayToken

                secret = os.environ.get(TOKEN_ENV) or secrets.token_urlsafe(24)
                tokens = {"default": GatewayToken(secret)}
                if TOKEN_ENV not in os.environ:
                    click.echo(f"bearer token (set ${TOKEN_ENV} to choose one): {secret}", err=True)

            def announce(url: str) -> None:
                click.echo(f"mcpdeck gateway at {url}" + (f"/{profile}" if profile else ""), err=True)

            assert port is not None
            await serve_http(host, address=address, port=port, profile=profile, tokens=tokens, announce=announce)

    _ = gateway  # registered by the decorator
