"""Commands over many servers show each as it settles: the waiting, and how a failed start reads."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import click

from mcpdeck.errors import ConfigError

if TYPE_CHECKING:
    from mcpdeck.cli._app import CliContext
    from mcpdeck.host import Host
    from mcpdeck.status import ServerStatus

__all__ = ["READY_WAIT", "as_they_settle", "show_offered", "startup_hint", "warn_failed"]


def startup_hint(error: str | None) -> str:
    """A server's error as the CLI shows it: a startup timeout also names ``--startup-timeout``."""
    text = error or ""
    marker = '(its "startupTimeout"; raise it if it needs longer)'
    if marker in text:
        text = text.replace(marker, '(raise "startupTimeout" in its config, or pass --startup-timeout SECONDS)')
    return text


READY_WAIT = 2.0
"""Seconds a command over every server waits for them all before it prints what is ready (the rest follow)."""


async def as_they_settle(
    host: Host, first: Callable[[list[str], list[str]], None], then: Callable[[str], None]
) -> None:
    """Show a host's servers (opened with ``wait=False``) as they settle, a slow one holding back only itself.

    ``first(ready, waiting)`` is called once the servers that settle within ``READY_WAIT`` have
    (or every one has), with the names of both kinds in config order; then ``then(name)`` for
    each waiting one as it connects or fails (at most its startup timeout later). A note on
    stderr says which are still starting. ``list``, ``tools``, ``resources`` and ``prompts``
    print through it.
    """
    import anyio

    names = list(host.servers)
    send, receive = anyio.create_memory_object_stream[str](max(len(names), 1))
    with send, receive:
        async with anyio.create_task_group() as tg:

            async def settle(name: str) -> None:
                with contextlib.suppress(ConfigError):  # an unusable entry: failed from the start
                    await host.wait_settled(name)
                await send.send(name)

            for name in names:
                tg.start_soon(settle, name)
            waiting = set(names)
            with anyio.move_on_after(READY_WAIT):
                while waiting:
                    waiting.discard(await receive.receive())
            first([n for n in names if n not in waiting], [n for n in names if n in waiting])
            if waiting:
                click.echo(f"(still starting: {', '.join(sorted(waiting))}; each is shown when it settles)", err=True)
            while waiting:
                name = await receive.receive()
                waiting.discard(name)
                then(name)


async def show_offered(
    ctx: CliContext,
    servers: tuple[str, ...],
    as_json: bool,
    offered: Callable[[Host, Callable[[str], bool]], Any],
    text: Callable[[Any], str],
    empty: str,
) -> None:
    """What ``tools``, ``resources`` and ``prompts`` print of what the servers offer (``servers``: only these).

    ``offered(host, wanted)`` is the JSON of what the servers named ``wanted`` offer. With ``--json``
    it is printed as one document once every server has settled; else ``text`` of it is printed in
    blocks: the servers ready first, then each other one as it settles (a blank line between blocks,
    ``empty`` when there was none). A failed server is a warning on stderr.
    """
    from mcpdeck.cli._output import echo_json

    for name in servers:
        ctx.server(name)  # an unknown name is an error, not an empty list
    if as_json:  # one document: every server settled first
        async with ctx.host(only=list(servers) or None) as host:
            document = offered(host, lambda server: not servers or server in servers)
            statuses = list(host.servers.values())
        echo_json(document)
        warn_failed(statuses)
        return
    async with ctx.host(only=list(servers) or None, wait=False) as host:
        printed = False

        def show(names: list[str]) -> None:
            nonlocal printed
            warn_failed(host.servers[name] for name in names)
            block = text(offered(host, names.__contains__))
            if block:
                click.echo(("\n" if printed else "") + block)
                printed = True

        await as_they_settle(host, lambda ready, _waiting: show(ready), lambda name: show([name]))
        if not printed:
            click.echo(empty)


def warn_failed(statuses: Iterable[ServerStatus]) -> None:
    """A warning on stderr for each server that failed (commands over many servers still exit 0)."""
    from mcpdeck.cli._render import style
    from mcpdeck.status import ServerState

    for status in statuses:
        if status.state is ServerState.FAILED:
            message = f"warning: {status.name} is not connected: {startup_hint(status.error)}"
            click.echo(style(message, fg="yellow"), err=True)
