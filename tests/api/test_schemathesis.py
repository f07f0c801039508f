"""``schemathesis`` against the API's OpenAPI description: no 5xx, and every answer fits its schema.

The API runs for real (uvicorn on 127.0.0.1, the guard in front, a real in-process server
and a remote one that is down) in a thread of its own; schemathesis runs as its CLI, with a bounded number of
examples per operation. Left out: the operations that start a program from the generated
config (add, replace, update, test, import: a generated ``command`` would run) and the two
endless event streams.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from anyio.from_thread import start_blocking_portal
from mcp.server.mcpserver import MCPServer

from tests.api.conftest import default_servers, running_api

# Streams that stay open (events, logs, traffic, a chat run) and what would start programs are left out.
EXCLUDED = (
    "^(add_server|replace_server|update_server|test_config|import_|events|follow_log|traffic_stream|send_prompt)$"
)
CHECKS = "not_a_server_error,response_schema_conformance,content_type_conformance,status_code_conformance"


def harmless_server() -> MCPServer:
    """An in-process server whose every tool is safe to call with anything (no crash, no endless wait)."""
    server = MCPServer("harmless")

    @server.tool()
    def echo(text: str) -> str:
        """Return the text."""
        return text

    @server.resource("harmless://note", name="note", mime_type="text/plain")
    def note() -> str:
        return "a note"

    @server.prompt(description="Greet someone.")
    def greet(name: str) -> str:
        return f"Hello, {name}!"

    return server


def test_schemathesis_finds_no_server_error_and_no_answer_off_its_schema(tmp_path: Path) -> None:
    # An in-process server (reconnects in milliseconds; its tools are harmless whatever the
    # arguments) and a remote one that is down. A stdio server would make each generated
    # reconnect cost seconds.
    servers = {"remote": default_servers()["remote"]}
    running = running_api(tmp_path, servers, in_process=harmless_server())
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(running) as api:
        done = subprocess.run(
            [
                str(Path(sys.executable).parent / "schemathesis"),
                "run",
                f"{api.url}/api/openapi.json",
                "--header",
                f"Authorization: Bearer {api.token}",
                "--checks",
                CHECKS,
                "--exclude-operation-id-regex",
                EXCLUDED,
                "--phases",
                "coverage,fuzzing",
                "--max-examples",
                "5",
                "--workers",
                "1",  # one at a time: with the seed, the same requests in the same order every run
                "--request-timeout",
                "60",  # reconnecting a stdio server on a loaded machine can take seconds
                "--seed",
                "1",
                "--generation-database",
                "none",
                "--no-color",
            ],
            capture_output=True,
            text=True,
            timeout=150,
            check=False,
            cwd=tmp_path,
        )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert "No issues found" in done.stdout or " passed" in done.stdout, done.stdout[-3000:]
