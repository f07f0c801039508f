"""Gemini's schema: the subset of OpenAPI 3.0 that ``FunctionDeclaration.parameters`` accepts.

The fields are those of ``google.genai.types.Schema``; everything else is refused by the
API with "Unknown name", so the conversion keeps a fixed set and says what it dropped in
the description:

- references are inlined (recursion ends in a placeholder) and ``allOf`` merged;
- ``type`` is upper-case (``STRING``); ``["string", "null"]`` becomes ``STRING`` with
  ``nullable``, other type lists and ``oneOf`` become ``anyOf``; ``anyOf`` with a null
  branch becomes ``nullable`` (and disappears when one branch is left);
- ``const`` becomes a one-value ``enum``; enums must be strings, others are described;
- ``format`` is kept only where Gemini accepts it (``date-time``/``enum`` on strings,
  ``int32``/``int64``, ``float``/``double``); ``email``, ``uri`` … go into the description;
- ``additionalProperties``, ``patternProperties``, ``$schema``, ``title``, ``default``,
  ``examples``, exclusive bounds and the like are dropped (bounds and defaults noted);
- a schema of any type (``{}``, no ``type``), which the API refuses, becomes an ``anyOf``
  of the types (the items of an array without ``items`` likewise);
- empty ``properties`` maps are left out, ``required`` only names existing properties, a
  ``pattern`` that RE2 cannot run is dropped (and described);
- a tool with no parameters gets no ``parameters`` at all.

Input schemas are read-only (see ``_schema``): the conversion builds a new tree, working on
its own copy of a node only where the node needs rewriting (``allOf``, ``anyOf``, ``const``
...); the result may share ``enum`` lists with the input.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, cast

from mcpdeck.providers._schema import JsonSchema, add_note, as_schema, merge_node, prepare, short_json, string_list

__all__ = ["gemini_parameters", "gemini_schema", "to_openapi"]

TYPES = frozenset({"string", "number", "integer", "boolean", "array", "object"})
FORMATS = {
    "string": frozenset({"date-time", "enum"}),
    "integer": frozenset({"int32", "int64"}),
    "number": frozenset({"float", "double"}),
}
_KEPT = {
    "string": ("minLength", "maxLength"),
    "number": ("minimum", "maximum"),
    "integer": ("minimum", "maximum"),
    "array": ("minItems", "maxItems"),
    "object": ("minProperties", "maxProperties"),
}
_NOTED = {
    "default": "default: ",
    "exclusiveMinimum": "greater than ",
    "exclusiveMaximum": "less than ",
    "multipleOf": "a multiple of ",
}
"""Keywords Gemini has no field for, and the words before their value in the description."""
_DICT: type[JsonSchema] = dict
_LIST: type[list[Any]] = list
_KEPT_KEYS = {kind: frozenset(keys) for kind, keys in _KEPT.items()}
_NOTE_KEYS = frozenset({*_NOTED, "uniqueItems"})
_DETAILS = _NOTE_KEYS.union(
    *_KEPT.values(), ("format", "enum", "pattern", "items", "properties", "additionalProperties")
)
"""Keywords that add to a node's conversion beyond its ``type`` and description."""
_NORMALISED = frozenset({"allOf", "nullable", "oneOf", "anyOf", "const", "enum"})
"""Keywords ``_normalise`` rewrites (a node with none of them and one known ``type`` needs no rewriting)."""
_ENUM = frozenset({"enum"})
_UPPER = {kind: kind.upper() for kind in TYPES}
_RE2_UNSUPPORTED = re.compile(r"\(\?<?[=!]|\\[1-9]|\(\?>|[*+?}]\+")
"""Lookaround, back-references, atomic groups and possessive quantifiers (RE2 has none)."""


def _is_null(schema: Any) -> bool:
    node = as_schema(schema)
    return node is not None and (
        node.get("type") == "null" or node.get("enum") == [None] or ("const" in node and node["const"] is None)
    )


