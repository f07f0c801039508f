"""Config files as people write them by hand, in five styles, each with the same two servers and one rule.

Shared by the tests of the text splice (``test_splice``), the store, the API and the CLI: whatever
face changes the file, the bytes outside what changed stay as they were.
"""

from __future__ import annotations

TWO_SPACES = """{
  "mcpServers": {
    "fs": {
      "command": "npx",
      "args": [
        "-y",
        "@modelcontextprotocol/server-filesystem",
        "/home/me/notes"
      ],
      "timeout": 30
    },
    "api": {
      "url": "https://example.com/mcp",
      "timeout": 2.5
    }
  },
  "permissions": {
    "allow": ["mcp__fs__read_*"]
  }
}
"""

FOUR_SPACES = """{
    "permissions": {"allow": ["mcp__fs__read_*"]},
    "mcpServers": {
        "fs": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/notes"],
            "timeout": 30
        },
        "api": {
            "url": "https://example.com/mcp",
            "timeout": 2.5
        }
    }
}
"""

TABS_CRLF = (
    '{\r\n\t"mcpServers": {\r\n'
    '\t\t"fs": {\r\n\t\t\t"command": "npx",\r\n'
    '\t\t\t"args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/notes"],\r\n'
    '\t\t\t"timeout": 30\r\n\t\t},\r\n'
    '\t\t"api": {\r\n\t\t\t"url": "https://example.com/mcp",\r\n\t\t\t"timeout": 2.5\r\n\t\t}\r\n'
    '\t},\r\n\t"permissions": {\r\n\t\t"allow": ["mcp__fs__read_*"]\r\n\t}\r\n}\r\n'
)

ONE_LINE_EACH = """{"mcpServers": {
  "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/notes"], "timeout": 30},
  "api": {"url": "https://example.com/mcp", "timeout": 2.5}
}, "permissions": {"allow": ["mcp__fs__read_*"]}}
"""

JSONC = """// mcpdeck's servers
{
  "mcpServers": {
    /* the notes folder */
    "fs": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/notes"], // read-only
      "timeout": 30,
    },
    "api": {
      "url": "https://example.com/mcp",
      "timeout": 2.5, // slow
    },
  },
  "permissions": {
    "allow": ["mcp__fs__read_*"],
  },
}
"""

STYLES = {
    "two-spaces": TWO_SPACES,
    "four-spaces": FOUR_SPACES,
    "tabs-crlf": TABS_CRLF,
    "one-line-each": ONE_LINE_EACH,
    "jsonc": JSONC,
}

NEW_SERVER = {"command": "uvx", "args": ["mcp-git"], "env": {"GIT_DIR": "/srv/git"}}
"""A server to add: as each style then has it is in ``ADDED``."""

ADDED = {
    "two-spaces": (
        '    "api": {\n      "url": "https://example.com/mcp",\n      "timeout": 2.5\n    }\n',
        '    "api": {\n      "url": "https://example.com/mcp",\n      "timeout": 2.5\n    },\n'
        '    "git": {\n      "command": "uvx",\n      "args": ["mcp-git"],\n'
        '      "env": {\n        "GIT_DIR": "/srv/git"\n      }\n    }\n',
    ),
    "four-spaces": (
        '            "timeout": 2.5\n        }\n',
        '            "timeout": 2.5\n        },\n'
        '        "git": {\n            "command": "uvx",\n            "args": ["mcp-git"],\n'
        '            "env": {\n                "GIT_DIR": "/srv/git"\n            }\n        }\n',
    ),
    "tabs-crlf": (
        '\t\t\t"timeout": 2.5\r\n\t\t}\r\n',
        '\t\t\t"timeout": 2.5\r\n\t\t},\r\n'
        '\t\t"git": {\r\n\t\t\t"command": "uvx",\r\n\t\t\t"args": ["mcp-git"],\r\n'
        '\t\t\t"env": {\r\n\t\t\t\t"GIT_DIR": "/srv/git"\r\n\t\t\t}\r\n\t\t}\r\n',
    ),
    "one-line-each": (
        '"timeout": 2.5}\n',
        '"timeout": 2.5},\n  "git": {"command": "uvx", "args": ["mcp-git"], "env": {"GIT_DIR": "/srv/git"}}\n',
    ),
    "jsonc": (
        '      "timeout": 2.5, // slow\n    },\n',
        '      "timeout": 2.5, // slow\n    },\n'
        '    "git": {\n      "command": "uvx",\n      "args": ["mcp-git"],\n'
        '      "env": {\n        "GIT_DIR": "/srv/git"\n      }\n    },\n',
    ),
}
"""Per style: the text before the new server's place, and the same text with the new server after it."""


def offline(text: str) -> str:
    """``text`` with commands that are not installed and a URL nothing answers: its servers fail at once."""
    return (
        text.replace('"npx"', '"mcpdeck-test-no-such-npx"')
        .replace('"uvx"', '"mcpdeck-test-no-such-uvx"')
        .replace("https://example.com/mcp", "http://127.0.0.1:9/mcp")
    )
