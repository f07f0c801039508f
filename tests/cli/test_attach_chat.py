"""``mcpdeck chat`` through a running ``mcpdeck serve``: a real ``serve`` process and its servers, the CLI in
this process, the scripted OpenAI-format server as the model. Each chat runs both ways (``--no-attach``
against a scripted server of its own) and what they print and send is compared."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path

import anyio
import pytest

from tests.cli.inprocess import mcpdeck
from tests.cli.terminal import run_in_terminal
from tests.helpers import ROOT, WAIT, cli_environment, stdio_server
from tests.llm.scripted import Call, Fail, Received, Reply, Step, serve_scripted
from tests.support.serve_process import Serving, serving, wait_connected

pytestmark = pytest.mark.anyio

SERVERS = {"basic": stdio_server("basic"), "features": stdio_server("features")}
KEY = "sk-only-the-cli-has-this"


@pytest.fixture(scope="module")
async def served(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Serving]:
    """One ``mcpdeck serve`` for the module's chats, both its servers connected (each test closes its chats)."""
    folder = tmp_path_factory.mktemp("attached-chat")
    async with serving(folder, SERVERS) as run, run.client() as client:
        await wait_connected(client, "basic")
        await wait_connected(client, "features")
        yield run


async def chat_in(folder: Path, base_url: str, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """``mcpdeck chat ARGS`` in this process (in a worker thread: a command may run its own event loop), its
    model at ``base_url``; the key and the URL are in this command's environment only."""
    env = cli_environment(folder, MCPDECK_STATE_DIR=str(folder / "state"), MCPDECK_HISTORY="off")
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "MCPDECK_MODEL"):
        env.pop(name, None)
    env |= {"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": KEY}
    command = ["--config", str(folder / "mcp.json"), *args]
    return await anyio.to_thread.run_sync(lambda: mcpdeck(command, env=env, cwd=ROOT, stdin=stdin))


async def both(
    folder: Path, script: Callable[[], Sequence[Step]], *args: str, stdin: str = ""
) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str], list[Received], list[Received]]:
    """The chat alone, then attached, each with a scripted model of its own: (alone, attached, what each model got)."""
    with anyio.fail_after(WAIT * 4):
        async with serve_scripted("openai", list(script())) as model:
            alone = await chat_in(folder, model.base_url, "--no-attach", "chat", "-m", "openai:m", *args, stdin=stdin)
        async with serve_scripted("openai", list(script())) as model_attached:
            attached = await chat_in(folder, model_attached.base_url, "chat", "-m", "openai:m", *args, stdin=stdin)
    return alone, attached, list(model.requests), list(model_attached.requests)


def files_holding(folder: Path, text: str) -> list[Path]:
    """The files under ``folder`` that hold ``text`` (there are some files: the test would be empty else)."""
    files = [path for path in folder.rglob("*") if path.is_file()]
    assert files
    return [path for path in files if text.encode() in path.read_bytes()]


def results(request: Received) -> str:
    return " | ".join(text for _, text in request.tool_results)


def lines(text: str) -> list[str]:
    """The lines of ``text``, timeless, a question's prompt ending its line, sorted."""
    return sorted(timeless(text).replace("[n] no: ", "[n] no:\n").splitlines())


def timeless(text: str) -> str:
    """Output with each call's duration taken out (the one thing two runs print differently)."""
    return re.sub(r" \d+ ms: ", " N ms: ", text)


