"""What a new user meets in the first hour with ``mcpdeck``: real servers always; a real process
where what gets imported or printed while it runs matters; the command in this process
(``inprocess``, Click's runner) where a process adds nothing."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner

from mcpdeck import Host
from mcpdeck.cli import cli
from mcpdeck.events import ServerRequestHandled
from tests.cli.inprocess import mcpdeck
from tests.helpers import NODE_BIN, ROOT, WAIT, cli_environment, next_event, stdio_server

BASIC = stdio_server("basic")
HANG = stdio_server("hang")
FILESYSTEM = str(NODE_BIN / "mcp-server-filesystem")
COMMANDS = (
    *("list", "get", "add", "add-json", "remove", "enable", "disable", "test", "tools", "tool", "call"),
    *("resources", "read", "prompts", "prompt", "history", "logs", "import", "chat"),
)
HEAVY = ("mcp", "mcp_types", "openai", "anthropic", "google.genai", "httpx2", "jsonschema")


def run(config: Path, *args: str, cwd: Path = ROOT, **env: str) -> subprocess.CompletedProcess[str]:
    """``mcpdeck --config CONFIG ARGS`` in this process, from the folder ``cwd``."""
    return mcpdeck(
        ["--config", str(config), *args], env=cli_environment(config.parent, PYTHONPATH=str(ROOT), **env), cwd=cwd
    )


def write(path: Path, servers: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"mcpServers": servers}, indent=2))
    return path


def saved(config: Path) -> dict[str, Any]:
    return json.loads(config.read_text())["mcpServers"] if config.exists() else {}


# ----- start-up cost -------------------------------------------------------------------------


_PROBE = """
import json, sys
from mcpdeck.cli import cli
try:
    cli(sys.argv[1:], prog_name="mcpdeck")
except SystemExit:
    pass
print(json.dumps(sorted(m for m in {heavy!r} if m in sys.modules)), file=sys.stderr)
"""


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["--version"],
        ["add", "x", "--no-connect", "--", "some-server", "--flag"],
        ["get", "x", "--no-connect"],
        ["disable", "x"],
        ["enable", "x"],
        ["history"],
        ["remove", "x"],
        ["call", "--help"],
        ["chat", "--help"],
    ],
)
def test_help_version_and_config_only_commands_never_import_the_sdk(tmp_path: Path, args: list[str]) -> None:
    config = write(tmp_path / "mcp.json", {"x": {"command": "some-server"}})
    done = subprocess.run(
        [sys.executable, "-c", _PROBE.format(heavy=HEAVY), "--config", str(config), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=cli_environment(tmp_path),
        cwd=ROOT,
        check=False,
    )
    loaded = json.loads(done.stderr.strip().splitlines()[-1])
    assert loaded == [], f"{args} imported {loaded}"


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["serve", "--help"], ["gateway", "--help"]])
def test_help_and_version_load_no_pydantic_and_no_async_runtime(tmp_path: Path, args: list[str]) -> None:
    """What every command pays before it starts: click and mcpdeck's own light modules only (a
    module-level import of the config models in one command's module once cost every command ~85 ms)."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE.format(heavy=(*HEAVY, "pydantic", "anyio", "fastapi", "uvicorn")), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=cli_environment(tmp_path),
        cwd=ROOT,
        check=False,
    )
    loaded = json.loads(done.stderr.strip().splitlines()[-1])
    assert loaded == [], f"{args} imported {loaded}"


def test_bare_mcpdeck_shows_the_help_and_succeeds() -> None:
    done = CliRunner().invoke(cli, [], prog_name="mcpdeck")
    assert done.exit_code == 0
    assert "Usage: mcpdeck" in done.output and "Commands:" in done.output and "Examples:" in done.output


def test_every_command_has_an_example_and_summaries_are_whole() -> None:
    runner = CliRunner()
    top = runner.invoke(cli, ["--help"], prog_name="mcpdeck").output
    commands = top.split("Commands:")[1].split("\n\n")[0].splitlines()
    assert [line for line in commands if line.endswith("...")] == []  # no summary cut mid-phrase
    for name in COMMANDS:
        text = runner.invoke(cli, [name, "--help"], prog_name="mcpdeck").output
        assert "Example" in text, name
        assert "FLOAT" not in text and "TEXT" not in text, name


