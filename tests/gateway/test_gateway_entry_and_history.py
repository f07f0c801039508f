"""What a person reads around the gateway: the client entry it prints for a profile, and the history
of calls made through it (which client made each)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from mcpdeck.events import ToolCallFinished, ToolCallStarted
from mcpdeck.history import History
from tests.cli.inprocess import mcpdeck
from tests.helpers import cli_environment, stdio_server


def _config(folder: Path) -> Path:
    path = folder / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"basic": stdio_server("basic")}, "profiles": {"coding": {}}}))
    return path


def test_printing_the_entry_of_a_profile_the_config_does_not_have_is_refused(tmp_path: Path) -> None:
    """The client would start the entry and fail at once; say so now, naming the profiles there are."""
    config = _config(tmp_path)
    args = ["--config", str(config), "serve", "--print-client-config", "cursor", "--profile"]
    refused = mcpdeck([*args, "codng"], env=cli_environment(tmp_path))
    assert refused.returncode == 2
    assert refused.stdout == ""
    assert "no profile named 'codng'" in refused.stderr and "(known: coding)" in refused.stderr
    printed = mcpdeck([*args, "coding"], env=cli_environment(tmp_path))
    assert printed.returncode == 0, printed.stderr
    assert json.loads(printed.stdout)["mcpServers"]["mcpdeck"]["args"][-2:] == ["--profile", "coding"]


def test_history_shows_which_client_made_each_call_through_the_gateway(tmp_path: Path) -> None:
    env = cli_environment(tmp_path)
    with History(env["MCPDECK_HISTORY"]) as history:
        for call_id, caller in (("1", "claude-ai 0.1.0 (via profile coding, token laptop)"), ("2", None)):
            started = datetime(2026, 11, 24, 10, 0, tzinfo=UTC)
            history.call_started(
                ToolCallStarted(
                    at=started,
                    call_id=call_id,
                    name="mcp__basic__echo",
                    server="basic",
                    tool="echo",
                    arguments={"text": "hi"},
                    approved_by="rule",
                    caller=caller,
                )
            )
            history.call_finished(
                ToolCallFinished(
                    call_id=call_id,
                    name="mcp__basic__echo",
                    server="basic",
                    tool="echo",
                    duration=0.01,
                    is_error=False,
                    result_size=2,
                    approved_by="rule",
                )
            )
    shown = mcpdeck(["--config", str(_config(tmp_path)), "history"], env=env)
    assert shown.returncode == 0, shown.stderr
    header, *rows = shown.stdout.splitlines()
    assert "CLIENT" in header.split()
    assert any("claude-ai 0.1.0 (via profile coding, token laptop)" in row for row in rows)
    assert len(rows) == 2


def test_history_without_gateway_calls_has_no_client_column(tmp_path: Path) -> None:
    env = cli_environment(tmp_path)
    with History(env["MCPDECK_HISTORY"]) as history:
        history.call_started(
            ToolCallStarted(call_id="1", name="mcp__basic__echo", server="basic", tool="echo", arguments={})
        )
    shown = mcpdeck(["--config", str(_config(tmp_path)), "history"], env=env)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[0].split() == ["TIME", "TOOL", "STATUS", "APPROVED", "TOOK", "SIZE", "ERROR"]
