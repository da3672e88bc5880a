"""Domain knowledge per database: a side file of what the team knows about its data.

Names such as ``cust_stat`` or ``sbDpVolume`` mean little without the team's own definitions. A knowledge
file (YAML) holds them, one file per database::

    tables:
      customers:
        description: People who bought at least once
        columns:
          country: Billing country, spelled in English ('Canada')
      orders: Orders, one row per checkout          # a table's description alone
    terms:                                          # business terms
      active customer: a customer who ordered in the last 90 days
      revenue:
        definition: the sum of quantity times unit price over order items
        sql: SUM(order_items.quantity * order_items.unit_price)
    joins:                                          # preferred joins
      - orders.customer_id = customers.id
    examples:                                       # questions answered before, with their SQL
      - question: How many customers are from Canada?
        sql: SELECT COUNT(*) FROM customers WHERE country = 'Canada'
    notes:                                          # rules that always hold
      - Amounts are in US dollars.

Every section is optional; ``terms`` may also be a list of ``{name, definition, sql}``. A file that is not
valid YAML, has a key sqlweave does not know, or a value of the wrong type raises
:class:`~sqlweave.errors.ConfigurationError` naming the line and the key.

Table and column descriptions reach the schema the way a descriptions file's do (pass the YAML file as
``descriptions=`` or ``knowledge=``); generation prompts show, just before the question, the business
terms that fit the question (BM25 over their names and definitions), the preferred joins between the
tables the prompt shows that its schema does not already show as foreign keys (a join the database does not
declare becomes one), the notes, and up to two sample questions of this database that fit. defog's JSON
metadata (``{"table_metadata": ..., "glossary": ...}``) and the descriptions files sqlweave reads
(:func:`load_descriptions`) load into the same model.

>>> k = Knowledge.from_yaml('''
... terms:
...   active customer: ordered in the last 90 days
...   churned customer: no order for a year
... joins: [orders.customer_id = customers.id]
... ''')
>>> [t.name for t in k.relevant_terms("How many active customers are there?")]
['active customer']
>>> print(k.prompt_block("How many active customers are there?"), end="")
Domain knowledge for this database:
- "active customer" means: ordered in the last 90 days
- Preferred join: orders.customer_id = customers.id
<BLANKLINE>
>>> print(k.prompt_block("Which products cost more than 10?"), end="")
Domain knowledge for this database:
- Preferred join: orders.customer_id = customers.id
<BLANKLINE>
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from ..errors import ConfigurationError, SchemaError, SqlweaveError
from .checks import Problems, did_you_mean, kind_of, list_at, positions, text_at
from .descriptions import file_descriptions, read_json
from .model import Join, SamplePair, TableKnowledge, Term, need_text
from .sections import examples_section, joins_section, tables_section, terms_section

if TYPE_CHECKING:
    from ..db.protocol import Reader
    from ..schema import Schema
    from ..policy import AccessPolicy
    from ..retrieval.lexical import BM25Index

#: Suffixes of knowledge files read as YAML.
YAML_SUFFIXES = (".yaml", ".yml")
#: At most this many business terms, and this many sample questions, are shown for one question.
MAX_TERMS = 5
MAX_EXAMPLES = 2
#: A term (or sample question) that the question does not name must match it at least this fraction as well
#: (BM25) as the best match does: a word that many terms share ("customer") does not bring them all in.
RELATIVE_SCORE = 0.4
#: The line that opens the knowledge block in generation prompts.
KNOWLEDGE_HEADER = "Domain knowledge for this database:"

_SECTIONS = ("database", "tables", "terms", "joins", "examples", "notes", "policy")
# --- the model ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Knowledge:
    """One database's domain knowledge: descriptions, business terms, preferred joins, sample pairs, notes.

    ``source`` is the file it came from (``None`` when built in code).
    """

    tables: tuple[TableKnowledge, ...] = ()
    terms: tuple[Term, ...] = ()
    joins: tuple[Join, ...] = ()
    examples: tuple[SamplePair, ...] = ()
    notes: tuple[str, ...] = ()
    database: str | None = None
    source: Path | None = None
    #: the ``policy:`` section (:class:`~sqlweave.policy.AccessPolicy`): applied when the database opens
    policy: "AccessPolicy | None" = None

    def __post_init__(self) -> None:
        for name, kind in (("tables", TableKnowledge), ("terms", Term), ("joins", Join), ("examples", SamplePair)):
            items = tuple(getattr(self, name))
            if not all(isinstance(i, kind) for i in items):
                raise ConfigurationError(f"knowledge {name} must be {kind.__name__} objects")
            object.__setattr__(self, name, items)
        notes = tuple(self.notes)
        for n in notes:
            need_text(n, "a note", empty=False)
        object.__setattr__(self, "notes", notes)
        if self.source is not None:
            object.__setattr__(self, "source", Path(self.source))

    # --- loading ---------------------------------------------------------------------------------

    @classmethod
    def from_yaml(cls, text: str, source: str | Path | None = None) -> "Knowledge":
        """Parse a knowledge file's text (see the module docstring); ``source`` names it in errors."""
        return _parse_yaml(text, source)

    @classmethod
    def from_defog_json(cls, path: str | Path) -> "Knowledge":
        """defog's metadata file: ``table_metadata`` gives the column descriptions; the ``glossary``'s lines
        of the form ``TERM = DEFINITION`` become business terms and its other lines notes.

        >>> import tempfile, json, os
        >>> with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        ...     json.dump({"table_metadata": {"sbTicker": [{"column_name": "sbTickerId", "data_type": "int",
        ...                "column_description": "ticker id"}]},
        ...                "glossary": "- NCT (Net Commission Total) = SUM(sbTxCommission)\\n- Amounts in USD"}, fh)
        >>> k = Knowledge.from_defog_json(fh.name); os.unlink(fh.name)
        >>> k.tables[0].columns, k.terms[0].name, k.notes
        ({'sbTickerId': 'ticker id'}, 'NCT (Net Commission Total)', ('Amounts in USD',))
        """
        path = Path(path)
        data = read_json(path)
        meta = data.get("table_metadata") if isinstance(data, dict) else None
        if not isinstance(meta, dict):
            raise ConfigurationError(f"{str(path)!r} is not defog metadata: it has no table_metadata object",
                                     hint='defog files look like {"table_metadata": {"table": [{"column_name", '
                                          '"column_description"}]}, "glossary": "..."}.')
        tables = []
        for table, cols in meta.items():
            if not isinstance(cols, list):
                raise ConfigurationError(f"{str(path)!r}: table_metadata.{table} must be a list of columns")
            described = {}
            for i, col in enumerate(cols):
                if not isinstance(col, dict) or not isinstance(col.get("column_name"), str):
                    raise ConfigurationError(f"{str(path)!r}: table_metadata.{table}[{i}] has no column_name")
                described[col["column_name"]] = str(col.get("column_description") or "")
            tables.append(TableKnowledge(str(table), "", described))
        glossary = data.get("glossary") or ""
        if isinstance(glossary, list):
            glossary = "\n".join(str(g) for g in glossary)
        if not isinstance(glossary, str):
            raise ConfigurationError(f"{str(path)!r}: the glossary must be text")
        terms, notes = _glossary(glossary)
        return cls(tables=tuple(tables), terms=terms, notes=notes, source=path)

    @classmethod
    def from_descriptions(cls, described: Mapping[str, Mapping[str, Any]], source: str | Path | None = None) -> "Knowledge":
        """From what :func:`load_descriptions` returns
        (``{table: {"description": str, "columns": {col: str}}}``)."""
        tables = tuple(
            TableKnowledge(str(t), str(info.get("description") or ""),
                           {str(c): str(d or "") for c, d in (info.get("columns") or {}).items()})
            for t, info in described.items()
        )
        return cls(tables=tables, source=Path(source) if source else None)

    # --- use -----------------------------------------------------------------------------------------

    def descriptions(self) -> dict[str, dict[str, Any]]:
        """Table and column descriptions in :func:`load_descriptions`'s form
        (lower-cased names), which introspection applies to the schema.

        >>> Knowledge((TableKnowledge("Orders", "One row per order", {"Total": "in cents"}),)).descriptions()
        {'orders': {'description': 'One row per order', 'columns': {'total': 'in cents'}}}
        """
        return {t.name.lower(): {"description": t.description,
                                 "columns": {c.lower(): d for c, d in t.columns.items()}} for t in self.tables}

    @cached_property
    def _name_index(self) -> "BM25Index":
        from ..retrieval.lexical import BM25Index

        return BM25Index([t.name for t in self.terms])

    @cached_property
    def _term_index(self) -> "BM25Index":
        from ..retrieval.lexical import BM25Index

        return BM25Index([f"{t.name} {t.definition}" for t in self.terms])

    @cached_property
    def _example_index(self) -> "BM25Index":
        from ..retrieval.lexical import BM25Index

        return BM25Index([e.question for e in self.examples])

    def relevant_terms(self, question: str, k: int = MAX_TERMS) -> tuple[Term, ...]:
        """The business terms that fit ``question``, best first, at most ``k``: those it names, then those whose
        name matches it (BM25, stemmed, stopwords left out) at least :data:`RELATIVE_SCORE` as well as the best
        match; only when no name matches, those whose name and definition together match it so.

        >>> k = Knowledge(terms=(Term("revenue", "the money taken for order items"),
        ...                      Term("active customer", "ordered in the last 90 days")))
        >>> [t.name for t in k.relevant_terms("What was the revenue last month?")]
        ['revenue']
        >>> [t.name for t in k.relevant_terms("How much money was taken?")]
        ['revenue']
        """
        if not self.terms or k <= 0:
            return ()
        low = " ".join(question.lower().split())
        named = [i for i, t in enumerate(self.terms) if _mentions(low, t.name)]
        with _INDEX_LOCK:
            scored = _close_to_best(self._name_index.search(question, k=len(self.terms)))
            if not named and not scored:
                scored = _close_to_best(self._term_index.search(question, k=len(self.terms)))
        order = named + [i for i in scored if i not in named]
        return tuple(self.terms[i] for i in order[:k])

    def relevant_examples(self, question: str, k: int = MAX_EXAMPLES) -> tuple[SamplePair, ...]:
        """Up to ``k`` sample pairs whose question matches ``question`` (BM25; at least :data:`RELATIVE_SCORE`
        as well as the best), best first."""
        if not self.examples or k <= 0:
            return ()
        with _INDEX_LOCK:
            hits = _close_to_best(self._example_index.search(question, k=k))
        return tuple(self.examples[i] for i in hits)

    def joins_for(self, schema: "Schema | None" = None) -> tuple[Join, ...]:
        """The preferred joins whose two tables ``schema`` has (all of them without a schema)."""
        if schema is None:
            return self.joins
        return tuple(j for j in self.joins if schema.has_table(j.table) and schema.has_table(j.ref_table))

    def joins_to_state(self, schema: "Schema | None" = None) -> tuple[Join, ...]:
        """The preferred joins a prompt over ``schema`` still has to state: those between its tables that it
        does not already show as a foreign key (either way round). A join the database does not declare becomes
        a foreign key of the schema (:func:`sqlweave.db.introspect.introspect`), so a line repeating it would say
        the same thing twice.

        >>> from sqlweave.schema import Schema, Table, Column, ForeignKey
        >>> k = Knowledge(joins=(Join.parse("orders.customer_id = customers.id"),
        ...                      Join.parse("orders.ref = customers.code")))
        >>> s = Schema("x", (Table("orders", (Column("customer_id"), Column("ref"))),
        ...                  Table("customers", (Column("id"), Column("code")))),
        ...            foreign_keys=(ForeignKey("orders", "customer_id", "customers", "id"),))
        >>> [str(j) for j in k.joins_to_state(s)]
        ['orders.ref = customers.code']
        """
        joins = self.joins_for(schema)
        if schema is None:
            return joins
        keys = {frozenset({(f.table.lower(), f.column.lower()), (f.ref_table.lower(), f.ref_column.lower())})
                for f in schema.foreign_keys}
        return tuple(j for j in joins if frozenset({(j.table.lower(), j.column.lower()),
                                                    (j.ref_table.lower(), j.ref_column.lower())}) not in keys)

    def prompt_block(self, question: str, schema: "Schema | None" = None) -> str:
        """What generation prompts show of this knowledge for ``question`` (``""`` when nothing fits): the
        terms that fit it, the preferred joins between ``schema``'s tables it does not show as foreign keys
        (:meth:`joins_to_state`), the notes, sample pairs that fit."""
        terms = self.relevant_terms(question)
        lines = [t.line() for t in terms]
        lines += [f"- Preferred join: {j}" for j in self.joins_to_state(schema)]
        lines += [f"- {' '.join(n.split())}" for n in self.notes]
        examples = self.relevant_examples(question)
        if not lines and not examples:
            return ""
        parts = [KNOWLEDGE_HEADER] + lines if lines else []
        if examples:
            parts.append("Questions answered before on this database:")
            for ex in examples:
                parts.append(f"Question: {' '.join(ex.question.split())}\n```sql\n{ex.sql.strip()}\n```")
        return "\n".join(parts) + "\n\n"

    def issues(self, schema: "Schema") -> list[str]:
        """What this knowledge names that ``schema`` does not have (tables, columns, join ends).

        >>> from sqlweave.schema import Schema, Table, Column
        >>> s = Schema("x", (Table("orders", (Column("id"),)),))
        >>> Knowledge((TableKnowledge("orders", columns={"total": "in cents"}),),
        ...           joins=(Join.parse("orders.id = customers.id"),)).issues(s)
        ['tables.orders: no column total', 'joins: orders.id = customers.id: no table customers']
        """
        out = []
        for t in self.tables:
            if not schema.has_table(t.name):
                out.append(f"tables.{t.name}: no such table")
                continue
            out += [f"tables.{t.name}: no column {c}" for c in t.columns if not schema.table(t.name).has_column(c)]
        for j in self.joins:
            for table, col in ((j.table, j.column), (j.ref_table, j.ref_column)):
                if not schema.has_table(table):
                    out.append(f"joins: {j}: no table {table}")
                elif not schema.table(table).has_column(col):
                    out.append(f"joins: {j}: no column {table}.{col}")
        return out


