"""A near-free MCP server over stdio: hand-written, line-oriented JSON-RPC, standard library only.

It costs a few microseconds per answer, so what a benchmark measures against it is the
client. It still speaks MCP as a client sees it: the ``initialize`` handshake (a
``server/discover`` probe is answered "method not found", so 2026-era clients fall back
to the handshake), ``ping``, ``logging/setLevel``, ``tools/list`` and ``tools/call``.
``Handler(modern=True)`` (the HTTP server's) also speaks 2026-07-28, as today's SDK servers
do beside the handshake: it answers ``server/discover``, and a request stamped with that
version (its ``_meta``) gets that era's result fields (``resultType``, and ``cacheScope`` and
``ttlMs`` on lists); ``subscriptions/listen`` is the transport's (see ``listen_ack``).

Tools:

- ``echo(text)``: returns ``text``.
- ``sleep(ms)``: answers after ``ms`` milliseconds (other requests are answered meanwhile).
- ``payload(bytes)``: returns a text of that many bytes.
- ``touch_tools()``: answers, then sends ``notifications/tools/list_changed`` (to make a
  host that follows notifications list again).
- ``bench/stats`` (not MCP) answers ``{"cpu_s": ...}``, the server's CPU time so far.
- ``filler_NNNN_*``: ``--filler K`` adds K tools with realistic schemas (about 1 KB each)
  that echo their arguments. ``--base N`` lists only the first N of the four tools above
  (a server of 1 or 3 small tools; the others still answer when called).

Run it by path (``python -S bench/servers/line.py --filler 20``): it imports nothing but
the standard library, so any interpreter of any virtual environment can start it. The
HTTP server (``bench/servers/http.py``) answers with the same ``Handler``.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, cast

__all__ = ["BASE_TOOLS", "Handler", "Later", "filler_tool", "tool_definitions"]

Later = Callable[[float, str], None]
"""``later(delay, line)``: send ``line`` after ``delay`` seconds."""

PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""Handshake-era versions this server accepts; it answers the client's own if listed, else the newest."""
MODERN_VERSION = "2026-07-28"
"""The stateless era ``Handler(modern=True)`` speaks too."""
_VERSION_META = "io.modelcontextprotocol/protocolVersion"
_SUBSCRIPTION_META = "io.modelcontextprotocol/subscriptionId"
_SERVER_INFO = {"name": "bench-line", "version": "1.0"}
_CAPABILITIES = {"tools": {"listChanged": True}}
TOOLS_CHANGED = '{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}'

METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602

_VERBS = ("list", "get", "create", "update", "archive", "search", "export", "sync")
_NOUNS = ("invoices", "customers", "tickets", "deployments", "documents", "alerts", "orders", "reports", "users")
_AREAS = ("billing", "support", "platform", "sales", "security", "analytics")

BASE_TOOLS: list[dict[str, Any]] = [
    {
        "name": "echo",
        "description": "Return the given text unchanged.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string", "description": "The text to return."}},
            "required": ["text"],
        },
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "sleep",
        "description": "Answer after the given number of milliseconds.",
        "inputSchema": {
            "type": "object",
            "properties": {"ms": {"type": "integer", "minimum": 0, "description": "Milliseconds to wait."}},
            "required": ["ms"],
        },
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "payload",
        "description": "Return a text of the given size in bytes.",
        "inputSchema": {
            "type": "object",
            "properties": {"bytes": {"type": "integer", "minimum": 0, "description": "Size of the text."}},
            "required": ["bytes"],
        },
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "touch_tools",
        "description": "Tell the client that the tool list changed.",
        "inputSchema": {"type": "object", "properties": {}},
    },
]


