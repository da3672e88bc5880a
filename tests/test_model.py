"""Tests that run the real embedded model (Qwen2.5-Coder GGUF on llama.cpp). Marked ``model``: about a minute."""

from pathlib import Path

import pytest

import sqlweave
from sqlweave.db.demo import demo_database_path
from sqlweave.errors import ConfigurationError
from sqlweave.llm.base import Message

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def local_llm():
    from sqlweave.llm.local import LocalLLM

    return LocalLLM("1.5b")


def test_real_model_counts_singers(singer_db: Path, local_llm) -> None:
    answer = sqlweave.connect(singer_db, llm=local_llm, cache=False).ask("How many singers are there?")
    assert answer.result.rows == ((6,),)
    gen = next(e for e in answer.trace if e.stage == "generate")
    assert gen.usage.prompt_tokens > 200 and gen.usage.completion_tokens > 0 and gen.seconds > 0


def test_real_model_on_the_demo_database(local_llm) -> None:
    answer = sqlweave.connect(demo_database_path(), llm=local_llm, cache=False).ask("How many customers are there?")
    assert answer.result.rows == ((60,),)


def test_real_model_refusal_leaves_database_unchanged(singer_db: Path, local_llm) -> None:
    from tests.conftest import file_digest

    before = file_digest(singer_db)
    answer = sqlweave.connect(singer_db, llm=local_llm, cache=False).run("Delete all singers from the database.")
    # Whatever the model wrote, nothing was deleted: either refused, or a harmless read.
    assert answer.error is None or answer.error.code in {"refused_statement", "no_sql_in_output", "sql_parse"}
    assert file_digest(singer_db) == before


def test_exact_token_counts_and_timeout(local_llm) -> None:
    n, exact = local_llm.count_tokens("SELECT count(*) FROM singer")
    assert exact and 4 <= n <= 12
    from sqlweave.errors import LLMTimeoutError

    with pytest.raises(LLMTimeoutError):
        local_llm.complete([Message("user", "Write a very long essay about databases.")], max_tokens=2000, timeout_s=0.5)
    # The model still answers after an interrupted call.
    assert "1" in local_llm.complete([Message("user", "Reply with the digit 1 only.")], max_tokens=5).text


def test_small_model_answers(singer_db: Path) -> None:
    from sqlweave.llm.local import LocalLLM

    answer = sqlweave.connect(singer_db, llm=LocalLLM("0.5b"), cache=False).run("How many singers are there?")
    assert answer.sql is not None and "singer" in answer.sql.lower()


def test_prompt_states_are_cached_compactly_and_resumed(local_llm, monkeypatch) -> None:
    """Alternating prompt kinds resume from their own cached prefix (not from scratch), and a resumed
    state gives the same greedy answer as the first evaluation."""
    llama = local_llm.llama
    assert llama.cache is not None
    schema = "\n".join(f"CREATE TABLE t{i} (id INTEGER PRIMARY KEY, name TEXT, value REAL);" for i in range(12))
    sql_prompt = [Message("system", "You write SQLite. Answer with SQL only."), Message("user", f"{schema}\nCount the rows of t3.")]
    explain = [Message("system", "You explain SQL in one sentence."), Message("user", f"{schema}\nSELECT name FROM t1")]
    loads: list[int] = []
    original = type(llama).load_state
    monkeypatch.setattr(type(llama), "load_state", lambda self, state: (loads.append(state.n_tokens), original(self, state))[1])
    first = local_llm.complete(sql_prompt, temperature=0.0, max_tokens=24).text
    local_llm.complete(explain, temperature=0.0, max_tokens=16)
    again = local_llm.complete(sql_prompt, temperature=0.0, max_tokens=24).text
    assert again == first and "t3" in first.lower()
    assert loads and max(loads) > 200  # the SQL prompt's own evaluated state was loaded back
    states = llama.cache.in_memory()
    assert states and all(s.scores.shape[0] == 1 for s in states)  # no n_batch x vocabulary logits copy
    assert all(s.llama_state_size < 64_000 * s.n_tokens + 4_000_000 for s in states)


