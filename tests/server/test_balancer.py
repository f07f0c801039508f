"""Two ``mcpdeck serve`` replicas on one SQLite store and one config behind a real HAProxy, and behind a real
nginx (the configurations docs/fleet.md shows): a handshake-era SDK client's session id begins with its
replica's id, so every call of the session reaches that replica; when the replica is killed the session is not
found (404) and a new one works; a request without a session sent right after a replica died is answered by the
other replica, never dropped (HAProxy must not send it over a kept connection to the dead one).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from tests.helpers import ROOT, descendants, kill, stdio_server
from tests.support.balancer import (
    HAPROXY,
    NGINX,
    NGINX_PROCESS,
    REPLICA_HEADER,
    DocsBlockError,
    docs_block,
    free_port,
    haproxy,
    haproxy_config,
    nginx,
    nginx_config,
    until_states,
)
from tests.support.replicas import BALANCER, TOKEN, ready, replica

LIMIT = 150.0
"""Seconds the whole test may take: two serve processes start slowly on a busy 2-core machine."""
CALLS = 6


@dataclass
class Seen:
    """What a client's HTTP answers said: their statuses, and the session id the gateway gave."""

    statuses: list[int] = field(default_factory=list[int])
    id: str = ""

    @property
    def replica(self) -> str:
        return self.id.split(".")[0]


@asynccontextmanager
async def session(port: int, mode: str = "legacy") -> AsyncGenerator[tuple[Client, httpx2.AsyncClient, Seen]]:
    """An SDK client through HAProxy (by the balancer's name), of the handshake era unless ``mode`` says
    otherwise, noting what each answer said."""
    seen = Seen()

    async def note(response: httpx2.Response) -> None:
        seen.statuses.append(response.status_code)
        seen.id = response.headers.get("mcp-session-id", seen.id)

    headers = {"Authorization": f"Bearer {TOKEN}", "Host": BALANCER}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30, event_hooks={"response": [note]}) as http,
        Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http), mode=mode) as client,
    ):
        yield client, http, seen


Settled = Callable[[dict[str, str]], Awaitable[None]]
"""Waits until the balancer sees each replica as given (``UP``, ``DOWN``)."""


@asynccontextmanager
async def balanced(kind: str, folder: Path, replicas: dict[str, int], port: int) -> AsyncGenerator[tuple[int, Settled]]:
    """The balancer ``kind`` in front of ``replicas`` on ``port``: its port, and a wait for its view of them
    (HAProxy's health checks; open-source nginx has none and learns a replica is down from the request that
    fails)."""
    if kind == "haproxy":
        async with haproxy(folder, replicas, port) as (port, stats):

            async def states(wanted: dict[str, str]) -> None:
                await until_states(stats, wanted)

            yield port, states
    else:
        async with nginx(folder, replicas, port) as port:

            async def nothing(wanted: dict[str, str]) -> None:
                del wanted

            yield port, nothing


@pytest.mark.parametrize("kind", ["haproxy", "nginx"])
def test_the_balancer_routes_each_session_to_its_replica_and_a_dead_replica_s_session_is_not_found(
    tmp_path: Path, kind: str
) -> None:
    async def bounded() -> None:
        with anyio.fail_after(LIMIT):
            await _through_a_balancer(tmp_path, kind)

    anyio.run(bounded)


