"""The config file under pressure, through ``mcpdeck`` (real processes for concurrent writers and a terminal).

Concurrent writers, symlinked files, hostile files, and imports that bring autoApprove lists.
"""

from __future__ import annotations

import json
import os
import pty
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.inprocess import mcpdeck
from tests.config.hand_written import ADDED, STYLES
from tests.helpers import cli_environment

ROOT = Path(__file__).resolve().parents[2]


def command(config: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "mcpdeck.cli", "--config", str(config), *args]


def run(config: Path, *args: str, stdin: int | None = None) -> subprocess.CompletedProcess[str]:
    """``mcpdeck --config CONFIG ARGS`` in this process; given a terminal's ``stdin``, in a real process."""
    if stdin is None:
        return mcpdeck(["--config", str(config), *args], env=cli_environment(config.parent), cwd=ROOT)
    return subprocess.run(
        command(config, *args),
        capture_output=True,
        text=True,
        timeout=60,
        env=cli_environment(config.parent),
        cwd=ROOT,
        check=False,
        stdin=stdin,
    )


def test_twenty_concurrent_adds_keep_twenty_servers(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"first": {"command": "x"}}, "permissions": {"deny": ["mcp__x"]}}))
    environ = cli_environment(tmp_path)
    processes = [
        subprocess.Popen(
            command(config, "add", f"s{i}", "--no-connect", "--", "server-cmd", str(i)),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env=environ,
            cwd=ROOT,
        )
        for i in range(20)
    ]
    outcomes = [(p.wait(timeout=120), *p.communicate(timeout=10)) for p in processes]
    assert all(code == 0 for code, _, _ in outcomes), outcomes
    assert all("Saved" in out for _, out, _ in outcomes)
    document = json.loads(config.read_text())
    assert sorted(document["mcpServers"]) == sorted(["first", *(f"s{i}" for i in range(20))])  # 9 of 20 before
    assert document["mcpServers"]["s7"]["args"] == ["7"]
    assert document["permissions"] == {"deny": ["mcp__x"]}
    assert stat.S_IMODE(config.stat().st_mode) == 0o600


@pytest.mark.parametrize("style", STYLES)
def test_add_remove_enable_and_disable_touch_only_their_own_bytes_of_a_hand_written_file(
    tmp_path: Path, style: str
) -> None:
    config = tmp_path / "mcp.json"
    text = STYLES[style]
    config.write_bytes(text.encode())
    added = run(config, "add", "git", "--no-connect", "--env", "GIT_DIR=/srv/git", "--", "uvx", "mcp-git")
    assert added.returncode == 0, added.stderr
    assert config.read_bytes() == text.replace(*ADDED[style]).encode()
    for args in [("disable", "api"), ("enable", "api"), ("remove", "git")]:
        done = run(config, *args)
        assert done.returncode == 0, done.stderr
    assert config.read_bytes() == text.encode()
    fs = ["npx", "-y", "@modelcontextprotocol/server-filesystem", "/home/me/notes"]
    timeout = run(config, "add", "fs", "--force", "--no-connect", "--timeout", "45", "--", *fs)
    assert timeout.returncode == 0, timeout.stderr
    assert config.read_bytes() == text.replace('"timeout": 30', '"timeout": 45').encode()


def test_adding_through_a_symlinked_config_updates_the_dotfile_and_keeps_the_link(tmp_path: Path) -> None:
    dotfile = tmp_path / "dotfiles" / "mcp.json"
    dotfile.parent.mkdir()
    dotfile.write_text('{"mcpServers": {}}')
    dotfile.chmod(0o644)
    config = tmp_path / "mcp.json"
    config.symlink_to(dotfile)
    done = run(config, "add", "fs", "--no-connect", "--", "fs-server")
    assert done.returncode == 0, done.stderr
    assert config.is_symlink() and os.readlink(config) == str(dotfile)
    assert list(json.loads(dotfile.read_text())["mcpServers"]) == ["fs"]
    assert stat.S_IMODE(dotfile.stat().st_mode) == 0o600


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '{"mcpServers": {}, "x": ' + "[" * 100_000 + "]" * 100_000 + "}",
            ":1: nested more than 64 levels deep",
        ),
        (
            '{"permissions": {"deny": ["mcp__fs"]},\n "mcpServers": {},\n "permissions": {}}',
            ':3: the key "permissions" is given twice (at the top level)',
        ),
    ],
)
def test_an_unusable_config_is_a_clear_error_naming_the_file(tmp_path: Path, text: str, message: str) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(text)
    done = run(config, "list")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and "RecursionError" not in done.stderr
    assert done.stderr.startswith(f"Error: {config}{message}"), done.stderr


KEPT = {"fs": ["*"], "gh": ["create_issue", "delete_*"]}


def cursor_file(tmp_path: Path) -> Path:
    path = tmp_path / "cursor.json"
    servers = {
        "fs": {"command": "fs-server", "autoApprove": ["*"]},
        "gh": {"command": "gh-server", "autoApprove": ["create_issue", "delete_*"]},
        "plain": {"command": "plain-server"},
    }
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def auto_approve(config: Path) -> dict[str, list[str]]:
    servers = json.loads(config.read_text())["mcpServers"]
    return {name: entry["autoApprove"] for name, entry in servers.items() if "autoApprove" in entry}


def test_import_lists_auto_approve_and_without_a_terminal_drops_it_saying_so(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    source = cursor_file(tmp_path)
    dry = run(config, "import", "cursor", str(source), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "  fs: *\n" in dry.stdout and "  gh: create_issue, delete_*\n" in dry.stdout
    assert "would be dropped" in dry.stdout and not config.exists()
    done = run(config, "import", "cursor", str(source))
    assert done.returncode == 0, done.stderr
    assert "  fs: *\n" in done.stdout
    assert "Dropped these autoApprove lists" in done.stdout and "--keep-auto-approve" in done.stdout
    assert auto_approve(config) == {}
    assert sorted(json.loads(config.read_text())["mcpServers"]) == ["fs", "gh", "plain"]


def test_import_keeps_auto_approve_only_when_asked_to(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    kept = run(config, "import", "cursor", str(cursor_file(tmp_path)), "--keep-auto-approve")
    assert kept.returncode == 0, kept.stderr
    assert "Keeping them (--keep-auto-approve)" in kept.stdout
    assert auto_approve(config) == KEPT


@pytest.mark.parametrize(
    ("answer", "expected"), [("y\n", {"fs": ["*"], "gh": ["create_issue", "delete_*"]}), ("\n", {})]
)
def test_import_at_a_terminal_asks_and_the_default_is_no(
    tmp_path: Path, answer: str, expected: dict[str, list[str]]
) -> None:
    config = tmp_path / "mcp.json"
    controller, terminal = pty.openpty()
    try:
        os.write(controller, answer.encode())
        done = run(config, "import", "cursor", str(cursor_file(tmp_path)), stdin=terminal)
    finally:
        os.close(terminal)
        os.close(controller)
    assert done.returncode == 0, done.stderr
    assert "Keep these autoApprove lists? [y/N]" in done.stdout
    assert auto_approve(config) == expected
