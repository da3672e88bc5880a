from dataclasses import replace
from pathlib import Path

import pytest

import sqlweave
from sqlweave.database import Database
from sqlweave.errors import (
    ConfigurationError,
    InvalidQuestionError,
    LLMTimeoutError,
    NoSQLInOutputError,
    PipelineError,
    RefusedStatementError,
)
from sqlweave.llm import FakeLLM
from sqlweave.pipeline import Pipeline
from sqlweave.presets import build_pipeline
from sqlweave.stages import ExecuteSQL, GenerateSQL, RenderSchema
from sqlweave.stages.correct import ErrorCorrection
from sqlweave.stages.prune_schema import PruneSchema
from sqlweave.stages.revise import RevisionChain
from sqlweave.stages.vote import SelfConsistency
from tests.conftest import file_digest


def test_zero_shot_end_to_end_with_trace(singer_db: Path) -> None:
    llm = FakeLLM(["Here you go:\n```sql\nSELECT count(*) FROM singer;\n```"])
    engine = sqlweave.connect(singer_db, llm=llm, pipeline="zero-shot")
    answer = engine.ask("How many singers are there?")
    assert answer.ok and answer.sql == "SELECT count(*) FROM singer"
    assert answer.result.rows == ((6,),)
    assert [e.stage for e in answer.trace] == ["check_question", "render_schema", "generate", "extract_sql", "execute"]
    gen = answer.trace[2]
    assert len(gen.calls) == 1 and gen.usage.prompt_tokens > 0
    # The prompt holds the schema first and the question last (prefix-cache friendly).
    user = gen.calls[0].messages[-1].content
    assert "CREATE TABLE singer" in user and user.rstrip().endswith("How many singers are there?")
    assert answer.trace[1].notes["tables"] == 4
    assert answer.trace[3].notes["schema_issues"] == []
    d = answer.as_dict()
    assert d["rows"] == [[6]] and d["model_calls"] == 1 and len(d["trace"]) == 5


def test_model_drop_table_is_refused_and_file_unchanged(singer_db: Path) -> None:
    before = file_digest(singer_db)
    engine = sqlweave.connect(singer_db, llm=FakeLLM(["```sql\nDROP TABLE singer;\n```"]))
    answer = engine.run("delete all singers")
    assert isinstance(answer.error, RefusedStatementError)
    # Nothing after extraction ran it; repair, correction and voting looked and left it refused, with no model call.
    stages = [e.stage for e in answer.trace]
    assert answer.result is None and stages[-4:] == ["extract_sql", "repair", "correct", "vote_if_unsure"]
    assert answer.trace[-2].notes["outcome"] == "refused" and answer.trace[-1].notes == {"skipped": True}
    assert len(engine.llm.calls) == 1
    engine.llm.push("DELETE FROM singer; SELECT 1")
    with pytest.raises(RefusedStatementError):
        engine.ask("delete all singers")
    engine.close()
    assert file_digest(singer_db) == before


def test_ask_raises_typed_error_with_answer_attached(singer_db: Path) -> None:
    engine = sqlweave.connect(singer_db, llm=FakeLLM(["I am not sure what you mean.", "Still not sure."] * 2),
                              pipeline="default")
    with pytest.raises(NoSQLInOutputError) as info:
        engine.ask("How many singers?")
    failed = info.value.details["answer"]
    assert failed.trace[3].error.startswith("no_sql_in_output")
    correct = next(e for e in failed.trace if e.stage == "correct")
    assert correct.notes["outcome"] == "no_sql"
    # The vote on the failed answer (confidence 0) found the fake model out of answers: the answer's own error stands.
    assert failed.trace[-1].stage == "vote_if_unsure" and "sampling_failed" in failed.trace[-1].notes
    assert failed.trace[2].calls[0].outputs == ("I am not sure what you mean.",)


def test_llm_timeout_is_reported(singer_db: Path) -> None:
    engine = sqlweave.connect(singer_db, llm=FakeLLM([LLMTimeoutError("the model did not finish")]))
    answer = engine.run("How many singers?")
    assert isinstance(answer.error, LLMTimeoutError) and answer.sql is None


