"""The ``mcpdeck`` command line.

Every command reads the config file (``--config``, else ``$MCPDECK_CONFIG``, else the user
config dir). Commands that need live servers open a ``Host`` for just the servers they
need and close it before they return. Human output is tables; ``--json`` output is
stable. Errors go to stderr: exit 2 for a config or usage problem, 1 when the thing asked
for failed (a call, a test, a save that did not connect). ``list``, ``get`` and ``tools``
report failed servers in their output and exit 0.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, ParamSpec, TypeVar, cast

import anyio
import click

from mcpdeck._masking import mask_urls
from mcpdeck.catalog import CatalogTool
from mcpdeck.cli._render import (
    echo_json,
    install_safe_logging,
    mask_secrets,
    safe,
    state_label,
    status_row,
    style,
    table,
    target_of,
)
from mcpdeck.cli._terminal import ProgressLine, terminal_approval, terminal_elicitation
from mcpdeck.config import (
    ConfigStore,
    RemoteServerConfig,
    ServerConfig,
    StdioServerConfig,
    parse_server_config,
    resolve_config_path,
    validate_server_name,
)
from mcpdeck.config._importers import IMPORT_SOURCES, ImportSource, default_import_path, import_servers
from mcpdeck.errors import ConfigError, MCPDeckError
from mcpdeck.history import History, Redactor, default_history_path, secrets_of
from mcpdeck.host import Host, default_log_dir
from mcpdeck.status import ServerState, ServerStatus

__all__ = ["cli"]

HISTORY_ENV = "MCPDECK_HISTORY"
P = ParamSpec("P")
R = TypeVar("R")


class _Context:
    def __init__(self, config: str | None, log_dir: str | None, startup_timeout: float | None):
        self.path = resolve_config_path(config)
        self.store = ConfigStore(self.path)
        self.log_dir = Path(log_dir) if log_dir else default_log_dir()
        self.startup_timeout = startup_timeout

    def server(self, name: str) -> ServerConfig:
        """A configured server's config, or the error that says why there is none."""
        config = self.store.read()
        if name in config.problems:
            raise config.problems[name]
        if name not in config.servers:
            raise ConfigError(f"no server named {name!r} in {self.path}", server=name)
        return config.servers[name]

    def history(self) -> History | None:
        """The history database (``$MCPDECK_HISTORY``, ``off`` for none), config secrets redacted."""
        value = os.environ.get(HISTORY_ENV, "")
        if value.lower() in ("off", "0", "false", "no"):
            return None
        path = Path(value).expanduser() if value else default_history_path()
        return History(path, redactor=Redactor(secrets_of(self.store.read(), os.environ)))

    def host(
        self, only: list[str] | None = None, *, interactive: bool = False, approve: bool = False, yes: bool = False
    ) -> Host:
        """A host for the config file.

        Args:
            only: Connect only these servers.
            interactive: Let servers ask the user at the terminal (elicitation).
            approve: Ask the user at the terminal about tool calls the rules leave to ``ask``.
            yes: Approve every such call without asking (``--yes``).
        """
        config = self.store.read()
        if self.startup_timeout is not None:
            for name, server in list(config.servers.items()):
                config.servers[name] = server.model_copy(update={"startup_timeout": self.startup_timeout})
        elicitation = terminal_elicitation if interactive else None
        return Host(
            config,
            store=self.store,
            log_dir=self.log_dir,
            only=only,
            elicitation=elicitation,
            approve=terminal_approval if approve else None,
            yes=yes,
        )


def _fail(message: str, code: int = 1) -> None:
    click.echo(click.style("error: ", fg="red", bold=True) + safe(mask_urls(message)), err=True)
    sys.exit(code)


def errors_to_exit(fn: Callable[P, R]) -> Callable[P, R | None]:
    """Turn mcpdeck errors into a message on stderr: exit 2 for config problems, 1 otherwise, 130 on Ctrl-C."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R | None:
        try:
            return fn(*args, **kwargs)
        except ConfigError as error:
            _fail(str(error), 2)
        except MCPDeckError as error:
            _fail(str(error), 1)
        except KeyboardInterrupt:
            _fail("interrupted", 130)
        return None

    return wrapper


def run_async(fn: Callable[P, Coroutine[Any, Any, R]]) -> Callable[P, R | None]:
    """An async command, run with anyio, errors as ``errors_to_exit`` says."""

    @errors_to_exit
    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        async def call() -> R:
            return await fn(*args, **kwargs)

        return anyio.run(call)

    return wrapper


_run = run_async
_sync = errors_to_exit


pass_ctx = click.make_pass_decorator(_Context)


class _AttachingGroup(click.Group):
    """Commands that a running ``mcpdeck serve`` can answer go through it (``cli._attach``), unless ``--no-attach``."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name, command, rest = super().resolve_command(ctx, args)
        if command is None or name is None or ctx.params.get("no_attach") or ctx.resilient_parsing:
            return name, command, rest
        from mcpdeck.cli._attach import ATTACHABLE, attached_command

        if name not in ATTACHABLE:
            return name, command, rest
        return name, attached_command(name, command, lambda c: c.find_object(_Context).path), rest  # pyright: ignore[reportOptionalMemberAccess]


