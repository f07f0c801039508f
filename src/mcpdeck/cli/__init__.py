"""The ``mcpdeck`` command line (``mcpdeck --help``)."""

from mcpdeck.cli._app import cli

__all__ = ["cli", "main"]


def main() -> None:
    """Entry point of the ``mcpdeck`` script."""
    cli(prog_name="mcpdeck")
