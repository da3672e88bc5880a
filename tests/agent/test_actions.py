"""Parsing the agent's turns: every form a model writes, and the malformed ones."""

from __future__ import annotations

import pytest

from sqlweave.agent.actions import parse_action


@pytest.mark.parametrize("text, name, args, kwargs", [
    ('Thought: where is Paris?\nAction: SearchValue("Paris")', "SearchValue", ["Paris"], {}),
    ('Action: SearchValue("Paris", table="city", column="Name")', "SearchValue", ["Paris"],
     {"table": "city", "column": "Name"}),
    ("Action: SearchColumn(age of a singer)", "SearchColumn", ["age of a singer"], {}),
    ("Action: searchcolumn('age')", "SearchColumn", ["age"], {}),
    ('Action: FindShortestPath("singer.Name", "stadium.Name")', "FindShortestPath", ["singer.Name", "stadium.Name"], {}),
    ("Action: FindShortestPath(singer.Name, stadium.Name)", "FindShortestPath", ["singer.Name", "stadium.Name"], {}),
    ("Action: ExecuteSQL(\"SELECT name FROM singer WHERE country = 'France'\")", "ExecuteSQL",
     ["SELECT name FROM singer WHERE country = 'France'"], {}),
    ("Action: ExecuteSQL(SELECT count(*) FROM singer WHERE age > 30)", "ExecuteSQL",
     ["SELECT count(*) FROM singer WHERE age > 30"], {}),
    ("Action: ExecuteSQL(```sql\nSELECT 1\n```)", "ExecuteSQL", ["SELECT 1"], {}),
    ("Action: ExecuteSQL\n```sql\nSELECT 2\n```", "ExecuteSQL", ["SELECT 2"], {}),
    ('**Action:** SearchValue("x")', "SearchValue", ["x"], {}),
    ('Action: ExecuteSQL("""SELECT "a b" FROM t""")', "ExecuteSQL", ['SELECT "a b" FROM t'], {}),
])
def test_accepted_forms(text: str, name: str, args: list, kwargs: dict) -> None:
    a = parse_action(text)
    assert a.error is None
    assert (a.name, a.args, a.kwargs) == (name, args, kwargs)


def test_thought_is_kept_and_action_text_is_canonical() -> None:
    a = parse_action("Thought: I look for the name.\nAction: SearchValue('Paris', table='city')\nObservation: fake")
    assert a.thought == "I look for the name."
    assert a.text == 'SearchValue("Paris", table="city")'


@pytest.mark.parametrize("text", ["Action: Done", "Thought: finished.\nAction: Done()", "Thought: all good.\nDone"])
def test_done(text: str) -> None:
    assert parse_action(text).name == "Done"


def test_bare_sql_block_without_action_is_executed() -> None:
    a = parse_action("Thought: here is the query\n```sql\nSELECT count(*) FROM singer\n```")
    assert (a.name, a.args) == ("ExecuteSQL", ["SELECT count(*) FROM singer"])


@pytest.mark.parametrize("text, fragment", [
    ("I think we should look at the singer table.", "no action found"),
    ("", "no action found"),
    ("Action: Search the values please", "unknown tool"),
    ("Action: DropTable('singer')", "unknown tool"),
    ("Action: SearchValue", "needs arguments"),
    ("Action: !!!", "cannot read the action"),
])
def test_malformed_turns_report_an_error_instead_of_raising(text: str, fragment: str) -> None:
    a = parse_action(text)
    assert a.error is not None and fragment in a.error


def test_json_turns() -> None:
    a = parse_action('{"thought": "find it", "action": "SearchValue", "args": ["Paris"]}')
    assert (a.thought, a.name, a.args) == ("find it", "SearchValue", ["Paris"])
    assert parse_action('{"thought": "x", "action": "Hack", "args": []}').error == "unknown tool 'Hack'"
    assert parse_action('{"thought": "ok", "action": "Done", "args": []}').name == "Done"
