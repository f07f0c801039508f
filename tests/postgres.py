"""A real PostgreSQL 15 for the tests and the bench: started in a folder of its own, on a free port, torn down after.

The binaries are Debian's (``/usr/lib/postgresql/15/bin``, ``$MCPDECK_PG_BIN`` elsewhere). PostgreSQL refuses
to run as root, so as root (the tests and CI run so) ``initdb`` and ``postgres`` run as the user ``postgres``
(``runuser``), in a temporary folder that user owns; the unix socket lies in that folder too. Each test gets
a database of its own (``database``), dropped after it.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from psycopg import sql

__all__ = ["PG_BIN", "Postgres", "running_postgres"]

PG_BIN = Path(os.environ.get("MCPDECK_PG_BIN", "/usr/lib/postgresql/15/bin"))
START = 60.0
"""Seconds PostgreSQL gets to accept connections after it is started."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _as_postgres(command: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


@dataclass
class Postgres:
    """A running PostgreSQL: ``url(db)`` is a database's URL (user ``postgres``, no password, TCP on 127.0.0.1)."""

    folder: Path
    port: int
    process: subprocess.Popen[bytes]
    _numbers: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    @contextlib.contextmanager
    def database(self) -> Generator[str]:
        """A new, empty database for one test: its URL; dropped after (with whoever is still connected)."""
        name = f"t{os.getpid()}_{next(self._numbers)}"
        with psycopg.connect(self.url(), autocommit=True) as admin:
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        try:
            yield self.url(name)
        finally:
            with psycopg.connect(self.url(), autocommit=True) as admin:
                admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@contextlib.contextmanager
def running_postgres(*, durable: bool = False) -> Generator[Postgres]:
    """Start PostgreSQL 15 in a temporary folder; stop it and remove the folder at the end.

    ``durable``: commits are flushed to the disk as in production (``fsync``); off, the tests run faster.

    Raises:
        RuntimeError: The binaries are missing, or it did not start within ``START`` seconds (its log is quoted).
    """
    if not (PG_BIN / "postgres").exists():
        raise RuntimeError(f"PostgreSQL 15 is not installed at {PG_BIN} (apt-get install postgresql-15)")
    folder = Path(tempfile.mkdtemp(prefix="mcpdeck-pg-"))
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    data, log = folder / "data", folder / "log"
    process: subprocess.Popen[bytes] | None = None
    try:
        subprocess.run(
            _as_postgres([str(PG_BIN / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust", "--no-sync"]),
            check=True,
            capture_output=True,
            timeout=START,
        )
        port = _free_port()
        settings = ["-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={folder}", "-p", str(port)]
        if not durable:
            settings += ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"]
        with open(log, "wb") as out:
            process = subprocess.Popen(
                _as_postgres([str(PG_BIN / "postgres"), "-D", str(data), *settings]),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        server = Postgres(folder, port, process)
        deadline = time.monotonic() + START
        while True:  # a wait for the server itself, bounded: it accepts connections, or it died, or time is up
            try:
                psycopg.connect(server.url(), connect_timeout=2).close()
                break
            except psycopg.OperationalError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"PostgreSQL did not start: {log.read_text(errors='replace')[-2000:]}") from None
                time.sleep(0.05)
        yield server
    finally:
        if process is not None:
            # "fast" shutdown: connections closed, no wait for clients; to the group, since runuser does not
            # pass the signal on
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGINT)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        shutil.rmtree(folder, ignore_errors=True)
