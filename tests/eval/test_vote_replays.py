"""benchmarks/votes/vote_weigh.py and vote_views.py: a run's votes replayed with other weights and other candidates."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"

OLDEST = "SELECT Name FROM singer ORDER BY Age DESC LIMIT 1"  # Joe Sharp, the gold answer
YOUNGEST = "SELECT Name FROM singer ORDER BY Age ASC LIMIT 1"
COUNTRY = "SELECT Country FROM singer ORDER BY Age DESC LIMIT 1"


def load(name: str):
    """A fresh copy of the benchmark script ``name``, from whichever area of ``benchmarks/`` holds it."""
    (path,) = BENCH.glob(f"*/{name}.py")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def spider(tmp_path: Path, singer_db: Path) -> Path:
    folder = tmp_path / "spider" / "database" / "concert_singer"
    if not folder.exists():
        folder.mkdir(parents=True)
        shutil.copy(singer_db, folder / "concert_singer.sqlite")
    return tmp_path / "spider"


def call(user: str, *outputs: str) -> dict:
    return {"messages": [{"role": "system", "content": "..."}, {"role": "user", "content": user}],
            "outputs": [f"```sql\n{o}\n```" for o in outputs]}


def write_run(folder: Path, votes: list[dict]) -> Path:
    """One question per vote: the answer before voting is the youngest (wrong); ``votes`` give the vote stage."""
    folder.mkdir()
    rows, traces = [], []
    for i, vote in enumerate(votes):
        rows.append({"id": f"q{i}", "db_id": "concert_singer", "question": "Who is the oldest singer?",
                     "gold": OLDEST, "match": vote.pop("match")})
        traces.append({"id": f"q{i}", "trace": [{"stage": "rewrite", "sql": YOUNGEST, "notes": {}, "calls": []},
                                                {"stage": "vote_if_unsure", "sql": None, **vote}]})
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "traces.jsonl").write_text("".join(json.dumps(t) + "\n" for t in traces))
    return folder


def test_weighing_trades_the_question_likelihood_against_the_group_size(tmp_path: Path, singer_db: Path) -> None:
    create = "CREATE TABLE singer (...)\nQuestion: Who is the oldest singer?"
    # groups: the youngest (answer + 2 samples = 3), the oldest (1 sample): sizes [3, 1]
    votes = [{"match": False, "calls": [call(create, YOUNGEST, YOUNGEST, OLDEST)],
              "notes": {"confidence": 0.5, "groups": [3, 1], "selector": {"logp": [-10.0, -8.5]}}},
             # the likelihood favours the oldest by 3 nats: more than 2 ln 3 = 2.2
             {"match": True, "calls": [call(create, YOUNGEST, YOUNGEST, OLDEST)],
              "notes": {"confidence": 0.7, "groups": [3, 1], "selector": {"logp": [-11.0, -8.0]}}},
             # a vote the replay cannot rebuild (the run says other group sizes) keeps the run's answer
             {"match": True, "calls": [call(create, YOUNGEST, OLDEST, OLDEST)],
              "notes": {"confidence": 0.5, "groups": [3, 1], "selector": {"logp": [-1.0, -9.0]}}}]
    run = write_run(tmp_path / "run", votes)
    row = load("vote_weigh").weigh(run, spider(tmp_path, singer_db))
    right = {a: r["right"] for a, r in row["alphas"].items()}
    assert (row["reviewed"], row["left_out"]) == (2, 1)
    # likelihood alone: both oldest (2 + the kept one); support 2: only the second; majority: neither
    assert (right["0.0"], right["2.0"], right["1000.0"]) == (3, 2, 1)
    # replayed for default (votes only below 0.6): the second answer stays the youngest
    below = load("vote_weigh").weigh(run, spider(tmp_path, singer_db), floor=0.6)
    assert below["alphas"]["0.0"]["right"] == 2


def test_priors_are_replayed_at_support_2(tmp_path: Path, singer_db: Path) -> None:
    create = "CREATE TABLE singer (...)\nQuestion: Who is the oldest singer?"
    # groups: the youngest (the answer before voting + 1 sample), the oldest (2 samples): sizes [2, 2], the
    # oldest likelier by 1 nat; both queries read one table
    votes = [{"match": True, "calls": [call(create, OLDEST, OLDEST, YOUNGEST)],
              "notes": {"confidence": 0.5, "groups": [2, 2], "selector": {"logp": [-8.0, -7.0]}}}]
    row = load("vote_weigh").weigh(write_run(tmp_path / "run", votes), spider(tmp_path, singer_db))
    greedy = row["priors"]["holds the answer before voting"]
    assert row["alphas"]["2.0"]["right"] == 1
    assert (greedy["-1.0"], greedy["0.5"], greedy["1.0"], greedy["2.0"]) == (1, 1, 0, 0)  # a tie keeps the first
    assert set(row["priors"]["tables beyond the fewest"].values()) == {1}


def test_prose_first_answers_are_replayed_at_a_lower_weight(tmp_path: Path, singer_db: Path) -> None:
    create = "CREATE TABLE singer (...)\nQuestion: Who is the oldest singer?"
    prose = f"Let's walk through the question. The oldest singer has the largest age.\n```sql\n{OLDEST}\n```"
    # groups: the youngest (the answer before voting + 1 sample), the oldest (2 samples, one opening with prose):
    # sizes [2, 2], the oldest likelier by 0.4 nat
    sampled = {**call(create, YOUNGEST, OLDEST), "outputs": [f"```sql\n{YOUNGEST}\n```", f"```sql\n{OLDEST}\n```",
                                                            prose]}
    votes = [{"match": False, "calls": [sampled],
              "notes": {"confidence": 0.5, "groups": [2, 2], "selector": {"logp": [-8.0, -7.6]}}}]
    weights = load("vote_weigh").weigh(write_run(tmp_path / "run", votes), spider(tmp_path, singer_db))["prose_weights"]
    # weight 1: 2 ln 2 - 7.6 beats 2 ln 2 - 8.0, the oldest wins (the run, marked wrong here, counts it fixed)
    assert (weights["1.0"]["right"], weights["1.0"]["fixed"]) == (1, ["q0"])
    # 0.75: the oldest weighs 1.75, 2 ln 1.75 - 7.6 = -6.48 still beats -6.61
    assert weights["0.75"]["right"] == 1
    # 0.5: 2 ln 1.5 - 7.6 = -6.79 loses to -6.61, the youngest stays
    assert (weights["0.5"]["right"], weights["0.5"]["fixed"], weights["0.5"]["broken"]) == (0, [], [])
    assert weights["0.25"]["right"] == 0


def test_views_are_told_apart_and_replayed_as_subsets(tmp_path: Path, singer_db: Path) -> None:
    vote = {"match": False, "notes": {"confidence": 0.5}, "calls": [
        call("CREATE TABLE singer (...)", YOUNGEST, YOUNGEST, COUNTRY, COUNTRY),   # the vote's 4 samples
        call("singer(Name TEXT, ...)", OLDEST),                                   # compact view, greedy
        call("singer(Name TEXT, ...)", OLDEST), call("singer(Name TEXT, ...)", OLDEST),  # and 2 samples
        call("# Table: singer\n[...]", OLDEST),                                   # M-Schema view, greedy
    ]}
    views = load("vote_views")
    assert [views.view_of(c) for c in vote["calls"]] == ["s", "c", "c", "c", "m"]
    run = write_run(tmp_path / "run", [vote])
    subsets = views.replay(run, spider(tmp_path, singer_db))["subsets"]
    assert subsets["s4 (best)"]["right"] == 0 and subsets["s4 (best)"]["oracle_ex"] == 0.0
    assert subsets["s4 + c1"]["right"] == 0 and subsets["s4 + c1"]["oracle_ex"] == 100.0  # 3 youngest against 1
    assert subsets["s4 + c1+2"]["right"] == 0  # 3 oldest against 3 youngest: a tie keeps the answer's group
    assert subsets["s4 + c1+2 + m1+2"]["right"] == 1  # the M-Schema answer makes it 4 against 3


def test_the_examples_view_is_replayed_with_bests_weighing(tmp_path: Path, singer_db: Path) -> None:
    few_shot = "CREATE TABLE singer (...)\nExamples from other databases:\n...\nQuestion: Who is the oldest singer?"
    # groups of the whole vote: the youngest (answer + 2 samples = 3), the country (2 samples), the oldest (the
    # few-shot view's greedy answer and its 2 samples = 3); the reviewer favours the oldest
    vote = {"match": True, "notes": {"confidence": 0.5, "groups": [3, 3, 2], "selector": {"logp": [-9.0, -7.0, -9.0]}},
            "calls": [call("CREATE TABLE singer (...)", YOUNGEST, YOUNGEST, COUNTRY, COUNTRY),
                      call(few_shot, OLDEST), call(few_shot, OLDEST), call(few_shot, OLDEST),
                      {"messages": [{"role": "user", "content": "SQL: ...\nQuestion:"}], "outputs": []}]}
    views = load("vote_views")
    assert views.view_of(vote["calls"][1]) == "e"
    subsets = views.replay(write_run(tmp_path / "run", [vote]), spider(tmp_path, singer_db),
                           subsets=views.EXAMPLE_SUBSETS)["subsets"]
    best, greedy, full = subsets["s4 (best)"], subsets["s4 + e1"], subsets["s4 + e1+2 (+examples)"]
    assert (best["right"], best["weighed_right"], best["oracle_ex"]) == (0, 0, 0.0)
    # one few-shot answer scores 2 ln 1 - 7 = -7.0, below the youngest's 2 ln 3 - 9 = -6.8: the youngest stays
    assert (greedy["right"], greedy["weighed_right"], greedy["oracle_ex"]) == (0, 0, 100.0)
    # with its samples the oldest is as large as the youngest (3 and 3): a majority keeps the earlier group, the
    # weighing takes the likelier
    assert (full["right"], full["weighed_right"]) == (0, 1)
    assert subsets["e1 (examples greedy instead)"]["right"] == 1 and full["generations_per_vote"] == 7


def test_a_votes_groups_are_written_with_their_traits(tmp_path: Path, singer_db: Path) -> None:
    """benchmarks/votes/vote_features.py: one line per rebuilt vote, a group per result, in the stage's order."""
    from sqlweave.eval.runner import GoldCache

    create = "CREATE TABLE singer (...)\nQuestion: Who is the oldest singer?"
    votes = [{"match": False, "calls": [call(create, YOUNGEST, YOUNGEST, OLDEST)],
              "notes": {"confidence": 0.5, "groups": [3, 1], "selector": {"logp": [-10.0, -8.5]}}},
             {"match": False, "calls": [call(create, YOUNGEST, OLDEST, OLDEST)],  # the run noted other groups
              "notes": {"confidence": 0.5, "groups": [3, 1], "selector": {"logp": [-1.0, -9.0]}}}]
    run = write_run(tmp_path / "run", votes)
    features, oracle = load("vote_features"), load("vote_oracle")
    db = oracle.spider_db({}, spider(tmp_path, singer_db), "concert_singer")
    results = {i: {**r, "hardness": "medium"} for i, r in oracle.scored(run).items()}
    first, second = (features.group_lines(e, results[e["id"]], db, GoldCache()) for e in oracle.traces(run))
    assert second is None
    groups = first["groups"]
    assert [(g["size"], g["greedy"], g["logp"], g["right"], g["tables"]) for g in groups] == [
        (3, True, -10.0, False, 1), (1, False, -8.5, True, 1)]
    assert groups[1]["rows"] == [["'Joe Sharp'"]] and first["candidates"] == 4 and first["failed"] == 0


