"""Start a test server as a fork of this worker's fork server: ``python -m tests.servers.launch SOCKET NAME ARGS...``.

What a host starts for a ``tests/servers/<MODULE>.py`` server in the suite (``tests.helpers.stdio_server``).
Importing the SDK costs a Python server ~0.7 s of CPU; the suite starts hundreds of them. This
launcher imports only the standard library: it hands its standard input, output and error to
the fork server (``tests/forks.py``, one per test process, the SDK already imported), which forks
a child that runs ``python -m tests.servers.<NAME> ARGS...`` on exactly those file descriptors.
The server reads and writes the host's pipes itself; this process only stands for it:

- it exits as the server did: with its status, or by the same signal;
- a signal it gets (the host's SIGTERM at shutdown, a SIGINT) goes on to the server's process group;
- when it dies (SIGKILL), the fork server kills the server's group at once.

``NAME`` is a module of ``tests/servers`` or the path of a script (``*.py``: the conformance client).
Without a fork server (none at ``SOCKET``, or a run by hand) it becomes the server itself:
``exec python -m tests.servers.<NAME> ARGS...`` (or ``exec python SCRIPT ARGS...``).
"""

from __future__ import annotations

import array
import json
import os
import signal
import socket
import sys

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)


def main(argv: list[str]) -> None:
    path, name, *args = argv
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(path)
    except FileNotFoundError:  # no fork server: be the server
        connection.close()
        target = [name] if name.endswith(".py") else ["-m", f"tests.servers.{name}"]
        os.execv(sys.executable, [sys.executable, *target, *args])
    request = json.dumps({"name": name, "args": args, "cwd": os.getcwd(), "env": dict(os.environ)}).encode()
    fds = array.array("i", [0, 1, 2])
    connection.sendmsg([len(request).to_bytes(4, "big"), request], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
    answers = connection.makefile("rb")
    pid = int(answers.readline())

    def forward(signum: int, _frame: object) -> None:
        try:
            os.killpg(pid, signum)
        except ProcessLookupError:
            pass

    for signum in FORWARDED:
        signal.signal(signum, forward)
    # The server has the pipes now: this process lets go of its copies, so that their ends are the server's.
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    status = int(answers.readline())
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


if __name__ == "__main__":
    main(sys.argv[1:])
