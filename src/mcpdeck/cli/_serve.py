"""``mcpdeck serve`` and ``mcpdeck ui``: keep one host running behind the web console and the REST API.

FastAPI and uvicorn are imported only when one of these runs, so other commands start
as fast as before.
"""

from __future__ import annotations

import webbrowser

import click

from mcpdeck.cli._app import _Context, _sync, pass_ctx  # pyright: ignore[reportPrivateUsage]

__all__ = ["register_serve_commands"]

_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _run(ctx: _Context, host: str, port: int, open_browser: bool) -> None:
    import anyio

    from mcpdeck.server._process import ServeOptions, run_serve
    from mcpdeck.server._state import ServeState

    if host not in _LOOPBACK:
        click.echo(
            click.style("warning: ", fg="yellow", bold=True)
            + f"listening on {host}, beyond this machine: whoever reaches it with the token can run "
            "programs as you. Use --host 127.0.0.1 unless you mean it.",
            err=True,
        )

    def ready(state: ServeState) -> None:
        link = f"{state.url}/?token={state.token}"
        click.echo(f"mcpdeck serves {state.config}")
        click.echo(f"  console: {link}")
        click.echo(f"  API:     {state.url}/api (Authorization: Bearer <token>; described at /api/openapi.json)")
        click.echo("Press Ctrl-C to stop.")
        if open_browser:
            webbrowser.open(link)

    options = ServeOptions(config=ctx.path, host=host, port=port, log_dir=ctx.log_dir, history=ctx.history())

    async def main() -> None:
        await run_serve(options, ready=ready)

    anyio.run(main)
    click.echo("Stopped.")


_host_option = click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on. Anything but loopback lets other machines in (with the token).",
)
_port_option = click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8765,
    show_default=True,
    help="Port to listen on (0: any free one).",
)


@click.command(short_help="Keep the servers running behind the web console and the REST API.")
@_host_option
@_port_option
@pass_ctx
@_sync
def serve(ctx: _Context, host: str, port: int) -> None:
    """Keep the servers running and serve the web console, the REST API (/api) and the gateway (/mcp).

    \b
    Example:
      mcpdeck serve --port 0
    """
    _run(ctx, host, port, open_browser=False)


@click.command()
@_host_option
@_port_option
@click.option("--no-browser", is_flag=True, help="Don't open the browser; just print the URL.")
@pass_ctx
@_sync
def ui(ctx: _Context, host: str, port: int, no_browser: bool) -> None:
    """`serve`, and open the web console in the browser.

    \b
    Example:
      mcpdeck ui --no-browser
    """
    _run(ctx, host, port, open_browser=not no_browser)


def register_serve_commands(group: click.Group) -> None:
    """Add ``serve`` and ``ui`` to the CLI."""
    group.add_command(serve)
    group.add_command(ui)
