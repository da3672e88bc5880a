"""A GBNF grammar of the SELECT queries one schema allows, for schema-constrained decoding (in the spirit of PICARD).

llama.cpp can hold generation to a grammar: at each step only tokens that keep the text inside the grammar may be
sampled. :func:`schema_grammar` writes one for a schema, so the model can only write

- a read: ``SELECT`` (with ``DISTINCT``, joins, ``WHERE``, ``GROUP BY``, ``HAVING``, ``ORDER BY``, ``LIMIT``,
  subqueries, ``UNION`` / ``INTERSECT`` / ``EXCEPT``, ``CASE``, ``CAST``, the dialect's common functions);
- the schema's own tables, and columns as the schema spells them, bare or qualified by a table or an alias;
- single-quoted strings and numbers as literals;

and nothing before or after the query (no prose, no code fence). It constrains words and structure, not meaning:
a column is not checked against the tables in scope (the rule-based repair still handles that), and aliases are
``T1``..``T9``, one letter, or a table's name.

>>> from sqlweave.schema import Schema, Table, Column
>>> g = schema_grammar(Schema("x", (Table("singer", (Column("singer_id"), Column("Name"))),)))
>>> 'table ::= "singer"' in g and '"Name"' in g
True
"""

from __future__ import annotations

import re

from ..schema import Schema

_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

#: Functions every dialect has, and each dialect's date and text functions the model tends to write.
_FUNCTIONS = ("count", "sum", "avg", "min", "max", "abs", "round", "lower", "upper", "length", "coalesce",
              "nullif", "replace", "trim", "substr", "substring")
_DIALECT_FUNCTIONS = {
    "sqlite": ("strftime", "date", "julianday", "ifnull", "instr", "datetime", "printf", "total", "group_concat"),
    "postgres": ("date_part", "date_trunc", "to_char", "now", "age", "string_agg", "extract_epoch", "greatest",
                 "least", "concat", "position", "split_part"),
    "duckdb": ("date_part", "date_trunc", "strftime", "now", "string_agg", "greatest", "least", "concat",
               "datediff", "year", "month", "day"),
}

_KEYWORDS = ("select", "distinct", "from", "as", "join", "inner", "left", "on", "where", "and", "or", "not", "in",
             "like", "between", "is", "null", "group", "by", "having", "order", "asc", "desc", "limit", "offset",
             "union", "all", "intersect", "except", "case", "when", "then", "else", "end", "cast", "exists",
             "extract", "ilike", "true", "false")


def _literal(text: str) -> str:
    """``text`` as a GBNF string literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _name(name: str) -> str:
    """A schema name as the model may write it: bare when SQL allows, else double-quoted (both when plain)."""
    quoted = _literal('"' + name.replace('"', '""') + '"')
    return f"{_literal(name)} | {quoted}" if _PLAIN.match(name) else quoted


def _keyword_rules() -> list[str]:
    return [f"kw-{k} ::= {_literal(k.upper())} | {_literal(k)}" for k in _KEYWORDS]


def schema_grammar(schema: Schema, dialect: str = "sqlite") -> str:
    """The GBNF text of the queries ``schema`` allows in ``dialect`` (see the module docstring)."""
    tables = sorted({t.name for t in schema.tables})
    columns = sorted({c.name for t in schema.tables for c in t.columns})
    functions = sorted(set(_FUNCTIONS + _DIALECT_FUNCTIONS.get(dialect, ())))
    like = "kw-like | kw-ilike" if dialect in ("postgres", "duckdb") else "kw-like"
    rules = [
        'root ::= ows query ows ";"?',
        "query ::= select (ws setop ws select)*",
        "setop ::= kw-union (ws kw-all)? | kw-intersect | kw-except",
        "select ::= kw-select ws (kw-distinct ws)? items ws kw-from ws source (ws join)* (ws where)? (ws group)? "
        "(ws having)? (ws order)? (ws limit)?",
        'items ::= item (ows "," ows item)*',
        'item ::= "*" | qual "." "*" | expr (ws kw-as ws outname)?',
        "source ::= tableref | \"(\" ows query ows \")\" (ws (kw-as ws)? alias)?",
        "tableref ::= table (ws (kw-as ws)? alias)?",
        "join ::= ((kw-left | kw-inner) ws)? kw-join ws source (ws kw-on ws expr)?",
        "where ::= kw-where ws expr",
        'group ::= kw-group ws kw-by ws expr (ows "," ows expr)*',
        "having ::= kw-having ws expr",
        'order ::= kw-order ws kw-by ws orderterm (ows "," ows orderterm)*',
        "orderterm ::= (expr | outname) (ws (kw-asc | kw-desc))?",
        "limit ::= kw-limit ws number (ws kw-offset ws number)?",
        "expr ::= conj (ws kw-or ws conj)*",
        "conj ::= neg (ws kw-and ws neg)*",
        "neg ::= (kw-not ws)? pred",
        "pred ::= sum (ows cmp ows sum | ws (kw-not ws)? kw-in ows \"(\" ows (query | sum (ows \",\" ows sum)*) ows \")\""
        f" | ws (kw-not ws)? ({like}) ws sum | ws (kw-not ws)? kw-between ws sum ws kw-and ws sum"
        " | ws kw-is ws (kw-not ws)? kw-null)?",
        'cmp ::= "=" | "!=" | "<>" | "<=" | ">=" | "<" | ">"',
        'sum ::= atom (ows arith ows atom)*',
        'arith ::= "+" | "-" | "*" | "/" | "%" | "||"',
        'atom ::= column | number | string | kw-null | kw-true | kw-false | call | case | cast | extract'
        ' | kw-exists ows "(" ows query ows ")" | "(" ows (query | expr) ows ")" | "-" atom',
        'call ::= function ows "(" ows ("*" | (kw-distinct ws)? expr (ows "," ows expr)*)? ows ")"',
        "case ::= kw-case (ws expr)? (ws kw-when ws expr ws kw-then ws expr)+ (ws kw-else ws expr)? ws kw-end",
        'cast ::= kw-cast ows "(" ows expr ws kw-as ws typename ows ")"',
        'extract ::= kw-extract ows "(" ows [A-Za-z]+ ws kw-from ws expr ows ")"',
        'typename ::= [A-Za-z]+ (ows "(" ows [0-9]+ (ows "," ows [0-9]+)? ows ")")?',
        'column ::= (qual ".")? col',
        "qual ::= alias | table",
        'alias ::= [Tt] [1-9] | [a-z] [a-z0-9]?',
        "outname ::= [A-Za-z_] [A-Za-z0-9_]{0,30}",
        'number ::= [0-9]{1,12} ("." [0-9]{1,8})?',
        "string ::= \"'\" ([^'\\n] | \"''\"){0,80} \"'\"",
        "ws ::= [ \\t\\n]{1,4}",
        "ows ::= [ \\t\\n]{0,4}",
        "table ::= " + " | ".join(_name(t) for t in tables),
        "col ::= " + " | ".join(_name(c) for c in columns),
        "function ::= " + " | ".join(f"{_literal(f.upper())} | {_literal(f)}" for f in functions),
    ]
    return "\n".join(rules + _keyword_rules()) + "\n"
