"""ToolResult: every content kind kept, rendered as text for a model, capped with a note."""

from __future__ import annotations

import base64
import json
from typing import Any

import mcp_types as types
import pytest

from mcpdeck.results import DEFAULT_MAX_CHARS, ToolResult, render_content, truncate

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def result(*content: types.ContentBlock, structured: dict[str, Any] | None = None, error: bool = False) -> ToolResult:
    raw = types.CallToolResult(content=list(content), structured_content=structured, is_error=error)
    return ToolResult.from_mcp(raw, name="mcp__s__t", server="s", tool="t", duration=0.25)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_from_mcp_keeps_every_field() -> None:
    text = types.TextContent(text="hi")
    got = result(text, structured={"n": 1}, error=True)
    assert (got.name, got.server, got.tool, got.duration) == ("mcp__s__t", "s", "t", 0.25)
    assert got.content == [text]
    assert got.structured_content == {"n": 1}
    assert got.is_error


def test_text_blocks_are_joined_line_by_line() -> None:
    got = result(types.TextContent(text="first"), types.TextContent(text="second"))
    assert got.text() == "first\nsecond"


def test_binary_content_is_described_not_dumped() -> None:
    image = types.ImageContent(data=b64(b"\1" * 300), mime_type="image/png")
    audio = types.AudioContent(data=b64(b"\0" * 3000), mime_type="audio/wav")
    got = result(image, audio)
    assert got.text() == "[image: image/png, 300 bytes]\n[audio: audio/wav, 2.9 KB]"
    assert b64(b"\1" * 300) not in got.text()


@pytest.mark.parametrize("size", [2, 3, 70, 1023])
def test_a_binary_size_is_the_size_of_the_decoded_bytes(size: int) -> None:
    image = types.ImageContent(data=b64(b"x" * size), mime_type="image/png")
    assert render_content(image) == f"[image: image/png, {size} bytes]"


def test_resources_are_rendered_by_kind() -> None:
    link = types.ResourceLink(uri="file:///notes.md", name="notes", title="My notes", mime_type="text/markdown")
    untitled = types.ResourceLink(uri="file:///a", name="a")
    text = types.EmbeddedResource(resource=types.TextResourceContents(uri="file:///t.txt", text="inside"))
    blob = types.EmbeddedResource(
        resource=types.BlobResourceContents(uri="file:///b.bin", blob=b64(b"\1" * 2048), mime_type="application/zip")
    )
    bare = types.EmbeddedResource(resource=types.BlobResourceContents(uri="file:///c.bin", blob=b64(b"\1" * 12)))
    assert render_content(link) == "[resource link: My notes <file:///notes.md> text/markdown]"
    assert render_content(untitled) == "[resource link: a <file:///a>]"
    assert render_content(text) == "inside"
    assert render_content(blob) == "[binary resource <file:///b.bin> application/zip, 2.0 KB]"
    assert render_content(bare) == "[binary resource <file:///c.bin>, 12 bytes]"


def test_structured_content_alone_is_rendered_as_json() -> None:
    got = result(structured={"city": "Oslo", "temp": -3.5})
    assert json.loads(got.text()) == {"city": "Oslo", "temp": -3.5}


def test_structured_content_with_text_shows_the_text_only() -> None:
    got = result(types.TextContent(text="42"), structured={"result": 42})
    assert got.text() == "42"


def test_structured_content_next_to_an_image_is_added_as_json() -> None:
    got = result(types.ImageContent(data=b64(PNG), mime_type="image/png"), structured={"w": 1})
    first, *rest = got.text().split("\n", 1)
    assert first.startswith("[image: image/png")
    assert json.loads(rest[0]) == {"w": 1}


def test_a_long_text_is_cut_with_a_note_of_how_much() -> None:
    got = result(types.TextContent(text="x" * 1500))
    short = got.text(max_chars=1000)
    assert short.startswith("x" * 1000)
    assert not short.startswith("x" * 1001)
    assert "[... 500 of 1,500 characters cut" in short
    assert got.text() == "x" * 1500
    assert got.text(max_chars=1500) == "x" * 1500


def test_truncate_leaves_short_text_and_none_alone() -> None:
    assert truncate("short", 10) == "short"
    assert truncate("long text", None) == "long text"
    assert DEFAULT_MAX_CHARS == 100_000


def test_images_gives_the_decoded_bytes() -> None:
    got = result(types.TextContent(text="a"), types.ImageContent(data=b64(PNG), mime_type="image/png"))
    assert got.images() == [("image/png", PNG)]
    assert result(types.TextContent(text="a")).images() == []


def test_to_json_writes_content_as_the_protocol_does() -> None:
    got = result(types.TextContent(text="hi"), types.ImageContent(data="AAAA", mime_type="image/png"))
    assert got.to_json() == {
        "name": "mcp__s__t",
        "server": "s",
        "tool": "t",
        "isError": False,
        "content": [{"type": "text", "text": "hi"}, {"type": "image", "data": "AAAA", "mimeType": "image/png"}],
        "structuredContent": None,
        "duration": 0.25,
    }