async def test_json_output_is_the_same_and_results_come_whole(served: Serving) -> None:
    big = "x" * 30_000  # over the 20,000 characters the console's stream carries

    def script() -> list[Step]:
        return [
            Reply(text="Echoing.", tool_calls=[Call("mcp__basic__echo", {"text": big})]),
            Reply(tool_calls=[Call("mcp__basic__add", {"a": 2, "b": 3})]),
            lambda request: Reply(text=f"The sum is {request.tool_results[-1][1]}."),
        ]

    folder = served.config.parent
    async with served.client() as client:
        calls = (await client.get("/api/servers/basic")).json()["status"]["calls"]
        alone, attached, sent_alone, sent_attached = await both(folder, script, "--yes", "--json", "go")
        assert (alone.returncode, attached.returncode) == (0, 0), attached.stderr
        assert attached.stdout == alone.stdout
        events = [json.loads(line) for line in attached.stdout.splitlines()]
        echoed = [e for e in events if e["event"] == "tool-result" and e["name"] == "mcp__basic__echo"]
        assert [len(e["text"]) for e in echoed] == [30_000]
        assert events[-1] == {"event": "done", "reason": "done", "steps": 3, "text": "The sum is 5."}
        assert {e["approvedBy"] for e in events if e["event"] == "tool-result"} == {"user-once"}
        # The key and the URL came from the CLI's environment: serve has neither.
        assert [r.api_key for r in sent_attached] == [KEY] * 3
        assert [r.tool_results for r in sent_attached] == [r.tool_results for r in sent_alone]
        # The calls went through serve; the chat was closed when the command ended.
        assert (await client.get("/api/servers/basic")).json()["status"]["calls"] == calls + 2
        assert (await client.get("/api/chats")).json() == []
    # Nothing serve wrote (its output, logs, state) holds the key.
    holding = await anyio.to_thread.run_sync(files_holding, folder, KEY)
    assert holding == []


async def test_a_provider_error_is_told_and_exits_1_as_alone(served: Serving) -> None:
    folder = served.config.parent
    alone, attached, _, sent = await both(folder, lambda: [Fail(401)], "hi")
    assert (alone.returncode, attached.returncode) == (1, 1)
    assert "error: " in attached.stderr and "401" in attached.stderr
    assert attached.stdout == alone.stdout == ""

    def portless(text: str) -> str:  # each run's model listens on a port of its own
        return re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", text)

    assert portless(attached.stderr) == portless(alone.stderr)
    assert [r.api_key for r in sent] == [KEY]


async def test_approvals_are_asked_at_the_terminal_as_alone(served: Serving) -> None:
    def script() -> list[Step]:
        calls = [Call("mcp__basic__echo", {"text": "one"}), Call("mcp__basic__add", {"a": 1, "b": 2})]
        return [Reply(tool_calls=calls[:1]), Reply(tool_calls=calls[1:]), lambda r: Reply(text=results(r))]

    folder = served.config.parent
    async with served.client() as client:
        alone, attached, sent_alone, sent_attached = await both(folder, script, "go", stdin="maybe\ny\nn\n")
        assert (alone.returncode, attached.returncode) == (0, 0), attached.stderr
        assert "Allow mcp__basic__echo (basic: echo)?" in attached.stderr
        assert "answer y, s, a or n" in attached.stderr  # "maybe" was asked again
        assert "✗ mcp__basic__add denied: Permission denied for mcp__basic__add" in attached.stderr
        # The same lines: the tool-call line and the question come from two tasks, so in either order, on
        # both paths, and what follows a question may go on its line.
        assert lines(attached.stderr) == lines(alone.stderr)
        assert attached.stdout == alone.stdout
        assert [r.tool_results for r in sent_attached] == [r.tool_results for r in sent_alone]
        assert (await client.get("/api/asks")).json() == []


async def test_servers_and_tool_search_offer_the_same_tools(served: Serving) -> None:
    def script() -> list[Step]:
        return [Reply(text="fine")]

    folder = served.config.parent
    for options in (["--server", "basic", "--no-tool-search"], ["-s", "features", "--tool-search", "0"]):
        alone, attached, sent_alone, sent_attached = await both(folder, script, *options, "hi")
        assert (alone.returncode, attached.returncode) == (0, 0), attached.stderr
        assert attached.stdout == alone.stdout == "fine\n"
        offered = sorted(sent_attached[0].tool_names)
        assert offered == sorted(sent_alone[0].tool_names), options
        mcp = [name for name in offered if name.startswith("mcp__")]
        if "--no-tool-search" in options:
            assert mcp and all(name.startswith("mcp__basic__") for name in mcp)
        else:  # searching from the first tool: only the native tools and search_tools
            assert offered == ["list_mcp_resources", "read_mcp_resource", "search_tools"]
    unknown = await chat_in(folder, "http://127.0.0.1:9/v1", "chat", "-m", "openai:m", "-s", "nope", "hi")
    assert unknown.returncode == 2 and "no server named 'nope'" in unknown.stderr


