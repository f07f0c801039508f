"""The gateway command's checks: tokens from the config, what it refuses to do."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from mcpdeck import Host
from mcpdeck.cli._gateway import gateway_tokens, serve_http
from mcpdeck.config import parse_document
from mcpdeck.errors import ConfigError
from mcpdeck.gateway import GatewayToken
from tests.cli.inprocess import mcpdeck
from tests.helpers import ROOT, cli_environment, stdio_server

pytestmark = pytest.mark.anyio


def test_named_tokens_come_from_the_config_with_variables_expanded() -> None:
    doc = {"gateway": {"tokens": {"laptop": {"token": "${T1}"}, "ci": {"token": "${T2}", "profile": "coding"}}}}
    tokens = gateway_tokens(parse_document(doc), {"T1": "s3cret-1", "T2": "s3cret-2"})
    assert tokens == {"laptop": GatewayToken("s3cret-1"), "ci": GatewayToken("s3cret-2", "coding")}
    assert "s3cret" not in repr(tokens["laptop"])  # a secret is never printed
    with pytest.raises(ConfigError, match=r"gateway.tokens.bad: give \"token\""):
        gateway_tokens(parse_document({"gateway": {"tokens": {"bad": {"profile": "x"}}}}), {})
    with pytest.raises(ConfigError, match="T3"):
        gateway_tokens(parse_document({"gateway": {"tokens": {"x": {"token": "${T3}"}}}}), {})


async def test_serving_beyond_loopback_without_a_token_is_refused(log_dir: Path) -> None:
    async with Host({}, log_dir=log_dir) as host:
        with pytest.raises(ConfigError, match="needs a token"):
            await serve_http(host, address="0.0.0.0", port=0)


def test_the_command_needs_stdio_or_a_port(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text("{}")
    done = subprocess.run(
        [sys.executable, "-m", "mcpdeck.cli", "--config", str(config), "gateway"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "give --stdio or --port N" in done.stderr


def test_a_port_in_use_is_one_line_and_a_nonzero_exit(tmp_path: Path) -> None:
    """It was an exception group's traceback of 73 lines (the port was bound inside the running host)."""
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"basic": stdio_server("basic")}}))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = mcpdeck(
            ["--config", str(config), "gateway", "--port", str(port), "--no-token"], env=cli_environment(tmp_path)
        )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"Error: port {port} on 127.0.0.1 is in use; pick another with --port (or --port 0 for any)"
    ]


@pytest.mark.parametrize("command", ["serve", "gateway"])
def test_an_entry_for_a_config_that_does_not_exist_says_so(tmp_path: Path, command: str) -> None:
    """Without ``--config`` the entry names the default file; if it is not there, the gateway the client starts
    stops at once, and the client's log is the only place that says why."""
    env = cli_environment(tmp_path, MCPDECK_HOME=str(tmp_path / "home"))
    missing = mcpdeck([command, "--print-client-config", "claude-desktop"], env=env)
    default = tmp_path / "home" / "mcp.json"
    default.parent.mkdir()
    default.write_text("{}")
    present = mcpdeck([command, "--print-client-config", "claude-desktop"], env=env)
    assert missing.returncode == 0 and json.loads(missing.stdout)["mcpServers"]["mcpdeck"]["args"][1] == str(default)
    assert f"{default} does not exist yet" in missing.stderr
    assert f"`mcpdeck --config {default} add NAME -- COMMAND [ARGS...]`" in missing.stderr
    assert present.returncode == 0 and present.stderr == ""
