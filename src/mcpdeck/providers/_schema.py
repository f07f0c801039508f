"""JSON Schema fix-ups that providers need, as pure functions.

They work on any JSON Schema (draft 4 to 2020-12) a server may send:

- ``inline_refs``: resolves local ``$ref`` pointers (``#/$defs/x``, ``#/definitions/x``, any
  ``#/...``) in place; a recursive reference is kept as a ``$ref`` into a fresh ``$defs``, or
  replaced by a loose placeholder where the provider cannot follow references.
- ``merge_all_of``: folds ``allOf`` lists into their schema.
- ``object_root``: the top of a tool's input schema as every provider wants it: one object
  (``type: object``, ``properties``), no top-level ``anyOf``/``oneOf``/``allOf``, no ``$schema``.

OpenAI strict mode lives in ``_strict``, Gemini's OpenAPI subset in ``_openapi``.

Schemas are read-only: no function changes its input, and results share objects with it (no
deep copies), so never change a schema, input or result, in place. One needing no fix-up is
returned as it is (a quick scan decides); ``inline_refs`` copies only the way to what changed,
``object_root`` the top. So tool definitions may hold the catalog's own schema objects.
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Callable, Collection, Mapping
from typing import Any, cast
from urllib.parse import unquote

__all__ = [
    "add_note",
    "as_schema",
    "inline_refs",
    "map_subschemas",
    "merge_all_of",
    "merge_node",
    "object_root",
    "pointer",
    "prepare",
    "schema_list",
    "short_json",
    "string_list",
    "transform",
]

JsonSchema = dict[str, Any]

SINGLE = frozenset(
    {"items", "additionalItems", "additionalProperties", "contains", "not", "if", "then", "else", "propertyNames"}
    | {"unevaluatedItems", "unevaluatedProperties"}
)
"""Keywords whose value is one subschema."""
LISTS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems", "items"})
"""Keywords whose value is a list of subschemas (``items`` in draft 4 tuple form)."""
MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
"""Keywords whose value maps names to subschemas."""
DEFS = ("$defs", "definitions")
SUBSCHEMA_KEYS = SINGLE | LISTS | MAPS  # every keyword that holds subschemas
_REF_KEYS = frozenset({"$ref", *DEFS})
_ALL_OF = frozenset({"allOf"})
_CONTAINERS = LISTS | MAPS
_WATCHED: dict[frozenset[str], frozenset[str]] = {}
_ROOT_DROPPED = ("$schema", "$id", "$comment")
_ROOT_CHANGED = frozenset({*_ROOT_DROPPED, "allOf", "anyOf", "oneOf"})
_DICT: type[JsonSchema] = dict  # ``type(x) is _DICT``: faster than isinstance with an ABC, and narrowed
_LIST: type[list[Any]] = list


def as_schema(value: object) -> JsonSchema | None:
    """``value`` as a schema object, or None when it is not a JSON object."""
    return cast(JsonSchema, value) if type(value) is _DICT or isinstance(value, Mapping) else None


def schema_list(value: object) -> list[JsonSchema]:
    """The schema objects in ``value`` when it is a list (``anyOf`` branches, say), else []."""
    return (
        [cast(JsonSchema, item) for item in cast(list[Any], value) if isinstance(item, Mapping)]
        if isinstance(value, list)
        else []
    )


def string_list(value: object) -> list[str]:
    """The strings in ``value`` when it is a list (``required``, say), else []."""
    return [item for item in cast(list[Any], value) if isinstance(item, str)] if isinstance(value, list) else []


def map_subschemas(
    node: Mapping[str, Any], fn: Callable[[Any], Any], *, skip: Collection[str] = (), cow: bool = False
) -> JsonSchema:
    """A new dict like ``node`` with ``fn`` applied to each direct subschema (``cow``: or ``node`` if all stay)."""
    if not skip and not cow and SUBSCHEMA_KEYS.isdisjoint(node):
        return dict(node)
    out: JsonSchema = {}
    changed = type(node) is not _DICT
    for key, value in node.items():
        if key in skip:
            changed = True
        elif key in LISTS and isinstance(value, list):
            old = cast(list[Any], value)
            out[key] = new = [fn(item) for item in old]
            changed = changed or (cow and (type(old) is not _LIST or any(map(operator.is_not, new, old))))
        elif key in SINGLE and isinstance(value, (Mapping, bool)):
            out[key] = fn(value)
            changed = changed or out[key] is not value
        elif key in MAPS and isinstance(value, Mapping):
            subs = cast(Mapping[str, Any], value)
            out[key] = mapped = {name: fn(sub) for name, sub in subs.items()}
            changed = changed or (cow and (type(subs) is not _DICT or any(mapped[n] is not s for n, s in subs.items())))
        else:
            out[key] = value
    return out if changed or not cow else cast(JsonSchema, node)


def needs_change(node: Mapping[str, Any], keys: frozenset[str]) -> bool:
    """Whether a fix-up acting on ``keys`` would change ``node`` (or turn a non-dict schema object into a dict)."""
    watched = _WATCHED.get(keys) or _WATCHED.setdefault(keys, keys | SUBSCHEMA_KEYS)
    stack: list[Any] = [node]
    while stack:
        schema = stack.pop()
        if type(schema) is not _DICT or not keys.isdisjoint(schema):
            return True
        for key in SUBSCHEMA_KEYS.intersection(schema):
            value = schema[key]
            if type(value) is _DICT:
                subs = value.values() if key in MAPS else (value,) if key in SINGLE else ()
            elif type(value) is _LIST:
                subs = value if key in LISTS else ()
            elif value is True or value is False or not isinstance(value, (Mapping, list)):
                continue
            else:
                return True
            for sub in subs:
                if type(sub) is _DICT:
                    if not watched.isdisjoint(sub):  # one with nothing to look at is not pushed
                        stack.append(sub)
                elif isinstance(sub, Mapping):
                    return True
    return False


def transform(schema: Any, fn: Callable[[JsonSchema], Any]) -> Any:
    """Rebuild ``schema`` bottom-up: ``fn`` gets each schema object (a new dict, children done; other values shared)."""
    if type(schema) is _DICT or isinstance(schema, Mapping):
        return fn(map_subschemas(cast(Mapping[str, Any], schema), lambda sub: transform(sub, fn)))
    return schema


def add_note(node: JsonSchema, note: str) -> None:
    """Append ``note`` to ``node``'s description (for constraints a provider cannot express)."""
    description = node.get("description")
    node["description"] = f"{description} ({note})" if isinstance(description, str) and description else note


