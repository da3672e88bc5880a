"""Which optional extras this environment has, and the skip that names the one a test needs.

The suite runs in two environments (``make test``): the full one, where nothing here skips, and one with only the
core installed (``scripts/core-env.sh``), where every test that needs an extra is skipped with its name.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from sqlweave.doctor import EXTRAS as PRODUCT_EXTRAS

#: The modules each extra of pyproject.toml provides (the ones sqlweave or its tests import): the product's own list
#: (``sqlweave doctor`` reads it), the runtime of the embedded model, and what the tests add.
EXTRAS: dict[str, tuple[str, ...]] = {
    **{name: modules for name, (modules, _) in PRODUCT_EXTRAS.items()},
    "local": ("llama_cpp",),
    "dev": ("playwright", "httpx"),
}

#: The extra each database engine of the suite needs (SQLite is core).
ENGINE_EXTRA = {"sqlite": None, "duckdb": "duckdb", "postgres": "postgres", "mysql": "mysql"}


def has_extra(name: str) -> bool:
    return all(importlib.util.find_spec(m) is not None for m in EXTRAS[name])


def need_extra(name: str | None) -> None:
    """Skip the calling test (or fixture) unless extra ``name`` is installed, naming it."""
    if name is not None and not has_extra(name):
        pytest.skip(f"needs the {name} extra: pip install 'sqlweave[{name}]'", allow_module_level=True)


def need_engine(engine: str) -> None:
    need_extra(ENGINE_EXTRA.get(engine))


def duckdb_file(path: Path, sql: str) -> Path:
    """``path`` as a DuckDB file after ``sql`` has run on it (created if need be; the test is skipped without the
    duckdb extra)."""
    need_extra("duckdb")
    import duckdb

    con = duckdb.connect(str(path))
    try:
        con.execute(sql)
    finally:
        con.close()
    return path
