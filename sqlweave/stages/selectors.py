"""How a vote picks one result group: the largest (:class:`Majority`), the model's choice between the two leading
ones (:class:`Pairwise`, CHASE-SQL's selector) or reviewer reranking (:class:`Review`). Each is a small frozen
dataclass whose :meth:`choose` takes the candidates and their result groups (largest first; on a tie, the group
holding the earliest candidate) and returns the winning group with what it noted.

A close vote is one whose runner-up group has at least as many candidates as the largest minus ``margin``
(``None``: every group); the model is asked only then, and when it does not decide the largest group wins.

>>> Majority().choose(None, [], [[0, 2], [1]])  # type: ignore[arg-type]
([0, 2], {})
>>> selector("review", margin=None, support=2.0)
Review(margin=None, support=2.0)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..pipeline import State
from .candidate import Attempt
from .choose import choose_between, review

#: How a vote may be settled (:func:`selector`).
SELECTIONS = ("majority", "pairwise", "review")

Groups = list[list[int]]


@dataclass(frozen=True)
class Majority:
    """The largest group."""

    def choose(self, state: State, candidates: list[Attempt], groups: Groups) -> tuple[list[int], dict[str, Any]]:
        return groups[0], {}


def _contenders(groups: Groups, margin: int | None) -> Groups:
    return [g for g in groups if margin is None or len(g) >= len(groups[0]) - margin]


@dataclass(frozen=True)
class Pairwise:
    """In a close vote, the model shown one query of each of the two leading groups with their first rows, in both
    orders (:func:`~sqlweave.stages.choose.choose_between`): a choice it makes both times wins."""

    margin: int | None = 1

    def choose(self, state: State, candidates: list[Attempt], groups: Groups) -> tuple[list[int], dict[str, Any]]:
        if len(_contenders(groups, self.margin)) < 2:
            return groups[0], {}
        pick, said = choose_between(state, candidates[groups[0][0]], candidates[groups[1][0]])
        chose = {None: "majority", 0: "largest", 1: "runner-up"}[pick]
        return (groups[1] if pick == 1 else groups[0]), {"selector": {**said, "chose": chose}}


@dataclass(frozen=True)
class Review:
    """In a close vote, every group within ``margin`` of the largest scores the model's log-probability of the
    question as a description of its query (:func:`~sqlweave.stages.choose.review`) plus ``support`` times the
    natural log of its size; the highest wins."""

    margin: int | None = 1
    support: float = 0.0

    def choose(self, state: State, candidates: list[Attempt], groups: Groups) -> tuple[list[int], dict[str, Any]]:
        contenders = _contenders(groups, self.margin)
        if len(contenders) < 2:
            return groups[0], {}
        pick, said = review(state, [candidates[g[0]] for g in contenders], sizes=[len(g) for g in contenders],
                            support=self.support)
        chose = "majority" if pick is None else "largest" if pick == 0 else f"group {pick + 1}"
        return contenders[pick or 0], {"selector": {**said, "chose": chose}}


def selector(select: str, margin: int | None = 1, support: float = 0.0) -> Majority | Pairwise | Review:
    """The selector named ``select`` (one of :data:`SELECTIONS`)."""
    if select == "pairwise":
        return Pairwise(margin)
    if select == "review":
        return Review(margin, support)
    return Majority()
