"""Catalog: names, sanitising, collisions, length limits, the index back to (server, tool)."""

from __future__ import annotations

import hashlib
import re
import sys
from typing import Any

import mcp_types as types

from mcpdeck.catalog import MAX_TOOL_NAME, Catalog, build_catalog, tool_name

SAFE = re.compile(r"[A-Za-z0-9_-]+")


def tool(name: str, schema: dict[str, Any] | None = None, **extra: Any) -> types.Tool:
    return types.Tool(name=name, input_schema=schema or {"type": "object"}, **extra)


def suffix(server: str, name: str) -> str:
    return hashlib.sha256(f"{server}\0{name}".encode()).hexdigest()[:6]


def names(catalog: Catalog) -> dict[tuple[str, str], str]:
    return {(entry.server, entry.original_name): entry.name for entry in catalog}


def test_a_plain_tool_is_named_mcp_server_tool() -> None:
    assert tool_name("github", "create_issue") == ("mcp__github__create_issue", True)
    catalog = build_catalog({"github": [tool("create_issue"), tool("list-prs")]}, version=1)
    assert catalog.names() == ["mcp__github__create_issue", "mcp__github__list-prs"]


def test_characters_that_cannot_go_in_a_name_become_underscores() -> None:
    assert tool_name("fs", "read.file now/please") == ("mcp__fs__read_file_now_please", False)
    assert tool_name("fs", "") == ("mcp__fs___", False)
    catalog = build_catalog({"fs": [tool("read.file"), tool("héllo")]}, version=1)
    # Altered but not colliding: no suffix needed.
    assert names(catalog) == {("fs", "read.file"): "mcp__fs__read_file", ("fs", "héllo"): "mcp__fs__h_llo"}
    assert all(SAFE.fullmatch(name) for name in catalog.names())


def test_a_sanitised_name_that_collides_gets_a_stable_suffix_and_the_exact_one_keeps_its_name() -> None:
    catalog = build_catalog({"fs": [tool("read.file"), tool("read_file")]}, version=1)
    assert names(catalog) == {
        ("fs", "read_file"): "mcp__fs__read_file",
        ("fs", "read.file"): f"mcp__fs__read_file_{suffix('fs', 'read.file')}",
    }


def test_two_sanitised_names_that_collide_both_get_distinct_suffixes() -> None:
    catalog = build_catalog({"fs": [tool("a.b"), tool("a b"), tool("a/b")]}, version=1)
    got = names(catalog)
    assert len(set(got.values())) == 3
    for original in ("a.b", "a b", "a/b"):
        assert got[("fs", original)] == f"mcp__fs__a_b_{suffix('fs', original)}"


def test_names_do_not_depend_on_the_order_servers_answer_in() -> None:
    one = {"alpha": [tool("x.y"), tool("x_y"), tool("q" * 80)], "beta": [tool("x.y"), tool("z")]}
    two = {"beta": [tool("z"), tool("x.y")], "alpha": [tool("q" * 80), tool("x_y"), tool("x.y")]}
    assert names(build_catalog(one, 1)) == names(build_catalog(two, 1))


def test_names_are_the_same_in_every_run() -> None:
    # The suffix is a hash of (server, tool), not a counter or a random value.
    catalog = build_catalog({"fs": [tool("read.file"), tool("read_file")]}, version=1)
    assert catalog.find("fs", "read.file") is not None
    assert catalog.names()[0].endswith("_" + hashlib.sha256(b"fs\0read.file").hexdigest()[:6])


def test_a_name_longer_than_64_characters_is_cut_and_given_a_suffix() -> None:
    long = "summarise_the_quarterly_report_for_the_whole_department_" + "x" * 20
    catalog = build_catalog({"reports": [tool(long)]}, version=1)
    (name,) = catalog.names()
    assert len(name) == MAX_TOOL_NAME
    assert name == f"mcp__reports__{long}"[: MAX_TOOL_NAME - 7] + "_" + suffix("reports", long)
    assert tool_name("reports", long)[1] is False


def test_a_name_of_exactly_64_characters_is_kept_whole() -> None:
    server = "s"
    original = "t" * (MAX_TOOL_NAME - len("mcp__s__"))
    catalog = build_catalog({server: [tool(original)]}, version=1)
    assert catalog.names() == [f"mcp__s__{original}"]