def test_a_new_process_reuses_the_schema_prompt_evaluated_before(tmp_path: Path) -> None:
    """A second model load (as in a new process: its own model store, the same cache folder) reads the evaluated
    prompt prefix from disk instead of evaluating the schema again, and answers the same."""
    from sqlweave.config import Settings
    from sqlweave.llm.local import LocalLLM
    from sqlweave.resources import Resources, Store

    settings = Settings.from_env()
    settings = Settings(tmp_path / "cache", settings.model_dir)
    schema = sqlweave.connect(demo_database_path(), llm="fake").db.schema()
    from sqlweave.db.render import render_schema

    prompt = render_schema(schema).text
    answers, from_disk = [], []
    for _ in range(2):
        llm = LocalLLM("1.5b", n_ctx=2048, resources=Resources(settings, models=Store()))
        out = llm.complete([Message("system", "Write one SQLite query."),
                            Message("user", f"{prompt}\nQuestion: How many customers are there?")],
                           max_tokens=24, temperature=0.0)
        answers.append(out.text)
        from_disk.append(llm.llama.cache.loaded_from_disk)
        llm.llama.close()
    assert from_disk == [0, 1] and answers[0] == answers[1]
    assert len(list((tmp_path / "cache" / "prompt-states").rglob("*.npz"))) == 1


def test_real_model_scores_choices_from_one_forward_pass(local_llm) -> None:
    def p_a(a: str, b: str) -> float:
        ask = [Message("system", "Answer with one letter."),
               Message("user", f"Which word is the name of a colour? A: {a}  B: {b}\nReply with A or B.")]
        out = local_llm.complete(ask, choices=("A", "B"))
        first, second = (float(t) for t in out.texts)
        assert abs(first + second - 1.0) < 1e-4 and 0.0 < first < 1.0
        return first

    # averaged over both orders, whatever the model's taste for a letter, the colour is held right
    assert (p_a("blue", "table") + 1.0 - p_a("table", "blue")) / 2 > 0.5
    with pytest.raises(ConfigurationError, match="distinct tokens"):
        local_llm.complete([Message("user", "x")], choices=("the cat", "the dog"))


def test_real_model_scores_an_answer_it_is_made_to_give(local_llm) -> None:
    def logp(sql: str, question: str) -> float:
        ask = [Message("system", "Write the question a SQL query answers."),
               Message("user", f"Query: {sql}\nWrite the question this query answers.")]
        out = local_llm.complete(ask, continuation=question)
        assert out.usage.completion_tokens == len(local_llm.llama.tokenize(question.encode(), add_bos=False))
        return float(out.texts[0])

    count, oldest = "How many singers are there?", "What is the name of the oldest singer?"
    by_count = logp("SELECT count(*) FROM singer", count), logp("SELECT count(*) FROM singer", oldest)
    by_age = logp("SELECT name FROM singer ORDER BY age DESC LIMIT 1", count), logp(
        "SELECT name FROM singer ORDER BY age DESC LIMIT 1", oldest)
    assert all(x < 0 for x in by_count + by_age)
    assert by_count[0] > by_count[1] and by_age[1] > by_age[0]  # each query makes its own question likelier


def test_real_model_under_the_schema_grammar_writes_only_a_query_of_the_schema(singer_db: Path, local_llm) -> None:
    answer = sqlweave.connect(singer_db, llm=local_llm, pipeline="default+grammar", cache=False).ask(
        "What are the names of the singers older than 30?")
    generate = next(e for e in answer.trace if e.stage == "generate")
    raw = generate.calls[0].outputs[0]
    assert raw.lstrip().upper().startswith("SELECT") and "```" not in raw  # no fence, no prose around it
    assert answer.ok and "singer" in answer.sql.lower() and len(answer.result.rows) > 0


def test_a_warm_up_lets_the_first_question_resume_from_the_schema_and_answers_the_same(local_llm, monkeypatch,
                                                                                       tmp_path: Path) -> None:
    """After ``Engine.warm_up`` the first question's generation loads a state holding all of its prompt but the
    question's own words, and its SQL is the SQL of the same question asked of a model that keeps no state."""
    from sqlweave.llm.local import LocalLLM

    import sqlite3

    path = tmp_path / "parts.sqlite"  # a schema no earlier test evaluated
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE part (id INTEGER PRIMARY KEY, name TEXT, supplier TEXT, weight_kg REAL, price REAL)")
        con.executemany("INSERT INTO part VALUES (?, ?, ?, ?, ?)",
                        [(i, f"part {i}", ["Acme", "Bolt Co", "Cogs Ltd"][i % 3], i * 0.5, i * 3.0) for i in range(40)])
    question = "How many parts cost more than 50?"
    llama = local_llm.llama
    engine = sqlweave.connect(path, llm=local_llm, cache=False)
    assert engine.warm_up() is True
    evaluated: list[int] = []
    original = type(llama).eval
    monkeypatch.setattr(type(llama), "eval", lambda self, tokens: (evaluated.append(len(tokens)), original(self, tokens))[1])
    answer = engine.ask(question)
    generate = next(e for e in answer.trace if e.stage == "generate")
    assert generate.calls[0].usage.prompt_tokens > 200
    assert evaluated and evaluated[0] < 40  # the prompt's first evaluation: the question's words, not the schema
    plain = sqlweave.connect(path, llm=LocalLLM("1.5b", state_cache_mb=0), cache=False)
    assert plain.warm_up() is False  # a model that keeps no state has nothing to warm
    assert plain.ask(question).sql == answer.sql


