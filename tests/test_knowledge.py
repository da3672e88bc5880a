"""Domain knowledge files, evidence per question and generated evidence (fake model, fast)."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

import sqlweave
from sqlweave.catalog import Catalog
from sqlweave.database import Database
from sqlweave.db.demo import demo_database_path
from sqlweave.knowledge import load_descriptions
from sqlweave.db.render import RenderedSchema, render_create_table
from sqlweave.errors import ConfigurationError, SchemaError, SqlweaveError
from sqlweave.knowledge import Join, Knowledge, Term, knowledge_for, load_knowledge
from sqlweave.llm import FakeLLM
from sqlweave.pipeline import State
from sqlweave.presets import build_pipeline
from sqlweave.stages import GenerateSQL
from sqlweave.stages.generate_evidence import GenerateEvidence, clean_evidence

DEFOG = Path(__file__).resolve().parents[2] / "shared" / "data" / "defog" / "databases"

SHOP_YAML = """\
database: shop
tables:
  customers:
    description: People who bought at least once
    columns:
      country: Billing country, spelled in English ('Canada')
      signup_date: {description: Day of the first order}
  orders: One row per checkout
terms:
  active customer: a customer who ordered in the last 90 days
  revenue:
    definition: the money taken for order items
    sql: SUM(order_items.quantity * order_items.unit_price)
  churned customer: no order for a year
joins:
  - orders.customer_id = customers.customer_id
  - order_items.order_id = orders.order_id
examples:
  - question: How many customers are from Canada?
    sql: SELECT COUNT(*) FROM customers WHERE country = 'Canada'
notes:
  - Prices are in US dollars.
