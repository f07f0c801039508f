"""Claude through the anthropic SDK, against the scripted Messages server."""

from __future__ import annotations

import sys

import pytest

from mcpdeck.errors import ProviderError
from mcpdeck.providers import ToolCall, chat_model
from mcpdeck.providers._anthropic_chat import AnthropicModel
from tests.helpers import closed_port
from tests.llm.scripted import Call, Fail, Received, Reply, serve_scripted
from tests.llm.turns import ECHO, SPECS, answer, take_turn

pytestmark = pytest.mark.anyio

ADD = "mcp__everything__add"


def echo_results(request: Received) -> Reply:
    """A final answer that repeats every tool result the request carried."""
    return Reply(text="Results: " + "; ".join(f"{i}={t}" for i, t in request.tool_results))


async def test_text_streams_in_pieces_then_the_turn() -> None:
    async with serve_scripted("anthropic", [Reply(text="Hello from Claude", chunks=3)]) as server:
        async with AnthropicModel("claude-test", api_key="sk-ant", base_url=server.base_url) as model:
            deltas, turn = await take_turn(model, [model.user_message("hi")])
    assert len(deltas) == 3 and "".join(deltas) == "Hello from Claude" == turn.text
    assert turn.messages == [{"role": "assistant", "content": [{"type": "text", "text": "Hello from Claude"}]}]
    assert turn.stop_reason == "end_turn" and turn.tool_calls == []
    assert turn.usage is not None and (turn.usage.input_tokens, turn.usage.output_tokens) == (11, 7)
    [request] = server.requests
    assert request.path == "/v1/messages" and request.api_key == "sk-ant"
    assert request.headers["anthropic-version"]
    assert request.body["stream"] is True and request.body["max_tokens"] == 8192
    assert request.model == "claude-test" and "system" not in request.body and "tools" not in request.body


async def test_one_tool_call_with_its_input_streamed_in_pieces() -> None:
    script = [Reply(text="I'll echo.", tool_calls=[Call(ECHO.name, {"message": "hi there"})])]
    async with serve_scripted("anthropic", script) as server:
        async with AnthropicModel("m", api_key="k", base_url=server.base_url) as model:
            _, turn = await take_turn(model, [model.user_message("echo")], tools=model.converter.tools(SPECS))
    assert turn.tool_calls == [ToolCall("toolu_001", ECHO.name, {"message": "hi there"})]
    assert turn.stop_reason == "tool_use"
    assert turn.messages[0]["content"] == [
        {"type": "text", "text": "I'll echo."},
        {"type": "tool_use", "id": "toolu_001", "name": ECHO.name, "input": {"message": "hi there"}},
    ]


async def test_parallel_calls_round_trip_as_one_user_message_of_tool_results() -> None:
    calls = [Call(ECHO.name, {"message": "a"}), Call(ADD, {"a": 1, "b": 2}), Call(ECHO.name, {"message": "c"})]
    async with serve_scripted("anthropic", [Reply(tool_calls=calls), echo_results]) as server:
        async with AnthropicModel("m", api_key="k", base_url=server.base_url) as model:
            tools = model.converter.tools(SPECS)
            messages = [model.user_message("go")]
            _, turn = await take_turn(model, messages, tools=tools, system="Use the tools.")
            assert [(c.id, c.name) for c in turn.tool_calls] == [
                ("toolu_001", ECHO.name),
                ("toolu_002", ADD),
                ("toolu_003", ECHO.name),
            ]
            assert [c.arguments for c in turn.tool_calls] == [{"message": "a"}, {"a": 1, "b": 2}, {"message": "c"}]
            messages.extend(turn.messages)
            messages += model.converter.tool_results(answer(turn.tool_calls))
            _, final = await take_turn(model, messages, tools=tools, system="Use the tools.")
    assert final.text == "Results: toolu_001=Echo: a; toolu_002=3; toolu_003=Echo: c"
    second = server.requests[1]
    assert second.messages[1] == turn.messages[0]
    assert second.messages[2] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_001", "content": "Echo: a"},
            {"type": "tool_result", "tool_use_id": "toolu_002", "content": "3"},
            {"type": "tool_result", "tool_use_id": "toolu_003", "content": "Echo: c"},
        ],
    }
    assert second.body["system"] == "Use the tools." and second.tools == tools


