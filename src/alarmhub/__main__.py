"""Run the command line with ``python -m alarmhub``."""

from alarmhub.cli import main

main()
