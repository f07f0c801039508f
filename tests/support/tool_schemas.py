"""Tool input schemas drawn by hypothesis (every keyword providers differ on, ``$defs`` and references), and
what each provider accepts of a converted tool."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any, cast

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

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