async def _through_a_balancer(tmp_path: Path, kind: str) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps({"mcpServers": {"basic": stdio_server("basic")}, "permissions": {"allow": ["mcp__basic"]}})
    )
    store = str(tmp_path / "fleet.sqlite3")
    front = free_port()  # the balancer's: docs/fleet.md's client reaches it by this address
    flags = ("--store", store, "--allowed-host", BALANCER, "--allowed-host", f"127.0.0.1:{front}")
    async with (
        replica(tmp_path, config, "r1", *flags, "--replica-id", "r1") as r1,
        replica(tmp_path, config, "r2", *flags, "--replica-id", "r2") as r2,
    ):
        for one in (r1, r2):  # ready once `basic` has settled
            await ready(one)
        async with balanced(kind, tmp_path, {"r1": r1.state["port"], "r2": r2.state["port"]}, front) as (
            port,
            settled,
        ):
            await settled({"r1": "UP", "r2": "UP"})
            # docs/fleet.md's client, as the page shows it, but for the balancer's address: both eras answered.
            assert await _docs_client(port) == ["2026-07-28 hello over auto", "2025-11-25 hello over legacy"]
            async with AsyncExitStack() as stack:
                # Round-robin spreads the requests without a session id over both replicas: a handshake-era
                # session opens with one (initialize). Whether the next session lands on the other replica
                # depends on what else passed the balancer since; one request in between (a health check)
                # turns the rotation by one, so the tries alternate with and without one.
                a, http, seen_a = await stack.enter_async_context(session(port))
                b, _, seen_b = a, http, seen_a
                for attempt in range(4):
                    if attempt % 2:
                        await http.get(f"http://127.0.0.1:{port}/healthz")
                    b, _, seen_b = await stack.enter_async_context(session(port))
                    if seen_b.replica != seen_a.replica:
                        break
                assert sorted((seen_a.replica, seen_b.replica)) == ["r1", "r2"], (seen_a.id, seen_b.id)
                seen_a.statuses.clear()
                seen_b.statuses.clear()
                for n in range(CALLS):  # alternating, so that without the rules every other call would go astray
                    for client, seen in ((a, seen_a), (b, seen_b)):
                        result = await client.call_tool("mcp__basic__echo", {"text": f"{seen.id} {n}"})
                        assert not result.is_error, result
                assert all(status < 400 for status in seen_a.statuses + seen_b.statuses), (seen_a, seen_b)
                listed = await http.get(
                    f"http://127.0.0.1:{port}/api/history/calls", params={"server": "basic", "limit": 100}
                )
                landed = {call["arguments"]["text"]: call["replica"] for call in listed.json()["toolCalls"]}
                for seen in (seen_a, seen_b):
                    assert {landed.get(f"{seen.id} {n}") for n in range(CALLS)} == {seen.replica}, landed

                # A 2026-07-28 client needs no affinity: no session, each call goes to either replica.
                async with session(port, mode="auto") as (modern, _, seen_m):
                    assert modern.protocol_version == "2026-07-28" and not seen_m.id
                    for n in range(CALLS):
                        result = await modern.call_tool("mcp__basic__echo", {"text": f"modern {n}"})
                        assert not result.is_error, result
                listed = await http.get(
                    f"http://127.0.0.1:{port}/api/history/calls", params={"server": "basic", "limit": 100}
                )
                landed = {call["arguments"]["text"]: call["replica"] for call in listed.json()["toolCalls"]}
                assert {landed.get(f"modern {n}") for n in range(CALLS)} == {"r1", "r2"}, landed

                # b's replica dies: HAProxy marks it down and skips its rule, and the other replica does not
                # know the session: 404 "Session not found"; nginx cannot reach the replica and says the same.
                doomed = r1 if seen_b.replica == "r1" else r2
                survivor = "r2" if doomed is r1 else "r1"
                async with httpx2.AsyncClient(headers=_OPENING, timeout=30) as raw:  # one connection, kept
                    # round-robin: the balancer talks to both replicas for this connection (HAProxy says which)
                    answered = {(await _opening(raw, port)).headers.get(REPLICA_HEADER) for _ in range(4)}
                    assert answered == ({"r1", "r2"} if kind == "haproxy" else {None}), answered
                    kill({doomed.process.pid, *descendants(doomed.process.pid)})
                    with anyio.fail_after(10):  # dead: its port refuses from now on (a dying one still took them)
                        await doomed.process.wait()
                    # At once, before the balancer has seen it die: requests without a session go round-robin,
                    # so one of these goes to the dead replica's turn, and must reach the survivor.
                    for _ in range(4):
                        try:
                            answer = await _opening(raw, port)
                        except httpx2.TransportError as error:
                            raise AssertionError(f"a request sent after the kill was dropped: {error!r}") from None
                        assert (answer.status_code, answer.headers.get(REPLICA_HEADER, survivor)) == (200, survivor)
                await settled({doomed.name: "DOWN", survivor: "UP"})
                seen_b.statuses.clear()
                with pytest.raises(MCPError, match="Session not found"):
                    await b.call_tool("mcp__basic__echo", {"text": "after the kill"})
                assert seen_b.statuses == [404], seen_b

            # The client starts again: a new session, on the survivor, works.
            async with session(port) as (c, _, seen_c):
                assert seen_c.replica == survivor, seen_c.id
                result = await c.call_tool("mcp__basic__echo", {"text": "a new session"})
                assert not result.is_error, result


