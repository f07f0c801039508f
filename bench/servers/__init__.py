"""The benchmark's servers: near-free MCP servers over stdio (``line``) and streamable HTTP (``http``)."""
