"""Scripted fake LLM servers: OpenAI (Chat Completions and Responses), Anthropic and Gemini, on a real socket.

A script is a list of steps, one per request, provider-neutral: a ``Reply`` (text streamed in
pieces, tool calls), a ``Fail`` (an HTTP error in the API's format), or a function of the
``Received`` request giving either. Every request is recorded, so tests can check what the
official SDKs sent::

    script = [Reply(tool_calls=[Call("mcp__everything__echo", {"message": "hi"})]),
              lambda request: Reply(text=f"it said {request.tool_results[-1][1]}")]
    async with serve_scripted("anthropic", script) as server:
        model = AnthropicModel("claude-x", api_key="k", base_url=server.base_url)
        ...
    assert server.requests[1].tool_results == [("toolu_001", "Echo: hi")]

A request with no step left gets HTTP 500 "script exhausted", so the test fails visibly.
``serve_scripted_in_thread`` runs the same server in a thread of its own (for code that runs
its own event loop), and ``python -m tests.llm.serve`` runs it from the command line.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import AsyncGenerator, Callable, Generator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Any, cast

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.helpers import WAIT, serve_asgi
from tests.llm.wire import (
    APIS,
    Call,
    ChatCompletions,
    Fail,
    Gemini,
    Ids,
    Messages,
    Reply,
    Responses,
    error_body,
)

__all__ = [
    "APIS",
    "Call",
    "Fail",
    "Received",
    "Reply",
    "Script",
    "ScriptedServer",
    "Step",
    "load_script",
    "serve_scripted",
    "serve_scripted_in_thread",
]


@dataclass(frozen=True)
class Received:
    """A request the server got, with provider-neutral views of what matters to tests.

    Attributes:
        api: The wire format it came in (``openai``, ``openai-responses``, ``anthropic``, ``gemini``).
        path: The URL path.
        query: The query string.
        headers: The request headers (lower-case names).
        body: The JSON body.
    """

    api: str
    path: str
    query: str
    headers: Mapping[str, str]
    body: dict[str, Any]

    @property
    def model(self) -> str:
        """The model asked for (in the body, or Gemini's path)."""
        if self.api == "gemini":
            return self.path.split("/models/", 1)[1].split(":", 1)[0]
        return str(self.body.get("model", ""))

    @property
    def stream(self) -> bool:
        """Whether a streamed answer was asked for."""
        if self.api == "gemini":
            return ":streamGenerateContent" in self.path
        return bool(self.body.get("stream"))

    @property
    def api_key(self) -> str | None:
        """The key the client sent: ``x-api-key`` (Anthropic), ``x-goog-api-key`` (Gemini), else the bearer token."""
        named = self.headers.get("x-api-key") or self.headers.get("x-goog-api-key")
        if named:
            return named
        auth = self.headers.get("authorization", "")
        return auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else None

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The conversation: ``messages``, Responses' ``input`` items, or Gemini's ``contents``."""
        key = {"openai-responses": "input", "gemini": "contents"}.get(self.api, "messages")
        value = self.body.get(key, [])
        if isinstance(value, str):
            return [{"role": "user", "content": value}]
        return cast(list[dict[str, Any]], value)

    @property
    def system(self) -> str | None:
        """The system prompt, wherever the API puts it."""
        if self.api == "openai":
            texts = [_text(m.get("content")) for m in self.messages if m.get("role") in ("system", "developer")]
            return "\n".join(texts) if texts else None
        if self.api == "openai-responses":
            return self.body.get("instructions")
        if self.api == "anthropic":
            system = self.body.get("system")
            return None if system is None else _text(system)
        instruction = self.body.get("systemInstruction")
        return None if instruction is None else _text(instruction.get("parts"))

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The ``tools`` value as sent."""
        return cast(list[dict[str, Any]], self.body.get("tools") or [])

    @property
    def tool_names(self) -> list[str]:
        """The names of the tools offered."""
        if self.api == "openai":
            return [t["function"]["name"] for t in self.tools]
        if self.api == "gemini":
            return [d["name"] for t in self.tools for d in t.get("functionDeclarations", [])]
        return [t["name"] for t in self.tools]

    @property
    def tool_results(self) -> list[tuple[str, str]]:
        """Every tool result in the conversation, in order: ``(call id, or the name for Gemini without ids; text)``."""
        results: list[tuple[str, str]] = []
        for message in self.messages:
            if self.api == "openai" and message.get("role") == "tool":
                results.append((message["tool_call_id"], _text(message.get("content"))))
            elif self.api == "openai-responses" and message.get("type") == "function_call_output":
                results.append((message["call_id"], _text(message.get("output"))))
            elif self.api == "anthropic" and isinstance(message.get("content"), list):
                blocks = cast(list[dict[str, Any]], message["content"])
                results.extend(
                    (b["tool_use_id"], _text(b.get("content"))) for b in blocks if b.get("type") == "tool_result"
                )
            elif self.api == "gemini":
                for part in cast(list[dict[str, Any]], message.get("parts") or []):
                    response = part.get("functionResponse")
                    if response is not None:
                        payload: dict[str, Any] = response.get("response") or {}
                        value = payload.get("output", payload.get("error", payload))
                        results.append((response.get("id") or response["name"], _text(value)))
        return results

    @property
    def last_user_text(self) -> str:
        """The text of the last user message."""
        for message in reversed(self.messages):
            if message.get("role") == "user":
                return _text(message.get("content", message.get("parts")))
        return ""


def _text(value: Any) -> str:
    """The text in a content value: a string, or a list of text blocks or parts."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        items = cast(list[Any], value)
        return "".join(
            _text(item) for item in items if isinstance(item, str) or (isinstance(item, dict) and "text" in item)
        )
    if isinstance(value, dict) and "text" in value:
        return _text(cast(dict[str, Any], value)["text"])
    return json.dumps(value)


Step = Reply | Fail | Callable[[Received], Reply | Fail]
"""One scripted answer: a reply, an error, or a function of the request giving either."""


@dataclass
class Script:
    """The steps a server answers with, one per request, in order."""

    steps: list[Step] = field(default_factory=list[Step])
    used: int = 0

    def next(self, request: Received) -> Reply | Fail | None:
        """The answer to ``request``, or None when the script has run out."""
        if self.used >= len(self.steps):
            return None
        step = self.steps[self.used]
        self.used += 1
        return step if isinstance(step, Reply | Fail) else step(request)

    @property
    def left(self) -> int:
        """Steps not used yet."""
        return len(self.steps) - self.used


def load_script(data: Sequence[Mapping[str, Any]]) -> Script:
    """A script from its JSON form: ``[{"text", "tool_calls": [{"name", "arguments"}]}, {"error": {"status"}}]``.

    Raises:
        ValueError: A step is neither a reply nor an error.
    """
    steps: list[Step] = []
    for index, step in enumerate(data):
        if "error" in step:
            error: Mapping[str, Any] = step["error"]
            steps.append(Fail(int(error.get("status", 500)), error.get("message"), error.get("retry_after")))
            continue
        unknown = set(step) - {"text", "tool_calls", "chunks", "thinking", "signature", "stop"}
        if unknown:
            raise ValueError(f"step {index}: unknown keys {sorted(unknown)}; a step is a reply or {{'error': ...}}")
        calls = [Call(c["name"], c.get("arguments", {}), c.get("id")) for c in step.get("tool_calls", [])]
        steps.append(
            Reply(
                text=step.get("text", ""),
                tool_calls=calls,
                chunks=int(step.get("chunks", 3)),
                thinking=step.get("thinking"),
                signature=step.get("signature"),
                stop=step.get("stop"),
            )
        )
    return Script(steps)


class ScriptedServer:
    """A fake LLM server answering from a script; it serves every API's routes.

    Attributes:
        api: The API whose base URL ``base_url`` gives.
        script: The steps.
        requests: Every request received, in order.
        root: ``http://127.0.0.1:<port>`` once serving.
        whole: Answer with one JSON body even when a stream is asked for (as some
            OpenAI-compatible servers do).
    """

    def __init__(self, api: str, script: Script | Sequence[Step], *, whole: bool = False):
        if api not in APIS:
            raise ValueError(f"unknown api {api!r}; known: {', '.join(APIS)}")
        self.api = api
        self.script = script if isinstance(script, Script) else Script(list(script))
        self.requests: list[Received] = []
        self.whole = whole
        self.root = ""
        self.ids = Ids()
        self.started = threading.Event()
        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._openai, methods=["POST"]),
                Route("/v1/responses", self._responses, methods=["POST"]),
                Route("/v1/messages", self._anthropic, methods=["POST"]),
                Route("/{version}/models/{call:path}", self._gemini, methods=["POST"]),
            ],
            lifespan=self._lifespan,
        )

    @property
    def base_url(self) -> str:
        """The base URL to give the SDK: the root with ``/v1`` for OpenAI, the root for Anthropic and Gemini."""
        return f"{self.root}/v1" if self.api.startswith("openai") else self.root

    @asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncGenerator[None]:
        self.started.set()
        yield

    async def _receive(self, api: str, request: Request) -> tuple[Received, Reply | Fail | None]:
        raw = await request.body()
        body: dict[str, Any] = json.loads(raw) if raw else {}
        received = Received(
            api=api,
            path=request.url.path,
            query=request.url.query,
            headers={name.lower(): value for name, value in request.headers.items()},
            body=body,
        )
        self.requests.append(received)
        return received, self.script.next(received)

    def _error(self, api: str, step: Fail | None) -> Response:
        request_id = self.ids.next("req")
        if step is None:
            message = f"script exhausted: request {len(self.requests)} has no step (the script had {self.script.used})"
            step = Fail(500, message)
        headers = {"x-request-id": request_id, "request-id": request_id}
        if step.retry_after is not None:
            headers["retry-after"] = f"{step.retry_after:g}"
        return JSONResponse(error_body(api, step.status, step.message, request_id), step.status, headers)

    @staticmethod
    def _sse(events: Iterator[str]) -> StreamingResponse:
        async def body() -> AsyncGenerator[bytes]:
            for event in events:
                yield event.encode()

        headers = {"cache-control": "no-cache"}
        return StreamingResponse(body(), media_type="text/event-stream", headers=headers)

    async def _openai(self, request: Request) -> Response:
        received, step = await self._receive("openai", request)
        if not isinstance(step, Reply):
            return self._error("openai", step)
        options: dict[str, Any] = received.body.get("stream_options") or {}
        usage = bool(options.get("include_usage"))
        reply = ChatCompletions(step, received.model, self.ids, include_usage=usage)
        return self._sse(reply.events()) if received.stream and not self.whole else JSONResponse(reply.body())

    async def _responses(self, request: Request) -> Response:
        received, step = await self._receive("openai-responses", request)
        if not isinstance(step, Reply):
            return self._error("openai-responses", step)
        reply = Responses(step, received.body, self.ids)
        return self._sse(reply.events()) if received.stream and not self.whole else JSONResponse(reply.body())

    async def _anthropic(self, request: Request) -> Response:
        received, step = await self._receive("anthropic", request)
        if not isinstance(step, Reply):
            return self._error("anthropic", step)
        reply = Messages(step, received.model, self.ids)
        return self._sse(reply.events()) if received.stream and not self.whole else JSONResponse(reply.body())

    async def _gemini(self, request: Request) -> Response:
        call: str = request.path_params["call"]
        if not call.endswith((":streamGenerateContent", ":generateContent")):
            return JSONResponse(error_body("gemini", 404, f"no such method: {call}", ""), 404)
        received, step = await self._receive("gemini", request)
        if not isinstance(step, Reply):
            return self._error("gemini", step)
        reply = Gemini(step, received.model, self.ids)
        return self._sse(reply.events()) if received.stream and not self.whole else JSONResponse(reply.body())


@asynccontextmanager
async def serve_scripted(
    api: str, script: Script | Sequence[Step], *, whole: bool = False
) -> AsyncGenerator[ScriptedServer]:
    """Serve a script in this event loop; the server's ``base_url`` is what to give the SDK.

    Args:
        api: The API whose base URL to give (the server answers every API's routes).
        script: The steps, one per request.
        whole: Answer with whole JSON bodies even when a stream is asked for.
    """
    server = ScriptedServer(api, script, whole=whole)
    async with serve_asgi(server.app) as root:
        server.root = root
        yield server


@contextmanager
def serve_scripted_in_thread(
    api: str, script: Script | Sequence[Step], *, host: str = "127.0.0.1", port: int = 0
) -> Generator[ScriptedServer]:
    """Serve a script from a thread with its own event loop (for code that runs ``anyio.run`` itself).

    The socket listens before the thread starts; the server's startup is awaited for at
    most ``WAIT`` seconds, and its shutdown too.

    Raises:
        RuntimeError: The server did not start in time.
    """
    server = ScriptedServer(api, script)
    sock = bind(host, port)
    uv = uvicorn.Server(uvicorn.Config(server.app, log_level="warning", access_log=False, lifespan="on"))
    thread = threading.Thread(target=uv.run, kwargs={"sockets": [sock]}, name="scripted-llm", daemon=True)
    with sock:
        thread.start()
        try:
            if not server.started.wait(WAIT):
                raise RuntimeError(f"the scripted server did not start within {WAIT} s")
            server.root = f"http://{host}:{sock.getsockname()[1]}"
            yield server
        finally:
            uv.should_exit = True
            thread.join(WAIT)


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (0: any free port)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(64)
    return sock