def test_coder_scores_are_replayed_alone_per_token_and_with_the_reviewer(tmp_path: Path, singer_db: Path) -> None:
    create = "CREATE TABLE singer (...)\nQuestion: Who is the oldest singer?"
    # sizes [3, 1]; reviewer prefers the youngest by 1 nat, the coder the oldest by 6 nats (3 against 6 tokens)
    votes = [{"match": False, "calls": [call(create, YOUNGEST, YOUNGEST, OLDEST)],
              "notes": {"confidence": 0.5, "groups": [3, 1],
                        "selector": {"logp": [-8.0, -9.0], "coder": [-9.0, -3.0], "coder_tokens": [3, 6]}}}]
    row = load("vote_weigh").weigh(write_run(tmp_path / "run", votes), spider(tmp_path, singer_db), coder=True)
    modes = row["modes"]
    assert modes["reviewer"]["0.0"] == 0 and modes["coder"]["0.0"] == 1
    assert modes["coder per token"]["0.0"] == 1  # -9.0 / 3 = -3.0 against -3.0 / 6 = -0.5: the oldest
    assert modes["reviewer + coder"]["0.0"] == 1  # -17 against -12
    assert modes["reviewer + coder"]["8.0"] == 0  # 8 ln 3 = 8.8 nats of support outweigh the 5 between them


