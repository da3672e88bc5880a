"""A fixed, stratified, reproducible sample of a dataset (strata: hardness).

>>> from sqlweave.eval.datasets import Example
>>> exs = [Example(str(i), "db", "q", "SELECT 1" if i % 2 else "SELECT a FROM t WHERE b = 1 AND c = 2") for i in range(10)]
>>> len(stratified_sample(exs, 4))
4
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Sequence, TypeVar

from ..errors import ConfigurationError
from .datasets import Example

T = TypeVar("T")


def spread(items: Sequence[T], n: int | None) -> list[T]:
    """``n`` of ``items`` spread evenly over them (every part of a file ordered by database early on), or all of
    them when ``n`` is ``None`` or not smaller.

    >>> spread(list(range(10)), 4), spread(list(range(10)), 2), spread("ab", None)
    ([0, 2, 5, 7], [0, 5], ['a', 'b'])
    """
    if not n or n >= len(items):
        return list(items)
    step = len(items) / n
    return [items[int(i * step)] for i in range(n)]


def stratified_sample(examples: Sequence[Example], n: int, seed: int = 0) -> list[Example]:
    """``n`` examples, each hardness level represented in proportion (largest remainder), fixed by ``seed``."""
    from .runner import example_hardness

    if n >= len(examples):
        return list(examples)
    strata: dict[str, list[Example]] = {}
    for ex in examples:
        strata.setdefault(example_hardness(ex), []).append(ex)
    total = len(examples)
    quotas = {k: n * len(v) / total for k, v in strata.items()}
    counts = {k: int(q) for k, q in quotas.items()}
    for k in sorted(quotas, key=lambda k: quotas[k] - counts[k], reverse=True)[: n - sum(counts.values())]:
        counts[k] += 1
    rng = random.Random(seed)
    chosen = {ex.id for k, v in sorted(strata.items()) for ex in rng.sample(v, counts[k])}
    return [ex for ex in examples if ex.id in chosen]


def write_sample(path: Path, dataset: str, examples: Sequence[Example], seed: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"dataset": dataset, "seed": seed, "ids": [e.id for e in examples]}, indent=1) + "\n")


def sample_ids(path: Path) -> list[str]:
    """The question ids a sample file names (a JSON list, or an object with ``ids``)."""
    try:
        data = json.loads(Path(path).read_text())
        ids = data["ids"] if isinstance(data, dict) else data
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ConfigurationError(f"cannot read sample file {path}: {err}") from err
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise ConfigurationError(f"cannot read sample file {path}: its ids must be a list of question ids")
    return ids


def read_sample(path: Path, examples: Sequence[Example], left_out: Sequence[Example] = ()) -> list[Example]:
    """The ``examples`` the sample file at ``path`` names, in its order. Ids of ``left_out`` questions (whose
    database is missing: :meth:`~sqlweave.eval.datasets.Dataset.missing_note` says so) are passed over; any other
    id not among ``examples`` is an error."""
    ids = sample_ids(path)
    by_id = {e.id: e for e in examples}
    passed = {e.id for e in left_out}
    missing = [i for i in ids if i not in by_id and i not in passed]
    if missing:
        raise ConfigurationError(f"sample file {path} names {len(missing)} questions not in the dataset (e.g. {missing[0]})")
    return [by_id[i] for i in ids if i in by_id]
