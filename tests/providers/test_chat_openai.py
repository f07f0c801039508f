"""OpenAI chat through the openai SDK, against the scripted servers: Chat Completions and Responses."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcpdeck.errors import ProviderError
from mcpdeck.providers import ToolCall, chat_model
from mcpdeck.providers._openai_chat import OpenAIChatModel
from mcpdeck.providers._openai_responses import OpenAIResponsesModel
from tests.helpers import closed_port
from tests.llm.scripted import Call, Fail, Received, Reply, serve_scripted
from tests.llm.turns import ECHO, SPECS, answer, take_turn

pytestmark = pytest.mark.anyio

PARALLEL = [
    Call(ECHO.name, {"message": "one"}),
    Call("mcp__everything__add", {"a": 2, "b": 3}),
    Call(ECHO.name, {"message": "three"}),
]


def echo_results(request: Received) -> Reply:
    """A final answer that repeats every tool result the request carried."""
    return Reply(text="Results: " + "; ".join(f"{i}={t}" for i, t in request.tool_results))


# ----- Chat Completions ------------------------------------------------------------------------


async def test_chat_text_streams_in_pieces_then_the_turn() -> None:
    async with serve_scripted("openai", [Reply(text="Hello from the scripted model", chunks=4)]) as server:
        async with OpenAIChatModel("gpt-test", api_key="sk-test", base_url=server.base_url) as model:
            deltas, turn = await take_turn(model, [model.user_message("hi")])
    assert len(deltas) == 4 and "".join(deltas) == "Hello from the scripted model"
    assert turn.text == "Hello from the scripted model"
    assert turn.tool_calls == []
    assert turn.messages == [{"role": "assistant", "content": "Hello from the scripted model"}]
    assert turn.stop_reason == "stop"
    assert turn.usage is not None and (turn.usage.input_tokens, turn.usage.output_tokens) == (11, 7)
    [request] = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.model == "gpt-test" and request.api_key == "sk-test"
    assert request.body["stream"] is True and request.body["stream_options"] == {"include_usage": True}
    assert request.messages == [{"role": "user", "content": "hi"}]
    assert "tools" not in request.body


async def test_chat_a_server_that_sends_no_usage_is_fine() -> None:
    async with serve_scripted("openai", [Reply(text="no usage", usage=None), Reply(text="again")]) as server:
        async with OpenAIChatModel("m", api_key="k", base_url=server.base_url) as model:
            _, turn = await take_turn(model, [model.user_message("hi")])
            model.include_usage = False
            _, second = await take_turn(model, [model.user_message("hi")])
    assert turn.text == "no usage" and turn.usage is None
    assert second.text == "again" and second.usage is None
    assert "stream_options" not in server.requests[1].body


async def test_chat_one_tool_call() -> None:
    script = [Reply(text="Let me echo.", tool_calls=[Call(ECHO.name, {"message": "hi"})])]
    async with serve_scripted("openai", script) as server:
        async with OpenAIChatModel("m", api_key="k", base_url=server.base_url) as model:
            _, turn = await take_turn(model, [model.user_message("echo hi")], tools=model.converter.tools(SPECS))
    assert turn.tool_calls == [ToolCall("call_001", ECHO.name, {"message": "hi"})]
    assert turn.stop_reason == "tool_calls"
    assert turn.messages == [
        {
            "role": "assistant",
            "content": "Let me echo.",
            "tool_calls": [
                {
                    "id": "call_001",
                    "type": "function",
                    "function": {"name": ECHO.name, "arguments": '{"message": "hi"}'},
                }
            ],
        }
    ]


async def test_chat_parallel_tool_calls_come_out_whole_and_in_order() -> None:
    async with serve_scripted("openai", [Reply(tool_calls=PARALLEL)]) as server:
        async with OpenAIChatModel("m", api_key="k", base_url=server.base_url) as model:
            deltas, turn = await take_turn(model, [model.user_message("go")], tools=model.converter.tools(SPECS))
    assert deltas == [] and turn.text == ""
    assert turn.tool_calls == [
        ToolCall("call_001", ECHO.name, {"message": "one"}),
        ToolCall("call_002", "mcp__everything__add", {"a": 2, "b": 3}),
        ToolCall("call_003", ECHO.name, {"message": "three"}),
    ]
    assert turn.messages[0]["content"] is None
    assert [c["id"] for c in turn.messages[0]["tool_calls"]] == ["call_001", "call_002", "call_003"]


async def test_chat_round_trip_sends_the_calls_and_results_back_then_answers() -> None:
    script = [Reply(tool_calls=PARALLEL[:2]), echo_results]
    async with serve_scripted("openai", script) as server:
        async with OpenAIChatModel("m", api_key="k", base_url=server.base_url) as model:
            tools = model.converter.tools(SPECS)
            messages = [model.user_message("go")]
            _, turn = await take_turn(model, messages, tools=tools, system="Be brief.")
            messages.extend(turn.messages)
            messages += model.converter.tool_results(answer(turn.tool_calls))
            _, final = await take_turn(model, messages, tools=tools, system="Be brief.")
    assert final.text == "Results: call_001=Echo: one; call_002=5"
    assert final.tool_calls == [] and final.stop_reason == "stop"
    second = server.requests[1]
    assert second.messages == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "go"},
        turn.messages[0],
        {"role": "tool", "tool_call_id": "call_001", "content": "Echo: one"},
        {"role": "tool", "tool_call_id": "call_002", "content": "5"},
    ]
    assert second.tools == tools and second.tool_names == [ECHO.name, "mcp__everything__add"]


async def test_chat_system_prompt_goes_first_and_tools_are_sent_as_given() -> None:
    async with serve_scripted("openai", [Reply(text="ok")]) as server:
        async with OpenAIChatModel("m", api_key="k", base_url=server.base_url, params={"temperature": 0}) as model:
            tools = model.converter.tools(SPECS)
            await take_turn(model, [model.user_message("hi")], tools=tools, system="You are terse.")
    [request] = server.requests
    assert request.messages[0] == {"role": "system", "content": "You are terse."}
    assert request.system == "You are terse."
    assert request.body["tools"] == tools
    assert request.body["temperature"] == 0


async def test_chat_malformed_arguments_give_a_call_with_an_error() -> None:
    calls = [Call(ECHO.name, '{"message": "unterminated'), Call(ECHO.name, {"message": "fine"})]
    async with serve_scripted("openai", [Reply(tool_calls=calls)]) as server:
        async with OpenAIChatModel("m", api_key="k", base_url=server.base_url) as model:
            _, turn = await take_turn(model, [model.user_message("go")])
    bad, good = turn.tool_calls
    assert bad.id == "call_001" and bad.name == ECHO.name and bad.arguments == {}
    assert bad.error is not None and "not valid JSON" in bad.error
    assert good == ToolCall("call_002", ECHO.name, {"message": "fine"})
    assert turn.messages[0]["tool_calls"][0]["function"]["arguments"] == '{"message": "unterminated'


async def test_chat_a_rate_limit_once_is_retried_by_the_sdk() -> None:
    async with serve_scripted("openai", [Fail(429, retry_after=0), Reply(text="after the wait")]) as server:
        async with OpenAIChatModel("m", api_key="k", base_url=server.base_url, max_retries=2) as model:
            _, turn = await take_turn(model, [model.user_message("hi")])
    assert turn.text == "after the wait"
    assert len(server.requests) == 2 and server.script.left == 0


async def test_chat_a_rate_limit_that_lasts_is_a_retryable_provider_error() -> None:
    script = [Fail(429, "Rate limit reached for gpt-test", retry_after=0)] * 2
    async with serve_scripted("openai", script) as server:
        async with OpenAIChatModel("gpt-test", api_key="k", base_url=server.base_url, max_retries=1) as model:
            with pytest.raises(ProviderError) as caught:
                await take_turn(model, [model.user_message("hi")])
    error = caught.value
    assert error.status == 429 and error.retryable and error.provider == "openai"
    assert "rate limited" in str(error) and "Rate limit reached for gpt-test" in str(error)
    assert len(server.requests) == 2


async def test_chat_a_refused_key_names_the_environment_variable() -> None:
    async with serve_scripted("openai", [Fail(401)]) as server:
        environ = {"OPENAI_API_KEY": "sk-wrong", "OPENAI_BASE_URL": server.base_url}
        async with chat_model("openai:gpt-test", environ=environ, max_retries=0) as model:
            with pytest.raises(ProviderError) as caught:
                await take_turn(model, [model.user_message("hi")])
    error = caught.value
    assert error.status == 401 and not error.retryable
    assert "OPENAI_API_KEY" in str(error) and "Incorrect API key provided" in str(error)
    assert server.requests[0].api_key == "sk-wrong"


async def test_chat_an_unknown_model_is_named() -> None:
    message = "The model `gpt-nope` does not exist or you do not have access to it"
    async with serve_scripted("openai", [Fail(404, message)]) as server:
        async with OpenAIChatModel("gpt-nope", api_key="k", base_url=server.base_url, max_retries=0) as model:
            with pytest.raises(ProviderError) as caught:
                await take_turn(model, [model.user_message("hi")])
    assert caught.value.status == 404 and not caught.value.retryable
    assert "no model 'gpt-nope'" in str(caught.value) and message in str(caught.value)


async def test_chat_a_server_error_is_retryable() -> None:
    async with serve_scripted("openai", [Fail(500)]) as server:
        async with OpenAIChatModel("m", api_key="k", base_url=server.base_url, max_retries=0) as model:
            with pytest.raises(ProviderError) as caught:
                await take_turn(model, [model.user_message("hi")])
    assert caught.value.status == 500 and caught.value.retryable
    assert "The server had an error" in str(caught.value)
    assert len(server.requests) == 1


async def test_chat_an_exhausted_script_fails_visibly() -> None:
    async with serve_scripted("openai", []) as server:
        async with OpenAIChatModel("m", api_key="k", base_url=server.base_url, max_retries=0) as model:
            with pytest.raises(ProviderError, match="script exhausted"):
                await take_turn(model, [model.user_message("hi")])


async def test_chat_a_closed_port_cannot_be_reached() -> None:
    with closed_port() as port:
        url = f"http://127.0.0.1:{port}/v1"
        async with OpenAIChatModel("m", api_key="k", base_url=url, max_retries=0) as model:
            with pytest.raises(ProviderError) as caught:
                await take_turn(model, [model.user_message("hi")])
    assert f"cannot reach {url}" in str(caught.value) and "is the server running?" in str(caught.value)
    assert caught.value.retryable and caught.value.status is None


def test_chat_deltas_numbered_zero_with_their_own_ids_are_separate_calls() -> None:
    from mcpdeck.providers._openai_chat import _CallParts  # pyright: ignore[reportPrivateUsage]

    parts = _CallParts()
    parts.add(0, "call_a", "echo", '{"message":')
    parts.add(0, None, None, ' "x"}')
    parts.add(0, "call_b", "add", '{"a": 1, "b": 2}')  # a server that numbers every call 0
    parts.add(1, None, "get_", "")
    parts.add(1, None, "weather", "{}")  # a name sent in pieces
    parts.add(2, None, "echo", "")
    parts.add(2, None, "echo", '{"message": "y"}')  # a name repeated in every delta
    calls = parts.tool_calls()
    assert [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in calls[:2]] == [
        ("call_a", "echo", '{"message": "x"}'),
        ("call_b", "add", '{"a": 1, "b": 2}'),
    ]
    assert [c["function"]["name"] for c in calls[2:]] == ["get_weather", "echo"]
    assert all(c["id"].startswith("call_") for c in calls) and len({c["id"] for c in calls}) == 4


# ----- Responses -------------------------------------------------------------------------------


async def test_responses_text_streams_then_the_output_items() -> None:
    async with serve_scripted("openai-responses", [Reply(text="Hello via Responses", chunks=3)]) as server:
        async with OpenAIResponsesModel("gpt-test", api_key="k", base_url=server.base_url) as model:
            deltas, turn = await take_turn(model, [model.user_message("hi")], system="Be kind.")
    assert len(deltas) == 3 and "".join(deltas) == "Hello via Responses" == turn.text
    assert turn.stop_reason == "completed"
    assert turn.usage is not None and turn.usage.output_tokens == 7
    [item] = turn.messages
    assert item["type"] == "message" and item["role"] == "assistant"
    assert item["content"][0]["text"] == "Hello via Responses"
    [request] = server.requests
    assert request.path == "/v1/responses" and request.body["stream"] is True
    assert request.body["instructions"] == "Be kind." and request.system == "Be kind."
    assert request.messages == [{"role": "user", "content": "hi"}]


async def test_responses_parallel_calls_round_trip_with_reasoning_kept() -> None:
    script = [Reply(thinking="I should call both.", tool_calls=PARALLEL), echo_results]
    async with serve_scripted("openai-responses", script) as server:
        async with OpenAIResponsesModel("m", api_key="k", base_url=server.base_url) as model:
            tools = model.converter.tools(SPECS)
            messages: list[dict[str, Any]] = [model.user_message("go")]
            _, turn = await take_turn(model, messages, tools=tools)
            assert turn.tool_calls == [
                ToolCall("call_001", ECHO.name, {"message": "one"}),
                ToolCall("call_002", "mcp__everything__add", {"a": 2, "b": 3}),
                ToolCall("call_003", ECHO.name, {"message": "three"}),
            ]
            assert turn.stop_reason == "tool_calls"
            assert [m["type"] for m in turn.messages] == [
                "reasoning",
                "function_call",
                "function_call",
                "function_call",
            ]
            messages.extend(turn.messages)
            messages += model.converter.tool_results(answer(turn.tool_calls))
            _, final = await take_turn(model, messages, tools=tools)
    assert final.text == "Results: call_001=Echo: one; call_002=5; call_003=Echo: three"
    second = server.requests[1]
    assert second.messages[1:5] == turn.messages
    assert second.messages[5:] == [
        {"type": "function_call_output", "call_id": "call_001", "output": "Echo: one"},
        {"type": "function_call_output", "call_id": "call_002", "output": "5"},
        {"type": "function_call_output", "call_id": "call_003", "output": "Echo: three"},
    ]
    assert second.tools == tools and all(t["type"] == "function" for t in second.tools)


async def test_responses_malformed_arguments_and_errors() -> None:
    script = [Reply(tool_calls=[Call(ECHO.name, "{not json")]), Fail(429, retry_after=0), Fail(429, retry_after=0)]
    async with serve_scripted("openai-responses", script) as server:
        async with OpenAIResponsesModel("m", api_key="k", base_url=server.base_url, max_retries=1) as model:
            _, turn = await take_turn(model, [model.user_message("go")])
            with pytest.raises(ProviderError) as caught:
                await take_turn(model, [model.user_message("again")])
    [call] = turn.tool_calls
    assert call.id == "call_001" and call.error is not None and call.arguments == {}
    assert json.loads(json.dumps(turn.messages))[0]["arguments"] == "{not json"
    assert caught.value.status == 429 and caught.value.retryable
    assert len(server.requests) == 3
