"""Commands that change or try servers: add, add-json, remove, enable, disable, test."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import click

from mcpdeck.cli._app import SECONDS, CliContext, fail, option_group, pass_ctx
from mcpdeck.cli._settle import startup_hint
from mcpdeck.cli._switch import on_backend
from mcpdeck.errors import ConfigError

if TYPE_CHECKING:
    from mcpdeck.cli._backend import Backend
    from mcpdeck.config import ServerConfig

__all__ = ["ADMIN_COMMANDS", "ServerOptions", "server_from_json", "server_from_options", "warn_literal_secrets"]


def _parse_pairs(values: tuple[str, ...], sep: str, what: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for value in values:
        key, found, rest = value.partition(sep)
        if not found or not key.strip():
            raise ConfigError(f"{what} {value!r} must look like KEY{sep.strip()}VALUE")
        pairs[key.strip()] = rest.strip() if sep.strip() == ":" else rest
    return pairs


@dataclass(frozen=True)
class ServerOptions:
    """How ``add`` and ``test`` are told of a server that is not in the config, besides its command
    (``_SERVER_OPTIONS``; click passes them as keywords: ``ServerOptions(**options)``)."""

    url: str | None = None
    kind: str | None = None
    headers: tuple[str, ...] = ()
    envs: tuple[str, ...] = ()
    cwd: str | None = None
    roots: tuple[str, ...] = ()


def server_from_options(
    name: str, command: tuple[str, ...], options: ServerOptions, *, timeout: float | None = None
) -> ServerConfig:
    """The config ``add`` and ``test`` build from a command line or ``--url`` and their options."""
    from mcpdeck.config import parse_server_config

    if bool(command) == bool(options.url):
        raise ConfigError("give either a command after `--` (stdio) or --url (remote), not both or neither")
    raw: dict[str, Any]
    if options.url:
        if options.envs or options.cwd:
            raise ConfigError("--env and --cwd are for stdio servers; a remote server takes --header")
        raw = {"url": options.url, "headers": _parse_pairs(options.headers, ":", "header")}
        if options.kind:
            raw["type"] = options.kind
    else:
        if options.headers or options.kind:
            raise ConfigError("--header and --type are for remote servers (--url)")
        raw = {"command": command[0], "args": list(command[1:]), "env": _parse_pairs(options.envs, "=", "--env")}
        if options.cwd:
            raw["cwd"] = options.cwd
    if timeout is not None:
        raw["timeout"] = timeout
    if options.roots:
        raw["roots"] = [str(Path(root).expanduser().resolve()) for root in options.roots]
    return parse_server_config(name, raw)


def server_from_json(name: str, config_json: str) -> ServerConfig:
    """The config ``add-json`` is given, as other hosts write it."""
    from mcpdeck.config import parse_server_config

    try:
        raw = json.loads(config_json)
    except json.JSONDecodeError as error:
        raise ConfigError(f"the JSON is not valid: {error.msg} (line {error.lineno}, column {error.colno})") from None
    return parse_server_config(name, raw)


async def _check_and_save(
    ctx: CliContext,
    backend: Backend,
    name: str,
    server: ServerConfig,
    *,
    force: bool,
    connect: bool,
    save_anyway: bool,
    as_json: bool = False,
) -> None:
    """Save a new server, once it has connected (or without trying, or whatever happens, as asked)."""
    from mcpdeck.cli._output import state_label
    from mcpdeck.config import validate_server_name

    validate_server_name(name)
    if not force and await backend.exists(name):
        raise ConfigError(f"server {name!r} already exists in {ctx.path}; use --force to replace it", server=name)
    entry = server.to_json()
    if not connect or server.disabled:
        await backend.save(name, server, force=force)
        click.echo(f"Saved {name!r} to {ctx.path} (not connected).")
        warn_literal_secrets(name, entry, ctx.path, as_json=as_json)
        return
    report = await backend.try_server(name, server)  # tried here, so that it is saved without a second try
    if report.ok:
        await backend.save(name, server, force=force)
        click.echo(f"{state_label(report.status.state)}: {len(report.tools)} tools. Saved {name!r} to {ctx.path}.")
        warn_literal_secrets(name, entry, ctx.path, as_json=as_json)
    elif save_anyway:
        await backend.save(name, server, force=force)
        warn_literal_secrets(name, entry, ctx.path, as_json=as_json)
        error = startup_hint(report.status.error)
        fail(f"{name!r} did not connect, and was saved anyway (--save-anyway): {error}", 1)
    else:
        fail(
            f"{name!r} did not connect, so it was not saved: {startup_hint(report.status.error)}\n"
            "Fix it and run the command again, or save it as it is with --save-anyway.",
            1,
        )


def warn_literal_secrets(name: str, entry: Mapping[str, Any], path: Path, *, as_json: bool = False) -> None:
    """Say on stderr, for each env or header value of a server just saved that looks like a secret
    written out, that the file holds it in clear and how to save a ``${VAR}`` reference instead
    (as ``add`` options, or with ``as_json`` as ``add-json`` takes it)."""
    from mcpdeck._util.masking import literal_secret, reference_for
    from mcpdeck.cli._output import safe

    for section, header in (("env", False), ("headers", True)):
        values: object = entry.get(section)
        if not isinstance(values, dict):
            continue
        for key, value in cast(dict[str, object], values).items():
            if not isinstance(value, str) or not literal_secret(key, value):
                continue
            variable, reference = reference_for(name, key, value, header=header)
            if as_json:
                how = f'"{key}": "{reference}" in its "{section}"'
            else:
                how = (
                    f"--header {shlex.quote(f'{key}: {reference}')}"
                    if header
                    else f"--env {shlex.quote(f'{key}={reference}')}"
                )
            what = f"header {key}" if header else f"env {key}"
            message = (
                f"hint: {what} looks like a secret, saved in clear in {path}. To keep it out of the file, add "
                f"{name!r} again (--force) with {how}; mcpdeck then reads {variable} from the environment of "
                "`mcpdeck serve` (or of the command, when no serve runs for this config)."
            )
            click.echo(click.style(safe(message), fg="yellow"), err=True)


_SERVER_OPTIONS = option_group(
    click.option("--url", metavar="URL", help="A remote server's URL (instead of a command)."),
    click.option("--type", "kind", type=click.Choice(["http", "sse"]), help="Remote transport (default: try both)."),
    click.option("--header", "headers", multiple=True, metavar="'K: V'", help="HTTP header for a remote server."),
    click.option("--env", "envs", multiple=True, metavar="K=V", help="Environment variable for a stdio server."),
    click.option("--cwd", metavar="DIR", help="Working directory for a stdio server."),
    click.option(
        "--root", "roots", multiple=True, metavar="DIR", help="Offer DIR to the server as an MCP root (repeatable)."
    ),
)


_SAVE_OPTIONS = option_group(
    click.option("--force", is_flag=True, help="Replace a server of the same name."),
    click.option("--no-connect", is_flag=True, help="Only save; don't try to connect."),
    click.option("--save-anyway", is_flag=True, help="Save it even if it does not connect."),
)


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("name")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@_SERVER_OPTIONS
@click.option("--timeout", type=SECONDS, metavar="SECONDS", help='Request timeout, saved as "timeout".')
@_SAVE_OPTIONS
@pass_ctx
@on_backend("add")
async def add(
    ctx: CliContext,
    backend: Backend,
    name: str,
    command: tuple[str, ...],
    timeout: float | None,
    force: bool,
    no_connect: bool,
    save_anyway: bool,
    **options: Any,
) -> None:
    """Add a server: NAME -- COMMAND [ARGS...], or NAME --url URL.

    The server is connected first and saved only if it works (--save-anyway saves it
    regardless, --no-connect without trying). Options go before `--`.

    \b
    Examples:
      mcpdeck add fs -- npx -y @modelcontextprotocol/server-filesystem ~/notes
      mcpdeck add gh --url https://example.com/mcp --header 'Authorization: Bearer ${GH_TOKEN}'
    """
    server = server_from_options(name, command, ServerOptions(**options), timeout=timeout)
    await _check_and_save(ctx, backend, name, server, force=force, connect=not no_connect, save_anyway=save_anyway)


@click.command("add-json")
@click.argument("name")
@click.argument("config_json", metavar="JSON")
@_SAVE_OPTIONS
@pass_ctx
@on_backend("add-json")
async def add_json(
    ctx: CliContext, backend: Backend, name: str, config_json: str, force: bool, no_connect: bool, save_anyway: bool
) -> None:
    """Add a server from its JSON config, as other hosts write it.

    \b
    Examples:
      mcpdeck add-json time '{"command": "uvx", "args": ["mcp-server-time"]}'
      mcpdeck add-json api '{"type": "http", "url": "https://example.com/mcp"}' --no-connect
    """
    server = server_from_json(name, config_json)
    connect = not no_connect
    await _check_and_save(
        ctx, backend, name, server, force=force, connect=connect, save_anyway=save_anyway, as_json=True
    )


@click.command()
@click.argument("name")
@pass_ctx
@on_backend("remove", loop=False)
async def remove(ctx: CliContext, backend: Backend, name: str) -> None:
    """Delete a server's config.

    \b
    Example:
      mcpdeck remove fs
    """
    await backend.remove(name)
    click.echo(f"Removed {name!r} from {ctx.path}.")


def _switch(disabled: bool, summary: str) -> click.Command:
    """``enable`` or ``disable``: a server's ``"disabled"`` set in the config file, nothing else changed."""
    verb = "disable" if disabled else "enable"

    @click.command(verb, help=f"{summary}\n\n\b\nExample:\n  mcpdeck {verb} fs")
    @click.argument("name")
    @pass_ctx
    @on_backend(verb, loop=False)
    async def switch(ctx: CliContext, backend: Backend, name: str) -> None:
        await backend.set_disabled(name, disabled)
        click.echo(f"{verb.capitalize()}d {name!r}.")

    return switch


