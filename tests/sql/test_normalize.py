"""AST normalisation (ASTReS section 3) and the edit-script similarity between normalised ASTs."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from sqlglot import exp

from sqlweave.errors import SQLParseError
from sqlweave.sql.normalize import normalize_ast, normalized_sql
from sqlweave.sql.similarity import ast_similarity

SPIDER_TRAIN = Path(__file__).resolve().parents[3] / "shared" / "data" / "spider" / "train.json"


@pytest.mark.parametrize(
    "sql,expected",
    [
        # ASTReS Table 7, steps 1-2: lower-case, aliases resolved (tables and the projection alias).
        ("SELECT T1.Category, COUNT(*) AS Num FROM Products AS T1 JOIN Orders AS T2 ON T1.id = T2.pid "
         "GROUP BY T1.Category ORDER BY Num ASC",
         "SELECT products.category, COUNT(*) FROM products JOIN orders ON products.id = orders.pid "
         "GROUP BY products.category ORDER BY COUNT(*) ASC"),
        # One source: the qualifier is unnecessary and dropped.
        ("SELECT T1.Name FROM Singer AS T1 WHERE T1.Age > 30", "SELECT name FROM singer WHERE age > 30"),
        ("SELECT singer.name FROM singer", "SELECT name FROM singer"),
        # Each subquery resolves its own aliases; a correlated reference takes the outer table's name.
        ("SELECT T1.name FROM emp AS T1 WHERE T1.pay > (SELECT avg(T2.pay) FROM emp AS T2 WHERE T2.dept = T1.dept)",
         "SELECT name FROM emp WHERE pay > (SELECT AVG(pay) FROM emp WHERE dept = emp.dept)"),
        ("SELECT T1.a FROM x AS T1 JOIN y AS T2 ON T1.id = T2.id WHERE T1.a NOT IN "
         "(SELECT T1.a FROM z AS T1 JOIN w AS T2 ON T1.k = T2.k)",
         "SELECT x.a FROM x JOIN y ON x.id = y.id WHERE NOT x.a IN (SELECT z.a FROM z JOIN w ON z.k = w.k)"),
        # A derived table's alias goes, and so do references through it.
        ("SELECT sub.c FROM (SELECT count(*) AS c FROM y) AS sub", "SELECT c FROM (SELECT COUNT(*) FROM y)"),
        # Double-quoted values are values (SQLite's reading of Spider's gold SQL), quoted names stay names.
        ('SELECT "Home Town" FROM singer WHERE name = "Joe" AND city IN ("A", "B")',
         """SELECT "home town" FROM singer WHERE name = 'Joe' AND city IN ('A', 'B')"""),
    ],
)
def test_aliases_and_names(sql: str, expected: str) -> None:
    assert normalized_sql(sql, mask_values=False, mask_identifiers=False) == expected


def test_masking_is_optional_and_separate() -> None:
    sql = "SELECT T1.name FROM singer AS T1 WHERE T1.age > 30 AND T1.country = 'France' LIMIT 3"
    assert normalized_sql(sql) == "SELECT _ FROM _ WHERE _ > ? AND _ = ? LIMIT ?"
    assert normalized_sql(sql, mask_identifiers=False) == "SELECT name FROM singer WHERE age > ? AND country = ? LIMIT ?"
    assert normalized_sql(sql, mask_values=False) == "SELECT _ FROM _ WHERE _ > 30 AND _ = 'France' LIMIT 3"
    assert normalized_sql("SELECT T1.* FROM t AS T1") == "SELECT * FROM _"
    assert normalized_sql("WITH a AS (SELECT x FROM y) SELECT count(*) FROM a") == \
        "WITH _ AS (SELECT _ FROM _) SELECT COUNT(*) FROM _"


def test_a_given_tree_is_not_changed() -> None:
    tree = normalize_ast("SELECT T1.name FROM singer AS T1", mask_identifiers=False, mask_values=False)
    before = tree.sql()
    normalize_ast(tree)
    assert tree.sql() == before and isinstance(normalize_ast(tree), exp.Select)


def test_parse_errors_are_typed() -> None:
    with pytest.raises(SQLParseError):
        normalize_ast("SELECT FROM WHERE (")
    with pytest.raises(SQLParseError, match="one statement"):
        normalized_sql("SELECT 1; SELECT 2")


def test_similarity_basics() -> None:
    a = "SELECT T1.name FROM singer AS T1 JOIN concert AS T2 ON T1.id = T2.sid WHERE T2.year = 2014"
    b = "SELECT title FROM album AS x JOIN artist AS y ON x.aid = y.id WHERE y.name = 'Abba'"
    assert ast_similarity(a, a) == 1.0
    assert ast_similarity(a, b) == 1.0  # same shape once names and values are masked
    assert ast_similarity(normalize_ast(a), normalize_ast(b)) == 1.0  # trees are accepted too
    near = "SELECT name FROM singer WHERE age > 30"
    far = "SELECT count(*) FROM a UNION SELECT count(*) FROM b"
    assert 0.0 < ast_similarity(near, far) < ast_similarity(near, "SELECT name FROM singer WHERE age > 30 LIMIT 1") < 1
    assert ast_similarity("SELECT name FROM singer", "SELEC name FROM (") == 0.0
    assert ast_similarity("DROP (", "SELECT 1") == 0.0


def test_similarity_ranks_the_approximation_shape_first() -> None:
    approx = "SELECT name FROM singer ORDER BY age DESC LIMIT 1"
    pool = ["SELECT count(*) FROM pets WHERE age > 3",
            "SELECT title FROM book ORDER BY year LIMIT 1",
            "SELECT T1.name FROM a AS T1 JOIN b AS T2 ON T1.id = T2.aid GROUP BY T1.id ORDER BY count(*) DESC LIMIT 1"]
    ranked = sorted(pool, key=lambda s: -ast_similarity(approx, s))
    assert ranked[0] == pool[1]


@pytest.mark.skipif(not SPIDER_TRAIN.exists(), reason="Spider data not available")
def test_normalisation_is_stable_and_similarity_nearly_symmetric_on_spider() -> None:
    queries = [e["query"] for e in json.loads(SPIDER_TRAIN.read_text())]
    rng = random.Random(4)
    for sql in rng.sample(queries, 300):
        norm = normalized_sql(sql)
        assert normalized_sql(norm) == norm  # what the pool stores normalises to itself
    gaps = []
    for _ in range(150):
        a, b = (normalize_ast(q) for q in rng.sample(queries, 2))
        s_ab, s_ba = ast_similarity(a, b), ast_similarity(b, a)
        assert 0.0 <= s_ab <= 1.0
        gaps.append(abs(s_ab - s_ba))
    assert max(gaps) <= 0.15 and sum(gaps) / len(gaps) <= 0.03
