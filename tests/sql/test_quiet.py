"""sqlglot's warnings quote the text they could not parse: a model's prose, a user's SQL. They stay off stderr."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest
import sqlglot

from sqlweave.database import Database
from sqlweave.db.demo import demo_database_path
from sqlweave.errors import RefusedStatementError
from sqlweave.llm.fake import FakeLLM
from sqlweave.presets import build_pipeline
from sqlweave.sql.quiet import reading_untrusted_text

PROSE = "First, set of values \x1b[31mred\x1b[0m. Then SELECT count(*) FROM customers"


def sqlglot_records(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "sqlglot"]


def test_sqlglot_warns_outside_and_is_quiet_inside(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="sqlglot"):
        sqlglot.parse("set of values.")
        assert any("unsupported syntax" in m for m in sqlglot_records(caplog))  # what the filter is for
        caplog.clear()
        with reading_untrusted_text():
            sqlglot.parse("set of values.")
        assert sqlglot_records(caplog) == []
        sqlglot.parse("set of values.")  # the filter ends with the block
        assert sqlglot_records(caplog)


def test_pipeline_and_execute_do_not_echo_the_text(caplog: pytest.LogCaptureFixture) -> None:
    db = Database.open(demo_database_path())
    try:
        with caplog.at_level(logging.WARNING, logger="sqlglot"):
            answer = build_pipeline("default").run("How many customers?", db, FakeLLM([PROSE]))
            with pytest.raises(RefusedStatementError):
                db.execute("set of values.")
        assert answer.sql == "SELECT count(*) FROM customers" and answer.result.rows[0][0] > 0
        assert sqlglot_records(caplog) == []
    finally:
        db.close()


def test_nothing_reaches_stderr_without_logging_configured() -> None:
    # Python's last-resort handler printed these on stderr, raw, in the middle of the CLI's output.
    code = ("from sqlweave.database import Database\n"
            "from sqlweave.db.demo import demo_database_path\n"
            "from sqlweave.llm.fake import FakeLLM\n"
            "from sqlweave.presets import build_pipeline\n"
            "db = Database.open(demo_database_path())\n"
            f"a = build_pipeline('default').run('How many?', db, FakeLLM([{PROSE!r}]))\n"
            "print(a.result.rows[0][0])\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and int(done.stdout) > 0
    assert "unsupported syntax" not in done.stderr and "\x1b" not in done.stderr
