"""``python -m mcpdeck``: the same command line as the ``mcpdeck`` script."""

from mcpdeck.cli import main

main()
