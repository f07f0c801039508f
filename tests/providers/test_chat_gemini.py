"""Gemini through the google-genai SDK, against the scripted generateContent server."""

from __future__ import annotations

import base64

import pytest

from mcpdeck.errors import ProviderError
from mcpdeck.providers import ToolCall, chat_model
from mcpdeck.providers._gemini_chat import GeminiModel
from tests.helpers import closed_port
from tests.llm.scripted import Call, Fail, Received, Reply, serve_scripted
from tests.llm.turns import ECHO, SPECS, answer, take_turn

pytestmark = pytest.mark.anyio

ADD = "mcp__everything__add"
FAST = 0.01
"""The retry delay to use: google-genai waits a second before its first retry unless told otherwise."""


def echo_results(request: Received) -> Reply:
    """A final answer that repeats every tool result the request carried."""
    return Reply(text="Results: " + "; ".join(f"{i}={t}" for i, t in request.tool_results))


async def test_text_streams_in_pieces_then_the_turn() -> None:
    async with serve_scripted("gemini", [Reply(text="Hello from Gemini", chunks=3)]) as server:
        async with GeminiModel("gemini-test", api_key="g-key", base_url=server.base_url) as model:
            deltas, turn = await take_turn(model, [model.user_message("hi")])
    assert len(deltas) == 3 and "".join(deltas) == "Hello from Gemini" == turn.text
    assert turn.messages == [{"role": "model", "parts": [{"text": "Hello from Gemini"}]}]
    assert turn.stop_reason == "STOP" and turn.tool_calls == []
    assert turn.usage is not None and (turn.usage.input_tokens, turn.usage.output_tokens) == (11, 7)
    [request] = server.requests
    assert request.path.endswith("/models/gemini-test:streamGenerateContent") and request.query == "alt=sse"
    assert request.api_key == "g-key" and request.model == "gemini-test"
    assert request.messages == [{"role": "user", "parts": [{"text": "hi"}]}]
    assert "tools" not in request.body and "systemInstruction" not in request.body


async def test_one_call_without_an_id_and_the_system_instruction() -> None:
    script = [Reply(text="Calling.", tool_calls=[Call(ECHO.name, {"message": "hi"})])]
    async with serve_scripted("gemini", script) as server:
        async with GeminiModel("m", api_key="k", base_url=server.base_url) as model:
            tools = model.converter.tools(SPECS)
            _, turn = await take_turn(model, [model.user_message("echo")], tools=tools, system="Be exact.")
    assert turn.tool_calls == [ToolCall(None, ECHO.name, {"message": "hi"})]
    assert turn.messages == [
        {
            "role": "model",
            "parts": [{"text": "Calling."}, {"functionCall": {"name": ECHO.name, "args": {"message": "hi"}}}],
        }
    ]
    [request] = server.requests
    assert request.body["systemInstruction"]["parts"] == [{"text": "Be exact."}] and request.system == "Be exact."
    assert request.tools == tools and request.tool_names == [ECHO.name, ADD]


async def test_parallel_calls_round_trip_as_function_responses() -> None:
    calls = [Call(ECHO.name, {"message": "a"}, id="fc-1"), Call(ADD, {"a": 4, "b": 5}, id="fc-2")]
    async with serve_scripted("gemini", [Reply(tool_calls=calls), echo_results]) as server:
        async with GeminiModel("m", api_key="k", base_url=server.base_url) as model:
            tools = model.converter.tools(SPECS)
            messages = [model.user_message("go")]
            _, turn = await take_turn(model, messages, tools=tools)
            assert turn.tool_calls == [
                ToolCall("fc-1", ECHO.name, {"message": "a"}),
                ToolCall("fc-2", ADD, {"a": 4, "b": 5}),
            ]
            messages.extend(turn.messages)
            messages += model.converter.tool_results(answer(turn.tool_calls))
            _, final = await take_turn(model, messages, tools=tools)
    assert final.text == "Results: fc-1=Echo: a; fc-2=9"
    second = server.requests[1]
    assert second.messages[1] == {
        "role": "model",
        "parts": [
            {"functionCall": {"id": "fc-1", "name": ECHO.name, "args": {"message": "a"}}},
            {"functionCall": {"id": "fc-2", "name": ADD, "args": {"a": 4, "b": 5}}},
        ],
    }
    assert second.messages[2] == {
        "role": "user",
        "parts": [
            {"functionResponse": {"id": "fc-1", "name": ECHO.name, "response": {"output": "Echo: a"}}},
            {"functionResponse": {"id": "fc-2", "name": ADD, "response": {"output": "9"}}},
        ],
    }