def pointer(root: Mapping[str, Any], ref: str) -> Any:
    """The value a local JSON pointer (``#/a/b``) names in ``root``, or None."""
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        return None
    node: Any = root
    for raw in ref[2:].split("/"):
        part = unquote(raw).replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and part in node:
            node = cast(Mapping[str, Any], node)[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(cast(list[Any], node)):
            node = cast(list[Any], node)[int(part)]
        else:
            return None
    return cast(Any, node) if isinstance(node, Mapping | bool) else None


def inline_refs(schema: Mapping[str, Any], *, keep_cycles: bool = True) -> JsonSchema:
    """Replace every local ``$ref`` by what it points to; drop ``$defs``/``definitions``.

    Keywords beside a ``$ref`` win over the referenced schema's (a local ``description``
    stays). A reference that cannot be resolved (another document, a missing pointer) is
    dropped and named in the description.

    Args:
        schema: The schema.
        keep_cycles: What a recursive reference becomes. True: a ``$ref`` to a new
            ``#/$defs/<name>`` holding the definition (for providers that follow references).
            False: a placeholder with the definition's ``type`` and description, so the
            recursion ends one level down.

    Returns:
        The schema without references (``schema`` itself if it has none), except the recursive
        ones when ``keep_cycles``.
    """
    if not needs_change(schema, _REF_KEYS):
        return cast(JsonSchema, schema)
    kept: JsonSchema = {}
    names: dict[str, str] = {}

    def expand(node: Any, stack: tuple[str, ...]) -> Any:
        if not isinstance(node, Mapping):
            return node
        node = cast(Mapping[str, Any], node)
        out = map_subschemas(node, lambda sub: expand(sub, stack), skip=_REF_KEYS, cow=True)
        ref = node.get("$ref")
        if not isinstance(ref, str):
            return out
        target = pointer(schema, ref)
        if target is None:
            add_note(out, f"schema reference {ref} could not be resolved")
            return out
        if ref in stack:
            if keep_cycles:
                if ref not in names:
                    names[ref] = name = _def_name(ref, kept)
                    kept[name] = {}
                    kept[name] = expand(target, (ref,))
                return {"$ref": f"#/$defs/{names[ref]}"}
            placeholder: JsonSchema = {}
            kind = (as_schema(target) or {}).get("type")
            if isinstance(kind, str):
                placeholder["type"] = kind
            add_note(placeholder, f"recursive: the same shape as {ref.rsplit('/', 1)[-1] or 'the whole input'}")
            return {**placeholder, **out}
        expanded = expand(target, (*stack, ref))
        if isinstance(expanded, bool):
            return out or expanded
        return {**cast(JsonSchema, expanded), **out}

    result = expand(schema, ())
    if kept:
        result = {**result}
        result["$defs"] = kept
    return result


def _def_name(ref: str, taken: Mapping[str, Any]) -> str:
    """A ``$defs`` name for the target of ``ref``, not in ``taken`` yet."""
    base = re.sub(r"[^A-Za-z0-9_.-]", "_", ref.rsplit("/", 1)[-1]) or "root"
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}_{n}"
    return name