async def _docs_client(port: int) -> list[str]:
    """What docs/fleet.md's Python client prints when run with the token in ``MCPDECK_TOKEN``, its URL the
    balancer's at ``port`` (the one edit its reader makes on another machine)."""
    code = docs_block("python")
    assert code.count("http://127.0.0.1:8080/mcp") == 1, "docs/fleet.md's client no longer uses the balancer's URL"
    code = code.replace("http://127.0.0.1:8080/mcp", f"http://127.0.0.1:{port}/mcp")
    environment = {**os.environ, "MCPDECK_TOKEN": TOKEN}
    ran = await anyio.run_process([sys.executable, "-c", code], env=environment, check=False)
    assert ran.returncode == 0, ran.stderr.decode()
    return ran.stdout.decode().splitlines()


_OPENING = {
    "Authorization": f"Bearer {TOKEN}",
    "Host": BALANCER,
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
}


async def _opening(raw: httpx2.AsyncClient, port: int) -> httpx2.Response:
    """A handshake-era ``initialize`` without a session (the balancer picks the replica), read whole."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
    }
    answer = await raw.post(f"http://127.0.0.1:{port}/mcp", json=body)
    assert answer.status_code == 200, answer.text
    return answer


def test_the_docs_blocks_are_valid_as_the_page_shows_them(tmp_path: Path) -> None:
    """docs/fleet.md's HAProxy configuration and nginx site, copied as they stand (example addresses and all),
    pass ``haproxy -c`` and ``nginx -t``."""
    config = tmp_path / "haproxy.cfg"
    config.write_text(docs_block("haproxy"))
    checked = subprocess.run([HAPROXY, "-c", "-f", str(config)], capture_output=True, text=True, timeout=30)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    site = tmp_path / "nginx.conf"
    indented = "\n".join(f"    {line}" if line else line for line in docs_block("nginx").splitlines())
    site.write_text(NGINX_PROCESS.format(folder=tmp_path, site=indented))
    command = [NGINX, "-t", "-p", str(tmp_path), "-e", str(tmp_path / "nginx-error.log"), "-c", str(site)]
    checked = subprocess.run(command, capture_output=True, text=True, timeout=30)
    assert checked.returncode == 0, checked.stdout + checked.stderr


_SHOWN = {"r1": "10.0.0.11:8765", "r2": "10.0.0.12:8765", "r3": "10.0.0.13:8765"}
"""The replicas docs/fleet.md's blocks show."""


