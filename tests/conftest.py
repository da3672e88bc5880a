"""Shared fixtures. Every test gets its own cache directory; the fixture database is copied per test."""

from __future__ import annotations

import hashlib
import shutil
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


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