@pytest.mark.parametrize("question", ["", "   ", "x" * 3000])  # other languages: tests/test_language.py
def test_bad_questions_cost_no_model_call(singer_db: Path, question: str) -> None:
    llm = FakeLLM(["SELECT 1"])
    answer = sqlweave.connect(singer_db, llm=llm).run(question)
    assert isinstance(answer.error, InvalidQuestionError)
    assert llm.calls == []


def test_execution_error_keeps_the_sql(singer_db: Path) -> None:
    answer = sqlweave.connect(singer_db, llm=FakeLLM(["SELECT nme FROM singer"]), pipeline="zero-shot").run("names?")
    assert answer.sql == "SELECT nme FROM singer"
    assert answer.error is not None and answer.error.code == "unknown_column"
    assert answer.trace[3].notes["schema_issues"] == ["unknown column nme"]


def test_default_pipeline_repairs_names_without_asking_the_model_again(singer_db: Path) -> None:
    llm = FakeLLM(["SELECT nme FROM singers"])
    answer = sqlweave.connect(singer_db, llm=llm).run("Singer names?")
    assert answer.ok and answer.sql == "SELECT Name FROM singer" and answer.result.row_count == 6
    repair = next(e for e in answer.trace if e.stage == "repair")
    assert len(llm.calls) == 1 and repair.notes["changes"] == ["table singers -> singer", "nme -> Name"]


def test_pipeline_editing() -> None:
    p = build_pipeline("zero-shot")
    assert [s.name for s in p.without("check_question").stages][0] == "render_schema"
    q = p.replace_stage("generate", GenerateSQL(max_tokens=10))
    assert q.stages[2].max_tokens == 10 and p.stages[2].max_tokens != 10

    class Note:
        name = "note"

        def __call__(self, state):
            state.note(seen=state.sql)

    r = p.insert_after("extract_sql", Note())
    assert [s.name for s in r.stages][4] == "note"
    with pytest.raises(PipelineError, match="no stage"):
        p.without("vote")
    with pytest.raises(ConfigurationError, match="unknown pipeline"):
        build_pipeline("magic")


def test_presets_extend_with_plus_stages(singer_db: Path) -> None:
    p = build_pipeline("zero-shot+repair+correct-failed")
    assert p.name == "zero-shot+repair+correct-failed"
    assert [s.name for s in p.stages][-3:] == ["execute", "repair", "correct"]
    assert p.stages[-1].fix_empty is False  # type: ignore[attr-defined]
    v = build_pipeline("repair+values")
    assert [s.name for s in v.stages][:2] == ["check_question", "select_values"]
    pv = build_pipeline("pruned+values")
    names = [s.name for s in pv.stages]
    assert names.index("select_values") == names.index("prune_schema") - 1  # its columns survive pruning
    with pytest.raises(ConfigurationError, match="unknown stage 'polish'") as err:
        build_pipeline("repair+polish")
    assert "revise" in err.value.hint
    with pytest.raises(ConfigurationError, match="unknown pipeline 'magic'"):
        build_pipeline("magic+repair")
    # the added stage really runs: a wrong name is repaired after a plain zero-shot answer
    answer = build_pipeline("zero-shot+repair").run("Singer names?", Database.open(singer_db),
                                                    FakeLLM(["SELECT nme FROM singers"]))
    assert answer.ok and answer.sql == "SELECT Name FROM singer"


def test_conventions_reach_the_generation_prompt_and_its_votes(singer_db: Path) -> None:
    llm = FakeLLM(responder=lambda m, o: "SELECT Name FROM singer")
    answer = build_pipeline("best+conventions", vote_below=1.0).run("Singer names?", Database.open(singer_db), llm)
    assert answer.ok
    # the vote's own samples (the few-shot view asks its own prompt, with worked pairs instead of instructions)
    sampled = [c for c in llm.calls if c[1].temperature > 0 and "examples of questions" not in c[0][0].content]
    assert sampled and all("ORDER BY ... LIMIT n" in c[0][0].content for c in llm.calls[:1] + sampled)
    plain = FakeLLM(responder=lambda m, o: "SELECT Name FROM singer")
    build_pipeline("default").run("Singer names?", Database.open(singer_db), plain)
    assert "ORDER BY ... LIMIT n" not in plain.calls[0][0][0].content
    with pytest.raises(ConfigurationError, match="no zero-shot generate stage"):
        build_pipeline("agent+conventions")


