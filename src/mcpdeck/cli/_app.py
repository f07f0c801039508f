"""The ``mcpdeck`` command line: the group, its global options, and what every command shares.

Every command reads the config file (``--config``, else ``$MCPDECK_CONFIG``, else the user
config dir). Commands that need live servers open a ``Host`` for just the servers they
need and close it before they return. Human output is tables; ``--json`` output is
stable. Errors go to stderr as ``Error: ...`` (as Click writes its own): exit 2 for a
config or usage problem, 1 when the thing asked for failed (a call, a test, an add whose
server did not connect). ``list``, ``get`` and ``tools`` report failed servers in their
output and exit 0.

Only ``click`` and mcpdeck's own light modules are imported here and at the top of every
command module: ``mcpdeck --help``, ``--version`` and the commands that only read or write
the config never import the MCP SDK (``tests/cli/test_first_hour.py`` checks it). Whatever a
command needs beyond that it imports when it runs.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable, Coroutine, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, cast

import click

from mcpdeck._util import paths as _paths
from mcpdeck._util.masking import mask_urls
from mcpdeck._util.safe_text import safe_text
from mcpdeck._util.version import __version__
from mcpdeck.errors import ConfigError, MCPDeckError

if TYPE_CHECKING:
    from mcpdeck.config import ConfigStore, McpConfig, ServerConfig
    from mcpdeck.history import History
    from mcpdeck.host import Host

__all__ = ["cli"]

HISTORY_ENV = _paths.HISTORY_ENV
P = ParamSpec("P")
R = TypeVar("R")

SECONDS = click.FloatRange(min=0, min_open=True)
"""A positive number of seconds (a zero or negative timeout is a usage error)."""


class CliContext:
    def __init__(
        self,
        config: str | None,
        log_dir: str | None,
        startup_timeout: float | None,
        roots: tuple[str, ...] = (),
        *,
        no_attach: bool = False,
    ):
        self.named = bool(config) or bool(os.environ.get(_paths.CONFIG_ENV))
        """Whether the user named the file (``--config`` or ``$MCPDECK_CONFIG``): then it must exist to be read."""
        self.path = Path(config).expanduser() if config else _paths.config_path()
        self.log_dir = Path(log_dir).expanduser() if log_dir else _paths.log_dir()
        self.startup_timeout = startup_timeout
        self.roots = roots
        self.history_store: str | None = None
        """The store a command was given (``--store``); None: ``$MCPDECK_STORE``, else ``$MCPDECK_HISTORY``."""
        self.no_attach = no_attach
        """``--no-attach``: never go through a running ``serve`` (``_switch``)."""
        self._store: ConfigStore | None = None

    @property
    def store(self) -> ConfigStore:
        """The config file store (made when first needed)."""
        if self._store is None:
            from mcpdeck.config import ConfigStore

            self._store = ConfigStore(self.path)
        return self._store

    def read(self) -> McpConfig:
        """The config, for a command that uses servers: a named file that is missing, or one in
        another host's shape, is an error that says so instead of "no servers"."""
        if self.named and not self.path.exists():
            raise ConfigError(
                f"the config file {self.path} does not exist; check the path, or create it with "
                f"`mcpdeck --config {self.path} add NAME -- COMMAND [ARGS...]`"
            )
        config = self.store.read()
        if not config.servers and not config.problems:
            raw = self.store.document().raw  # the same reading
            if "mcpServers" not in raw and isinstance(raw.get("servers"), dict):
                raise ConfigError(
                    f'{self.path} has "servers" but no "mcpServers": it looks like a VS Code config; '
                    f"bring its servers in with `mcpdeck import vscode {self.path}`"
                )
        return config

    def server(self, name: str) -> ServerConfig:
        """A configured server's config, or the error that says why there is none."""
        config = self.read()
        if name in config.problems:
            raise config.problems[name]
        if name not in config.servers:
            known = ", ".join(config.servers) or "none"
            raise ConfigError(f"no server named {name!r} in {self.path} (servers: {known})", server=name)
        return config.servers[name]

    def servers_for(self, name: str, what: str = "tool") -> list[str]:
        """The servers to start for the public name ``name`` (a tool's or a prompt's): the ones it names,
        else all of them, saying so."""
        from mcpdeck.catalog import servers_named_by

        known = list(self.read().servers)
        named = servers_named_by(name, known)
        if named or len(known) < 2:
            return named or known
        why = (
            f"{name!r} names no server of {self.path}"
            if name.startswith("mcp__")
            else f"{name!r} does not say its server ({what} names look like mcp__SERVER__{what.upper()})"
        )
        click.echo(f"note: {why}; starting all {len(known)} servers to look for it", err=True)
        return known

    def history(
        self, also: Iterable[str] = (), *, store: str | None = None, replica: str | None = None
    ) -> History | None:
        """The history: in ``store`` (``--store``), else ``$MCPDECK_STORE``, else ``$MCPDECK_HISTORY`` (``off``
        for none), else the default file; config secrets and ``also`` redacted; ``replica`` on every record.
        Opened here, so a bad URL or a database that cannot be reached stops a command before it starts."""
        location = store or self.history_store or _paths.store_location()
        if location is None:
            return None
        from mcpdeck.history import History, Redactor, secrets_of

        redactor = Redactor({*secrets_of(self.store.read(), os.environ), *also})
        return History(location, redactor=redactor, replica=replica)

    def host(
        self,
        only: list[str] | None = None,
        *,
        interactive: bool = False,
        approve: bool = False,
        yes: bool = False,
        wait: bool = True,
        history: History | None = None,
    ) -> Host:
        """A host for the config file.

        Args:
            only: Connect only these servers (the others are not started at all).
            interactive: Let servers ask the user at the terminal (elicitation).
            approve: Ask the user at the terminal about tool calls the rules leave to ``ask``.
            yes: Approve every such call without asking (``--yes``).
            wait: Whether entering the host waits until every server has settled.
            history: Where the host records its calls (``history()``), if anywhere.
        """
        from mcpdeck.cli._terminal import terminal_approval, terminal_elicitation
        from mcpdeck.config import McpConfig
        from mcpdeck.host import Host

        config = self.read()
        if only is not None:  # servers nobody asked for are not even loaded: no task, no child, no wait
            wanted = set(only)
            config = McpConfig(
                servers={n: s for n, s in config.servers.items() if n in wanted},
                problems={n: p for n, p in config.problems.items() if n in wanted},
                npm_registry=config.npm_registry,
                enabled=config.enabled,
                path=config.path,
            )
        if self.startup_timeout is not None:
            for name, server in list(config.servers.items()):
                config.servers[name] = server.model_copy(update={"startup_timeout": self.startup_timeout})
        elicitation = terminal_elicitation if interactive else None
        host = Host(
            config,
            store=self.store,
            log_dir=self.log_dir,
            elicitation=elicitation,
            approve=terminal_approval if approve else None,
            yes=yes,
            roots=list(self.roots) or None,
            wait=wait,
            history=history,
        )
        if approve or yes:  # the commands that ask at the terminal take --yes
            host.permissions.allow_hint = "run with --yes"
        return host


