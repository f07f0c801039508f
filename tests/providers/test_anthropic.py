"""Anthropic Messages: tools, tool_use blocks and tool_result blocks, checked with the anthropic SDK's types."""

from __future__ import annotations

import pytest

from mcpdeck.providers import AnthropicConverter, ToolCall, ToolCallError, ToolDefinition
from tests.providers import sdk
from tests.providers.awkward import ARGUMENTS, SCHEMAS, awkward_specs
from tests.providers.conftest import RealServers
from tests.providers.support import PNG, admits, every_spec, image, result, sample, text


def test_tools_for_the_real_servers_are_valid_sdk_params(real: RealServers) -> None:
    tools = AnthropicConverter().tools(real.catalog)
    assert [t["name"] for t in tools] == real.catalog.names()
    for tool in tools:
        sdk.anthropic_tool(tool)


def test_every_schema_gives_a_valid_tool_that_accepts_the_same_arguments() -> None:
    for tool in AnthropicConverter().tools(every_spec()):
        sdk.anthropic_tool(tool)
    for tool in AnthropicConverter().tools(awkward_specs()):
        if tool["name"] != "unresolvable_ref":
            admits(tool["input_schema"], ARGUMENTS[tool["name"]])


def test_the_tool_definition_has_the_exact_wire_shape() -> None:
    spec = ToolDefinition("get_weather", "Weather now", {"properties": {"city": {"type": "string"}}})
    assert AnthropicConverter().tool(spec) == {
        "name": "get_weather",
        "description": "Weather now",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
    assert AnthropicConverter().tool(ToolDefinition("bare"))["input_schema"] == {"type": "object", "properties": {}}


def test_recursion_is_kept_as_defs_and_a_root_union_is_flattened() -> None:
    tools = {t["name"]: t["input_schema"] for t in AnthropicConverter().tools(awkward_specs())}
    assert tools["recursive_tree"]["$defs"]["Node"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    assert "anyOf" not in tools["root_union"] and set(tools["root_union"]["properties"]) == {"id", "name"}
    assert SCHEMAS["root_union"].get("type") is None


def test_calls_round_trip_to_their_catalog_entries(real: RealServers) -> None:
    block_type = sdk.sdk("anthropic.types").ToolUseBlock
    converter = AnthropicConverter()
    for tool in real.catalog:
        arguments = sample(tool.input_schema)
        block = block_type(type="tool_use", id="toolu_1", name=tool.name, input=arguments)
        call = converter.parse_tool_call(block)
        assert call == ToolCall("toolu_1", tool.name, arguments)
        assert real.catalog.get(call.name) is tool
        assert tool.validate_arguments(call.arguments) == []


def test_a_reply_s_tool_use_blocks_are_read_and_other_blocks_skipped() -> None:
    message = sdk.sdk("anthropic.types").Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude",
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
            "content": [
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "toolu_1", "name": "a", "input": {"x": 1}},
                {"type": "tool_use", "id": "toolu_2", "name": "b", "input": {}},
            ],
        }
    )
    converter = AnthropicConverter()
    assert converter.tool_calls(message) == [ToolCall("toolu_1", "a", {"x": 1}), ToolCall("toolu_2", "b", {})]
    assert converter.tool_calls({"content": [{"type": "text", "text": "done"}]}) == []


def test_input_given_as_a_json_string_is_read_and_a_malformed_one_is_an_error() -> None:
    converter = AnthropicConverter()
    block = {"type": "tool_use", "id": "t", "name": "a", "input": '{"x": [1, 2]}'}
    assert converter.parse_tool_call(block).arguments == {"x": [1, 2]}
    with pytest.raises(ToolCallError, match="arguments of a are not valid JSON"):
        converter.parse_tool_call({**block, "input": '{"x": '})
    with pytest.raises(ToolCallError, match="no name"):
        converter.parse_tool_call({"type": "tool_use", "id": "t", "input": {}})


def test_results_of_the_real_servers_form_one_valid_user_message(real: RealServers) -> None:
    message_type = sdk.sdk("anthropic.types").MessageParam
    converter = AnthropicConverter()
    calls = [ToolCall(f"toolu_{i}", r.name, {}) for i, r in enumerate(real.results.values())]
    [message] = converter.tool_results(list(zip(calls, real.results.values(), strict=True)))
    sdk.adapter(message_type).validate_python(message)
    echo, picture, structured, denied = message["content"]
    for block in message["content"]:
        sdk.check_typed(block, sdk.sdk("anthropic.types").ToolResultBlockParam)
    assert echo == {"type": "tool_result", "tool_use_id": "toolu_0", "content": "Echo: hello"}
    assert [part["type"] for part in picture["content"]] == ["text", "image"]
    assert picture["content"][1]["source"]["media_type"] == "image/png"
    assert "temperature" in structured["content"]
    assert denied["is_error"] is True and "denied" in denied["content"].lower()
    assert converter.tool_results([]) == []


def test_a_result_keeps_its_error_flag_images_and_cap() -> None:
    converter = AnthropicConverter(max_chars=5)
    block = converter.tool_result(
        ToolCall("t", "n", {}), result(text("abcdefgh"), image(), image("image/bmp"), error=True)
    )
    assert block["is_error"] is True
    first, second = block["content"]
    assert first["type"] == "text" and first["text"].startswith("abcde\n\n[... ")
    assert second == {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    assert "is_error" not in converter.tool_result(ToolCall("t", "n", {}), result(text("ok")))
