"""The agent loop with a scripted model: a full interaction, malformed actions, unknown tools, the turn limit."""

from __future__ import annotations

from pathlib import Path

import pytest

from sqlweave.agent.loop import AgentLoop, STOP
from sqlweave.database import Database
from sqlweave.llm.fake import FakeLLM
from sqlweave.pipeline import Pipeline
from sqlweave.presets import build_pipeline


def run(db: Path, answers: list[str], **options: object):
    llm = FakeLLM(answers)
    pipe = Pipeline("agent", (AgentLoop(**options),))  # type: ignore[arg-type]
    return pipe.run("Which singers from the Netherlands sang in a concert?", Database.open(db), llm), llm


FULL = [
    'Thought: the country is a value.\nAction: SearchValue("netherland")',
    'Thought: now the join.\nAction: FindShortestPath("singer.Country", "concert.concert_Name")',
    "Thought: write it.\nAction: ExecuteSQL(\"SELECT DISTINCT singer.Name FROM singer LEFT JOIN singer_in_concert "
    "ON singer.Singer_ID = singer_in_concert.Singer_ID WHERE singer.Country = 'Netherlands'\")",
    "Thought: that answers it.\nAction: Done",
]


def test_full_interaction(singer_db: Path) -> None:
    answer, llm = run(singer_db, FULL)
    assert answer.ok and answer.sql is not None and "Netherlands" in answer.sql
    assert answer.result is not None and answer.result.rows
    entry = answer.trace[-1]
    assert entry.notes["stop"] == "done" and entry.notes["turns"] == 4
    traj = entry.notes["trajectory"]
    assert traj[0]["observation"] == "singer.Country = 'Netherlands'"
    assert traj[1]["observation"].startswith("FROM singer JOIN singer_in_concert")
    assert all("prompt_tokens" in t and "completion_tokens" in t for t in traj)
    # Each turn's conversation extends the previous one (what lets llama.cpp reuse its prefix cache).
    convs = [list(m) for m, _ in llm.calls]
    for before, after in zip(convs, convs[1:]):
        assert after[: len(before)] == before and len(after) == len(before) + 2
    assert convs[1][-1].content == "Observation: singer.Country = 'Netherlands'"
    # The model may not write observations itself.
    assert all(set(STOP) <= set(opts.stop) for _, opts in llm.calls)
    # Two exemplars and the compact schema are in the first prompt.
    first = convs[0][1].content
    assert first.count("Example question") == 2 and "singer(" in first


def test_tools_only_setting_hides_the_schema(singer_db: Path) -> None:
    _, llm = run(singer_db, FULL, show_schema=False)
    assert "Database schema" not in llm.calls[0][0][1].content


def test_malformed_and_unknown_actions_get_error_observations_and_the_loop_goes_on(singer_db: Path) -> None:
    answer, _ = run(singer_db, [
        "I am not sure what to do.",
        "Thought: try this.\nAction: DeleteEverything()",
        "Thought: ok.\nAction: ExecuteSQL(\"SELECT count(*) FROM singer\")",
        "Action: Done",
    ])
    traj = answer.trace[-1].notes["trajectory"]
    assert traj[0]["observation"].startswith("Error: no action found")
    assert traj[1]["observation"].startswith("Error: unknown tool 'DeleteEverything'")
    assert answer.ok and answer.result is not None and answer.result.rows == ((6,),)


def test_turn_limit_keeps_the_last_working_query(singer_db: Path) -> None:
    answers = ["Action: ExecuteSQL(\"SELECT count(*) FROM singer\")"] + [
        f'Thought: look again.\nAction: SearchColumn("column {i}")' for i in range(10)]
    answer, llm = run(singer_db, answers, max_turns=4)
    assert len(llm.calls) == 4
    assert answer.trace[-1].notes["stop"] == "turn_limit"
    assert answer.ok and answer.sql == "SELECT count(*) FROM singer"


def test_turn_limit_without_any_query_is_a_clear_error(singer_db: Path) -> None:
    answer, _ = run(singer_db, ['Action: SearchValue("a")', 'Action: SearchValue("b")'], max_turns=2)
    assert not answer.ok and answer.error is not None
    assert "without executing a query" in answer.error.message and answer.error.hint


def test_repeated_action_is_pointed_out(singer_db: Path) -> None:
    answer, _ = run(singer_db, ['Action: SearchValue("Netherlands")'] * 2 + ["Action: Done"])
    traj = answer.trace[-1].notes["trajectory"]
    assert traj[1]["observation"].startswith("Error: you already did exactly this")


def test_failing_last_query_is_the_answers_error(singer_db: Path) -> None:
    answer, _ = run(singer_db, ['Action: ExecuteSQL("SELECT nope FROM singer")', "Action: Done"])
    assert not answer.ok and answer.error is not None and answer.error.code == "unknown_column"
    assert answer.sql == "SELECT nope FROM singer"


def test_destructive_sql_from_the_agent_is_refused(singer_db: Path) -> None:
    from ..conftest import file_digest

    before = file_digest(singer_db)
    answer, _ = run(singer_db, ['Action: ExecuteSQL("DELETE FROM singer")', "Action: Done"])
    assert not answer.ok and answer.error is not None and answer.error.code == "refused_statement"
    assert file_digest(singer_db) == before


def test_json_mode_constrains_output(singer_db: Path) -> None:
    answer, llm = run(singer_db, [
        '{"thought": "count", "action": "ExecuteSQL", "args": ["SELECT count(*) FROM singer"]}',
        '{"thought": "done", "action": "Done", "args": []}',
    ], mode="json")
    assert answer.ok and answer.result is not None and answer.result.rows == ((6,),)
    assert llm.calls[0][1].json_schema is not None


def test_presets(singer_db: Path) -> None:
    assert [s.name for s in build_pipeline("agent").stages] == ["check_question", "agent"]
    assert build_pipeline("agent-tools-only").stages[-1].show_schema is False  # type: ignore[attr-defined]
