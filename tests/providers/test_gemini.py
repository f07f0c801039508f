"""Gemini: function declarations in the OpenAPI subset, functionCall parts, functionResponse parts.

Checked with ``google.genai.types``, whose models refuse unknown fields at every level.
"""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema.validators import Draft202012Validator

from mcpdeck.providers import GeminiConverter, ToolCall, ToolCallError, ToolDefinition, gemini_schema
from tests.providers import sdk
from tests.providers.awkward import ARGUMENTS, SCHEMAS
from tests.providers.conftest import RealServers
from tests.providers.support import admits, every_spec, image, png_bytes, result, sample, text

OPENAPI_KEYS = {
    "type",
    "format",
    "description",
    "nullable",
    "enum",
    "items",
    "minItems",
    "maxItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "anyOf",
}


def as_json_schema(node: dict[str, Any]) -> dict[str, Any]:
    """Read a Gemini schema back as JSON Schema, to check which arguments it admits."""
    out: dict[str, Any] = {}
    if "type" in node:
        out["type"] = [node["type"].lower(), "null"] if node.get("nullable") else node["type"].lower()
    if "anyOf" in node:
        out["anyOf"] = [as_json_schema(b) for b in node["anyOf"]] + ([{"type": "null"}] if node.get("nullable") else [])
    if "enum" in node:
        out["enum"] = node["enum"] + ([None] if node.get("nullable") else [])
    if "items" in node:
        out["items"] = as_json_schema(node["items"])
    if "properties" in node:
        out["properties"] = {k: as_json_schema(v) for k, v in node["properties"].items()}
    for key in ("required", "minimum", "maximum", "minLength", "maxLength", "minItems", "pattern"):
        if key in node:
            out[key] = node[key]
    return out


def keys_used(node: Any) -> set[str]:
    """Every keyword used anywhere in a Gemini schema."""
    if node is None:
        return set()
    used = set(node)
    children = [node.get("items"), *node.get("anyOf", []), *node.get("properties", {}).values()]
    for child in children:
        used |= keys_used(child)
    return used


def test_declarations_for_the_real_servers_are_valid_sdk_tools(real: RealServers) -> None:
    tools = GeminiConverter().tools(real.catalog)
    [tool] = sdk.gemini_tools(tools)
    assert [d.name for d in tool.function_declarations] == real.catalog.names()
    declarations = {d["name"]: d for d in tools[0]["functionDeclarations"]}
    assert "parameters" not in declarations["mcp__everything__get-env"]
    assert declarations["mcp__everything__echo"]["parameters"] == {
        "type": "OBJECT",
        "properties": {"message": {"type": "STRING", "description": "Message to echo"}},
        "required": ["message"],
    }


@pytest.mark.parametrize("json_schema", [False, True])
def test_every_schema_gives_valid_sdk_tools(json_schema: bool) -> None:
    tools = GeminiConverter(json_schema=json_schema).tools(every_spec())
    sdk.gemini_tools(tools)
    for declaration in tools[0]["functionDeclarations"]:
        if json_schema:
            Draft202012Validator.check_schema(declaration["parametersJsonSchema"])
        else:
            assert keys_used(declaration.get("parameters")) <= OPENAPI_KEYS


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_the_subset_still_admits_the_arguments(name: str) -> None:
    schema = gemini_schema(SCHEMAS[name])
    if schema is None:
        assert ARGUMENTS[name] == {}
        return
    admits(as_json_schema(schema), ARGUMENTS[name])


def test_the_fix_ups_gemini_needs() -> None:
    props = {n: gemini_schema(s) for n, s in SCHEMAS.items()}
    nullable = props["nullable_unions"]
    assert nullable is not None
    assert nullable["properties"]["maybe_text"] == {
        "type": "STRING",
        "nullable": True,
        "description": "Text or nothing",
    }
    assert nullable["properties"]["maybe_count"] == {"type": "INTEGER", "nullable": True, "minimum": 0}
    assert nullable["properties"]["text_or_number"] == {"anyOf": [{"type": "STRING"}, {"type": "NUMBER"}]}
    enums = props["enums_and_consts"]
    assert enums is not None
    assert enums["properties"]["kind"] == {"type": "STRING", "enum": ["fixed"]}
    assert enums["properties"]["level"] == {"type": "INTEGER", "description": "one of: 1, 2, 3"}
    assert enums["properties"]["maybe_mode"] == {"type": "STRING", "nullable": True, "enum": ["fast", "slow"]}
    formats = props["formats"]
    assert formats is not None
    assert formats["properties"]["when"] == {"type": "STRING", "format": "date-time"}
    assert formats["properties"]["link"] == {"type": "STRING", "description": "format: uri"}
    assert "pattern" not in formats["properties"]["word"]
    maps = props["free_form_maps"]
    assert maps is not None
    assert maps["properties"]["metadata"] == {"type": "OBJECT"}
    assert maps["properties"]["headers"] == {
        "type": "OBJECT",
        "description": "an object whose values are of type string",
    }
    tree = props["recursive_tree"]
    assert tree is not None
    assert tree["properties"]["root"]["properties"]["children"]["items"]["type"] == "OBJECT"
    assert props["empty_object"] is None and props["nothing_at_all"] is None
    long = props["long_description"]
    assert long is not None and "title" not in long["properties"]["text"]


