"""Databases served by name: what the operator configured, and nothing a client can name itself.

The server, the MCP server and the chat door all take a :class:`Catalog`. A client only ever says a
name (``shop``); the path or URL behind it is the operator's (``--db shop=/data/shop.sqlite``, or a
TOML file). Each database opens read-only on first use and stays open.

>>> catalog = Catalog.parse(["shop=/no/such/file.sqlite"])
>>> catalog.names()
['shop']
>>> catalog.describe()[0]["dialect"] is None   # not opened yet
True
>>> try:
...     catalog.database("other")
... except UnknownDatabaseError as err:
...     print(err.message)
no database named 'other' is configured

A config file (TOML)::

    [databases.shop]
    target = "shop.sqlite"          # a file path (relative to the config file) or a SQLAlchemy URL
    timeout = 10                    # seconds a query may run
    max_rows = 1000
    descriptions = "shop-descriptions.json"
    description = "Orders and customers of the demo shop"

or, instead of ``descriptions``, a domain-knowledge file (YAML, or defog's JSON: see :mod:`sqlweave.knowledge`),
whose descriptions reach the schema and whose business terms, preferred joins and sample questions reach the
prompts::

    knowledge = "shop.yaml"

and an access policy (:mod:`sqlweave.policy`: hidden tables and columns, row filters), a YAML file or several
(merged; a knowledge file's ``policy:`` section applies too)::

    policy = "shop-policy.yaml"

and, for a schema of hundreds of tables, the most tokens of schema a prompt shows (default: what the model's
context leaves; a larger schema is fitted by retrieval, and on a CPU a smaller budget is much faster)::

    schema_budget = 2048

and, for a database that declares no foreign key, whether its keys are read from its data (default: true; see
:func:`sqlweave.db.infer_keys.infer_database_keys`)::

    keys_from_data = false

and, for a PostgreSQL or DuckDB database whose tables live in several schemas, the schemas to read, in the
order a table's name is looked up (default: the connection's search path; every schema of a DuckDB file)::

    schemas = ["sales", "public"]
"""

from __future__ import annotations

import re
import threading
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from .database import Database
from .errors import ConfigurationError, DatabaseNotFoundError

if TYPE_CHECKING:
    from .pipeline import Pipeline

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class UnknownDatabaseError(DatabaseNotFoundError):
    """A client asked for a database name the operator did not configure."""

    code = "unknown_database"
    default_hint = "List the configured databases first (GET /api/databases, or the list_databases tool)."


@dataclass(frozen=True)
class DatabaseEntry:
    """One configured database: its public name and the operator's private target."""

    name: str
    target: str
    timeout_s: float = 10.0
    max_rows: int = 1000
    descriptions: str | None = None
    description: str = ""
    knowledge: str | None = None
    policy: tuple[str, ...] = ()
    schema_budget: int | None = None
    #: read the keys of a database that declares no foreign key from its data (:meth:`Database.open`)
    keys_from_data: bool = True
    #: the schemas of a PostgreSQL or DuckDB database to read, in lookup order (:meth:`Database.open`)
    schemas: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ConfigurationError(
                f"{self.name!r} is not a usable database name",
                hint="Use letters, digits, '_', '-' or '.', starting with a letter or digit (at most 64 characters).",
            )
        if not self.target:
            raise ConfigurationError(f"database {self.name!r} has no target", hint="Give a file path or a URL.")
        if self.timeout_s <= 0 or self.max_rows <= 0:
            raise ConfigurationError(f"database {self.name!r}: timeout and max_rows must be positive")
        if self.schema_budget is not None:
            from .presets import check_schema_budget  # the pipelines' own rule (imported only when it is set)

            check_schema_budget(self.schema_budget, f"database {self.name!r}: ")
        if self.knowledge and self.descriptions:
            raise ConfigurationError(f"database {self.name!r} has both descriptions and knowledge",
                                     hint="Put the descriptions in the knowledge file (its tables: section).")


