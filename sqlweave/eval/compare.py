"""Two runs side by side: EX by hardness on the questions both answered, and the questions that flipped.

>>> from sqlweave.eval.runner import QuestionResult
>>> def r(qid, match):
...     return QuestionResult(qid, "db", "q?", "SELECT 1", "SELECT 1", "easy", match, match, True, None, 0, 0, 1, 0.1, "")
>>> c = compare_runs([r("a", True), r("b", False)], [r("a", True), r("b", True), r("c", True)])
>>> c.common, [x.id for x, _ in c.gained], c.lost, c.rows()[-1]
(2, ['b'], [], ('all', 2, 50.0, 100.0))
"""

from __future__ import annotations

from dataclasses import dataclass

from .runner import QuestionResult, Summary, summarize


@dataclass(frozen=True)
class Comparison:
    """Runs A and B summarised on their common questions; ``gained``/``lost`` pair A's and B's results of the
    questions B got right where A did not, and the other way round (in A's order)."""

    a: Summary
    b: Summary
    common: int
    gained: list[tuple[QuestionResult, QuestionResult]]
    lost: list[tuple[QuestionResult, QuestionResult]]

    def rows(self) -> list[tuple[str, int, float, float]]:
        """``(hardness, questions, EX of A, EX of B)`` per hardness level, then ``"all"``."""
        out = [(level, n, ex_a, self.b.by_level.get(level, (0, 0.0))[1])
               for level, (n, ex_a) in self.a.by_level.items()]
        return out + [("all", self.a.n, self.a.ex, self.b.ex)]


def compare_runs(a: list[QuestionResult], b: list[QuestionResult]) -> Comparison:
    """Compare two runs' results on the questions both have."""
    by_b = {r.id: r for r in b}
    mine = [r for r in a if r.id in by_b]
    theirs = [by_b[r.id] for r in mine]
    pairs = list(zip(mine, theirs))
    return Comparison(summarize(mine), summarize(theirs), len(mine),
                      gained=[(x, y) for x, y in pairs if not x.match and y.match],
                      lost=[(x, y) for x, y in pairs if x.match and not y.match])
