"""Commands over many servers show each as it settles: the waiting, what they print, how a failed start reads."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import click

from mcpdeck.errors import ConfigError

if TYPE_CHECKING:
    from mcpdeck.cli._backend import Offered, Status
    from mcpdeck.host import Host

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


def show_offered(
    as_json: bool, text: Callable[[Any], str], empty: str
) -> tuple[Callable[[Offered], None], Callable[[], None]]:
    """What ``tools``, ``resources`` and ``prompts`` print of what the servers offer (``Backend.offered``):
    ``(show, end)``. With ``--json`` the one document; else ``text`` of each piece, a blank line between
    pieces, and ``empty`` at the end when there was none. A failed server is a warning on stderr."""
    from mcpdeck.cli._output import echo_json

    printed = False

    def show(offered: Offered) -> None:
        nonlocal printed
        if as_json:
            echo_json(offered.found)
            warn_failed(offered.failed)
            return
        warn_failed(offered.failed)
        block = text(offered.found)
        if block:
            click.echo(("\n" if printed else "") + block)
            printed = True

    def end() -> None:
        if not as_json and not printed:
            click.echo(empty)

    return show, end


def warn_failed(statuses: Iterable[Status]) -> None:
    """A warning on stderr for each server that failed (commands over many servers still exit 0)."""
    from mcpdeck.cli._output import style

    for status in statuses:
        if status.state == "failed":
            message = f"warning: {status.name} is not connected: {startup_hint(status.error)}"
            click.echo(style(message, fg="yellow"), err=True)
