"""Tool conversion gives exactly the output it gave before the copy-on-write schema fix-ups.

``data/convert_golden.json.gz`` holds what the converters and the schema fix-ups returned for a
large, varied corpus, byte for byte (key order included), for every provider and option
variant:

- the saved real schemas (``data/real_schemas.json``: server-everything, server-filesystem);
- the awkward schemas (``tests/providers/awkward.py``);
- the benchmark's catalog: ``bench.servers.line.tool_definitions(1000)`` (4 base tools and 1000
  filler tools of one shape; the first 12 definitions are kept whole, the whole list as a digest);
- tools sharing one schema object, and a subschema object used in several places;
- ``RANDOM_COUNT`` random schemas (fixed seed) mixing every keyword the fix-ups handle:
  references (local, recursive, with siblings, to the root, unresolvable), ``allOf`` /
  ``anyOf`` / ``oneOf``, type lists, ``nullable``, enums, consts, formats, bounds, boolean
  schemas, free-form objects, keywords strict mode or Gemini refuse (kept as digests).

How the golden file was made: from the ORIGINAL deepcopy-based code (git commit c091a4f,
before ``_schema.py``, ``_strict.py`` and ``_openapi.py`` became copy-on-write), with::

    MCPDECK_UPDATE_GOLDEN=1 .venv/bin/pytest tests/providers/test_convert_identity.py

Regenerate it only for an intended change of output, and say so in the commit.

Every test also checks that converting never changes the input schemas, and the outputs are
compared only after every variant has run, so an output changed after it was returned (the
outputs may share objects with the inputs and with each other) fails too.
"""

from __future__ import annotations

import copy
import functools
import gzip
import hashlib
import json
import os
import random
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, cast

import pytest
from bench.servers.line import tool_definitions

from mcpdeck.providers import (
    ToolDefinition,
    gemini_schema,
    get_provider,
    inline_refs,
    merge_all_of,
    object_root,
    strict_schema,
    strip_nulls,
)
from mcpdeck.providers._schema import prepare
from tests.providers.awkward import ARGUMENTS, SCHEMAS, awkward_specs
from tests.providers.support import load_snapshot

GOLDEN = Path(__file__).parent / "data" / "convert_golden.json.gz"
RANDOM_COUNT = 400
SEED = 20261122
BENCH_WHOLE = 12
"""Bench definitions kept whole: the 4 base tools and the first 8 fillers (one of each verb)."""

VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "openai": ("openai", {}),
    "openai strict": ("openai", {"strict": True}),
    "openai-responses": ("openai-responses", {}),
    "openai-responses strict": ("openai-responses", {"strict": True}),
    "anthropic": ("anthropic", {}),
    "gemini": ("gemini", {}),
    "gemini json_schema": ("gemini", {"json_schema": True}),
}

FIXES: dict[str, Callable[[Mapping[str, Any]], Any]] = {
    "inline_refs": inline_refs,
    "inline_refs no cycles": functools.partial(inline_refs, keep_cycles=False),
    "merge_all_of": merge_all_of,
    "object_root": object_root,
    "prepare": prepare,
    "prepare no cycles": functools.partial(prepare, keep_cycles=False),
    "strict_schema": strict_schema,
    "gemini_schema": gemini_schema,
}


# ----- the corpus ----------------------------------------------------------------------


def bench_specs() -> list[ToolDefinition]:
    """The benchmark server's catalog with ``--filler 1000``."""
    return [ToolDefinition(t["name"], t["description"], t["inputSchema"]) for t in tool_definitions(1000)]


def shared_specs() -> list[ToolDefinition]:
    """Tools that share one schema object, and schemas that use one subschema object twice."""
    address = {"type": "object", "properties": {"street": {"type": "string"}}, "required": ["street"]}
    one = {
        "type": "object",
        "properties": {"home": address, "work": address, "list": {"type": "array", "items": address}},
        "required": ["home"],
    }
    two = {"allOf": [address, {"properties": {"zip": {"type": "string"}}}], "properties": {"again": address}}
    three = {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}, "b": address}, "$defs": {"A": address}}
    return [
        ToolDefinition("shared_one", "One", one),
        ToolDefinition("shared_one_again", "One again", one),
        ToolDefinition("shared_two", "Two", two),
        ToolDefinition("shared_three", "Three", three),
        ToolDefinition("shared_root", "The address itself", address),
    ]


_TYPES = ("string", "integer", "number", "boolean", "null", "array", "object")
_FORMATS = ("date-time", "date", "time", "email", "uri", "uuid", "int32", "int64", "float", "double", "enum", "ipv4")
_PATTERNS = ("^[a-z]+$", "^(?!x)\\w+$", "(a)\\1", "^\\d{3}$", "a++")
_WORDS = ("alpha", "beta", "gamma", "delta", "id", "name", "x", "y", "a/b", "a~b")


