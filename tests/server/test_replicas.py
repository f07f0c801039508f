"""Replicas of ``mcpdeck serve`` for one config file, as a load balancer sees them: real processes sharing one
``MCPDECK_STATE_DIR``, one store and the token ``MCPDECK_TOKEN`` gives; each answers the balancer's health
checks without a token or a ``Host`` header, admits the balancer's name and no other, and lists every
replica's calls."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.helpers import ROOT, cli_environment, stdio_server
from tests.support.replicas import BALANCER, START, TOKEN, raw_get, replica

LIMIT = 150.0
"""Seconds the whole test may take: two processes starting take longer than ``TEST_LIMIT`` on a busy machine."""


def test_replicas_share_a_state_folder_and_a_token_and_list_each_other_s_calls(tmp_path: Path) -> None:
    async def bounded() -> None:
        with anyio.fail_after(LIMIT):
            await _two_replicas(tmp_path)

    anyio.run(bounded)


async def _two_replicas(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps({"mcpServers": {"basic": stdio_server("basic")}, "permissions": {"allow": ["mcp__basic"]}})
    )
    store = str(tmp_path / "fleet.sqlite3")
    async with (
        replica(tmp_path, config, "r1", "--store", store, "--replica-id", "r1", "--allowed-host", BALANCER) as r1,
        replica(
            tmp_path, config, "r2", MCPDECK_STORE=store, MCPDECK_REPLICA_ID="r2", MCPDECK_ALLOWED_HOSTS=BALANCER
        ) as r2,
    ):
        # One state file each in the shared folder; both take the token they were given.
        assert sorted(path.name.split(".")[1] for path in (tmp_path / "state").glob("*.json")) == ["r1", "r2"]
        assert (r1.state["token"], r2.state["token"], r1.state["replica"]) == (TOKEN, TOKEN, "r1")
        assert r1.state["port"] != r2.state["port"]

        # The health checks: no token, no Host header (HTTP/1.0 as HAProxy's httpchk sends it, and 1.1).
        for request in (b"GET /healthz HTTP/1.0\r\n\r\n", b"GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n"):
            assert await anyio.to_thread.run_sync(raw_get, r2.url, request) == (
                200,
                {"status": "alive", "replica": "r2"},
            )
        with anyio.fail_after(START):  # ready once `basic` has settled
            while (await anyio.to_thread.run_sync(raw_get, r1.url, b"GET /readyz HTTP/1.0\r\n\r\n"))[0] != 200:  # noqa: ASYNC110
                await anyio.sleep(0.1)

        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
            # The balancer's name is admitted, exactly; another name is refused (DNS rebinding stays shut).
            for one in (r1, r2):
                through = await http.get(f"{one.url}/api/servers", headers={"Host": BALANCER})
                assert through.status_code == 200, through.text
                for other in ("evil.test", "mcp.balancer.test", "x.mcp.balancer.test:8080"):
                    refused = await http.get(f"{one.url}/api/servers", headers={"Host": other})
                    assert (refused.status_code, refused.json()["error"]["code"]) == (421, "bad-host")
                    assert "--allowed-host NAME" in refused.json()["error"]["message"]  # how to admit a balancer

            # A call through r1's API, another through r2's gateway by the balancer's name: each replica lists both.
            made = await http.post(f"{r1.url}/api/tools/mcp__basic__echo/call", json={"arguments": {"text": "via r1"}})
            assert made.status_code == 200, made.text
            gateway = httpx2.AsyncClient(headers={**headers, "Host": BALANCER, "Origin": f"https://{BALANCER}"})
            async with gateway, Client(streamable_http_client(f"{r2.url}/mcp", http_client=gateway)) as client:
                with anyio.fail_after(START):
                    while "mcp__basic__echo" not in {tool.name for tool in (await client.list_tools()).tools}:  # noqa: ASYNC110
                        await anyio.sleep(0.1)
                result = await client.call_tool("mcp__basic__echo", {"text": "via r2"})
                assert not result.is_error
            for one in (r1, r2):
                listed = await http.get(f"{one.url}/api/history/calls", params={"server": "basic", "limit": 10})
                calls = {call["arguments"]["text"]: call for call in listed.json()["toolCalls"]}
                assert {text: (call["replica"], call["status"]) for text, call in calls.items()} == {
                    "via r1": ("r1", "ok"),
                    "via r2": ("r2", "ok"),
                }

        # A second process under a replica id that runs already is refused, and says how to run another.
        command = [sys.executable, "-m", "mcpdeck.cli", "--config", str(config), "serve", "--port", "0"]
        twin = await anyio.run_process(
            [*command, "--replica-id", "r1"],
            cwd=ROOT,
            env=cli_environment(tmp_path, MCPDECK_STATE_DIR=str(tmp_path / "state"), MCPDECK_HISTORY="off"),
            check=False,
        )
        said = " ".join(twin.stderr.decode().split())
        assert twin.returncode == 2, said
        assert f"already runs for {config} as replica 'r1' at {r1.url}" in said
        assert "run this one as another replica (--replica-id or $MCPDECK_REPLICA_ID)" in said
