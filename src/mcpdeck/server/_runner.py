"""``ProcessRunner``: how every long-running process mode is put together and taken apart.

The modes: ``serve`` and ``ui``; ``gateway --port``; ``gateway --stdio`` and ``serve --stdio``; and
``serve --stdio`` attached to a running ``serve``. Each gives the runner a host (not entered yet), the
history its calls go to (None: none) and its faces, one async function that serves until it is done.
The runner:

1. attaches the history to the host (``Host.history``): the one place a process does;
2. catches SIGINT and SIGTERM before the host starts, so a signal sent at once stops the process as one
   sent later does (servers closed, files removed), never by the default action;
3. enters the host (its servers start in the background) and runs the faces beside it;
4. stops when the faces return by themselves (a stdio client closed stdin, an HTTP server failed), on
   a signal, or when ``stop`` is set: ``stop_faces()`` first, when the mode gave one (uvicorn stops taking
   requests), then ``grace`` seconds for the faces to return, then they are cancelled; the host closes
   every server (each within its own bound); the ``on_exit`` callbacks run, in the order given; the
   history is closed last.

``run`` returns the signal that stopped it (None: the faces ended, or ``stop``), so a command can exit
the way Ctrl-C makes it exit; one error out of the task groups is raised as itself, not as a group.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, cast

import anyio

if TYPE_CHECKING:
    from mcpdeck.history import History
    from mcpdeck.host import Host

__all__ = ["STOP_SIGNALS", "ProcessRunner", "alone"]

logger = logging.getLogger(__name__)

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
"""The signals that stop a process mode: Ctrl-C, and how clients and service managers stop a program."""


class ProcessRunner:
    """Runs one process mode: a host, its history and its faces, stopped within bounded time (see the module).

    Args:
        host: The host, not yet entered; the runner enters and leaves it.
        history: Where the host's calls are recorded (None: nowhere); closed when the run ends. Until ``run``
            is called, closing it is the caller's job.
        grace: Seconds the faces get to return after ``stop_faces()`` before they are cancelled.
    """

    def __init__(self, host: Host, *, history: History | None = None, grace: float = 1.0):
        self.host = host
        self.history = history
        self.grace = grace
        self._on_exit: list[Callable[[], None]] = []
        host.history = history

    def on_exit(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once the host has closed, before the history is (a failing one is logged)."""
        self._on_exit.append(callback)

    async def run(
        self,
        faces: Callable[[], Awaitable[None]],
        *,
        stop_faces: Callable[[], None] | None = None,
        stop: anyio.Event | None = None,
    ) -> signal.Signals | None:
        """Run the host and ``faces()`` until the faces end, a signal comes or ``stop`` is set (see the module).

        Returns:
            The signal that stopped the run, or None.
        """
        stopping = stop or anyio.Event()
        stopped_by: list[signal.Signals] = []
        try:
            with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
                async with anyio.create_task_group() as watch:

                    async def on_signal() -> None:
                        async for signum in signals:
                            stopped_by.append(signal.Signals(signum))
                            logger.info("stopping on %s", signal.Signals(signum).name)
                            stopping.set()
                            return

                    watch.start_soon(on_signal, name="mcpdeck signals")
                    try:
                        await self._run(faces, stop_faces, stopping)
                    finally:
                        watch.cancel_scope.cancel()
        except BaseExceptionGroup as group:  # one error (a ConfigError ...): said as itself, not as a group
            raise alone(group) from None
        finally:
            self._exit()
        return stopped_by[0] if stopped_by else None

    async def _run(
        self, faces: Callable[[], Awaitable[None]], stop_faces: Callable[[], None] | None, stopping: anyio.Event
    ) -> None:
        async with self.host, anyio.create_task_group() as tg:
            ended = anyio.Event()

            async def serve() -> None:
                try:
                    await faces()
                finally:
                    ended.set()
                    stopping.set()

            tg.start_soon(serve, name="mcpdeck faces")
            await stopping.wait()
            if not ended.is_set() and stop_faces is not None:
                stop_faces()
                with anyio.move_on_after(self.grace):
                    await ended.wait()
            tg.cancel_scope.cancel()

    def _exit(self) -> None:
        """The ``on_exit`` callbacks, then the history closed."""
        try:
            for callback in self._on_exit:
                try:
                    callback()
                except Exception:  # one failing must not keep the others (or the history's close) from running
                    logger.exception("mcpdeck: a step of stopping failed")
        finally:
            if self.history is not None:
                self.history.close()


def alone(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one error a group (of groups) of one holds, or the group itself."""
    inner: tuple[BaseException, ...] = group.exceptions
    while len(inner) == 1 and isinstance(inner[0], BaseExceptionGroup):
        inner = cast(tuple[BaseException, ...], inner[0].exceptions)
    return inner[0] if len(inner) == 1 else group