def test_the_import_usage_line_names_the_source_instead_of_breaking_inside_the_choices() -> None:
    text = CliRunner().invoke(cli, ["import", "--help"], prog_name="mcpdeck").output
    usage = text.splitlines()[0]
    assert usage == "Usage: mcpdeck import [OPTIONS] SOURCE [PATH]"
    assert "claude-desktop, claude-code, cursor, vscode, goose" in " ".join(text.split())


def test_chat_help_names_every_endpoint_variable() -> None:
    text = " ".join(CliRunner().invoke(cli, ["chat", "--help"], prog_name="mcpdeck").output.split())
    for variable in ["OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "GEMINI_BASE_URL", "OLLAMA_HOST", "GEMINI_API_KEY"]:
        assert variable in text


# ----- messages ------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["0", "-1"])
def test_zero_or_negative_timeouts_are_usage_errors(tmp_path: Path, value: str) -> None:
    config = write(tmp_path / "mcp.json", {})
    runner = CliRunner()
    for args in (["--startup-timeout", value, "list"], ["call", "mcp__x__y", "--timeout", value]):
        done = runner.invoke(cli, ["--config", str(config), *args], prog_name="mcpdeck")
        assert done.exit_code == 2, args
        assert "Error: Invalid value" in done.output and "x>0" in done.output


def test_a_mistyped_config_path_says_the_file_does_not_exist(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    done = CliRunner().invoke(cli, ["--config", str(missing), "list"], prog_name="mcpdeck")
    assert done.exit_code == 2
    assert f"Error: the config file {missing} does not exist" in done.output
    assert not missing.exists()


def test_a_vs_code_style_file_points_at_import_vscode(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"servers": {"fs": {"command": "x"}}}))
    done = CliRunner().invoke(cli, ["--config", str(config), "tools"], prog_name="mcpdeck")
    assert done.exit_code == 2
    assert f"mcpdeck import vscode {config}" in done.output


def test_a_missing_absolute_command_is_not_said_to_be_missing_from_path(tmp_path: Path) -> None:
    config = write(tmp_path / "mcp.json", {"gone": {"command": "/no/such/binary"}})
    done = run(config, "list")
    assert done.returncode == 0
    assert "command '/no/such/binary' does not exist; check the path" in done.stdout
    assert "PATH" not in done.stdout.split("gone:")[1]


def test_calling_a_bare_tool_name_suggests_its_namespaced_name(tmp_path: Path) -> None:
    config = write(tmp_path / "mcp.json", {"basic": BASIC})
    done = run(config, "call", "echo", "--args", '{"text": "hi"}')
    assert done.returncode == 1
    assert "Error: no tool named 'echo'; did you mean mcp__basic__echo" in done.stderr


def test_errors_are_written_as_click_writes_its_own(tmp_path: Path) -> None:
    config = write(tmp_path / "mcp.json", {})
    done = CliRunner().invoke(cli, ["--config", str(config), "remove", "ghost"], prog_name="mcpdeck")
    assert done.exit_code == 2
    assert done.output.startswith("Error: ")


def test_conversations_and_one_conversation_together_are_refused(tmp_path: Path) -> None:
    done = CliRunner().invoke(
        cli, ["history", "--conversations", "--conversation", "3"], env={"MCPDECK_HOME": str(tmp_path)}
    )
    assert done.exit_code == 2
    assert "not both" in done.output


def test_args_that_are_not_json_say_where(tmp_path: Path) -> None:
    config = write(tmp_path / "mcp.json", {})
    done = CliRunner().invoke(cli, ["--config", str(config), "call", "mcp__x__y", "--args", '{"a": 1,\n "b"}'])
    assert done.exit_code == 2
    assert "(line 2, column 5)" in done.output


# ----- add and test --------------------------------------------------------------------------


