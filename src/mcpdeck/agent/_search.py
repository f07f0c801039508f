"""The built-in ``search_tools`` tool: the model finds the few tools a task needs among hundreds.

``search_tool`` is the tool an agent gives the model instead of every tool at once: the tools
it finds (with a ``ToolIndex``, see ``_index``) are handed to ``on_found``, which adds them to
the tools offered for the rest of the run.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from mcpdeck.agent._index import ToolIndex
from mcpdeck.agent._tools import NativeTool, ToolError, tool
from mcpdeck.providers import ToolSpec

__all__ = ["ToolIndex", "index_finder", "search_tool"]


def index_finder(
    tools: Callable[[], Iterable[ToolSpec]], extra: Sequence[ToolSpec] = ()
) -> Callable[[str, int], list[ToolSpec]]:
    """A ``find`` for ``search_tool`` that searches ``tools()`` (read at each search) and ``extra``.

    ``index_finder(lambda: host.catalog)`` searches the host's catalog as it is at the time,
    rebuilding the index only when the catalog has changed.
    """

    def find(query: str, limit: int) -> list[ToolSpec]:
        return [spec for spec, _ in ToolIndex.for_tools(tools(), extra).search(query, limit)]

    return find


def _one_line(text: str, limit: int = 160) -> str:
    """The first sentence (or line) of ``text``, cut to ``limit`` characters."""
    line = " ".join(text.strip().split("\n\n", 1)[0].split())
    end = re.search(r"(?<=[.!?])\s", line)
    if end is not None:
        line = line[: end.start()]
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def search_tool(
    find: Callable[[str, int], Sequence[ToolSpec]],
    on_found: Callable[[list[ToolSpec]], None] | None = None,
    *,
    name: str = "search_tools",
    max_results: int = 20,
) -> NativeTool:
    """The built-in ``search_tools`` tool: the model looks tools up instead of being sent them all.

    With hundreds of tools, sending every definition costs many tokens and muddles the
    model's choice. Instead an agent sends its native tools and this one; the model calls
    ``search_tools("create a github issue")``, gets back the names and one-line
    descriptions of the best matches, and the agent adds those tools (``on_found``) to the
    tools it sends for the rest of the run, so the model can call them on its next step::

        offered: list[ToolSpec] = []
        search = search_tool(index_finder(lambda: host.catalog), offered.extend)

    Args:
        find: ``find(query, limit)``: the matching tools, best first (``index_finder`` makes one).
        on_found: Called with the tools found (never with an empty list).
        name: The tool's name.
        max_results: The most tools one search returns, whatever the model asks for.
    """

    async def search_tools(query: str, limit: int = 5) -> str:
        """Search for more tools by what you want to do; the tools found become available to call.

        Only some tools are listed to start with. Describe the task in a few words (for
        example "read a file" or "create a calendar event"), or give a tool's exact name.

        Args:
            query: What the tool should do, in a few keywords, or a tool's exact name.
            limit: How many tools to return at most.
        """
        if not query.strip():
            raise ToolError("give a query: a few words saying what the tool should do, e.g. 'read a file'")
        found = list(find(query, max(1, min(limit, max_results))))
        if not found:
            return (
                f"No tool matches {query!r}. Try other words: what the tool acts on (file, issue, email) "
                "or what it does (read, create, search)."
            )
        if on_found is not None:
            on_found(found)
        noun = "tool matches" if len(found) == 1 else "tools match"
        lines = [f"{len(found)} {noun} {query!r}; you can call them now:"]
        lines.extend(
            f"- {spec.name}: {_one_line(spec.description)}" if spec.description else f"- {spec.name}" for spec in found
        )
        return "\n".join(lines)

    return tool(name=name, read_only=True)(search_tools)
