"""A real HAProxy, or a real nginx, in front of ``mcpdeck serve`` replicas, configured as docs/fleet.md shows.

``haproxy(folder, {"r1": port, ...})`` runs it in the foreground with a config of its own and yields its port
and its stats port; ``until_states`` waits for its health checks to see each replica ``UP`` or ``DOWN``.
Every answer it relays says which replica answered (``X-Mcpdeck-Replica``), so a test knows where a request
without a session went. ``nginx(folder, {...})`` runs open-source nginx (no active health checks, no stats)
with docs/fleet.md's ``map``/``upstream`` configuration and yields its port.
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

__all__ = [
    "HAPROXY",
    "NGINX",
    "REPLICA_HEADER",
    "free_port",
    "haproxy",
    "haproxy_config",
    "nginx",
    "nginx_config",
    "server_states",
    "until_states",
]

HAPROXY = os.environ.get("MCPDECK_HAPROXY", "/usr/sbin/haproxy")
"""scripts/setup-tests installs it (Debian's ``haproxy``) when it is missing."""
NGINX = os.environ.get("MCPDECK_NGINX", "/usr/sbin/nginx")
"""scripts/setup-tests installs it (Debian's ``nginx``) when it is missing."""
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


NGINX_PROCESS = """\
# One process in the foreground, everything it writes in the test's folder (not docs/fleet.md's part).
daemon off;
master_process off;
pid {folder}/nginx.pid;
error_log {folder}/nginx-error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {folder}/body;
    proxy_temp_path {folder}/proxy;
    fastcgi_temp_path {folder}/fastcgi;
    uwsgi_temp_path {folder}/uwsgi;
    scgi_temp_path {folder}/scgi;
{site}
}}
"""

NGINX_SITE = """\
# A handshake-era session lives in its replica's memory: its id names the replica.
map $http_mcp_session_id $mcp_replica {{
{rules}
    default  replicas;
}}
upstream replicas {{
{servers}
}}
server {{
    listen {listen};
    location / {{
        proxy_pass http://$mcp_replica;
        proxy_http_version 1.1;
        proxy_set_header Host $http_host;     # the name and port the client used: --allowed-host admits it
        proxy_buffering off;                  # SSE answers stream
        proxy_read_timeout 1h;
        proxy_next_upstream error timeout;    # never non_idempotent: a POST that reached a replica is not resent
        # The replica a session names refused or dropped the connection: answer as a replica that does not
        # know the session would (404 and a JSON-RPC error), so the client starts a new session.
        error_page 502 = @replica_gone;
    }}
    location @replica_gone {{
        if ($mcp_replica = replicas) {{ return 502; }}   # no session: every replica is down
        default_type application/json;
        return 404 '{{"jsonrpc":"2.0","id":null,"error":{{"code":-32600,"message":"Session not found"}}}}';
    }}
}}"""


def nginx_config(listen: str, replicas: dict[str, str]) -> str:
    """docs/fleet.md's nginx site for ``replicas`` (name: ``host:port``), listening on ``listen``."""
    rules = "\n".join(f"    ~^{name}\\.  {at};" for name, at in replicas.items())
    servers = "\n".join(f"    server {at} max_fails=1 fail_timeout=5s;" for at in replicas.values())
    return NGINX_SITE.format(listen=listen, rules=rules, servers=servers)


@asynccontextmanager
async def nginx(folder: Path, replicas: dict[str, int]) -> AsyncGenerator[int]:
    """nginx in the foreground with docs/fleet.md's site in front of ``replicas``; yields its port once it
    answers."""
    assert shutil.which(NGINX), f"nginx is missing at {NGINX}: run scripts/setup-tests"
    port = free_port()
    site = nginx_config(f"127.0.0.1:{port}", {name: f"127.0.0.1:{at}" for name, at in replicas.items()})
    config = folder / "nginx.conf"
    indented = "\n".join(f"    {line}" if line else line for line in site.splitlines())
    config.write_text(NGINX_PROCESS.format(folder=folder, site=indented))
    process = await anyio.open_process(
        [NGINX, "-p", str(folder), "-e", str(folder / "nginx-error.log"), "-c", str(config)]
    )
    try:
        with anyio.fail_after(START):  # it binds its port a moment after it starts
            while True:
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=1):
                        break
                except OSError:
                    assert process.returncode is None, "nginx stopped; see " + str(folder / "nginx-error.log")
                    await anyio.sleep(0.05)
        yield port
    finally:
        kill({process.pid, *descendants(process.pid)})
        with anyio.move_on_after(5, shield=True):
            await process.wait()
        await process.aclose()


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
