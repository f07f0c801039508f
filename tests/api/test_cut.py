"""A big result answered cut (``cut``): the text and structure a page shows at once, what was cut and
what only repeats, and the whole kept for ``/api/calls/{callId}/result``; against the bulky server."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import mcp_types as types
import pytest

from mcpdeck.api._cut import ENTRIES, KeptResults
from mcpdeck.results import ToolResult
from tests.api.conftest import Api, running_api
from tests.helpers import stdio_server

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def api(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Api]:
    folder = tmp_path_factory.mktemp("cut")
    async with running_api(folder, {"bulky": stdio_server("bulky")}, in_process=False) as running:
        yield running


async def call(api: Api, tool: str, arguments: dict[str, Any], **body: Any) -> dict[str, Any]:
    answer = await api.client.post(f"/api/tools/mcp__bulky__{tool}/call", json={"arguments": arguments, **body})
    assert answer.status_code == 200, answer.text
    return answer.json()


async def test_a_big_text_comes_cut_at_a_line_s_end_and_whole_from_the_kept_result(api: Api) -> None:
    data = await call(api, "text", {"kb": 512}, cut=20_000, callId="big-text")
    whole = 512 * 1024
    full = await api.client.get("/api/calls/big-text/result/content/0")
    assert full.headers["content-type"].startswith("text/plain") and len(full.text) == whole
    shown = data["shown"]
    assert shown["content"] == {"0": {"characters": whole, "lines": full.text.count("\n") + 1}}
    text = data["content"][0]["text"]
    assert len(text) <= 20_000 and text.endswith("\n")
    # The SDK's structured content {"result": text} only repeats the text: it is said so, and not sent.
    assert shown["repeats"] == {"block": 0, "as": "wrapped", "key": "result"}
    assert shown["structuredContent"]["characters"] > whole
    assert len(data["structuredContent"]["result"]) == 2_000
    assert shown["kept"] is True

    saved = await api.client.get("/api/calls/big-text/result/content/0?download=true")
    assert saved.headers["content-disposition"] == 'attachment; filename="text-big-text-0.txt"'
    every = (await api.client.get("/api/calls/big-text/result")).json()
    assert len(every["content"][0]["text"]) == whole and "shown" not in every
    structured = await api.client.get("/api/calls/big-text/result/structured")
    assert len(json.loads(structured.text)["result"]) == whole


async def test_a_big_structure_comes_pruned_with_each_cut_named_and_its_json_text_not_repeated(api: Api) -> None:
    data = await call(api, "tree", {"mb": 0.5}, cut=20_000, callId="big-tree")
    count = int(0.5 * 1024 * 1024 / 110)
    shown = data["shown"]
    assert shown["repeats"] == {"block": 0, "as": "json"}
    assert shown["structuredContent"]["cuts"] == {"/records": {"entries": count}}
    assert data["structuredContent"]["count"] == count
    assert len(data["structuredContent"]["records"]) == ENTRIES
    assert data["structuredContent"]["records"][3] == {
        "id": 3,
        "name": "record 3",
        "tags": ["alpha", "beta"],
        "score": 1.5,
    }
    whole = await api.client.get("/api/calls/big-tree/result/structured?download=true")
    assert len(json.loads(whole.text)["records"]) == count
    assert whole.headers["content-disposition"] == 'attachment; filename="tree-big-tree-structured.json"'


async def test_a_small_result_is_whole_and_says_so_and_nothing_is_kept(api: Api) -> None:
    data = await call(api, "lines", {"n": 3}, cut=20_000, callId="small")
    assert data["content"][0]["text"] == "line 000001 of 3\nline 000002 of 3\nline 000003 of 3"
    assert data["shown"]["content"] == {} and data["shown"]["structuredContent"] is None
    assert data["shown"]["repeats"] == {"block": 0, "as": "wrapped", "key": "result"}
    assert data["shown"]["kept"] is False
    missing = await api.client.get("/api/calls/small/result")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "result-not-kept"
    # Without `cut`, the answer is the whole result, as before.
    plain = await call(api, "lines", {"n": 3})
    assert "shown" not in plain and plain["content"] == data["content"]
    assert (
        await api.client.post("/api/tools/mcp__bulky__lines/call", json={"arguments": {"n": 1}, "cut": 5})
    ).status_code == 422


async def test_only_the_newest_results_are_kept() -> None:
    def result(size: int) -> ToolResult:
        return ToolResult.from_mcp(
            types.CallToolResult(content=[types.TextContent(text="x" * size)]),
            name="t",
            server="s",
            tool="t",
            duration=0.0,
        )

    kept = KeptResults(keep=2, chars=100)
    kept.add("a", result(10))
    kept.add("b", result(10))
    kept.add("c", result(10))
    assert (kept.get("a"), kept.get("b") is not None, kept.get("c") is not None) == (None, True, True)
    kept.add("d", result(95))  # over the characters: the older go
    assert (kept.get("c"), kept.get("d") is not None) == (None, True)
    kept.add("e", result(500))  # one alone is kept, however big
    assert kept.get("e") is not None and kept.get("d") is None