class RandomSchemas:
    """Random, deterministic schemas that exercise every fix-up (and share subschema objects)."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.pool: list[Any] = []

    def word(self) -> str:
        return self.rng.choice(_WORDS)

    def value(self) -> Any:
        rng = self.rng
        return rng.choice(["text", 3, 2.5, True, None, {"k": [1, 2]}, ["x"], "", 0])

    def notes(self, node: dict[str, Any]) -> None:
        rng = self.rng
        for key in ("description", "title", "default", "examples", "deprecated", "readOnly", "$comment"):
            if rng.random() < 0.15:
                node[key] = (
                    f"{key} of {self.word()}"
                    if key in ("description", "title", "$comment")
                    else [self.value()]
                    if key == "examples"
                    else rng.random() < 0.5
                    if key in ("deprecated", "readOnly")
                    else self.value()
                )

    def schema(self, depth: int, refs: list[str]) -> Any:
        rng = self.rng
        if self.pool and rng.random() < 0.06:
            return rng.choice(self.pool)
        if rng.random() < 0.04:
            return rng.random() < 0.7
        if refs and rng.random() < 0.14:
            ref_node: dict[str, Any] = {"$ref": rng.choice(refs)}
            if rng.random() < 0.3:
                ref_node["description"] = f"ref to {ref_node['$ref']}"
            if rng.random() < 0.1:
                ref_node["type"] = "object"
            return ref_node
        node: dict[str, Any] = {}
        roll = rng.random()
        if depth <= 0 or roll < 0.45:
            self.scalar(node)
        elif roll < 0.6:
            node["type"] = "array" if rng.random() < 0.85 else ["array", "null"]
            shape = rng.random()
            if shape < 0.75:
                node["items"] = self.schema(depth - 1, refs)
            elif shape < 0.85:
                node["items"] = [self.schema(depth - 1, refs), self.schema(depth - 1, refs)]
            elif shape < 0.92:
                node["prefixItems"] = [self.schema(depth - 1, refs)]
            extra = (("minItems", 1), ("maxItems", 9), ("uniqueItems", True), ("contains", {"type": "string"}))
            node.update({key: value for key, value in extra if rng.random() < 0.15})
        elif roll < 0.85:
            self.object(node, depth, refs)
        else:
            key = rng.choice(["anyOf", "oneOf", "allOf", "anyOf"])
            node[key] = [self.schema(depth - 1, refs) for _ in range(rng.randint(1, 3))]
            if rng.random() < 0.3:
                node[key].append({"type": "null"})
            if rng.random() < 0.2:
                node["type"] = rng.choice(["object", "string"])
            if rng.random() < 0.2:
                self.object(node, depth, refs)
        for key in ("nullable", "not", "if", "then", "else"):
            if rng.random() < 0.04:
                node[key] = True if key == "nullable" else {"type": "string"}
        self.notes(node)
        self.pool.append(node)
        return node

    def scalar(self, node: dict[str, Any]) -> None:
        rng = self.rng
        roll = rng.random()
        if roll < 0.7:
            node["type"] = rng.choice(_TYPES[:5])
        elif roll < 0.8:
            node["type"] = rng.sample(_TYPES, rng.randint(1, 3))
        elif roll < 0.85:
            node["type"] = ["string", "null"]
        kind = node.get("type")
        if rng.random() < 0.2:
            node["enum"] = rng.choice([["a", "b"], [1, 2], ["a", None], [None], ["x", 1], [True]])
        if rng.random() < 0.1:
            node["const"] = self.value()
        if rng.random() < 0.2:
            node["format"] = rng.choice(_FORMATS)
        if kind == "string" or rng.random() < 0.1:
            extra = (("pattern", rng.choice(_PATTERNS)), ("minLength", 1), ("maxLength", 40))
            node.update({key: value for key, value in extra if rng.random() < 0.25})
        if kind in ("integer", "number") or rng.random() < 0.1:
            bounds = (
                ("minimum", 0),
                ("maximum", 100),
                ("exclusiveMinimum", 0),
                ("exclusiveMaximum", True),
                ("multipleOf", 5),
            )
            node.update({key: value for key, value in bounds if rng.random() < 0.2})

    def object(self, node: dict[str, Any], depth: int, refs: list[str]) -> None:
        rng = self.rng
        if rng.random() < 0.85:
            node["type"] = "object" if rng.random() < 0.9 else ["object", "null"]
        if rng.random() < 0.9:
            names: list[str] = rng.sample(_WORDS, rng.randint(0, 4))
            node["properties"] = {name: self.schema(depth - 1, refs) for name in names}
            if names and rng.random() < 0.7:
                node["required"] = rng.sample(names, rng.randint(1, len(names)))
                if rng.random() < 0.1:
                    node["required"].append("missing")
        roll = rng.random()
        if roll < 0.35:
            node["additionalProperties"] = False
        elif roll < 0.45:
            node["additionalProperties"] = rng.choice([True, {"type": "string"}, {"type": "integer"}])
        rare = (
            ("patternProperties", {"^x": {"type": "string"}}),
            ("propertyNames", {"pattern": "^[a-z]+$"}),
            ("minProperties", 1),
            ("maxProperties", 5),
            ("dependentSchemas", {"alpha": {"required": ["beta"]}}),
            ("dependentRequired", {"alpha": ["beta"]}),
            ("dependencies", {"alpha": ["beta"]}),
            ("discriminator", {"propertyName": "kind"}),
            ("unevaluatedProperties", False),
        )
        node.update({key: value for key, value in rare if rng.random() < 0.04})

    def root(self) -> dict[str, Any]:
        rng = self.rng
        defs_key = rng.choice(["$defs", "definitions"])
        names = rng.sample(["A", "B", "Node", "a/b", "Item"], rng.randint(0, 3))
        refs = [f"#/{defs_key}/{name.replace('/', '~1')}" for name in names]
        if rng.random() < 0.15:
            refs.append("#")
        if rng.random() < 0.1:
            refs.append("#/$defs/Missing")
        if rng.random() < 0.08:
            refs.append("https://example.com/remote.json")
        if rng.random() < 0.05:
            refs.append("#/properties/alpha")
        defs = {name: self.schema(2, refs) for name in names}
        roll = rng.random()
        root: dict[str, Any]
        if roll < 0.7:
            root = {}
            self.object(root, 3, refs)
        elif roll < 0.8:
            root = {rng.choice(["anyOf", "oneOf"]): [self.schema(2, refs) for _ in range(rng.randint(1, 3))]}
        elif roll < 0.87:
            root = {"allOf": [self.schema(2, refs), self.schema(2, refs)]}
        elif roll < 0.92 and refs:
            root = {"$ref": refs[0]}
        else:
            picked = self.schema(2, refs)
            root = dict(cast(dict[str, Any], picked)) if isinstance(picked, dict) else {}
        for key in ("$schema", "$id", "$comment", "description", "title"):
            if rng.random() < 0.15:
                root[key] = f"root {key}"
        if defs:
            root[defs_key] = defs
        return root


@functools.cache
def random_schemas() -> list[dict[str, Any]]:
    generator = RandomSchemas(SEED)
    return [generator.root() for _ in range(RANDOM_COUNT)]


def random_specs() -> list[ToolDefinition]:
    return [ToolDefinition(f"random_{i:04d}", f"Random schema {i}", s) for i, s in enumerate(random_schemas())]


def corpora() -> dict[str, list[ToolDefinition]]:
    return {
        "real": load_snapshot(),
        "awkward": awkward_specs(),
        "shared": shared_specs(),
        "bench": bench_specs(),
        "random": random_specs(),
    }


# ----- what is compared ----------------------------------------------------------------


def dump(value: Any) -> str:
    """``value`` as JSON with its key order (and the types JSON tells apart) kept."""
    return json.dumps(value, ensure_ascii=False)


def digest(value: Any) -> str:
    return hashlib.sha256(dump(value).encode()).hexdigest()[:20]


def attempt(fn: Callable[[], Any]) -> Any:
    """``fn()``, or the name of the exception it raised (an error is output too)."""
    try:
        return fn()
    except Exception as error:
        return {"raised": type(error).__name__}


def convert_all(specs_by_corpus: dict[str, list[ToolDefinition]]) -> dict[str, Any]:
    """Every output, as live objects (nothing is dumped until everything has run)."""
    out: dict[str, Any] = {"tools": {}, "fixes": {}, "strip_nulls": {}}
    for label, (provider, options) in VARIANTS.items():
        per_corpus: dict[str, Any] = {}
        for corpus, specs in specs_by_corpus.items():
            converter = get_provider(provider, **options)
            if corpus == "random":
                per_corpus[corpus] = [attempt(functools.partial(converter.tool, spec)) for spec in specs]
            else:
                per_corpus[corpus] = converter.tools(specs)
        out["tools"][label] = per_corpus
    for label, fix in FIXES.items():
        out["fixes"][label] = {
            corpus: [attempt(functools.partial(fix, spec.input_schema)) for spec in specs]
            for corpus, specs in specs_by_corpus.items()
            if corpus != "bench"
        }
    for name, arguments in ARGUMENTS.items():
        prepared = prepare(SCHEMAS[name])
        nulls = dict.fromkeys(prepared.get("properties") or {})
        out["strip_nulls"][name] = [strip_nulls(arguments, prepared), strip_nulls({**nulls, **arguments}, prepared)]
    return out


def golden_form(outputs: dict[str, Any]) -> dict[str, Any]:
    """The outputs as stored: whole, except the long, repetitive lists (digests)."""
    stored: dict[str, Any] = {"tools": {}, "fixes": {}, "strip_nulls": outputs["strip_nulls"]}
    for label, per_corpus in outputs["tools"].items():
        entry: dict[str, Any] = {}
        for corpus, tools in cast(dict[str, Any], per_corpus).items():
            if corpus == "bench":
                declarations = tools[0]["functionDeclarations"] if label.startswith("gemini") else tools
                entry["bench head"] = declarations[:BENCH_WHOLE]
                entry["bench digest"] = digest(tools)
            elif corpus == "random":
                entry["random digests"] = [digest(tool) for tool in tools]
            else:
                entry[corpus] = tools
        stored["tools"][label] = entry
    for label, per_corpus in outputs["fixes"].items():
        entry = {}
        for corpus, results in cast(dict[str, Any], per_corpus).items():
            if corpus == "random":
                entry["random digests"] = [digest(result) for result in results]
            else:
                entry[corpus] = results
        stored["fixes"][label] = entry
    return stored


def plain(value: Any, where: str = "$") -> None:
    """Fail unless ``value`` is made of plain JSON types only (dict, list, str, numbers, None)."""
    if isinstance(value, dict):
        for key, item in cast(dict[Any, Any], value).items():
            assert isinstance(key, str), where
            plain(item, f"{where}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(cast(list[Any], value)):
            plain(item, f"{where}[{index}]")
    else:
        assert value is None or isinstance(value, str | int | float), f"{where}: {type(value).__name__}"


# ----- the tests -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def run() -> tuple[dict[str, list[ToolDefinition]], dict[str, Any], str]:
    """The corpus, a deep copy of its schemas taken before anything ran, and the outputs' JSON."""
    specs = corpora()
    before = copy.deepcopy({corpus: [spec.input_schema for spec in items] for corpus, items in specs.items()})
    outputs = convert_all(specs)
    plain(outputs)
    stored = golden_form(outputs)
    if os.environ.get("MCPDECK_UPDATE_GOLDEN"):
        with gzip.open(GOLDEN, "wt", encoding="utf-8") as file:
            file.write(json.dumps(stored, indent=1, ensure_ascii=False) + "\n")
    return specs, before, dump(stored)


