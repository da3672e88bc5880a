"""Stages by name, and addons as data: what ``PRESET+NAME`` does to a pipeline is one :class:`Addon` row.

:data:`STAGES` maps each built-in stage's name to its class; a preset's base pipeline is a list of :class:`Row`
(a stage name with settings), and an addon says which stage it adds with which settings and where it goes (after
or before which stage, the first of them the pipeline has; appended when it names none), which stage the pipeline
must already have, or which stages' settings it changes instead. A stage another package offers through the
``sqlweave.stages`` entry-point group (:mod:`sqlweave.plugins`) is found by name when no built-in addon has it.

>>> from sqlweave.pipeline import Pipeline
>>> pipe = Pipeline("p", (make_stage("check_question"), make_stage("render_schema"), make_stage("generate"),
...                       make_stage("extract_sql"), make_stage("execute")))
>>> values = Addon("select_values", at=("before:prune_schema", "after:check_question"))
>>> [s.name for s in values.apply(pipe, {}).stages][:3]
['check_question', 'select_values', 'render_schema']
>>> [s.name for s in Addon("repair").apply(pipe, {}).stages][-2:]
['execute', 'repair']
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Protocol

from ..agent.loop import AgentLoop
from ..errors import ConfigurationError, PluginError, SqlweaveError
from ..pipeline import Pipeline, Stage
from ..plugins import STAGES as STAGES_GROUP, plugin, plugin_names
from . import CheckQuestion, ExecuteSQL, ExtractSQL, GenerateEvidence, GenerateSQL, RenderSchema
from .approximate import ApproximateQuery
from .correct import ErrorCorrection
from .dac import DecomposedCorrection
from .ensemble import PromptEnsemble
from .interpret_time import InterpretTime
from .link_schema import LinkSchema
from .name_keys import NameKeys
from .prune_schema import PruneSchema
from .repair import SchemaRepair
from .revise import RevisionChain
from .rewrite import RewriteQuery
from .select_examples import SelectExamples, default_pool_path
from .select_values import SelectValues
from .simplify import SimplifyQuestion
from .vote import SelfConsistency

#: Every built-in stage by the name it has in a pipeline (its ``name`` by default).
STAGES: dict[str, Callable[..., Stage]] = {
    "check_question": CheckQuestion, "approximate": ApproximateQuery, "select_values": SelectValues,
    "simplify": SimplifyQuestion, "prune_schema": PruneSchema, "render_schema": RenderSchema,
    "link_schema": LinkSchema, "select_examples": SelectExamples, "generate_evidence": GenerateEvidence,
    "interpret_time": InterpretTime, "generate": GenerateSQL, "extract_sql": ExtractSQL, "execute": ExecuteSQL,
    "repair": SchemaRepair, "correct": ErrorCorrection, "dac": DecomposedCorrection, "revise": RevisionChain,
    "rewrite": RewriteQuery, "vote": SelfConsistency, "ensemble": PromptEnsemble, "name_keys": NameKeys,
    "agent": AgentLoop,
}


class Resolved(Protocol):
    """A setting whose value depends on the options a pipeline is built with (:class:`Option`, :class:`Pool`)."""

    def resolve(self, options: Mapping[str, object]) -> object: ...


@dataclass(frozen=True)
class Option:
    """A setting taken from the build's option ``name`` (``k``, ``organisation``, a recipe's fixed ``style``),
    else ``default``.

    >>> Option("k", 4).resolve({"k": 2}), Option("k", 4).resolve({})
    (2, 4)
    """

    name: str
    default: object = None

    def resolve(self, options: Mapping[str, object]) -> object:
        return options.get(self.name, self.default)


@dataclass(frozen=True)
class Pool:
    """The example pool: the build's ``examples`` option (a Spider-format train.json), else the settings' pool,
    else the bundled one."""

    def resolve(self, options: Mapping[str, object]) -> object:
        return str(options.get("examples") or default_pool_path())


def resolved(settings: Mapping[str, object], options: Mapping[str, object]) -> dict[str, Any]:
    """``settings`` with every :class:`Resolved` value resolved against ``options``."""
    return {k: v.resolve(options) if hasattr(v, "resolve") else v for k, v in settings.items()}


def make_stage(name: str | Callable[..., Stage], settings: Mapping[str, object] | None = None) -> Stage:
    """The stage registered as ``name`` (or built by the class ``name``) with ``settings``.

    >>> make_stage("vote", {"n": 4}).n
    4
    """
    if isinstance(name, str):
        try:
            factory = STAGES[name]
        except KeyError:
            raise ConfigurationError(f"no stage is registered as {name!r}",
                                     hint=f"Stages: {', '.join(sorted(STAGES))}.") from None
    else:
        factory = name
    try:
        stage = factory(**(settings or {}))
    except SqlweaveError:
        raise
    except Exception as err:  # a third party's stage class: a typed error naming it, not a traceback
        raise PluginError(f"the stage {getattr(factory, '__name__', factory)!r} could not be built: "
                          f"{type(err).__name__}: {err}") from err
    if not callable(stage) or not isinstance(getattr(stage, "name", None), str):
        raise PluginError(f"{getattr(factory, '__name__', factory)!r} built {stage!r}, which is not a stage",
                          hint="A stage is a callable over the pipeline's State with a name, requires and provides.")
    return stage


@dataclass(frozen=True)
class Row:
    """One stage of a base pipeline: its registry name and settings; with ``when`` (``unless``), only when the
    build's option of that name is true (false)."""

    stage: str
    settings: Mapping[str, object] = field(default_factory=dict)
    when: str | None = None
    unless: str | None = None

    def build(self, options: Mapping[str, object]) -> Stage | None:
        if (self.when and not options.get(self.when)) or (self.unless and options.get(self.unless)):
            return None
        return make_stage(self.stage, resolved(self.settings, options))


