"""OpenAI Chat Completions and Responses: tools, calls and results, checked with the openai SDK's types."""

from __future__ import annotations

import json
from typing import Any, cast

import mcp_types as types
import pytest

from mcpdeck.providers import (
    OpenAIChatConverter,
    OpenAIResponsesConverter,
    ToolCall,
    ToolCallError,
    ToolDefinition,
    strict_schema,
    strip_nulls,
)
from mcpdeck.providers._schema import prepare
from tests.providers import sdk
from tests.providers.awkward import ARGUMENTS, SCHEMAS, awkward_specs
from tests.providers.conftest import RealServers
from tests.providers.support import PNG, admits, every_spec, image, result, sample, text

NOT_STRICT = {"free_form_maps", "no_type", "unresolvable_ref"}


def test_chat_tools_for_the_real_servers_are_valid_sdk_params(real: RealServers) -> None:
    tools = OpenAIChatConverter().tools(real.catalog)
    assert [t["function"]["name"] for t in tools] == real.catalog.names()
    for tool in tools:
        sdk.openai_chat_tool(tool)
        assert "strict" not in tool["function"]


@pytest.mark.parametrize("strict", [False, True])
def test_chat_and_responses_tools_are_valid_for_every_schema(strict: bool) -> None:
    specs = every_spec()
    for tool in OpenAIChatConverter(strict=strict).tools(specs):
        sdk.openai_chat_tool(tool)
        if tool["function"].get("strict"):
            sdk.openai_strict(tool["function"]["parameters"])
    for tool in OpenAIResponsesConverter(strict=strict).tools(specs):
        sdk.openai_responses_tool(tool)
        assert tool["strict"] is (strict and tool["name"] not in NOT_STRICT)


def test_the_tool_definition_has_the_exact_wire_shape() -> None:
    spec = ToolDefinition("get_weather", "Weather now", {"type": "object", "properties": {"city": {"type": "string"}}})
    parameters = {"type": "object", "properties": {"city": {"type": "string"}}}
    assert OpenAIChatConverter().tool(spec) == {
        "type": "function",
        "function": {"name": "get_weather", "description": "Weather now", "parameters": parameters},
    }
    assert OpenAIResponsesConverter().tool(spec) == {
        "type": "function",
        "name": "get_weather",
        "description": "Weather now",
        "parameters": parameters,
        "strict": False,
    }


def test_strict_mode_is_used_only_where_the_schema_allows_it() -> None:
    tools = {t["function"]["name"]: t["function"] for t in OpenAIChatConverter(strict=True).tools(awkward_specs())}
    assert {name for name, f in tools.items() if not f.get("strict")} == NOT_STRICT
    tree = tools["recursive_tree"]["parameters"]
    assert tree["$defs"]["Node"]["additionalProperties"] is False
    assert tree["properties"]["root"]["properties"]["children"]["type"] == ["array", "null"]
    formats = tools["formats"]["parameters"]["properties"]
    assert formats["when"] == {"type": "string", "format": "date-time"}
    assert formats["link"] == {"type": ["string", "null"], "description": "format: uri"}


@pytest.mark.parametrize("name", sorted(set(SCHEMAS) - NOT_STRICT))
def test_strict_schemas_accept_the_arguments_with_nulls_and_stripping_them_gives_the_originals(name: str) -> None:
    strict = strict_schema(SCHEMAS[name])
    assert strict is not None
    filled = fill_nulls(ARGUMENTS[name], strict)
    admits(strict, filled)
    assert strip_nulls(filled, prepare(SCHEMAS[name])) == ARGUMENTS[name]


