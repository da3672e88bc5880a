"""``python -m sqlweave.mcp``: the options, the catalog they describe, and serving it.

>>> _parser().parse_args(["--demo", "--transport", "http"]).port
8765
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Sequence

from ..catalog import Catalog
from ..errors import SqlweaveError
from . import server
from .server import LOOPBACK_HOSTS
from .tools import DEFAULT_MAX_ROWS

def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m sqlweave.mcp",
        description="Serve databases to MCP clients (read-only tools: list_databases, describe_schema, ask, run_sql).",
    )
    p.add_argument("--db", action="append", default=[], metavar="NAME=PATH_OR_URL",
                   help="a database to serve, under NAME (repeatable); a bare path is named after its file")
    p.add_argument("--config", metavar="FILE", help="a TOML file with [databases.NAME] tables")
    p.add_argument("--demo", action="store_true", help="also serve the bundled demo shop as 'shop'")
    p.add_argument("--model", default="local", metavar="SPEC", help="model backend: local, local:0.5b, openai:MODEL")
    p.add_argument("--pipeline", default="default", metavar="NAME", help="pipeline preset for ask (default: default)")
    p.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    p.add_argument("--host", default="127.0.0.1", help="http: address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8765, help="http: port (default 8765)")
    p.add_argument("--max-rows", type=int, default=DEFAULT_MAX_ROWS, help="rows a tool returns at most")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds a query may run (for --db databases)")
    p.add_argument("--no-cache", action="store_true", help="always call the model (no response cache)")
    return p


def build_catalog(dbs: Sequence[str] = (), config: str | None = None, demo: bool = False,
                  timeout_s: float = 10.0) -> Catalog:
    """The catalog ``--db``, ``--config`` and ``--demo`` describe: :meth:`Catalog.from_options`.

    >>> build_catalog(["sales=/data/sales.sqlite"], demo=True).names()
    ['sales', 'shop']
    """
    return Catalog.from_options(dbs, config, demo, timeout_s=timeout_s)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m sqlweave.mcp``: parse the options and serve; a typed error is one line on stderr, status 2."""
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="sqlweave-mcp: %(message)s")
    try:
        from ..llm.registry import get_llm

        catalog = build_catalog(args.db, args.config, args.demo, args.timeout)
        llm = get_llm(args.model, cache=not args.no_cache)
        if args.transport == "http" and args.host not in LOOPBACK_HOSTS:
            print(f"warning: serving on {args.host}, reachable from other machines, without authentication",
                  file=sys.stderr)
        server.run(catalog, llm, args.transport, args.host, args.port, pipeline_name=args.pipeline, max_rows=args.max_rows)
    except SqlweaveError as err:
        print(f"error: {err.message}" + (f"\nhint: {err.hint}" if err.hint else ""), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


__all__ = ["build_catalog", "main"]
