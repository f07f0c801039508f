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

from mcpdeck.cli._terminal import terminal_approval, terminal_elicitation
from mcpdeck.config import (
    ConfigStore,
    ServerConfig,
    resolve_config_path,
)
from mcpdeck.errors import ConfigError, MCPDeckError
from mcpdeck.history import History, Redactor, default_history_path, secrets_of
from mcpdeck.host import Host, default_log_dir

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
        return History(path, redactor=Redactor(secrets_of(self.store.read())))

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
    click.echo(click.style("error: ", fg="red", bold=True) + message, err=True)
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


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--config", "config", metavar="PATH", help="Config file (default: $MCPDECK_CONFIG, else user config).")
@click.option(
    "--log-dir",
    metavar="DIR",
    envvar="MCPDECK_LOG_DIR",
    help="Where server logs go (default: $MCPDECK_LOG_DIR, else the user log dir).",
)
@click.option("--startup-timeout", type=float, metavar="SECONDS", help="Override every server's startup timeout.")
@click.version_option(package_name="mcpdeck")
@click.pass_context
def cli(ctx: click.Context, config: str | None, log_dir: str | None, startup_timeout: float | None) -> None:
    """mcpdeck: connect MCP servers, list their tools, call them."""
    ctx.obj = _Context(config, log_dir, startup_timeout)


def json_object_option(text: str, option: str, example: str) -> dict[str, Any]:
    """The JSON object an option holds, or a ConfigError that shows what one looks like."""
    try:
        value: object = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(f"{option} is not valid JSON: {error.msg} (column {error.colno})") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{option} must be a JSON object, like {example}")
    return {str(key): item for key, item in cast(dict[object, Any], value).items()}
