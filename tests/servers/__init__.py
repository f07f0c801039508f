"""Real MCP servers the tests run: in-process, as ``python -m tests.servers.<name>``, or over HTTP."""
