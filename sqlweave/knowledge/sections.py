"""The sections of a YAML knowledge file read into the model (``tables``, ``terms``, ``joins``, ``examples``), each
problem noted with its line and key (:class:`~sqlweave.knowledge.checks.Problems`) rather than raised at once.

>>> from sqlweave.knowledge.checks import Problems
>>> terms_section({"revenue": "sum of paid order totals"}, Problems("shop.yaml", {}))[0].name
'revenue'
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigurationError
from .checks import Problems, check_keys, kind_of, list_at, mapping_at, text_at
from .model import Join, SamplePair, TableKnowledge, Term

_TABLE_KEYS = ("description", "columns")
_TERM_KEYS = ("name", "definition", "sql")
_EXAMPLE_KEYS = ("question", "sql")


def tables_section(value: Any, problems: Problems) -> tuple[TableKnowledge, ...]:
    out = []
    for table, entry in mapping_at(value, ("tables",), problems).items():
        path = ("tables", table)
        name = text_at(table, path, problems)
        if isinstance(entry, (str, int, float)) and not isinstance(entry, bool) or entry is None:
            if name:
                out.append(TableKnowledge(name, text_at(entry, path, problems, optional=True)))
            continue
        if not isinstance(entry, dict):
            problems.add(path, f"must be a description or a mapping with description and columns, not {kind_of(entry)}")
            continue
        check_keys(entry, path, _TABLE_KEYS, problems)
        description = text_at(entry.get("description"), path + ("description",), problems, optional=True)
        columns = {}
        for col, text in mapping_at(entry.get("columns"), path + ("columns",), problems).items():
            col_name = text_at(col, path + ("columns", col), problems)
            if isinstance(text, dict):  # {description: ...} is accepted for a column too
                check_keys(text, path + ("columns", col), ("description",), problems)
                text = text.get("description")
            col_text = text_at(text, path + ("columns", col), problems, optional=True)
            if col_name:
                columns[col_name] = col_text
        if name:
            out.append(TableKnowledge(name, description, columns))
    return tuple(out)


def term_body_section(entry: dict[str, Any], path: tuple[Any, ...], problems: Problems) -> tuple[str, str | None]:
    """A term's definition and SQL (the definition may be left out when the SQL is given)."""
    definition = text_at(entry.get("definition"), path + ("definition",), problems, optional="sql" in entry)
    sql = text_at(entry.get("sql"), path + ("sql",), problems) if "sql" in entry else None
    return definition, sql


def terms_section(value: Any, problems: Problems) -> tuple[Term, ...]:
    out = []
    if isinstance(value, dict):  # {name: definition} or {name: {definition, sql}}
        for term, entry in value.items():
            path = ("terms", term)
            name = text_at(term, path, problems)
            if isinstance(entry, dict):
                check_keys(entry, path, ("definition", "sql"), problems)
                definition, sql = term_body_section(entry, path, problems)
            else:
                definition, sql = text_at(entry, path, problems), None
            if name and (definition or sql):
                out.append(Term(name, definition, sql or None))
        return tuple(out)
    for i, entry in enumerate(list_at(value, ("terms",), problems)):
        path = ("terms", i)
        if not isinstance(entry, dict):
            problems.add(path, f"must be a mapping with name, definition and optionally sql, not {kind_of(entry)}")
            continue
        check_keys(entry, path, _TERM_KEYS, problems)
        name = text_at(entry.get("name"), path + ("name",), problems)
        definition, sql = term_body_section(entry, path, problems)
        if name and (definition or sql):
            out.append(Term(name, definition, sql or None))
    return tuple(out)


def joins_section(value: Any, problems: Problems) -> tuple[Join, ...]:
    out = []
    for i, entry in enumerate(list_at(value, ("joins",), problems)):
        text = text_at(entry, ("joins", i), problems)
        if not text:
            continue
        try:
            out.append(Join.parse(text))
        except ConfigurationError:
            problems.add(("joins", i), f"{text!r} is not a join: write table.column = table.column")
    return tuple(out)


def examples_section(value: Any, problems: Problems) -> tuple[SamplePair, ...]:
    out = []
    for i, entry in enumerate(list_at(value, ("examples",), problems)):
        path = ("examples", i)
        if not isinstance(entry, dict):
            problems.add(path, f"must be a mapping with question and sql, not {kind_of(entry)}")
            continue
        check_keys(entry, path, _EXAMPLE_KEYS, problems)
        question = text_at(entry.get("question"), path + ("question",), problems)
        sql = text_at(entry.get("sql"), path + ("sql",), problems)
        if question and sql:
            out.append(SamplePair(question, sql))
    return tuple(out)
