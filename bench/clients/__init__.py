"""The clients the benchmark compares, and where each runs. Standard library only.

Clients of the main virtual environment (mcpdeck, the bare SDK, the floor) are type-checked
with the rest of ``bench``. Peer libraries live in ``bench/clients/peers/`` and run in
their own virtual environments (``bench/.venvs/<venv>``, made by ``bench/setup``), because
some of them pin ``mcp<2``; see the note in ``peers/__init__.py`` on type checking.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BASELINE", "BASELINE_HTTP", "CLIENTS", "ClientInfo", "client_info"]


@dataclass(frozen=True)
class ClientInfo:
    """One client under test.

    Attributes:
        name: The name used on the command line and in reports.
        module: Its module under ``bench.clients`` (it has ``make(name) -> ClientLib``).
        venv: The peer virtual environment it runs in (``bench/.venvs/<venv>``), or None
            for the main one.
        label: What it is, for the report.
        session_per_call: It opens a new session (a new server process) for every call, so
            the harness gives it far fewer calls.
    """

    name: str
    module: str
    venv: str | None
    label: str
    session_per_call: bool = False


CLIENTS: tuple[ClientInfo, ...] = (
    ClientInfo("sdk-session", "sdk", None, "`mcp` SDK `ClientSession` after `initialize()` (baseline)"),
    ClientInfo("sdk-client", "sdk", None, "`mcp` SDK `mcp.Client` (HTTP baseline)"),
    ClientInfo("mcpdeck", "mcpdeck_client", None, "mcpdeck `Host`"),
    ClientInfo("fastmcp", "peers.fastmcp_client", "fastmcp", "fastmcp `Client`, one per server"),
    ClientInfo(
        "langchain",
        "peers.langchain_client",
        "langchain",
        "langchain-mcp-adapters `MultiServerMCPClient` default (a session per call)",
        session_per_call=True,
    ),
    ClientInfo(
        "langchain-session",
        "peers.langchain_client",
        "langchain",
        "langchain-mcp-adapters, persistent `client.session()` + `load_mcp_tools`",
    ),
    ClientInfo("mcp-use", "peers.mcpuse_client", "mcp-use", "mcp-use `MCPClient` sessions"),
    ClientInfo("floor", "floor", None, "floor: bare JSON-RPC lines over asyncio pipes, no MCP"),
    ClientInfo("floor-blocking", "floor", None, "floor: bare JSON-RPC lines over blocking pipes, no MCP"),
)

BASELINE = "sdk-session"
"""Every ratio is against this client, measured in the same run."""
BASELINE_HTTP = "sdk-client"
"""HTTP metrics also give the ratio against this one."""


def client_info(name: str) -> ClientInfo:
    for info in CLIENTS:
        if info.name == name:
            return info
    raise KeyError(f"no client named {name!r}; known: {', '.join(c.name for c in CLIENTS)}")
