"""Secrets stay secret in every output, and what mcpdeck writes is private (the CLI in this process, real files)."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import threading
from collections.abc import Generator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from mcpdeck.connection._server_log import ROTATE_BYTES, ServerLogFile
from mcpdeck.history import History
from tests.cli.inprocess import mcpdeck
from tests.helpers import cli_environment, stdio_server

ROOT = Path(__file__).resolve().parents[2]
BASIC = stdio_server("basic")
KEY = "k3y-value-from-env-91"
TENANT = "tenant-from-env-77"
PASSWORD = "pw-from-env-55"
LITERAL = "literal-query-secret-13"


def run(
    config: Path, *args: str, env: dict[str, str] | None = None, drop: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """``mcpdeck --config CONFIG ARGS`` in this process, without the variables in ``drop``."""
    environ = cli_environment(config.parent, **(env or {}))
    for name in drop:
        environ.pop(name, None)
    umask = os.umask(0o022)  # the usual umask: files would be world-readable by default
    try:
        return mcpdeck(["--config", str(config), *args], env=environ, cwd=ROOT)
    finally:
        os.umask(umask)


class _Refuse(BaseHTTPRequestHandler):
    """Every request gets a 500: the host's error names the URL it tried."""

    def _refuse(self) -> None:
        self.send_response(500)
        self.send_header("content-length", "0")
        self.end_headers()

    do_GET = do_POST = do_DELETE = _refuse

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def refusing_url() -> Generator[str]:
    """A real HTTP server on 127.0.0.1 that answers 500 to everything."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Refuse)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_secret_expanded_into_a_url_is_in_no_output(tmp_path: Path, refusing_url: str) -> None:
    config = tmp_path / "mcp.json"
    url = f"http://user:${{PASS}}@{refusing_url}/${{TENANT}}/mcp?api_key=${{KEY}}&plain={LITERAL}"
    servers = {"s": {"type": "http", "url": url}, "basic": BASIC}
    config.write_text(json.dumps({"mcpServers": servers}))
    env = {"KEY": KEY, "TENANT": TENANT, "PASS": PASSWORD}
    commands = [
        ["list"],
        ["list", "--json"],
        ["get", "s"],
        ["get", "s", "--json"],
        ["test", "s"],
        ["test", "s", "--json"],
        ["call", "mcp__s__anything"],
        ["add", "t", "--url", url],
        ["add", "u", "--url", f"http://{refusing_url}/mcp?token={LITERAL}", "--type", "http"],
    ]

    def go(args: list[str]) -> subprocess.CompletedProcess[str]:
        return run(config, *args, env=env)

    done = [go(args) for args in commands]
    for args, result in zip(commands, done, strict=True):
        output = result.stdout + result.stderr
        for secret in (KEY, TENANT, PASSWORD, LITERAL):
            assert secret not in output, (args, output)
        assert "Traceback" not in output, output
    failed = done[0].stdout
    assert "HTTP 500 from http://user:****@" in failed and "api_key=****" in failed  # the error still says where
    assert "${TENANT}" in done[2].stdout  # the config shows the reference, not its value
    logs = "".join(p.read_text() for p in (tmp_path / "logs").glob("*.log"))
    assert KEY not in logs and TENANT not in logs


def test_get_and_list_mask_arguments_and_env_unless_asked(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    # Started directly: ``list`` shows the command line, which the fork server's launcher would push out of its column.
    server = stdio_server(
        "basic", "--api-key", "sk-live-0123456789", "--note", "two words", direct=True, env={"MODE": "fast-mode-1"}
    )
    config.write_text(json.dumps({"mcpServers": {"basic": server}}))

    def go(args: list[str]) -> subprocess.CompletedProcess[str]:
        return run(config, *args)

    masked, listed, shown = map(
        go, [["get", "basic", "--json"], ["list"], ["get", "basic", "--json", "--show-secrets"]]
    )
    data = json.loads(masked.stdout)
    assert data["config"]["args"][-4:] == ["--api-key", "sk-…****", "--note", "two words"]
    assert data["config"]["env"] == {"MODE": "fas…****"}
    assert "sk-live-0123456789" not in masked.stdout + listed.stdout
    assert "--api-key sk-…****" in listed.stdout
    revealed = json.loads(shown.stdout)
    assert revealed["config"]["args"][-3] == "sk-live-0123456789"
    assert revealed["config"]["env"] == {"MODE": "fast-mode-1"}
    # Both command lines as a shell would read them back.
    assert data["status"]["target"].endswith("--api-key sk-…**** --note 'two words'")
    assert revealed["status"]["target"].endswith("--api-key sk-live-0123456789 --note 'two words'")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_history_and_logs_are_private_and_keep_no_expanded_value(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"basic": {**BASIC, "env": {"SERVICE_TOKEN": "${TOK}"}}}}))
    env = {"XDG_DATA_HOME": str(tmp_path / "data"), "XDG_STATE_HOME": str(tmp_path / "state"), "TOK": KEY}
    done = run(
        config,
        "call",
        "mcp__basic__echo",
        "--args",
        json.dumps({"text": f"the token is {KEY}"}),
        env=env,
        drop=("MCPDECK_HISTORY", "MCPDECK_LOG_DIR"),
    )
    assert done.returncode == 0, done.stderr
    database = tmp_path / "data" / "mcpdeck" / "history.sqlite3"
    log = tmp_path / "state" / "mcpdeck" / "log" / "servers" / "basic.log"
    assert mode(database) == 0o600 and mode(database.parent) == 0o700
    assert mode(log) == 0o600 and mode(log.parent) == 0o700
    for folder in (tmp_path / "data", tmp_path / "state" / "mcpdeck", tmp_path / "state" / "mcpdeck" / "log"):
        assert mode(folder) == 0o700, folder  # created by mcpdeck: private too
    with sqlite3.connect(database) as db:
        (arguments,) = db.execute("SELECT arguments FROM tool_calls").fetchone()
    assert json.loads(arguments) == {"text": "the token is ****"}
    assert KEY.encode() not in database.read_bytes()


def test_the_history_database_and_its_wal_files_are_private_while_open(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        path = tmp_path / "h" / "history.sqlite3"
        with History(path) as history:
            history.start_conversation(model="m", title="t")
            files = [path, path.with_name("history.sqlite3-wal"), path.with_name("history.sqlite3-shm")]
            assert all(file.exists() for file in files)
            assert [mode(file) for file in files] == [0o600, 0o600, 0o600]
        assert mode(path.parent) == 0o700
    finally:
        os.umask(old)


def test_a_history_file_left_readable_is_made_private_in_a_folder_left_as_it_is(tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    os.chmod(folder, 0o755)
    path = folder / "history.sqlite3"
    path.touch()
    os.chmod(path, 0o644)
    History(path).close()
    assert mode(path) == 0o600
    assert mode(folder) == 0o755  # a folder the user named may hold other things: not mcpdeck's to change


def test_server_logs_and_their_rotations_are_private(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        folder = tmp_path / "logs"
        folder.mkdir(mode=0o755)
        path = folder / "s.log"
        path.write_bytes(b"x" * (ROTATE_BYTES + 1))
        os.chmod(path, 0o644)  # as an older mcpdeck left it
        log = ServerLogFile(path)
        with log.stderr("s", "cmd") as handle:
            handle.write(b"hello\n")
        log.write("a note")
        assert mode(folder) == 0o700
        assert mode(path) == 0o600
        assert mode(path.with_suffix(".log.1")) == 0o600
        fresh = ServerLogFile(tmp_path / "new" / "r.log")
        fresh.write("first line")
        assert mode(tmp_path / "new" / "r.log") == 0o600 and mode(tmp_path / "new") == 0o700
    finally:
        os.umask(old)


def test_add_with_a_secret_typed_out_says_it_is_saved_in_clear_and_how_to_keep_it_in_the_environment(
    tmp_path: Path,
) -> None:
    config = tmp_path / "mcp.json"
    token = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
    added = run(config, "add", "gh", "--no-connect", "--env", f"GITHUB_TOKEN={token}", "--env", "MODE=fast", "--", "gh")
    assert added.returncode == 0, added.stderr
    assert token not in added.stderr  # the hint names the variable, never its value
    assert "hint: env GITHUB_TOKEN looks like a secret, saved in clear in" in added.stderr
    assert "--env 'GITHUB_TOKEN=${GITHUB_TOKEN}'" in added.stderr
    assert "from the environment of `mcpdeck serve`" in added.stderr
    assert "MODE" not in added.stderr
    # Doing as it says: the file keeps the name, and the value comes from the environment.
    again = run(config, "add", "gh", "--force", "--no-connect", "--env", "GITHUB_TOKEN=${GITHUB_TOKEN}", "--", "gh")
    assert again.returncode == 0 and again.stderr == "", again.stderr
    assert json.loads(config.read_text())["mcpServers"]["gh"]["env"] == {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}
    header = '{"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer sk-abcdefghijklmnop1234"}}'
    remote = run(config, "add-json", "web", header, "--no-connect")
    assert remote.returncode == 0, remote.stderr
    assert '"Authorization": "Bearer ${WEB_TOKEN}" in its "headers"' in remote.stderr