def test_stage_order_mistakes_fail_when_the_pipeline_is_built() -> None:
    with pytest.raises(PipelineError, match="stage 'execute' of pipeline 'broken' needs sql") as err:
        Pipeline("broken", (ExecuteSQL(),))
    assert "'extract_sql'" in err.value.hint
    zs = build_pipeline("zero-shot")
    with pytest.raises(PipelineError, match="needs raw_output"):  # extraction before generation
        Pipeline("swapped", (zs.stages[0], zs.stages[1], zs.stages[3], zs.stages[2], zs.stages[4]))
    with pytest.raises(PipelineError, match="'correct' .* needs result"):  # correction with nothing executed
        Pipeline("early", zs.stages[:4] + (ErrorCorrection(),))
    with pytest.raises(PipelineError):
        zs.without("extract_sql")  # variants are checked too
    assert [s.name for s in build_pipeline("zero-shot+repair+correct").stages][-2:] == ["repair", "correct"]


def test_every_stage_declares_its_contract() -> None:
    from sqlweave.pipeline import Stage
    from sqlweave.presets import PRESETS

    for name in PRESETS:
        for stage in build_pipeline(name, examples="train.json").stages:
            assert isinstance(stage, Stage), stage
            assert isinstance(stage.recovers, bool) and isinstance(stage.provides, tuple), stage.name
            assert isinstance(getattr(stage, "requires", ()), tuple), stage.name
            with pytest.raises(AttributeError):  # the name is read-only
                stage.name = "other"  # type: ignore[misc]


@pytest.mark.parametrize("make,message", [
    (lambda: build_pipeline("default", exampels="train.json"), "unknown pipeline option 'exampels'"),
    (lambda: PruneSchema(method="hybird"), "unknown method 'hybird'"),
    (lambda: ErrorCorrection(max_rounds=-5), "max_rounds must be a number >= 0"),
    (lambda: SelfConsistency(n=0), "n must be a number >= 1"),
    (lambda: RenderSchema(style="xml"), "unknown style 'xml'"),
    (lambda: GenerateSQL(prompt="no_such_template"), "no prompt template"),
    (lambda: RevisionChain(skip_if_confident=1.5), "skip_if_confident must be a number between 0 and 1"),
])
def test_wrong_options_fail_when_the_pipeline_is_built(make, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message) as err:
        make()
    assert err.value.hint


@pytest.mark.parametrize("preset, shows", [("zero-shot-compact", "singer("), ("zero-shot-mschema", "# Table: singer")])
def test_schema_style_presets(singer_db: Path, preset: str, shows: str) -> None:
    llm = FakeLLM(["SELECT count(*) FROM stadium"])
    a = sqlweave.connect(singer_db, llm=llm, pipeline=preset).ask("How many stadiums?")
    assert a.result.rows == ((9,),)
    assert shows in llm.calls[0][0][-1].content and "CREATE TABLE" not in llm.calls[0][0][-1].content


def test_presets_are_data_base_recipes_or_a_preset_with_stages() -> None:
    from sqlweave.presets import ADDONS, PRESETS, Recipe

    assert all(isinstance(v, (Recipe, str)) for v in PRESETS.values())
    spelled = {n: v for n, v in PRESETS.items() if isinstance(v, str)}
    assert len(spelled) >= 10 and "default" in spelled
    for name, spelling in spelled.items():
        base, *addons = spelling.split("+")
        assert base in PRESETS and addons and all(a in ADDONS for a in addons), name
        built = build_pipeline(name, examples="train.json")
        same = build_pipeline(spelling, examples="train.json")
        assert built.name == name and built.stages == same.stages, name
    assert build_pipeline("default").stages == build_pipeline(
        "zero-shot+repair+correct-failed+rewrite+vote-if-unsure+name-keys").stages
    # a key shown in place of a name is named last, after the vote has chosen the answer
    assert [s.name for s in build_pipeline("default").stages][-2:] == ["vote_if_unsure", "name_keys"]


