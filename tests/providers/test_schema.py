"""The shared schema fix-ups: references, allOf, the object root; none of them touches its input.

Results may share objects with the input (copy-on-write), so schemas are read-only throughout.
"""

from __future__ import annotations

import copy
import json
from types import MappingProxyType
from typing import Any, cast

import pytest
from jsonschema.validators import Draft202012Validator

from mcpdeck.providers import gemini_schema, inline_refs, merge_all_of, object_root, strict_schema
from mcpdeck.providers._schema import prepare
from tests.providers.awkward import ARGUMENTS, SCHEMAS
from tests.providers.support import admits, load_snapshot


def refs_in(value: Any) -> list[str]:
    text = json.dumps(value)
    return [part.split('"')[0] for part in text.split('"$ref": "')[1:]]


FIXES = (inline_refs, merge_all_of, object_root, prepare, strict_schema, gemini_schema)


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_no_fix_up_changes_its_input(name: str) -> None:
    """Results may share objects with the input (copy-on-write), so nothing may change them.

    Neither the input, nor a fix-up's result when the other fix-ups work on it in turn.
    """
    schema = copy.deepcopy(SCHEMAS[name])  # this test's own copy: a failure cannot spoil SCHEMAS
    before = copy.deepcopy(schema)
    results: list[tuple[str, Any, Any]] = []
    for fix in FIXES:
        out = fix(schema)
        assert schema == before, fix.__name__
        results.append((fix.__name__, out, copy.deepcopy(out)))
    for fix_name, out, saved in results:
        if isinstance(out, dict):
            for other in FIXES:
                other(cast(dict[str, Any], out))
        assert out == saved, f"a fix-up changed the result of {fix_name}"
    assert schema == before


def test_a_schema_that_needs_no_fix_up_is_returned_as_it_is() -> None:
    schema = SCHEMAS["nested_arrays_of_objects"]
    assert inline_refs(schema) is schema
    assert merge_all_of(schema) is schema
    assert object_root(schema) is schema
    assert prepare(schema) is schema
    assert prepare(schema, keep_cycles=False) is schema


def test_inline_refs_copies_only_what_changes() -> None:
    plain = {"type": "string", "enum": ["a", "b"]}
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/A"}, "plain": plain},
        "$defs": {"A": {"type": "object", "properties": {"x": plain}}},
    }
    out = inline_refs(schema)
    assert out is not schema and out["properties"] is not schema["properties"]
    assert out["properties"]["plain"] is plain
    assert out["properties"]["a"]["properties"] is schema["$defs"]["A"]["properties"]
    assert "$defs" not in out and "$defs" in schema


def test_the_root_is_copied_only_where_it_changes() -> None:
    schema = SCHEMAS["root_union"]
    out = object_root(schema)
    assert out is not schema
    assert out["properties"]["id"] is schema["anyOf"][0]["properties"]["id"]


def test_a_schema_of_other_mapping_types_comes_out_as_plain_dicts() -> None:
    inner = MappingProxyType({"type": "string"})
    schema = MappingProxyType({"type": "object", "properties": MappingProxyType({"a": inner})})
    for fix in (inline_refs, merge_all_of, prepare):
        out: dict[str, Any] = fix(schema)
        classes = (out.__class__, out["properties"].__class__, out["properties"]["a"].__class__)
        assert classes == (dict, dict, dict), fix.__name__
        assert json.loads(json.dumps(out)) == {"type": "object", "properties": {"a": {"type": "string"}}}


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_the_prepared_schema_still_accepts_the_same_arguments(name: str) -> None:
    if name != "unresolvable_ref":
        admits(SCHEMAS[name], ARGUMENTS[name])
    prepared = prepare(SCHEMAS[name])
    Draft202012Validator.check_schema(prepared)
    admits(prepared, ARGUMENTS[name])


def test_references_are_inlined_and_local_keywords_win() -> None:
    out = inline_refs(SCHEMAS["defs_with_siblings"])
    assert "$defs" not in out and refs_in(out) == []
    assert out["properties"]["address"]["description"] == "Where to ship"
    assert out["properties"]["billing"]["description"] == "A postal address"
    assert out["properties"]["address"]["properties"]["zip"] == {"type": "string", "pattern": "^[0-9]{5}$"}


def test_a_recursive_reference_is_kept_in_defs_when_cycles_are_kept() -> None:
    out = inline_refs(SCHEMAS["recursive_tree"])
    node = out["properties"]["root"]
    assert node["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    assert out["$defs"]["Node"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    assert refs_in(out) == ["#/$defs/Node", "#/$defs/Node"]


def test_mutual_and_root_recursion_end_in_defs_that_resolve() -> None:
    for name in ("mutual_recursion", "root_recursion"):
        out = inline_refs(SCHEMAS[name])
        for ref in refs_in(out):
            name_in_defs = ref.removeprefix("#/$defs/")
            assert name_in_defs in out["$defs"], ref
        admits(out, ARGUMENTS[name])


def test_a_recursive_reference_becomes_a_placeholder_without_cycles() -> None:
    out = inline_refs(SCHEMAS["recursive_tree"], keep_cycles=False)
    assert refs_in(out) == [] and "$defs" not in out
    placeholder = out["properties"]["root"]["properties"]["children"]["items"]
    assert placeholder["type"] == "object"
    assert "recursive" in placeholder["description"]


def test_an_unresolvable_reference_is_dropped_and_named() -> None:
    out = inline_refs(SCHEMAS["unresolvable_ref"])
    assert out["properties"]["x"] == {
        "description": "Remote (schema reference https://example.com/schema.json could not be resolved)"
    }


def test_pointer_escapes_are_understood() -> None:
    schema = {"type": "object", "properties": {"a": {"$ref": "#/$defs/a~1b"}}, "$defs": {"a/b": {"type": "string"}}}
    assert inline_refs(schema)["properties"]["a"] == {"type": "string"}


def test_all_of_is_merged() -> None:
    out = merge_all_of(SCHEMAS["combinators"])["properties"]["all"]
    assert out == {
        "type": "object",
        "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
        "required": ["x", "y"],
    }


@pytest.mark.parametrize("name", ["empty_object", "nothing_at_all", "no_type"])
def test_the_root_is_always_an_object_with_properties(name: str) -> None:
    out = object_root(SCHEMAS[name])
    assert out["type"] == "object" and isinstance(out["properties"], dict)
    assert "$schema" not in object_root(SCHEMAS["recursive_tree"])


def test_a_root_union_becomes_one_object_requiring_only_what_all_branches_require() -> None:
    out = object_root(SCHEMAS["root_union"])
    assert set(out) == {"type", "properties", "description"}
    assert out["properties"] == {"id": {"type": "string"}, "name": {"type": "string"}}


def test_the_real_schemas_prepare_cleanly() -> None:
    for spec in load_snapshot():
        out = prepare(spec.input_schema)
        Draft202012Validator.check_schema(out)
        assert out["type"] == "object"
        assert "$schema" not in out
