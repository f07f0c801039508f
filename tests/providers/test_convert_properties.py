"""Properties of tool conversion that hold for any input schema (generated with hypothesis).

- Converting never changes the input schema (key order included).
- Every provider's output is valid by that provider's own SDK types (``sdk.py``), and plain JSON.
- Converting the same schema again gives the same output.
- The JSON-Schema-to-JSON-Schema fix-ups settle: applied to their own output they change
  nothing. This holds for schemas without recursive references; with a cycle kept in
  ``$defs``, a second ``inline_refs`` unrolls it one level further, by design (the
  recursive cases are in ``test_schema.py`` and in the snapshots).

``gemini_schema`` is left out of the last property: its output is Gemini's OpenAPI
subset, not JSON Schema, so it is not an input it takes.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable, Mapping
from typing import Any, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcpdeck.providers import ToolDefinition, get_provider, inline_refs, merge_all_of, object_root, strict_schema
from mcpdeck.providers._schema import prepare
from tests.providers import sdk

SETTINGS = settings(
    max_examples=25, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
"""Derandomized: the same examples on every run, so a failure is never a fluke of one run."""

NAMES = st.sampled_from(["alpha", "beta", "id", "name", "x", "a/b", "a~b", "with space"])
DEFS = ("A", "B", "Item")
TYPES = ("string", "integer", "number", "boolean", "null")


def scalars() -> st.SearchStrategy[dict[str, Any]]:
    """A leaf: a type or a type list, with the keywords providers differ on."""
    return st.fixed_dictionaries(
        {"type": st.sampled_from(TYPES) | st.lists(st.sampled_from(TYPES), min_size=1, max_size=3, unique=True)},
        optional={
            "description": st.text(max_size=12),
            "enum": st.lists(st.sampled_from(["a", "b", 1, None]), min_size=1, max_size=3, unique=True),
            "format": st.sampled_from(["date-time", "email", "uri", "int64", "uuid"]),
            "minimum": st.integers(-5, 5),
            "maxLength": st.integers(1, 40),
            "pattern": st.sampled_from(["^[a-z]+$", "^\\d{3}$"]),
            "default": st.sampled_from(["x", 1, None]),
            "nullable": st.booleans(),
        },
    )


def _object(properties: dict[str, Any], required: bool, closed: bool | None) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "object", "properties": properties}
    if required and properties:
        node["required"] = sorted(properties)[: max(1, len(properties) // 2)]
    if closed is not None:
        node["additionalProperties"] = closed
    return node


def _array(items: Any) -> dict[str, Any]:
    return {"type": "array", "items": items}


def _combined(pair: tuple[str, list[Any]]) -> dict[str, Any]:
    return {pair[0]: pair[1]}


def _map(values: Any) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": values}


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/$defs/{name}"}


def _extend(children: st.SearchStrategy[Any], refs: bool) -> st.SearchStrategy[Any]:
    options: list[st.SearchStrategy[Any]] = [
        st.builds(_object, st.dictionaries(NAMES, children, max_size=4), st.booleans(), st.none() | st.booleans()),
        children.map(_array),
        st.tuples(st.sampled_from(["anyOf", "oneOf", "allOf"]), st.lists(children, min_size=1, max_size=3)).map(
            _combined
        ),
        children.map(_map),
    ]
    if refs:
        options.append(st.sampled_from(DEFS).map(_ref))
    return st.one_of(options)


def subschemas(*, refs: bool) -> st.SearchStrategy[Any]:
    # No boolean subschemas (``true``/``false`` in place of a schema): strict mode passes
    # them through, and OpenAI's own strict check refuses them (reported, not yet decided).
    return st.recursive(scalars(), functools.partial(_extend, refs=refs), max_leaves=10)


@st.composite
def schemas(draw: st.DrawFn) -> dict[str, Any]:
    """A tool's input schema. ``$defs`` hold no references, so nothing is recursive."""
    root: Any = draw(subschemas(refs=True))
    root = dict(cast(dict[str, Any], root)) if isinstance(root, dict) else {}
    if draw(st.booleans()):
        root.setdefault("type", "object")
        root.setdefault("properties", draw(st.dictionaries(NAMES, subschemas(refs=True), max_size=4)))
    defs = draw(st.dictionaries(st.sampled_from(DEFS), subschemas(refs=False), max_size=3))
    if defs:
        root["$defs"] = defs
    if draw(st.booleans()):
        root["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return root


def dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def plain(value: Any) -> None:
    """Fail unless ``value`` is made of JSON types only (dict with str keys, list, str, numbers, None)."""
    if isinstance(value, dict):
        for key, item in cast(dict[Any, Any], value).items():
            assert isinstance(key, str)
            plain(item)
    elif isinstance(value, list):
        for item in cast(list[Any], value):
            plain(item)
    else:
        assert value is None or isinstance(value, str | int | float)


def check_openai(tools: list[dict[str, Any]], strict: bool) -> None:
    for tool in tools:
        sdk.openai_chat_tool(tool)
        if strict and tool["function"].get("strict"):
            sdk.openai_strict(tool["function"]["parameters"])


def check_responses(tools: list[dict[str, Any]], strict: bool) -> None:
    for tool in tools:
        sdk.openai_responses_tool(tool)
        if strict and tool.get("strict"):
            sdk.openai_strict(tool["parameters"])


def check_anthropic(tools: list[dict[str, Any]], strict: bool) -> None:
    for tool in tools:
        sdk.anthropic_tool(tool)


def check_gemini(tools: list[dict[str, Any]], strict: bool) -> None:
    sdk.gemini_tools(tools)


PROVIDERS: dict[str, tuple[str, dict[str, Any], Callable[[list[dict[str, Any]], bool], None]]] = {
    "openai": ("openai", {}, check_openai),
    "openai strict": ("openai", {"strict": True}, check_openai),
    "openai-responses": ("openai-responses", {}, check_responses),
    "openai-responses strict": ("openai-responses", {"strict": True}, check_responses),
    "anthropic": ("anthropic", {}, check_anthropic),
    "gemini": ("gemini", {}, check_gemini),
    "gemini json_schema": ("gemini", {"json_schema": True}, check_gemini),
}

FIXES: dict[str, Callable[[Mapping[str, Any]], Any]] = {
    "inline_refs": inline_refs,
    "inline_refs without cycles": functools.partial(inline_refs, keep_cycles=False),
    "merge_all_of": merge_all_of,
    "object_root": object_root,
    "prepare": prepare,
    "strict_schema": strict_schema,
}


@pytest.mark.parametrize("variant", PROVIDERS)
@SETTINGS
@given(schema=schemas())
def test_every_provider_gives_valid_plain_output_and_leaves_the_input_alone(
    variant: str, schema: dict[str, Any]
) -> None:
    provider, options, check = PROVIDERS[variant]
    before = dump(schema)
    spec = ToolDefinition("generated", "A generated schema", schema)
    tools = get_provider(provider, **options).tools([spec])
    kept = copy.deepcopy(tools)
    assert dump(schema) == before
    plain(tools)
    check(tools, "strict" in options)
    assert get_provider(provider, **options).tools([spec]) == kept  # the same again, and the first output unchanged
    assert tools == kept


@pytest.mark.parametrize("fix", FIXES)
@SETTINGS
@given(schema=schemas())
def test_the_fix_ups_settle_and_leave_the_input_alone(fix: str, schema: dict[str, Any]) -> None:
    apply = FIXES[fix]
    before = dump(schema)
    once = apply(schema)
    assert dump(schema) == before
    if once is None:  # strict_schema: the schema cannot be made strict
        return
    snapshot = dump(once)
    assert dump(apply(once)) == snapshot
    assert dump(once) == snapshot  # the second pass did not change the first's output either