def test_the_tests_run_the_docs_blocks_edited_only_where_the_page_says() -> None:
    """What ``haproxy()`` and ``nginx()`` run is docs/fleet.md's block itself: filled in with the page's own
    addresses it is the page's block, and with the tests' it differs only in the lines a reader edits (the
    listening addresses, one line of each kind per replica)."""
    haproxy_block, nginx_block = docs_block("haproxy"), docs_block("nginx")
    assert haproxy_config(8080, 8404, _SHOWN) == haproxy_block.replace("bind :8080", "bind 127.0.0.1:8080")
    assert nginx_config("8080", _SHOWN) == nginx_block

    two = {"a": "127.0.0.1:1001", "b-2": "127.0.0.1:1002"}
    filled = haproxy_config(1000, 1003, two).splitlines()
    kept = [line for line in haproxy_block.splitlines() if not re.match(r"\s+(bind|use-server|server) ", line)]
    assert [line for line in filled if not re.match(r"\s+(bind|use-server|server) ", line)] == kept
    assert [line.strip() for line in filled if re.match(r"\s+(bind|use-server|server) ", line)] == [
        "bind 127.0.0.1:1000",
        "use-server a if { req.hdr(mcp-session-id) -m beg a. }",
        "use-server b-2 if { req.hdr(mcp-session-id) -m beg b-2. }",
        "server a 127.0.0.1:1001 check inter 300ms fall 2 rise 1",
        "server b-2 127.0.0.1:1002 check inter 300ms fall 2 rise 1",
        "bind 127.0.0.1:1003",
    ]
    filled = nginx_config("127.0.0.1:1000", two).splitlines()
    edited = r"\s+(listen |~\^|server \d)"
    kept = [line for line in nginx_block.splitlines() if not re.match(edited, line)]
    assert [line for line in filled if not re.match(edited, line)] == kept
    assert [line.strip() for line in filled if re.match(edited, line)] == [
        "~^a\\.  127.0.0.1:1001;",
        "~^b-2\\.  127.0.0.1:1002;",
        "server 127.0.0.1:1001 max_fails=1 fail_timeout=5s;",
        "server 127.0.0.1:1002 max_fails=1 fail_timeout=5s;",
        "listen 127.0.0.1:1000;",
    ]


@pytest.mark.parametrize(
    ("old", "new", "says"),
    [
        # A replica's line that is not the first's with its id and address: the tests could not run it as written.
        ("    server r2 10.0.0.12:8765 check inter 300ms", "    server r2 10.0.0.12:8765 check", "differ beyond"),
        ("-m beg r3. }", "-m beg r3 }", "differ beyond"),
        ("    ~^r2\\.  10.0.0.12:8765;", "    ~^r2\\.  10.0.0.12:8765;  # r2", "differ beyond"),
        ("    server 10.0.0.13:8765 max_fails=1", "    server 10.0.0.13:8765 max_fails=3", "differ beyond"),
        # The replicas' lines of one kind and another disagree.
        ("    ~^r3\\.  10.0.0.13:8765;", "    ~^r3\\.  10.0.0.14:8765;", "no other line"),
        ("    use-server r3 if { req.hdr(mcp-session-id) -m beg r3. }\n", "", "other lines"),
        ("    server 10.0.0.13:8765 max_fails=1", "    server 10.0.0.99:8765 max_fails=1", "no other line"),
        # Lines a reader edits gone or doubled, or in pieces.
        ("    bind :8080\n", "", "one `bind` in `frontend mcp`"),
        ("    listen 8080;", "    listen 8080;\n    listen 8081;", "one `listen`"),
        ("listen stats\n", "", "one section `listen stats`"),
        (
            "    use-server r2 if { req.hdr(mcp-session-id) -m beg r2. }\n",
            "    use-server r2 if { req.hdr(mcp-session-id) -m beg r2. }\n    # r3\n",
            "must be together",
        ),
        ("```nginx\n", "```\n", "one ```nginx block"),
        ("```haproxy\n", "```haproxy\n```\n\n```haproxy\n", "one ```haproxy block"),
    ],
)
def test_a_docs_block_the_tests_cannot_fill_in_is_an_error(old: str, new: str, says: str) -> None:
    """A docs/fleet.md whose blocks no longer read as the tests fill them in fails the tests (with what to fix),
    instead of the tests running something else than the page shows."""
    page = (ROOT / "docs" / "fleet.md").read_text(encoding="utf-8")
    assert page.count(old) == 1, old
    broken = page.replace(old, new)
    with pytest.raises(DocsBlockError, match=re.escape(says)):
        haproxy_config(1000, 1003, _SHOWN, broken)
        nginx_config("127.0.0.1:1000", _SHOWN, broken)
