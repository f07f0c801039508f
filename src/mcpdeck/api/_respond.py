"""How answers leave the API: JSON rendering, and the last line of defence for secrets.

``Redacting`` wraps the API app and replaces every literal secret of the running configs
(env values, header values, OAuth client secrets; see ``mcpdeck.history.secrets_of``) in
every JSON or event-stream body with ``****``, whatever produced it: a status, an error
message that quotes a command line, a tool that echoes its environment. Config objects
are also masked field by field before that (``mask_secrets``), so the shape stays useful.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcpdeck.history import Redactor

__all__ = ["Redacting", "SafeJSONResponse", "dumps"]


def dumps(data: Any) -> str:
    """Compact JSON, non-ASCII kept, anything unknown as its ``str``."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)


class SafeJSONResponse(JSONResponse):
    """A JSON response that renders values the standard encoder refuses (datetimes, paths) as text."""

    def render(self, content: Any) -> bytes:
        return dumps(content).encode("utf-8")


_TEXTUAL = (b"application/json", b"text/event-stream", b"text/plain")


class Redacting:
    """ASGI middleware: secrets in textual response bodies become ``****``."""

    def __init__(self, app: ASGIApp, redactor: Callable[[], Redactor]):
        self.app = app
        self._redactor = redactor

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        textual = False
        start: Message | None = None

        async def wrapped(message: Message) -> None:
            nonlocal textual, start
            if message["type"] == "http.response.start":
                headers: list[tuple[bytes, bytes]] = list(message.get("headers", []))
                kind = next((v for k, v in headers if k.lower() == b"content-type"), b"")
                textual = kind.startswith(_TEXTUAL)
                if not textual:
                    await send(message)
                    return
                start = message
                return
            if message["type"] != "http.response.body" or not textual:
                await send(message)
                return
            redact = self._redactor()
            body: bytes = message.get("body", b"")
            more: bool = message.get("more_body", False)
            if start is not None and not more:
                # One whole body (a JSON answer): redact it and fix its length.
                data = redact(body.decode("utf-8", "replace")).encode("utf-8")
                headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
                headers.append((b"content-length", str(len(data)).encode()))
                await send({**start, "headers": headers})
                start = None
                await send({"type": "http.response.body", "body": data, "more_body": False})
                return
            if start is not None:
                # A stream (server-sent events): each chunk is one whole event, redacted alone.
                headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
                await send({**start, "headers": headers})
                start = None
            data = redact(body.decode("utf-8", "replace")).encode("utf-8") if body else b""
            await send({"type": "http.response.body", "body": data, "more_body": more})

        await self.app(scope, receive, wrapped)