def test_the_oracle_counts_a_vote_that_held_a_right_candidate(tmp_path: Path, singer_db: Path) -> None:
    oracle = load("vote_oracle")
    # John Nizinik as written (the oldest singer with a concert), Joe Sharp once its needless join is dropped, as
    # the vote does
    joined = ("SELECT T1.Name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.Singer_ID = T2.Singer_ID "
              "ORDER BY T1.Age DESC LIMIT 1")
    votes = [{"match": False, "calls": [call("Q", YOUNGEST, COUNTRY)], "notes": {"groups": [2, 1]}},  # none right
             {"match": False, "calls": [call("Q", YOUNGEST, joined)], "notes": {"groups": [2, 1]}},  # one, rewritten
             {"match": True, "calls": [call("Q", OLDEST, OLDEST)], "notes": {"groups": [2, 1]}}]
    row = oracle.oracle(write_run(tmp_path / "run", votes), spider(tmp_path, singer_db))
    assert (row["voted"], row["voted_right"], row["voted_any_candidate_right"]) == (3, 1, 2)
    assert row["ex"] == pytest.approx(33.3) and row["oracle_ex"] == pytest.approx(66.7)
    # on the questions another run also answered (--common): the second and third only
    row = oracle.oracle(tmp_path / "run", spider(tmp_path, singer_db), only={"q1", "q2"})
    assert (row["questions"], row["voted"], row["voted_any_candidate_right"], row["oracle_ex"]) == (2, 2, 2, 100.0)


