"""Which backend answers a server command, and running the command on it.

The server commands are written once, against ``_backend.Backend`` (``on_backend``). When a
``mcpdeck serve`` runs for the config (``_attach.connect``), they ask it (``ServeBackend``):
a call takes milliseconds and servers keep their state between commands. Else, or with
``--no-attach`` (``MCPDECK_NO_ATTACH=1``), or with an option only this process can honour
(``_refusal``), they start servers here (``HostBackend``).

A command on the serve backend never waits on an event loop: it is run by ``drive``, without
anyio, so an attached command imports neither anyio nor the MCP SDK. On the host backend it
runs on anyio (or by ``drive`` too, when it only reads or writes files: ``loop=False``).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

import click

from mcpdeck.cli._app import CliContext, errors_to_exit, fail

if TYPE_CHECKING:
    from mcpdeck.cli._backend import Backend

__all__ = ["ATTACHABLE", "MAX_SERVED_STEPS", "drive", "on_backend"]

P = ParamSpec("P")
R = TypeVar("R")

ATTACHABLE: set[str] = set()
"""The commands that go through a running ``serve``: those defined with ``on_backend``."""

_TEST_HERE = (
    "note: mcpdeck serve tests a saved server as it runs it, so with --startup-timeout or --root the test runs here"
)
_ROOTS_HERE = "note: mcpdeck serve's servers run with the roots serve offers, so with --root this runs here"
_ROOTS_MATTER = frozenset({"call", "chat", "tools", "resources", "prompts"})
"""Commands whose answer a server's roots may change (a filesystem server keeps to them)."""
MAX_SERVED_STEPS = 200
"""The most model turns a prompt may take in ``serve``'s chats (``maxSteps`` of ``POST /api/chats``)."""


def _refusal(ctx: CliContext, name: str, options: dict[str, Any]) -> str | None:
    """Why ``serve`` cannot answer this command as asked (some options need the command's own host):
    None when it can; "" when the options plainly ask for this process, else a note for stderr."""
    if options.get("show_secrets") or options.get("no_connect") or options.get("no_validate"):
        return ""  # secrets stay masked in the API; the rest asks for this process's own way
    if name == "test":
        target: tuple[str, ...] = options.get("target") or ()
        given = ("url", "kind", "headers", "envs", "cwd", "roots")
        if len(target) != 1 or any(options.get(option) for option in given):
            return ""  # not a saved server, by name
        if ctx.startup_timeout is not None or ctx.roots:
            return _TEST_HERE
    if name in _ROOTS_MATTER and ctx.roots:
        return _ROOTS_HERE
    if name == "chat" and (options.get("max_steps") or 0) > MAX_SERVED_STEPS:
        return f"note: mcpdeck serve runs at most {MAX_SERVED_STEPS} model turns a prompt, so this chat runs here"
    return None


def _serve_backend(ctx: CliContext, name: str, options: dict[str, Any]) -> Backend | None:
    """The backend of the ``serve`` running for the config, when this command may use it."""
    if ctx.no_attach:
        return None
    refusal = _refusal(ctx, name, options)
    if refusal == "":
        return None
    from mcpdeck.cli._attach import connect

    api = connect(ctx.path)
    if api is None:
        return None
    if refusal:
        api.close()
        click.echo(refusal, err=True)
        return None
    from mcpdeck.cli._serve_backend import ServeBackend

    return ServeBackend(api, startup_timeout=ctx.startup_timeout, roots=ctx.roots)


def drive(coroutine: Coroutine[Any, Any, R]) -> R:
    """Run a coroutine that never waits on an event loop to its end, without one."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    coroutine.close()
    raise RuntimeError("a command meant to run without an event loop waited on one")


def on_backend(
    name: str, *, loop: bool = True
) -> Callable[[Callable[Concatenate[CliContext, Backend, P], Coroutine[Any, Any, None]]], Callable[
    Concatenate[CliContext, P], None
]]:  # fmt: skip
    """Run the command ``name`` (its callback: ``async (ctx, backend, **options)``) on the backend that answers it.

    ``loop``: whether it needs an event loop on the host backend (False: it only reads or writes files).
    Errors become a message on stderr and an exit code, the same for both backends.
    """

    ATTACHABLE.add(name)

    def decorate(
        fn: Callable[Concatenate[CliContext, Backend, P], Coroutine[Any, Any, None]],
    ) -> Callable[Concatenate[CliContext, P], None]:
        @functools.wraps(fn)
        def command(ctx: CliContext, *args: P.args, **options: P.kwargs) -> None:
            served = _serve_backend(ctx, name, options)
            if served is not None:
                _run_served(ctx, served, lambda: fn(ctx, served, *args, **options))
                return
            from mcpdeck.cli._host_backend import HostBackend

            here = HostBackend(ctx)
            if loop:
                import anyio

                async def run() -> None:
                    await fn(ctx, here, *args, **options)

                errors_to_exit(anyio.run)(run)
            else:
                errors_to_exit(drive)(fn(ctx, here, *args, **options))

        return command

    return decorate


def _run_served(ctx: CliContext, backend: Backend, run: Callable[[], Coroutine[Any, Any, None]]) -> None:
    from mcpdeck.cli._attach import AttachError
    from mcpdeck.errors import ConfigError, MCPDeckError

    try:
        drive(run())
    except AttachError as error:
        fail(error.message, error.exit_code)
    except ConfigError as error:  # found before asking (a bad option, an invalid name)
        fail(str(error), 2)
    except MCPDeckError as error:  # found before asking (chat: no model named)
        fail(str(error), 1)
    except OSError as error:  # _loopback.ProtocolError too
        message = f"the running mcpdeck serve for {ctx.path} stopped answering ({error})"
        fail(f"{message}; run again, or use --no-attach", 1)
    except KeyboardInterrupt:
        fail("interrupted", 130)
    finally:
        with contextlib.suppress(OSError):
            backend.close()