_INDEX_LOCK = threading.Lock()


def _close_to_best(hits: list[tuple[int, float]]) -> list[int]:
    best = max((s for _, s in hits), default=0.0)
    return [i for i, s in hits if s > 0 and s >= RELATIVE_SCORE * best]


def _mentions(question: str, name: str) -> bool:
    """Whether ``question`` (lower case) names the term ``name`` as whole words, in the singular or plural
    (``"active customer"`` in "active customers", ``"category"`` in "categories"; ``"a"`` not in "are"). Names
    of one or two letters are matched only as they are ("it" is not in "its")."""
    name = " ".join(name.lower().split())
    if not name:
        return False
    forms = re.escape(name) + (r"(?:s|es|'s)?" if len(name) > 2 else "")
    if name.endswith("y"):
        forms = f"(?:{forms}|{re.escape(name[:-1])}ies)"
    return re.search(rf"(?<!\w){forms}(?!\w)", question) is not None


def _glossary(text: str) -> tuple[tuple[Term, ...], tuple[str, ...]]:
    """defog glossary lines (``- ...``, continuation lines indented) -> terms (``TERM = DEFINITION``) and notes."""
    items: list[str] = []
    for raw in text.splitlines():
        if not raw.strip():
            continue
        line = raw.strip()
        starts = line.startswith(("- ", "* "))
        if starts and (not items or raw[:1] not in " \t"):
            items.append(line[2:].strip())
        elif items:
            items[-1] += " " + line
        else:
            items.append(line)
    terms, notes = [], []
    for item in items:
        name, sep, definition = item.partition(" = ")
        if sep and name.strip() and definition.strip() and "join" not in name.lower() and len(name) <= 80:
            terms.append(Term(name.strip(), definition.strip()))
        else:
            notes.append(item)
    return tuple(terms), tuple(notes)


