"""Peer libraries' clients. Each runs only in its own virtual environment (``bench/.venvs``).

Type checking: these modules import packages that are not in the main environment
(``fastmcp``, ``langchain_mcp_adapters``, ``mcp_use``), some of which pin ``mcp<2``, so
pyright cannot resolve them there. Each module therefore opens with the file-level
directive ``# pyright: basic, reportMissingImports=false``: pyright still parses and
checks it, in basic mode, with the peer's names as unknown. Nothing in the main
environment imports these modules; only ``bench/worker.py`` does, inside the peer's venv.
"""
