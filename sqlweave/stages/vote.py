"""Stage: candidate generation and execution-based voting (self-consistency).

The stage composes candidate sources (:mod:`sqlweave.stages.candidate_sources`: samples of the generation
prompt, the question asked in other views) and a selector (:mod:`sqlweave.stages.selectors`: the largest result
group, or the model's choice in a close vote); its options say which.

``n`` more candidates are sampled from the generation prompt; every candidate, the
greedy answer included, is executed; candidates whose names are wrong are repaired by rule; candidates are grouped by their
result (rows as a multiset) and the largest group of working candidates wins. The winner's share of all
candidates is the answer's ``agreement``.

With ``only_below``, the stage spends its samples only where they are needed: it runs after the answer is final
and votes only when the answer's calibrated confidence (:mod:`sqlweave.confidence`) is below that floor, so
most questions cost one call. ``rewrite`` gives every sampled candidate the ``rewrite`` stage's rules, so that
samples agreeing with the rewritten answer fall in its group.

With ``select="pairwise"``, a close vote (the runner-up group within ``margin`` candidates of the largest) is
settled by the model instead of by size: it is shown one query of each of the two leading groups with their first
rows and asked which answers the question, in both orders (:mod:`sqlweave.stages.choose`, CHASE-SQL's selector);
a choice it makes both times wins, otherwise the largest group does. With ``select="review"``, every group
within ``margin`` of the largest is weighed by how likely the model finds the user's question as a description of
its query (:func:`sqlweave.stages.choose.review`), and the likeliest wins; with ``support``, a group's size counts
too (``logp + support * ln(size)``). The selectors are :mod:`sqlweave.stages.selectors`.

With ``views``, candidates that differ by design join the vote: for each schema style named (``"compact"``: one
line per table; ``"mschema"``: one line per column with example values; against the ``create_table`` statements
with example rows that generation shows), the same question is asked once more with the schema shown that way,
greedily, then ``view_samples`` times sampled. Samples of one prompt mostly repeat its greedy reading; other views
put the right reading among the candidates more often, though with the embedded 1.5B model no selection measured
turns that into more right answers (BENCHMARKS.md, candidates diverse by design).

With ``examples``, one more view shows few-shot examples: that many question/SQL pairs of the example pool (other
databases than the question's) whose SQL skeleton is closest to the answer's (RB-SQL's retrieval, with the answer
before voting as the approximated query), asked greedily and ``view_samples`` times sampled. Examples bring the
patterns of a corpus (INTERSECT for "both", counting by key) into a vote whose other candidates all come from one
zero-shot prompt.

With ``prompt_views``, the question is asked once more in each prompt template named, greedily, with the schema
generation shows (``"zero_shot_link_first"`` has the model name the tables the question needs before the query).

With ``more`` (adaptive consistency), a split vote asks for more: when the largest result group holds fewer than
``more_below`` candidates, ``more`` samples are drawn after the first ``n`` (one call, seeded after them, so the
first call is the same as in a run without them) and the vote is taken again over every candidate. A clear vote
costs nothing more.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ..confidence import estimate
from ..db.render import STYLES
from ..errors import ConfigurationError, SqlweaveError
from ..pipeline import State
from ..prompts import load
from ..retrieval.pool import load_pool
from ..sql.rewrite import Holds
from .base import check_options
from .candidate import Attempt, adopt, attempt, current_attempt, vote_groups
from .candidate_sources import FewShotView, PromptView, Samples, Sampling, SchemaView
from .repair import repair_attempt
from .rewrite import rewrite_attempt, value_probe
from .select_examples import default_pool_path, format_examples, skeleton_examples
from .selectors import SELECTIONS, Majority, Pairwise, Review, selector

View = SchemaView | FewShotView | PromptView


@dataclass(frozen=True)
class SelfConsistency:
    """Sample ``n`` candidates at ``temperature``, execute them all, keep the majority result."""

    n: int = 5
    temperature: float = 0.8
    # Sampled answers ramble after the SQL far more than greedy ones; a SQL query needs far fewer tokens.
    max_tokens: int = 200
    seed: int = 1
    #: Repair each failed candidate's table and column names by rule before voting (no model call).
    repair: bool = True
    #: Vote only when the answer's calibrated confidence is below this (None: on every answer).
    only_below: float | None = None
    #: Apply the ``rewrite`` stage's rules to each sampled candidate (for a vote placed after that stage).
    rewrite: bool = False
    #: How a close vote is settled: "majority" (the largest group), "pairwise" (the model chooses between the two
    #: leading groups) or "review" (the group whose query makes the question the most likely, by the model).
    select: str = "majority"
    #: With ``select`` other than "majority": the model is asked when the runner-up group has at least as many
    #: candidates as the largest minus this (and "review" weighs every group that large; ``None``: every group).
    margin: int | None = 1
    #: With ``select="review"``: each reviewed group scores its question log-likelihood plus this times the
    #: natural log of its size, so that a group's support counts besides the model's reading (0: likelihood only).
    support: float = 0.0
    #: Schema styles (:data:`sqlweave.db.render.STYLES`) in which the question is asked again, for candidates
    #: that differ by design from the samples of the generation prompt.
    views: tuple[str, ...] = ()
    #: Sampled candidates from each view, besides its greedy answer.
    view_samples: int = 0
    #: Few-shot pairs shown in one more view, chosen by the answer's SQL skeleton (0: no such view).
    examples: int = 0
    #: The example pool of that view (a Spider-format train.json or a bundle; ``None``: the settings'
    #: ``SQLWEAVE_EXAMPLES``, else the bundled pool).
    examples_pool: str | None = None
    #: The prompt template of the few-shot view: ``"few_shot"`` (its own instructions), or ``"zero_shot_examples"``
    #: (generation's instructions and schema, then the pairs: llama.cpp reuses the state generation evaluated).
    examples_prompt: str = "few_shot"
    #: Prompt templates in which the question is asked once more, greedily, with the schema generation shows
    #: (``"zero_shot_link_first"``: the tables the question needs named before the query).
    prompt_views: tuple[str, ...] = ()
    #: Samples drawn after the first ``n`` when the vote is split: its largest group holds fewer than
    #: ``more_below`` candidates (0: never).
    more: int = 0
    more_below: int = 0
    name: str = "vote"
    requires: ClassVar[tuple[str, ...]] = ("result",)
    provides: ClassVar[tuple[str, ...]] = ("sql", "result", "error", "candidates", "agreement")
    recovers: bool = True

    def __post_init__(self) -> None:
        check_options(self, at_least={"n": 1, "max_tokens": 1, "margin": 0, "view_samples": 0, "support": 0.0,
                                      "more": 0, "more_below": 0, "examples": 0},
                      choices={"select": SELECTIONS},
                      between={"temperature": (0.0, 2.0), "only_below": (0.0, 1.0)},
                      optional=("only_below", "margin"))
        if "{examples}" not in load(self.examples_prompt)[1]:  # an unknown template fails in load, here
            raise ConfigurationError(f"{self.name}: the prompt template {self.examples_prompt!r} shows no examples",
                                     hint="examples_prompt is few_shot or zero_shot_examples.")
        if isinstance(self.prompt_views, str):
            raise ConfigurationError(f"{self.name}: prompt_views is a tuple of template names, not a string",
                                     hint='For example prompt_views=["zero_shot_link_first"].')
        for template in self.prompt_views:
            if "{question}" not in load(template)[1]:
                raise ConfigurationError(f"{self.name}: the prompt template {template!r} does not ask the question",
                                         hint="prompt_views names generation templates, e.g. zero_shot_link_first.")
        unknown = [self.views] if isinstance(self.views, str) else [s for s in self.views if s not in STYLES]
        if unknown:
            raise ConfigurationError(f"{self.name}: unknown schema views {unknown[0]!r}",
                                     hint=f"views is a tuple of schema styles: {', '.join(STYLES)}.")

    @property
    def sampling(self) -> Sampling:
        return Sampling(self.temperature, self.max_tokens, self.seed)

    def views_of(self, few_shot: str | None = None) -> list[View]:
        """The views the vote also asks, in order: each schema style, the few-shot ``few_shot`` block (the pairs
        chosen for this question), each prompt template.

        >>> [type(v).__name__ for v in SelfConsistency(views=("compact",), prompt_views=("zero_shot_link_first",))
        ...  .views_of("Question: ...")]
        ['SchemaView', 'FewShotView', 'PromptView']
        """
        how = self.sampling
        found: list[View] = [SchemaView(how, self.view_samples, style) for style in self.views]
        if few_shot is not None:
            found.append(FewShotView(how, self.view_samples, few_shot, self.examples_prompt))
        return found + [PromptView(how, 0, template) for template in self.prompt_views]

    @property
    def selector(self) -> Majority | Pairwise | Review:
        """How a vote is settled (:mod:`sqlweave.stages.selectors`).

        >>> SelfConsistency(select="review", margin=None, support=2.0).selector
        Review(margin=None, support=2.0)
        """
        return selector(self.select, self.margin, self.support)

    def __call__(self, state: State) -> None:
        greedy = current_attempt(state)
        if not state.prompt or greedy.kind == "refused":
            state.note(skipped=True)
            return
        sure: dict[str, Any] = {}
        if self.only_below is not None:
            sure["confidence"] = estimate(state.question, state.sql, state.result, state.error, state.signals,
                                          state.db.dialect)
            if sure["confidence"] >= self.only_below:
                state.note(skipped=True, **sure)
                return
        # chosen first: an unreadable pool is the user's to fix, so it fails the stage instead of costing one view
        few_shot = self._few_shot(state)
        texts: list[str] = []
        try:
            Samples(self.n, self.sampling).draw(state, texts)
        except SqlweaveError as err:  # the answer stands as it is; the trace says the second opinion was lost
            state.note(sampling_failed=f"{err.code}: {err.message}", changed=False, **sure)
            return
        try:
            for view in self.views_of(few_shot):
                view.draw(state, texts)
        except SqlweaveError as err:  # what was answered before the failure still votes
            sure["views_failed"] = f"{err.code}: {err.message}"
        holds = value_probe(state.db) if self.rewrite else None  # one set of answers for every sample
        # wrong names fixed by rule first, so a candidate is not lost to a typo
        first = repair_attempt(state, greedy)[0] if self.repair else greedy
        candidates: list[Attempt] = [first] + self._prepared(state, texts, holds)
        # nothing works: fall back to empty results, then keep the greedy answer
        groups = vote_groups(candidates)
        if self.more and len(groups[0] if groups else ()) < self.more_below:
            extra: list[str] = []
            try:  # a split vote: more samples, seeded after the first ones, and the vote again
                Samples(self.more, self.sampling, offset=self.n).draw(state, extra)
            except SqlweaveError as err:  # the vote stands on the candidates it has
                sure["more_failed"] = f"{err.code}: {err.message}"
            else:
                sure["more"] = len(extra)
                candidates += self._prepared(state, extra, holds)
                groups = vote_groups(candidates)
        if not groups:
            state.agreement = 0.0
            state.note(votes=[c.kind for c in candidates], winner=None, **sure)
            return
        # Largest group wins unless the selector settles a close vote otherwise; on a tie, the group holding the
        # earliest candidate (the greedy one first).
        winner, said = self.selector.choose(state, candidates, groups)
        sure.update(said)
        chosen = candidates[winner[0]]
        adopt(state, chosen)
        state.agreement = len(winner) / len(candidates)
        state.note(votes=[c.kind for c in candidates], groups=[len(g) for g in groups],
                   agreement=round(state.agreement, 3), changed=chosen is not greedy, **sure)

    def _prepared(self, state: State, texts: list[str], holds: Holds | None) -> list[Attempt]:
        """Sampled ``texts`` as candidates: run, names repaired and rewritten by rule as the stage is asked to."""
        found = [attempt(state, t) for t in texts]
        if self.repair:
            found = [repair_attempt(state, c)[0] for c in found]
        if self.rewrite:
            found = [rewrite_attempt(state, c, holds)[0] for c in found]
        return found

    def _few_shot(self, state: State) -> str | None:
        """The prompt block of the few-shot view: the ``examples`` pairs of the pool (other databases) whose SQL
        skeleton is closest to the answer's; None without ``examples`` or a rendered schema to show them with."""
        if not self.examples or state.rendered_schema is None:
            return None
        pool = load_pool(self.examples_pool or default_pool_path(state.resources.settings), state.resources)
        query, shown = skeleton_examples(state, pool, state.sql or "", self.examples)
        state.note(examples=[e.question for e in shown], examples_query=query)
        return format_examples(shown)
