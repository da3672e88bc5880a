import pytest

from sqlweave.errors import RefusedStatementError, SQLParseError
from sqlweave.sql.classify import ensure_read_only, is_read_only

READS = [
    "SELECT count(*) FROM singer",
    "select name from singer where age > 30 order by age desc limit 3",
    "WITH t AS (SELECT 1 AS x) SELECT x FROM t",
    "SELECT a FROM t1 UNION SELECT b FROM t2",
    "SELECT a FROM t1 INTERSECT SELECT a FROM t2",
    "SELECT a FROM t1 EXCEPT SELECT a FROM t2",
    "SELECT * FROM (SELECT name FROM singer) AS s",
    "SELECT name FROM singer WHERE singer_id IN (SELECT singer_id FROM singer_in_concert)",
    "SELECT count(*) FROM singer;",
    "SELECT 'DROP TABLE singer' AS text",
]

WRITES = [
    ("DROP TABLE singer", "DROP"),
    ("DELETE FROM singer", "DELETE"),
    ("UPDATE singer SET age = 1", "UPDATE"),
    ("INSERT INTO singer (name) VALUES ('x')", "INSERT"),
    ("CREATE TABLE x (a INT)", "CREATE"),
    ("ALTER TABLE singer ADD COLUMN x INT", "ALTER"),
    ("ATTACH DATABASE '/tmp/x.db' AS x", "ATTACH"),
    ("PRAGMA journal_mode = DELETE", "PRAGMA"),
    ("PRAGMA writable_schema = 1", "PRAGMA"),
    ("SELECT * INTO backup FROM singer", "INTO"),
    ("SELECT 1; DROP TABLE singer", "2 statements"),
    ("SELECT 1; SELECT 2", "2 statements"),
    ("REPLACE INTO singer (name) VALUES ('x')", ""),
    ("VACUUM", ""),
    ("SELECT load_extension('evil.so')", "load_extension"),
]


@pytest.mark.parametrize("sql", READS)
def test_reads_are_accepted(sql: str) -> None:
    assert is_read_only(sql)
    ensure_read_only(sql)


@pytest.mark.parametrize("sql,word", WRITES)
def test_writes_are_refused(sql: str, word: str) -> None:
    assert not is_read_only(sql)
    with pytest.raises(RefusedStatementError) as info:
        ensure_read_only(sql)
    assert word in str(info.value)


def test_data_modifying_cte_is_refused_in_postgres() -> None:
    sql = "WITH d AS (DELETE FROM singer RETURNING *) SELECT * FROM d"
    with pytest.raises(RefusedStatementError):
        ensure_read_only(sql, "postgres")


def test_select_for_update_is_refused_in_postgres() -> None:
    with pytest.raises(RefusedStatementError, match="FOR UPDATE"):
        ensure_read_only("SELECT * FROM singer FOR UPDATE", "postgres")


def test_unparseable_text_is_a_parse_error_not_a_pass() -> None:
    assert not is_read_only("SELECT FROM WHERE (((")
    with pytest.raises(SQLParseError):
        ensure_read_only("SELECT FROM WHERE (((")


def test_empty_is_a_parse_error() -> None:
    with pytest.raises(SQLParseError):
        ensure_read_only("  ;  ")


def test_refusal_renders_feedback_for_the_model() -> None:
    with pytest.raises(RefusedStatementError) as info:
        ensure_read_only("DROP TABLE singer")
    assert "single SELECT" in info.value.as_feedback()
    assert info.value.details["sql"] == "DROP TABLE singer"


def test_a_comment_after_the_semicolon_is_not_a_second_statement() -> None:
    from sqlweave.sql.classify import ensure_read_only

    for sql in ("SELECT 1; -- done", "SELECT 1; /* the answer */", "SELECT 1;\n-- why: counts them\n"):
        assert ensure_read_only(sql, "sqlite").sql() == "SELECT 1"
    with pytest.raises(RefusedStatementError, match="2 statements"):
        ensure_read_only("SELECT 1; -- done\nDELETE FROM t", "sqlite")


@pytest.mark.parametrize("sql,kind", [("VACUUM", "VACUUM"), ("REPLACE INTO t VALUES (1)", "REPLACE"),
                                      ("vacuum into '/tmp/x.db'", "VACUUM")])
def test_commands_sqlglot_keeps_whole_are_refused_by_their_own_name(sql: str, kind: str) -> None:
    from sqlweave.sql.classify import ensure_read_only

    with pytest.raises(RefusedStatementError, match=f"^{kind} statements are not allowed"):
        ensure_read_only(sql, "sqlite")


@pytest.mark.parametrize("sql", [
    "SELECT name /*!, LOAD_FILE('/etc/passwd') */ FROM singer",
    "SELECT name /*!50000 , LOAD_FILE('/etc/passwd') */ FROM singer",
    "SELECT name /*M!100000 , @@version */ FROM singer",
    "SELECT 1 --1, LOAD_FILE('/etc/passwd')",
    "SELECT name FROM singer INTO OUTFILE '/tmp/x'",
    "SELECT name FROM singer LIMIT 1 into   dumpfile '/tmp/x'",
    "SELECT @n := COUNT(*) FROM singer",
    "SELECT LOAD_FILE('/etc/passwd')",
    "SELECT SLEEP(5)",
    "SELECT GET_LOCK('x', 10)",
])
def test_what_mysql_runs_past_a_parser_is_refused(sql: str) -> None:
    with pytest.raises(RefusedStatementError):
        ensure_read_only(sql, "mysql")


@pytest.mark.parametrize("sql", [
    "SELECT '/*! not code */', '--x', 'INTO OUTFILE' FROM singer",
    "SELECT name FROM singer -- a comment, with a space",
    "SELECT name FROM singer # a comment",
    "SELECT 'it''s', \"a \\\" /*! quoted */ b\" FROM singer",
    "SELECT 1 - -1",
    "SELECT name FROM singer /* an ordinary comment */",
])
def test_their_lookalikes_in_strings_and_comments_run(sql: str) -> None:
    ensure_read_only(sql, "mysql")
