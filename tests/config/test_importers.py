"""Importing other hosts' config files: real files in each format, exact resulting configs."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from mcpdeck.config._importers import IMPORT_SOURCES, ImportResult, ImportSource, default_import_path, import_servers
from mcpdeck.errors import ConfigError


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _configs(result: ImportResult) -> dict[str, dict[str, Any]]:
    return {name: config.to_json() for name, config in result.servers.items()}


CLAUDE_DESKTOP = """{
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": [
        "-y",
        "@modelcontextprotocol/server-filesystem",
        "/Users/alice/Desktop",
        "/Users/alice/Downloads"
      ]
    },
    "github": {
      "command": "docker",
      "args": ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"],
      "env": {
        "GITHUB_PERSONAL_ACCESS_TOKEN": "<YOUR_TOKEN>"
      }
    }
  },
  "globalShortcut": "Alt+Space"
}
"""


def test_claude_desktop_servers_import_as_they_are(tmp_path: Path) -> None:
    path = _write(tmp_path / "claude_desktop_config.json", CLAUDE_DESKTOP)

    result = import_servers("claude-desktop", path)

    assert result.source == "claude-desktop"
    assert result.path == path
    assert _configs(result) == {
        "filesystem": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/alice/Desktop", "/Users/alice/Downloads"],
        },
        "github": {
            "command": "docker",
            "args": ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"],
            "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "<YOUR_TOKEN>"},
        },
    }
    assert result.skipped == {}
    assert result.notes == []


def test_claude_code_project_file_keeps_types_and_variable_references(tmp_path: Path) -> None:
    path = _write(
        tmp_path / ".mcp.json",
        """{
  "mcpServers": {
    "shared-server": {
      "type": "stdio",
      "command": "/path/to/server",
      "args": [],
      "env": {"LOG_DIR": "${LOG_DIR:-/tmp/logs}"}
    },
    "api-server": {
      "type": "http",
      "url": "${API_BASE_URL:-https://api.example.com}/mcp",
      "headers": {"Authorization": "Bearer ${API_KEY}"}
    },
    "asana": {
      "type": "sse",
      "url": "https://mcp.asana.com/sse"
    }
  }
}
""",
    )

    result = import_servers("claude-code", path)

    assert _configs(result) == {
        "shared-server": {"command": "/path/to/server", "env": {"LOG_DIR": "${LOG_DIR:-/tmp/logs}"}},
        "api-server": {
            "type": "http",
            "url": "${API_BASE_URL:-https://api.example.com}/mcp",
            "headers": {"Authorization": "Bearer ${API_KEY}"},
        },
        "asana": {"type": "sse", "url": "https://mcp.asana.com/sse"},
    }
    assert result.skipped == {}
    assert result.notes == []


def test_claude_user_file_imports_user_servers_and_only_the_current_projects_servers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "work" / "shop"
    other = tmp_path / "work" / "blog"
    project.mkdir(parents=True)
    monkeypatch.chdir(project)
    document: dict[str, Any] = {
        "numStartups": 57,
        "installMethod": "global",
        "autoUpdates": True,
        "mcpServers": {
            "context7": {
                "type": "http",
                "url": "https://mcp.context7.com/mcp",
                "headers": {"CONTEXT7_API_KEY": "${CONTEXT7_API_KEY}"},
            },
            "sequential-thinking": {
                "type": "stdio",
                "command": "npx",
                "args": ["-y", "@modelcontextprotocol/server-sequential-thinking"],
                "env": {},
            },
        },
        "projects": {
            str(project): {
                "allowedTools": [],
                "history": [],
                "mcpContextUris": [],
                "mcpServers": {
                    "postgres": {
                        "type": "stdio",
                        "command": "npx",
                        "args": ["-y", "@modelcontextprotocol/server-postgres", "postgresql://localhost/shop"],
                        "env": {},
                    },
                    "sequential-thinking": {"type": "stdio", "command": "uvx", "args": ["sequential-thinking"]},
                },
                "enabledMcpjsonServers": [],
                "disabledMcpjsonServers": [],
                "hasTrustDialogAccepted": True,
            },
            str(other): {
                "allowedTools": [],
                "mcpServers": {"jira": {"type": "sse", "url": "https://mcp.atlassian.com/v1/sse"}},
            },
            str(tmp_path / "scratch"): {"allowedTools": [], "mcpServers": {}},
        },
    }
    path = _write(tmp_path / ".claude.json", json.dumps(document, indent=2))

    result = import_servers("claude-code", path)

    assert _configs(result) == {
        "context7": {
            "type": "http",
            "url": "https://mcp.context7.com/mcp",
            "headers": {"CONTEXT7_API_KEY": "${CONTEXT7_API_KEY}"},
        },
        "sequential-thinking": {"command": "uvx", "args": ["sequential-thinking"]},
        "postgres": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-postgres", "postgresql://localhost/shop"],
        },
    }
    assert result.skipped == {}
    assert result.notes == [
        f"'sequential-thinking' of project {project} replaces the user-wide 'sequential-thinking', as in Claude Code",
        f"skipped the servers of project {other} (jira): Claude Code uses them only in that folder; "
        "run the import from there to get them",
    ]


def test_cursor_variables_become_mcpdeck_references_and_paths(tmp_path: Path) -> None:
    project = tmp_path / "acme"
    path = _write(
        project / ".cursor" / "mcp.json",
        """{
  "mcpServers": {
    "notes": {
      "command": "python",
      "args": ["${workspaceFolder}/tools/notes_server.py", "--cache", "${userHome}/.cache/notes"],
      "env": {"NOTES_TOKEN": "${env:NOTES_TOKEN}", "LOG_LEVEL": "${LOG_LEVEL:-info}"}
    },
    "linear": {
      "url": "https://mcp.linear.app/sse",
      "headers": {"Authorization": "Bearer ${env:LINEAR_API_KEY}"}
    }
  }
}
""",
    )

    result = import_servers("cursor", path)

    assert _configs(result) == {
        "notes": {
            "command": "python",
            "args": [f"{project}/tools/notes_server.py", "--cache", f"{Path.home()}/.cache/notes"],
            "env": {"NOTES_TOKEN": "${NOTES_TOKEN}", "LOG_LEVEL": "${LOG_LEVEL:-info}"},
        },
        "linear": {"url": "https://mcp.linear.app/sse", "headers": {"Authorization": "Bearer ${LINEAR_API_KEY}"}},
    }
    assert result.skipped == {}
    assert result.notes == []


def test_cursor_user_file_workspace_folder_becomes_home_with_a_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    _write(
        home / ".cursor" / "mcp.json",
        '{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", '
        '"${workspaceFolder}"]}}}',
    )

    result = import_servers("cursor")

    assert result.path == home / ".cursor" / "mcp.json"
    assert _configs(result) == {
        "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", str(home)]}
    }
    assert result.notes == [
        "Cursor's user-level file used ${workspaceFolder}; it became your home folder: check that path"
    ]


VSCODE_MCP_JSON = """{
  // 💡 Inputs are prompted on first server start, then stored securely by VS Code.
  "inputs": [
    {
      "type": "promptString",
      "id": "perplexity-key",
      "description": "Perplexity API Key",
      "password": true
    },
    {
      "type": "promptString",
      "id": "region",
      "description": "Cloud region",
      "default": "eu-west-1"
    }
  ],
  "servers": {
    // https://github.com/ppl-ai/modelcontextprotocol/
    "Perplexity": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "server-perplexity-ask"],
      "env": {
        "PERPLEXITY_API_KEY": "${input:perplexity-key}",
        "HTTPS_PROXY": "${env:HTTPS_PROXY}",
        "AWS_REGION": "${input:region}",
      }
    },
    /* A remote server; the token comes from an input that is not declared. */
    "my-remote-server": {
      "type": "http",
      "url": "http://api.contoso.com/mcp",
      "headers": {"Authorization": "Bearer ${input:apiToken}"}
    },
    "local-py": {
      "type": "stdio",
      "command": "python",
      "args": ["${workspaceFolder}${/}server.py"],
      "envFile": "${workspaceFolder}/.env",
      "dev": {"watch": "src/**/*.py", "debug": {"type": "debugpy"}}
    },
    "from-settings": {
      "command": "node",
      "args": ["${config:mcp.serverPath}"]
    },
  },
}
"""


def test_vscode_inputs_become_environment_references(tmp_path: Path) -> None:
    project = tmp_path / "site"
    path = _write(project / ".vscode" / "mcp.json", VSCODE_MCP_JSON)

    result = import_servers("vscode", path)

    assert _configs(result) == {
        "Perplexity": {
            "command": "npx",
            "args": ["-y", "server-perplexity-ask"],
            "env": {
                "PERPLEXITY_API_KEY": "${PERPLEXITY_KEY}",
                "HTTPS_PROXY": "${HTTPS_PROXY}",
                "AWS_REGION": "${REGION:-eu-west-1}",
            },
        },
        "my-remote-server": {
            "type": "http",
            "url": "http://api.contoso.com/mcp",
            "headers": {"Authorization": "Bearer ${API_TOKEN}"},
        },
        "local-py": {"command": "python", "args": [f"{project}/server.py"]},
    }
    assert result.skipped == {
        "from-settings": "uses ${config:mcp.serverPath}, which only VS Code can resolve; "
        "replace it with a value or a ${VAR} reference"
    }
    assert result.notes == [
        "VS Code input 'perplexity-key' (Perplexity API Key) became ${PERPLEXITY_KEY}: set that variable",
        "VS Code input 'region' (Cloud region) became ${REGION:-eu-west-1}: set that variable to override",
        "VS Code input 'apiToken' became ${API_TOKEN}: set that variable",
        f"'local-py' loaded variables from the env file {project}/.env, which mcpdeck does not read: "
        "export them, or add them under its env",
    ]


def test_vscode_user_settings_with_comments_and_trailing_commas_import(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "Code" / "User" / "settings.json",
        """// Place your settings in this file to overwrite the default settings
{
    "editor.fontSize": 14, // a comment after a value
    "files.exclude": {"**/.git": true, "**/*.pyc": true,},
    /* "mcp.disabled": true, */
    "mcp": {
        "inputs": [],
        "servers": {
            "fetch": {
                "type": "stdio",
                "command": "uvx",
                "args": ["mcp-server-fetch", "--user-agent=Mozilla/5.0 // not a comment, /* nor this */"],
            },
            "docs": {"type": "sse", "url": "https://docs.example.com/sse"},
            "project-tool": {"command": "node", "args": ["${workspaceFolder}/dist/index.js"]},
        },
    },
}
""",
    )

    result = import_servers("vscode", path)

    assert _configs(result) == {
        "fetch": {
            "command": "uvx",
            "args": ["mcp-server-fetch", "--user-agent=Mozilla/5.0 // not a comment, /* nor this */"],
        },
        "docs": {"type": "sse", "url": "https://docs.example.com/sse"},
    }
    assert result.skipped == {
        "project-tool": "uses ${workspaceFolder}, but this file belongs to no workspace folder; replace it with a path"
    }
    assert result.notes == []


GOOSE_CONFIG = """GOOSE_PROVIDER: anthropic
GOOSE_MODEL: claude-3-5-sonnet-latest
GOOSE_MODE: smart_approve
extensions:
  computercontroller:
    bundled: true
    display_name: Computer Controller
    enabled: false
    name: computercontroller
    timeout: 300
    type: builtin
  developer:
    bundled: true
    display_name: Developer
    enabled: true
    name: developer
    timeout: 300
    type: builtin
  github:
    args:
    - -y
    - '@modelcontextprotocol/server-github'
    bundled: null
    cmd: npx
    description: GitHub repository access
    enabled: true
    env_keys:
    - GITHUB_PERSONAL_ACCESS_TOKEN
    envs: {}
    name: github
    timeout: 300
    type: stdio
  fetch:
    args:
    - mcp-server-fetch
    - --port
    - 8080
    bundled: null
    cmd: uvx
    description: null
    enabled: false
    envs:
      LOG_LEVEL: debug
    name: fetch
    timeout: 60
    type: stdio
  weather:
    bundled: null
    description: Weather over SSE
    enabled: true
    env_keys: []
    envs: {}
    name: weather
    timeout: 300
    type: sse
    uri: http://localhost:8000/sse
  context7:
    available_tools:
    - resolve-library-id
    - get-library-docs
    bundled: null
    description: Up-to-date library docs
    enabled: true
    env_keys: []
    envs: {}
    headers:
      CONTEXT7_API_KEY: ctx7-123
    name: context7
    timeout: 300
    type: streamable_http
    uri: https://mcp.context7.com/mcp
  todo:
    bundled: null
    enabled: true
    name: todo
    type: frontend
    tools: []
  scratch:
    code: print('hi')
    enabled: true
    name: scratch
    type: inline_python