def test_the_declaration_has_the_exact_wire_shape() -> None:
    spec = ToolDefinition("get_weather", "Weather now", {"type": "object", "properties": {"city": {"type": "string"}}})
    assert GeminiConverter().tools([spec]) == [
        {
            "functionDeclarations": [
                {
                    "name": "get_weather",
                    "description": "Weather now",
                    "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING"}}},
                }
            ]
        }
    ]
    assert GeminiConverter().tools([]) == []
    with pytest.raises(ValueError, match="Gemini does not accept the tool name '9lives'"):
        GeminiConverter().tool(ToolDefinition("9lives"))


def test_calls_round_trip_to_their_catalog_entries(real: RealServers) -> None:
    types = sdk.sdk("google.genai.types")
    converter = GeminiConverter()
    for tool in real.catalog:
        arguments = sample(tool.input_schema)
        part = types.Part(function_call=types.FunctionCall(id="fc1", name=tool.name, args=arguments))
        call = converter.parse_tool_call(part)
        assert call == ToolCall("fc1", tool.name, arguments)
        assert real.catalog.get(call.name) is tool


def test_a_reply_s_function_calls_are_read_from_the_first_candidate() -> None:
    types = sdk.sdk("google.genai.types")
    response = types.GenerateContentResponse.model_validate(
        {
            "candidates": [
                {
                    "content": {
                        "role": "model",
                        "parts": [
                            {"text": "Checking."},
                            {"functionCall": {"name": "a", "args": {"x": 1}}},
                            {"functionCall": {"id": "id2", "name": "b"}},
                        ],
                    }
                }
            ]
        }
    )
    expected = [ToolCall(None, "a", {"x": 1}), ToolCall("id2", "b", {})]
    converter = GeminiConverter()
    assert converter.tool_calls(response) == expected
    assert converter.tool_calls(response.candidates[0].content) == expected
    assert converter.tool_calls([{"text": "no calls"}]) == []
    with pytest.raises(ToolCallError, match="no name"):
        converter.parse_tool_call({"functionCall": {"args": {}}})


def test_results_of_the_real_servers_form_one_valid_user_content(real: RealServers) -> None:
    converter = GeminiConverter()
    calls = [ToolCall(None, r.name, {}) for r in real.results.values()]
    [content] = converter.tool_results(list(zip(calls, real.results.values(), strict=True)))
    parsed = sdk.gemini_content(content)
    assert parsed.role == "user"
    echo, picture, _, denied, inline = parsed.parts
    assert echo.function_response.name == "mcp__everything__echo"
    assert echo.function_response.response == {"output": "Echo: hello"}
    assert "[image: image/png" in picture.function_response.response["output"]
    assert "denied" in denied.function_response.response["error"].lower()
    assert inline.inline_data.mime_type == "image/png"
    assert inline.inline_data.data.startswith(b"\x89PNG")


def test_multimodal_responses_put_images_inside_the_function_response() -> None:
    converter = GeminiConverter(multimodal_responses=True, max_chars=3)
    [content] = converter.tool_results(
        [(ToolCall("id1", "t", {}), result(text("abcdef"), image(), image("image/gif")))]
    )
    [part] = content["parts"]
    response = part["functionResponse"]
    assert response["id"] == "id1" and response["name"] == "t"
    assert response["response"]["output"].startswith("abc\n\n[... ")
    parsed = sdk.gemini_content(content).parts[0].function_response
    [inline] = parsed.parts
    assert (inline.inline_data.mime_type, inline.inline_data.data) == ("image/png", png_bytes())
