"""Every docstring example in the package runs."""

import doctest
import importlib
import pkgutil

import pytest

import sqlweave

from .extras import need_extra

MODULES = sorted(
    m.name for m in pkgutil.walk_packages(sqlweave.__path__, "sqlweave.") if not m.name.endswith("__main__")
)


#: Modules that run only with an extra installed.
DOOR_EXTRAS = {"sqlweave.server": "server", "sqlweave.mcp": "mcp", "sqlweave.db.datafiles": "duckdb",
               "sqlweave.db.infer_keys": "duckdb", "sqlweave.db.backends.duckdb": "duckdb",
               "sqlweave.db.backends.postgres": "postgres"}


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    need_extra(next((extra for prefix, extra in DOOR_EXTRAS.items() if name.startswith(prefix)), None))
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE | doctest.IGNORE_EXCEPTION_DETAIL)
    assert result.failed == 0
