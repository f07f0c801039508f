"""Checks against the official provider SDKs' own types (the SDKs are installed by scripts/setup).

The SDKs' request types are TypedDicts, which pydantic validates without refusing unknown
keys, so every check also compares the keys with the TypedDict's. Gemini's types are
pydantic models that forbid unknown fields, so they check the whole schema tree.
"""

from __future__ import annotations

import copy
import functools
import importlib
import json
from collections.abc import Mapping
from typing import Any, cast

from jsonschema.validators import Draft202012Validator
from pydantic import TypeAdapter


def sdk(module: str) -> Any:
    """An SDK module; a missing one fails the test (run scripts/setup), it never skips it."""
    return importlib.import_module(module)


@functools.cache
def adapter(kind: Any) -> TypeAdapter[Any]:
    return TypeAdapter(kind)


def check_typed(value: Mapping[str, Any], kind: Any) -> None:
    """``value`` validates as the SDK TypedDict ``kind`` and has no key ``kind`` does not know."""
    adapter(kind).validate_python(value)
    known: set[str] = {*kind.__required_keys__, *kind.__optional_keys__}
    assert set(value) <= known, f"unknown keys {set(value) - known} for {kind.__name__}"


def check_json_schema(schema: Mapping[str, Any]) -> None:
    """A valid JSON Schema whose root is a plain object, as OpenAI and Anthropic require."""
    Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object"
    assert isinstance(schema["properties"], dict)
    assert not {"anyOf", "oneOf", "allOf", "$schema"} & set(schema)


def openai_chat_tool(tool: Mapping[str, Any]) -> None:
    chat = sdk("openai.types.chat")
    shared = sdk("openai.types.shared_params")
    check_typed(tool, chat.ChatCompletionFunctionToolParam)
    check_typed(tool["function"], shared.FunctionDefinition)
    check_json_schema(tool["function"]["parameters"])
    sdk("openai.types.chat").ChatCompletionFunctionTool.model_validate(tool)


def openai_responses_tool(tool: Mapping[str, Any]) -> None:
    check_typed(tool, sdk("openai.types.responses").FunctionToolParam)
    check_json_schema(tool["parameters"])
    sdk("openai.types.responses").FunctionTool.model_validate(tool)


def openai_strict(schema: Mapping[str, Any]) -> None:
    """The OpenAI SDK's own strict-schema pass leaves the schema as it is, and every object is closed."""
    ensure = sdk("openai.lib._pydantic")._ensure_strict_json_schema
    again = copy.deepcopy(dict(schema))
    assert ensure(again, path=(), root=again) == schema

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            node = cast(dict[str, Any], node)
            assert not {"allOf", "oneOf", "default", "patternProperties", "minLength", "maxLength"} & set(node)
            if node.get("type") == "object" or (isinstance(node.get("type"), list) and "object" in node["type"]):
                assert node["additionalProperties"] is False
                assert node["required"] == list(node["properties"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in cast(list[Any], node):
                walk(value)

    walk(schema)


def anthropic_tool(tool: Mapping[str, Any]) -> None:
    types = sdk("anthropic.types")
    check_typed(tool, types.ToolParam)
    check_json_schema(tool["input_schema"])
    adapter(types.tool_param.InputSchemaTyped).validate_python(tool["input_schema"])


def gemini_tools(tools: list[dict[str, Any]]) -> list[Any]:
    """The tools as ``google.genai.types.Tool`` objects (which forbid unknown fields at every level)."""
    types = sdk("google.genai.types")
    return [types.Tool.model_validate(tool) for tool in tools]


def gemini_content(content: Mapping[str, Any]) -> Any:
    """A content as ``google.genai.types.Content``, read from JSON as the API would send it."""
    return sdk("google.genai.types").Content.model_validate_json(json.dumps(content))
