"""The access policy is merged once, in one place, and is the same whichever door opens the database; a tenant's
handle is bound without private functions or side tables, over the same connection, schema and knowledge."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

import sqlweave
import sqlweave.policy.opening
from sqlweave.catalog import Catalog, DatabaseEntry
from sqlweave.database import Database
from sqlweave.engine import open_database
from sqlweave.knowledge import Knowledge, Term, knowledge_for
from sqlweave.llm.fake import FakeLLM
from sqlweave.policy import AccessPolicy
from sqlweave.policy.opening import resolve_policy

from ..db.conftest import SINGER

KNOWLEDGE = """\
terms:
  veteran: age above 40
policy:
  hidden_columns: [singer.country]
  row_filters:
    concert: "year >= :since"
"""
POLICY = "hidden_tables: [stadium]\nrow_filters:\n  singer: \"age > :min_age\"\n"
EXTRA = "hidden_columns: [singer.song_name]\n"


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    out = {"knowledge": tmp_path / "singer.yaml", "policy": tmp_path / "policy.yaml", "extra": tmp_path / "extra.yaml"}
    out["knowledge"].write_text(KNOWLEDGE, encoding="utf-8")
    out["policy"].write_text(POLICY, encoding="utf-8")
    out["extra"].write_text(EXTRA, encoding="utf-8")
    return out


@pytest.fixture
def merges(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Each call of the one function that merges a database's policy."""
    calls: list[int] = []
    real = sqlweave.policy.opening.resolve_policy

    def counted(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(sqlweave.policy.opening, "resolve_policy", counted)
    return calls


def test_every_door_opens_with_the_same_policy_merged_once(files: dict[str, Path], merges: list[int]) -> None:
    policies = (files["policy"], files["extra"])
    opened = {
        "Database.open": Database.open(SINGER, knowledge=files["knowledge"], policy=policies),
        "open_database": open_database(SINGER, knowledge=files["knowledge"], policy=policies)[0],
        "connect": sqlweave.connect(SINGER, llm=FakeLLM([]), knowledge=files["knowledge"], policy=policies).db,
        "catalog": Catalog({"singer": DatabaseEntry("singer", str(SINGER), knowledge=str(files["knowledge"]),
                                                    policy=tuple(map(str, policies)))}).database("singer"),
        "descriptions": Database.open(SINGER, descriptions=files["knowledge"], policy=policies),
    }
    assert len(merges) == len(opened)  # one merge per database opened, whatever the door
    expected = resolve_policy(policies, knowledge=None, descriptions=files["knowledge"])
    assert expected is not None
    assert expected.hidden_tables == {"stadium"} and expected.hidden_columns == {("singer", "country"), ("singer", "song_name")}
    assert {f.table for f in expected.row_filters} == {"singer", "concert"}
    for door, db in opened.items():
        assert db.policy == expected, door
        db.close()


def test_a_policy_built_in_code_merges_with_the_knowledge_built_in_code() -> None:
    known = Knowledge(policy=AccessPolicy.from_yaml("hidden_tables: [concert]"))
    db = Database.open(SINGER, knowledge=known, policy={"hidden_tables": ["stadium"]})
    assert db.policy is not None and db.policy.hidden_tables == {"concert", "stadium"}
    assert "concert" not in db.schema().table_names and "stadium" not in db.schema().table_names
    assert db.knowledge is known


def test_a_bound_handle_shares_the_connection_schema_and_knowledge(files: dict[str, Path]) -> None:
    db = Database.open(SINGER, knowledge=files["knowledge"], policy=files["policy"])
    young = db.bind({"min_age": 20, "since": 2000})
    old = db.bind({"min_age": 40, "since": 2000})
    assert young.connection is db.connection is old.connection  # one pool, not one per tenant
    assert young.schema() is db.schema() is old.schema()  # read once, by the parent
    assert young.knowledge is db.knowledge and young.policy is db.policy
    assert knowledge_for(young) is not None and knowledge_for(young).terms[0].name == "veteran"
    assert db.params == {} and young.params["min_age"] == 20 and old.params["min_age"] == 40
    count = "SELECT COUNT(*) FROM singer"
    assert young.execute(count).rows[0][0] > old.execute(count).rows[0][0]
    assert young.recheck_s is None and db.recheck_s is not None  # the parent checks the structure, not its clones


def test_tenants_query_at_once_through_their_own_handles() -> None:
    db = Database.open(SINGER, policy=AccessPolicy.from_yaml("row_filters: {singer: 'age > :min_age'}"))
    handles = [db.bind({"min_age": age}) for age in (0, 30, 40)]
    expected = [h.execute("SELECT COUNT(*) FROM singer").rows[0][0] for h in handles]
    got: dict[int, list[int]] = {i: [] for i in range(len(handles))}
    errors: list[BaseException] = []

    def ask(i: int) -> None:
        try:
            for _ in range(20):
                got[i].append(handles[i].execute("SELECT COUNT(*) FROM singer").rows[0][0])
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(handles)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert all(set(got[i]) == {expected[i]} for i in got)  # each tenant sees its own rows only
    assert len(set(expected)) == 3


def test_knowledge_from_a_yaml_descriptions_file_is_read_again_when_it_changes(files: dict[str, Path]) -> None:
    db = Database.open(SINGER, descriptions=files["knowledge"])
    first = db.knowledge
    assert first is not None and first is db.knowledge  # read once
    text = KNOWLEDGE.replace("veteran", "senior")
    files["knowledge"].write_text(text, encoding="utf-8")
    import os

    st = files["knowledge"].stat()
    os.utime(files["knowledge"], (st.st_atime, st.st_mtime + 5))
    assert db.knowledge is not None and db.knowledge.terms[0].name == "senior"
    assert Term("senior", "age above 40").name == db.knowledge.terms[0].name
