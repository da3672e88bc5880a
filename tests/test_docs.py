"""Every docstring example in the package runs."""

import doctest
import importlib
import pkgutil

import pytest

import sqlweave

MODULES = sorted(
    m.name for m in pkgutil.walk_packages(sqlweave.__path__, "sqlweave.") if not m.name.endswith("__main__")
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE | doctest.IGNORE_EXCEPTION_DETAIL)
    assert result.failed == 0
