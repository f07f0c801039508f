"""The guard: token, Host (DNS rebinding), Origin (CSRF), no CORS, rate limit, and no secret in any answer."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from tests.api.conftest import HEADER_SECRET, SECRET, Api, running_api
from tests.helpers import WAIT
from tests.support.api_events import events_of
from tests.support.token_guesses import guesses_from_many_addresses

pytestmark = pytest.mark.anyio


def bare(api: Api, **headers: str) -> httpx2.AsyncClient:
    """A client without the token."""
    return httpx2.AsyncClient(base_url=api.url, headers=headers, timeout=WAIT, follow_redirects=False)


async def test_no_token_is_401_everywhere_but_the_consoles_own_files(api: Api) -> None:
    async with bare(api) as client:
        for path in ("/api/servers", "/api/openapi.json", "/api/events", "/mcp", "/api/nothing", "/api/login"):
            answer = await client.get(path)
            assert answer.status_code == 401, path
            error = answer.json()["error"]
            # The MCP endpoint answers as MCP does (a JSON-RPC error), the rest in the API's shape.
            assert error["code"] == (-32000 if path == "/mcp" else "unauthorized"), path
            assert "Authorization: Bearer" in error["message"]
            assert answer.headers["www-authenticate"].startswith("Bearer")
        post = await client.post("/api/servers", json={"name": "x", "config": {"command": "touch"}})
        assert post.status_code == 401
        for path in ("/", "/console/app.js"):  # the package's own files: no data, and how a tab signs in
            page = await client.get(path)
            assert page.status_code == 200, path
            assert page.headers["content-security-policy"].startswith("default-src 'none'")
    assert "x" not in api.host.servers


async def test_a_wrong_token_is_401_in_every_form(api: Api) -> None:
    async with bare(api, authorization="Bearer nope") as client:
        assert (await client.get("/api/servers")).status_code == 401
    async with bare(api, authorization=f"Basic {api.token}") as client:
        assert (await client.get("/api/servers")).status_code == 401


async def test_the_token_in_a_cookie_or_the_query_is_no_credential(api: Api) -> None:
    """A cookie for 127.0.0.1 goes to every port on it, and a URL with the token stays in the history."""
    async with bare(api, cookie=f"mcpdeck-{api.port}={api.token}") as client:
        assert (await client.get("/api/servers")).status_code == 401
    async with bare(api) as client:
        answer = await client.get("/api/servers", params={"token": api.token})
        assert answer.status_code == 401
        page = await client.get("/", params={"token": api.token})
        assert page.status_code == 200
        assert "set-cookie" not in page.headers


async def test_a_login_code_opens_one_session_once(api: Api) -> None:
    made = await api.client.post("/api/login")
    assert made.status_code == 200
    code = made.json()["code"]
    assert made.json()["url"] == f"{api.url}/#code={code}"  # in the fragment: never sent to a server
    origin = {"origin": api.url}
    async with bare(api) as client:
        assert (await client.post("/api/session", json={"code": code})).status_code == 403  # not from a page of ours
        assert (
            await client.post("/api/session", json={"code": code}, headers={"origin": "http://evil.example"})
        ).status_code == 403
        opened = await client.post("/api/session", json={"code": code}, headers=origin)
        assert opened.status_code == 200
        session = opened.json()["token"]
        assert session not in (api.token, code)
        again = await client.post("/api/session", json={"code": code}, headers=origin)
        assert again.status_code == 401
        assert "spent" in again.json()["error"]["message"]
        assert (await client.post("/api/session", json={"nope": 1}, headers=origin)).status_code == 400
    async with bare(api, authorization=f"Bearer {session}") as tab:
        assert (await tab.get("/api/servers")).status_code == 200
        another = await tab.post("/api/login")  # a signed-in tab may open another
        assert another.status_code == 200


async def test_a_wrong_host_header_is_refused_even_with_the_token(api: Api) -> None:
    for name in ("attacker.example", f"attacker.example:{api.port}", "127.0.0.1:1", f"127.0.0.2:{api.port}"):
        answer = await api.client.get("/api/servers", headers={"host": name})
        assert answer.status_code == 421, name  # Misdirected Request: see docs/security.md
        assert answer.json()["error"]["code"] == "bad-host"
    for name in (f"localhost:{api.port}", f"127.0.0.1:{api.port}"):
        assert (await api.client.get("/api/servers", headers={"host": name})).status_code == 200


async def test_a_cross_origin_post_is_refused(api: Api) -> None:
    before = api.config.read_text()
    config = {"name": "evil", "config": {"command": "touch", "args": ["/tmp/pwned"]}}
    for headers in (
        {"origin": "http://attacker.example"},
        {"origin": f"http://attacker.example:{api.port}"},
        {"origin": "null"},
        {"origin": f"http://127.0.0.1:{api.port}", "sec-fetch-site": "cross-site"},
    ):
        answer = await api.client.post("/api/servers", json=config, headers=headers)
        assert answer.status_code == 403, headers
        assert answer.json()["error"]["code"] == "bad-origin"
    assert api.config.read_text() == before
    assert "evil" not in api.host.servers


async def test_no_cors_headers_are_ever_sent(api: Api) -> None:
    preflight = await api.client.options(
        "/api/servers",
        headers={"origin": "http://attacker.example", "access-control-request-method": "POST"},
    )
    assert preflight.status_code in (401, 403, 405)
    answer = await api.client.get("/api/servers", headers={"origin": "http://attacker.example"})
    for response in (preflight, answer):
        assert not [name for name in response.headers if name.lower().startswith("access-control-")]
    assert answer.headers["x-frame-options"] == "DENY"
    assert answer.headers["cache-control"] == "no-store"


async def test_wrong_tokens_from_200_loopback_addresses_are_limited_yet_the_right_token_passes(tmp_path: Path) -> None:
    """They were counted per address, and 127.0.0.0/8 has 16 million: 200 guesses all got 401."""
    async with running_api(tmp_path, {}, in_process=False, history=False) as api:
        codes = await guesses_from_many_addresses(api.url, "/api/servers/x/reconnect", 200)
        assert codes[:10] == [401] * 10
        assert set(codes[10:]) == {429}
        assert (await api.client.get("/api/servers")).status_code == 200  # the user is never locked out
        async with bare(api, authorization="Bearer wrong") as client:
            answer = await client.get("/api/servers")
        assert answer.status_code == 429
        assert int(answer.headers["retry-after"]) > 0
        assert answer.json()["error"]["code"] == "too-many-attempts"
        code = (await api.client.post("/api/login")).json()["code"]
        async with bare(api, origin=api.url) as page:  # a login code is a token too: counted, and refused now
            assert (await page.post("/api/session", json={"code": "guess"})).status_code == 429
            assert (await page.post("/api/session", json={"code": code})).status_code == 200  # the user's own


_OTHER_USER = """
import http.client, json, sys
port, token = json.loads(sys.stdin.read())
codes = []
for guess in [f"guess-{i}" for i in range(12)] + [token]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("GET", "/api/servers", headers={"Authorization": f"Bearer {guess}"})
    codes.append(connection.getresponse().status)
    connection.close()
