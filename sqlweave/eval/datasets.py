"""Load Spider-format and BIRD-format datasets from any folder.

Malformed entries are reported (``Dataset.problems``), questions whose database is missing are left out
(``Dataset.left_out``, ``Dataset.missing_note``), never a crash.

>>> ds = load_spider("data/spider", "dev")   # doctest: +SKIP
>>> len(ds.examples), len(ds.missing_databases)         # doctest: +SKIP
(972, 1)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from ..errors import ConfigurationError


@dataclass(frozen=True)
class Example:
    """One question with its gold SQL."""

    id: str
    db_id: str
    question: str
    gold_sql: str
    evidence: str = ""
    difficulty: str | None = None  # BIRD's label, or Spider hardness when known
    gold_parse: Any = None  # Spider's pre-parsed "sql" field, when the file has it


@dataclass(frozen=True)
class Dataset:
    name: str
    root: Path
    examples: tuple[Example, ...]
    db_dir: Path
    missing_databases: tuple[str, ...] = ()
    skipped: int = 0
    problems: tuple[str, ...] = field(default_factory=tuple)  # malformed entries
    total: int = 0  # entries in the questions file, kept or not
    left_out: tuple[Example, ...] = ()  # the questions whose database is missing
    #: a database that declares no foreign key is read with the keys its data shows, as sqlweave reads it
    #: (:meth:`sqlweave.db.Database.open`); False keeps such databases keyless
    keys_from_data: bool = True

    def db_path(self, db_id: str) -> Path:
        return self.db_dir / db_id / f"{db_id}.sqlite"

    def descriptions_path(self, db_id: str) -> Path | None:
        """A descriptions or knowledge file for ``db_id``'s database (none for Spider's own)."""
        return None

    def missing_note(self, ids: Iterable[str] | None = None) -> str | None:
        """What the questions ``ids`` (default: every question of the file) lose to missing databases, or None.

        >>> ds = Dataset("d", Path("."), (), Path("."), left_out=(Example("dev-3", "wta_1", "q", "SELECT 1"),))
        >>> ds.missing_note(), ds.missing_note(["dev-1"])
        ('1 questions skipped: databases missing: wta_1', None)
        """
        wanted = None if ids is None else set(ids)
        lost = [e for e in self.left_out if wanted is None or e.id in wanted]
        if not lost:
            return None
        return f"{len(lost)} questions skipped: databases missing: {', '.join(sorted({e.db_id for e in lost}))}"

    def notes(self, ids: Iterable[str] | None = None) -> tuple[str, ...]:
        """What a run of the questions ``ids`` (default: all) should be told: malformed entries, then
        :meth:`missing_note`."""
        missing = self.missing_note(ids)
        return self.problems + ((missing,) if missing else ())


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigurationError(f"no dataset file at {str(path)!r}", hint="Pass --data-dir pointing at the dataset folder.") from None
    except ValueError as err:
        raise ConfigurationError(f"{str(path)!r} is not valid JSON: {err}") from err


def _collect(name: str, root: Path, db_dir: Path, data: Any, required: set[str],
             build: Callable[[int, dict[str, Any]], Example]) -> Dataset:
    """Keep entries that have ``required`` keys and whose database exists; report the rest."""
    if not isinstance(data, list):
        raise ConfigurationError(f"the questions file of {name} must hold a list of questions")
    examples: list[Example] = []
    left_out: list[Example] = []
    problems: list[str] = []
    for i, item in enumerate(data):
        if not isinstance(item, dict) or not required <= item.keys():
            problems.append(f"entry {i}: missing {'/'.join(sorted(required))}")
            continue
        found = (db_dir / item["db_id"] / f"{item['db_id']}.sqlite").is_file()
        (examples if found else left_out).append(build(i, item))
    missing = tuple(sorted({e.db_id for e in left_out}))
    return Dataset(name, root, tuple(examples), db_dir, missing, len(left_out), tuple(problems), len(data),
                   tuple(left_out))


def load_spider(root: str | Path, split: str = "dev", *, questions_file: str | None = None) -> Dataset:
    """Spider layout: ``<split>.json`` (db_id, question, query), ``database/<db_id>/<db_id>.sqlite``.

    Questions whose database is missing are left out and counted in ``skipped``.
    """
    root = Path(root)
    data = _read_json(root / (questions_file or f"{split}.json"))
    return _collect(
        f"spider-{split}", root, root / "database", data, {"db_id", "question", "query"},
        lambda i, item: Example(id=f"{split}-{i}", db_id=item["db_id"], question=item["question"],
                                gold_sql=item["query"], gold_parse=item.get("sql")),
    )


def load_spider_syn(root: str | Path, split: str = "dev") -> Dataset:
    """Spider-Syn: ``<split>.json`` (db_id, SpiderQuestion, SpiderSynQuestion, query), the questions of Spider dev
    reworded with synonyms, in Spider's order. Examples keep Spider's ids (``dev-0``, ...), so a Spider sample
    file picks the same questions and the two runs compare question by question. Databases are Spider's:
    ``database/`` beside the file if there is one, else ``../spider/database``.
    """
    root = Path(root)
    data = _read_json(root / f"{split}.json")
    db_dir = root / "database" if (root / "database").is_dir() else root.parent / "spider" / "database"
    return _collect(
        f"spider-syn-{split}", root, db_dir, data, {"db_id", "SpiderSynQuestion", "query"},
        lambda i, item: Example(id=f"{split}-{i}", db_id=item["db_id"], question=item["SpiderSynQuestion"],
                                gold_sql=item["query"]),
    )


def load_bird(root: str | Path, split: str = "dev") -> Dataset:
    """BIRD layout: ``<split>.json`` (question_id, db_id, question, evidence, SQL, difficulty) and
    ``<split>_databases/<db_id>/<db_id>.sqlite`` with ``database_description/*.csv`` beside each."""
    root = Path(root)
    data = _read_json(root / f"{split}.json")
    return _collect(
        f"bird-{split}", root, root / f"{split}_databases", data, {"db_id", "question", "SQL"},
        lambda i, item: Example(id=str(item.get("question_id", i)), db_id=item["db_id"], question=item["question"],
                                gold_sql=item["SQL"], evidence=item.get("evidence", ""),
                                difficulty=item.get("difficulty")),
    )


#: The datasets sqlweave evaluates on by name: (format, split, its folder in the data folder).
DATASETS: dict[str, tuple[str, str, str]] = {
    "spider-dev": ("spider", "dev", "spider"),
    "spider-train": ("spider", "train", "spider"),
    # Spider dev reworded with synonyms (Gan et al. 2021): the same questions, databases and gold queries
    "spider-syn": ("spider-syn", "dev", "spider_syn"),
    "bird-dev": ("bird", "dev", "bird"),
}

#: The variable naming the folder that holds the datasets' folders (``spider/``, ``spider_syn/``, ``bird/``).
DATA_DIR_ENV = "SQLWEAVE_DATA_DIR"


def default_data_dir(name: str) -> Path:
    """The folder dataset ``name`` is read from when none is given: its folder in ``$SQLWEAVE_DATA_DIR`` (default:
    ``data`` in the current folder).

    >>> import os; os.environ["SQLWEAVE_DATA_DIR"] = "/srv/benchmarks"
    >>> str(default_data_dir("spider-syn"))
    '/srv/benchmarks/spider_syn'
    >>> del os.environ["SQLWEAVE_DATA_DIR"]
    """
    import os

    return Path(os.environ.get(DATA_DIR_ENV) or "data") / _spec(name)[2]


def load_dataset(name: str, data_dir: str | Path | None = None) -> Dataset:
    """Dataset ``name`` (one of :data:`DATASETS`) from ``data_dir`` (default: :func:`default_data_dir`).

    >>> load_dataset("spider-test")
    Traceback (most recent call last):
    ...
    sqlweave.errors.ConfigurationError: unknown dataset 'spider-test' (Use one of: spider-dev, spider-train, spider-syn, bird-dev.)
    """
    kind, split, _folder = _spec(name)
    root = Path(data_dir) if data_dir is not None else default_data_dir(name)
    loaders: dict[str, Callable[[Path, str], Dataset]] = {"spider": load_spider, "spider-syn": load_spider_syn,
                                                          "bird": load_bird}
    return loaders[kind](root, split)


def _spec(name: str) -> tuple[str, str, str]:
    if name not in DATASETS:
        raise ConfigurationError(f"unknown dataset {name!r}", hint=f"Use one of: {', '.join(DATASETS)}.")
    return DATASETS[name]
