"""The scripted servers themselves: every reply and error validates as the official SDKs' own types.

Also the two other ways to run them: a thread with its own event loop, and the command line.
"""

from __future__ import annotations

import json
import sys
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from anthropic.types import Message, RawMessageStreamEvent
from anthropic.types.beta_error_response import BetaErrorResponse
from google.genai.types import GenerateContentResponse
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response, ResponseStreamEvent
from openai.types.shared import ErrorObject
from pydantic import BaseModel

from mcpdeck.errors import ProviderError
from mcpdeck.providers._anthropic_chat import AnthropicModel
from mcpdeck.providers._openai_chat import OpenAIChatModel
from tests.helpers import ROOT, WAIT
from tests.llm.scripted import Call, Fail, Reply, load_script, serve_scripted, serve_scripted_in_thread
from tests.llm.turns import ECHO, take_turn
from tests.llm.wire import split_text

FULL = Reply(
    text="Checking both.",
    tool_calls=[Call(ECHO.name, {"message": "a"}, id="id-1"), Call("mcp__everything__add", {"a": 1, "b": 2})],
    thinking="I will call two tools.",
    signature="c2ln",
)
REQUESTS: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {
    # api: (path, streamed body, whole body)
    "openai": (
        "/v1/chat/completions",
        {"model": "m", "messages": [], "stream": True, "stream_options": {"include_usage": True}},
        {"model": "m", "messages": []},
    ),
    "openai-responses": ("/v1/responses", {"model": "m", "input": "hi", "stream": True}, {"model": "m", "input": "hi"}),
    "anthropic": ("/v1/messages", {"model": "m", "messages": [], "stream": True}, {"model": "m", "messages": []}),
}


def by_type(alias: Any) -> Callable[[Any], object]:
    """Validation of an event as the member of the SDK's union ``alias`` that its ``type`` names."""
    union = typing.get_args(alias)[0] if typing.get_origin(alias) is typing.Annotated else alias
    members: dict[str, type[BaseModel]] = {}
    for member in typing.get_args(union):
        (name,) = typing.get_args(member.model_fields["type"].annotation)
        members[name] = member

    def validate(data: Any) -> object:
        return members[data["type"]].model_validate(data)

    return validate


STREAM_TYPES: dict[str, Callable[[Any], object]] = {
    "openai": ChatCompletionChunk.model_validate,
    "openai-responses": by_type(ResponseStreamEvent),
    "anthropic": by_type(RawMessageStreamEvent),
    "gemini": GenerateContentResponse.model_validate,
}
WHOLE_TYPES: dict[str, Callable[[Any], object]] = {
    "openai": ChatCompletion.model_validate,
    "openai-responses": Response.model_validate,
    "anthropic": Message.model_validate,
    "gemini": GenerateContentResponse.model_validate,
}


def events_of(text: str) -> list[tuple[str | None, str]]:
    """The ``(event, data)`` pairs of an SSE body."""
    found: list[tuple[str | None, str]] = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        if not block.strip():
            continue
        event = next((line[7:] for line in block.splitlines() if line.startswith("event: ")), None)
        data = "\n".join(line[6:] for line in block.splitlines() if line.startswith("data: "))
        found.append((event, data))
    return found


