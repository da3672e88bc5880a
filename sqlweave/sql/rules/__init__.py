"""SQL rules as registries: one small named function per rule, with its phase and dialects, a tuple per phase.

The phases, in the order :func:`sqlweave.sql.transpile.to_dialect` and :func:`~sqlweave.sql.transpile.for_schema`
run them: ``foreign`` (SQLite's dates and quoted names in a query read from another dialect,
:mod:`.foreign_dates`), ``sqlite_forms`` (what SQLite means, in the target's forms, :mod:`.sqlite_forms`),
``into_sqlite`` (other engines' forms in SQLite's, :mod:`.into_sqlite`) and ``schema`` (what the schema says,
:mod:`.schema_forms`). :func:`~.base.apply` runs a phase over a tree parsed once and returns the names of the rules
that fired. Each rule has a fixture file of cases, ``tests/sql/fixtures/rules/<rule>.sql``.

>>> sorted(PHASES)
['foreign', 'schema', 'sqlite_forms']
>>> [r.name for r in PHASES["sqlite_forms"]][:2]
['like_without_case', 'bare_columns']
"""

from __future__ import annotations

from .base import ANY, Context, Rule, apply
from .foreign_dates import FOREIGN
from .schema_forms import SCHEMA_FORMS
from .sqlite_forms import SQLITE_FORMS

#: Each phase's rules, by phase name, in the order they run (``into_sqlite`` holds node forms:
#: :data:`.into_sqlite.INTO_SQLITE`).
PHASES: dict[str, tuple[Rule, ...]] = {"foreign": FOREIGN, "sqlite_forms": SQLITE_FORMS, "schema": SCHEMA_FORMS}

__all__ = ["ANY", "PHASES", "Context", "Rule", "apply"]
