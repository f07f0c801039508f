"""The gateway command's checks: tokens from the config, what it refuses to do."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mcpdeck import Host
from mcpdeck.cli._gateway import gateway_tokens, serve_http
from mcpdeck.errors import ConfigError
from mcpdeck.gateway import GatewayToken
from tests.helpers import ROOT

pytestmark = pytest.mark.anyio


def test_named_tokens_come_from_the_config_with_variables_expanded() -> None:
    doc = {"gateway": {"tokens": {"laptop": {"token": "${T1}"}, "ci": {"token": "${T2}", "profile": "coding"}}}}
    tokens = gateway_tokens(doc, {"T1": "s3cret-1", "T2": "s3cret-2"})
    assert tokens == {"laptop": GatewayToken("s3cret-1"), "ci": GatewayToken("s3cret-2", "coding")}
    assert "s3cret" not in repr(tokens["laptop"])  # a secret is never printed
    with pytest.raises(ConfigError, match=r"gateway.tokens.bad: give \"token\""):
        gateway_tokens({"gateway": {"tokens": {"bad": {"profile": "x"}}}}, {})
    with pytest.raises(ConfigError, match="T3"):
        gateway_tokens({"gateway": {"tokens": {"x": {"token": "${T3}"}}}}, {})


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
