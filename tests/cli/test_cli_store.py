"""The CLI and the store: ``serve --store`` and ``--replica-id`` checked before anything starts, ``history``
reading a store another process wrote (``--store``, ``$MCPDECK_STORE``), on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path

from mcpdeck.events import ToolCallFinished, ToolCallStarted
from mcpdeck.store import History
from tests.cli.inprocess import mcpdeck
from tests.helpers import cli_environment, closed_port


def _config(folder: Path) -> Path:
    path = folder / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {}}))
    return path


def test_serve_refuses_a_store_or_replica_id_it_cannot_use_before_it_starts(tmp_path: Path) -> None:
    config = str(_config(tmp_path))
    env = cli_environment(tmp_path)
    with closed_port() as port:
        cases = {
            ("--store", "mysql://u@h/db"): "the store URL scheme 'mysql' is not one mcpdeck knows",
            ("--store", f"postgresql://mcpdeck@127.0.0.1:{port}/db"): "check that PostgreSQL runs there",
            ("--replica-id", "eu west"): "the replica id 'eu west' cannot be used",
            ("--replica-id", "x" * 33): "1-32 letters, digits",
        }
        for args, said in cases.items():
            result = mcpdeck(["--config", config, "serve", "--port", "0", *args], env=env)
            assert result.returncode == 2, (args, result.stdout, result.stderr)
            assert said in " ".join(result.stderr.split()), (args, result.stderr)
            assert "mcpdeck serves" not in result.stdout
    bad_env = mcpdeck(["--config", config, "serve", "--port", "0"], env={**env, "MCPDECK_REPLICA_ID": "a.b"})
    assert bad_env.returncode == 2 and "the replica id 'a.b' cannot be used" in bad_env.stderr


def test_history_reads_the_store_it_is_given_with_each_calls_replica(tmp_path: Path, store_url: str) -> None:
    with History(store_url, replica="r2") as history:
        history.call_started(
            ToolCallStarted(call_id="1", name="mcp__basic__echo", server="basic", tool="echo", arguments={"text": "x"})
        )
        history.call_finished(
            ToolCallFinished(
                call_id="1", name="mcp__basic__echo", server="basic", tool="echo", duration=0.01, is_error=False
            )
        )
    config = str(_config(tmp_path))
    env = cli_environment(tmp_path)  # its $MCPDECK_HISTORY is another file: --store wins
    listed = mcpdeck(["--config", config, "history", "--store", store_url, "--json"], env=env)
    assert listed.returncode == 0, listed.stderr
    (call,) = json.loads(listed.stdout)["toolCalls"]
    assert (call["replica"], call["status"], call["arguments"]) == ("r2", "ok", {"text": "x"})
    table = mcpdeck(["--config", config, "history"], env={**env, "MCPDECK_STORE": store_url})
    assert table.returncode == 0, table.stderr
    assert (
        table.stdout.splitlines()[0].split()[-2:] == ["REPLICA", "ERROR"]
        and table.stdout.splitlines()[1].split()[-1] == "r2"
    )
    assert mcpdeck(
        ["--config", config, "history", "--replica", "r1"], env={**env, "MCPDECK_STORE": store_url}
    ).stdout.startswith("No tool calls recorded yet")


def test_serve_refuses_a_weak_token_or_a_host_name_it_cannot_admit_exactly_before_it_starts(tmp_path: Path) -> None:
    config = str(_config(tmp_path))
    env = cli_environment(tmp_path)
    cases: dict[tuple[tuple[str, ...], tuple[tuple[str, str], ...]], str] = {
        ((), (("MCPDECK_TOKEN", "short-token"),)): "$MCPDECK_TOKEN must be at least 32 printable ASCII characters",
        ((), (("MCPDECK_TOKEN", "x" * 20 + " " + "y" * 20),)): "with no spaces (it has 41)",
        (("--allowed-host", "*.example.com"), ()): "holds a wildcard; list each name the load balancer is reached by",
        ((), (("MCPDECK_ALLOWED_HOSTS", "lb.example.com, *"),)): "the allowed host '*' holds a wildcard",
        (("--allowed-host", "https://lb.example.com/"), ()): "is not a host name with an optional port",
        (("--allowed-host", "lb.example.com:70000"), ()): "is not a host name with an optional port",
    }
    for (args, more), said in cases.items():
        result = mcpdeck(["--config", config, "serve", "--port", "0", *args], env={**env, **dict(more)})
        assert result.returncode == 2, (args, more, result.stdout, result.stderr)
        assert said in " ".join(result.stderr.split()), (args, more, result.stderr)
        assert "mcpdeck serves" not in result.stdout