# --- reading files -----------------------------------------------------------------------------------


def load_knowledge(path: str | Path) -> Knowledge:
    """Read a knowledge file: YAML (``.yaml``/``.yml``, see the module docstring), defog's JSON metadata, or
    a descriptions file :func:`load_descriptions` reads (JSON, or a folder of BIRD
    CSV files). Problems raise :class:`~sqlweave.errors.ConfigurationError` (a file that cannot be read
    or parsed, naming the line and key) or :class:`~sqlweave.errors.SchemaError` (a descriptions file)."""
    path = Path(path).expanduser()
    if path.suffix.lower() in YAML_SUFFIXES:
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ConfigurationError(f"no knowledge file at {str(path)!r}") from None
        except (OSError, UnicodeDecodeError) as err:
            raise ConfigurationError(f"cannot read the knowledge file {str(path)!r}: {err}") from None
        return _parse_yaml(text, path)
    if path.is_file() and path.suffix.lower() == ".json":
        data = read_json(path)
        if isinstance(data, dict) and "table_metadata" in data:
            return Knowledge.from_defog_json(path)
    if not path.exists():
        raise ConfigurationError(f"no knowledge file at {str(path)!r}",
                                 hint="Pass a YAML knowledge file, defog's JSON metadata or a descriptions file.")
    return Knowledge.from_descriptions(load_descriptions(path), source=path)


