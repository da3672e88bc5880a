"""Shared fixtures. Every test gets its own cache directory; the fixture database is copied per test."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
SHARED = Path(__file__).resolve().parents[2] / "shared"


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    # Model weights stay where they are (large, verified once); every other cached thing is per test.
    from sqlweave.llm.weights import model_dir

    monkeypatch.setenv("SQLWEAVE_MODEL_DIR", str(model_dir()))
    monkeypatch.setenv("SQLWEAVE_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture
def singer_db(tmp_path: Path) -> Path:
    """A writable copy of Spider's concert_singer database."""
    dst = tmp_path / "concert_singer.sqlite"
    shutil.copy(FIXTURES / "concert_singer.sqlite", dst)
    return dst


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