"""


def test_goose_extensions_map_to_servers_and_builtins_are_skipped(tmp_path: Path) -> None:
    path = _write(tmp_path / "config.yaml", GOOSE_CONFIG)

    result = import_servers("goose", path)

    assert _configs(result) == {
        "github": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-github"],
            "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_PERSONAL_ACCESS_TOKEN}"},
            "timeout": 300,
        },
        "fetch": {
            "command": "uvx",
            "args": ["mcp-server-fetch", "--port", "8080"],
            "env": {"LOG_LEVEL": "debug"},
            "disabled": True,
            "timeout": 60,
        },
        "weather": {"type": "sse", "url": "http://localhost:8000/sse", "timeout": 300},
        "context7": {
            "type": "http",
            "url": "https://mcp.context7.com/mcp",
            "headers": {"CONTEXT7_API_KEY": "ctx7-123"},
            "timeout": 300,
            "tools": {"include": ["resolve-library-id", "get-library-docs"]},
        },
    }
    builtin = "a Goose built-in extension: it runs inside Goose, not as an MCP server mcpdeck can start"
    assert result.skipped == {
        "computercontroller": builtin,
        "developer": builtin,
        "todo": "a Goose frontend extension: its tools live in the Goose app, not in an MCP server",
        "scratch": "inline Python that Goose runs itself; save the code as a script and add it as a stdio server",
    }
    assert result.notes == [
        "Goose keeps GITHUB_PERSONAL_ACCESS_TOKEN of 'github' in its keyring: set it in the environment"
    ]


def test_goose_extension_missing_its_command_or_of_unknown_type_is_skipped(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "config.yaml",
        """extensions:
  broken:
    type: stdio
    name: broken
  future:
    type: websocket
    uri: ws://localhost:9000