def test_the_oracle_counts_what_another_run_would_add(tmp_path: Path, singer_db: Path) -> None:
    oracle = load("vote_oracle")
    votes = [{"match": False, "calls": [call("Q", YOUNGEST, COUNTRY)], "notes": {"groups": [2, 1]}},  # none right
             {"match": False, "calls": [call("Q", YOUNGEST, OLDEST)], "notes": {"groups": [2, 1]}},  # one right
             {"match": False, "calls": [call("Q", YOUNGEST, COUNTRY)], "notes": {"groups": [2, 1]}},
             {"match": True, "calls": [call("Q", OLDEST, OLDEST)], "notes": {"groups": [2, 1]}}]
    run = write_run(tmp_path / "run", votes)
    # the other run: answers right on the first, second and fourth questions; wrong on the third, whose vote held
    # a right candidate all the same
    other = write_run(tmp_path / "other", [
        {"match": True, "calls": [call("Q", OLDEST)], "notes": {"groups": [2]}},
        {"match": True, "calls": [call("Q", OLDEST)], "notes": {"groups": [2]}},
        {"match": False, "calls": [call("Q", YOUNGEST, OLDEST)], "notes": {"groups": [2, 1]}},
        {"match": True, "calls": [call("Q", OLDEST)], "notes": {"groups": [2]}}])
    row = oracle.adds(run, other, spider(tmp_path, singer_db))
    assert (row["wrong"], row["other_answer_right_there"], row["other_any_candidate_right_there"]) == (3, 2, 3)
    assert row["no_candidate_right_there"] == ["q0", "q2"] and row["other_ex"] == 75.0
    # answers alone (no traces in the other run): only the first question is new
    (other / "traces.jsonl").unlink()
    row = oracle.adds(run, other, spider(tmp_path, singer_db))
    assert (row["other_any_candidate_right_there"], row["no_candidate_right_there"]) == (2, ["q0"])


def test_another_runs_greedy_answer_is_replayed_as_one_more_candidate(tmp_path: Path, singer_db: Path) -> None:
    oracle = load("vote_oracle")
    votes = [  # the answer before voting is the youngest (wrong) in each
        # youngest 2 against oldest 1, the oldest likelier by 1 nat: 2 ln 2 - 8 beats -7, the youngest stays
        {"match": False, "calls": [call("Q", YOUNGEST, OLDEST)],
         "notes": {"groups": [2, 1], "selector": {"logp": [-8.0, -7.0]}}},
        {"match": False, "calls": [call("Q", YOUNGEST, COUNTRY)],
         "notes": {"groups": [2, 1], "selector": {"logp": [-8.0, -9.0]}}},
        {"match": True, "calls": [call("Q", OLDEST, OLDEST)],
         "notes": {"groups": [2, 1], "selector": {"logp": [-8.0, -9.0]}}},
        {"match": False, "calls": [call("Q", YOUNGEST)], "notes": {"groups": [2]}}]
    run = write_run(tmp_path / "run", votes)
    other = tmp_path / "other"
    other.mkdir()  # answers only, no traces: each prediction is the greedy answer
    (other / "results.jsonl").write_text("".join(
        json.dumps({"id": f"q{i}", "match": sql == OLDEST, "prediction": sql}) + "\n"
        for i, sql in enumerate((OLDEST, OLDEST, COUNTRY, "SELECT nothing FROM nowhere"))))
    row = oracle.one_more(run, other, spider(tmp_path, singer_db))
    # q0: the oldest joins its group, 2 ln 2 - 7 now wins; q1: the oldest alone, unscored, could fix; q2: the
    # country alone could break; q3: no working answer
    assert (row["votes"], row["joined"], row["fixed"], row["broken"]) == (4, 1, ["q0"], [])
    assert (row["own_group"], row["own_group_could_fix"], row["own_group_could_break"]) == (2, ["q1"], ["q2"])
    assert row["no_working_answer"] == 1