def _parse_yaml(text: str, source: str | Path | None) -> Knowledge:
    import yaml

    name = repr(str(source)) if source is not None else "(text)"
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise ConfigurationError(f"the knowledge file {name} is not valid YAML{where}: {problem}",
                                 hint="Check the indentation and quoting there (quote text that holds ': ' or '#').",
                                 file=str(source) if source is not None else None) from None
    lines: dict[tuple[Any, ...], int] = {}
    duplicates: list[tuple[tuple[Any, ...], int]] = []
    if node is not None:
        positions(node, (), lines, duplicates)
        lines.setdefault((), node.start_mark.line + 1)
    problems = Problems(name, lines, _SECTIONS)
    for path, line in duplicates:
        problems.add(path, f"{path[-1]!r} is given twice", line)
    if data is None:
        problems.raise_if_any()
        return Knowledge(source=Path(source) if source is not None else None)
    if not isinstance(data, dict):
        problems.add((), f"a knowledge file must be a mapping of sections ({', '.join(_SECTIONS)}), "
                         f"not {kind_of(data)}")
        problems.raise_if_any()
    for key in data:
        if key not in _SECTIONS:
            problems.add((key,), f"unknown section {key!r}{did_you_mean(key, _SECTIONS)}; "
                                 f"expected one of: {', '.join(_SECTIONS)}")
    database = text_at(data.get("database"), ("database",), problems, optional=True)
    tables = tables_section(data.get("tables"), problems)
    terms = terms_section(data.get("terms"), problems)
    joins = joins_section(data.get("joins"), problems)
    examples = examples_section(data.get("examples"), problems)
    notes = tuple(n for i, item in enumerate(list_at(data.get("notes"), ("notes",), problems))
                  if (n := text_at(item, ("notes", i), problems)))
    policy = None
    if data.get("policy") is not None:
        from ..policy import AccessPolicy

        try:
            policy = AccessPolicy.from_mapping(data["policy"], source=source)
        except SqlweaveError as err:
            problems.add(("policy",), err.message)
    problems.raise_if_any()
    try:
        return Knowledge(tables=tables, terms=terms, joins=joins, examples=examples, notes=notes,
                         database=database or None, source=Path(source) if source is not None else None,
                         policy=policy)
    except SqlweaveError as err:  # a check the parser above does not make: still the file's problem
        raise ConfigurationError(f"the knowledge file {name}: {err.message}", hint=err.hint) from None