""",
    )

    result = import_servers("goose", path)

    assert result.servers == {}
    assert result.skipped == {
        "broken": "a stdio extension needs 'cmd'",
        "future": "unknown Goose extension type 'websocket'; expected stdio, sse or streamable_http",
    }


def test_invalid_server_names_are_sanitised_without_taking_valid_names(tmp_path: Path) -> None:
    long_name = "a-really-long-server-name-that-goes-on-and-on-and-on-forever"
    document: dict[str, Any] = {
        "mcpServers": {
            "my server": {"command": "a"},
            "my_server": {"command": "b"},
            "tools__v2": {"command": "c"},
            "@scope/pkg": {"command": "d"},
            "my.server": {"command": "e"},
            long_name: {"command": "f"},
        }
    }
    path = _write(tmp_path / "claude_desktop_config.json", json.dumps(document))

    result = import_servers("claude-desktop", path)

    truncated = long_name[:48]
    assert {name: config.to_json()["command"] for name, config in result.servers.items()} == {
        "my_server-2": "a",
        "my_server": "b",
        "tools_v2": "c",
        "scope_pkg": "d",
        "my_server-3": "e",
        truncated: "f",
    }
    rule = "mcpdeck server names use only letters, digits, '_' and '-', without '__', at most 48 characters"
    assert result.notes == [
        f"renamed 'my server' to 'my_server-2': {rule}",
        f"renamed 'tools__v2' to 'tools_v2': {rule}",
        f"renamed '@scope/pkg' to 'scope_pkg': {rule}",
        f"renamed 'my.server' to 'my_server-3': {rule}",
        f"renamed {long_name!r} to {truncated!r}: {rule}",
    ]


def test_one_bad_entry_is_skipped_with_a_reason_and_the_others_import(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "mcp.json",
        """{
  "mcpServers": {
    "good": {"command": "uvx", "args": ["mcp-server-time"]},
    "not-an-object": "npx -y some-server",
    "no-target": {"args": ["--verbose"]},
    "odd-type": {"type": "websocket", "url": "ws://localhost:9000"},
    "bad name!": {"command": ""}
  }
}
""",
    )

    result = import_servers("cursor", path)

    assert _configs(result) == {"good": {"command": "uvx", "args": ["mcp-server-time"]}}
    assert result.skipped == {
        "not-an-object": "expected an object, got str",
        "no-target": "needs 'command' (a program to start) or 'url' (a remote server)",
        "odd-type": "unknown type 'websocket'; use 'stdio', 'http' (streamable HTTP) or 'sse'",
        "bad name!": "command: String should have at least 1 character",
    }
    assert result.notes == []


def test_a_file_without_servers_imports_nothing_and_says_so(tmp_path: Path) -> None:
    path = _write(tmp_path / "claude_desktop_config.json", '{"globalShortcut": ""}\n')

    result = import_servers("claude-desktop", path)

    assert result.servers == {}
    assert result.skipped == {}
    assert result.notes == ["no MCP servers found in this Claude Desktop file"]


def test_a_missing_file_names_the_path_looked_at_and_the_explicit_path_form(tmp_path: Path) -> None:
    path = tmp_path / "nowhere" / "mcp.json"

    with pytest.raises(ConfigError) as caught:
        import_servers("cursor", path)

    assert caught.value.path == str(path)
    assert str(caught.value) == (
        f"{path}: no Cursor config file here; if yours is elsewhere, give its path: `mcpdeck import cursor PATH`"
    )


def test_a_missing_default_file_names_the_default_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)

    with pytest.raises(ConfigError, match="import claude-code PATH") as caught:
        import_servers("claude-code")

    assert caught.value.path == str(Path.cwd() / ".mcp.json")


def test_malformed_json_is_refused_with_its_line_and_column(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "claude_desktop_config.json",
        """{
  "mcpServers": {
    "a": {"command": "x"}
    "b": {"command": "y"}
  }
}
""",
    )

    with pytest.raises(ConfigError) as caught:
        import_servers("claude-desktop", path)

    assert caught.value.line == 4
    assert str(caught.value) == f"{path}:4: not valid JSON: Expecting ',' delimiter (column 5)"


def test_malformed_yaml_is_refused_with_its_line(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "config.yaml",
        """GOOSE_PROVIDER: openai
