"""The conversion's short cuts give exactly what the full path gives (key order included).

- A catalog tool, whose definition is kept as compact JSON, converts as a ``ToolDefinition``
  with the same schema does, for every provider: its JSON text decides whether references are
  looked for at all (``_base.prepared``), and when it says none, ``inline_refs`` had nothing to do.
- Gemini: a node of one known type with nothing to normalise (``_openapi._plain``) converts as
  the general path (``_openapi._general``) converts it, for generated schemas and for schemas
  rich in the keywords plain nodes carry (bounds, defaults, formats, patterns, titles).

The generated input schemas are those of ``test_convert_properties.py``.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpdeck.catalog import build_catalog
from mcpdeck.providers import ToolDefinition, _base, _openapi, get_provider, inline_refs
from mcpdeck.providers._schema import prepare
from tests.providers.support import every_spec
from tests.support.tool_schemas import PROVIDERS, SETTINGS, schemas


def dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def catalog_of(schema: dict[str, Any]) -> Any:
    """A one-tool catalog (server ``s``, tool ``t``): the tool kept as the host keeps a listed tool."""
    return build_catalog({"s": [types.Tool(name="t", description="A tool", input_schema=schema)]}, 1)


@pytest.mark.parametrize("variant", PROVIDERS)
@SETTINGS
@given(schema=schemas())
def test_a_catalog_tool_converts_as_a_tool_definition_with_its_schema(variant: str, schema: dict[str, Any]) -> None:
    provider, options, _ = PROVIDERS[variant]
    from_catalog = get_provider(provider, **options).tools(catalog_of(schema))
    from_definition = get_provider(provider, **options).tools([ToolDefinition("mcp__s__t", "A tool", schema)])
    assert dump(from_catalog) == dump(from_definition)


@SETTINGS
@given(schema=schemas())
def test_when_the_json_shows_no_reference_inlining_has_nothing_to_do(schema: dict[str, Any]) -> None:
    (tool,) = catalog_of(schema)
    if not _base._may_refer(tool.schema_key):  # pyright: ignore[reportPrivateUsage]
        assert inline_refs(schema) is schema
        assert inline_refs(schema, keep_cycles=False) is schema


@pytest.mark.parametrize(
    ("schema", "may_refer"),
    [
        ({"type": "object", "properties": {"a": {"type": "string", "pattern": "^[a-z]+$"}}}, False),
        ({"type": "object", "properties": {"a": {"type": "string", "description": "costs 5$, or $ 5"}}}, False),
        ({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {}}}, True),
        ({"type": "object", "properties": {}, "$defs": {"A": {"type": "string"}}}, True),
        ({"type": "object", "properties": {}, "definitions": {"A": {"type": "string"}}}, True),
        ({"type": "object", "properties": {"definitions": {"type": "string"}}}, True),  # a name: only the walk
        ({"type": "object", "properties": {"a": {"type": "string", "default": "$5"}}}, True),  # a value: likewise
        ({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"}, True),
    ],
)
def test_the_json_text_says_when_references_may_be_there(schema: dict[str, Any], may_refer: bool) -> None:
    (tool,) = catalog_of(schema)
    assert _base._may_refer(tool.schema_key) is may_refer  # pyright: ignore[reportPrivateUsage]


def test_a_catalog_tool_without_references_is_not_walked_for_them(monkeypatch: pytest.MonkeyPatch) -> None:
    def walked(*_: object, **__: object) -> Any:
        raise AssertionError("prepare (the walk for references) was called")

    monkeypatch.setattr(_base, "prepare", walked)
    schema = {"type": "object", "properties": {"a": {"type": "string", "pattern": "^\\d{3}$"}}, "required": ["a"]}
    for provider, options in [
        ("openai", {}),
        ("openai-responses", {}),
        ("anthropic", {}),
        ("gemini", {}),
        ("gemini", {"json_schema": True}),
    ]:
        assert '"a"' in dump(get_provider(provider, **options).tools(catalog_of(schema)))
    with pytest.raises(AssertionError, match="walk for references"):
        get_provider("openai").tools(catalog_of({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}}))


def general(schema: dict[str, Any]) -> dict[str, Any]:
    """Gemini's conversion by the general path alone, at every level."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_openapi, "to_openapi", _openapi._general)  # pyright: ignore[reportPrivateUsage]
        return _openapi._general(schema)  # pyright: ignore[reportPrivateUsage]


@SETTINGS
@given(schema=schemas())
def test_gemini_plain_nodes_convert_as_the_general_path_converts_them(schema: dict[str, Any]) -> None:
    ready = prepare(schema, keep_cycles=False)
    assert dump(_openapi.to_openapi(ready)) == dump(general(ready))


LEAF_KEYWORDS: dict[str, st.SearchStrategy[Any]] = {
    "description": st.sampled_from(["", "What it is.", "A (nested) note"]),
    "title": st.sampled_from(["", "A title"]),
    "default": st.sampled_from([None, 0, 2.5, True, False, "x", [1], {"a": 1}]),
    "examples": st.just(["x"]),
    "format": st.sampled_from(["date-time", "enum", "int32", "int64", "float", "double", "email", "uri"]),
    "pattern": st.sampled_from(["^[a-z0-9-]{3,40}$", "^(?!x).*$", "a++"]),
    "minLength": st.sampled_from([0, 1, True]),
    "maxLength": st.integers(1, 9),
    "minimum": st.sampled_from([0, -1.5]),
    "maximum": st.integers(1, 200),
    "exclusiveMinimum": st.sampled_from([0, True, {"a": 1}]),
    "exclusiveMaximum": st.integers(1, 9),
    "multipleOf": st.sampled_from([2, 0.5]),
    "minItems": st.integers(0, 3),
    "maxItems": st.integers(1, 10),
    "uniqueItems": st.booleans(),
    "minProperties": st.integers(0, 2),
    "enum": st.sampled_from([["a", "b"], ["x"]]),
}


def _leaf(kind: str, keywords: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, **keywords}


def _object(properties: dict[str, Any], values: Any) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "object", "properties": properties, "required": [*sorted(properties)[:1], "x"]}
    if values is not None:
        node["additionalProperties"] = values
    return node


def _array(items: Any, most: int) -> dict[str, Any]:
    return {"type": "array", "items": items, "maxItems": most}


def _nest(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    values = st.sampled_from([None, False, {"type": "string"}, {}])
    objects = st.builds(_object, st.dictionaries(st.sampled_from(["a", "b", "c"]), children, max_size=3), values)
    return objects | st.builds(_array, children, st.integers(1, 5))


def plain_nodes() -> st.SearchStrategy[Any]:
    """Nodes of one type with the keywords plain nodes carry, nested in objects and arrays."""
    kinds = st.sampled_from(["string", "number", "integer", "boolean", "array", "object"])
    leaves = st.builds(_leaf, kinds, st.fixed_dictionaries({}, optional=LEAF_KEYWORDS))
    return st.recursive(leaves, _nest, max_leaves=8)


@SETTINGS
@given(node=plain_nodes())
def test_gemini_plain_nodes_with_every_keyword_convert_as_the_general_path(node: dict[str, Any]) -> None:
    assert dump(_openapi.to_openapi(node)) == dump(general(node))


def test_the_saved_real_and_awkward_schemas_convert_by_either_path_alike() -> None:
    for spec in every_spec():
        ready = prepare(spec.input_schema, keep_cycles=False)
        assert dump(_openapi.to_openapi(ready)) == dump(general(ready)), spec.name