def test_two_long_names_with_the_same_start_stay_apart() -> None:
    start = "a" * 70
    catalog = build_catalog({"srv": [tool(start + "_one"), tool(start + "_two")]}, version=1)
    assert len(set(catalog.names())) == 2
    assert all(len(name) == MAX_TOOL_NAME for name in catalog.names())


def test_tools_of_different_servers_never_overwrite_each_other() -> None:
    # Server "a" with tool "_b" and server "a_" with tool "b" both make "mcp__a___b".
    catalog = build_catalog({"a": [tool("_b")], "a_": [tool("b")]}, version=1)
    assert len(catalog) == 2
    assert catalog.find("a", "_b") is not None and catalog.find("a_", "b") is not None
    assert len(set(catalog.names())) == 2


def test_the_index_maps_every_name_back_to_its_server_and_tool() -> None:
    tools = {"fs": [tool("read.file"), tool("read_file"), tool("w" * 90)], "git": [tool("read_file")]}
    catalog = build_catalog(tools, version=3)
    for server, server_tools in tools.items():
        for item in server_tools:
            entry = catalog.find(server, item.name)
            assert entry is not None
            back = catalog.get(entry.name)
            assert back is not None and back is entry
            assert (back.server, back.original_name) == (server, item.name)
    assert catalog.get("mcp__nope__x") is None
    assert "mcp__git__read_file" in catalog
    assert [entry.original_name for entry in catalog.for_server("git")] == ["read_file"]


def test_the_version_is_what_the_builder_was_given() -> None:
    assert Catalog().version == 0
    assert len(Catalog()) == 0
    assert build_catalog({}, version=7).version == 7


def test_arguments_are_checked_against_the_input_schema() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "opts": {"type": "object", "properties": {"n": {"type": "string"}}}},
        "required": ["a"],
    }
    entry = build_catalog({"m": [tool("add", schema)]}, version=1).get("mcp__m__add")
    assert entry is not None
    assert entry.validate_arguments({"a": 1}) == []
    assert entry.validate_arguments({}) == ["'a' is a required property"]
    assert entry.validate_arguments({"a": "x", "opts": {"n": 3}}) == [
        "a: 'x' is not of type 'integer'",
        "opts/n: 3 is not of type 'string'",
    ]


def test_a_schema_the_validator_cannot_read_leaves_the_check_to_the_server() -> None:
    entry = build_catalog({"m": [tool("odd", {"type": "object", "properties": 5})]}, version=1).get("mcp__m__odd")
    assert entry is not None
    assert entry.validate_arguments({"anything": 1}) == []


def test_an_entry_exposes_what_the_server_said_of_the_tool() -> None:
    annotated = tool(
        "lookup",
        description="Find a thing.",
        annotations=types.ToolAnnotations(title="Look up", read_only_hint=True),
        output_schema={"type": "object"},
    )
    entry = build_catalog({"m": [annotated, tool("plain")]}, version=1).get("mcp__m__lookup")
    plain = build_catalog({"m": [tool("plain")]}, version=1).get("mcp__m__plain")
    assert entry is not None and plain is not None
    assert (entry.title, entry.description, entry.read_only) == ("Look up", "Find a thing.", True)
    assert (plain.title, plain.description, plain.read_only) == (None, "", False)
    assert entry.to_json() == {
        "name": "mcp__m__lookup",
        "server": "m",
        "tool": "lookup",
        "title": "Look up",
        "description": "Find a thing.",
        "inputSchema": {"type": "object"},
        "outputSchema": {"type": "object"},
        "annotations": {"title": "Look up", "readOnlyHint": True},
    }


def test_reading_a_kept_definition_leaves_it_as_small_as_it_was() -> None:
    # CPython keeps a str's UTF-8 form inside it once made; a non-ASCII definition must not
    # carry one more copy of itself for the rest of its life after its first decode.
    schemas = [
        {"type": "object", "properties": {"q": {"type": "string", "description": text}}}
        for text in ("plain ascii text " * 40, "café, naïve, déjà vu " * 40, "検索する語 " * 80)
    ]
    entries = list(build_catalog({"m": [tool(f"t{i}", schema) for i, schema in enumerate(schemas)]}, version=1))
    sizes = [sys.getsizeof(entry.schema_key) for entry in entries]
    for entry, schema in zip(entries, schemas, strict=True):
        assert entry.input_schema == schema
        assert entry.to_json()["inputSchema"] == schema
        assert entry.validate_arguments({"q": "x"}) == []
    assert [sys.getsizeof(entry.schema_key) for entry in entries] == sizes


