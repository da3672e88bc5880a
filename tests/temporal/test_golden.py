"""The golden cases of ``tests/fixtures/temporal/*.yaml``: each question's time expressions, resolved on a fixed
today, with their SQL on the file's engine, must be exactly as written there (reviewed by hand when written)."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import pytest
import yaml

from sqlweave.temporal import DIALECTS, describe, interpret

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "temporal"


def _cases() -> list[Any]:
    out = []
    for path in sorted(FIXTURES.glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        for n, case in enumerate(data["cases"], 1):
            out.append(pytest.param(data["dialect"], case, id=f"{path.stem}-{n}"))
    return out


def test_every_engine_has_golden_cases() -> None:
    engines = {yaml.safe_load(p.read_text(encoding="utf-8"))["dialect"] for p in FIXTURES.glob("*.yaml")}
    assert engines == set(DIALECTS)


@pytest.mark.parametrize(("dialect", "case"), _cases())
def test_golden_case(dialect: str, case: dict[str, Any]) -> None:
    got = [describe(i, dialect) for i in interpret(case["question"], date.fromisoformat(case["today"]))]
    assert got == case["expected"]