# --- description side files (JSON, defog's JSON, BIRD's CSV folders: :mod:`sqlweave.knowledge.descriptions`) ---


def load_descriptions(path: Path) -> dict[str, dict[str, Any]]:
    """Read table and column descriptions: ``{table: {"description": str, "columns": {col: str}}}``.

    Accepted: a JSON file ``{"table": {"description": "...", "columns": {"col": "..."}}}``; a JSON file in
    defog's ``{"table_metadata": {table: [{"column_name", "column_description"}]}}`` form; a BIRD
    ``database_description/`` folder with one CSV per table; or a YAML knowledge file (``.yaml``/``.yml``,
    its ``tables`` section: see :mod:`sqlweave.knowledge`). Keys are lower-cased.
    """
    path = Path(path)
    if path.suffix.lower() in YAML_SUFFIXES and path.is_file():
        return load_knowledge(path).descriptions()
    return file_descriptions(path)


# --- knowledge of an open database ----------------------------------------------------------------------


def knowledge_for(db: "Reader") -> Knowledge | None:
    """The knowledge pipelines use for ``db``: its own (:attr:`sqlweave.database.Database.knowledge`: what it was
    opened or set with, else its descriptions file when that is a YAML knowledge file), with nothing the access
    policy hides.

    >>> from sqlweave.database import Database
    >>> from sqlweave.db.demo import demo_database_path
    >>> knowledge_for(Database.open(demo_database_path())) is None
    True
    """
    policy, found = db.policy, db.knowledge
    return policy.filter_knowledge(found) if policy is not None else found  # nothing hidden reaches a prompt