# ----- long server names --------------------------------------------------------------------

LONG_SERVER = "acme-corporation-internal-configuration-services"  # 48 characters: the most a name may have


def test_a_long_server_name_is_shortened_first_so_the_tool_name_stays_readable() -> None:
    catalog = build_catalog({LONG_SERVER: [tool("get_config"), tool("set_config")]}, version=1)
    by_tool = {entry.original_name: entry.name for entry in catalog}
    digest = hashlib.sha256(LONG_SERVER.encode()).hexdigest()[:4]
    for original, name in by_tool.items():
        assert len(name) <= MAX_TOOL_NAME and SAFE.fullmatch(name)
        assert name.endswith(f"-{digest}__{original}")  # the tool's own name whole, after a hash of the server
        assert name.startswith("mcp__acme-corporation")
    assert catalog.find(LONG_SERVER, "get_config") is catalog.get(by_tool["get_config"])


def test_a_tool_name_too_long_even_beside_a_short_server_part_is_cut_with_a_hash() -> None:
    long = "describe_every_configuration_value_of_the_whole_service_now"  # 59 characters
    (name,) = build_catalog({LONG_SERVER: [tool(long)]}, version=1).names()
    assert len(name) == MAX_TOOL_NAME
    assert name.startswith("mcp__acme-cor-") and name.endswith("_" + suffix(LONG_SERVER, long))
    assert "__describe_every_configuration" in name


def test_shortened_names_are_stable_and_still_never_collide() -> None:
    tools = [tool("get_config"), tool("get config"), tool("get.config")]
    first = names(build_catalog({LONG_SERVER: tools, "other": [tool("get_config")]}, version=1))
    again = names(build_catalog({"other": [tool("get_config")], LONG_SERVER: list(reversed(tools))}, version=2))
    assert first == again
    assert len(set(first.values())) == 4
    assert first[("other", "get_config")] == "mcp__other__get_config"


# ----- argument checks: only what is certain to fail -----------------------------------------


def test_a_required_property_with_a_default_is_filled_and_then_fits() -> None:
    schema = {
        "type": "object",
        "properties": {
            "scale": {"type": "string", "enum": ["css", "device"], "default": "css"},
            "n": {"type": "integer"},
        },
        "required": ["scale", "n"],
    }
    entry = build_catalog({"pw": [tool("shot", schema)]}, version=1).get("mcp__pw__shot")
    assert entry is not None
    filled = entry.with_defaults({"n": 1})
    assert filled == {"n": 1, "scale": "css"}
    assert entry.validate_arguments(filled) == []
    assert entry.with_defaults({"n": 1, "scale": "device"}) == {"n": 1, "scale": "device"}  # given wins
    assert entry.validate_arguments(entry.with_defaults({})) == [
        "'n' is a required property"
    ]  # no default: still needed


def test_a_ref_cycle_is_a_clear_problem_of_that_tool_not_a_crash() -> None:
    loop = {
        "type": "object",
        "properties": {"x": {"$ref": "#/$defs/a"}},
        "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
    }
    catalog = build_catalog({"m": [tool("loop", loop), tool("fine", {"type": "object"})]}, version=1)
    entry, fine = catalog.get("mcp__m__loop"), catalog.get("mcp__m__fine")
    assert entry is not None and fine is not None
    problems = entry.validate_arguments({"x": 1})
    assert len(problems) == 1 and "loops back to itself" in problems[0] and "--no-validate" in problems[0]
    assert entry.validate_arguments({"x": 1}) == problems  # asked again: the same answer, no crash
    assert fine.validate_arguments({"y": 2}) == []


def test_a_reference_the_validator_cannot_resolve_leaves_the_check_to_the_server() -> None:
    schema = {"type": "object", "properties": {"x": {"$ref": "https://example.invalid/schema.json"}}}
    entry = build_catalog({"m": [tool("remote", schema)]}, version=1).get("mcp__m__remote")
    assert entry is not None
    assert entry.validate_arguments({"x": 1}) == []
