"""Tool search: the tokenizer, BM25F ranking over real and synthetic tool sets, the cache, the search tool."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest

from mcpdeck.agent._index import ToolIndex
from mcpdeck.agent._search import index_finder, search_tool
from mcpdeck.agent._tools import as_tool
from mcpdeck.agent._words import stem, tokenize
from mcpdeck.catalog import Catalog, build_catalog
from mcpdeck.providers._base import ToolDefinition, ToolSpec

SNAPSHOT = Path(__file__).resolve().parent.parent / "providers" / "data" / "real_schemas.json"
VERBS = ["create", "get", "list", "update", "delete", "search", "export", "archive"]
NOUNS = [
    "invoice",
    "customer",
    "order",
    "ticket",
    "shipment",
    "payment",
    "contract",
    "report",
    "webhook",
    "subscription",
    "refund",
    "coupon",
    "employee",
    "meeting",
    "attachment",
    "comment",
    "project",
    "task",
    "label",
    "dashboard",
]


def real_tools() -> dict[str, list[types.Tool]]:
    """The reference servers' tools (server-everything and server-filesystem), by server."""
    by_server: dict[str, list[types.Tool]] = {}
    for item in json.loads(SNAPSHOT.read_text()):
        tool = types.Tool.model_validate(
            {"name": item["tool"], "description": item["description"], "inputSchema": item["inputSchema"]}
        )
        by_server.setdefault(item["server"], []).append(tool)
    return by_server


