from pathlib import Path

from sqlweave.database import Database
from sqlweave.llm import FakeLLM
from sqlweave.presets import build_pipeline
from sqlweave.retrieval.schema_retriever import prune, prune_stats, query_elements


def test_join_keys_and_bridge_tables_are_kept(singer_db: Path) -> None:
    from sqlweave.retrieval.schema_retriever import _with_join_keys

    s = Database.open(singer_db).schema()
    keep = _with_join_keys(s, {"singer": {"Name"}, "stadium": {"Capacity"}})
    # singer and stadium only connect through singer_in_concert and concert: both bridges are kept.
    assert set(keep) == {"singer", "stadium", "concert", "singer_in_concert"}
    assert {"Singer_ID", "concert_ID"} <= keep["singer_in_concert"]
    assert {"Stadium_ID", "concert_ID"} <= keep["concert"]
    assert "Singer_ID" in keep["singer"]  # primary key


def test_bm25_pruning_shortens(singer_db: Path) -> None:
    s = Database.open(singer_db).schema()
    kept = prune(s, "What is the capacity of each stadium?", k=3)
    assert kept.has_table("stadium") and kept.table("stadium").has_column("Capacity")
    assert sum(len(t.columns) for t in kept.tables) < sum(len(t.columns) for t in s.tables) / 2


def test_hybrid_merges_the_approximated_query(singer_db: Path) -> None:
    s = Database.open(singer_db).schema()
    approx = "SELECT T1.Song_release_year FROM singer AS T1 WHERE T1.Is_male = 'T'"
    assert query_elements(approx, s) == {("singer", None), ("singer", "Song_release_year"), ("singer", "Is_male")}
    kept = prune(s, "In which year did the male singers release songs?", method="hybrid", approx_sql=approx)
    assert kept.table("singer").has_column("Is_male") and kept.table("singer").has_column("Song_release_year")
    recall, shortening = prune_stats(s, kept, "SELECT song_release_year FROM singer WHERE is_male = 'T'")
    assert recall and 0.0 < shortening < 1.0


def test_loose_resolution_of_wrong_column_names(singer_db: Path) -> None:
    s = Database.open(singer_db).schema()
    # "Capacity" is read from singer, which lacks it: stadium has it; "Song_Names" is close to Song_Name.
    approx = "SELECT T1.Capacity, T1.Song_Names FROM singer AS T1"
    assert query_elements(approx, s) == {("singer", None)}
    assert query_elements(approx, s, loose=True) == {("singer", None), ("stadium", "Capacity"),
                                                     ("singer", "Song_Name")}
    question = "Which songs are there?"
    strict = prune(s, question, method="hybrid", approx_sql=approx, loose=False)
    loose = prune(s, question, method="hybrid", approx_sql=approx)
    assert not strict.has_table("stadium")
    assert loose.table("stadium").has_column("Capacity") and loose.table("singer").has_column("Song_Name")


def test_also_keep_adds_value_columns_and_ignores_unknown_ones(singer_db: Path) -> None:
    s = Database.open(singer_db).schema()
    kept = prune(s, "How many concerts?", k=1, also_keep=[("stadium", "Location"), ("nowhere", "x")])
    assert kept.table("stadium").has_column("Location") and not kept.has_table("nowhere")


def test_pruning_stage_keeps_the_columns_of_selected_values(singer_db: Path) -> None:
    from types import SimpleNamespace

    from sqlweave.stages.payloads import ValueMatch
    from sqlweave.stages.prune_schema import PruneSchema

    s = Database.open(singer_db).schema()
    state = SimpleNamespace(schema=s, prompt_schema=s, question="How many concerts?", db=SimpleNamespace(dialect="sqlite"),
                            values=[ValueMatch("stadium", "Location", "Raith", 1.0, "Raith", "capitalised")],
                            approx_sql=None,
                            schema_fit=None, schema_fit_key=None, note=lambda **kw: None)
    PruneSchema(method="bm25", k=1)(state)
    assert state.prompt_schema.table("stadium").has_column("Location")
    state.values = []
    PruneSchema(method="bm25", k=1)(state)
    assert not state.prompt_schema.has_table("stadium")


def test_nothing_matches_keeps_the_full_schema(singer_db: Path) -> None:
    s = Database.open(singer_db).schema()
    assert prune(s, "zzz qqq") is s


def test_pruned_pipeline_and_full_schema_fallback(singer_db: Path) -> None:
    llm = FakeLLM(["SELECT count(*) FROM singer",          # approximation
                   "SELECT count(*) FROM singers",         # generation: a forged table name
                   "SELECT count(*) FROM singer"])         # correction, full schema
    pipe = build_pipeline("pruned-correct")
    answer = pipe.run("How many singers are there?", Database.open(singer_db), llm)
    gen_prompt = llm.calls[1][0][-1].content
    assert "CREATE TABLE singer" in gen_prompt and "CREATE TABLE stadium" not in gen_prompt
    assert answer.result.rows == ((6,),)
    assert "CREATE TABLE stadium" in llm.calls[2][0][1].content  # fallback prompt shows everything
    stages = [e.stage for e in answer.trace]
    assert stages[:4] == ["check_question", "approximate", "prune_schema", "render_schema"]


def test_pruned_is_zero_shot_even_with_a_pool_and_pruned_rag_adds_examples(tmp_path: Path) -> None:
    train = tmp_path / "train.json"
    train.write_text('[{"db_id": "x", "question": "How many pets?", "query": "SELECT count(*) FROM pets"}]')
    plain = [s.name for s in build_pipeline("pruned", examples=str(train)).stages]
    assert "select_examples" not in plain and build_pipeline("pruned").stages[-3].prompt == "zero_shot"
    rag = build_pipeline("pruned-rag", examples=str(train))
    names = [s.name for s in rag.stages]
    assert names.index("select_examples") > names.index("prune_schema")
    assert rag.stages[names.index("select_examples")].pool == str(train) and rag.stages[-3].prompt == "few_shot"


def test_a_table_kept_without_key_columns_keeps_a_column() -> None:
    from sqlweave.schema import Column, Schema, Table

    # ``log`` has no primary key and no foreign key: named by the approximated query alone, it was kept empty
    s = Schema("x", (Table("singer", (Column("id", primary_key=True), Column("name"), Column("age"))),
                     Table("log", (Column("happened"), Column("note")))))
    kept = prune(s, "How old is each singer?", method="hybrid", k=1, approx_sql="SELECT count(*) FROM log")
    assert kept.has_table("log") and kept.table("log").column_names == ("happened",)
    assert all(t.columns for t in kept.tables)