def _merge_into(merged: JsonSchema, part: Mapping[str, Any], *, override: bool) -> None:
    for key, value in part.items():
        if key == "properties" and isinstance(value, Mapping):
            merged["properties"] = {**merged.get("properties", {}), **cast(JsonSchema, value)}
        elif key == "required" and isinstance(value, list):
            required: list[Any] = merged.setdefault("required", [])
            required.extend(name for name in cast(list[Any], value) if name not in required)
        elif override or key not in merged:
            merged[key] = value


def merge_node(node: JsonSchema) -> JsonSchema:
    """``node`` with its ``allOf`` folded in. Pops ``allOf``: pass a dict of your own, never a shared one."""
    parts = node.pop("allOf", None)
    if not isinstance(parts, list):
        return node
    merged: JsonSchema = {}
    for part in cast(list[Any], parts):
        if isinstance(part, Mapping):
            _merge_into(merged, cast(JsonSchema, part), override=False)
    _merge_into(merged, node, override=True)
    return merged


def merge_all_of(schema: Mapping[str, Any]) -> JsonSchema:
    """Fold every ``allOf`` into its schema: properties and ``required`` united, the first of other keywords kept."""
    if not needs_change(schema, _ALL_OF):
        return cast(JsonSchema, schema)
    return cast(JsonSchema, transform(schema, merge_node))


def object_root(schema: Mapping[str, Any]) -> JsonSchema:
    """The top of an input schema as providers require it.

    ``type`` becomes ``object`` and ``properties`` is always there. A top-level ``allOf`` is
    merged; a top-level ``anyOf``/``oneOf`` (one of several argument shapes) becomes one
    object with every branch's properties, requiring only what all branches require.
    ``$schema``, ``$id`` and ``$comment`` are dropped. A root that is already so is returned as it is.
    """
    if type(schema) is _DICT and schema.get("type") == "object" and type(schema.get("properties")) is _DICT:
        kinds = {schema[key].__class__ for key in _CONTAINERS.intersection(schema)}
        if _ROOT_CHANGED.isdisjoint(schema) and kinds <= {_DICT, _LIST}:
            return schema  # already an object root
    root = merge_node(map_subschemas(schema, lambda sub: sub, skip=_ROOT_DROPPED))  # the top level copied
    for key in ("anyOf", "oneOf"):
        branches = schema_list(root.pop(key, None))
        if not branches:
            continue
        properties: JsonSchema = dict(as_schema(root.get("properties")) or {})
        shared: set[str] | None = None
        for branch in branches:
            for name, sub in (as_schema(branch.get("properties")) or {}).items():
                properties.setdefault(name, sub)
            names = set(string_list(branch.get("required")))
            shared = names if shared is None else shared & names
        root["properties"] = properties
        own = string_list(root.get("required"))
        required = [*own, *sorted((shared or set()) - set(own))]
        if required:
            root["required"] = required
        add_note(root, "the arguments take one of several shapes; fill in the properties of one")
    root["type"] = "object"
    if not isinstance(root.get("properties"), Mapping):
        root["properties"] = {}
    return root


def prepare(schema: Mapping[str, Any], *, keep_cycles: bool = True) -> JsonSchema:
    """References inlined and the root made an object: the common first step for every provider."""
    return object_root(inline_refs(schema, keep_cycles=keep_cycles))


def short_json(value: Any, limit: int = 80) -> str:
    """``value`` as compact JSON, cut to ``limit`` characters (for notes in descriptions)."""
    if value is None or value is True or value is False or type(value) is int:  # json.dumps without an encoder
        text = "null" if value is None else "true" if value is True else "false" if value is False else repr(value)
    else:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"
