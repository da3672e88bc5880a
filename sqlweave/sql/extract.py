"""Find the SQL statement in a language model's free-form answer.

Models wrap SQL in Markdown fences, prefix it with "SQL:", follow it with an
explanation, or stop mid-fence. Candidate spans are located in the text, and a
span counts as SQL only when sqlglot parses it.

>>> extract_sql("Sure! Here it is:\\n```sql\\nSELECT count(*) FROM singer;\\n```\\nThis counts singers.")
'SELECT count(*) FROM singer'
>>> extract_sql("SQL: select name from singer where age > 30 -- the older ones")
'select name from singer where age > 30'
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from ..errors import NoSQLInOutputError

if TYPE_CHECKING:
    from ..schema import Schema

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_-]*)[ \t]*\n?(.*?)(?:```|\Z)", re.DOTALL)
# Words that may begin a statement. Writes are included on purpose: a model that answers
# "DROP TABLE x" must be shown to the safety check and refused, not reported as "no SQL".
_STATEMENT_START = re.compile(
    r"(?<![\w.])(SELECT|WITH|INSERT|UPDATE|DELETE|DROP|CREATE|ALTER|PRAGMA|ATTACH|DETACH|REPLACE|TRUNCATE|VALUES"
    r"|GRANT|REVOKE|MERGE|COPY|SET)\b",
    re.IGNORECASE,
)
_STATEMENT_TYPES = (
    exp.Select, exp.SetOperation, exp.Subquery, exp.Values, exp.Insert, exp.Update, exp.Delete,
    exp.Drop, exp.Create, exp.Alter, exp.Pragma, exp.Attach, exp.Detach, exp.TruncateTable, exp.Merge,
    exp.Grant, exp.Revoke, exp.Copy, exp.Set,
)
_MAX_TRIES = 60


def _parses(text: str, dialect: str | None) -> bool:
    text = text.strip().rstrip(";").strip()
    if not text:
        return False
    try:
        trees = [t for t in sqlglot.parse(text, read=dialect) if t is not None]
    except (SqlglotError, ValueError, RecursionError):
        return False
    return len(trees) == 1 and isinstance(trees[0], _STATEMENT_TYPES) and _complete(trees[0])


def _complete(tree: exp.Expression) -> bool:
    """Reject fragments sqlglot accepts leniently, such as a SELECT with nothing to select."""
    if isinstance(tree, exp.Select):
        return bool(tree.expressions)
    return True


def _first_statement(span: str) -> str:
    """Cut ``span`` at the first top-level semicolon, using sqlglot's tokenizer so strings are respected."""
    try:
        tokens = sqlglot.Tokenizer().tokenize(span)
    except (SqlglotError, ValueError):
        return span
    for tok in tokens:
        if tok.token_type == sqlglot.TokenType.SEMICOLON:
            return span[: tok.start]
    return span


#: What may follow a statement's parsed part and changes what it does (``SELECT ... INTO OUTFILE 'f'``, which
#: sqlglot cannot parse, writes a file): such a statement is not cut short, and reaches the classifier whole.
_DOING_TAIL = re.compile(r"^\s*(INTO|FOR\s+UPDATE|FOR\s+SHARE|LOCK\s+IN)\b", re.IGNORECASE)


def _shrink(span: str, dialect: str | None) -> str | None:
    """The longest prefix of ``span`` (cut at a semicolon, then by lines, then by words) that parses; ``span``
    itself when what the cut leaves out would change what the statement does (see ``_DOING_TAIL``)."""
    span = _first_statement(span).strip()
    if _parses(span, dialect):
        return span
    found = _parsed_prefix(span, dialect)
    if found is not None and _DOING_TAIL.match(span[len(found):]):
        return span
    return found


def _parsed_prefix(span: str, dialect: str | None) -> str | None:
    tries = 0
    lines = span.splitlines()
    for end in range(len(lines) - 1, 0, -1):
        tries += 1
        if tries > _MAX_TRIES:
            return None
        cand = "\n".join(lines[:end]).strip()
        if _parses(cand, dialect):
            return cand
    words = lines[0].split(" ") if lines else []
    for end in range(len(words) - 1, 1, -1):
        tries += 1
        if tries > _MAX_TRIES:
            return None
        cand = " ".join(words[:end]).strip()
        if _parses(cand, dialect):
            return cand
    return None


def _strip_comments(sql: str) -> str:
    """Drop trailing ``--`` comment lines the model appended after the statement."""
    out = sql.rstrip()
    while True:
        lines = out.splitlines()
        if len(lines) > 1 and lines[-1].lstrip().startswith("--"):
            out = "\n".join(lines[:-1]).rstrip()
            continue
        return out


