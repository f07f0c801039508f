"""Input schemas that trip up providers, each with arguments that fit it."""

from __future__ import annotations

from typing import Any

from mcpdeck.providers import ToolDefinition

LONG = "Does a great many things. " * 400

SCHEMAS: dict[str, dict[str, Any]] = {
    "recursive_tree": {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/Node"}},
        "required": ["root"],
        "$defs": {
            "Node": {
                "type": "object",
                "description": "A tree node",
                "properties": {
                    "label": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                },
                "required": ["label"],
            }
        },
    },
    "mutual_recursion": {
        "type": "object",
        "properties": {"a": {"$ref": "#/definitions/A"}},
        "definitions": {
            "A": {"type": "object", "properties": {"b": {"$ref": "#/definitions/B"}}},
            "B": {"type": "object", "properties": {"a": {"$ref": "#/definitions/A"}, "n": {"type": "integer"}}},
        },
    },
    "root_recursion": {
        "type": "object",
        "properties": {"name": {"type": "string"}, "next": {"$ref": "#"}},
    },
    "defs_with_siblings": {
        "type": "object",
        "properties": {
            "address": {"$ref": "#/$defs/Address", "description": "Where to ship"},
            "billing": {"$ref": "#/$defs/Address"},
        },
        "required": ["address"],
        "$defs": {
            "Address": {
                "type": "object",
                "description": "A postal address",
                "properties": {"street": {"type": "string"}, "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
                "required": ["street"],
            }
        },
    },
    "combinators": {
        "type": "object",
        "properties": {
            "any": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "one": {"oneOf": [{"type": "string", "format": "email"}, {"type": "boolean"}]},
            "all": {
                "allOf": [
                    {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]},
                    {"properties": {"y": {"type": "number"}}, "required": ["y"]},
                ]
            },
        },
    },
    "nullable_unions": {
        "type": "object",
        "properties": {
            "maybe_text": {"type": ["string", "null"], "description": "Text or nothing"},
            "maybe_count": {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "null"}], "default": None},
            "text_or_number": {"type": ["string", "number"]},
            "maybe_object": {
                "type": ["object", "null"],
                "properties": {"k": {"type": "string"}},
            },
        },
        "required": ["maybe_text"],
    },
    "enums_and_consts": {
        "type": "object",
        "properties": {
            "color": {"type": "string", "enum": ["red", "green", "blue"]},
            "level": {"type": "integer", "enum": [1, 2, 3]},
            "maybe_mode": {"enum": ["fast", "slow", None]},
            "kind": {"const": "fixed"},
            "version": {"const": 2},
        },
        "required": ["color", "kind"],
    },
    "nested_arrays_of_objects": {
        "type": "object",
        "properties": {
            "rows": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "properties": {
                        "cells": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "properties": {"value": {"type": "string"}, "span": {"type": "integer"}},
                                "required": ["value"],
                            },
                        }
                    },
                    "required": ["cells"],
                },
            },
            "matrix": {"type": "array", "items": {"type": "array", "items": {"type": "number"}}},
        },
        "required": ["rows"],
    },
    "no_type": {
        "properties": {"query": {"type": "string"}, "anything": {}, "list": {"type": "array"}},
        "required": ["query"],
    },
    "empty_object": {"type": "object", "properties": {}},
    "nothing_at_all": {},
    "free_form_maps": {
        "type": "object",
        "properties": {
            "headers": {"type": "object", "additionalProperties": {"type": "string"}},
            "metadata": {"type": "object"},
            "labels": {"type": "object", "patternProperties": {"^[a-z]+$": {"type": "string"}}},
            "strict_inner": {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False},
        },
        "additionalProperties": False,
    },
    "formats": {
        "type": "object",
        "properties": {
            "when": {"type": "string", "format": "date-time"},
            "day": {"type": "string", "format": "date"},
            "link": {"type": "string", "format": "uri"},
            "mail": {"type": "string", "format": "email"},
            "size": {"type": "integer", "format": "int64", "exclusiveMinimum": 0, "multipleOf": 2},
            "ratio": {"type": "number", "format": "double", "maximum": 1},
            "word": {"type": "string", "pattern": "^(?!bad)\\w+$", "minLength": 1, "maxLength": 20},
        },
        "required": ["when"],
    },
    "root_union": {
        "anyOf": [
            {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
            {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
        ]
    },
    "long_description": {
        "type": "object",
        "description": LONG,
        "properties": {"text": {"type": "string", "description": LONG, "title": "Text", "examples": ["a"]}},
    },
    "unresolvable_ref": {
        "type": "object",
        "properties": {"x": {"$ref": "https://example.com/schema.json", "description": "Remote"}},
    },
}

ARGUMENTS: dict[str, dict[str, Any]] = {
    "recursive_tree": {"root": {"label": "a", "children": [{"label": "b", "children": []}]}},
    "mutual_recursion": {"a": {"b": {"n": 1}}},
    "root_recursion": {"name": "one", "next": {"name": "two"}},
    "defs_with_siblings": {"address": {"street": "Main St", "zip": "12345"}},
    "combinators": {"any": 3, "one": True, "all": {"x": 1, "y": 2}},
    "nullable_unions": {"maybe_text": None, "maybe_count": 4, "text_or_number": "t", "maybe_object": None},
    "enums_and_consts": {"color": "red", "level": 2, "maybe_mode": None, "kind": "fixed", "version": 2},
    "nested_arrays_of_objects": {"rows": [{"cells": [{"value": "v", "span": 2}]}], "matrix": [[1.5]]},
    "no_type": {"query": "q", "anything": [1, "x"], "list": [1]},
    "empty_object": {},
    "nothing_at_all": {},
    "free_form_maps": {"headers": {"a": "b"}, "metadata": {"k": 1}, "labels": {"x": "y"}, "strict_inner": {"a": "b"}},
    "formats": {"when": "2024-01-01T00:00:00Z", "day": "2024-01-01", "size": 4, "word": "good"},
    "root_union": {"id": "x"},
    "long_description": {"text": "t"},
    "unresolvable_ref": {"x": 1},
}


def awkward_specs() -> list[ToolDefinition]:
    """Every awkward schema as a native tool named after it."""
    return [ToolDefinition(name, f"Tool {name}", schema) for name, schema in SCHEMAS.items()]
