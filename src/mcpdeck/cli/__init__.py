"""The ``mcpdeck`` command line (``mcpdeck --help``)."""

from mcpdeck.cli._app import cli
from mcpdeck.cli._content import register_content_commands

register_content_commands(cli)

__all__ = ["cli", "main"]


def main() -> None:
    """Entry point of the ``mcpdeck`` script."""
    cli(prog_name="mcpdeck")