def test_vote_openings_counts_answers_by_how_they_open(tmp_path: Path, singer_db: Path) -> None:
    """benchmarks/votes/vote_openings.py: sampled and greedy answers split by their opening, each scored against the gold
    query; a question whose only right reading opened with prose is counted apart."""
    openings = load("vote_openings")
    assert [openings.opening(t) for t in ("```sql\nSELECT 1\n```", "  select 1", "WITH a AS (SELECT 1) SELECT 1",
                                          "Let's walk through the question.")] == ["query"] * 3 + ["prose"]
    sampled = {"messages": [{"role": "user", "content": "q"}], "options": {"temperature": 0.8, "n": 3},
               "completion_tokens": 60,
               "outputs": [f"```sql\n{YOUNGEST}\n```", f"Let's see. The oldest comes first.\n```sql\n{OLDEST}\n```",
                           "Let's walk through the question and the database."]}
    greedy = {"messages": [{"role": "user", "content": "r"}], "options": {}, "completion_tokens": 10,
              "outputs": [f"```sql\n{YOUNGEST}\n```"]}
    review = {"messages": [{"role": "user", "content": "s"}], "options": {"continuation": "Who?"}, "outputs": ["-3"]}
    run = write_run(tmp_path / "run", [{"match": False, "calls": [sampled, greedy, review], "notes": {"groups": [3, 1]}}])
    counts = openings.openings(run, spider(tmp_path, singer_db))
    kinds = {row["kind"]: row for row in counts["kinds"]}
    assert (kinds["sampled, prose first"]["answers"], kinds["sampled, prose first"]["with_a_query"],
            kinds["sampled, prose first"]["right"]) == (2, 1, 1)
    assert (kinds["sampled, query first"]["answers"], kinds["sampled, query first"]["right"]) == (1, 0)
    assert kinds["greedy, query first"]["answers"] == 1 and kinds["greedy, prose first"]["answers"] == 0
    assert kinds["greedy, query first"]["mean_output_tokens"] == 10.0  # the reviewer's score is not an answer
    assert counts["only_prose_right"] == {"right": 0, "missed": 1}


def test_soft_support_lets_a_near_group_lend_its_votes():
    """vote_soft: a group whose result shares rows with a larger group's gains from it; at beta 0 the choice is
    best's (size and likelihood), and a far group lends nothing."""
    soft = load("vote_soft")

    def group(size: int, logp: float, rows: list[list[str]], sql: str, right: bool) -> dict:
        return {"size": size, "logp": logp, "rows": rows, "sqls": [sql], "right": right}

    near_a = group(2, -30.0, [["1"], ["2"], ["3"]], "SELECT id FROM t WHERE x > 1", True)
    near_b = group(2, -29.0, [["1"], ["2"]], "SELECT id FROM t WHERE x > 2", False)
    far = group(3, -40.0, [["9"]], "SELECT COUNT(*) FROM u", False)
    vote = {"groups": [far, near_a, near_b]}
    assert soft.choose(vote, "rows", 0.0) is near_b  # 2 ln 2 - 29 beats 2 ln 2 - 30 and 2 ln 3 - 40
    chosen = soft.choose({"groups": [far, near_b, near_a]}, "rows", 1.0)
    assert chosen is near_b  # each near group lends the other 2 * 2/3: still a tie of sizes, the likelier wins
    lonely = group(2, -29.5, [["7"]], "SELECT name FROM v", False)
    assert soft.choose({"groups": [far, lonely, near_a, near_b]}, "rows", 0.0) is near_b
    assert soft.choose({"groups": [far, near_a, lonely]}, "rows", 0.0) is lonely
    assert soft.choose({"groups": [far, near_a, lonely, group(1, -60.0, [["1"], ["2"], ["3"]], "SELECT 1", False)]},
                       "rows", 1.0) is near_a  # an identical result lends its whole size
    assert soft.jaccard(soft.cells(near_a), soft.cells(near_b)) == pytest.approx(2 / 3)
    assert soft.query_parts("SELECT id FROM t WHERE x > 1")["table t"] == 1
    assert soft.query_parts("SELECT (((") == {}  # unreadable: shares nothing
    assert soft.SIMILARITIES["ast"](near_a, near_b) == pytest.approx(7 / 9)  # all but the literals 1 and 2
