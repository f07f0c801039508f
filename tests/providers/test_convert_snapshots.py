"""Each provider's tool definitions for a few real and awkward schemas, as readable snapshots.

``snapshots/<variant>.json`` holds what ``get_provider(...).tools(specs)`` gives for the
tools in ``REAL`` (saved from server-everything and server-filesystem, in
``data/real_schemas.json``) and ``AWKWARD`` (``awkward.py``: recursion, combinators,
nullable unions, a root union, an unresolvable reference, free-form maps). Read a diff of
these files like any code change. After an intended change of output, write them again
and review the diff::

    MCPDECK_UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest tests/providers/test_convert_snapshots.py

The properties every schema must keep (no input changed, valid output for every provider,
fix-ups that settle) are in ``test_convert_properties.py``.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest

from mcpdeck.providers import ToolDefinition, get_provider
from tests.providers.awkward import awkward_specs
from tests.providers.support import load_snapshot

SNAPSHOTS = Path(__file__).parent / "snapshots"

VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "openai": ("openai", {}),
    "openai-strict": ("openai", {"strict": True}),
    "openai-responses": ("openai-responses", {}),
    "openai-responses-strict": ("openai-responses", {"strict": True}),
    "anthropic": ("anthropic", {}),
    "gemini": ("gemini", {}),
    "gemini-json-schema": ("gemini", {"json_schema": True}),
}

REAL = (
    "mcp__everything__echo",
    "mcp__everything__get-annotated-message",
    "mcp__everything__gzip-file-as-resource",
    "mcp__everything__trigger-url-elicitation",
    "mcp__fs__edit_file",
    "mcp__fs__read_multiple_files",
    "mcp__fs__list_directory_with_sizes",
)
AWKWARD = (
    "recursive_tree",
    "mutual_recursion",
    "combinators",
    "nullable_unions",
    "root_union",
    "unresolvable_ref",
    "free_form_maps",
)


def specs() -> list[ToolDefinition]:
    """The snapshot's tools, in a fixed order."""
    real = {spec.name: spec for spec in load_snapshot()}
    awkward = {spec.name: spec for spec in awkward_specs()}
    return [real[name] for name in REAL] + [awkward[name] for name in AWKWARD]


def render(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_tool_definitions_are_the_snapshot(variant: str) -> None:
    provider, options = VARIANTS[variant]
    tools = specs()
    before = copy.deepcopy([spec.input_schema for spec in tools])
    text = render(get_provider(provider, **options).tools(tools))
    assert [spec.input_schema for spec in tools] == before
    path = SNAPSHOTS / f"{variant}.json"
    if os.environ.get("MCPDECK_UPDATE_SNAPSHOTS"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), (
        f"{path.name} differs; if the change is intended, regenerate (see this module's docstring) and review the diff"
    )


def test_every_snapshot_belongs_to_a_variant_and_names_every_tool() -> None:
    assert sorted(path.stem for path in SNAPSHOTS.glob("*.json")) == sorted(VARIANTS)
    for variant in VARIANTS:
        text = (SNAPSHOTS / f"{variant}.json").read_text(encoding="utf-8")
        missing = [spec.name for spec in specs() if f'"{spec.name}"' not in text]
        assert missing == [], f"{variant}.json lacks {missing}"
