"""A stdio server of the handshake era (as SDK 1.2 was), in raw JSON lines, independent of the installed SDK.

``python -m tests.servers.handshake_era [--unknown=ignore|method-not-found|invalid-params|close] [--broken-lists]
[--no-ping]``

It speaks ``initialize`` → ``notifications/initialized``, ``ping``, ``tools/list`` and
``tools/call`` (one tool, ``echo``). What it does with a method it does not know
(``server/discover`` among them) is chosen by ``--unknown``:

- ``ignore`` (the default, as SDK 1.2 did): never answers it, and notes it on stderr;
- ``method-not-found``: answers -32601;
- ``invalid-params``: answers -32602 after a long validation report on stderr, as
  SDK 1.7 and later do for a request they cannot parse;
- ``close``: writes a line on stderr and exits, closing the pipe.

With ``--broken-lists`` it also claims resources and prompts, and answers
``resources/list``, ``resources/templates/list`` and ``prompts/list`` with an error (as
the official sqlite, kubernetes and postgres servers do for some of them); its tools work.
The tool ``fix_lists`` mends them (one resource, one prompt) and sends both change notices.
With ``--no-ping`` it never answers a ``ping`` (as a server too busy to reach one would not) and answers
everything else.

``echo`` with the text ``protocol-error`` answers -32602 the way the TypeScript SDK words
it (``MCP error -32602: ...``). Every request it answers is noted on stderr as
``handled <method>``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

PROTOCOL_VERSION = "2024-11-05"
SERVER_INFO = {"name": "handshake-era", "version": "1.2.0"}
ECHO_TOOL = {
    "name": "echo",
    "description": "Return the text unchanged.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
}
FIX_TOOL = {"name": "fix_lists", "description": "Mend the broken lists.", "inputSchema": {"type": "object"}}
LIST_METHODS = ("resources/list", "resources/templates/list", "prompts/list")
RESOURCE = {"uri": "note://one", "name": "one", "mimeType": "text/plain"}
PROMPT = {"name": "greet", "description": "Say hello."}


def _say(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def _send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def _answer(request_id: Any, method: str, params: dict[str, Any], broken_lists: bool) -> dict[str, Any] | None:
    """The result of a known request, or None for an unknown one."""
    if method == "initialize":
        capabilities: dict[str, Any] = {"tools": {"listChanged": False}}
        if broken_lists:
            capabilities |= {"resources": {"listChanged": True}, "prompts": {"listChanged": True}}
        return {"protocolVersion": PROTOCOL_VERSION, "capabilities": capabilities, "serverInfo": SERVER_INFO}
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": [ECHO_TOOL, FIX_TOOL] if broken_lists else [ECHO_TOOL]}
    if method == "tools/call":
        text = str(params.get("arguments", {}).get("text", ""))
        return {"content": [{"type": "text", "text": text or "fixed"}], "isError": False}
    if method in LIST_METHODS and broken_lists:  # (mended)
        return {"resources/list": {"resources": [RESOURCE]}, "prompts/list": {"prompts": [PROMPT]}}.get(
            method, {"resourceTemplates": []}
        )
    return None


def main(argv: list[str]) -> None:
    unknown = "ignore"
    broken_lists = lists_broken = "--broken-lists" in argv
    no_ping = "--no-ping" in argv
    for arg in argv:
        if arg.startswith("--unknown="):
            unknown = arg.split("=", 1)[1]
    _say(f"handshake-era server up (unknown methods: {unknown})")
    for raw in sys.stdin:
        if not raw.strip():
            continue
        message = json.loads(raw)
        method = message.get("method")
        if "id" not in message or method is None:
            continue  # a notification (initialized, cancelled) or a response: nothing to say
        request_id = message["id"]
        params: dict[str, Any] = message.get("params") or {}
        if method == "ping" and no_ping:
            _say("not answering ping")
            continue
        if method == "tools/call" and params.get("name") == "fix_lists":
            lists_broken = False
            _send({"method": "notifications/resources/list_changed"})
            _send({"method": "notifications/prompts/list_changed"})
        if method == "tools/call" and params.get("arguments", {}).get("text") == "protocol-error":
            _send({"id": request_id, "error": {"code": -32602, "message": "MCP error -32602: text may not say that"}})
            continue
        if lists_broken and method in LIST_METHODS:
            _say(f"handled {method}")
            _send({"id": request_id, "error": {"code": -32603, "message": f"{method} is broken on this server"}})
            continue
        result = _answer(request_id, method, params, broken_lists)
        if result is not None:
            _say(f"handled {method}")
            _send({"id": request_id, "result": result})
        elif unknown == "ignore":
            _say(f"ignoring unknown method {method}")
        elif unknown == "method-not-found":
            _send({"id": request_id, "error": {"code": -32601, "message": "Method not found"}})
        elif unknown == "invalid-params":
            # What SDK 1.7+ logs: pydantic's report for each request type the method is not.
            _say("WARNING Failed to validate request: 24 validation errors for ClientRequest")
            for n in range(24):
                _say(f"RequestType{n}.method")
                _say(f"  Input should be 'type{n}' [type=literal_error, input_value='{method}', input_type=str]")
            _send({"id": request_id, "error": {"code": -32602, "message": "Invalid request parameters"}})
        else:
            _say(f"unknown method {method}: closing")
            return


if __name__ == "__main__":
    main(sys.argv[1:])