print(json.dumps(codes))
"""


async def test_another_local_user_is_held_back_alone_and_cannot_lock_the_user_out(tmp_path: Path) -> None:
    """Counted by the user that owns the connection: theirs is refused before it is compared, right
    token included; the user serve runs as gets in meanwhile."""
    import subprocess

    async with running_api(tmp_path, {}, in_process=False, history=False) as api:

        def as_nobody() -> list[int]:
            done = subprocess.run(
                ["/usr/bin/python3", "-c", _OTHER_USER],
                input=json.dumps([api.port, api.token]),
                capture_output=True,
                text=True,
                user=65534,
                group=65534,
                timeout=WAIT,
                check=True,
                cwd="/",
            )
            return json.loads(done.stdout)

        codes = await anyio.to_thread.run_sync(as_nobody)
        assert codes[:10] == [401] * 10
        assert codes[10:] == [429, 429, 429]  # the right token too: nothing is compared for them now
        assert (await api.client.get("/api/servers")).status_code == 200


async def test_no_secret_in_any_answer(api: Api) -> None:
    bodies: list[str] = []
    opened = anyio.Event()

    async def watch() -> None:
        async for event in events_of(api.client, opened=opened):
            bodies.append(json.dumps(event))
            if event["type"] == "ToolCallFinished":
                return

    async with anyio.create_task_group() as tg:
        tg.start_soon(watch)
        with anyio.fail_after(WAIT):
            await opened.wait()
        calls: list[tuple[str, str, dict[str, Any] | None]] = [
            ("GET", "/api/servers", None),
            ("GET", "/api/servers/basic", None),
            ("GET", "/api/servers/remote", None),
            ("GET", "/api/tools", None),
            ("GET", "/api/host", None),
            ("GET", "/api/openapi.json", None),
            ("POST", "/api/tools/mcp__basic__env/call", {"arguments": {"name": "API_TOKEN"}}),
            ("POST", "/api/tools/mcp__basic__echo/call", {"arguments": {"text": f"say {SECRET} and {HEADER_SECRET}"}}),
            ("POST", "/api/servers/remote/test", None),
            ("POST", "/api/test", {"name": "basic", "config": {"command": f"no-such-{SECRET}"}}),
            ("POST", "/api/servers", {"name": "leak", "config": {"command": SECRET, "url": "http://x"}}),
            ("PATCH", "/api/servers/basic", {"env": {"API_TOKEN": "s3c…****"}, "timeout": 5}),
            ("GET", "/api/servers/basic/logs", None),
            ("GET", "/api/history/calls", None),
        ]
        for method, path, body in calls:
            answer = await api.client.request(method, path, json=body)
            bodies.append(answer.text)
    assert api.file()["mcpServers"]["basic"]["env"]["API_TOKEN"] == SECRET
    for text in bodies:
        assert SECRET not in text
        assert HEADER_SECRET not in text
    assert any("s3c…****" in text for text in bodies)  # the masked form is what shows


async def test_a_bad_path_is_a_404_never_a_500(api: Api) -> None:
    """NUL bytes, encoded slashes and dots, names too long for the file system, ids SQLite cannot hold."""
    long = "a" * 5000
    paths = [
        "/console/app.js%00.html",
        "/console/%00",
        f"/console/{long}.js",
        "/console/..%2F..%2Fpyproject.toml",
        "/console/%2e%2e",
        "/console/..%2Fserver%2F_app.py",
        "/console/",
        f"/api/servers/{long}",
        "/api/servers/%00",
        "/api/servers/..%2Fhost",
        "/api/history/conversations/99999999999999999999999",
        "/api/history/conversations/-99999999999999999999999",
    ]
    for path in paths:
        answer = await api.client.get(path)
        assert answer.status_code == 404, (path[:60], answer.status_code, answer.text[:200])
        assert answer.json()["error"]["code"].endswith("not-found"), path[:60]
    assert (await api.client.get("/console/app.js")).status_code == 200


async def test_a_body_over_the_limit_is_refused_unread_or_cut_off(api: Api) -> None:
    """150 MB of permissions once went into the config file (and the process's memory)."""
    before = api.config.read_text()
    huge = json.dumps({"allow": ["x" * (5 * 1024 * 1024)]})
    answer = await api.client.put("/api/permissions", content=huge, headers={"content-type": "application/json"})
    assert answer.status_code == 413
    assert answer.json()["error"]["code"] == "too-large"
    assert "4 MiB" in answer.json()["error"]["message"]

    sent = 0

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: chunked, up to 150 MB if nobody stops it
        nonlocal sent
        yield b'{"allow": ["'
        while sent < 150 * 1024 * 1024:
            sent += 64 * 1024
            yield b"x" * (64 * 1024)

    try:
        chunked = await api.client.put(
            "/api/permissions", content=chunks(), headers={"content-type": "application/json"}
        )
    except httpx2.TransportError:  # the server answered and closed while the client was still sending
        pass
    else:
        assert chunked.status_code == 413
    assert sent < 64 * 1024 * 1024  # cut off near the bound (what the sockets hold on the way), not read to the end
    assert api.config.read_text() == before
    small = await api.client.put("/api/permissions", json={"allow": ["mcp__basic__echo"]})
    assert small.status_code == 200