def test_the_embedded_model_stops_a_long_prompt_at_the_questions_deadline_and_when_cancelled() -> None:
    """llama.cpp's abort callback ends a prompt's evaluation within a fraction of a second of the deadline (a
    5,000-token prompt takes over a minute to evaluate here), and the model answers the next call as before."""
    import threading
    import time

    from sqlweave.budget import Deadline, within
    from sqlweave.errors import LLMTimeoutError, QuestionCancelledError
    from sqlweave.llm.base import Message

    from sqlweave.llm.local import LocalLLM

    llm = LocalLLM("1.5b", state_cache_mb=0)
    assert llm.complete([Message("user", "Say OK.")], max_tokens=3).text  # loaded
    long = [Message("user", " ".join(f"column_{i} INTEGER," for i in range(700)) + "\nHow many columns?")]
    start = time.monotonic()
    with within(Deadline.start(2.0)), pytest.raises(LLMTimeoutError):
        llm.complete(long, max_tokens=50)
    assert time.monotonic() - start < 2.0 + 2.0
    cancel = threading.Event()
    threading.Timer(1.0, cancel.set).start()
    start = time.monotonic()
    with within(Deadline.start(None, cancel)), pytest.raises(QuestionCancelledError):
        llm.complete(long, max_tokens=50)
    assert time.monotonic() - start < 1.0 + 1.5
    out = llm.complete([Message("user", "Reply with the word yes.")], max_tokens=5, temperature=0.0)
    assert "yes" in out.text.lower()


def test_samples_of_one_call_decode_together_and_leave_the_context_as_a_call_does(local_llm) -> None:
    """Four samples of one prompt decode as parallel sequences: each is a real answer, seeded (a rerun repeats
    them, another seed changes them), each begins with the token the same seed draws one after another, a stop
    string ends one, and afterwards a greedy call answers exactly as it did before the samples."""
    from sqlweave.llm.local import LocalLLM

    prompt = [Message("user", "Write a SQLite query that counts the rows of table singer, in a ```sql block.")]
    greedy = local_llm.complete(prompt, max_tokens=40).text
    together = local_llm.complete(prompt, n=4, temperature=0.8, max_tokens=40, seed=3)
    assert len(together.texts) == 4 and all("singer" in t.lower() for t in together.texts)
    assert together.usage.completion_tokens > 4
    assert local_llm.complete(prompt, n=4, temperature=0.8, max_tokens=40, seed=3).texts == together.texts
    assert local_llm.complete(prompt, n=4, temperature=0.8, max_tokens=40, seed=50).texts != together.texts
    # one token each: the tokens the same seeds draw one after another
    one_by_one = LocalLLM("1.5b", parallel_samples=False)
    firsts = local_llm.complete(prompt, n=4, temperature=1.5, max_tokens=1, seed=7).texts
    assert firsts == one_by_one.complete(prompt, n=4, temperature=1.5, max_tokens=1, seed=7).texts
    stopped = local_llm.complete(prompt, n=2, temperature=0.8, max_tokens=40, seed=3, stop=("```",))
    assert all("```" not in t for t in stopped.texts)
    assert local_llm.complete(prompt, max_tokens=40).text == greedy


def test_samples_decoded_together_stop_at_the_questions_deadline() -> None:
    import time

    from sqlweave.budget import Deadline, within
    from sqlweave.errors import LLMTimeoutError
    from sqlweave.llm.local import LocalLLM

    llm = LocalLLM("1.5b", state_cache_mb=0)
    prompt = [Message("user", "Write a very long essay about databases.")]
    assert llm.complete(prompt, max_tokens=2).text  # loaded, prompt evaluated
    start = time.monotonic()
    with within(Deadline.start(3.0)), pytest.raises(LLMTimeoutError):
        llm.complete(prompt, n=4, temperature=0.8, max_tokens=2000, seed=1)
    assert time.monotonic() - start < 3.0 + 2.0
    assert "yes" in llm.complete([Message("user", "Reply with the word yes.")], max_tokens=5).text.lower()