@click.group(cls=_AttachingGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--config", "config", metavar="PATH", help="Config file (default: $MCPDECK_CONFIG, else user config).")
@click.option(
    "--no-attach",
    is_flag=True,
    help="Start servers here even when `mcpdeck serve` runs for this config (default: use it).",
)
@click.option(
    "--log-dir",
    metavar="DIR",
    envvar="MCPDECK_LOG_DIR",
    help="Where server logs go (default: $MCPDECK_LOG_DIR, else the user log dir).",
)
@click.option("--startup-timeout", type=float, metavar="SECONDS", help="Override every server's startup timeout.")
@click.version_option(package_name="mcpdeck")
@click.pass_context
def cli(
    ctx: click.Context, config: str | None, no_attach: bool, log_dir: str | None, startup_timeout: float | None
) -> None:
    """mcpdeck: connect MCP servers, list their tools, call them."""
    install_safe_logging()
    ctx.obj = _Context(config, log_dir, startup_timeout)


# ----- servers ------------------------------------------------------------------------


@cli.command("list")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--show-secrets", is_flag=True, help="Show arguments and URLs unmasked.")
@pass_ctx
@_run
async def list_servers(ctx: _Context, as_json: bool, show_secrets: bool) -> None:
    """Connect every server and show its status and tool count."""
    async with ctx.host() as host:
        statuses = list(host.servers.values())
    configs = ctx.store.read().servers if show_secrets else {}
    targets = {name: target_of(config, show=True) for name, config in configs.items()}
    if as_json:
        servers = [s.to_json() | ({"target": targets[s.name]} if s.name in targets else {}) for s in statuses]
        echo_json({"config": str(ctx.path), "servers": servers})
        return
    if not statuses:
        click.echo(f"No servers in {ctx.path}. Add one with `mcpdeck add NAME -- COMMAND [ARGS...]`.")
        return
    rows = [status_row(s, targets.get(s.name)) for s in statuses]
    click.echo(table(["name", "status", "tools", "transport", "command / url"], rows))
    for status in statuses:
        if status.state is ServerState.FAILED:
            click.echo(style(f"\n{status.name}: {status.error}", fg="red"))
        for warning in status.warnings:
            click.echo(style(f"\n{status.name}: warning: {warning}", fg="yellow"))
    connected = sum(s.state is ServerState.CONNECTED for s in statuses)
    tools = sum(s.tool_count for s in statuses)
    click.echo(f"\n{connected}/{len(statuses)} connected, {tools} tools  ({ctx.path})")


@cli.command()
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--show-secrets", is_flag=True, help="Show env and header values, arguments and URLs unmasked.")
@pass_ctx
@_run
async def get(ctx: _Context, name: str, as_json: bool, show_secrets: bool) -> None:
    """Show one server: its config (secrets masked) and live status."""
    server = ctx.server(name)
    async with ctx.host(only=[name]) as host:
        status = host.servers[name]
        tools = [tool.original_name for tool in host.catalog.for_server(name)]
    if as_json:
        status_json = status.to_json() | ({"target": target_of(server, show=True)} if show_secrets else {})
        echo_json({"config": mask_secrets(server, show=show_secrets), "status": status_json, "tools": tools})
        return
    _print_status(status, server, show_secrets=show_secrets)
    if tools:
        click.echo(f"{'tools':>12}: " + safe(", ".join(tools)))


def _print_status(status: ServerStatus, server: ServerConfig | None = None, *, show_secrets: bool = False) -> None:
    info = status.server_info
    rows: list[tuple[str, str]] = [("name", status.name), ("status", state_label(status.state))]
    if status.error:
        rows.append(("error", style(status.error, fg="red")))
    rows.extend(("warning", style(warning, fg="yellow")) for warning in status.warnings)
    rows.append(("transport", status.transport))
    if server is not None:
        shown = mask_secrets(server, show=show_secrets)
        rows.extend((key, safe(json.dumps(value, ensure_ascii=False))) for key, value in shown.items() if key != "type")
    if info:
        rows.append(("server", safe(f"{info.name} {info.version}".strip())))
    if status.protocol_version:
        rows.append(("protocol", status.protocol_version))
    if status.state is ServerState.CONNECTED:
        rows.append(("tool count", str(status.tool_count)))
    if status.log_path:
        rows.append(("log", str(status.log_path)))
    for key, value in rows:
        click.echo(f"{key:>12}: {value}")


def _parse_pairs(values: tuple[str, ...], sep: str, what: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for value in values:
        key, found, rest = value.partition(sep)
        if not found or not key.strip():
            raise ConfigError(f"{what} {value!r} must look like KEY{sep.strip()}VALUE")
        pairs[key.strip()] = rest.strip() if sep.strip() == ":" else rest
    return pairs


async def _save_and_connect(ctx: _Context, name: str, server: ServerConfig, force: bool, connect: bool) -> None:
    existing = ctx.store.read()
    if (name in existing.servers or name in existing.problems) and not force:
        raise ConfigError(f"server {name!r} already exists in {ctx.path}; use --force to replace it", server=name)
    ctx.store.put_server(name, server, replace=force)  # checked again under the lock: another add may race
    click.echo(f"Saved {name!r} to {ctx.path}.")
    if not connect or server.disabled:
        return
    async with ctx.host(only=[name]) as host:
        status = host.servers[name]
    if status.state is ServerState.CONNECTED:
        click.echo(f"{state_label(status.state)}: {status.tool_count} tools.")
    else:
        _fail(f"saved, but it did not connect: {status.error}", 1)


@cli.command(context_settings={"ignore_unknown_options": True})
@click.argument("name")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@click.option("--url", help="A remote server's URL.")
@click.option("--type", "kind", type=click.Choice(["http", "sse"]), help="Remote transport (default: try both).")
@click.option("--header", "headers", multiple=True, metavar="'K: V'", help="HTTP header for a remote server.")
@click.option("--env", "envs", multiple=True, metavar="K=V", help="Environment variable for a stdio server.")
@click.option("--cwd", help="Working directory for a stdio server.")
@click.option("--timeout", type=float, help="Request timeout in seconds.")
@click.option("--force", is_flag=True, help="Replace a server of the same name.")
@click.option("--no-connect", is_flag=True, help="Only save; don't try to connect.")
@pass_ctx
@_run
async def add(
    ctx: _Context,
    name: str,
    command: tuple[str, ...],
    url: str | None,
    kind: str | None,
    headers: tuple[str, ...],
    envs: tuple[str, ...],
    cwd: str | None,
    timeout: float | None,
    force: bool,
    no_connect: bool,
) -> None:
    """Add a server: `add NAME -- COMMAND [ARGS...]` or `add NAME --url URL`."""
    validate_server_name(name)
    if bool(command) == bool(url):
        raise ConfigError("give either a command after `--` (stdio) or --url (remote), not both or neither")
    raw: dict[str, Any]
    if url:
        if envs or cwd:
            raise ConfigError("--env and --cwd are for stdio servers; a remote server takes --header")
        raw = {"url": url, "headers": _parse_pairs(headers, ":", "header")}
        if kind:
            raw["type"] = kind
    else:
        if headers or kind:
            raise ConfigError("--header and --type are for remote servers (--url)")
        raw = {"command": command[0], "args": list(command[1:]), "env": _parse_pairs(envs, "=", "--env")}
        if cwd:
            raw["cwd"] = cwd
    if timeout is not None:
        raw["timeout"] = timeout
    await _save_and_connect(ctx, name, parse_server_config(name, raw), force, not no_connect)


@cli.command("add-json")
@click.argument("name")
@click.argument("config_json", metavar="JSON")
@click.option("--force", is_flag=True, help="Replace a server of the same name.")
@click.option("--no-connect", is_flag=True, help="Only save; don't try to connect.")
@pass_ctx
@_run
async def add_json(ctx: _Context, name: str, config_json: str, force: bool, no_connect: bool) -> None:
    """Add a server from its JSON config, as other hosts write it."""
    try:
        raw = json.loads(config_json)
    except json.JSONDecodeError as error:
        raise ConfigError(f"the JSON is not valid: {error.msg} (column {error.colno})") from None
    await _save_and_connect(ctx, name, parse_server_config(name, raw), force, not no_connect)


@cli.command()
@click.argument("name")
@pass_ctx
@_sync
def remove(ctx: _Context, name: str) -> None:
    """Delete a server's config."""
    ctx.store.remove_server(name)
    click.echo(f"Removed {name!r} from {ctx.path}.")


@cli.command()
@click.argument("name")
@pass_ctx
@_sync
def enable(ctx: _Context, name: str) -> None:
    """Enable a server (clear "disabled")."""
    ctx.store.set_server_disabled(name, False)
    click.echo(f"Enabled {name!r}.")


@cli.command()
@click.argument("name")
@pass_ctx
@_sync
def disable(ctx: _Context, name: str) -> None:
    """Disable a server: keep its config, don't connect it."""
    ctx.store.set_server_disabled(name, True)
    click.echo(f"Disabled {name!r}.")


@cli.command()
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_ctx
@_run
async def test(ctx: _Context, name: str, as_json: bool) -> None:
    """Connect one server, list its tools, disconnect. Saves nothing."""
    server = ctx.server(name)
    async with Host({}, log_dir=ctx.log_dir) as host:
        if ctx.startup_timeout is not None:
            server = server.model_copy(update={"startup_timeout": ctx.startup_timeout})
        report = await host.test_server(server, name=name)
    status = report.status
    if as_json:
        data = status.to_json() | {"name": name, "ok": report.ok, "duration": round(report.duration, 3)}
        echo_json(data | {"tools": [tool.name for tool in report.tools]})
    else:
        click.echo(f"{name}: {state_label(status.state)} in {report.duration:.2f} s")
        if report.ok:
            info = status.server_info
            click.echo(safe(f"  server: {info.name} {info.version}") if info else "  server: (anonymous)")
            click.echo(f"  {len(report.tools)} tools: " + safe(", ".join(tool.name for tool in report.tools)))
        else:
            click.echo(style(f"  {status.error}", fg="red"))
    if not report.ok:
        sys.exit(1)


# ----- tools --------------------------------------------------------------------------


@cli.command()
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
        click.echo(style(f"warning: {status.name} is not connected: {status.error}", fg="yellow"), err=True)


def json_object_option(text: str, option: str, example: str) -> dict[str, Any]:
    """The JSON object an option holds, or a ConfigError that shows what one looks like."""
    try:
        value: object = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(f"{option} is not valid JSON: {error.msg} (column {error.colno})") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{option} must be a JSON object, like {example}")
    return {str(key): item for key, item in cast(dict[object, Any], value).items()}


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def _servers_for(name: str, known: list[str]) -> list[str]:
    """Which servers a namespaced tool name can belong to (connect only those)."""
    return [server for server in known if name.startswith(f"mcp__{server}__")] or known


@cli.command()
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
        click.echo(safe(result.text(), multiline=True))
    if result.is_error:
        sys.exit(1)


# ----- import and logs ----------------------------------------------------------------


@cli.command("import")
@click.argument("source", type=click.Choice(IMPORT_SOURCES))
@click.argument("path", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Replace servers of the same name.")
@click.option("--dry-run", is_flag=True, help="Show what would be imported; change nothing.")
@click.option(
    "--keep-auto-approve",
    is_flag=True,
    help="Keep the servers' autoApprove lists (tools that then run without asking); default: ask, or drop them.",
)
@pass_ctx
@_sync
def import_(
    ctx: _Context, source: ImportSource, path: Path | None, force: bool, dry_run: bool, keep_auto_approve: bool
) -> None:
    """Import servers from another host's config (default path if PATH is left out)."""
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
    written: list[str] = []

    def change(doc: dict[str, Any]) -> None:  # under the file's lock: decide on what is there now
        written.clear()
        servers = doc.setdefault("mcpServers", {})
        for name, entry in entries.items():
            if force or name not in servers:
                servers[name] = entry
                written.append(name)

    ctx.store.edit(change)
    for name in entries.keys() - set(written):
        click.echo(click.style(f"skipped {name}: added to {ctx.path} meanwhile (use --force to replace)", fg="yellow"))
    count = f"{len(written)} server{'s' if len(written) != 1 else ''}"
    click.echo(f"\nImported {count} from {result.path} into {ctx.path}.")


def _show_auto_approve(approving: dict[str, list[str]]) -> None:
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


@cli.command()
@click.argument("name")
@click.option("-n", "--lines", type=int, default=50, show_default=True, help="How many lines from the end.")
@pass_ctx
@_sync
def logs(ctx: _Context, name: str, lines: int) -> None:
    """Show the end of a server's log (its stderr, with a line per start)."""
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
        click.echo(safe(line, multiline=True))
    if isinstance(server, StdioServerConfig) and not text:
        click.echo("(empty)")