def test_add_saves_nothing_when_the_server_fails_unless_told_to(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    failed = run(config, "add", "gone", "--", "mcpdeck-test-no-such-command")
    assert failed.returncode == 1
    assert "'gone' did not connect, so it was not saved" in failed.stderr and "--save-anyway" in failed.stderr
    assert saved(config) == {}
    anyway = run(config, "add", "gone", "--save-anyway", "--", "mcpdeck-test-no-such-command")
    assert anyway.returncode == 1
    assert "saved anyway" in anyway.stderr
    assert saved(config) == {"gone": {"command": "mcpdeck-test-no-such-command"}}


def test_add_connects_first_then_saves(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    done = run(config, "add", "basic", "--cwd", str(ROOT), "--", sys.executable, "-m", "tests.servers.basic")
    assert done.returncode == 0, done.stderr
    assert re.search(r"connected: \d+ tools\. Saved 'basic'", done.stdout), done.stdout
    assert saved(config)["basic"]["args"] == ["-m", "tests.servers.basic"]


def test_test_checks_a_command_that_is_not_in_the_config_and_saves_nothing(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    done = run(config, "test", "--json", "--", str(NODE_BIN / "mcp-server-everything"))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] is True and "echo" in report["tools"]
    assert not config.exists()
    missing = run(config, "test", "--", "/no/such/binary")
    assert missing.returncode == 1 and "does not exist" in missing.stdout


def test_test_of_a_word_that_is_neither_a_server_nor_a_program_says_so(tmp_path: Path) -> None:
    config = write(tmp_path / "mcp.json", {"basic": BASIC})
    done = CliRunner().invoke(cli, ["--config", str(config), "test", "bsaic"], prog_name="mcpdeck")
    assert done.exit_code == 2
    assert "no server named 'bsaic'" in done.output and "basic" in done.output


def test_get_without_connecting_shows_the_config_only(tmp_path: Path) -> None:
    config = write(tmp_path / "mcp.json", {"slow": HANG})
    done = run(config, "get", "slow", "--no-connect")
    assert done.returncode == 0, done.stderr
    assert '"-m", "tests.servers.hang"' in done.stdout and "status" not in done.stdout
    assert not (tmp_path / "logs" / "slow.log").exists()


# ----- one server's command starts one server ----------------------------------------------


def test_a_command_about_one_server_never_starts_the_others(tmp_path: Path) -> None:
    config = write(tmp_path / "mcp.json", {"basic": BASIC, "slow": {**HANG, "startupTimeout": 30}})
    for args in (
        ["call", "mcp__basic__echo", "--args", '{"text": "hi"}'],
        ["tools", "--server", "basic"],
        ["get", "basic"],
        ["test", "basic"],
    ):
        done = run(config, *args)
        assert done.returncode == 0, (args, done.stderr)
    assert not (tmp_path / "logs" / "slow.log").exists()  # a server started writes its log from its first moment


def test_a_startup_timeout_names_the_setting_and_the_option(tmp_path: Path) -> None:
    config = write(tmp_path / "mcp.json", {"basic": BASIC, "slow": {**HANG, "startupTimeout": 2}})
    done = run(config, "list")
    assert done.returncode == 0
    assert "1/2 connected" in done.stdout
    assert 'raise "startupTimeout" in its config, or pass --startup-timeout SECONDS' in done.stdout
    assert (tmp_path / "logs" / "slow.log").exists()  # what the tests above look for: a server that was started


# ----- roots -----------------------------------------------------------------------------------


def test_the_readme_filesystem_example_lists_the_folder_it_was_given(tmp_path: Path) -> None:
    notes, elsewhere = tmp_path / "notes", tmp_path / "elsewhere"
    notes.mkdir()
    elsewhere.mkdir()
    (notes / "todo.txt").write_text("milk")
    config = tmp_path / "mcp.json"
    added = run(config, "add", "fs", "--", FILESYSTEM, str(notes), cwd=elsewhere)
    assert added.returncode == 0, added.stderr
    listed = run(config, "call", "mcp__fs__list_directory", "--args", json.dumps({"path": str(notes)}), cwd=elsewhere)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert "[FILE] todo.txt" in listed.stdout
    # The folder the user stood in was not handed to the server.
    other = run(
        config, "call", "mcp__fs__list_directory", "--args", json.dumps({"path": str(elsewhere)}), cwd=elsewhere
    )
    assert other.returncode == 1 and "denied" in other.stdout.lower()


def test_a_root_asked_for_replaces_the_servers_own_folders(tmp_path: Path) -> None:
    notes, shared = tmp_path.resolve() / "notes", tmp_path.resolve() / "shared"  # as the server names them
    notes.mkdir()
    shared.mkdir()
    (shared / "plan.md").write_text("# plan")
    (notes / "todo.txt").write_text("milk")
    config = tmp_path / "mcp.json"
    added = run(config, "add", "fs", "--root", str(shared), "--", FILESYSTEM, str(notes))
    assert added.returncode == 0, added.stderr
    assert saved(config)["fs"]["roots"] == [str(shared)]
    # The server's own roots (saved by `add --root`), then the roots of the whole host (`--root`).
    seen = anyio.run(
        _listings_once_the_roots_are_applied, Host.from_file(config, log_dir=tmp_path / "logs"), shared, notes
    )
    assert "[FILE] plan.md" in seen[0] and "denied" in seen[1].lower(), seen
    write(config, {"fs": {"command": FILESYSTEM, "args": [str(notes)]}})
    host = Host.from_file(config, log_dir=tmp_path / "logs", roots=[shared])
    seen = anyio.run(_listings_once_the_roots_are_applied, host, shared, notes)
    assert "[FILE] plan.md" in seen[0] and "denied" in seen[1].lower(), seen


def test_the_root_option_offers_its_folders_to_every_server(tmp_path: Path) -> None:
    config = write(tmp_path / "mcp.json", {"f": stdio_server("features")})
    done = run(config, "--root", str(tmp_path), "call", "mcp__f__list_roots")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["roots"] == [{"uri": tmp_path.as_uri(), "name": tmp_path.name}]


async def _listings_once_the_roots_are_applied(host: Host, shared: Path, notes: Path) -> tuple[str, str]:
    """What server-filesystem lists of ``shared`` and of ``notes`` once it has applied the roots it asked for.

    It asks for the roots after the handshake and applies them a moment after the answer, so a
    call sent before that still meets the folders of its command line. The test waits for the
    request, then for the server's own list of allowed folders to be the roots, and only then looks.
    """
    async with host.events.subscribe() as events, host:
        await next_event(events, ServerRequestHandled, lambda e: e.server == "fs" and e.kind == "roots")
        with anyio.fail_after(WAIT):
            while (await host.call_tool("mcp__fs__list_allowed_directories", {})).text().splitlines()[1:] != [
                str(shared)
            ]:
                pass
        listed = await host.call_tool("mcp__fs__list_directory", {"path": str(shared)})
        refused = await host.call_tool("mcp__fs__list_directory", {"path": str(notes)})
    return listed.text(), refused.text()


# ----- tools with their arguments ---------------------------------------------------------------


def test_tools_verbose_and_tool_show_each_argument(tmp_path: Path) -> None:
    config = write(tmp_path / "mcp.json", {"basic": BASIC})
    verbose = run(config, "tools", "--server", "basic", "--verbose")
    assert verbose.returncode == 0, verbose.stderr
    assert "mcp__basic__add" in verbose.stdout and "a (integer, required)" in verbose.stdout
    one = run(config, "tool", "mcp__basic__echo")
    assert one.returncode == 0, one.stderr
    assert one.stdout.splitlines()[0].startswith("mcp__basic__echo")
    assert "text (string, required)" in one.stdout


def test_call_no_validate_lets_the_server_judge(tmp_path: Path) -> None:
    config = write(tmp_path / "mcp.json", {"s": stdio_server("schemas")})
    checked = run(config, "call", "mcp__s__shot", "--args", '{"name": 5}')
    assert checked.returncode == 1 and "invalid arguments" in checked.stderr
    unchecked = run(config, "call", "mcp__s__shot", "--args", '{"name": 5}', "--no-validate")
    assert unchecked.returncode == 0, unchecked.stderr
    assert unchecked.stdout.strip() == 'shot got {"name": 5}'


def test_list_prints_what_is_ready_while_a_slow_server_is_still_starting(tmp_path: Path) -> None:
    config = write(tmp_path / "mcp.json", {"slow": {**HANG, "startupTimeout": 12}, "basic": BASIC})
    with subprocess.Popen(
        [sys.executable, "-m", "mcpdeck.cli", "--config", str(config), "list"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_environment(tmp_path),
        cwd=ROOT,
    ) as process:
        try:
            assert process.stdout is not None
            lines: list[str] = []
            for line in process.stdout:  # bounded: the slow server fails after 12 s, then the command ends
                lines.append(line)
                if line.startswith("basic "):
                    break
            assert process.poll() is None  # basic's row arrived while slow was still starting
            rest, err = process.communicate(timeout=60)
        finally:
            process.kill()
    assert lines[0].startswith("NAME") and "connected" in lines[-1]
    slow = [line for line in rest.splitlines() if line.startswith("slow ")]
    assert len(slow) == 1 and "failed" in slow[0]
    assert "still starting: " in err and "slow" in err.split("still starting: ")[1]
    assert "1/2 connected" in rest