def test_the_corpus_is_large_and_varied(run: tuple[dict[str, list[ToolDefinition]], dict[str, Any], str]) -> None:
    specs, _, _ = run
    assert len(specs["bench"]) == 1004 and len(specs["random"]) == RANDOM_COUNT
    assert len(specs["real"]) >= 20 and len(specs["awkward"]) == len(SCHEMAS)
    text = dump([spec.input_schema for spec in specs["random"]])
    for keyword in ("$ref", "allOf", "anyOf", "oneOf", "nullable", "const", "enum", "prefixItems", "not", "$defs"):
        assert f'"{keyword}"' in text, keyword


def test_every_output_is_what_the_original_code_gave(
    run: tuple[dict[str, list[ToolDefinition]], dict[str, Any], str],
) -> None:
    _, _, text = run
    with gzip.open(GOLDEN, "rt", encoding="utf-8") as file:
        golden = json.loads(file.read())
    new = json.loads(text)
    if text == dump(golden):
        return
    for section in ("tools", "fixes", "strip_nulls"):
        for label, value in golden[section].items():
            if isinstance(value, dict):
                for part, expected in cast(dict[str, Any], value).items():
                    got = new[section][label][part]
                    if isinstance(expected, list):
                        for index, item in enumerate(cast(list[Any], expected)):
                            assert dump(got[index]) == dump(item), f"{section} / {label} / {part} [{index}]"
                    assert dump(got) == dump(expected), f"{section} / {label} / {part}"
            assert dump(new[section][label]) == dump(value), f"{section} / {label}"
    assert text == dump(golden)


def test_no_input_schema_is_changed(run: tuple[dict[str, list[ToolDefinition]], dict[str, Any], str]) -> None:
    specs, before, _ = run
    after = {corpus: [spec.input_schema for spec in items] for corpus, items in specs.items()}
    assert after == before
    assert dump(after) == dump(before)  # key order too


def test_converting_twice_gives_the_same_output(
    run: tuple[dict[str, list[ToolDefinition]], dict[str, Any], str],
) -> None:
    """A second round over the same schema objects (outputs of the first are shared with them)."""
    specs, _, text = run
    assert dump(golden_form(convert_all(specs))) == text
