"""Stage: candidate generation and execution-based voting (self-consistency).

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
too (``logp + support * ln(size)``); with ``review_examples``, the model first reads that many pairs of the example
pool, each a query with the question it answers, chosen by the question's skeleton (or the answer's SQL skeleton).

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

With ``examples_by="shape"``, those pairs are matched by the skeleton's words, placeholders and symbols
(``SELECT _, _, _ FROM _`` is then another text than ``SELECT _ FROM _``). Matched by its English words alone, a
short skeleton ties with hundreds of pool pairs, and those shown are the first in an order seeded with the skeleton
(:mod:`sqlweave.retrieval.lexical`). Matched by shape, ``best`` answered 167 of the tuning sample's 200 questions
against 169 for the English words with the pairs numpy's tie order chose then (BENCHMARKS.md), so no preset uses it.

With ``question_examples``, one more few-shot view shows that many other pairs, chosen by the question instead
of the answer: those whose question skeleton (the question with the schema's names masked, as DAIL-SQL masks
them) is closest by BM25, leaving out the pairs the SQL-skeleton view shows. It is asked greedily only, after
that view.

With ``prompt_views``, the question is asked once more in each prompt template named, greedily, with the schema
generation shows (``"zero_shot_link_first"`` has the model name the tables the question needs before the query).

With ``finish``, an answer that holds no query (a sampled reasoning cut off at ``max_tokens``: one sampled
answer in seventeen of ``best``'s votes on Spider dev) is given one more turn, greedy and at most ``finish``
tokens long: the model is shown its answer and asked for the query alone, held by a grammar to one ```sql code
block where the backend takes grammars (asked without it, the embedded model went on reasoning two times in
five). The finished answer takes the unfinished one's place in the vote. With the embedded model no finished
query was a right reading the vote lacked (BENCHMARKS.md, an answer that stops before its query).

With ``fenced``, every sampled answer is held by the same grammar to one ```sql code block (backends that take
grammars): the embedded model opens about one sampled answer in four with prose reasoning, slower and less often
right than the answers that open with the query. Held so, more samples are right but fewer questions are (83.5%
against 84.5% for ``best`` on the tuning sample; BENCHMARKS.md, how a vote's samples open), so no preset uses it.

With ``more`` (adaptive consistency), a split vote asks for more: when the largest result group holds fewer than
``more_below`` candidates, ``more`` samples are drawn after the first ``n`` (one call, seeded after them, so the
first call is the same as in a run without them) and the vote is taken again over every candidate. A clear vote
costs nothing more.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ..confidence import estimate
from ..db.render import STYLES, render_schema
from ..errors import ConfigurationError, SqlweaveError
from ..llm.base import Message
from ..pipeline import State
from ..prompts import load
from ..retrieval.pool import SHAPE, PoolExample, load_pool
from ..sql.extract import holds_query
from ..sql.rewrite import Holds
from .base import check_options
from .candidate import Attempt, adopt, attempt, current_attempt, vote_groups
from .choose import choose_between, review, review_pairs
from .generate import dialect_name, generation_prompt
from .repair import repair_attempt
from .rewrite import rewrite_attempt, value_probe
from .select_examples import (
    besides, default_pool_path, format_examples, other_databases, question_skeleton_of, skeleton_examples,
)


#: The grammar of a finishing turn (``finish``) and of every sample with ``fenced``: one ```sql code block and
#: nothing else (no backtick inside it: a name that needs quoting is quoted with double quotes).
FENCED_SQL = 'root ::= "```sql\\n" [^`]+ "```"'
#: How :class:`SelfConsistency` settles a vote.
SELECTIONS = ("majority", "pairwise", "review")
#: How the pairs shown to a vote's reviewer are chosen: by the question's skeleton or by the answer's SQL skeleton.
REVIEW_EXAMPLES_BY = ("question", "sql")
#: How the few-shot view's pairs are matched to the answer's SQL skeleton: BM25 over its English words
#: (``"skeleton"``: ``select``, ``from``, ``where``...) or over its words, placeholders and symbols and their pairs
#: (``"shape"``, :func:`sqlweave.retrieval.lexical.shape_tokens`).
EXAMPLES_BY = {"skeleton": "sql_skeleton", "shape": SHAPE}


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
    #: With ``select="review"``: add each query's likelihood as the model's answer to the generation prompt
    #: (Coder-Reviewer reranking: the coder and reviewer scores together).
    coder: bool = False
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
    #: The prompt template of the few-shot views: ``"few_shot"`` (its own instructions), or ``"zero_shot_examples"``
    #: (generation's instructions and schema, then the pairs: llama.cpp reuses the state generation evaluated).
    examples_prompt: str = "few_shot"
    #: How those pairs are matched to the answer's skeleton (:data:`EXAMPLES_BY`).
    examples_by: str = "skeleton"
    #: Few-shot pairs shown in one more view, asked greedily, chosen by the question's skeleton (0: no such view).
    question_examples: int = 0
    #: With ``select="review"``: pairs of the example pool shown to the reviewer, each a query with the question it
    #: answers (0: none), the same pairs for every group. ``review_examples_by`` chooses them by the question's
    #: skeleton (``"question"``) or by the answer's SQL skeleton (``"sql"``).
    review_examples: int = 0
    review_examples_by: str = "question"
    #: Prompt templates in which the question is asked once more, greedily, with the schema generation shows
    #: (``"zero_shot_link_first"``: the tables the question needs named before the query).
    prompt_views: tuple[str, ...] = ()
    #: Samples drawn after the first ``n`` when the vote is split: its largest group holds fewer than
    #: ``more_below`` candidates (0: never).
    more: int = 0
    more_below: int = 0
    #: Tokens of one more greedy turn given to each answer that holds no query, asking for the query alone
    #: (0: no such turn).
    finish: int = 0
    #: Hold every sampled answer to one ```sql code block (:data:`FENCED_SQL`), where the backend takes grammars.
    fenced: bool = False
    name: str = "vote"
    requires: ClassVar[tuple[str, ...]] = ("result",)
    provides: ClassVar[tuple[str, ...]] = ("sql", "result", "error", "candidates", "agreement")
    recovers: bool = True

    def __post_init__(self) -> None:
        check_options(self, at_least={"n": 1, "max_tokens": 1, "margin": 0, "view_samples": 0, "support": 0.0,
                                      "more": 0, "more_below": 0, "examples": 0, "finish": 0,
                                      "question_examples": 0, "review_examples": 0},
                      choices={"select": SELECTIONS, "review_examples_by": REVIEW_EXAMPLES_BY,
                               "examples_by": tuple(EXAMPLES_BY)},
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
        examples, demos = self._examples(state)
        finished: list[str] = []
        try:
            texts = self._answers(state, state.prompt, finished, n=self.n, temperature=self.temperature,
                                  max_tokens=self.max_tokens, seed=self.seed)
        except SqlweaveError as err:  # the answer stands as it is; the trace says the second opinion was lost
            state.note(sampling_failed=f"{err.code}: {err.message}", changed=False, **sure)
            return
        try:
            self._ask_views(state, texts, examples, finished)
        except SqlweaveError as err:  # what was answered before the failure still votes
            sure["views_failed"] = f"{err.code}: {err.message}"
        holds = value_probe(state.db) if self.rewrite else None  # one set of answers for every sample
        # wrong names fixed by rule first, so a candidate is not lost to a typo
        first = repair_attempt(state, greedy)[0] if self.repair else greedy
        candidates: list[Attempt] = [first] + self._prepared(state, texts, holds)
        # nothing works: fall back to empty results, then keep the greedy answer
        groups = vote_groups(candidates)
        if self.more and len(groups[0] if groups else ()) < self.more_below:
            try:  # a split vote: more samples, seeded after the first ones, and the vote again
                extra = self._answers(state, state.prompt, finished, n=self.more, temperature=self.temperature,
                                      max_tokens=self.max_tokens, seed=self.seed + self.n)
            except SqlweaveError as err:  # the vote stands on the candidates it has
                sure["more_failed"] = f"{err.code}: {err.message}"
            else:
                sure["more"] = len(extra)
                candidates += self._prepared(state, extra, holds)
                groups = vote_groups(candidates)
        if self.finish:
            sure["finished"] = len(finished)
        if not groups:
            state.agreement = 0.0
            state.note(votes=[c.kind for c in candidates], winner=None, **sure)
            return
        # Largest group wins; on a tie, the group holding the earliest candidate (the greedy one first).
        winner = groups[0]
        contenders = [g for g in groups if self.margin is None or len(g) >= len(winner) - self.margin]
        if self.select == "pairwise" and len(contenders) > 1:
            pick, said = choose_between(state, candidates[winner[0]], candidates[groups[1][0]])
            sure["selector"] = {**said, "chose": {None: "majority", 0: "largest", 1: "runner-up"}[pick]}
            if pick == 1:
                winner = groups[1]
        elif self.select == "review" and len(contenders) > 1:
            pick, said = review(state, [candidates[g[0]] for g in contenders], coder=self.coder,
                                sizes=[len(g) for g in contenders], support=self.support, examples=demos)
            sure["selector"] = {**said, "chose": "majority" if pick is None else "largest" if pick == 0
                                else f"group {pick + 1}"}
            winner = contenders[pick or 0]
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

    def _examples(self, state: State) -> tuple[list[tuple[str, bool]], str]:
        """The prompt block of each few-shot view, and whether it is sampled besides asked greedily:
        the ``examples`` pairs whose SQL skeleton is closest to the answer's, then the ``question_examples`` pairs
        whose question skeleton is closest to the question's; and the block of pairs the reviewer is shown
        (``review_examples``). None without a rendered schema to show them with."""
        reviewed = self.review_examples if self.select == "review" else 0
        if not (self.examples or self.question_examples or reviewed) or state.rendered_schema is None:
            return [], ""
        pool = load_pool(self.examples_pool or default_pool_path(state.resources.settings), state.resources)
        blocks: list[tuple[str, bool]] = []
        shown: list[PoolExample] = []
        if self.examples:
            query, shown = skeleton_examples(state, pool, state.sql or "", self.examples,
                                             EXAMPLES_BY[self.examples_by])
            state.note(examples=[e.question for e in shown], examples_query=query)
            blocks.append((format_examples(shown), True))
        if self.question_examples:
            query = question_skeleton_of(state)
            chosen = pool.search("question_skeleton", query, self.question_examples,
                                 besides(other_databases(state), shown))
            state.note(question_examples=[e.question for e in chosen], question_examples_query=query)
            blocks.append((format_examples(chosen), False))
        if not reviewed:
            return blocks, ""
        if self.review_examples_by == "sql":
            demos = skeleton_examples(state, pool, state.sql or "", reviewed)[1]
        else:
            demos = pool.search("question_skeleton", question_skeleton_of(state), reviewed, other_databases(state))
        state.note(review_examples=[e.question for e in demos])
        return blocks, review_pairs(demos)

    def _ask_views(self, state: State, texts: list[str], examples: list[tuple[str, bool]],
                   finished: list[str]) -> None:
        """Add to ``texts`` the answers of the question asked again with the schema shown in each of ``views``,
        then with each few-shot block of ``examples``: greedy, then ``view_samples`` samples (one call each,
        seeded as the vote's samples are, so that a run with fewer samples repeats the calls of a run with more),
        except for a block asked greedily only; then in each template of ``prompt_views``, greedily."""
        for style in self.views:
            shown = render_schema(state.shown_schema, style, count=state.llm.count_tokens).text
            self._ask(state, generation_prompt(state, state.prompt_template or "zero_shot", shown), texts, finished)
        if state.rendered_schema is None:  # no schema as generation showed it: no few-shot or prompt view
            return
        schema = state.rendered_schema.text
        for block, sampled in examples:
            self._ask(state, generation_prompt(state, self.examples_prompt, schema, examples=block), texts, finished,
                      sampled=sampled)
        for template in self.prompt_views:
            self._ask(state, generation_prompt(state, template, schema), texts, finished, sampled=False)

    def _ask(self, state: State, prompt: list[Message], texts: list[str], finished: list[str],
             sampled: bool = True) -> None:
        """Add to ``texts`` the answers to ``prompt``: greedy, then (``sampled``) ``view_samples`` samples."""
        texts += self._answers(state, prompt, finished, temperature=0.0, max_tokens=self.max_tokens)
        for i in range(self.view_samples if sampled else 0):
            texts += self._answers(state, prompt, finished, temperature=self.temperature, max_tokens=self.max_tokens,
                                   seed=self.seed + i)

    def _answers(self, state: State, prompt: list[Message], finished: list[str], **options: Any) -> list[str]:
        """The answers to one call of ``prompt`` with ``options`` (sampled ones held to a code block with ``fenced``).
        With ``finish``, each answer that holds no query is replaced by the query the model writes when shown it and
        asked for the query alone (one greedy turn), and the replaced answer is added to ``finished``; a finishing
        turn that fails keeps the answer as it was."""
        if self.fenced and options.get("temperature") and state.llm.supports_grammar:
            options["grammar"] = FENCED_SQL
        texts = list(state.complete(prompt, **options).texts)
        if not self.finish:
            return texts
        dialect = state.db.dialect
        ask = (f"Your answer has no SQL query yet. Write the {dialect_name(dialect)} query that answers the question "
               "now, alone in a ```sql code block.")
        grammar = FENCED_SQL if state.llm.supports_grammar else None
        for i, text in enumerate(texts):
            if holds_query(text, dialect):
                continue
            try:
                done = state.complete([*prompt, Message("assistant", text), Message("user", ask)], temperature=0.0,
                                      max_tokens=self.finish, grammar=grammar).text
            except SqlweaveError:  # the unfinished answer votes as it is
                continue
            finished.append(text)
            texts[i] = done
        return texts
