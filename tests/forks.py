"""A fork server for the Python test servers: the SDK imported once per test process, each server a fork.

Every ``python -m tests.servers.<name>`` costs ~0.7 s of CPU before it says a word: importing the
``mcp`` SDK (pydantic models for every protocol type). The suite starts some four hundred of them
(stdio configs in the API, CLI, console and gateway tests), which on two cores was minutes of the
run. So each test process starts one fork server (``serving``, from ``tests/conftest.py``): a Python
process that imports what the test servers import, then waits on a Unix socket. A server's config
runs ``python -m tests.servers.launch SOCKET NAME ARGS...`` (``tests/servers/launch.py``, standard
library only): it sends its standard input, output and error and its environment, working folder
and arguments here; a fork takes them and runs ``tests.servers.<NAME>`` as ``__main__``, as
``python -m`` would, on the host's own pipes. Each fork is a real server process speaking the real
SDK; what the host holds is the launcher, which exits as the server does and passes signals on.

Tests about processes themselves (a host's children and their pids, orphans, process groups)
start their servers directly (``stdio_server(..., direct=True)``), as do the servers that do not
import the SDK.
"""

from __future__ import annotations

import array
import contextlib
import gc
import json
import os
import runpy
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Generator
from pathlib import Path
from typing import Any

SOCKET = Path(tempfile.gettempdir()) / f"mcpdeck-test-forks-{os.getpid()}.sock"
"""Where this test process's fork server listens (one per process: pytest-xdist workers each have their own)."""

FORKED = frozenset(
    {"asking", "basic", "bulky", "conformance_server", "escapes", "features", "hostile", "paged", "schemas"}
)
"""The test servers built on the SDK, started as forks; their imports are made once, in the fork server
(their own modules are left to each fork to run). ``hang`` and ``handshake_era`` import only the standard
library and start directly, as cheaply."""
CONFORMANCE_CLIENT = "tests.conformance.client"
"""The client the conformance suite runs once per scenario (``tests/conformance/client.py``), also a fork."""


@contextlib.contextmanager
def serving(root: Path) -> Generator[None]:
    """Run this process's fork server (its socket at ``SOCKET``) while the block runs."""
    with contextlib.suppress(FileNotFoundError):
        SOCKET.unlink()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(SOCKET))
    listener.listen(128)  # launchers that come before the imports are done wait in the backlog
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.forks", str(listener.fileno())],
        cwd=root,
        pass_fds=[listener.fileno()],
        stdin=subprocess.DEVNULL,
    )
    listener.close()
    try:
        yield
    finally:
        SOCKET.unlink(missing_ok=True)
        process.terminate()
        process.wait(timeout=10)


