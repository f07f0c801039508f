"""The registry, the shared interface, and the cache of converted tools per catalog version."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest

import mcpdeck.providers as providers
from mcpdeck import CatalogTool
from mcpdeck.catalog import Catalog, build_catalog
from mcpdeck.providers import (
    AnthropicConverter,
    Converter,
    GeminiConverter,
    OpenAIChatConverter,
    OpenAIResponsesConverter,
    ToolDefinition,
    ToolSpec,
    error_result,
    get_provider,
    provider_names,
    register_provider,
)

SOURCE = Path(providers.__file__).parent


def big_catalog(size: int, version: int = 1) -> Catalog:
    tools = [
        types.Tool(
            name=f"tool_{i}",
            description=f"Tool number {i}",
            input_schema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        )
        for i in range(size)
    ]
    return build_catalog({"srv": tools}, version)


def test_get_provider_builds_each_converter_with_its_options() -> None:
    assert provider_names() == ["anthropic", "gemini", "openai", "openai-responses"]
    assert type(get_provider("openai")) is OpenAIChatConverter
    assert type(get_provider("OpenAI-Responses")) is OpenAIResponsesConverter
    assert type(get_provider("anthropic")) is AnthropicConverter
    gemini = get_provider("gemini", json_schema=True, max_chars=10)
    assert isinstance(gemini, GeminiConverter) and gemini.json_schema and gemini.max_chars == 10
    openai = get_provider("openai", strict=True)
    assert isinstance(openai, OpenAIChatConverter) and openai.strict
    assert get_provider("openai") is not get_provider("openai")
    with pytest.raises(ValueError, match="unknown provider 'mistral'; known: anthropic, gemini, openai"):
        get_provider("mistral")


def test_a_provider_can_be_registered() -> None:
    class Custom(OpenAIChatConverter):
        provider = "custom"

    register_provider("custom", Custom)
    try:
        assert type(get_provider("custom")) is Custom
    finally:
        providers._PROVIDERS.pop("custom")  # pyright: ignore[reportPrivateUsage]


def test_catalog_tools_and_definitions_are_tool_specs() -> None:
    tool = next(iter(big_catalog(1)))
    assert isinstance(tool, CatalogTool) and isinstance(tool, ToolSpec)
    assert isinstance(ToolDefinition("native"), ToolSpec)
    spec: ToolSpec = tool  # a static check too: pyright verifies CatalogTool satisfies the protocol
    assert spec.input_schema["required"] == ["n"]


@pytest.mark.parametrize("name", ["openai", "openai-responses", "anthropic", "gemini"])
def test_converting_the_same_catalog_version_again_returns_the_identical_list(name: str) -> None:
    converter = get_provider(name)
    catalog = big_catalog(1000)
    first = converter.tools(catalog)
    assert converter.tools(catalog) is first
    native = ToolDefinition("native_clock", "What time is it")
    with_native = converter.tools(catalog, [native])
    assert with_native is not first and converter.tools(catalog, [native]) is with_native
    assert converter.tools(catalog) is first
    assert converter.tools(catalog, [ToolDefinition("native_clock", "What time is it")]) is not with_native
    newer = big_catalog(1000, version=2)
    assert converter.tools(newer) is not first


def test_a_plain_iterable_is_converted_every_time_and_natives_come_first() -> None:
    converter = AnthropicConverter()
    specs = [ToolDefinition("a"), ToolDefinition("b")]
    first = converter.tools(specs, [ToolDefinition("native")])
    assert [t["name"] for t in first] == ["native", "a", "b"]
    assert converter.tools(specs, [ToolDefinition("native")]) == first
    assert converter.tools(specs, [ToolDefinition("native")]) is not first


def test_duplicate_and_refused_names_are_errors() -> None:
    converter = OpenAIChatConverter()
    with pytest.raises(ValueError, match="two tools are named 'mcp__srv__tool_0'"):
        converter.tools(big_catalog(2), [ToolDefinition("mcp__srv__tool_0")])
    with pytest.raises(ValueError, match=r"OpenAI does not accept the tool name 'has space'"):
        converter.tool(ToolDefinition("has space"))
    with pytest.raises(ValueError, match="Anthropic does not accept"):
        AnthropicConverter().tool(ToolDefinition("x" * 65))


def test_descriptions_can_be_capped() -> None:
    spec = ToolDefinition("t", "x" * 100)
    tool: dict[str, Any] = OpenAIChatConverter(max_description=10).tool(spec)
    assert tool["function"]["description"] == "x" * 9 + "…"
    assert OpenAIChatConverter().tool(spec)["function"]["description"] == "x" * 100


def test_the_package_exports_exactly_its_public_names_and_imports_no_provider_sdk_at_load() -> None:
    assert sorted(providers.__all__) == providers.__all__
    for name in providers.__all__:
        assert getattr(providers, name) is not None
    assert issubclass(GeminiConverter, Converter)
    for path in SOURCE.glob("*.py"):
        tree = ast.parse(path.read_text())
        # the SDKs are optional extras: a chat adapter imports its SDK inside the code that needs it
        top = [node for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)]
        imported = {alias.name for node in top if isinstance(node, ast.Import) for alias in node.names}
        imported |= {node.module or "" for node in top if isinstance(node, ast.ImportFrom)}
        assert not {m for m in imported if m.split(".")[0] in {"openai", "anthropic", "google"}}, path.name
        assert len(path.read_text().splitlines()) <= 320, path.name


@pytest.mark.parametrize("name", ["openai", "anthropic"])
def test_a_new_catalog_version_converts_only_the_tools_that_changed(name: str) -> None:
    converter = get_provider(name)
    kept = [types.Tool(name=f"t{i}", input_schema={"type": "object", "properties": {}}) for i in range(3)]
    first = converter.tools(build_catalog({"a": kept}, 1))
    changed = types.Tool(name="t2", input_schema={"type": "object", "properties": {"x": {"type": "string"}}})
    second = converter.tools(build_catalog({"a": [*kept[:2], changed]}, 2))
    assert second is not first
    assert second[0] is first[0] and second[1] is first[1]
    assert second[2] is not first[2] and second[2] != first[2]


def test_an_unreadable_call_is_answered_with_an_error_result() -> None:
    converter = AnthropicConverter()
    [call] = converter.tool_calls([{"type": "tool_use", "id": "t1", "name": "a", "input": "{bad"}])
    assert call.error is not None
    block = converter.tool_result(call, error_result(call, call.error))
    assert block["is_error"] is True and block["tool_use_id"] == "t1"
    assert block["content"].startswith("the arguments of a are not valid JSON")