enable = _switch(False, 'Enable a server (clear "disabled").')
disable = _switch(True, "Disable a server: keep its config, don't connect it.")


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("target", nargs=-1, type=click.UNPROCESSED, metavar="[NAME | -- COMMAND [ARGS...]]")
@_SERVER_OPTIONS
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_ctx
@on_backend("test")
async def test(ctx: CliContext, backend: Backend, target: tuple[str, ...], as_json: bool, **options: Any) -> None:
    """Connect one server, list its tools, disconnect. Saves nothing.

    NAME is a server of the config; a command after `--`, or --url, tests a server that
    is not in it.

    \b
    Examples:
      mcpdeck test fs
      mcpdeck test -- npx -y @modelcontextprotocol/server-everything
      mcpdeck test --url http://127.0.0.1:8000/mcp
    """
    from mcpdeck.cli._output import echo_json, safe, state_label, style

    given = ServerOptions(**options)
    word = target[0] if len(target) == 1 and not given.url else None
    if word is not None and os.sep not in word and (word in ctx.store.read().servers or not shutil.which(word)):
        name = word
        server = ctx.server(name)
        if given.roots and not server.roots:
            report = await backend.try_server(name, server.model_copy(update={"roots": [str(r) for r in given.roots]}))
        else:
            report = await backend.test(name)
    else:
        if not target and not given.url:
            raise ConfigError("name a server of the config, or give a command after `--`, or --url URL")
        name = "test"
        report = await backend.try_server(name, server_from_options(name, target, given))
    status = report.status
    if as_json:
        echo_json(report.to_json())
    else:
        click.echo(f"{name}: {state_label(status.state)} in {report.duration:.2f} s")
        if report.ok:
            info = status.server_info
            click.echo(safe(f"  server: {info}") if info else "  server: (anonymous)")
            click.echo(f"  {len(report.tools)} tools: " + safe(", ".join(report.tools)))
        else:
            click.echo(style(f"  {startup_hint(status.error)}", fg="red"))
    if not report.ok:
        sys.exit(1)


ADMIN_COMMANDS = (add, add_json, remove, enable, disable, test)
"""The commands this module adds to the CLI, in the order of ``mcpdeck --help``."""