def test_best_is_default_voting_on_more_answers_with_a_few_shot_view() -> None:
    best, default, more = build_pipeline("best"), build_pipeline("default"), build_pipeline("vote-more")
    assert best.stages[:-2] == default.stages[:-2] == more.stages[:-2]
    assert best.stages[-1] == default.stages[-1] == more.stages[-1] == build_pipeline("zero-shot+name-keys").stages[-1]
    best_vote, default_vote, more_vote = (p.stage("vote_if_unsure") for p in (best, default, more))
    assert (best_vote.name, best_vote.only_below) == ("vote_if_unsure", 0.9)
    assert default_vote.only_below == 0.6 and more_vote.only_below == 0.9
    # best's vote also asks with 4 pairs of the bundled pool; vote-more's and default's do not
    assert (best_vote.examples, Path(best_vote.examples_pool).name) == (4, "spider-train-pool.json.gz")
    assert more_vote.examples == default_vote.examples == 0
    assert replace(best_vote, examples=0, examples_pool=None, view_samples=more_vote.view_samples) == more_vote
    # both weigh every result group by the question's likelihood and by its size
    for vote in (best_vote, default_vote):
        assert (vote.select, vote.margin, vote.support) == ("review", None, 2.0)


FANNED = ("SELECT SUM(p.price) FROM products AS p JOIN order_items AS i ON i.product_id = p.product_id")


def test_an_answer_that_a_join_counts_twice_carries_a_caution() -> None:
    from sqlweave.db.demo import demo_database_path

    db = Database.open(demo_database_path())
    try:
        answer = build_pipeline("default").run("What is the price of the products of all order items?", db, FakeLLM([FANNED]))
        assert answer.ok and answer.sql == FANNED
        assert answer.cautions == ("SUM(p.price) counts each products row once per order_items row joined to it "
                                   "(fan-out): aggregate products before the join, or keep the join as a filter "
                                   "(p.product_id IN (SELECT product_id FROM order_items))",)
        assert answer.as_dict()["cautions"] == list(answer.cautions)
        clean = build_pipeline("default").run("How many products?", db, FakeLLM(["SELECT count(*) FROM products"]))
        assert clean.cautions == () and clean.as_dict()["cautions"] == []
        failed = build_pipeline("zero-shot").run("Sum?", db, FakeLLM([FANNED.replace("p.price", "p.nothing")]))
        assert not failed.ok and failed.cautions == ()  # an answer that failed has nothing to caution about
    finally:
        db.close()


def test_engine_execute_reads_another_dialect(singer_db: Path) -> None:
    engine = sqlweave.connect(singer_db, llm=FakeLLM())
    result = engine.execute("SELECT name FROM singer WHERE EXTRACT(YEAR FROM '2014-05-01') = 2014 AND age::int > 50",
                            read="postgres")
    assert result.rows == (("Joe Sharp",),) and "EXTRACT" not in result.sql
    engine.close()


def test_a_schema_budget_reaches_every_stage_that_shows_the_schema() -> None:
    from sqlweave.errors import ConfigurationError

    for name in ("default", "pruned", "best"):
        budgets = [s.budget for s in build_pipeline(name, schema_budget=512).stages if hasattr(s, "budget")]
        assert budgets and set(budgets) == {512}, name
    assert {s.budget for s in build_pipeline("pruned").stages if hasattr(s, "budget")} == {None}
    for bad in (0, -5, 1.5, "2048", True):
        with pytest.raises(ConfigurationError, match="schema_budget") as err:
            build_pipeline("default", schema_budget=bad)  # type: ignore[arg-type]
        assert err.value.hint


def test_vote_below_moves_every_vote_spent_below_a_confidence() -> None:
    assert build_pipeline("best", vote_below=0.9).stage("vote_if_unsure").only_below == 0.9
    assert build_pipeline("default", vote_below=0.3).stage("vote_if_unsure").only_below == 0.3
    assert build_pipeline("default").stage("vote_if_unsure").only_below == 0.6  # untouched without it
    with pytest.raises(ConfigurationError, match="no vote spent below"):
        build_pipeline("vote", vote_below=0.5)  # votes on every answer: no floor to move


