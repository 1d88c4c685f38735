"""``python -m greenroom.cli``."""

from greenroom.cli.app import main

main()
