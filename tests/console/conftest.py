"""The console in a real browser: Debian's Chromium driven by Playwright (sync API), against
a real ``mcpdeck serve`` process (or, for the 50-server load, the same app in a thread with
in-process servers).

One browser per test module. Chromium comes from the system (``/usr/bin/chromium``, installed
by ``scripts/setup-tests``, which ``scripts/test`` runs), never from ``playwright install``.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Generator, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import httpx2
import pytest
import uvicorn
from playwright.sync_api import BrowserContext, Page, expect, sync_playwright

from mcpdeck import Host
from mcpdeck.api import ApiContext
from mcpdeck.config import ConfigStore
from mcpdeck.server._app import build_app
from tests.helpers import ROOT, WAIT, descendants, kill

CHROMIUM = Path(os.environ.get("MCPDECK_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WAIT_MS = WAIT * 1000
expect.set_options(timeout=WAIT_MS)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrowserContext]:
    """One Chromium for the module, with a fresh profile folder."""
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: run scripts/setup-tests (it installs Debian's chromium when run as root)")
    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile),
            executable_path=str(CHROMIUM),
            args=CHROMIUM_ARGS,
            headless=True,
            viewport={"width": 1280, "height": 800},
        )
        context.set_default_timeout(WAIT_MS)
        try:
            yield context
        finally:
            context.close()


@dataclass
class Console:
    """A running ``mcpdeck serve`` and a browser tab on its console."""

    url: str
    token: str
    config: Path
    page: Page
    errors: list[str] = field(default_factory=list[str])
    pid: int | None = None
    """The ``mcpdeck serve`` process (None for the in-process app)."""

    def open(self, route: str = "#/servers") -> Page:
        sign_in(self.page, self.url, self.token)
        self.page.goto(f"{self.url}/{route}")
        return self.page

    def config_file(self) -> dict[str, Any]:
        return json.loads(self.config.read_text())


def login_link(url: str, token: str) -> str:
    """A one-time link that signs one browser tab in to the console at ``url`` (as ``mcpdeck ui`` makes)."""
    answer = httpx2.post(f"{url}/api/login", headers={"Authorization": f"Bearer {token}"}, timeout=WAIT)
    assert answer.status_code == 200, answer.text
    return f"{url}/#code={answer.json()['code']}"


def sign_in(page: Page, url: str, token: str) -> None:
    """Sign ``page`` in with a one-time link, and wait until its session is kept."""
    page.goto(login_link(url, token))
    page.wait_for_function("() => sessionStorage.getItem('mcpdeck-session') !== null")


def watch_errors(page: Page) -> list[str]:
    """Page errors and console errors (a CSP violation shows up here too)."""
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(f"pageerror: {error}"))
    page.on("console", lambda message: errors.append(f"console: {message.text}") if message.type == "error" else None)
    return errors


def serve_environment(folder: Path, environment: dict[str, str | None] | None = None) -> dict[str, str]:
    """The environment of a test's ``serve``: its files in ``folder``; ``environment`` sets more (None: unsets)."""
    changed = environment or {}
    return {
        **{key: value for key, value in os.environ.items() if key not in changed},
        **{key: value for key, value in changed.items() if value is not None},
        "MCPDECK_STATE_DIR": str(folder / "state"),
        "MCPDECK_LOG_DIR": str(folder / "logs"),
        "MCPDECK_HISTORY": str(folder / "history.sqlite3"),
        "MCPDECK_DATA_DIR": str(folder / "data"),  # OAuth tokens stay in the test's folder
        "NO_COLOR": "1",
    }


@dataclass
class ServeProcess:
    process: subprocess.Popen[str]
    url: str
    token: str
    config: Path