async def test_thinking_blocks_are_kept_with_their_signature_and_sent_back() -> None:
    script = [
        Reply(thinking="Need the echo tool.", signature="sig-abc", tool_calls=[Call(ECHO.name, {"message": "x"})])
    ]
    script.append(Reply(text="done"))
    async with serve_scripted("anthropic", script) as server:
        params = {"thinking": {"type": "enabled", "budget_tokens": 1024}}
        async with AnthropicModel("m", api_key="k", base_url=server.base_url, max_tokens=2048, params=params) as model:
            messages = [model.user_message("go")]
            deltas, turn = await take_turn(model, messages)
            messages.extend(turn.messages)
            messages += model.converter.tool_results(answer(turn.tool_calls))
            await take_turn(model, messages)
    assert deltas == [] and turn.text == ""
    thinking = {"type": "thinking", "thinking": "Need the echo tool.", "signature": "sig-abc"}
    assert turn.messages[0]["content"][0] == thinking
    first, second = server.requests
    assert first.body["max_tokens"] == 2048 and first.body["thinking"] == params["thinking"]
    assert second.messages[1]["content"][0] == thinking


async def test_malformed_input_json_gives_a_call_with_an_error_and_an_empty_input() -> None:
    calls = [Call(ECHO.name, '{"message": '), Call(ADD, {"a": 1, "b": 1})]
    async with serve_scripted("anthropic", [Reply(tool_calls=calls)]) as server:
        async with AnthropicModel("m", api_key="k", base_url=server.base_url) as model:
            _, turn = await take_turn(model, [model.user_message("go")])
    bad, good = turn.tool_calls
    assert bad.id == "toolu_001" and bad.arguments == {} and bad.error is not None and "not valid JSON" in bad.error
    assert good == ToolCall("toolu_002", ADD, {"a": 1, "b": 1})
    assert turn.messages[0]["content"][0]["input"] == {}  # the API takes only objects back


async def test_a_rate_limit_once_is_retried_by_the_sdk() -> None:
    async with serve_scripted("anthropic", [Fail(429, retry_after=0), Reply(text="ok")]) as server:
        async with AnthropicModel("m", api_key="k", base_url=server.base_url, max_retries=2) as model:
            _, turn = await take_turn(model, [model.user_message("hi")])
    assert turn.text == "ok" and len(server.requests) == 2


async def test_a_lasting_rate_limit_and_overload_are_retryable_errors() -> None:
    script = [Fail(429, "Number of request tokens has exceeded your limit", retry_after=0)] * 2 + [Fail(529)]
    async with serve_scripted("anthropic", script) as server:
        async with AnthropicModel("m", api_key="k", base_url=server.base_url, max_retries=1) as model:
            with pytest.raises(ProviderError) as limited:
                await take_turn(model, [model.user_message("hi")])
            model_once = AnthropicModel("m", api_key="k", base_url=server.base_url, max_retries=0)
            async with model_once:
                with pytest.raises(ProviderError) as overloaded:
                    await take_turn(model_once, [model_once.user_message("hi")])
    assert limited.value.status == 429 and limited.value.retryable
    assert "Number of request tokens has exceeded your limit" in str(limited.value)
    assert overloaded.value.status == 529 and overloaded.value.retryable and "Overloaded" in str(overloaded.value)
    assert len(server.requests) == 3


async def test_a_refused_key_names_the_environment_variable() -> None:
    async with serve_scripted("anthropic", [Fail(401)]) as server:
        environ = {"ANTHROPIC_API_KEY": "sk-ant-wrong", "ANTHROPIC_BASE_URL": server.base_url}
        async with chat_model("anthropic:claude-test", environ=environ, max_retries=0) as model:
            with pytest.raises(ProviderError) as caught:
                await take_turn(model, [model.user_message("hi")])
    assert caught.value.status == 401 and not caught.value.retryable
    assert "ANTHROPIC_API_KEY" in str(caught.value) and "invalid x-api-key" in str(caught.value)
    assert server.requests[0].api_key == "sk-ant-wrong"


async def test_a_server_error_and_an_unreachable_server() -> None:
    async with serve_scripted("anthropic", [Fail(500)]) as server:
        async with AnthropicModel("m", api_key="k", base_url=server.base_url, max_retries=0) as model:
            with pytest.raises(ProviderError) as failed:
                await take_turn(model, [model.user_message("hi")])
    assert failed.value.status == 500 and failed.value.retryable and "Internal server error" in str(failed.value)
    with closed_port() as port:
        url = f"http://127.0.0.1:{port}"
        async with AnthropicModel("m", api_key="k", base_url=url, max_retries=0) as model:
            with pytest.raises(ProviderError) as unreachable:
                await take_turn(model, [model.user_message("hi")])
    assert f"cannot reach {url}" in str(unreachable.value) and unreachable.value.retryable


def test_a_missing_sdk_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)  # import anthropic now raises ImportError
    with pytest.raises(ProviderError, match=r"pip install 'mcpdeck\[anthropic\]'") as caught:
        chat_model("anthropic:claude-test", environ={"ANTHROPIC_API_KEY": "k"})
    assert caught.value.provider == "anthropic"
