"""``python -m tools.gen`` (from the repository root): the capture generator's command line."""

from .cli import main

main()