async def test_a_server_s_question_is_answered_here_as_alone(served: Serving) -> None:
    def script() -> list[Step]:
        ask = [Call("mcp__features__ask", {"question": "Who?"})]
        return [Reply(tool_calls=ask), lambda r: Reply(text=f"It said: {results(r)}")]

    folder = served.config.parent
    alone, attached, sent_alone, sent_attached = await both(folder, script, "--yes", "go")
    assert (alone.returncode, attached.returncode) == (0, 0), attached.stderr
    # No terminal here: the question is declined, and said so, on both paths.
    declined = "features asked for input ('Who?'), but there is no terminal to ask at; declined."
    assert declined in alone.stderr and declined in attached.stderr
    assert [r.tool_results for r in sent_attached] == [r.tool_results for r in sent_alone]


async def test_a_conversation_reads_prompts_and_commands_from_stdin(served: Serving) -> None:
    def script() -> list[Step]:
        return [
            Reply(text="first answer"),
            lambda request: Reply(text=f"saw {len(request.messages)} messages"),
            lambda request: Reply(text=f"after reset {len(request.messages)}"),
        ]

    folder = served.config.parent
    async with served.client() as client:
        stdin = "hi\nagain\n/tools\n/reset\nfresh\n"
        alone, attached, _, sent = await both(folder, script, "-s", "basic", stdin=stdin)
        assert (alone.returncode, attached.returncode) == (0, 0), attached.stderr
        assert attached.stdout.splitlines() == ["first answer", "saw 3 messages", "after reset 1"]
        assert attached.stdout == alone.stdout
        assert attached.stderr == alone.stderr  # the tool count, the /tools list, "(new conversation)"
        assert "  mcp__basic__echo" in attached.stderr and "mcp__features__" not in attached.stderr
        assert [r.last_user_text for r in sent] == ["hi", "again", "fresh"]
        assert (await client.get("/api/chats")).json() == []


def form_at_terminal(folder: Path, base_url: str, *options: str) -> str:
    """``mcpdeck chat`` at a real terminal, answering the features server's form; what the terminal showed."""
    env = {"MCPDECK_STATE_DIR": str(folder / "state"), "MCPDECK_HISTORY": "off"}
    env |= {"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": KEY}
    answers = [
        ("(string, required)", "Ada\n"),
        ("(string, default blue)", "red\n"),
        ("(integer, default 3)", "\n"),
        ("(boolean, default False)", "\n"),
        ("send this answer?", "a\n"),
    ]
    done = run_in_terminal(
        folder / "mcp.json", *options, "chat", "-m", "openai:m", "--yes", "go", answers=answers, env=env
    )
    assert done.returncode == 0, done.text
    return done.text


async def test_a_form_is_filled_in_at_the_terminal_as_alone(served: Serving) -> None:
    def script() -> list[Step]:
        ask = [Call("mcp__features__ask", {"question": "Who are you?"})]
        return [Reply(tool_calls=ask), lambda r: Reply(text=f"It said: {results(r)}")]

    folder = served.config.parent
    shown: list[str] = []
    for options in ((), ("--no-attach",)):
        async with serve_scripted("openai", script()) as model:
            shown.append(await anyio.to_thread.run_sync(form_at_terminal, folder, model.base_url, *options))
        answered = model.requests[1].tool_results[0][1]
        assert '"content": {"colour": "red", "count": 3, "loud": false, "name": "Ada"}' in answered
    attached, alone = shown
    assert "features asks: Who are you?" in re.sub(r"\x1b\[[0-9;]*m", "", attached)
    assert timeless(attached) == timeless(alone)


async def test_more_turns_than_serve_runs_is_a_chat_here(served: Serving) -> None:
    from mcpdeck.api._chat_routes import ChatIn
    from mcpdeck.cli._switch import MAX_SERVED_STEPS

    limits = [getattr(rule, "le", None) for rule in ChatIn.model_fields["maxSteps"].metadata]
    assert MAX_SERVED_STEPS in limits  # the CLI's idea of serve's limit is serve's
    folder = served.config.parent
    async with serve_scripted("openai", [Reply(text="here")]) as model:
        done = await chat_in(folder, model.base_url, "chat", "-m", "openai:m", "--max-steps", "500", "hi")
    assert (done.returncode, done.stdout) == (0, "here\n"), done.stderr
    assert "mcpdeck serve runs at most 200 model turns a prompt, so this chat runs here" in done.stderr