@pytest.mark.anyio
@pytest.mark.parametrize("api", ["openai", "openai-responses", "anthropic", "gemini"])
async def test_streamed_and_whole_replies_and_errors_are_the_sdk_types(api: str) -> None:
    script = [FULL, FULL, Fail(429, retry_after=1.5)]
    async with serve_scripted(api, script) as server, httpx2.AsyncClient(base_url=server.root) as client:
        with anyio.fail_after(WAIT):
            if api == "gemini":
                body: dict[str, Any] = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
                streamed = await client.post("/v1beta/models/g:streamGenerateContent", params={"alt": "sse"}, json=body)
                whole = await client.post("/v1beta/models/g:generateContent", json=body)
                failed = await client.post("/v1beta/models/g:generateContent", json=body)
            else:
                path, stream_body, whole_body = REQUESTS[api]
                streamed = await client.post(path, json=stream_body)
                whole = await client.post(path, json=whole_body)
                failed = await client.post(path, json=whole_body)
    assert streamed.headers["content-type"].startswith("text/event-stream")
    events = events_of(streamed.text)
    assert len(events) >= 5
    for event, data in events:
        if data == "[DONE]":
            assert api == "openai" and (event, data) == events[-1]
            continue
        parsed = json.loads(data)
        if event is not None:
            assert parsed["type"] == event
        if parsed.get("type") != "ping":
            STREAM_TYPES[api](parsed)
    WHOLE_TYPES[api](whole.json())
    assert failed.status_code == 429 and failed.headers["retry-after"] == "1.5"
    error = failed.json()
    if api == "anthropic":
        assert BetaErrorResponse.model_validate(error).error.type == "rate_limit_error"
    elif api == "gemini":
        assert error["error"]["code"] == 429 and error["error"]["status"] == "RESOURCE_EXHAUSTED"
    else:
        assert ErrorObject.model_validate(error["error"]).code == "rate_limit_exceeded"
    assert [r.stream for r in server.requests] == [True, False, False]


def test_text_is_split_into_the_pieces_asked_for() -> None:
    assert split_text("abcdefg", 3) == ["abc", "de", "fg"]
    assert split_text("ab", 5) == ["a", "b"]
    assert split_text("", 3) == []


def test_the_thread_runner_serves_code_with_its_own_event_loop() -> None:
    async def ask(base_url: str) -> str:
        async with OpenAIChatModel("m", api_key="k", base_url=base_url) as model:
            _, turn = await take_turn(model, [model.user_message("hi")])
        return turn.text

    with serve_scripted_in_thread("openai", [Reply(text="from a thread")]) as server:
        assert server.base_url.endswith("/v1")
        assert anyio.run(ask, server.base_url) == "from a thread"
    assert [r.last_user_text for r in server.requests] == ["hi"]


def test_a_json_script_reads_replies_and_errors() -> None:
    script = load_script(
        [
            {"text": "a", "tool_calls": [{"name": "t", "arguments": {"x": 1}}]},
            {"error": {"status": 429, "retry_after": 0}},
        ]
    )
    assert script.steps == [Reply(text="a", tool_calls=[Call("t", {"x": 1})]), Fail(429, None, 0)]
    with pytest.raises(ValueError, match="unknown keys"):
        load_script([{"txt": "typo"}])


@pytest.mark.anyio
async def test_the_command_line_server_prints_its_url_and_serves_the_script(tmp_path: Path) -> None:
    steps = [
        {"text": "Echoing.", "tool_calls": [{"name": ECHO.name, "arguments": {"message": "cli"}}]},
        {"error": {"status": 401, "message": "invalid x-api-key"}},
    ]
    path = tmp_path / "script.json"
    path.write_text(json.dumps(steps))
    command = [sys.executable, "-m", "tests.llm.serve", "--api", "anthropic", "--script", str(path), "--port", "0"]
    async with await anyio.open_process(command, cwd=ROOT) as process:
        try:
            assert process.stdout is not None
            with anyio.fail_after(WAIT):
                first = b""
                while not first.endswith(b"\n"):
                    first += await process.stdout.receive(1)
            base_url = first.decode().strip()
            assert base_url.startswith("http://127.0.0.1:") and not base_url.endswith("/v1")
            async with AnthropicModel("m", api_key="k", base_url=base_url, max_retries=0) as model:
                _, turn = await take_turn(model, [model.user_message("hi")])
                with pytest.raises(ProviderError, match="invalid x-api-key"):
                    await take_turn(model, [model.user_message("hi")])
            assert turn.text == "Echoing." and [c.arguments for c in turn.tool_calls] == [{"message": "cli"}]
        finally:
            process.terminate()
            with anyio.fail_after(WAIT):
                await process.wait()