async def test_thought_signatures_and_thoughts_go_back_unchanged() -> None:
    signature = "sig???>>>"  # its base64 holds '+' and '/', which the SDK writes URL-safe
    script = [
        Reply(thinking="Let me think.", signature=signature, tool_calls=[Call(ECHO.name, {"message": "s"})]),
        Reply(text="done", signature="text-sig"),
    ]
    async with serve_scripted("gemini", script) as server:
        async with GeminiModel("m", api_key="k", base_url=server.base_url) as model:
            messages = [model.user_message("go")]
            deltas, turn = await take_turn(model, messages)
            messages.extend(turn.messages)
            messages += model.converter.tool_results(answer(turn.tool_calls))
            _, final = await take_turn(model, messages)
    assert deltas == [] and turn.text == ""  # a thought is not text
    thought, call = turn.messages[0]["parts"]
    assert thought == {"text": "Let me think.", "thought": True}
    assert base64.urlsafe_b64decode(call["thoughtSignature"]) == signature.encode()
    sent = server.requests[1].messages[1]["parts"]
    assert sent[0] == thought and sent[1]["functionCall"]["name"] == ECHO.name
    assert base64.urlsafe_b64decode(sent[1]["thoughtSignature"]) == signature.encode()
    assert final.text == "done"
    assert base64.urlsafe_b64decode(final.messages[0]["parts"][-1]["thoughtSignature"]) == b"text-sig"


async def test_a_call_without_a_name_comes_back_with_an_error() -> None:
    calls = [Call("", {"message": "?"}), Call(ECHO.name, {"message": "ok"})]
    async with serve_scripted("gemini", [Reply(tool_calls=calls)]) as server:
        async with GeminiModel("m", api_key="k", base_url=server.base_url) as model:
            _, turn = await take_turn(model, [model.user_message("go")])
    bad, good = turn.tool_calls
    assert bad.error is not None and "no name" in bad.error and bad.arguments == {}
    assert good == ToolCall(None, ECHO.name, {"message": "ok"})


async def test_a_rate_limit_once_is_retried() -> None:
    async with serve_scripted("gemini", [Fail(429, retry_after=0), Reply(text="ok")]) as server:
        async with GeminiModel("m", api_key="k", base_url=server.base_url, max_retries=2, retry_delay=FAST) as model:
            _, turn = await take_turn(model, [model.user_message("hi")])
    assert turn.text == "ok" and len(server.requests) == 2


async def test_a_lasting_rate_limit_is_a_retryable_error() -> None:
    async with serve_scripted("gemini", [Fail(429, "Quota exceeded for the model")] * 2) as server:
        async with GeminiModel("m", api_key="k", base_url=server.base_url, max_retries=1, retry_delay=FAST) as model:
            with pytest.raises(ProviderError) as caught:
                await take_turn(model, [model.user_message("hi")])
    assert caught.value.status == 429 and caught.value.retryable and caught.value.provider == "gemini"
    assert "Quota exceeded for the model" in str(caught.value) and "RESOURCE_EXHAUSTED" in str(caught.value)
    assert len(server.requests) == 2


async def test_refused_keys_name_the_environment_variable() -> None:
    invalid = "API key not valid. Please pass a valid API key."
    async with serve_scripted("gemini", [Fail(401), Fail(400, invalid)]) as server:
        environ = {"GEMINI_API_KEY": "g-wrong", "GEMINI_BASE_URL": server.base_url}
        async with chat_model("gemini:gemini-test", environ=environ, max_retries=0) as model:
            with pytest.raises(ProviderError) as unauthenticated:
                await take_turn(model, [model.user_message("hi")])
            with pytest.raises(ProviderError) as invalid_key:
                await take_turn(model, [model.user_message("hi")])
    for caught in (unauthenticated, invalid_key):
        assert "refused the API key" in str(caught.value) and "GEMINI_API_KEY" in str(caught.value)
        assert not caught.value.retryable
    assert unauthenticated.value.status == 401
    assert invalid in str(invalid_key.value) and invalid_key.value.status == 400
    assert [r.api_key for r in server.requests] == ["g-wrong", "g-wrong"]


async def test_a_server_error_and_an_unreachable_server() -> None:
    async with serve_scripted("gemini", [Fail(500)]) as server:
        async with GeminiModel("m", api_key="k", base_url=server.base_url, max_retries=0) as model:
            with pytest.raises(ProviderError) as failed:
                await take_turn(model, [model.user_message("hi")])
    assert failed.value.status == 500 and failed.value.retryable and "INTERNAL" in str(failed.value)
    with closed_port() as port:
        url = f"http://127.0.0.1:{port}"
        async with GeminiModel("m", api_key="k", base_url=url, max_retries=0) as model:
            with pytest.raises(ProviderError) as unreachable:
                await take_turn(model, [model.user_message("hi")])
    assert f"cannot reach {url}" in str(unreachable.value) and unreachable.value.retryable


async def test_a_message_not_in_gemini_s_format_is_a_provider_error() -> None:
    async with GeminiModel("m", api_key="k", base_url="http://127.0.0.1:9") as model:
        with pytest.raises(ProviderError, match="not in Gemini's format"):
            await take_turn(model, [{"role": "user", "content": "OpenAI-style"}])