@dataclass
class Catalog:
    """Named databases, opened lazily and kept open (thread-safe)."""

    entries: dict[str, DatabaseEntry]
    _open: dict[str, Database] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    # --- building ------------------------------------------------------------------

    @classmethod
    def parse(cls, specs: Iterable[str], *, timeout_s: float = 10.0, max_rows: int = 1000,
              keys_from_data: bool = True) -> "Catalog":
        """From ``NAME=PATH_OR_URL`` strings (a bare path is named after its file stem)."""
        entries: dict[str, DatabaseEntry] = {}
        for spec in specs:
            name, sep, target = spec.partition("=")
            if not sep or "://" in name:
                target = spec
                name = Path(spec.split("?")[0].rstrip("/")).stem or "db"
            name, target = name.strip(), target.strip()
            if name in entries:
                raise ConfigurationError(f"database name {name!r} is configured twice",
                                         hint="Give each --db a distinct NAME=... prefix.")
            entries[name] = DatabaseEntry(name, target, timeout_s=timeout_s, max_rows=max_rows,
                                          keys_from_data=keys_from_data)
        return cls(entries)

    @classmethod
    def from_file(cls, path: str | Path) -> "Catalog":
        """From a TOML file with one ``[databases.NAME]`` table per database (see the module docstring)."""
        path = Path(path)
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigurationError(f"no config file at {str(path)!r}") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
            raise ConfigurationError(f"the config file {str(path)!r} is not valid TOML: {err}") from None
        dbs = data.get("databases")
        if not isinstance(dbs, dict) or not dbs:
            raise ConfigurationError(f"the config file {str(path)!r} names no databases",
                                     hint='Add a table such as [databases.shop] with target = "shop.sqlite".')
        entries: dict[str, DatabaseEntry] = {}
        for name, opts in dbs.items():
            if not isinstance(opts, dict) or not isinstance(opts.get("target"), str):
                raise ConfigurationError(f"database {name!r} in {str(path)!r} needs a target string")
            target = opts["target"]
            if "://" not in target and not Path(target).expanduser().is_absolute():
                target = str((path.parent / target).resolve())
            descriptions = opts.get("descriptions")
            if descriptions and not Path(descriptions).is_absolute():
                descriptions = str((path.parent / descriptions).resolve())
            policy = opts.get("policy", ())
            policy = (policy,) if isinstance(policy, str) else policy
            if not isinstance(policy, (list, tuple)) or not all(isinstance(p, str) for p in policy):
                raise ConfigurationError(f"database {name!r} in {str(path)!r}: policy must be a file path or a list")
            policy = tuple(p if Path(p).expanduser().is_absolute() else str((path.parent / p).resolve())
                           for p in policy)
            knowledge = opts.get("knowledge")
            if knowledge is not None and not isinstance(knowledge, str):
                raise ConfigurationError(f"database {name!r} in {str(path)!r}: knowledge must be a file path")
            keys_from_data = opts.get("keys_from_data", True)
            if not isinstance(keys_from_data, bool):
                raise ConfigurationError(f"database {name!r} in {str(path)!r}: keys_from_data must be true or false")
            if knowledge and not Path(knowledge).expanduser().is_absolute():
                knowledge = str((path.parent / knowledge).resolve())
            schemas = opts.get("schemas")
            if schemas is not None and (not isinstance(schemas, list) or not schemas
                                        or not all(isinstance(x, str) and x for x in schemas)):
                raise ConfigurationError(f"database {name!r} in {str(path)!r}: schemas must be a list of schema "
                                         'names, e.g. schemas = ["sales", "public"]')
            try:
                entries[name] = DatabaseEntry(
                    str(name), target, timeout_s=float(opts.get("timeout", 10.0)),
                    max_rows=int(opts.get("max_rows", 1000)), descriptions=descriptions,
                    description=str(opts.get("description", "")), knowledge=knowledge or None, policy=policy,
                    schema_budget=opts.get("schema_budget"), keys_from_data=keys_from_data,
                    schemas=tuple(schemas) if schemas is not None else None)
            except (TypeError, ValueError) as err:
                raise ConfigurationError(f"database {name!r} in {str(path)!r}: {err}") from None
        return cls(entries)

    @classmethod
    def demo(cls) -> "Catalog":
        """The bundled demo shop, as ``shop``, with its domain-knowledge file."""
        from .db.demo import demo_database_path, demo_knowledge_path

        return cls({"shop": DatabaseEntry("shop", str(demo_database_path()),
                                          description="The bundled demo shop: customers, products, orders, staff.",
                                          knowledge=str(demo_knowledge_path()))})

    @classmethod
    def from_options(cls, dbs: Iterable[str] = (), config: str | Path | None = None, demo: bool = False,
                     timeout_s: float = 10.0, max_rows: int = 1000, policies: Iterable[str] = (),
                     keys_from_data: bool = True, schemas: Iterable[str] = ()) -> "Catalog":
        """The catalog the doors' ``--db NAME=...`` (repeatable), ``--config FILE``, ``--demo``, ``--policy`` and
        ``--schemas`` options describe (see :meth:`with_policies` and :meth:`with_schemas`).

        >>> Catalog.from_options(["sales=/data/sales.sqlite"], demo=True).names()
        ['sales', 'shop']
        """
        dbs = list(dbs)
        catalog = cls.parse(dbs, timeout_s=timeout_s, max_rows=max_rows, keys_from_data=keys_from_data) \
            if dbs else cls({})
        if config:
            catalog = catalog.merged(cls.from_file(config))
        if demo:
            catalog = catalog.merged(cls.demo())
        if not catalog.entries:
            raise ConfigurationError("no database to serve", hint="Pass --db NAME=PATH_OR_URL, --config FILE or --demo.")
        return catalog.with_policies(policies).with_schemas(schemas)

    def with_policies(self, specs: Iterable[str]) -> "Catalog":
        """This catalog with access policies added: ``NAME=FILE`` for one database, a bare ``FILE`` for every one
        (added to what the config file gives, all merged).

        >>> Catalog.parse(["a=a.sqlite", "b=b.sqlite"]).with_policies(["b=p.yaml"]).entries["b"].policy
        ('p.yaml',)
        """
        entries = dict(self.entries)
        for spec in specs:
            name, sep, file = spec.partition("=")
            names = [name] if sep else list(entries)
            file = file if sep else spec
            for n in names:
                if n not in entries:
                    raise ConfigurationError(f"--policy names the database {n!r}, which is not configured")
                entries[n] = replace(entries[n], policy=entries[n].policy + (file,))
        return Catalog(entries)

    def with_schemas(self, specs: Iterable[str]) -> "Catalog":
        """This catalog with the schemas to read of PostgreSQL or DuckDB databases: ``NAME=SCHEMA,SCHEMA`` for one
        database (in the order a table's name is looked up; it replaces what the config file names), a bare
        ``SCHEMA,SCHEMA`` when only one database is configured.

        >>> Catalog.parse(["crm=postgresql://db/crm"]).with_schemas(["crm=sales,public"]).entries["crm"].schemas
        ('sales', 'public')
        """
        entries = dict(self.entries)
        for spec in specs:
            name, sep, listed = spec.partition("=")
            if not sep:
                if len(entries) != 1:
                    raise ConfigurationError(
                        f"--schemas {spec} does not say which database it is for",
                        hint=f"Name the database: --schemas NAME={spec} (one of {', '.join(entries)}).")
                name, listed = next(iter(entries)), spec
            if name not in entries:
                raise ConfigurationError(f"--schemas names the database {name!r}, which is not configured")
            names = tuple(n.strip() for n in listed.split(","))
            if not all(names):
                raise ConfigurationError(f"--schemas {spec}: an empty schema name",
                                         hint="List the schemas separated by commas: --schemas NAME=sales,public.")
            entries[name] = replace(entries[name], schemas=names)
        return Catalog(entries)

    def merged(self, other: "Catalog") -> "Catalog":
        both = dict(self.entries)
        for name, entry in other.entries.items():
            if name in both:
                raise ConfigurationError(f"database name {name!r} is configured twice")
            both[name] = entry
        return Catalog(both)

    # --- use -------------------------------------------------------------------------

    def names(self) -> list[str]:
        return list(self.entries)

    def entry(self, name: str) -> DatabaseEntry:
        try:
            return self.entries[name]
        except KeyError:
            raise UnknownDatabaseError(f"no database named {name!r} is configured", name=name) from None

    def pipeline_for(self, name: str, pipe: "Pipeline") -> "Pipeline":
        """``pipe`` as it asks ``name``: with the database's own ``schema_budget`` when it has one.

        >>> from sqlweave.presets import build_pipeline
        >>> catalog = Catalog({"big": DatabaseEntry("big", "big.sqlite", schema_budget=2048)})
        >>> [s.budget for s in catalog.pipeline_for("big", build_pipeline("default")).stages if hasattr(s, "budget")]
        [2048]
        """
        from .presets import with_schema_budget

        return with_schema_budget(pipe, self.entry(name).schema_budget)

    def database(self, name: str) -> Database:
        """The open, read-only handle for ``name`` (opened on first use)."""
        entry = self.entry(name)
        with self._lock:
            db = self._open.get(name)
            if db is None:
                from .engine import open_database
                from .knowledge import load_knowledge

                # a malformed knowledge file, then a malformed policy, fail here, before opening
                knowledge = load_knowledge(entry.knowledge) if entry.knowledge else None
                db, _ = open_database(entry.target, timeout_s=entry.timeout_s, max_rows=entry.max_rows,
                                      descriptions=entry.descriptions, knowledge=knowledge,
                                      policy=entry.policy, keys_from_data=entry.keys_from_data,
                                      schemas=entry.schemas)
                if db.policy is not None:
                    try:
                        db.schema()  # read and reduced to what the policy shows before the first request
                    except BaseException:
                        db.close()
                        raise
                self._open[name] = db
            return db

    def describe(self) -> list[dict[str, Any]]:
        """What a client may know of each database: name, description, dialect once opened. Never the target."""
        out = []
        for name, entry in self.entries.items():
            db = self._open.get(name)
            out.append({"name": name, "description": entry.description, "dialect": db.dialect if db else None})
        return out

    def check(self) -> None:
        """Open every database now (so an operator's typo fails at start-up, not on the first request)."""
        for name in self.entries:
            self.database(name)

    def close(self) -> None:
        with self._lock:
            for db in self._open.values():
                db.close()
            self._open.clear()
