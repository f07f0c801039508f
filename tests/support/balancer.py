"""A real HAProxy in front of ``mcpdeck serve`` replicas, configured as docs/fleet.md shows; its view of them.

``haproxy(folder, {"r1": port, ...})`` runs it in the foreground with a config of its own and yields its port
and its stats port; ``until_states`` waits for its health checks to see each replica ``UP`` or ``DOWN``.
Every answer it relays says which replica answered (``X-Mcpdeck-Replica``), so a test knows where a request
without a session went.
"""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx2

from tests.helpers import descendants, kill
from tests.support.replicas import START

__all__ = ["HAPROXY", "REPLICA_HEADER", "free_port", "haproxy", "haproxy_config", "server_states", "until_states"]

HAPROXY = os.environ.get("MCPDECK_HAPROXY", "/usr/sbin/haproxy")
"""scripts/setup-tests installs it (Debian's ``haproxy``) when it is missing."""
REPLICA_HEADER = "x-mcpdeck-replica"
"""The header HAProxy adds to each answer: the name of the server (replica) that gave it."""

HAPROXY_CONFIG = """\
global
    maxconn 256

defaults
    mode http
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    # A health check's whole time (default: "inter", 300 ms below). A busy replica answers a check slowly
    # and would be marked down, its sessions sent elsewhere (404); a dead one refuses at once.
    timeout check 5s
    # Only a connection that never opened is tried again (the request never reached a replica);
    # a POST that may have run is never sent twice.
    retries 2
    retry-on conn-failure
    option redispatch 1

frontend mcp
    bind 127.0.0.1:{port}
    default_backend replicas

backend replicas
    balance roundrobin
    option httpchk GET /healthz
    http-check expect status 200
    http-request disable-l7-retry if METH_POST
    # Which replica answered (%s: the server's name), for logs and debugging.
    http-response set-header X-Mcpdeck-Replica %s
    # A handshake-era session lives in its replica's memory: its id names the replica.
{rules}
{servers}

listen stats
    bind 127.0.0.1:{stats}
    stats enable
    stats uri /stats
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def haproxy_config(port: int, stats: int, replicas: dict[str, int]) -> str:
    rules = "\n".join(f"    use-server {name} if {{ req.hdr(mcp-session-id) -m beg {name}. }}" for name in replicas)
    servers = "\n".join(
        f"    server {name} 127.0.0.1:{at} check inter 300ms fall 2 rise 1" for name, at in replicas.items()
    )
    return HAPROXY_CONFIG.format(port=port, stats=stats, rules=rules, servers=servers)


@asynccontextmanager
async def haproxy(folder: Path, replicas: dict[str, int]) -> AsyncGenerator[tuple[int, int]]:
    """HAProxy in the foreground with a config of its own in front of ``replicas``; yields its port and stats port
    once its stats page answers."""
    assert shutil.which(HAPROXY), f"HAProxy is missing at {HAPROXY}: run scripts/setup-tests"
    port, stats = free_port(), free_port()
    config = folder / "haproxy.cfg"
    config.write_text(haproxy_config(port, stats, replicas))
    process = await anyio.open_process([HAPROXY, "-db", "-f", str(config)])
    try:
        with anyio.fail_after(START):  # it binds its ports a moment after it starts
            while True:
                try:
                    await server_states(stats)
                    break
                except httpx2.ConnectError:
                    assert process.returncode is None, "HAProxy stopped; its config is in " + str(config)
                    await anyio.sleep(0.05)
        yield port, stats
    finally:
        kill({process.pid, *descendants(process.pid)})
        with anyio.move_on_after(5, shield=True):
            await process.wait()
        await process.aclose()


async def server_states(stats: int) -> dict[str, str]:
    """Each server's state as HAProxy sees it (``UP``, ``DOWN``, ...), from its stats page."""
    async with httpx2.AsyncClient(timeout=5) as http:
        csv = (await http.get(f"http://127.0.0.1:{stats}/stats;csv")).text
    lines = [line.split(",") for line in csv.splitlines() if line and not line.startswith("#")]
    return {row[1]: row[17] for row in lines if row[0] == "replicas" and row[1] not in ("FRONTEND", "BACKEND")}


async def until_states(stats: int, wanted: dict[str, str]) -> None:
    """Wait until HAProxy's health checks see each replica as ``wanted`` says (``UP``, ``DOWN``)."""
    with anyio.fail_after(START):  # health checks every 300 ms; a busy machine answers them slowly
        while {name: state.split()[0] for name, state in (await server_states(stats)).items()} != wanted:  # noqa: ASYNC110
            await anyio.sleep(0.1)
