"""The repair stage in a pipeline: fixes failed answers, never touches answers that run, leaves a trace."""

from __future__ import annotations

from pathlib import Path

from sqlweave.database import Database
from sqlweave.llm.fake import FakeLLM
from sqlweave.presets import build_pipeline
from tests.conftest import file_digest


def run(db: Path, sql: str, preset: str = "repair"):
    llm = FakeLLM([f"```sql\n{sql}\n```"] + ["```sql\nSELECT 1\n```"] * 5)
    return build_pipeline(preset).run("Which singers sang?", Database.open(db), llm), llm


def test_failed_answer_is_repaired_without_a_model_call(singer_db: Path) -> None:
    before = file_digest(singer_db)
    answer, llm = run(singer_db, "SELECT T2.Name FROM singer AS T1 JOIN singer_in_concert AS T2 "
                                 "ON T1.Singer_ID = T2.Singer_ID")
    assert answer.ok and answer.sql.startswith("SELECT T1.Name")
    assert answer.result is not None and len(answer.result.rows) > 0
    entry = answer.trace[-1]
    assert entry.stage == "repair" and entry.notes["changed"] and entry.notes["changes"] == ["T2.Name -> T1.Name"]
    assert len(llm.calls) == 1 and not entry.calls
    assert file_digest(singer_db) == before


def test_working_answer_is_left_alone(singer_db: Path) -> None:
    answer, _ = run(singer_db, "SELECT Name FROM singer WHERE Age > 30")
    assert answer.ok and answer.sql == "SELECT Name FROM singer WHERE Age > 30"
    assert answer.trace[-1].notes == {"changes": [], "outcome": "ok", "changed": False, "skipped": True}


def test_unrepairable_answer_goes_on_to_model_correction(singer_db: Path) -> None:
    answer, llm = run(singer_db, "SELECT loc FROM stadium", preset="repair-correct")
    stages = [e.stage for e in answer.trace]
    assert stages[-2:] == ["repair", "correct"]
    assert answer.trace[-2].notes["changed"] is False
    assert len(llm.calls) >= 2  # the correction stage asked the model again
