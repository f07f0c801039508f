"""``mcpdeck auth``: a real authorization server, a real config file; ``login`` in a real process, the other
commands in this process (``tests.cli.inprocess``)."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import Process
from anyio.streams.text import TextReceiveStream

from mcpdeck import ServerState
from mcpdeck.auth import TokenStore
from tests.auth.oauth_server import SCOPE, OAuthSetup
from tests.auth.support import SERVER, HeadlessBrowser, host
from tests.cli.inprocess import mcpdeck
from tests.helpers import ROOT, WAIT

pytestmark = pytest.mark.anyio

LOGIN_HINT = f"needs authorization: run `mcpdeck auth login {SERVER}`"


class Cli:
    """Runs ``mcpdeck --config CONFIG ...`` with its data and logs in a temp dir."""

    def __init__(self, tmp_path: Path, setup: OAuthSetup):
        self.config = tmp_path / "mcp.json"
        self.config.write_text(json.dumps({"mcpServers": {SERVER: {"type": "http", "url": setup.mcp_url}}}))
        self.data = tmp_path / "data"
        self.logs = tmp_path / "logs"
        self.auth = self.data / "mcpdeck" / "auth"
        """Where ``platformdirs`` puts the token store with this ``XDG_DATA_HOME``."""
        self.env = {
            **os.environ,
            "XDG_DATA_HOME": str(self.data),
            "MCPDECK_LOG_DIR": str(self.logs),
            "MCPDECK_HISTORY": "off",
            "NO_COLOR": "1",
        }
        self.env.pop("MCPDECK_KEYRING", None)
        self.outputs: list[str] = []

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "mcpdeck.cli", "--config", str(self.config), *args]

    async def run(self, *args: str) -> tuple[int, str, str]:
        """Run to the end in this process (in a worker thread: the command runs its own event loop); return
        exit code, stdout, stderr."""
        arguments = ["--config", str(self.config), *args]
        with anyio.fail_after(WAIT * 2):
            done = await anyio.to_thread.run_sync(lambda: mcpdeck(arguments, env=self.env, cwd=ROOT))
        out, err = done.stdout, done.stderr
        self.outputs += [out, err]
        return done.returncode, out, err

    async def login(self, browser: HeadlessBrowser, *args: str) -> tuple[int, str, str]:
        """``auth login``, with ``browser`` following the URL it prints."""
        command = self.command("auth", "login", SERVER, "--no-browser", "--timeout", str(WAIT), *args)
        with anyio.fail_after(WAIT * 2):
            async with await anyio.open_process(command, env=self.env, cwd=ROOT) as process:
                err = await _until_url(process)
                url = next(word for word in err.split() if "/authorize?" in word)
                await browser.redirect(SERVER, url)
                code = await process.wait()
                assert process.stdout is not None and process.stderr is not None
                out = await _read_rest(process.stdout)
                err += await _read_rest(process.stderr)
        self.outputs += [out, err]
        return code, out, err


async def _until_url(process: Process) -> str:
    assert process.stderr is not None
    seen = ""
    async for chunk in TextReceiveStream(process.stderr):
        seen += chunk
        if "/authorize?" in seen and seen.rstrip(" ").endswith("\n"):
            return seen
    raise AssertionError(f"mcpdeck printed no authorization URL: {seen}")


async def _read_rest(stream: Any) -> str:
    return "".join([chunk async for chunk in TextReceiveStream(stream)])


def _files(folder: Path) -> list[Path]:
    return [path for path in folder.rglob("*") if path.is_file()] if folder.exists() else []


def _no_secret_in(cli: Cli, setup: OAuthSetup) -> None:
    printed = "".join(cli.outputs) + "".join(path.read_text(errors="replace") for path in _files(cli.logs))
    assert setup.provider.issued and not [value for value in setup.provider.issued if value in printed]


async def test_login_from_the_command_line_then_status_shows_expiry_and_scopes_only(
    oauth: OAuthSetup, tmp_path: Path
) -> None:
    cli = Cli(tmp_path, oauth)
    code, out, err = await cli.login(HeadlessBrowser())
    assert code == 0, err
    assert f"To authorize mcpdeck for {SERVER!r}, open this URL" in err
    assert f"Authorized {SERVER!r} with scopes: {SCOPE}" in out and "Connected: 2 tools." in out

    (record,) = _files(cli.auth)
    assert stat.S_IMODE(record.stat().st_mode) == 0o600
    assert stat.S_IMODE(record.parent.stat().st_mode) == 0o700

    code, out, _ = await cli.run("auth", "status", "--json")
    (entry,) = json.loads(out)["servers"]
    assert entry["state"] == "authorized" and entry["scopes"] == [SCOPE] and entry["refreshable"] is True
    assert entry["configured"] is True and entry["clientId"] in oauth.provider.clients
    code, out, _ = await cli.run("auth", "status")
    assert code == 0 and "authorized" in out and SCOPE in out
    _no_secret_in(cli, oauth)


async def test_list_get_and_tools_use_the_stored_tokens_and_never_show_them(oauth: OAuthSetup, tmp_path: Path) -> None:
    cli = Cli(tmp_path, oauth)
    code, out, _ = await cli.run("list")
    assert code == 0 and LOGIN_HINT in out
    assert oauth.provider.seen.registrations == 0

    async with host(oauth, TokenStore(cli.auth), cli.logs, HeadlessBrowser()) as h:  # logged in, as `auth login` does
        assert h.servers[SERVER].state is ServerState.CONNECTED
    code, out, _ = await cli.run("list")
    assert code == 0 and "1/1 connected" in out
    code, out, _ = await cli.run("get", SERVER, "--json")
    assert code == 0 and json.loads(out)["status"]["state"] == "connected"
    code, out, _ = await cli.run("tools", "--json")
    assert code == 0 and f"mcp__{SERVER}__whoami" in out
    _no_secret_in(cli, oauth)


async def test_logout_deletes_tokens_and_registration(oauth: OAuthSetup, tmp_path: Path) -> None:
    cli = Cli(tmp_path, oauth)
    async with host(oauth, TokenStore(cli.auth), cli.logs, HeadlessBrowser()) as h:
        assert h.servers[SERVER].state is ServerState.CONNECTED
    assert len(_files(cli.auth)) == 1

    code, out, _ = await cli.run("auth", "logout", SERVER)
    assert code == 0 and "Logged out" in out
    assert _files(cli.auth) == []
    code, out, _ = await cli.run("auth", "status", "--json")
    assert json.loads(out)["servers"][0]["state"] == "not logged in"
    code, out, _ = await cli.run("auth", "logout", SERVER)
    assert code == 0 and "Nothing was stored" in out


async def test_a_refused_login_exits_1_and_says_so(oauth: OAuthSetup, tmp_path: Path) -> None:
    cli = Cli(tmp_path, oauth)
    oauth.provider.deny = True
    code, _, err = await cli.login(HeadlessBrowser())
    assert code == 1
    assert "authorization was refused (access_denied: The user said no)" in err


async def test_login_after_the_authorization_server_forgot_the_client(oauth: OAuthSetup, tmp_path: Path) -> None:
    cli = Cli(tmp_path, oauth)
    assert (await cli.login(HeadlessBrowser()))[0] == 0
    oauth.provider.forget_clients()

    browser = HeadlessBrowser(strict=False)  # the user sees the server's error page, and gives up
    code, _, err = await cli.login(browser, "--timeout", "1")
    (shown,) = browser.errors
    assert shown.startswith("400") and "not found" in shown
    assert code == 1 and "no answer from the browser within 1 s" in err and f"mcpdeck auth logout {SERVER}" in err

    assert (await cli.run("auth", "logout", SERVER))[0] == 0
    code, out, err = await cli.login(HeadlessBrowser())
    assert code == 0, err
    assert "Authorized" in out and oauth.provider.seen.registrations == 2


async def test_login_refuses_servers_without_oauth(oauth: OAuthSetup, tmp_path: Path) -> None:
    cli = Cli(tmp_path, oauth)
    cli.config.write_text(
        json.dumps({"mcpServers": {SERVER: {"url": oauth.mcp_url, "oauth": False}, "local": {"command": "x"}}})
    )
    code, _, err = await cli.run("auth", "login", SERVER)
    assert code == 2 and "OAuth is off" in err
    code, _, err = await cli.run("auth", "login", "local")
    assert code == 2 and "stdio server" in err
    code, _, err = await cli.run("auth", "login", "nope")
    assert code == 2 and "no server named 'nope'" in err
