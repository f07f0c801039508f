"""Run a scripted fake LLM server from the command line, for manual runs of ``mcpdeck chat``.

    python -m tests.llm.serve --api openai --script script.json --port 0

The first line printed is the base URL (put it in OPENAI_BASE_URL, ANTHROPIC_BASE_URL or
GEMINI_BASE_URL); the server runs until it is stopped (Ctrl-C or a signal). The script is
a JSON list of steps::

    [{"text": "Let me look.", "tool_calls": [{"name": "mcp__everything__echo", "arguments": {"message": "hi"}}]},
     {"error": {"status": 429, "retry_after": 0}},
     {"text": "Done."}]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import uvicorn

from tests.llm.scripted import APIS, ScriptedServer, bind, load_script


def main(argv: list[str] | None = None) -> None:
    """Parse the arguments, print the base URL, serve until stopped."""
    parser = argparse.ArgumentParser(prog="python -m tests.llm.serve", description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--api", choices=APIS, required=True, help="the wire format whose base URL to print")
    parser.add_argument("--script", type=Path, required=True, help="a JSON file with the list of steps")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    args = parser.parse_args(argv)
    try:
        script = load_script(json.loads(args.script.read_text()))
    except (OSError, ValueError, KeyError, TypeError) as error:
        parser.exit(2, f"cannot use the script {args.script}: {error}\n")
    server = ScriptedServer(args.api, script)
    sock = bind(args.host, args.port)
    server.root = f"http://{args.host}:{sock.getsockname()[1]}"
    print(server.base_url, flush=True)
    config = uvicorn.Config(server.app, log_level="warning", access_log=False, lifespan="on")
    with sock:
        uvicorn.Server(config).run(sockets=[sock])
    sys.stdout.flush()


if __name__ == "__main__":
    main()
