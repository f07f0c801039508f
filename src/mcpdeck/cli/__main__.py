"""``python -m mcpdeck.cli``."""

from mcpdeck.cli import main

main()