class _Forks:
    """The fork server's loop: accept a launcher, fork its server, tell it the pid and then the status."""

    def __init__(self, listener: socket.socket):
        self.listener = listener
        self.selector = selectors.DefaultSelector()
        self.selector.register(listener, selectors.EVENT_READ)
        self.parent = os.pidfd_open(os.getppid())  # a test process that is killed takes its fork server along
        self.selector.register(self.parent, selectors.EVENT_READ, ("parent", 0))
        self.connections: dict[int, socket.socket] = {}  # server pid -> its launcher's connection
        self.pidfds: dict[int, int] = {}  # server pid -> pidfd

    def run(self) -> dict[str, Any]:
        """Serve until SIGTERM; return (in a fork only) the request the fork is to run."""
        while True:
            for key, _ in self.selector.select():
                if key.fileobj is self.listener:
                    request = self._accept()
                    if request is not None:
                        return request
                elif key.data[0] == "exit":
                    self._reap(key.data[1])
                elif key.data[0] == "parent":
                    self.stop(signal.SIGTERM, None)
                else:
                    self._launcher_gone(key.data[1])

    def _accept(self) -> dict[str, Any] | None:
        connection, _ = self.listener.accept()
        fds = array.array("i")
        data, ancillary, _, _ = connection.recvmsg(65536, socket.CMSG_SPACE(3 * fds.itemsize))
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
        size = int.from_bytes(data[:4], "big")
        while len(data) < 4 + size:
            more = connection.recv(65536)
            if not more:
                break
            data += more
        if len(fds) != 3 or len(data) != 4 + size:
            for fd in fds:
                os.close(fd)
            connection.close()
            return None
        request: dict[str, Any] = json.loads(data[4:])
        pid = os.fork()
        if pid == 0:
            self._become_child(connection, list(fds))
            return request
        for fd in fds:
            os.close(fd)
        pidfd = os.pidfd_open(pid)
        self.connections[pid] = connection
        self.pidfds[pid] = pidfd
        self.selector.register(pidfd, selectors.EVENT_READ, ("exit", pid))
        self.selector.register(connection, selectors.EVENT_READ, ("launcher", pid))
        try:
            connection.sendall(f"{pid}\n".encode())
        except OSError:  # the launcher died after it asked (a host gave up on it): its server goes too
            self._launcher_gone(pid)
        return None

    def _become_child(self, connection: socket.socket, fds: list[int]) -> None:
        """In the fork: the launcher's descriptors become 0, 1 and 2; nothing of the fork server stays open."""
        os.setsid()  # its own process group, as the host starts a server: the launcher signals all of it
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        self.selector.close()
        self.listener.close()
        os.close(self.parent)
        connection.close()
        for other in self.connections.values():
            other.close()
        for pidfd in self.pidfds.values():
            os.close(pidfd)

    def _reap(self, pid: int) -> None:
        pidfd = self.pidfds.pop(pid, None)
        if pidfd is None:
            return
        _, status = os.waitpid(pid, 0)
        self.selector.unregister(pidfd)
        os.close(pidfd)
        connection = self.connections.pop(pid, None)
        if connection is not None:
            self.selector.unregister(connection)
            with contextlib.suppress(OSError):
                connection.sendall(f"{status}\n".encode())
            connection.close()
        self._kill_group(pid)  # what the server left running, as the host's end of its group would

    def _launcher_gone(self, pid: int) -> None:
        connection = self.connections.pop(pid, None)
        if connection is None:  # the server's exit came first, in the same round
            return
        self.selector.unregister(connection)
        connection.close()
        self._kill_group(pid)  # the host killed the launcher: the server goes with it

    @staticmethod
    def _kill_group(pid: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)

    def stop(self, _signum: int, _frame: object) -> None:
        for pid in list(self.pidfds):
            self._kill_group(pid)
        os._exit(0)


def _become_main(request: dict[str, Any]) -> None:
    """Run the requested server as ``python -m tests.servers.<module> ARGS...`` would, in this fork."""
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    # Standard streams as the interpreter makes them for these descriptors (pipes: block-buffered
    # stdout, line-buffered stderr).
    encoding, errors = sys.stdin.encoding, sys.stdin.errors
    sys.stdin = sys.__stdin__ = open(0, encoding=encoding, errors=errors, closefd=False)
    sys.stdout = sys.__stdout__ = open(1, "w", encoding=encoding, errors=errors, closefd=False)
    sys.stderr = sys.__stderr__ = open(2, "w", encoding=encoding, errors="backslashreplace", closefd=False, buffering=1)
    name: str = request["name"]
    if name.endswith(".py"):  # a script, as ``python SCRIPT`` runs it: its folder first on the path
        script = os.path.abspath(name)
        sys.argv = [script, *request["args"]]
        sys.path[0] = os.path.dirname(script)
        runpy.run_path(script, run_name="__main__")
    else:
        module = f"tests.servers.{name}"
        sys.argv = [module, *request["args"]]
        runpy.run_module(module, run_name="__main__", alter_sys=True)


def _preload() -> None:
    """Import what the test servers and the conformance client import, then forget their own modules
    (a fork runs one as ``__main__``, which must not find it imported already)."""
    for name in sorted(FORKED):
        __import__(f"tests.servers.{name}")
    __import__(CONFORMANCE_CLIENT)
    for name in [name for name in sys.modules if name.startswith("tests.servers.") or name == CONFORMANCE_CLIENT]:
        package, _, attribute = name.rpartition(".")
        del sys.modules[name]
        with contextlib.suppress(AttributeError):
            delattr(sys.modules[package], attribute)


if __name__ == "__main__":
    forks = _Forks(socket.socket(fileno=int(sys.argv[1])))
    signal.signal(signal.SIGTERM, forks.stop)
    _preload()
    # What the preloading made goes out of the collector's sight: a fork's collections (while it runs
    # and when it exits) then walk only what the fork itself makes, and leave the shared pages unwritten.
    gc.freeze()
    wanted = forks.run()  # returns only in a fork
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _become_main(wanted)