def fill_nulls(arguments: Any, schema: dict[str, Any], root: dict[str, Any] | None = None) -> Any:
    """What a strict model sends: every property present, ``null`` where the caller had none."""
    root = root or schema
    if "$ref" in schema:
        schema = root["$defs"][schema["$ref"].removeprefix("#/$defs/")]
    if "anyOf" in schema and isinstance(arguments, dict):
        schema = next(b for b in schema["anyOf"] if b.get("type") != "null")
    if isinstance(arguments, dict) and "properties" in schema:
        given = cast(dict[str, Any], arguments)
        props: dict[str, Any] = schema["properties"]
        return {k: fill_nulls(given[k], props[k], root) if k in given else None for k in props}
    if isinstance(arguments, list) and isinstance(schema.get("items"), dict):
        return [fill_nulls(item, schema["items"], root) for item in cast(list[Any], arguments)]
    return cast(Any, arguments)


def test_a_strict_call_comes_back_without_the_nulls_for_optional_properties() -> None:
    converter = OpenAIChatConverter(strict=True)
    converter.tools(awkward_specs())
    call = {"id": "c1", "type": "function", "function": {"name": "formats", "arguments": '{"when": "x", "day": null}'}}
    assert converter.parse_tool_call(call).arguments == {"when": "x"}
    keeps = OpenAIChatConverter()
    keeps.tools(awkward_specs())
    assert keeps.parse_tool_call(call).arguments == {"when": "x", "day": None}


def test_calls_round_trip_to_their_catalog_entries(real: RealServers) -> None:
    chat, responses = OpenAIChatConverter(), OpenAIResponsesConverter()
    for tool in real.catalog:
        arguments = sample(tool.input_schema)
        wire = {"id": "call_1", "type": "function", "function": {"name": tool.name, "arguments": json.dumps(arguments)}}
        call = chat.parse_tool_call(sdk.sdk("openai.types.chat").ChatCompletionMessageFunctionToolCall(**wire))
        assert real.catalog.get(call.name) is tool
        assert call == ToolCall(id="call_1", name=tool.name, arguments=arguments)
        assert tool.validate_arguments(call.arguments) == []
        item = {"type": "function_call", "call_id": "fc_1", "name": tool.name, "arguments": json.dumps(arguments)}
        parsed = responses.parse_tool_call(sdk.sdk("openai.types.responses").ResponseFunctionToolCall(**item))
        assert (parsed.id, real.catalog.get(parsed.name), parsed.arguments) == ("fc_1", tool, arguments)


def test_arguments_may_be_a_string_an_object_double_encoded_or_empty() -> None:
    chat = OpenAIChatConverter()

    def parse(arguments: Any) -> dict[str, Any]:
        return chat.parse_tool_call({"id": "c", "function": {"name": "t", "arguments": arguments}}).arguments

    assert parse('{"a": 1}') == {"a": 1}
    assert parse({"a": 1}) == {"a": 1}
    assert parse(json.dumps('{"a": 1}')) == {"a": 1}
    assert parse("") == {} and parse(None) == {} and parse("  ") == {}


def test_malformed_arguments_raise_a_clear_error() -> None:
    chat = OpenAIChatConverter()
    with pytest.raises(ToolCallError, match=r"arguments of t are not valid JSON \(Expecting .* column 7\)") as info:
        chat.parse_tool_call({"id": "c9", "function": {"name": "t", "arguments": '{"a": }'}})
    assert (info.value.name, info.value.call_id, info.value.raw) == ("t", "c9", '{"a": }')
    with pytest.raises(ToolCallError, match="must be a JSON object, not list"):
        chat.parse_tool_call({"id": "c", "function": {"name": "t", "arguments": "[1]"}})
    with pytest.raises(ToolCallError, match="no function name"):
        chat.parse_tool_call({"id": "c", "function": {"arguments": "{}"}})


def test_a_message_s_calls_are_all_read_and_a_bad_one_carries_its_error() -> None:
    message = sdk.sdk("openai.types.chat").ChatCompletionMessage.model_validate(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "a", "arguments": '{"x": 1}'}},
                {"id": "c2", "type": "function", "function": {"name": "b", "arguments": "{oops"}},
            ],
        }
    )
    good, bad = OpenAIChatConverter().tool_calls(message)
    assert good == ToolCall("c1", "a", {"x": 1})
    assert (bad.id, bad.name, bad.arguments) == ("c2", "b", {})
    assert bad.error is not None and "not valid JSON" in bad.error
    assert OpenAIChatConverter().tool_calls({"role": "assistant", "content": "hi"}) == []


