"""Where a vote's candidates come from: samples of the generation prompt, and the question asked again in other
prompts (views). Each source is a small frozen dataclass whose :meth:`draw` adds the answers of its calls to a list;
:class:`~sqlweave.stages.vote.SelfConsistency` draws from its sources in order and votes over what they answered.

- :class:`Samples`: ``n`` samples of the generation prompt in one call.
- :class:`SchemaView`: the question asked with the schema shown in another style (``"compact"``, ``"mschema"``).
- :class:`FewShotView`: the question asked with few-shot pairs of the example pool (chosen before the vote).
- :class:`PromptView`: the question asked in another generation template (``"zero_shot_link_first"``).

A view is asked greedily, then ``samples`` times sampled (one call each, seeded from the vote's seed, so that a
run with fewer samples repeats the calls of a run with more).

>>> how = Sampling(temperature=0.8, max_tokens=200, seed=1)
>>> [type(s).__name__ for s in (Samples(4, how), SchemaView(how, samples=2, style="compact"))]
['Samples', 'SchemaView']
"""

from __future__ import annotations

from dataclasses import dataclass

from ..db.render import render_schema
from ..llm.base import Message
from ..pipeline import State
from .generate import generation_prompt


@dataclass(frozen=True)
class Sampling:
    """How a vote's calls are made: the temperature of its samples, the tokens of every answer, the first seed."""

    temperature: float
    max_tokens: int
    seed: int


def answers(state: State, prompt: list[Message], **options: object) -> list[str]:
    """The answers of one call of ``prompt`` with ``options``."""
    return list(state.complete(prompt, **options).texts)


@dataclass(frozen=True)
class Samples:
    """``n`` samples of the generation prompt in one call, seeded ``offset`` after the vote's seed (more samples
    drawn after the first ``n`` are seeded after them, so the first call is the same in a run without them)."""

    n: int
    how: Sampling
    offset: int = 0

    def draw(self, state: State, into: list[str]) -> None:
        into += answers(state, state.prompt, n=self.n, temperature=self.how.temperature,
                        max_tokens=self.how.max_tokens, seed=self.how.seed + self.offset)


@dataclass(frozen=True)
class _View:
    """The question asked with another prompt (:meth:`prompt`): greedily, then ``samples`` times sampled."""

    how: Sampling
    samples: int = 0

    def prompt(self, state: State) -> list[Message] | None:
        raise NotImplementedError

    def draw(self, state: State, into: list[str]) -> None:
        prompt = self.prompt(state)
        if prompt is None:
            return
        into += answers(state, prompt, temperature=0.0, max_tokens=self.how.max_tokens)
        for i in range(self.samples):
            into += answers(state, prompt, temperature=self.how.temperature, max_tokens=self.how.max_tokens,
                            seed=self.how.seed + i)


@dataclass(frozen=True)
class SchemaView(_View):
    """The generation prompt with the schema shown in ``style`` (:data:`sqlweave.db.render.STYLES`)."""

    style: str = "compact"

    def prompt(self, state: State) -> list[Message]:
        shown = render_schema(state.shown_schema, self.style, count=state.llm.count_tokens).text
        return generation_prompt(state, state.prompt_template or "zero_shot", shown)


@dataclass(frozen=True)
class FewShotView(_View):
    """The template ``template`` showing the few-shot ``block`` (pairs of the pool), with the schema generation
    shows; none without one."""

    block: str = ""
    template: str = "few_shot"

    def prompt(self, state: State) -> list[Message] | None:
        if state.rendered_schema is None:
            return None
        return generation_prompt(state, self.template, state.rendered_schema.text, examples=self.block)


@dataclass(frozen=True)
class PromptView(_View):
    """The generation template ``template`` with the schema generation shows (asked greedily only by default)."""

    template: str = "zero_shot"

    def prompt(self, state: State) -> list[Message] | None:
        if state.rendered_schema is None:
            return None
        return generation_prompt(state, self.template, state.rendered_schema.text)
