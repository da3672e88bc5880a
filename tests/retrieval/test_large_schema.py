"""Schemas larger than the model's context: fitted to the schema budget by retrieval, never cut off or sent whole.

A synthetic database of 300 tables (30 domains x 10 tables, each table joined to the one before it) goes
through the presets with the fake model; the dense retrievers are switched off so the tests stay fast.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from sqlweave.database import Database
from sqlweave.db.render import render_schema
from sqlweave.schema import Schema
from sqlweave.llm.base import Message
from sqlweave.llm.fake import FakeLLM
from sqlweave.pipeline import Pipeline, State
from sqlweave.presets import build_pipeline
from sqlweave.retrieval.budget_fit import fit_to_budget, rank_schema
from sqlweave.stages import RenderSchema
from sqlweave.stages.render_schema import DEFAULT_CONTEXT_TOKENS, DEFAULT_RESERVE_TOKENS, _table_costs, schema_budget

DOMAINS = ["retail", "logistics", "banking", "hospital", "school", "airline", "hotel", "library", "museum", "farm",
           "factory", "theater", "stadium", "restaurant", "insurance", "telecom", "energy", "mining", "shipping",
           "media", "gaming", "fitness", "travel", "realty", "legal", "charity", "election", "weather", "transit", "zoo"]
ENTITIES = ["customer", "order", "product", "employee", "supplier", "invoice", "payment", "branch", "region",
            "contract"]
QUESTION = "How many invoices does each logistics supplier have?"


def build_large(path: Path, wide_columns: int = 0, domains: list[str] = DOMAINS) -> Path:
    con = sqlite3.connect(path)
    for d in domains:
        for i, e in enumerate(ENTITIES):
            cols = [f"{e}_id INTEGER PRIMARY KEY", "name TEXT", f"{e}_code TEXT", "created_on TEXT", "amount REAL",
                    "status TEXT"]
            fk = ""
            if i:
                parent = ENTITIES[i - 1]
                cols.append(f"{parent}_id INTEGER")
                fk = f", FOREIGN KEY ({parent}_id) REFERENCES {d}_{parent}({parent}_id)"
            con.execute(f"CREATE TABLE {d}_{e} ({', '.join(cols)}{fk})")
            for r in range(3):
                row = [r + 1, f"{d} {e} {r}", f"{e[:2].upper()}{r}", f"2024-01-0{r + 1}", 10.5 * r, "open"]
                con.execute(f"INSERT INTO {d}_{e} VALUES ({','.join('?' * (len(row) + bool(i)))})",
                            row + ([r + 1] if i else []))
    if wide_columns:
        con.execute(f"CREATE TABLE sensor_reading (reading_id INTEGER PRIMARY KEY, "
                    f"{', '.join(f'measure_{k} REAL' for k in range(wide_columns))}, humidity REAL)")
        con.execute(f"INSERT INTO sensor_reading VALUES ({','.join('1' * (wide_columns + 2))})")
    con.commit()
    con.close()
    return path


@pytest.fixture(scope="module")
def large_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_large(tmp_path_factory.mktemp("large") / "large.sqlite")


@pytest.fixture(scope="module")
def large(large_db: Path) -> tuple[Database, Schema]:
    """The database, and its schema read once (reading 300 tables takes seconds)."""
    db = Database.open(large_db)
    return db, db.schema()


@pytest.fixture(autouse=True)
def _no_dense(monkeypatch: pytest.MonkeyPatch) -> None:
    # "auto" retrievers use the dense ones when the embedding extra is installed; BM25 alone keeps these fast.
    monkeypatch.setattr("sqlweave.retrieval.dense.embeddings_available", lambda: False)


def fake(answers=(), n_ctx: int = 4096, sql: str = "SELECT COUNT(*) FROM logistics_invoice") -> FakeLLM:
    llm = FakeLLM(answers, responder=lambda m, o: f"```sql\n{sql}\n```")
    llm.n_ctx = n_ctx  # the context a backend states (the embedded model's n_ctx)
    return llm


def prompt_tokens(llm: FakeLLM, messages) -> int:
    return sum(llm.count_tokens(m.content)[0] for m in messages)


def test_default_on_300_tables_fits_the_budget_and_says_what_was_left_out(large) -> None:
    db, s = large
    llm = fake()
    answer = build_pipeline("default").run(QUESTION, db, llm, schema=s)
    assert answer.ok and answer.result.rows == ((3,),)
    notes = next(e for e in answer.trace if e.stage == "render_schema").notes
    assert notes["tables_total"] == 300 and 0 < notes["tables_kept"] < 300
    assert len(notes["tables_left_out"]) == 300 - notes["tables_kept"]
    assert notes["schema_tokens"] <= notes["schema_budget"] < notes["schema_tokens_full"]
    assert 4096 - DEFAULT_RESERVE_TOKENS - 300 < notes["schema_budget"] < 4096 - DEFAULT_RESERVE_TOKENS
    prompt = llm.calls[0][0][1].content
    # the tables the question names are shown, with the key that joins them
    assert "CREATE TABLE logistics_invoice" in prompt and "CREATE TABLE logistics_supplier" in prompt
    assert "FOREIGN KEY (supplier_id) REFERENCES logistics_supplier(supplier_id)" in prompt
    assert "logistics_invoice" not in notes["tables_left_out"]
    # the whole prompt fits the context, with the reserve to spare
    assert prompt_tokens(llm, llm.calls[0][0]) <= 4096 - DEFAULT_RESERVE_TOKENS


def test_budget_is_the_context_less_the_rest_of_the_prompt(large) -> None:
    db, s = large
    state = State(QUESTION, db, fake(n_ctx=8192), s, s)
    derived = schema_budget(state)
    assert 8192 - DEFAULT_RESERVE_TOKENS - 400 < derived < 8192 - DEFAULT_RESERVE_TOKENS
    assert schema_budget(state, context=16384) == derived + 8192
    assert schema_budget(state, budget=1000) == 1000
    RenderSchema(budget=1000)(state)
    assert state.rendered_schema.tokens <= 1000 and state._notes["schema_budget"] == 1000
    # a backend that states no context is given DEFAULT_CONTEXT_TOKENS (32768)
    plain = State(QUESTION, db, FakeLLM(), s, s)
    assert schema_budget(plain) == derived + DEFAULT_CONTEXT_TOKENS - 8192


def test_named_tables_and_value_columns_come_first(large) -> None:
    db, s = large
    measure = lambda sub: render_schema(sub).tokens  # noqa: E731
    costs = _table_costs(State(QUESTION, db, fake(), s, s), s, "create_table")
    fit = fit_to_budget(s, "Which museum branches and farm invoices are open?", 1400, measure,
                        also_keep=[("zoo_contract", "status")], table_costs=costs)
    kept = set(fit.schema.table_names)
    # every word of museum_invoice's name is in the question too
    assert set(fit.kept_first) == {"museum_branch", "museum_invoice", "farm_branch", "farm_invoice", "zoo_contract"}
    # museum_payment joins museum_branch to museum_invoice, farm_payment the farm's two (the budget has room for
    # both, whichever domain BM25 ranks first)
    assert set(fit.kept_first) | {"museum_payment", "farm_payment"} <= kept
    assert fit.tokens_after <= 1400 and fit.tables_left_out and fit.retrievers == ("bm25",)
    assert set(fit.tables_left_out) | kept == set(s.table_names)
    ranking = rank_schema(s, QUESTION)
    assert ranking.tables[:2] in (("logistics_invoice", "logistics_supplier"), ("logistics_supplier", "logistics_invoice"))


def test_a_table_too_wide_for_the_budget_keeps_its_key_and_best_columns(tmp_path: Path) -> None:
    db = Database.open(build_large(tmp_path / "wide.sqlite", wide_columns=400, domains=DOMAINS[:2]))
    s = db.schema()
    state = State("What is the average humidity of each sensor reading?", db, fake(), s, s)
    RenderSchema(budget=600)(state)
    notes = state._notes
    assert state.rendered_schema.tokens <= 600
    assert "sensor_reading" in notes["kept_first"]
    shown = state.schema_fit.schema.table("sensor_reading")
    assert {"reading_id", "humidity"} <= set(shown.column_names) and len(shown.columns) < 402
    assert any(c.startswith("sensor_reading.measure_") for c in notes["columns_left_out"])


def test_no_room_at_all_gives_an_empty_schema_not_an_error(large) -> None:
    db, s = large
    fit = fit_to_budget(s, QUESTION, 3, lambda sub: render_schema(sub).tokens,
                        table_costs=_table_costs(State(QUESTION, db, fake(), s, s), s, "create_table"))
    assert fit.schema.tables == () and len(fit.tables_left_out) == 300 and fit.tokens_after == 0


def test_correction_stays_within_the_context(large) -> None:
    db, s = large
    llm = fake(["```sql\nSELECT COUNT(*) FROM logistics_invoice WHERE no_such_column = 1\n```"] * 2)
    answer = build_pipeline("default").run(QUESTION, db, llm, schema=s)
    assert any(e.stage == "correct" and e.calls for e in answer.trace)
    for messages, _ in llm.calls:
        assert prompt_tokens(llm, messages) < 4096


def test_pruned_presets_approximate_and_prune_the_fitted_schema(large) -> None:
    db, s = large
    llm = fake()
    answer = build_pipeline("pruned-values").run(QUESTION, db, llm, schema=s)
    assert answer.ok
    approx = next(e for e in answer.trace if e.stage == "approximate").notes
    prune = next(e for e in answer.trace if e.stage == "prune_schema").notes
    assert approx["schema_tokens"] <= approx["schema_budget"] and approx["tables_left_out"]
    assert prune["columns_total"] < sum(len(t.columns) for t in s.tables)
    assert set(prune["tables"]) <= {t for t in s.table_names if t not in approx["tables_left_out"]}
    for messages, _ in llm.calls:
        assert prompt_tokens(llm, messages) < 4096


def test_after_pruning_the_grammar_allows_the_pruned_tables_not_the_approximations_fit(large) -> None:
    """Pruning narrows the prompt schema; the fit the approximation made of the whole schema is not what the
    generation prompt shows, so the grammar (and the schema links, and a vote's other views) must not use it."""
    db, s = large
    llm = fake()
    answer = build_pipeline("pruned+grammar").run(QUESTION, db, llm, schema=s)
    approx = next(e for e in answer.trace if e.stage == "approximate").notes
    pruned = set(next(e for e in answer.trace if e.stage == "prune_schema").notes["tables"])
    fitted = {t for t in s.table_names if t not in approx["tables_left_out"]}
    grammar = next(o.grammar for _, o in llm.calls if o.grammar)
    in_grammar = {t for t in s.table_names if f'"{t}"' in grammar}
    assert pruned and in_grammar == pruned and fitted - pruned  # the fit had tables the pruned prompt does not show


class _PlainRender:
    """The render stage before schema budgets: the whole prompt schema, always."""

    name = "render_schema"

    def __call__(self, state: State) -> None:
        state.rendered_schema = render_schema(state.prompt_schema, "create_table", count=state.llm.count_tokens)


@pytest.mark.parametrize("preset", ["default", "pruned"])
def test_a_schema_that_fits_renders_byte_identically(singer_db: Path, preset: str) -> None:
    db = Database.open(singer_db)
    for n_ctx in (8192, 4096):  # the embedded model's context, and half of it
        prompts = []
        for pipe in (build_pipeline(preset), build_pipeline(preset).replace_stage("render_schema", _PlainRender())):
            llm = fake(n_ctx=n_ctx, sql="SELECT COUNT(*) FROM singer")
            pipe.run("How many singers are there?", db, llm)
            prompts.append([[(m.role, m.content) for m in messages] for messages, _ in llm.calls])
        assert prompts[0] == prompts[1]
    s = db.schema()
    state = State("How many singers are there?", db, fake(), s, s)
    RenderSchema()(state)
    assert state.rendered_schema == render_schema(s, count=state.llm.count_tokens) and state.schema_fit is None


def test_spider_dev_schemas_fit_the_embedded_models_budget() -> None:
    """Every Spider dev database renders whole within the budget the embedded model's context gives."""
    root = Path(__file__).resolve().parents[3] / "shared" / "data" / "spider" / "database"
    paths = sorted(root.glob("*/*.sqlite")) if root.exists() else []
    dev = {"battle_death", "car_1", "concert_singer", "course_teach", "cre_Doc_Template_Mgt", "dog_kennels",
           "employee_hire_evaluation", "flight_2", "museum_visit", "network_1", "orchestra", "pets_1", "poker_player",
           "real_estate_properties", "singer", "student_transcripts_tracking", "tvshow", "voter_1", "world_1"}
    paths = [p for p in paths if p.stem in dev]
    if not paths:
        pytest.skip("Spider is not in ../shared/data/spider")
    for path in paths:
        db = Database.open(path)
        s = db.schema()
        state = State("Which of them has the most rows, and what are their names?", db, fake(n_ctx=8192), s, s)
        RenderSchema()(state)
        assert state.schema_fit is None and state.rendered_schema == render_schema(s, count=state.llm.count_tokens)


def test_local_backend_refuses_a_prompt_longer_than_its_context(monkeypatch: pytest.MonkeyPatch) -> None:
    from sqlweave.llm import local

    class Tokenizer:
        def tokenize(self, text: bytes, add_bos: bool = False, special: bool = False) -> list[int]:
            return list(range(len(text) // 4))

        def create_chat_completion(self, **_: object) -> dict:
            raise AssertionError("llama.cpp must not see a prompt longer than its context")

    monkeypatch.setattr(local.LocalLLM, "llama", property(lambda self: Tokenizer()))
    llm = local.LocalLLM("1.5b", n_ctx=512)
    with pytest.raises(local.ContextLengthError) as err:
        llm.complete([Message("system", "Write SQL."), Message("user", "CREATE TABLE t (x INT);\n" * 200)])
    assert err.value.code == "context_length" and err.value.details["n_ctx"] == 512
    assert not err.value.retryable and err.value.hint