def _type_of(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "string" if isinstance(value, str) else "object" if isinstance(value, Mapping) else "array"


def _normalise(node: JsonSchema) -> tuple[JsonSchema, list[str], bool]:
    """Merge/flatten combinators; return the node, its non-null types and whether null is allowed."""
    node = merge_node(node)
    nullable = node.pop("nullable", False) is True
    if isinstance(node.get("oneOf"), list):
        node["anyOf"] = [*node.get("anyOf", []), *node.pop("oneOf")]
    branches = node.get("anyOf")
    if isinstance(branches, list):
        kept = [b for b in cast(list[Any], branches) if not _is_null(b)]
        nullable = nullable or len(kept) < len(cast(list[Any], branches))
        node.pop("anyOf")
        if len(kept) == 1 and isinstance(kept[0], Mapping) and "type" not in node:
            inner, types, inner_null = _normalise(dict(cast(JsonSchema, kept[0])))
            node = {**inner, **node}
            return node, types, nullable or inner_null
        if kept:
            node["anyOf"] = kept
    kind = node.pop("type", None)
    raw = [kind] if isinstance(kind, str) else cast(list[Any], kind) if isinstance(kind, list) else []
    nullable = nullable or "null" in raw
    types = [t for t in raw if isinstance(t, str) and t in TYPES]
    if "const" in node:
        value = node.pop("const")
        if value is None:
            nullable = True
        elif isinstance(value, str):
            node["enum"] = [value]
        else:
            add_note(node, f"must be {short_json(value)}")
            types = types or [_type_of(value)]
    enum = node.get("enum")
    if isinstance(enum, list):
        values = [v for v in cast(list[Any], enum) if v is not None]
        nullable = nullable or len(values) < len(cast(list[Any], enum))
        if values and all(isinstance(v, str) for v in values) and types in ([], ["string"]):
            node["enum"] = values
            types = ["string"]
        else:
            node.pop("enum")
            if values:
                add_note(node, "one of: " + ", ".join(short_json(v, 40) for v in values))
                types = types or sorted({_type_of(v) for v in values})
    if not types:
        if "properties" in node:
            types = ["object"]
        elif "items" in node:
            types = ["array"]
    return node, types, nullable


def _scalars() -> list[JsonSchema]:
    return [{"type": "STRING"}, {"type": "NUMBER"}, {"type": "BOOLEAN"}, {"type": "OBJECT"}]


def _string_enum(node: JsonSchema) -> bool:
    """Whether ``enum`` is the only keyword ``_normalise`` would look at, and a list of strings (kept as it is)."""
    if not _ENUM.issuperset(_NORMALISED.intersection(node)):
        return False
    enum = node["enum"]
    return type(enum) is _LIST and bool(enum) and all(isinstance(v, str) for v in enum)


def to_openapi(schema: Any) -> JsonSchema:
    """One JSON Schema node (references already inlined) in Gemini's OpenAPI subset.

    The result is a new tree; it may share ``enum`` lists with ``schema`` (read-only).
    """
    kind = schema.get("type") if type(schema) is _DICT else None
    if type(kind) is str and kind in TYPES:
        if _NORMALISED.isdisjoint(schema) or (kind == "string" and _string_enum(schema)):
            return _plain(schema, kind)
    return _general(schema)


def _plain(node: JsonSchema, kind: str) -> JsonSchema:
    """``to_openapi`` of a node of one known type with nothing to normalise (most nodes): the node
    is read as it is (never changed), without ``_normalise``'s copy."""
    out: JsonSchema = {"type": _UPPER[kind]}
    description = node.get("description") or node.get("title")
    if isinstance(description, str) and description:
        out["description"] = description
    if _DETAILS.isdisjoint(node):  # a type and a description at most
        if kind == "array":
            out["items"] = {"anyOf": _scalars()}
        return out
    notes = _notes(node) if not _NOTE_KEYS.isdisjoint(node) else []
    _typed(node, kind, out, notes)
    for note in notes:
        add_note(out, note)
    return out


def _notes(node: JsonSchema) -> list[str]:
    """What the description must say of the keywords Gemini has no field for (defaults, bounds)."""
    notes: list[str] = []
    for key, words in _NOTED.items():
        value: object = node.get(key)
        if value is None:
            continue
        kind = type(value)  # a JSON number or string is never a Mapping: the ABC's check is skipped
        if kind is bool:
            if key != "default":
                continue
        elif kind is not int and kind is not float and kind is not str and isinstance(value, Mapping):
            continue
        notes.append(words + short_json(value))
    if node.get("uniqueItems") is True:
        notes.append("items must be unique")
    return notes


def _general(schema: Any) -> JsonSchema:
    """``to_openapi`` of any node: combinators, type lists, ``const``, enums and nullability
    normalised first, on a copy."""
    node, types, nullable = _normalise(dict(as_schema(schema) or {}))
    out: JsonSchema = {}
    if len(types) > 1:
        out["anyOf"] = [to_openapi({**node, "type": kind, "description": None}) for kind in types]
    elif types:
        out["type"] = types[0].upper()
    elif isinstance(node.get("anyOf"), list):
        out["anyOf"] = [to_openapi(branch) for branch in node["anyOf"]]
    else:
        out["anyOf"] = [*_scalars(), {"type": "ARRAY", "items": {"anyOf": _scalars()}}]
        nullable = True
    if nullable:
        out["nullable"] = True
    description = node.get("description") or node.get("title")
    if isinstance(description, str) and description:
        out["description"] = description
    notes = _notes(node) if not _NOTE_KEYS.isdisjoint(node) else []
    if len(types) == 1:
        _typed(node, types[0], out, notes)
    for note in notes:
        add_note(out, note)
    return out


def _typed(node: JsonSchema, kind: str, out: JsonSchema, notes: list[str]) -> None:
    kept = _KEPT_KEYS.get(kind)
    if kept is not None and not kept.isdisjoint(node):
        for key in _KEPT[kind]:
            value = node.get(key)
            if isinstance(value, (int, float)):
                out[key] = value
    fmt = node.get("format")
    if isinstance(fmt, str):
        if fmt in FORMATS.get(kind, ()):
            out["format"] = fmt
        else:
            notes.append(f"format: {fmt}")
    if kind == "string":
        if isinstance(node.get("enum"), list):
            out["enum"] = node["enum"]
        pattern = node.get("pattern")
        if isinstance(pattern, str):
            if _RE2_UNSUPPORTED.search(pattern):
                notes.append(f"must match {pattern}")
            else:
                out["pattern"] = pattern
    elif kind == "array":
        items: Any = node.get("items")
        if isinstance(items, list):
            items = {"anyOf": cast(list[Any], items)}
        out["items"] = to_openapi(items) if items is not None else {"anyOf": _scalars()}
    elif kind == "object":
        properties = {name: to_openapi(sub) for name, sub in (as_schema(node.get("properties")) or {}).items()}
        if properties:
            out["properties"] = properties
            required = [name for name in string_list(node.get("required")) if name in properties]
            if required:
                out["required"] = required
        values = None if properties else as_schema(node.get("additionalProperties"))
        if values is not None and isinstance(values.get("type"), str):
            notes.append(f"an object whose values are of type {values['type']}")


def gemini_schema(schema: Mapping[str, Any]) -> JsonSchema | None:
    """A tool's input schema as Gemini ``parameters``, or None when the tool takes no arguments."""
    return gemini_parameters(prepare(schema, keep_cycles=False))


def gemini_parameters(prepared: JsonSchema) -> JsonSchema | None:
    """``gemini_schema`` of a schema already prepared (``_schema.prepare`` without kept cycles)."""
    converted = to_openapi(prepared)
    converted["type"] = "OBJECT"
    converted.pop("nullable", None)
    return converted if converted.get("properties") else None