def fail(message: str, code: int = 1) -> None:
    click.echo(click.style("Error: ", fg="red", bold=True) + safe_text(mask_urls(message), multiline=True), err=True)
    sys.exit(code)


def errors_to_exit(fn: Callable[P, R]) -> Callable[P, R | None]:
    """Run a command: library and SDK warnings shown through the safe filter (``install_safe_logging``), and
    mcpdeck errors turned into a message on stderr: exit 2 for config problems, 1 otherwise, 130 on Ctrl-C.

    (The filter is installed here, when a command runs, not in the group: ``COMMAND --help`` stays light.)
    """

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R | None:
        from mcpdeck.cli._render import install_safe_logging

        install_safe_logging()
        try:
            return fn(*args, **kwargs)
        except ConfigError as error:
            fail(str(error), 2)
        except MCPDeckError as error:
            fail(str(error), 1)
        except KeyboardInterrupt:
            fail("interrupted", 130)
        return None

    return wrapper


def run_async(fn: Callable[P, Coroutine[Any, Any, R]]) -> Callable[P, R | None]:
    """An async command, run with anyio, errors as ``errors_to_exit`` says."""

    @errors_to_exit
    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        import anyio

        async def call() -> R:
            return await fn(*args, **kwargs)

        return anyio.run(call)

    return wrapper


pass_ctx = click.make_pass_decorator(CliContext)


def option_group(*options: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A decorator that gives a command these click options, in this order: a group several commands take."""

    def decorate(fn: Any) -> Any:
        for option in reversed(options):
            fn = option(fn)
        return fn

    return decorate


_EPILOG = """\b
Examples:
  mcpdeck add fs -- npx -y @modelcontextprotocol/server-filesystem ~/notes
  mcpdeck tools --server fs
  mcpdeck call mcp__fs__list_directory --args '{"path": "~/notes"}'

Files: $MCPDECK_HOME puts the config, logs and history in one folder.
"""


@click.group(
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    invoke_without_command=True,
    epilog=_EPILOG,
)
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
@click.option(
    "--startup-timeout", type=SECONDS, metavar="SECONDS", help="Override every server's startupTimeout (seconds)."
)
@click.option(
    "--root",
    "roots",
    multiple=True,
    metavar="DIR",
    help="Offer DIR to servers as an MCP root (repeatable; default: none).",
)
@click.version_option(__version__, prog_name="mcpdeck")
@click.pass_context
def cli(
    ctx: click.Context,
    config: str | None,
    no_attach: bool,
    log_dir: str | None,
    startup_timeout: float | None,
    roots: tuple[str, ...],
) -> None:
    """mcpdeck: connect MCP servers, list their tools, call them."""
    ctx.obj = CliContext(config, log_dir, startup_timeout, roots, no_attach=no_attach)
    if ctx.invoked_subcommand is None:  # bare `mcpdeck`: the help, and success
        click.echo(ctx.get_help())
        ctx.exit(0)


def json_object_option(text: str, option: str, example: str) -> dict[str, Any]:
    """The JSON object an option holds, or a ConfigError that shows what one looks like."""
    try:
        value: object = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(
            f"{option} is not valid JSON: {error.msg} (line {error.lineno}, column {error.colno})"
        ) from None
    if not isinstance(value, dict):
        raise ConfigError(f"{option} must be a JSON object, like {example}")
    return {str(key): item for key, item in cast(dict[object, Any], value).items()}
