"""Every case of ``fixtures/rules/*.sql`` gives its expected output (see :mod:`tests.sql.rule_fixtures`).

After a deliberate change: ``.venv/bin/python -m tests.sql.rule_fixtures --update``, then read the diff.
"""

from __future__ import annotations

import pytest

from tests.sql.rule_fixtures import FIXTURES, all_cases, output, read_cases

CASES = all_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_rule_gives_the_recorded_output(case) -> None:
    assert case.expected is not None, f"{case.id}: no expected line; run python -m tests.sql.rule_fixtures --update"
    assert output(case) == case.expected


def test_each_rule_file_holds_a_case_that_changes_its_input() -> None:
    files = sorted(FIXTURES.glob("*.sql"))
    assert len(files) >= 20
    for path in files:
        assert any(c.expected != c.sql for c in read_cases(path)), f"{path.name} never changes its input"