def test_vote_options_set_every_vote_stage_and_are_checked() -> None:
    vote = build_pipeline("best", vote={"temperature": 1.0, "n": 8, "select": "majority"}).stage("vote_if_unsure")
    assert (vote.temperature, vote.n, vote.select, vote.only_below) == (1.0, 8, "majority", 0.9)
    warm = build_pipeline("best", vote={"temperature": 1}).stage("vote_if_unsure")
    assert warm.temperature == 1  # a whole number is a float
    assert build_pipeline("best").stage("vote_if_unsure").temperature == 0.8  # untouched without it
    with pytest.raises(ConfigurationError, match="unknown vote option 'views'"):
        build_pipeline("best", vote={"views": "compact"})
    with pytest.raises(ConfigurationError, match="vote option n takes a whole number"):
        build_pipeline("best", vote={"n": "eight"})
    with pytest.raises(ConfigurationError, match="vote option n takes a whole number"):
        build_pipeline("best", vote={"n": True})
    with pytest.raises(ConfigurationError, match="temperature"):
        build_pipeline("best", vote={"temperature": 3.0})  # the stage's own range check
    with pytest.raises(ConfigurationError, match="no vote stage"):
        build_pipeline("zero-shot", vote={"n": 3})


# --- warm-up ---------------------------------------------------------------------------------------------------


def _first_generation(llm: FakeLLM) -> tuple:
    return next(messages for messages, options in llm.calls if options.n == 1 and options.temperature == 0.0)


def test_a_warm_up_evaluates_the_first_prompt_up_to_where_the_question_begins() -> None:
    from sqlweave.db.demo import demo_database_path

    question = "How many orders were shipped to Canada?"
    with Database.open(demo_database_path()) as db:
        warm = FakeLLM(keeps_prompts=True)
        assert build_pipeline("default").warm_up(db, warm) is True and len(warm.prefills) == 1
        assert warm.calls == []  # evaluated, nothing asked or answered
        asked = FakeLLM(responder=lambda *_: "SELECT COUNT(*) FROM orders")
        build_pipeline("default").run(question, db, asked)
    (system, user), (real_system, real_user) = warm.prefills[0], _first_generation(asked)
    assert system == real_system
    stable = real_user.content[:real_user.content.index(question)]
    assert len(stable) > 1000 and user.content.startswith(stable)  # the whole schema: all but the question
    assert "Canada" not in user.content


def test_no_warm_up_where_the_prompt_depends_on_the_question_or_the_model_keeps_nothing() -> None:
    from sqlweave.db.demo import demo_database_path
    from sqlweave.presets import with_schema_budget

    with Database.open(demo_database_path()) as db:
        keeping = FakeLLM(keeps_prompts=True)
        assert with_schema_budget(build_pipeline("default"), 200).warm_up(db, keeping) is False  # fitted per question
        assert build_pipeline("default").warm_up(db, FakeLLM()) is False  # nothing kept: nothing done
        asks_first = Pipeline("simplify-first", (*build_pipeline("default+simplify").stages,))
        assert asks_first.warm_up(db, keeping) is False  # a stage asks the model before generating
        assert keeping.prefills == [] and keeping.calls == []


def test_an_unknown_preset_names_the_shipped_ones_and_where_to_see_all() -> None:
    from sqlweave.presets import MEASURED

    with pytest.raises(ConfigurationError) as info:
        build_pipeline("defualt")
    hint = info.value.hint
    assert hint.startswith("Did you mean 'default'? ")
    assert f"The shipped presets are {', '.join(MEASURED)};" in hint and "`sqlweave presets`" in hint
    assert "rag-desem" not in hint  # research variants are not offered by name
    with pytest.raises(ConfigurationError) as info:
        build_pipeline("zzz")
    assert not info.value.hint.startswith("Did you mean")


def test_one_answer_schema_at_every_door() -> None:
    """The HTTP API, MCP's ask, `ask --json` and Answer.as_dict give an answer the same fields."""
    from sqlweave.answer_schema import AnswerSchema
    from sqlweave.db.demo import demo_database_path
    from sqlweave.mcp import AskResult
    from sqlweave.server.models import AnswerOut

    common = set(AnswerSchema.model_fields)
    assert common <= set(AnswerOut.model_fields) and common <= set(AskResult.model_fields)
    assert set(AnswerOut.model_fields) - common == {"answer_id", "conversation_id", "turn", "chart", "timings"}
    assert set(AskResult.model_fields) - common == {"database", "max_rows"}
    answer = build_pipeline("zero-shot").run("How many products?", Database.open(demo_database_path()),
                                             FakeLLM(["SELECT COUNT(*) FROM products"]))
    assert set(answer.as_dict()) == common
    assert answer.as_dict()["rows"] == [[40]] and answer.as_dict()["columns"] == ["COUNT(*)"]
