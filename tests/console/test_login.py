"""How a browser signs in, attacked as another local user and another loopback port would.

``mcpdeck ui`` gives the browser nothing that logs in on its command line, and the URL the
browser keeps signs nothing in when replayed. The browser holds no credential another port
on 127.0.0.1 is sent (cookies ignore ports): a listener there, visited and clicked through
to from a tool result, gets nothing it could use.
"""

from __future__ import annotations

import json
import stat
import subprocess
import sys
import threading
from collections.abc import Callable, Generator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import httpx2
import mcp_types as types
from mcp.server.mcpserver import MCPServer
from playwright.sync_api import BrowserContext, expect

from mcpdeck import Host
from tests.console.conftest import InProcess, ServeProcess, serve_environment, sign_in, stop_serve, watch_errors
from tests.helpers import ROOT, WAIT


def _ui(folder: Path, config: Path, env: dict[str, str]) -> ServeProcess:
    """``mcpdeck ui --port 0`` (the browser is ``$BROWSER``), once it listens."""
    command = [sys.executable, "-m", "mcpdeck.cli", "--config", str(config), "ui", "--port", "0"]
    process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    timer = threading.Timer(WAIT, process.kill)
    timer.start()
    try:
        for line in process.stdout:
            if "Press Ctrl-C" in line:
                break
    finally:
        timer.cancel()
    [state_file] = (folder / "state").glob("*.json")
    state = json.loads(state_file.read_text())
    return ServeProcess(process, state["url"], state["token"], config)


def test_ui_puts_nothing_that_logs_in_on_the_browsers_command_line_and_its_url_works_once(
    browser: BrowserContext, tmp_path: Path
) -> None:
    config = tmp_path / "mcp.json"
    config.write_text('{"mcpServers": {}}')
    argv = tmp_path / "browser-argv.txt"
    fake = tmp_path / "browser"  # stands for the browser: keeps the command line it was started with
    fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" >> "{argv}"\n')
    fake.chmod(0o755)
    env = {**serve_environment(tmp_path), "BROWSER": str(fake)}
    serving = _ui(tmp_path, config, env)
    try:
        command_line = argv.read_text()
        assert serving.token not in command_line
        assert "code" not in command_line
        [uri] = command_line.split()
        assert uri.startswith("file://")
        page_file = Path(unquote(urlsplit(uri).path))
        assert stat.S_IMODE(page_file.stat().st_mode) == 0o600  # only the user can read what it holds
        assert stat.S_IMODE(page_file.parent.stat().st_mode) == 0o700

        tab = browser.new_page()
        errors = watch_errors(tab)
        visited: list[str] = []
        tab.on("framenavigated", lambda frame: visited.append(frame.url) if frame == tab.main_frame else None)
        tab.goto(uri)  # what the browser does with its command line
        expect(tab.get_by_text("No servers yet.")).to_be_visible()
        assert tab.url == f"{serving.url}/#/servers"  # the code left the address bar
        kept = [url for url in visited if "#code=" in url]
        assert kept  # the URL the browser's history has

        for url in [*kept, uri]:  # replayed in a tab that is not signed in: nothing
            again = browser.new_page()
            again.goto(url)
            expect(again.get_by_role("heading", name="Not signed in")).to_be_visible()
            expect(again.locator("main")).to_contain_text("spent or expired")
            again.close()
        code = kept[0].split("#code=")[1]
        spent = httpx2.post(f"{serving.url}/api/session", json={"code": code}, headers={"origin": serving.url})
        assert spent.status_code == 401

        # `mcpdeck ui` again while it runs: another signed-in tab, the same way.
        done = subprocess.run(
            [sys.executable, "-m", "mcpdeck.cli", "--config", str(config), "ui"],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=WAIT * 2,
        )
        assert done.returncode == 0, done.stderr
        assert "already runs" in done.stdout
        lines = argv.read_text().split()
        assert lines == [uri, uri]
        assert serving.token not in argv.read_text()
        second = browser.new_page()
        second.goto(uri)
        expect(second.get_by_text("No servers yet.")).to_be_visible()
        assert errors == []
    finally:
        stop_serve(serving)
    assert not page_file.exists()  # removed with the state file


class _Recorder(BaseHTTPRequestHandler):
    """Another local service on another loopback port: keeps what every request carries."""

    seen: list[dict[str, str]]

    def do_GET(self) -> None:
        self.seen.append({"path": self.path, **{k.lower(): v for k, v in self.headers.items()}})
        body = b"<!doctype html><title>elsewhere</title><p>another service</p>"
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def recorder() -> Generator[tuple[str, list[dict[str, str]]]]:
    seen: list[dict[str, str]] = []
    handler = type("Recorder", (_Recorder,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def test_another_loopback_port_gets_no_credential_after_a_visit_and_a_click(
    browser: BrowserContext, in_process: Callable[[Callable[[Host], Any]], InProcess]
) -> None:
    with recorder() as (elsewhere, seen):

        async def a_server_with_a_link(host: Host) -> None:
            server = MCPServer("links", version="1.0")

            def report() -> list[types.ContentBlock]:
                return [types.ResourceLink(type="resource_link", uri=f"{elsewhere}/clicked", name="the report")]

            server.add_tool(report, name="report")
            await host.add_server("links", server, save=False)

        served = in_process(a_server_with_a_link)
        page = browser.new_page()
        sign_in(page, served.url, served.token)
        page.goto(f"{served.url}/#/tools/mcp__links__report")
        panel = page.locator(".panel")
        panel.get_by_role("button", name="Call").click()
        with page.context.expect_page() as opened:
            panel.locator(".result").get_by_role("link").click()
        opened.value.wait_for_load_state()
        opened.value.close()
        page.goto(f"{elsewhere}/visited")  # the same tab, straight from the console
        expect(page.get_by_text("another service")).to_be_visible()

        assert sorted(request["path"] for request in seen if request["path"] != "/favicon.ico") == [
            "/clicked",
            "/visited",
        ]
        for request in seen:
            assert "cookie" not in request
            assert "authorization" not in request
            assert served.url not in request.get("referer", "")
            # Whatever it got, sent on to mcpdeck as it came, opens nothing.
            headers = {k: v for k, v in request.items() if k not in ("path", "host", "content-length")}
            replayed = httpx2.get(f"{served.url}/api/servers", headers=headers, timeout=WAIT)
            assert replayed.status_code == 401
