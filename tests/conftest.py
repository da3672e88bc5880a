"""Shared fixtures. Every test gets its own cache directory; the fixture database is copied per test."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

import pytest

if TYPE_CHECKING:
    from sqlweave.resources import Store

FIXTURES = Path(__file__).parent / "fixtures"
SHARED = Path(__file__).resolve().parents[2] / "shared"


#: Models in memory, shared by every test's resources: each model loads once per test session.
_MODELS: "Store | None" = None


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # Model weights stay where they are (large, verified once); every other cached thing is per test, and so are
    # the shared resources (pools, value indexes, embedders), whose settings are read once.
    from sqlweave.llm.weights import model_dir
    from sqlweave.resources import Resources, Store, set_shared_resources

    global _MODELS
    monkeypatch.setenv("SQLWEAVE_MODEL_DIR", str(model_dir()))
    monkeypatch.setenv("SQLWEAVE_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    if _MODELS is None:
        _MODELS = Store()
    previous = set_shared_resources(Resources(models=_MODELS))
    yield
    set_shared_resources(previous)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "extra(name): needs the optional extra NAME (skipped, named, without it)")


def pytest_runtest_setup(item: pytest.Item) -> None:
    from .extras import need_extra

    for mark in item.iter_markers("extra"):
        need_extra(mark.args[0])
    if item.get_closest_marker("model") is not None:  # the embedded model
        need_extra("local")


@pytest.fixture
def singer_db(tmp_path: Path) -> Path:
    """A writable copy of Spider's concert_singer database."""
    dst = tmp_path / "concert_singer.sqlite"
    shutil.copy(FIXTURES / "concert_singer.sqlite", dst)
    return dst


def keyless_shop(path: Path) -> Path:
    """A SQLite file that declares no foreign key: customers and orders, whose keys the names and values show,
    notes, whose customer_id holds a value no customer has, and order_lines, keyed by two columns."""
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE customers (customer_id INTEGER, name TEXT, country TEXT);
        CREATE TABLE orders (id INTEGER, customer_id INTEGER, total REAL);
        CREATE TABLE notes (note TEXT, customer_id INTEGER);
        CREATE TABLE order_lines (order_id INTEGER, line_no INTEGER, qty INTEGER, PRIMARY KEY (order_id, line_no));
        INSERT INTO order_lines VALUES (10, 1, 2), (10, 2, 1), (12, 1, 5);
        INSERT INTO customers VALUES (1, 'Ann', 'FR'), (2, 'Bo', 'DE'), (3, 'Cy', 'FR');
        INSERT INTO orders VALUES (10, 1, 5.0), (11, 1, 7.5), (12, 3, 2.0), (13, NULL, 1.0);
        INSERT INTO notes VALUES ('lost', 9), ('fine', 2);
    """)
    conn.commit()
    conn.close()
    return path


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
