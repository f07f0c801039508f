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
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from hypothesis import given

from mcpdeck.providers import ToolDefinition, get_provider, inline_refs, merge_all_of, object_root, strict_schema
from mcpdeck.providers._schema import prepare
from tests.support.tool_schemas import (
    PROVIDERS,
    SETTINGS,
    dump,
    plain,
    schemas,
)

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