extensions:
  github:
    cmd: npx
    args: [-y, '@modelcontextprotocol/server-github'
    type: stdio
""",
    )

    with pytest.raises(ConfigError) as caught:
        import_servers("goose", path)

    assert caught.value.line == 6
    assert str(caught.value).startswith(f"{path}:6: not valid YAML: ")


def test_a_servers_key_that_is_not_an_object_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path / ".mcp.json", '{"mcpServers": ["github"]}')

    with pytest.raises(ConfigError, match='"mcpServers" must be an object mapping server names to configs'):
        import_servers("claude-code", path)


_DEFAULTS: dict[tuple[ImportSource, str], str] = {
    ("claude-desktop", "darwin"): "HOME/Library/Application Support/Claude/claude_desktop_config.json",
    ("claude-desktop", "win32"): "HOME/AppData/Roaming/Claude/claude_desktop_config.json",
    ("claude-desktop", "linux"): "HOME/.config/Claude/claude_desktop_config.json",
    ("claude-code", "darwin"): "CWD/.mcp.json",
    ("claude-code", "win32"): "CWD/.mcp.json",
    ("claude-code", "linux"): "CWD/.mcp.json",
    ("cursor", "darwin"): "HOME/.cursor/mcp.json",
    ("cursor", "win32"): "HOME/.cursor/mcp.json",
    ("cursor", "linux"): "HOME/.cursor/mcp.json",
    ("vscode", "darwin"): "CWD/.vscode/mcp.json",
    ("vscode", "win32"): "CWD/.vscode/mcp.json",
    ("vscode", "linux"): "CWD/.vscode/mcp.json",
    ("goose", "darwin"): "HOME/.config/goose/config.yaml",
    ("goose", "win32"): "HOME/AppData/Roaming/Block/goose/config/config.yaml",
    ("goose", "linux"): "HOME/.config/goose/config.yaml",
}


@pytest.mark.parametrize(("source", "platform"), list(_DEFAULTS))
def test_default_import_path_is_where_each_host_keeps_its_file(source: ImportSource, platform: str) -> None:
    home, cwd = Path("/home/alice"), Path("/home/alice/projects/shop")
    expected = _DEFAULTS[source, platform].replace("HOME", str(home)).replace("CWD", str(cwd))

    assert default_import_path(source, home=home, platform=platform, cwd=cwd) == Path(expected)


def test_every_source_has_default_paths_for_every_platform() -> None:
    assert {source for source, _ in _DEFAULTS} == set(IMPORT_SOURCES)


def test_default_path_without_home_follows_appdata_and_xdg_config_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APPDATA", str(tmp_path / "Roaming"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))

    assert default_import_path("claude-desktop", platform="win32") == (
        tmp_path / "Roaming" / "Claude" / "claude_desktop_config.json"
    )
    assert default_import_path("goose", platform="win32") == (
        tmp_path / "Roaming" / "Block" / "goose" / "config" / "config.yaml"
    )
    assert default_import_path("claude-desktop", platform="linux") == (
        tmp_path / "xdg" / "Claude" / "claude_desktop_config.json"
    )
    assert default_import_path("goose", platform="darwin") == tmp_path / "xdg" / "goose" / "config.yaml"


# ----- hostile JSONC ---------------------------------------------------------------------------


QUADRATIC = 15.0
"""A correctness bound, not a speed goal: on these inputs the quadratic stripping this replaced (a regex that
scanned to the end of the text from every unterminated ``/*`` or string) did not finish in 30 s (it took 2.2 s
at a fifth of the first one's size); ``import_servers`` with the linear one takes 0.1-0.9 s on the 2-core test
machine. What the stripping costs is measured by ``python -m bench.micro`` (bench/RESULTS.md)."""


@pytest.mark.parametrize(
    "hostile",
    [
        "/* " * 40_000,  # unterminated block comments
        "/*x" * 200_000,
        "/*/" * 80_000,  # many short comments
        "/**" * 80_000,
        '"' + '\\"' * 200_000,  # one endless string of escapes
        '"\n' * 80_000,  # strings cut at every line end
        ", " * 200_000 + "x",  # commas that are never trailing
        "/ " * 200_000,  # slashes that start no comment
        "[" + "1," * 200_000 + "]",
    ],
)
def test_comment_stripping_is_not_quadratic_on_hostile_input(tmp_path: Path, hostile: str) -> None:
    path = tmp_path / "mcp.json"
    path.write_text('{"servers": {}}\n' + hostile)
    started = time.perf_counter()
    try:
        result = import_servers("vscode", path)
    except ConfigError as error:  # most of these are not JSON once the comments are gone
        assert error.path == str(path)
    else:
        assert result.servers == {}
    elapsed = time.perf_counter() - started
    assert elapsed < QUADRATIC, f"{elapsed:.1f} s: the stripping went back over the text"


def test_an_unterminated_block_comment_runs_to_the_end_and_keeps_lines(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text('{"servers": {"a": {"command": "x"}}}\n/* never closed\n{\n"b": ,')
    result = import_servers("vscode", path)
    assert list(result.servers) == ["a"]
    path.write_text(
        '{"servers": {\n  /* a\n  comment */ "a": {"command": "x", "args": ["/*", "//", ","],},\n  "b": 3x\n}}'
    )
    with pytest.raises(ConfigError) as caught:
        import_servers("vscode", path)
    assert caught.value.line == 4
