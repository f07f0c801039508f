"""OpenAI strict mode: schemas the model must follow exactly, and the arguments they produce.

Strict mode wants every object closed (``additionalProperties: false``) with every property
required; an optional property becomes nullable instead, and ``strip_nulls`` removes the
``null`` the model then sends for it, so the server sees the arguments it expects. Keywords
strict mode rejects but that only narrow a value (``default``, ``minLength``, an unknown
``format`` …) move into the description. A schema that strict mode cannot express without
changing its meaning (a free-form object, ``patternProperties``, a value of any type, an
array without ``items``, ``not``, ``if``/``then``) is not made strict at all:
``make_strict`` returns None and the tool is sent non-strict.

Schemas are read-only (see ``_schema``): the strict form is built from new dicts, one per
schema object, and shares the other values (``enum`` lists, defaults ...) with its input.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from mcpdeck.providers._schema import (
    JsonSchema,
    add_note,
    as_schema,
    map_subschemas,
    merge_node,
    pointer,
    prepare,
    schema_list,
    short_json,
    string_list,
)

__all__ = ["make_strict", "strict_schema", "strip_nulls"]

FORMATS = frozenset({"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"})
"""String formats strict mode accepts."""
_UNSUPPORTED = (
    "patternProperties",
    "not",
    "if",
    "then",
    "else",
    "dependentSchemas",
    "unevaluatedProperties",
    "unevaluatedItems",
    "prefixItems",
    "additionalItems",
)
_NOTED = {
    "default": "default: {}",
    "minLength": "at least {} characters",
    "maxLength": "at most {} characters",
    "minProperties": "at least {} entries",
    "maxProperties": "at most {} entries",
    "uniqueItems": "items unique: {}",
}
_DROPPED = (
    "examples",
    "example",
    "readOnly",
    "writeOnly",
    "deprecated",
    "$comment",
    "contains",
    "minContains",
    "maxContains",
    "propertyNames",
    "dependentRequired",
    "contentMediaType",
    "contentEncoding",
    "discriminator",
)


_DICT: type[JsonSchema] = dict
_UNSUPPORTED_KEYS = frozenset(_UNSUPPORTED)
_NOTED_KEYS = frozenset(_NOTED)
_DROPPED_KEYS = frozenset(_DROPPED)
_SPECIAL = _UNSUPPORTED_KEYS | _NOTED_KEYS | _DROPPED_KEYS | {"oneOf", "allOf"}


class NotStrict(Exception):
    """The schema has something strict mode cannot express."""


def _nullable(schema: JsonSchema) -> JsonSchema:
    if "$ref" in schema or "const" in schema:
        return {"anyOf": [schema, {"type": "null"}]}
    kind = schema.get("type")
    if kind is None and isinstance(schema.get("anyOf"), list):
        branches = cast(list[Any], schema["anyOf"])
        if not any(b.get("type") == "null" for b in schema_list(branches)):
            schema["anyOf"] = [*branches, {"type": "null"}]
        return schema
    if isinstance(kind, str):
        schema["type"] = kind if kind == "null" else [kind, "null"]
    elif isinstance(kind, list):
        if "null" not in kind:
            schema["type"] = [*cast(list[Any], kind), "null"]
    else:
        return {"anyOf": [schema, {"type": "null"}]}
    enum = schema.get("enum")
    if isinstance(enum, list) and None not in enum:
        schema["enum"] = [*cast(list[Any], enum), None]
    return schema


def _types(node: JsonSchema) -> list[str]:
    kind = node.get("type")
    if isinstance(kind, str):
        return [kind]
    return [t for t in cast(list[Any], kind) if isinstance(t, str)] if isinstance(kind, list) else []


def _strict_node(node: JsonSchema) -> JsonSchema:
    # ``node`` is a new dict (children done), so it is changed in place. One set intersection
    # finds the keywords that need work; most nodes have none of them.
    special = _SPECIAL.intersection(node)
    if special:
        if not _UNSUPPORTED_KEYS.isdisjoint(special):
            raise NotStrict(next(key for key in _UNSUPPORTED if key in node))
        if "oneOf" in special and isinstance(node["oneOf"], list):
            node["anyOf"] = [*node.get("anyOf", []), *node.pop("oneOf")]
        if "allOf" in special:
            node = merge_node(node)
            special = _SPECIAL.intersection(node)
        if not _NOTED_KEYS.isdisjoint(special):
            for key, template in _NOTED.items():
                if key in node:
                    value = node.pop(key)
                    if value is not None:
                        add_note(node, template.format(short_json(value)))
        if not _DROPPED_KEYS.isdisjoint(special):
            for key in _DROPPED:
                node.pop(key, None)
    fmt = node.get("format")
    if fmt is not None and fmt not in FORMATS:
        node.pop("format")
        add_note(node, f"format: {fmt}")
    if node.pop("nullable", False) is True:
        node = _nullable(node)
    types = _types(node)
    if "object" in types or (not types and "properties" in node):
        return _close(node, types)
    if "array" in types and not isinstance(node.get("items"), Mapping):
        raise NotStrict("an array without an items schema")
    if not types and not any(key in node for key in ("anyOf", "enum", "const", "$ref")):
        raise NotStrict("a value of any type")
    return node


def _close(node: JsonSchema, types: list[str]) -> JsonSchema:
    if not types:
        node["type"] = "object"
    properties = as_schema(node.get("properties")) or {}
    extra = node.get("additionalProperties")
    if extra is not None and extra is not False:
        raise NotStrict("additionalProperties")
    if not properties and extra is not False:
        raise NotStrict("an object of any shape")
    required = set(string_list(node.get("required")))
    closed: JsonSchema = {}
    for name, sub in properties.items():
        sub_schema = as_schema(sub)
        if sub_schema is None:
            raise NotStrict(f"property {name!r} accepts anything")
        closed[name] = sub_schema if name in required else _nullable(sub_schema)
    node["properties"] = closed
    node["required"] = list(closed)
    node["additionalProperties"] = False
    return node


def make_strict(prepared: Mapping[str, Any]) -> JsonSchema | None:
    """The strict form of a schema already through ``prepare``, or None if it has no faithful one.

    A top-level object with no properties and no ``additionalProperties`` is read as "no
    arguments" (what MCP servers mean by it), so it is closed; deeper down it means "any object".
    """
    root = dict(prepared)
    if not root.get("properties") and "additionalProperties" not in root:
        root["additionalProperties"] = False
    try:
        return cast(JsonSchema, _strict_tree(root))
    except NotStrict:
        return None


def _strict_tree(schema: Any) -> Any:
    """``transform(schema, _strict_node)``, without the closure per level."""
    if type(schema) is _DICT or isinstance(schema, Mapping):
        return _strict_node(map_subschemas(cast(Mapping[str, Any], schema), _strict_tree))
    return schema


def strict_schema(schema: Mapping[str, Any]) -> JsonSchema | None:
    """The OpenAI strict-mode form of a tool's input schema, or None if strict mode cannot express it.

    Recursive references stay as ``$ref`` into ``$defs`` (strict mode follows them).
    """
    return make_strict(prepare(schema, keep_cycles=True))


def _allows_null(schema: Any) -> bool:
    node = as_schema(schema)
    if node is None:
        return True
    kind = node.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind) or node.get("nullable") is True:
        return True
    enum = node.get("enum")
    if isinstance(enum, list) and None in enum:
        return True
    branches = node.get("anyOf") or node.get("oneOf")
    if isinstance(branches, list):
        return any(_allows_null(branch) for branch in cast(list[Any], branches))
    return not any(key in node for key in ("type", "enum", "const", "$ref", "allOf", "not"))


def strip_nulls(arguments: Mapping[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    """Drop the ``null`` values strict mode made the model send for optional properties.

    Args:
        arguments: The arguments the model sent.
        schema: The non-strict schema (after ``prepare``) the strict one was made from.

    Returns:
        The arguments without ``null`` where the property was optional and does not accept null.
    """

    def clean(value: Any, node_value: Any, depth: int) -> Any:
        node = as_schema(node_value)
        if node is not None and isinstance(node.get("$ref"), str) and depth < 64:
            node = as_schema(pointer(schema, node["$ref"]))
        if node is None:
            return value
        if isinstance(value, Mapping):
            properties = as_schema(node.get("properties")) or {}
            required = set(string_list(node.get("required")))
            return {
                key: clean(item, properties.get(key), depth + 1)
                for key, item in cast(Mapping[str, Any], value).items()
                if not (
                    item is None and key in properties and key not in required and not _allows_null(properties[key])
                )
            }
        if isinstance(value, list) and as_schema(node.get("items")) is not None:
            return [clean(item, node["items"], depth + 1) for item in cast(list[Any], value)]
        return cast(Any, value)

    cleaned: dict[str, Any] = clean(arguments, schema, 0)
    return cleaned
