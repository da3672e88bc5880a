"""``python -m sqlweave.mcp``: serve databases to MCP clients (:func:`sqlweave.mcp.command.main`)."""

import sys

from .command import main

if __name__ == "__main__":  # imported (as every module of the package may be), it serves nothing
    sys.exit(main())
