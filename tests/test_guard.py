"""The one guard of the HTTP faces: ``mcpdeck serve`` and ``mcpdeck gateway --port``, each a real process, answer
the same bad request the same way (status, body, headers), at the MCP endpoint and, for ``serve``, its API too.

The two faces had a guard each: ``serve`` answered a foreign ``Host`` with 403, ``gateway --port`` with the SDK's
421 in plain text (and only after the token), a foreign ``Origin`` on a GET went through ``serve`` and a too large
body got ``serve``'s JSON but the SDK's text from the gateway.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from mcpdeck._http_faces.guard import MAX_BODY
from mcpdeck.server._app import HOST_HINT
from tests.helpers import ROOT, WAIT, cli_environment, descendants, kill
from tests.support.serve_process import serving

pytestmark = pytest.mark.anyio

GATEWAY_TOKEN = "gateway-token-0123456789abcdef"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
MCP_ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@asynccontextmanager
async def gateway_port(folder: Path) -> AsyncGenerator[str]:
    """A real ``mcpdeck gateway --port 0`` with one token and no servers; its base URL."""
    config = folder / "gateway.json"
    config.write_text(json.dumps({"mcpServers": {}}))
    command = [sys.executable, "-m", "mcpdeck.cli", "--config", str(config), "gateway", "--port", "0"]
    env = cli_environment(folder, MCPDECK_GATEWAY_TOKEN=GATEWAY_TOKEN)
    process = await anyio.open_process(command, cwd=ROOT, env=env)
    try:
        assert process.stderr is not None
        lines = BufferedByteReceiveStream(process.stderr)
        with anyio.fail_after(WAIT):
            while not (line := (await lines.receive_until(b"\n", 1 << 16)).decode()).startswith("mcpdeck gateway at "):
                pass
        yield line.removeprefix("mcpdeck gateway at ").strip().removesuffix("/mcp")
    finally:
        kill(descendants(process.pid) | {process.pid})
        with anyio.move_on_after(5, shield=True):
            await process.wait()
        await process.aclose()


def shown(answer: httpx2.Response, base: str) -> tuple[int, Any, dict[str, str]]:
    """What a client sees of an answer, the face's own port written ``PORT``: status, JSON body, the guard's headers."""
    port = base.rsplit(":", 1)[1]
    body = json.loads(re.sub(rf"\b{port}\b", "PORT", answer.text))
    names = ("content-type", "cache-control", "x-content-type-options", "x-frame-options", "www-authenticate")
    return answer.status_code, body, {name: answer.headers[name] for name in names if name in answer.headers}


async def test_both_faces_answer_a_bad_host_a_bad_origin_and_a_too_large_body_the_same_way(tmp_path: Path) -> None:
    (tmp_path / "serve").mkdir()
    async with serving(tmp_path / "serve", {}) as serve, gateway_port(tmp_path) as gateway:
        faces = {serve.state["url"]: serve.state["token"], gateway: GATEWAY_TOKEN}

        async def ask(base: str, method: str, path: str, content: bytes, **headers: str) -> httpx2.Response:
            headers = {**MCP_ACCEPT, "Authorization": f"Bearer {faces[base]}", **headers}
            async with httpx2.AsyncClient(base_url=base, timeout=WAIT) as http:
                return await http.request(method, path, content=content, headers=headers)

        body = json.dumps(INITIALIZE).encode()
        cases: dict[str, tuple[str, bytes, dict[str, str]]] = {
            "bad host": ("POST", body, {"Host": "evil.example.com"}),
            "bad host with its own origin": (
                "POST",
                body,
                {"Host": "evil.example.com", "Origin": "http://evil.example.com"},
            ),
            "bad origin": ("POST", body, {"Origin": "http://evil.example.com"}),
            "another local port's origin": ("POST", body, {"Origin": "http://127.0.0.1:1"}),
            "bad origin on a GET": ("GET", b"", {"Origin": "http://evil.example.com"}),
            "cross-site": ("POST", body, {"Sec-Fetch-Site": "cross-site"}),
            "too large": ("POST", b"[" + b" " * MAX_BODY + b"]", {}),
        }
        expected = {
            "bad host": 421,
            "bad host with its own origin": 421,
            "bad origin": 403,
            "another local port's origin": 403,
            "bad origin on a GET": 403,
            "cross-site": 403,
            "too large": 413,
        }
        for case, (method, content, headers) in cases.items():
            at_serve = await ask(serve.state["url"], method, "/mcp", content, **headers)
            at_gateway = await ask(gateway, method, "/mcp", content, **headers)
            seen = shown(at_serve, serve.state["url"])
            if seen[0] == 421:  # serve alone says how to admit a balancer's name (`--allowed-host`)
                message = seen[1]["error"]["message"]
                assert message.endswith(HOST_HINT), message
                seen[1]["error"]["message"] = message.removesuffix(HOST_HINT)
            assert seen == shown(at_gateway, gateway), case
            assert seen[0] == expected[case], (case, at_serve.text)
            assert seen[1]["error"]["code"] == -32000 and seen[1]["id"] is None, case  # MCP's JSON-RPC error, no id
            api = await ask(serve.state["url"], method, "/api/servers", content, **headers)
            assert api.status_code == expected[case], (case, api.text)  # the API: same status, the API's shape
            hint = HOST_HINT if seen[0] == 421 else ""
            assert (
                api.json()["error"]["message"]
                == seen[1]["error"]["message"].replace("PORT", str(serve.state["port"])) + hint
            )

        # Both let the right request through: the guard refuses what it must and nothing more.
        for base in faces:
            answer = await ask(base, "POST", "/mcp", body)
            assert answer.status_code == 200, answer.text
            assert "serverInfo" in answer.text