def synthetic_tools(count: int = 1000) -> dict[str, list[types.Tool]]:
    """``count`` made-up business tools in services of 20 (``mcp__svc17__create_invoice_347``)."""
    by_server: dict[str, list[types.Tool]] = {}
    for i in range(count):
        service = f"svc{i // 20}"
        verb, noun = VERBS[i % len(VERBS)], NOUNS[(i // len(VERBS) + i) % len(NOUNS)]
        description = (
            f"{verb.capitalize()} a {noun} in the {service} service. Returns the {noun} as JSON with its id, "
            f"status and timestamps. Requires the {service} API token; fails if the {noun} does not exist."
        )
        schema = {
            "type": "object",
            "properties": {
                f"{noun}Id": {"type": "string", "description": f"The id of the {noun}"},
                "fields": {"type": "array", "items": {"type": "string"}, "description": "Which fields to return"},
                "format": {"type": "string", "enum": ["json", "csv"]},
            },
            "required": [f"{noun}Id"],
        }
        tool = types.Tool.model_validate(
            {"name": f"{verb}_{noun}_{i}", "description": description, "inputSchema": schema}
        )
        by_server.setdefault(service, []).append(tool)
    return by_server


@pytest.fixture(scope="module")
def real() -> Catalog:
    return build_catalog(real_tools(), 1)


@pytest.fixture(scope="module")
def big() -> Catalog:
    """The real tools among 1000 synthetic ones."""
    return build_catalog({**synthetic_tools(), **real_tools()}, 1)


def names(results: Sequence[tuple[ToolSpec, float]]) -> list[str]:
    return [spec.name for spec, _ in results]


# ----- tokens -----------------------------------------------------------------------------------


def test_tokens_split_snake_kebab_camel_case_and_digits() -> None:
    assert tokenize("mcp__fs__readTextFile2") == ["mcp", "fs", "read", "text", "fil", "2"]
    assert tokenize("get-resource-links") == ["get", "resourc", "link"]
    assert tokenize("HTTPServer getURLForID") == ["http", "server", "get", "url", "id"]
    assert tokenize("list_directory_with_sizes") == ["list", "directory", "siz"]
    assert tokenize("OAuth2Token v3") == ["auth", "2", "token", "3"]


def test_stop_words_and_single_letters_are_left_out_and_words_lowercased() -> None:
    assert tokenize("Read the contents of a file, e.g. README") == ["read", "content", "fil", "readm"]
    assert tokenize("the and of") == []
    assert tokenize("") == []
    assert tokenize("Café naïve") == ["café", "naïv"]


@pytest.mark.parametrize(
    ("words", "same"),
    [
        (["file", "files", "filed"], True),
        (["read", "reading", "reads"], True),
        (["create", "created", "creates", "creating"], True),
        (["directory", "directories"], True),
        (["run", "running", "runs"], True),
        (["search", "searches", "searching"], True),
        (["string", "strings"], True),
        (["status", "process", "analysis"], False),  # not plurals
    ],
)
def test_stemming_gives_a_words_usual_forms_one_stem(words: list[str], same: bool) -> None:
    stems = {stem(word) for word in words}
    assert (len(stems) == 1) is same, stems
    assert [stem(word) for word in words] == [stem(word) for word in words]  # deterministic
    assert stem("need") == "need" and stem("string") == "string" and stem("status") == "status"


# ----- ranking ----------------------------------------------------------------------------------


@pytest.mark.parametrize("catalog", ["real", "big"])
def test_natural_queries_find_the_right_real_tools(catalog: str, request: pytest.FixtureRequest) -> None:
    index = ToolIndex(request.getfixturevalue(catalog))
    top = names(index.search("read a file", 3))
    assert top[0] in ("mcp__fs__read_file", "mcp__fs__read_text_file")
    assert {"mcp__fs__read_file", "mcp__fs__read_text_file"} <= set(top)
    assert names(index.search("echo message", 1)) == ["mcp__everything__echo"]
    assert names(index.search("add two numbers", 1)) == ["mcp__everything__get-sum"]
    assert names(index.search("rename a file", 1)) == ["mcp__fs__move_file"]
    assert names(index.search("write to a file", 1)) == ["mcp__fs__write_file"]
    assert names(index.search("find files matching a pattern", 1)) == ["mcp__fs__search_files"]
    assert names(index.search("environment variables", 1)) == ["mcp__everything__get-env"]
    assert names(index.search("list directory contents", 2)) == [
        "mcp__fs__list_directory",
        "mcp__fs__list_directory_with_sizes",
    ]
    assert "mcp__fs__create_directory" in names(index.search("make a new folder", 2))  # by synonyms


def test_synthetic_tools_rank_by_verb_noun_and_service(big: Catalog) -> None:
    index = ToolIndex(big)
    found = index.search("create an invoice", 5)
    assert all(name.split("__")[2].startswith("create_invoice") for name in names(found))
    scores = [score for _, score in found]
    assert scores == sorted(scores, reverse=True) and scores[-1] > 0
    refund = names(index.search("svc17 refund", 1))
    assert refund[0].startswith("mcp__svc17__") and "refund" in refund[0]
    assert all("customer" in name for name in names(index.search("customerId", 5)))  # an argument's name


def test_an_exact_name_ranks_first(big: Catalog) -> None:
    index = ToolIndex(big)
    assert names(index.search("mcp__fs__read_text_file", 3))[0] == "mcp__fs__read_text_file"
    assert names(index.search("read_media_file", 1)) == ["mcp__fs__read_media_file"]  # the original name
    assert names(index.search("  GET-SUM ", 1)) == ["mcp__everything__get-sum"]  # case and - / _ alike
    assert names(index.search("get_sum", 1)) == ["mcp__everything__get-sum"]
    echo = index.search("echo", 2)
    assert names(echo)[0] == "mcp__everything__echo" and echo[0][1] > 2 * (echo[1][1] if len(echo) > 1 else 0)


def test_no_match_and_degenerate_queries_give_nothing(big: Catalog) -> None:
    index = ToolIndex(big)
    assert index.search("zzyzx qwv", 5) == []
    assert index.search("", 5) == []
    assert index.search("the of and", 5) == []
    assert index.search("read a file", 0) == []
    assert ToolIndex([]).search("anything") == []


def test_a_query_word_no_tool_has_is_tried_as_a_prefix(real: Catalog) -> None:
    index = ToolIndex(real)
    assert names(index.search("compr", 1)) == ["mcp__everything__gzip-file-as-resource"]
    assert index.search("zz", 1) == []  # too short to be tried as a prefix
    assert set(names(index.search("elicit", 2))) == {
        "mcp__everything__trigger-elicitation-request",
        "mcp__everything__trigger-url-elicitation",
    }


def test_native_tools_and_plain_definitions_are_indexed_too() -> None:
    def convert_currency(amount: float, currency: str) -> str:
        """Convert money from one currency to another."""
        return f"{amount} {currency}"

    native = as_tool(convert_currency)
    definition = ToolDefinition("mcp__weather__forecast", "The weather forecast for a city.", {"type": "object"})
    index = ToolIndex([native, definition])
    assert names(index.search("exchange money currency", 5)) == ["convert_currency"]
    assert names(index.search("weather", 5)) == ["mcp__weather__forecast"]  # the server name counts
    assert names(index.search("forecast", 5)) == ["mcp__weather__forecast"]
    assert len(index) == 2 and index.tools == [native, definition]


def test_schemas_given_as_other_mappings_and_odd_schemas_are_indexed() -> None:
    from types import MappingProxyType

    odd: list[Any] = [
        ToolDefinition("a", "", MappingProxyType({"properties": {"needle": {"description": "x"}}})),
        ToolDefinition("b", "", {"properties": {"x": {"anyOf": [{"properties": {"deep_needle": {}}}]}}}),
        ToolDefinition("c", "", {"properties": "not a dict", "items": [1], "anyOf": "x"}),
        ToolDefinition("d", "", {"type": "array", "items": {"properties": {"itemNeedle": {"enum": ["pick", 3]}}}}),
    ]
    index = ToolIndex(odd)
    assert names(index.search("needle", 5))[0] == "a"
    assert names(index.search("deep", 5)) == ["b"]
    assert names(index.search("pick", 5)) == ["d"]


# ----- the cache --------------------------------------------------------------------------------


def test_for_tools_reuses_the_index_until_the_catalog_version_or_the_extra_tools_change(big: Catalog) -> None:
    first = ToolIndex.for_tools(big)
    assert ToolIndex.for_tools(big) is first
    assert ToolIndex.for_tools(big, []) is first
    newer = Catalog(list(big), version=big.version + 1)
    rebuilt = ToolIndex.for_tools(newer)
    assert rebuilt is not first and len(rebuilt) == len(first)
    assert names(rebuilt.search("read a file", 3)) == names(first.search("read a file", 3))

    def noop() -> None:
        """Do nothing at all."""

    native = as_tool(noop)
    with_native = ToolIndex.for_tools(newer, [native])
    assert with_native is not rebuilt and ToolIndex.for_tools(newer, [native]) is with_native
    assert with_native.tools[0] is native and names(with_native.search("noop", 1)) == ["noop"]
    same_version_other_catalog = Catalog(list(big), version=big.version)
    assert ToolIndex.for_tools(same_version_other_catalog) is not first
    plain = list(big)
    assert ToolIndex.for_tools(plain) is not ToolIndex.for_tools(plain)  # no version: not cached


# ----- the search tool --------------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_search_tool_lists_what_it_found_and_hands_it_on(big: Catalog) -> None:
    offered: list[ToolSpec] = []
    asked: list[tuple[str, int]] = []
    finder = index_finder(lambda: big)

    def find(query: str, limit: int) -> list[ToolSpec]:
        asked.append((query, limit))
        return finder(query, limit)

    search = search_tool(find, offered.extend, max_results=3)
    assert (search.name, search.read_only) == ("search_tools", True)
    assert search.input_schema["required"] == ["query"]
    assert "become available" in search.description

    result = await search.call({"query": "read a file", "limit": 50})
    assert not result.is_error and asked == [("read a file", 3)]
    text = result.text()
    assert text.startswith("3 tools match 'read a file'; you can call them now:")
    assert "- mcp__fs__read_file: Read the complete contents of a file as text." in text
    assert [spec.name for spec in offered] == [line[2:].split(":")[0] for line in text.splitlines()[1:]]

    nothing = await search.call({"query": "zzyzx"})
    assert not nothing.is_error and nothing.text().startswith("No tool matches 'zzyzx'")
    assert len(offered) == 3  # not called for nothing
    empty = await search.call({"query": "  "})
    assert empty.is_error and "give a query" in empty.text()

    one = await search_tool(find, name="find_tools").call({"query": "get_sum", "limit": 1})
    assert one.name == "find_tools" and one.text().startswith("1 tool matches 'get_sum'")
