"""Fixtures: the basic test server over every transport, and a host connected to it."""

from __future__ import annotations

import functools
import inspect
import logging
import os
import shutil
import signal
import tempfile
from collections.abc import AsyncIterator, Generator
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpdeck import Host
from tests import forks
from tests.helpers import ROOT, BasicServer, serve_asgi, stdio_server
from tests.postgres import Postgres, running_postgres
from tests.servers.basic import build_server

TRANSPORTS = ["in-process", "stdio", "http", "sse"]
TEST_LIMIT = 120.0
"""No async test may run longer than this: a hang fails that test instead of stalling the run. Several
``WAIT``s fit in it (a test that starts a ``serve`` on a busy machine spends one of them on that alone)."""


def pytest_configure(config: pytest.Config) -> None:
    """Give this test process (each xdist worker has its own) fresh user folders (``XDG_*_HOME``).

    What a test does not place itself (the default log folder, history, tokens) goes there, not to
    the folders of whoever runs the suite, and two workers never share those files. mcpdeck's own
    defaults find them as they find a user's.
    """
    home = tempfile.mkdtemp(prefix="mcpdeck-tests-")
    config.add_cleanup(functools.partial(shutil.rmtree, home, ignore_errors=True))
    for kind in ("CONFIG", "DATA", "STATE", "CACHE"):
        os.environ[f"XDG_{kind}_HOME"] = os.path.join(home, kind.lower())
    # Ctrl-C reaches the processes the tests start as it does at a terminal, even when this run was started
    # with SIGINT ignored (a background job of a script): an ignored signal is inherited, a handler is not.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    # pytest-xdist sets an 80-column terminal in its workers; output is as wide as a pipe gets without it.
    for name in ("COLUMNS", "LINES"):
        os.environ.pop(name, None)


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Generator[None, object, object]:
    """Run every async test body under ``anyio.fail_after(TEST_LIMIT)``."""
    test = pyfuncitem.obj
    if inspect.iscoroutinefunction(test):

        @functools.wraps(test)
        async def bounded(**kwargs: Any) -> Any:
            with anyio.fail_after(TEST_LIMIT):
                return await test(**kwargs)

        pyfuncitem.obj = bounded
    try:
        return (yield)
    finally:
        pyfuncitem.obj = test


@pytest.fixture(autouse=True)
def _own_log_handlers() -> Generator[None]:
    """Take away the log handlers a test left on the root logger (a CLI command run in the test process
    installs one on the stderr of that run; left there, a later run in the same process would print its
    warnings to a stream nobody reads)."""
    root = logging.getLogger()
    before = list(root.handlers)
    yield
    for handler in list(root.handlers):
        if handler not in before:
            root.removeHandler(handler)


@pytest.fixture(scope="session", autouse=True)
def _fork_server() -> Generator[None]:
    """This test process's fork server, which starts the Python test servers (``tests/forks.py``)."""
    with forks.serving(ROOT):
        yield


@pytest.fixture(scope="session")
def postgres() -> Generator[Postgres]:
    """This test process's PostgreSQL 15 (``tests/postgres.py``), started when a test first asks for it."""
    with running_postgres() as server:
        yield server


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Generator[str]:
    """A new, empty store, once on each database: a SQLite file, then a PostgreSQL database of its own."""
    if request.param == "sqlite":
        yield str(tmp_path / "history.sqlite3")
        return
    server: Postgres = request.getfixturevalue("postgres")
    with server.database() as url:
        yield url


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module", params=TRANSPORTS)
async def basic_server(request: pytest.FixtureRequest) -> AsyncIterator[BasicServer]:
    """The same basic server over each transport: in-process, stdio, streamable HTTP and SSE."""
    transport: str = request.param
    if transport == "in-process":
        yield BasicServer(transport, build_server())
    elif transport == "stdio":
        yield BasicServer(transport, stdio_server("basic"))
    elif transport == "http":
        async with serve_asgi(build_server().streamable_http_app()) as base:
            yield BasicServer(transport, {"type": "http", "url": f"{base}/mcp"})
    else:
        async with serve_asgi(build_server().sse_app()) as base:
            yield BasicServer(transport, {"type": "sse", "url": f"{base}/sse"})


@pytest.fixture(scope="module")
async def basic_host(basic_server: BasicServer, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Host]:
    """An open host whose one server, ``basic``, is the basic server over the fixture's transport."""
    async with Host({"basic": basic_server.spec}, log_dir=tmp_path_factory.mktemp("logs")) as host:
        yield host


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    """Where a test's hosts write server logs."""
    return tmp_path / "logs"


@pytest.fixture(scope="module")
async def http_url() -> AsyncIterator[str]:
    """The URL of a basic server that speaks only streamable HTTP."""
    async with serve_asgi(build_server().streamable_http_app()) as base:
        yield f"{base}/mcp"


@pytest.fixture(scope="module")
async def sse_url() -> AsyncIterator[str]:
    """The URL of a basic server that speaks only SSE."""
    async with serve_asgi(build_server().sse_app()) as base:
        yield f"{base}/sse"
