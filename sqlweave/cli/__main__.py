"""``python -m sqlweave.cli ...``: the ``sqlweave`` command, without its console script."""

from . import main

if __name__ == "__main__":  # importing the module (a tool that walks the package) runs nothing
    main()