def start_serve(
    folder: Path, servers: dict[str, Any], environment: dict[str, str | None] | None = None, **extra: Any
) -> ServeProcess:
    """``mcpdeck serve --port 0`` for a config of ``servers`` (and ``extra`` top-level keys), once it listens;
    ``environment`` changes its environment variables (None unsets one)."""
    config = folder / "mcp.json"
    config.write_text(json.dumps({"mcpServers": servers, **extra}, indent=2))
    command = [sys.executable, "-m", "mcpdeck.cli", "--config", str(config), "serve", "--port", "0"]
    errors = (folder / "serve-stderr.txt").open("w")
    process = subprocess.Popen(
        command, env=serve_environment(folder, environment), cwd=ROOT, stdout=subprocess.PIPE, stderr=errors, text=True
    )
    errors.close()
    assert process.stdout is not None
    seen: list[str] = []
    timer = threading.Timer(WAIT, process.kill)  # a serve that never gets ready cannot hang the test
    timer.start()
    try:
        for line in process.stdout:
            seen.append(line)
            if "Press Ctrl-C" in line:
                break
    finally:
        timer.cancel()
    replica = (environment or {}).get("MCPDECK_REPLICA_ID")  # replicas of one config share the state folder
    states = list((folder / "state").glob(f"*.{replica}.json" if replica else "*.json"))
    assert len(states) == 1, f"mcpdeck serve did not start: {''.join(seen)} {(folder / 'serve-stderr.txt').read_text()}"
    state = json.loads(states[0].read_text())
    return ServeProcess(process, state["url"], state["token"], config)


def stop_serve(serving: ServeProcess) -> None:
    serving.process.send_signal(signal.SIGTERM)
    try:
        serving.process.wait(timeout=WAIT)
    except subprocess.TimeoutExpired:
        kill(descendants(serving.process.pid) | {serving.process.pid})
        serving.process.wait(timeout=WAIT)
    assert serving.process.stdout is not None
    serving.process.stdout.close()


@pytest.fixture
def console_for(browser: BrowserContext, tmp_path: Path) -> Iterator[Callable[..., Console]]:
    """Start ``mcpdeck serve`` for some servers and open a tab on its console."""
    started: list[tuple[ServeProcess, Page]] = []

    def start(servers: dict[str, Any], environment: dict[str, str | None] | None = None, **extra: Any) -> Console:
        serving = start_serve(tmp_path, servers, environment, **extra)
        page = browser.new_page()
        errors = watch_errors(page)
        started.append((serving, page))
        return Console(serving.url, serving.token, serving.config, page, errors, serving.process.pid)

    yield start
    for serving, page in started:
        page.close()
        stop_serve(serving)


# ----- the same app in a thread, for servers that only exist in-process ----------------------


@dataclass
class InProcess:
    """``build_app`` for a host served by uvicorn in a thread of this process."""

    url: str
    token: str
    host: Host
    portal: anyio.from_thread.BlockingPortal

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run ``fn(*args)`` (a coroutine function) on the server's event loop and return its result."""
        return self.portal.call(fn, *args)


@contextmanager
def serve_in_process(folder: Path, setup: Callable[[Host], Any]) -> Generator[InProcess]:
    """Serve the console and API, in a thread of this process, for a host that ``setup(host)``
    (a coroutine function) fills; its files go in ``folder``."""
    config = folder / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {}}))
    store = ConfigStore(config)
    token = "console-test-token-" + "y" * 24
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port: int = sock.getsockname()[1]
    host = Host(store=store, log_dir=folder / "logs")
    stop = threading.Event()
    ready = threading.Event()

    async def run() -> None:
        async with host:
            await setup(host)
            ctx = ApiContext(host=host, store=store)
            off = ctx.attach()
            app = build_app(ctx, token=token, hosts={f"127.0.0.1:{port}"})
            server = uvicorn.Server(
                uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", timeout_graceful_shutdown=2)
            )
            async with anyio.create_task_group() as tg:
                tg.start_soon(server.serve, [sock])
                ready.set()
                await anyio.to_thread.run_sync(stop.wait)
                ctx.stop()
                server.should_exit = True
            off()

    with sock, anyio.from_thread.start_blocking_portal() as portal:
        future = portal.start_task_soon(run)
        assert ready.wait(WAIT * 4), "the in-process console did not start"
        try:
            yield InProcess(f"http://127.0.0.1:{port}", token, host, portal)
        finally:
            stop.set()
            future.result(timeout=WAIT)


@pytest.fixture
def in_process(tmp_path: Path) -> Iterator[Callable[[Callable[[Host], Any]], InProcess]]:
    """Serve the console and API for a host that ``setup(host)`` (a coroutine function) fills."""
    with ExitStack() as stack:
        yield lambda setup: stack.enter_context(serve_in_process(tmp_path, setup))