def pipeline_of(name: str, rows: tuple[Row, ...], options: Mapping[str, object]) -> Pipeline:
    """The pipeline ``name`` made of ``rows`` built with ``options``."""
    return Pipeline(name, tuple(s for s in (r.build(options) for r in rows) if s is not None))


@dataclass(frozen=True)
class Addon:
    """What ``+NAME`` does to a pipeline.

    It adds the stage ``stage`` (a :data:`STAGES` name or a stage class) built with ``settings``, placed by
    ``at``: anchors ``"after:NAME"`` or ``"before:NAME"``, the first whose stage the pipeline has (appended,
    like the correction stages, when ``at`` is empty). With ``changes`` (a :data:`STAGES` name) it adds nothing:
    ``settings`` are set on every stage of that class whose settings hold ``where``. A pipeline without the stage
    ``needs``, or without a stage to change, is refused: "pipeline NAME ``lacking``", with ``hint``.
    """

    stage: str | Callable[..., Stage] | None = None
    settings: Mapping[str, object] = field(default_factory=dict)
    at: tuple[str, ...] = ()
    needs: str | None = None
    changes: str | None = None
    where: Mapping[str, object] = field(default_factory=dict)
    lacking: str = ""
    hint: str | None = None

    def __post_init__(self) -> None:
        if (self.stage is None) == (self.changes is None):
            raise ConfigurationError("an addon either adds a stage or changes stages, not both or neither",
                                     hint="Give Addon(stage=...) or Addon(changes=..., settings=...).")
        bad = [a for a in self.at if a.partition(":")[0] not in ("after", "before") or not a.partition(":")[2]]
        if bad:
            raise ConfigurationError(f"addon placement {bad[0]!r} is not after:STAGE or before:STAGE",
                                     hint='For example at=("after:check_question",).')

    def apply(self, pipe: Pipeline, options: Mapping[str, object]) -> Pipeline:
        """``pipe`` with this addon applied; ``options`` are :func:`~sqlweave.presets.build_pipeline`'s."""
        names = [s.name for s in pipe.stages]
        if self.needs is not None and self.needs not in names:
            raise ConfigurationError(f"pipeline {pipe.name!r} {self.lacking}", hint=self.hint)
        if self.changes is not None:
            return self._change(pipe, options)
        assert self.stage is not None
        stage = make_stage(self.stage, resolved(self.settings, options))
        for anchor in self.at:
            side, _, name = anchor.partition(":")
            if name in names or anchor == self.at[-1]:  # the last anchor names what is missing when none is there
                return pipe.insert_after(name, stage) if side == "after" else pipe.insert_before(name, stage)
        return replace(pipe, stages=pipe.stages + (stage,))

    def _change(self, pipe: Pipeline, options: Mapping[str, object]) -> Pipeline:
        kind = STAGES[self.changes or ""]
        assert isinstance(kind, type)
        targets = [i for i, s in enumerate(pipe.stages)
                   if isinstance(s, kind) and all(getattr(s, k) == v for k, v in self.where.items())]
        if not targets:
            raise ConfigurationError(f"pipeline {pipe.name!r} {self.lacking}", hint=self.hint)
        changes = resolved(self.settings, options)
        stages = list(pipe.stages)
        for i in targets:
            stages[i] = replace(stages[i], **changes)  # type: ignore[type-var]
        return replace(pipe, stages=tuple(stages))


def find_addon(name: str, built_in: Mapping[str, Addon], spelled: str) -> Addon:
    """The addon ``+name`` of the pipeline ``spelled``: a built-in row, else a stage an installed package offers
    in the ``sqlweave.stages`` entry-point group (an :class:`Addon` row, or a stage class, then appended)."""
    if name in built_in:
        return built_in[name]
    found = plugin(STAGES_GROUP, name)
    if found is None:
        offered = [*built_in, *(p for p in plugin_names(STAGES_GROUP) if p not in built_in)]
        raise ConfigurationError(f"unknown stage {name!r} in pipeline {spelled!r}",
                                 hint=f"Stages a preset can be extended with: {', '.join(offered)}.")
    if isinstance(found, Addon):
        return found
    if callable(found):
        return Addon(found)
    raise PluginError(f"the plugin {name!r} ({STAGES_GROUP}) is {found!r}, neither a stage class nor an Addon",
                      hint="Point its entry point at a stage class or at a sqlweave.stages.registry.Addon row.")