def test_responses_calls_are_read_from_the_output_items() -> None:
    output: list[dict[str, Any]] = [
        {"type": "reasoning", "id": "r1", "summary": []},
        {"type": "function_call", "call_id": "fc1", "name": "a", "arguments": "{}"},
        {"type": "message", "role": "assistant", "content": []},
    ]
    assert OpenAIResponsesConverter().tool_calls({"output": output}) == [ToolCall("fc1", "a", {})]
    assert OpenAIResponsesConverter().tool_calls(output) == [ToolCall("fc1", "a", {})]


def test_chat_results_of_the_real_servers_are_valid_messages(real: RealServers) -> None:
    chat_types = sdk.sdk("openai.types.chat")
    chat = OpenAIChatConverter()
    calls = [ToolCall(f"c{i}", r.name, {}) for i, r in enumerate(real.results.values())]
    messages = chat.tool_results(list(zip(calls, real.results.values(), strict=True)))
    tool_messages, follow_up = messages[:-1], messages[-1]
    assert [m["tool_call_id"] for m in tool_messages] == [c.id for c in calls]
    for message in tool_messages:
        sdk.check_typed(message, chat_types.ChatCompletionToolMessageParam)
        assert isinstance(message["content"], str)
    assert tool_messages[0]["content"] == "Echo: hello"
    assert tool_messages[3]["content"].startswith("Error")
    sdk.check_typed(follow_up, chat_types.ChatCompletionUserMessageParam)
    assert follow_up["content"][0] == {
        "type": "text",
        "text": "Image(s) returned by mcp__everything__get-tiny-image (call c1):",
    }
    assert follow_up["content"][1]["image_url"]["url"].startswith("data:image/png;base64,iVBOR")


def test_chat_results_say_failure_cap_text_and_never_leave_content_empty() -> None:
    chat = OpenAIChatConverter(max_chars=20)
    call = ToolCall("c", "t", {})
    assert chat.tool_result(call, result(text("boom"), error=True))["content"] == "Error: boom"
    assert chat.tool_result(call, result(text("Error: boom"), error=True))["content"] == "Error: boom"
    capped = OpenAIChatConverter(max_chars=10).tool_result(call, result(text("x" * 50)))["content"]
    assert capped.startswith("x" * 10 + "\n\n[... 40 of 50 characters cut")
    assert chat.tool_result(call, result())["content"] == "(no content)"
    assert chat.tool_results([(call, result(text("no images")))]) == [
        {"role": "tool", "tool_call_id": "c", "content": "no images"}
    ]


def test_responses_outputs_carry_images_as_input_parts(real: RealServers) -> None:
    item_type = sdk.sdk("openai.types.responses.response_input_item_param").FunctionCallOutput
    responses = OpenAIResponsesConverter()
    items = responses.tool_results([(ToolCall(f"fc{i}", r.name, {}), r) for i, r in enumerate(real.results.values())])
    for item in items:
        sdk.check_typed(item, item_type)
    assert items[0] == {"type": "function_call_output", "call_id": "fc0", "output": "Echo: hello"}
    text_part, image_part = items[1]["output"]
    assert text_part["type"] == "input_text"
    assert image_part == {
        "type": "input_image",
        "image_url": f"data:image/png;base64,{real_png(real)}",
        "detail": "auto",
    }
    one = responses.tool_result(ToolCall("x", "t", {}), result(text("see"), image(), image("image/tiff")))
    assert [p["type"] for p in one["output"]] == ["input_text", "input_image"]
    assert one["output"][1]["image_url"] == f"data:image/png;base64,{PNG}"


def real_png(real: RealServers) -> str:
    return next(b.data for b in real.results["image"].content if isinstance(b, types.ImageContent))
