"""Where sqlweave keeps data that lasts: assembled model weights, the response cache, demo data.

The directory is ``$SQLWEAVE_CACHE_DIR`` when set, else ``$XDG_CACHE_HOME/sqlweave``, else ``~/.cache/sqlweave``.

>>> import os; os.environ["SQLWEAVE_CACHE_DIR"] = "/tmp/sqlweave-doc"; str(cache_dir())
'/tmp/sqlweave-doc'
>>> del os.environ["SQLWEAVE_CACHE_DIR"]
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """The cache directory (created on first use by whoever writes into it)."""
    env = os.environ.get("SQLWEAVE_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "sqlweave"
