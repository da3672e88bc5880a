"""Every error says what to do: each typed error has a hint, also when it was raised without one."""

from __future__ import annotations

import importlib
import pkgutil

import sqlweave
from sqlweave.errors import SqlweaveError


def _every_error_class() -> set[type[SqlweaveError]]:
    for m in pkgutil.walk_packages(sqlweave.__path__, "sqlweave."):
        try:
            importlib.import_module(m.name)
        except ImportError:  # a module of an extra that is not installed
            continue
    found: set[type[SqlweaveError]] = set()
    todo = [SqlweaveError]
    while todo:
        cls = todo.pop()
        found.add(cls)
        todo.extend(cls.__subclasses__())
    return found


def test_every_error_class_has_a_hint_and_a_code_of_its_own() -> None:
    classes = _every_error_class()
    assert len(classes) > 30
    assert sorted(c.__name__ for c in classes if not c.default_hint.strip()) == []
    for cls in classes:
        err = cls.__new__(cls)
        SqlweaveError.__init__(err, "something went wrong", hint="")
        assert err.hint == cls.default_hint  # an empty hint given is the class's own


def test_the_doors_error_objects_always_carry_a_hint() -> None:
    from sqlweave.server.errors import error_dict

    assert error_dict(SqlweaveError("x"))["hint"]
    assert error_dict(SqlweaveError("x", hint=""))["hint"]