"""

# Today's exact zero-shot prompt (see tests/stages/test_values_and_simplify.py): the response cache and every
# measurement depend on it, so a question without knowledge or evidence must keep rendering it byte for byte.
PINNED_SCHEMA = "CREATE TABLE singer (\n  Singer_ID INT PRIMARY KEY,\n  Name TEXT,\n  Country TEXT\n);"
PINNED_USER = ("Database schema:\nCREATE TABLE singer (\n  Singer_ID INT PRIMARY KEY,\n  Name TEXT,\n  Country TEXT\n);"
               "\n\nQuestion: How many singers are from France?")


@pytest.fixture
def shop(tmp_path: Path) -> tuple[Path, Path]:
    db = tmp_path / "shop.sqlite"
    shutil.copy(demo_database_path(), db)
    yaml_file = tmp_path / "shop.yaml"
    yaml_file.write_text(SHOP_YAML, encoding="utf-8")
    return db, yaml_file


def _problem(tmp_path: Path, text: str) -> ConfigurationError:
    f = tmp_path / "k.yaml"
    f.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigurationError) as info:
        load_knowledge(f)
    return info.value


def _prompt(state: State) -> tuple[str, str]:
    llm = FakeLLM(["SELECT 1"])
    state.llm = llm
    GenerateSQL()(state)
    system, user = (m.content for m in llm.calls[0][0])
    return system, user


def _singer_state(singer_db: Path, question: str = "How many singers are from France?", **kw) -> State:
    db = Database.open(singer_db)
    s = db.schema()
    state = State(question, db, FakeLLM([]), s, s, **kw)
    state.rendered_schema = RenderedSchema("create_table", PINNED_SCHEMA, 30, False)
    return state


# --- the file ----------------------------------------------------------------------------------------


def test_yaml_loads_into_the_typed_model(shop: tuple[Path, Path]) -> None:
    k = load_knowledge(shop[1])
    assert k.database == "shop" and k.source == shop[1]
    customers = k.tables[0]
    assert customers.description == "People who bought at least once"
    assert customers.columns == {"country": "Billing country, spelled in English ('Canada')",
                                 "signup_date": "Day of the first order"}
    assert k.tables[1].description == "One row per checkout"
    assert k.terms[0] == Term("active customer", "a customer who ordered in the last 90 days")
    assert k.terms[1].sql == "SUM(order_items.quantity * order_items.unit_price)"
    assert k.joins[0] == Join("orders", "customer_id", "customers", "customer_id")
    assert k.examples[0].sql.startswith("SELECT COUNT(*)")
    assert k.notes == ("Prices are in US dollars.",)
    assert k.issues(Database.open(shop[0]).schema()) == []


def test_terms_may_be_a_list_and_sections_are_optional(tmp_path: Path) -> None:
    f = tmp_path / "k.yml"
    f.write_text("terms:\n  - name: big order\n    definition: more than 10 items\n", encoding="utf-8")
    assert load_knowledge(f).terms == (Term("big order", "more than 10 items"),)
    f.write_text("", encoding="utf-8")
    assert load_knowledge(f) == Knowledge(source=f)


def test_malformed_yaml_names_the_line(tmp_path: Path) -> None:
    err = _problem(tmp_path, "terms:\n  active: [unclosed\n")
    assert "not valid YAML" in err.message and "line" in err.message
    err = _problem(tmp_path, "tables:\n  a: 1\n\tb: 2\n")
    assert "not valid YAML at line 3" in err.message


def test_unknown_key_names_line_key_and_choices(tmp_path: Path) -> None:
    err = _problem(tmp_path, "tables:\n  customers:\n    description: x\n    colums:\n      a: b\n")
    assert "line 4 (tables.customers.colums)" in err.message
    assert "unknown key 'colums'" in err.message and "did you mean 'columns'" in err.message
    err = _problem(tmp_path, "term:\n  x: y\n")
    assert "line 1 (term): unknown section 'term'" in err.message and "'terms'" in err.message


def test_wrong_types_are_typed_errors(tmp_path: Path) -> None:
    err = _problem(tmp_path, "joins: orders.customer_id = customers.customer_id\n")
    assert "line 1 (joins): must be a list, not text" in err.message
    err = _problem(tmp_path, "joins:\n  - orders.customer_id\n")
    assert "line 2 (joins[0])" in err.message and "not a join" in err.message
    err = _problem(tmp_path, "terms:\n  active: [1, 2]\n")
    assert "line 2 (terms.active): must be text, not a list" in err.message
    err = _problem(tmp_path, "tables:\n  t:\n    columns:\n      flag: yes\n")
    assert "line 4 (tables.t.columns.flag): must be text, not true/false" in err.message
    err = _problem(tmp_path, "examples:\n  - question: How many?\n")
    assert "line 2 (examples[0].sql): is empty" in err.message
    err = _problem(tmp_path, "- a\n- b\n")
    assert "must be a mapping of sections" in err.message
    err = _problem(tmp_path, "terms:\n  a: x\n  a: y\n")
    assert "line 3 (terms.a): 'a' is given twice" in err.message
    # Several problems at once, all in details.
    err = _problem(tmp_path, "foo: 1\nbar: 2\n")
    assert len(err.details["problems"]) == 2 and err.hint


def test_missing_file_is_typed(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="no knowledge file"):
        load_knowledge(tmp_path / "none.yaml")


def test_typed_model_checks_values_built_in_code() -> None:
    with pytest.raises(ConfigurationError, match="must be text"):
        Term("x", 3)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="TableKnowledge"):
        Knowledge(tables=("customers",))  # type: ignore[arg-type]


# --- other formats -----------------------------------------------------------------------------------


def test_defog_json_loads_with_glossary() -> None:
    path = DEFOG / "broker" / "broker.json"
    if not path.exists():
        pytest.skip("the defog data is not here")
    k = Knowledge.from_defog_json(path)
    assert k.source == path
    assert {t.name for t in k.tables} >= {"sbTicker", "sbDailyPrice", "sbTransaction"}
    assert all(t.columns for t in k.tables)
    names = [t.name for t in k.terms]
    assert any(n.startswith("ADV (Average Daily Volume)") for n in names)
    assert any("can be joined" in n for n in k.notes)
    assert load_knowledge(path) == k  # the same model through the general loader
    # Its descriptions are what load_descriptions reads from the same file.
    assert k.descriptions() == load_descriptions(path)


def test_descriptions_json_and_folder_map_to_the_model(tmp_path: Path) -> None:
    f = tmp_path / "d.json"
    f.write_text('{"Singer": {"description": "People who sing", "columns": {"Age": "in years"}}}', encoding="utf-8")
    k = load_knowledge(f)
    assert k.tables[0].name == "singer" and k.tables[0].columns == {"age": "in years"}
    folder = tmp_path / "database_description"
    folder.mkdir()
    (folder / "singer.csv").write_text("original_column_name,column_description,value_description\n"
                                       "Age,age of the singer,in years\n", encoding="utf-8")
    assert load_knowledge(folder).tables[0].columns == {"age": "age of the singer; in years"}


def test_malformed_yaml_via_descriptions_is_typed(tmp_path: Path, singer_db: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text("tables: [\n", encoding="utf-8")
    with pytest.raises(SqlweaveError):
        Database.open(singer_db, descriptions=f).schema()


# --- descriptions reach the schema ---------------------------------------------------------------------


def test_yaml_descriptions_reach_the_rendered_schema(shop: tuple[Path, Path]) -> None:
    db = Database.open(shop[0], descriptions=shop[1])
    schema = db.schema()
    assert schema.table("customers").description == "People who bought at least once"
    assert schema.table("customers").column("country").description.startswith("Billing country")
    text = render_create_table(schema)
    assert "-- People who bought at least once\nCREATE TABLE customers" in text
    assert "country TEXT, -- Billing country, spelled in English ('Canada')" in text
    assert "-- One row per checkout\nCREATE TABLE orders" in text
    assert load_descriptions(shop[1])["customers"]["columns"]["signup_date"] == "Day of the first order"


# --- prompts ------------------------------------------------------------------------------------------


def test_prompt_without_knowledge_or_evidence_is_byte_identical(singer_db: Path) -> None:
    state = _singer_state(singer_db)
    assert state.knowledge is None and state.evidence is None
    _, user = _prompt(state)
    assert user == PINNED_USER
    # An empty knowledge file, or one where nothing fits the question, changes nothing either.
    _, user = _prompt(_singer_state(singer_db, knowledge=Knowledge()))
    assert user == PINNED_USER
    unrelated = Knowledge(terms=(Term("active customer", "ordered in the last 90 days"),),
                          joins=(Join.parse("orders.customer_id = customers.customer_id"),))
    _, user = _prompt(_singer_state(singer_db, knowledge=unrelated))
    assert user == PINNED_USER


def test_pipeline_prompt_is_byte_identical_without_a_knowledge_file(singer_db: Path) -> None:
    def user_prompt(**kw) -> str:
        llm = FakeLLM(["SELECT count(*) FROM singer"])
        build_pipeline("zero-shot").run("How many singers are from France?", Database.open(singer_db), llm, **kw)
        return llm.calls[0][0][1].content

    plain = user_prompt()
    assert plain == user_prompt(evidence=None) == user_prompt(evidence="  ")
    assert plain.endswith("\n\nQuestion: How many singers are from France?")
    assert "Domain knowledge" not in plain and "Evidence" not in plain


def test_business_terms_reach_the_prompt_only_when_relevant(shop: tuple[Path, Path]) -> None:
    db_path, yaml_file = shop
    knowledge = load_knowledge(yaml_file)
    db = Database.open(db_path, descriptions=yaml_file)
    s = db.schema()

    def user(question: str) -> str:
        state = State(question, db, FakeLLM([]), s, s, knowledge=knowledge)
        state.rendered_schema = RenderedSchema("create_table", "CREATE TABLE t (a INT);", 10, False)
        return _prompt(state)[1]

    text = user("How many active customers are there?")
    assert '- "active customer" means: a customer who ordered in the last 90 days' in text
    assert "churned" not in text and "revenue" not in text
    # Both preferred joins are keys the schema shows: a line would say it twice.
    assert "Preferred join" not in text and "REFERENCES customers(customer_id)" in render_create_table(s)
    assert "- Prices are in US dollars." in text
    assert text.index("Domain knowledge for this database:") < text.index("Question: How many active")
    text = user("What was the revenue last month?")
    assert "(SQL: SUM(order_items.quantity * order_items.unit_price))" in text and "active customer" not in text
    # A sample question of this database that fits is shown with its SQL.
    text = user("How many customers are from Canada?")
    assert "Questions answered before on this database:" in text
    assert "SELECT COUNT(*) FROM customers WHERE country = 'Canada'" in text
    # Joins only between tables the prompt shows.
    assert knowledge.joins_for(s.subset({"orders": None})) == ()
    # A preferred join that is no key of the schema is stated, either way round it is written.
    for join in ("orders.order_date = customers.signup_date", "customers.signup_date = orders.order_date"):
        state = State("How many active customers are there?", db, FakeLLM([]), s, s,
                      knowledge=replace(knowledge, joins=knowledge.joins + (Join.parse(join),)))
        state.rendered_schema = RenderedSchema("create_table", "CREATE TABLE t (a INT);", 10, False)
        text = _prompt(state)[1]
        assert f"- Preferred join: {join}\n" in text and text.count("Preferred join") == 1


def test_the_demo_catalog_serves_the_shop_with_its_knowledge_file() -> None:
    from sqlweave.db.demo import demo_knowledge_path

    entry = Catalog.demo().entries["shop"]
    assert entry.knowledge == str(demo_knowledge_path())
    k = load_knowledge(demo_knowledge_path())
    assert k.database == "shop" and [t.name for t in k.relevant_terms("Total revenue per month?")] == ["revenue"]
    schema = Catalog.demo().database("shop").schema()  # every table and column it describes exists
    for table in k.tables:
        columns = {c.name for c in schema.table(table.name).columns}
        assert set(table.columns) <= columns, table.name
    assert schema.table("orders").description == "One row per checkout"


def test_a_term_named_by_a_stop_word_alone_is_still_found() -> None:
    # "IT" is an English stop word: an index of such names alone has no vocabulary, and must not fail to build.
    k = Knowledge(terms=(Term("IT", "the information technology department"), Term("A", "the top grade")))
    assert [t.name for t in k.relevant_terms("How many people work in IT?")] == ["IT"]
    assert k.relevant_terms("List the singers.") == ()


def test_a_term_is_named_by_whole_words_in_the_singular_or_plural() -> None:
    # A short name is not found inside another word ("IT" in "items", "A" in "are").
    k = Knowledge(terms=(Term("IT", "the information technology department"), Term("A", "the top grade"),
                         Term("category", "a product group"), Term("active customer", "ordered lately")))
    assert k.relevant_terms("What are the items in its list?") == ()
    assert [t.name for t in k.relevant_terms("Which students got an A?")] == ["A"]
    assert [t.name for t in k.relevant_terms("List the categories")] == ["category"]
    assert [t.name for t in k.relevant_terms("How many active customers are there?")] == ["active customer"]
    assert [t.name for t in k.relevant_terms("Each category's sales")] == ["category"]


def test_yaml_descriptions_file_brings_terms_to_the_pipeline(shop: tuple[Path, Path]) -> None:
    db_path, yaml_file = shop
    llm = FakeLLM(["SELECT COUNT(*) FROM customers"])
    engine = sqlweave.connect(db_path, llm=llm, pipeline="zero-shot", descriptions=yaml_file)
    assert knowledge_for(engine.db) is not None
    engine.ask("How many active customers are there?")
    assert "active customer" in llm.calls[0][0][1].content
    # connect(knowledge=...) does the same, also with defog's JSON.
    llm = FakeLLM(["SELECT COUNT(*) FROM customers"])
    engine = sqlweave.connect(db_path, llm=llm, pipeline="zero-shot", knowledge=yaml_file)
    assert engine.db.schema().table("orders").description == "One row per checkout"
    engine.ask("How many active customers are there?")
    assert "active customer" in llm.calls[0][0][1].content
    with pytest.raises(ConfigurationError, match="both"):
        sqlweave.connect(db_path, llm=llm, knowledge=yaml_file, descriptions=yaml_file)


def test_catalog_knowledge_key(shop: tuple[Path, Path], tmp_path: Path) -> None:
    db_path, yaml_file = shop
    config = tmp_path / "dbs.toml"
    config.write_text(f'[databases.shop]\ntarget = "{db_path.name}"\nknowledge = "{yaml_file.name}"\n', encoding="utf-8")
    catalog = Catalog.from_file(config)
    db = catalog.database("shop")
    assert db.schema().table("customers").description == "People who bought at least once"
    assert knowledge_for(db) is not None and knowledge_for(db).terms[0].name == "active customer"
    config.write_text(f'[databases.shop]\ntarget = "{db_path.name}"\nknowledge = "{yaml_file.name}"\n'
                      'descriptions = "d.json"\n', encoding="utf-8")
    with pytest.raises(ConfigurationError, match="both descriptions and knowledge"):
        Catalog.from_file(config)
    bad = tmp_path / "bad.yaml"
    bad.write_text("termz: {}\n", encoding="utf-8")
    config.write_text(f'[databases.shop]\ntarget = "{db_path.name}"\nknowledge = "bad.yaml"\n', encoding="utf-8")
    with pytest.raises(ConfigurationError, match="unknown section 'termz'"):
        Catalog.from_file(config).database("shop")
    catalog.close()


def test_attached_knowledge_wins(singer_db: Path) -> None:
    db = Database.open(singer_db)
    k = Knowledge(terms=(Term("veteran singer", "Age over 40"),))
    db.knowledge = k
    assert knowledge_for(db) is k
    assert knowledge_for(db.bind({})) is k  # a bound handle keeps it
    db.knowledge = None
    assert knowledge_for(db) is None


# --- evidence ------------------------------------------------------------------------------------------


def test_evidence_reaches_the_prompt(singer_db: Path) -> None:
    _, user = _prompt(_singer_state(singer_db, evidence="France refers to Country = 'France'"))
    assert user == PINNED_USER.replace(
        "Question:", "Evidence (facts that help answer the question):\nFrance refers to Country = 'France'\n\nQuestion:")
    llm = FakeLLM(["SELECT count(*) FROM singer WHERE Country = 'France'"])
    engine = sqlweave.connect(singer_db, llm=llm, pipeline="default")
    answer = engine.ask("How many singers are from France?", evidence="French singers: Country = 'France'.")
    assert answer.ok
    assert "Evidence (facts that help answer the question):\nFrench singers: Country = 'France'.\n\nQuestion: How many" \
        in llm.calls[0][0][1].content


def test_runner_passes_dataset_evidence(singer_db: Path, tmp_path: Path) -> None:
    from sqlweave.eval.datasets import Dataset, Example
    from sqlweave.eval.runner import run_eval

    root = tmp_path / "ds"
    (root / "database" / "concert_singer").mkdir(parents=True)
    shutil.copy(singer_db, root / "database" / "concert_singer" / "concert_singer.sqlite")
    ex = Example("q1", "concert_singer", "How many singers are there?", "SELECT count(*) FROM singer",
                 evidence="singers are rows of the singer table")
    ds = Dataset("bird-dev", root, (ex,), root / "database")
    llm = FakeLLM(["SELECT count(*) FROM singer"])
    results = run_eval(ds, [ex], build_pipeline("zero-shot"), llm, tmp_path / "run")
    assert results[0].match
    assert "singers are rows of the singer table\n\nQuestion:" in llm.calls[0][0][1].content


# --- generated evidence ----------------------------------------------------------------------------------


def test_generate_evidence_writes_state_evidence(singer_db: Path) -> None:
    llm = FakeLLM(["[Evidence]\nSingers from France are rows of singer with Country = 'France'.",
                   "SELECT count(*) FROM singer WHERE Country = 'France'"])
    pipe = build_pipeline("default+evidence")
    assert [s.name for s in pipe.stages][:4] == ["check_question", "render_schema", "generate_evidence", "generate"]
    answer = pipe.run("How many singers are from France?", Database.open(singer_db), llm)
    assert answer.ok
    entry = next(e for e in answer.trace if e.stage == "generate_evidence")
    assert entry.notes["evidence"] == "Singers from France are rows of singer with Country = 'France'."
    evidence_prompt = llm.calls[0][0]
    assert "generate the [Evidence] of the [Question]" in evidence_prompt[0].content
    assert evidence_prompt[1].content.endswith("[Question]\nHow many singers are from France?\n[Evidence]")
    assert "CREATE TABLE singer" in evidence_prompt[1].content
    assert "Evidence (facts that help answer the question):\nSingers from France are rows of singer with " \
           "Country = 'France'.\n\nQuestion:" in llm.calls[1][0][1].content


def test_generate_evidence_keeps_user_evidence(singer_db: Path) -> None:
    state = _singer_state(singer_db, evidence="given")
    state.llm = FakeLLM([])
    GenerateEvidence()(state)
    assert state.evidence == "given" and state.llm.calls == []
    state.llm = FakeLLM(["Generated sentence."])
    GenerateEvidence(user_evidence="combine")(state)
    assert state.evidence == "given\nGenerated sentence."
    with pytest.raises(ConfigurationError):
        GenerateEvidence(user_evidence="merge")


def test_generate_evidence_rejects_sql_and_never_fails(singer_db: Path) -> None:
    from sqlweave.errors import LLMTimeoutError

    state = _singer_state(singer_db)
    state.llm = FakeLLM(["```sql\nSELECT count(*) FROM singer\n```"])
    GenerateEvidence()(state)
    assert state.evidence is None and state._notes["rejected"] == "sql"
    state.llm = FakeLLM([LLMTimeoutError("slow")])
    GenerateEvidence()(state)
    assert state.evidence is None and state._notes["rejected"] == "model_error"
    assert clean_evidence("") == ""


def test_evidence_addon_needs_a_generate_stage() -> None:
    with pytest.raises(ConfigurationError, match="no generate stage"):
        build_pipeline("agent+evidence")
    assert [s.name for s in build_pipeline("rag+evidence", examples="x.json").stages][-4:-2] == \
        ["generate_evidence", "generate"]


def _keyless(path: Path) -> Path:
    """Two tables that declare no keys, as a data file or a careless schema gives them."""
    import sqlite3

    with sqlite3.connect(path) as conn:
        conn.executescript("""
            CREATE TABLE car_names (MakeId INTEGER PRIMARY KEY, Model TEXT);
            CREATE TABLE cars_data (Id INTEGER, Horsepower INTEGER, secret TEXT);
            CREATE TABLE makers (maker_id INTEGER PRIMARY KEY, name TEXT);
            CREATE TABLE models (model_id INTEGER PRIMARY KEY, maker INTEGER REFERENCES makers(maker_id));
            INSERT INTO car_names VALUES (1, 'chevrolet'), (2, 'buick');
            INSERT INTO cars_data VALUES (1, 130, 'x'), (2, 165, 'y');
        """)
    return path


def test_preferred_joins_are_keys_where_the_database_declares_none(tmp_path: Path) -> None:
    db_path = _keyless(tmp_path / "cars.sqlite")
    (tmp_path / "cars.yaml").write_text(
        "joins:\n"
        "  - car_names.MakeId = cars_data.Id\n"  # written from the key's side: it is still the side referred to
        "  - models.maker = makers.name\n"  # the column already has a declared key: that one stays
        "  - cars_data.nope = car_names.MakeId\n"  # no such column: nothing
        "  - cars_data.secret = car_names.Model\n")
    with Database.open(db_path) as plain:
        assert [str(fk) for fk in plain.schema().foreign_keys] == ["models.maker -> makers.maker_id"]
    engine = sqlweave.connect(db_path, llm=FakeLLM(["SELECT 1"]), knowledge=tmp_path / "cars.yaml")
    keys = [str(fk) for fk in engine.db.schema().foreign_keys]
    assert keys == ["models.maker -> makers.maker_id", "cars_data.Id -> car_names.MakeId",
                    "cars_data.secret -> car_names.Model"]
    assert "FOREIGN KEY (Id) REFERENCES car_names(MakeId)" in render_create_table(engine.db.schema())
    from sqlweave.agent.tools import Toolkit

    assert Toolkit(engine.db).find_shortest_path("cars_data.Horsepower", "car_names.Model").tables == (
        "cars_data", "car_names")
    engine.close()
    # under an access policy, a join that names a hidden column adds no key
    policy = {"hidden_columns": ["cars_data.secret"]}
    hidden = sqlweave.connect(db_path, llm=FakeLLM(["SELECT 1"]), knowledge=tmp_path / "cars.yaml", policy=policy)
    assert [str(fk) for fk in hidden.db.schema().foreign_keys] == ["models.maker -> makers.maker_id",
                                                                   "cars_data.Id -> car_names.MakeId"]
    hidden.close()