def filler_tool(index: int) -> dict[str, Any]:
    """A realistic tool definition of about 1 KB (deterministic in ``index``)."""
    verb = _VERBS[index % len(_VERBS)]
    noun = _NOUNS[(index // len(_VERBS)) % len(_NOUNS)]
    area = _AREAS[index % len(_AREAS)]
    return {
        "name": f"filler_{index:04d}_{verb}_{noun}",
        "title": f"{verb.capitalize()} {noun} ({area})",
        "description": (
            f"{verb.capitalize()} {noun} in the {area} workspace. Returns a page of matching {noun} with their "
            f"ids, owners, status and timestamps; pass `cursor` from the previous page to read on. Fails when "
            f"the workspace is archived or the caller lacks the `{area}:read` scope."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "workspace": {
                    "type": "string",
                    "pattern": "^[a-z0-9-]{3,40}$",
                    "description": "Workspace slug, e.g. `acme-prod`.",
                },
                "query": {"type": "string", "description": f"Free-text filter on the names of {noun}."},
                "status": {
                    "type": "string",
                    "enum": ["open", "closed", "archived", "draft"],
                    "description": "Only records in this state.",
                },
                "limit": {"type": "integer", "minimum": 1, "maximum": 200, "default": 50, "description": "Page size."},
                "cursor": {"type": "string", "description": "Opaque cursor from a previous page."},
                "tags": {
                    "type": "array",
                    "items": {"type": "string"},
                    "maxItems": 10,
                    "description": "Records must carry all of these tags.",
                },
                "include_archived": {"type": "boolean", "default": False},
            },
            "required": ["workspace"],
            "additionalProperties": False,
        },
        "annotations": {"readOnlyHint": verb in ("list", "get", "search", "export"), "openWorldHint": False},
    }


def tool_definitions(filler: int = 0, base: int = len(BASE_TOOLS)) -> list[dict[str, Any]]:
    """Every tool the server lists with ``--filler filler`` (and ``--base base``)."""
    return [*BASE_TOOLS[:base], *(filler_tool(i) for i in range(filler))]


def _dumps(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class Handler:
    """Answers JSON-RPC messages; the transport decides how the answers travel.

    ``handle`` returns the lines to send now (responses and notifications, each a JSON
    string without newline); a ``sleep`` call is answered through ``later(delay, line)``
    (at once when there is no ``later``).
    """

    def __init__(self, filler: int = 0, base: int = len(BASE_TOOLS), *, modern: bool = False):
        tools = tool_definitions(filler, base)
        self.modern = modern
        self._tools_json = _dumps({"tools": tools})
        self._tools_json_modern = _dumps(
            {"tools": tools, "cacheScope": "private", "ttlMs": 0, "resultType": "complete"}
        )
        self._tool_names = {tool["name"] for tool in tools}
        self._payloads: dict[int, str] = {}

    @staticmethod
    def is_modern(message: dict[str, Any]) -> bool:
        """Whether a request is stamped with the 2026-07-28 era (each request says so in its ``_meta``)."""
        params: object = message.get("params")
        meta: object = cast("dict[str, Any]", params).get("_meta") if isinstance(params, dict) else None
        return isinstance(meta, dict) and cast("dict[str, Any]", meta).get(_VERSION_META) == MODERN_VERSION

    def listen_ack(self, message: dict[str, Any]) -> str:
        """The first message of a ``subscriptions/listen`` stream: which of the asked notifications it honours
        (tool list changes only). The transport keeps the stream open and sends ``TOOLS_CHANGED`` on it."""
        params: dict[str, Any] = message.get("params") or {}
        asked: dict[str, Any] = params.get("notifications") or {}
        honoured = {"toolsListChanged": True} if asked.get("toolsListChanged") else {}
        ack = {"notifications": honoured, "_meta": {_SUBSCRIPTION_META: message["id"]}}
        return _dumps({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": ack})

    @staticmethod
    def on_listen_stream(notification: str, listen_id: object) -> str:
        """A notification as the listen stream opened by request ``listen_id`` carries it (its id in ``_meta``)."""
        message = json.loads(notification)
        message["params"] = {"_meta": {_SUBSCRIPTION_META: listen_id}}
        return _dumps(message)

    @staticmethod
    def _result(request_id: object, result_json: str) -> str:
        return f'{{"jsonrpc":"2.0","id":{_dumps(request_id)},"result":{result_json}}}'

    @staticmethod
    def _error(request_id: object, code: int, message: str) -> str:
        return _dumps({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})

    @staticmethod
    def _text(text: str) -> str:
        return f'{{"content":[{{"type":"text","text":{_dumps(text)}}}],"isError":false}}'

    def _payload(self, size: int) -> str:
        cached = self._payloads.get(size)
        if cached is None:
            cached = self._payloads[size] = self._text("x" * size)
        return cached

    def handle(self, message: dict[str, Any], later: Later | None = None) -> list[str]:
        """The answers to one message (none for notifications and responses)."""
        method = message.get("method")
        if method is None or "id" not in message:
            return []  # a notification (initialized, cancelled, ...) or a response: nothing to say
        request_id = message["id"]
        params: dict[str, Any] = message.get("params") or {}
        if self.modern and self.is_modern(message):
            return self._handle_modern(method, request_id, params, later)
        if method == "tools/call":
            return self._call(request_id, params, later)
        if method == "tools/list":
            return [self._result(request_id, self._tools_json)]
        if method == "initialize":
            asked = params.get("protocolVersion")
            version = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1]
            result = {"protocolVersion": version, "capabilities": _CAPABILITIES, "serverInfo": _SERVER_INFO}
            return [self._result(request_id, _dumps(result))]
        if method == "bench/stats":  # not MCP: the harness asks what the server has cost so far
            return [self._result(request_id, _dumps({"cpu_s": time.process_time()}))]
        if method in ("ping", "logging/setLevel"):
            return [self._result(request_id, "{}")]
        return [self._error(request_id, METHOD_NOT_FOUND, f"method not found: {method}")]

    def _handle_modern(self, method: str, request_id: object, params: dict[str, Any], later: Later | None) -> list[str]:
        """A 2026-07-28 request (``subscriptions/listen`` is the transport's: see ``listen_ack``)."""
        if method == "tools/call":
            return self._call(request_id, params, later, modern=True)
        if method == "tools/list":
            return [self._result(request_id, self._tools_json_modern)]
        if method == "server/discover":
            result = {
                "supportedVersions": [MODERN_VERSION],
                "capabilities": _CAPABILITIES,
                "cacheScope": "private",
                "ttlMs": 0,
                "resultType": "complete",
                "_meta": {"io.modelcontextprotocol/serverInfo": _SERVER_INFO},
            }
            return [self._result(request_id, _dumps(result))]
        if method == "bench/stats":
            return [self._result(request_id, _dumps({"cpu_s": time.process_time()}))]
        return [self._error(request_id, METHOD_NOT_FOUND, f"method not found: {method}")]

    def _call(
        self, request_id: object, params: dict[str, Any], later: Later | None, *, modern: bool = False
    ) -> list[str]:
        name = params.get("name")
        arguments: dict[str, Any] = params.get("arguments") or {}
        answer: str | None = None
        if name == "echo":
            answer = self._text(str(arguments.get("text", "")))
        elif name == "payload":
            answer = self._payload(int(arguments.get("bytes", 0)))
        elif name == "sleep":
            answer = self._result(request_id, self._modern(self._text("slept"), modern))
            if later is None:
                return [answer]
            later(int(arguments.get("ms", 0)) / 1000, answer)
            return []
        elif name == "touch_tools":
            return [self._result(request_id, self._modern(self._text("touched"), modern)), TOOLS_CHANGED]
        elif name in self._tool_names:
            answer = self._text(_dumps(arguments))
        if answer is None:
            return [self._error(request_id, INVALID_PARAMS, f"unknown tool: {name}")]
        return [self._result(request_id, self._modern(answer, modern))]

    @staticmethod
    def _modern(result_json: str, modern: bool) -> str:
        """A result with the 2026-07-28 era's ``resultType`` (a JSON object's text, given without it)."""
        return result_json[:-1] + ',"resultType":"complete"}' if modern else result_json


def serve_stdio(filler: int, base: int = len(BASE_TOOLS)) -> None:
    """Answer newline-delimited JSON-RPC on stdin/stdout until stdin closes."""
    out = sys.stdout.buffer
    lock = threading.Lock()

    def send(lines: list[str]) -> None:
        if lines:
            data = ("\n".join(lines) + "\n").encode()
            with lock:
                out.write(data)
                out.flush()

    def later(delay: float, line: str) -> None:
        timer = threading.Timer(delay, send, args=([line],))
        timer.daemon = True
        timer.start()

    handler = Handler(filler, base)
    for raw in sys.stdin.buffer:
        if not raw.strip():
            continue
        try:
            message = json.loads(raw)
        except ValueError:
            send([_dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error"}})])
            continue
        if isinstance(message, list):  # a JSON-RPC batch (2025-03-26)
            batch: list[Any] = message  # pyright: ignore[reportUnknownVariableType]
            send([line for item in batch for line in handler.handle(item, later)])
        else:
            send(handler.handle(message, later))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="A near-free MCP server over stdio.")
    parser.add_argument("--filler", type=int, default=0, help="add this many ~1 KB filler tools")
    parser.add_argument(
        "--base",
        type=int,
        default=len(BASE_TOOLS),
        choices=range(len(BASE_TOOLS) + 1),
        help="list only the first N of the small base tools (echo, sleep, payload, touch_tools; default: all 4)",
    )
    args = parser.parse_args(argv)
    try:
        serve_stdio(args.filler, args.base)
    except (BrokenPipeError, KeyboardInterrupt):
        pass


if __name__ == "__main__":
    main()
