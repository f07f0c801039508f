"""``Host``: the composition root. Many servers, one catalog, one place to call tools.

::

    async with Host.from_file() as host:            # or Host({"name": config, ...})
        for tool in host.tools: ...
        result = await host.call_tool("mcp__fs__read_file", {"path": "README.md"})
        print(result.text())

Entering the host starts every server's supervisor at once and waits until each has
connected, failed or timed out (each within its own startup timeout), so a slow or broken
server delays nothing but itself. Leaving it stops them all; no child process outlives it.

Inside: ``_host`` (``Host``), and the rooms it hands its work to: ``_lifecycle`` (entering and
leaving), ``_registry`` (the connections, the catalog and index they make), ``_call_path`` (the
one instrumented path of every tool call), ``_server_content`` (resources, prompts,
completions), ``_admin`` (adding, changing, removing and testing servers).
"""

from __future__ import annotations

from mcpdeck.host._admin import ServerTest
from mcpdeck.host._host import Host

__all__ = ["Host", "ServerTest"]