def _candidates(text: str) -> list[str]:
    fenced = [(lang.lower(), body) for lang, body in _FENCE.findall(text)]
    ordered = [body for lang, body in fenced if lang in ("sql", "sqlite", "postgresql", "postgres", "duckdb")]
    ordered += [body for lang, body in fenced if lang not in ("sql", "sqlite", "postgresql", "postgres", "duckdb")]
    outside = _FENCE.sub("\n", text) if fenced else text
    return ordered + [outside]


def _find(text: str, dialect: str | None) -> tuple[str | None, bool]:
    """The first statement found in ``text`` read as ``dialect``, and whether it is strong (see :func:`_strong`)."""
    weak: str | None = None
    if text:
        for block in _candidates(text):
            covered = -1  # a statement found inside a weak one (its subquery) is not another answer
            for match in _STATEMENT_START.finditer(block):
                if match.start() < covered:
                    continue
                found = _shrink(block[match.start():], dialect)
                if found is None:
                    continue
                covered = match.start() + len(found)
                found = _strip_comments(_strip_trailing_comment(found, dialect))
                if _strong(found, dialect):
                    return found, True
                weak = weak or found
    return weak, False


def extract_sql(text: str, dialect: str | None = "sqlite", *, transpile: bool = True,
                schema: "Schema | None" = None) -> str:
    """Return the first SQL statement found in ``text``, without a trailing semicolon.

    A statement that reads from a table is preferred over a table-less fragment
    (prose such as "I will select the right rows" parses as ``SELECT the AS right``).

    For a database that is not SQLite, a statement that only SQLite's parser reads (backtick quoting, say)
    is found too, and with ``transpile`` the statement is returned in ``dialect``
    (:func:`sqlweave.sql.transpile.to_dialect`). On SQLite, SQLite's own SQL is returned exactly as written;
    PostgreSQL's or MySQL's date forms are written in SQLite's (with the ``schema``, not where they read a number
    column as a date).

    Raises:
        NoSQLInOutputError: nothing in ``text`` parses as a SQL statement. The raw
            output is kept in ``err.details["raw"]``.
    """
    found, strong = _extract(text, dialect)
    if found is None:
        raise NoSQLInOutputError("the model's answer contains no SQL statement", raw=text)
    if transpile and dialect is not None:
        from .transpile import to_dialect

        return to_dialect(found, dialect, schema=schema)
    return found


def holds_query(text: str, dialect: str | None = "sqlite") -> bool:
    """Whether ``text`` holds a statement that reads a table, as :func:`extract_sql` would find it: not prose
    alone, nor prose that happens to parse (``select the rows`` reads as ``SELECT the AS rows``).

    >>> holds_query("We join the singer table and select the names. The query is:")
    False
    >>> holds_query("```sql\\nSELECT name FROM singer\\n```")
    True
    """
    return _extract(text, dialect)[1]


def _extract(text: str, dialect: str | None) -> tuple[str | None, bool]:
    """The statement :func:`extract_sql` returns, before transpiling, and whether it is strong."""
    found, strong = _find(text, dialect)
    if dialect not in (None, "sqlite"):
        from .transpile import SOURCES

        for source in SOURCES:  # SQL only another dialect reads: backticks, TOP n
            other, other_strong = _find(text, source)
            if other is None:
                continue
            # The target's parser may stop early and keep a prefix that still parses (`SELECT count(*) FROM t`
            # out of `... FROM t WHERE `city` = 'x'`): the longer statement another dialect reads is the answer.
            longer = found is not None and len(other) > len(found) and other.startswith(found)
            if found is None or (other_strong and not strong) or (longer and other_strong >= strong):
                found, strong = other, other_strong
                if strong:
                    break
    return found, strong


def _strong(sql: str, dialect: str | None) -> bool:
    """True unless ``sql`` is a SELECT that reads no table at all (likely prose, or a constant); a SELECT of
    scalar subqueries (``SELECT (SELECT ... FROM a) / (SELECT ... FROM b)``) reads tables and is strong."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except (SqlglotError, ValueError):
        return False
    return not (isinstance(tree, exp.Select) and tree.find(exp.Table) is None)


def _strip_trailing_comment(sql: str, dialect: str | None) -> str:
    """Remove a ``-- comment`` at the end of a one-line statement (sqlglot keeps comments as metadata)."""
    try:
        tokens = sqlglot.Tokenizer().tokenize(sql)
    except (SqlglotError, ValueError):
        return sql
    if not tokens:
        return sql
    return sql[: tokens[-1].end + 1].strip()
