"""A server whose answers are big, or of the kinds a page must take care to show.

Tools: ``text(kb)`` a text of ``kb`` kilobytes (the SDK adds it as structured content too, as
``{"result": text}``), ``lines(n)`` a text of ``n`` numbered lines, ``tree(mb)`` a structured
result of about ``mb`` megabytes (and the SDK's JSON text of it), ``pick(a, size)`` with a
required argument and titled ones. Resources: a Markdown page with raw HTML and links in it,
a text/plain file sent as a base64 blob, a binary blob.

``python -m tests.servers.bulky`` runs it over stdio.
"""

from __future__ import annotations

import base64
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.resources import FunctionResource
from pydantic import Field

__all__ = ["BLOB_TEXT", "MARKDOWN", "build_server"]

MARKDOWN = """# Release notes

Version **2.0** brings *three* things, see [the site](https://example.com/notes) and `config.json`:

- faster starts
- a [link that must not run](javascript:alert(1))
- <img src=x onerror="document.title='pwned'"> raw HTML stays text

> Quoted advice.

| key | value |
|-----|------:|
| a   | 1     |

```python
print("<b>not bold</b>")
```
"""
"""Markdown with raw HTML and a ``javascript:`` link in it: neither may become markup."""

BLOB_TEXT = "Plain text sent as a blob.\nSecond line: ünïcödé."
"""The text of the ``text/plain`` blob resource."""


def _text(kb: int) -> str:
    line = "The quick brown fox jumps over the lazy dog. 0123456789 abcdefghij\n"  # 68 characters
    return (line * (kb * 1024 // len(line) + 1))[: kb * 1024]


def build_server() -> MCPServer:
    """A new bulky server."""
    server = MCPServer("bulky")

    @server.tool()
    def text(kb: int) -> str:
        """A text of ``kb`` kilobytes (as text, and the SDK's structured content ``{"result": text}``)."""
        return _text(kb)

    @server.tool()
    def lines(n: int) -> str:
        """A text of ``n`` numbered lines."""
        return "\n".join(f"line {i:06d} of {n}" for i in range(1, n + 1))

    @server.tool()
    def tree(mb: float) -> dict[str, Any]:
        """A structured result of about ``mb`` megabytes: records in a list, and a count."""
        count = max(1, int(mb * 1024 * 1024 / 110))
        records = [{"id": i, "name": f"record {i}", "tags": ["alpha", "beta"], "score": i * 0.5} for i in range(count)]
        return {"count": count, "records": records}

    @server.tool()
    def pick(
        a: int,
        size: Annotated[int, Field(title="Kb", description="How big, in kilobytes")] = 1,
        label: Annotated[str, Field(title="Label of it")] = "",
    ) -> str:
        """Answer with what was picked (``a`` is required)."""
        return f"picked {a}, {size} kB, {label!r}"

    server.add_resource(
        FunctionResource(uri="bulky://notes.md", name="notes", mime_type="text/markdown", fn=lambda: MARKDOWN)
    )
    server.add_resource(
        FunctionResource(uri="bulky://plain.txt", name="plain", mime_type="text/plain", fn=lambda: BLOB_TEXT.encode())
    )
    server.add_resource(
        FunctionResource(
            uri="bulky://raw.bin",
            name="raw",
            mime_type="application/octet-stream",
            fn=lambda: base64.b64decode("AAECAwT/"),
        )
    )
    return server


if __name__ == "__main__":
    build_server().run()
