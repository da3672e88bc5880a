"""``python -m sqlweave.cli ...``: the ``sqlweave`` command, without its console script."""

from . import main

main()
