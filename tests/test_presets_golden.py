"""Every preset, and every preset extended with one stage (``PRESET+ADDON``), builds the pipeline it built before
presets became data: the stage classes, names and every setting, nested pipelines included, against the dumps in
``tests/fixtures/presets/`` (written by this module run as a script from the code before the change).

    /work/main/.venv/bin/python -m tests.test_presets_golden   # rewrites the dumps from the code as it is
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from sqlweave.errors import SqlweaveError
from sqlweave.pipeline import Pipeline
from sqlweave.presets import PRESETS, build_pipeline
from sqlweave.stages.select_examples import default_pool_path

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "presets"
#: The addons every preset is extended with, one at a time (what ``+NAME`` accepted when the dumps were written).
ADDON_NAMES = ("repair", "correct", "correct-failed", "revise", "rewrite", "dac", "vote", "vote-if-unsure",
               "name-keys", "values", "evidence", "link", "simplify", "time", "grammar", "conventions", "select",
               "review", "diverse", "more-if-split", "examples", "link-first")
#: Pairs of addons, in both orders, on the presets most extended (placement depends on what an earlier one added).
PAIRED = ("zero-shot", "default", "pruned", "agent")
PAIRS = ("values", "evidence", "time", "link", "simplify", "grammar", "conventions", "examples", "vote", "repair")
#: Options some spellings are also built with (a pool of examples given, and the vote's options set).
WITH_OPTIONS = {"examples": "/pool/train.json", "k": 2, "organisation": "skeleton"}
#: Settings that left the vote stage after the dumps were written (measured, switched off in every preset and
#: addon): each dump must hold exactly this value for it, which the built stage then no longer has.
REMOVED: dict[str, dict[str, object]] = {
    "SelfConsistency": {"coder": False, "examples_by": "skeleton", "question_examples": 0, "review_examples": 0,
                        "review_examples_by": "question", "finish": 0, "fenced": False},
}


def settings(value: Any) -> Any:
    """``value`` as JSON: a pipeline or stage by class and fields, tuples as lists, the bundled pool by name."""
    if isinstance(value, Pipeline):
        return {"pipeline": value.name, "stages": [settings(s) for s in value.stages],
                "when_unsure": settings(value.when_unsure), "budget_s": value.budget_s,
                "restate_follow_ups": value.restate_follow_ups}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        kind = type(value)
        return {"class": f"{kind.__module__}.{kind.__qualname__}",
                **{f.name: settings(getattr(value, f.name)) for f in dataclasses.fields(value)}}
    if isinstance(value, (tuple, list)):
        return [settings(v) for v in value]
    if isinstance(value, dict):
        return {str(k): settings(v) for k, v in value.items()}
    if isinstance(value, str) and value == str(default_pool_path()):
        return "<bundled pool>"
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"no dump for {type(value).__name__}: {value!r}")


def spellings(preset: str) -> list[tuple[str, dict[str, object]]]:
    """What each dump holds for ``preset``: the spellings built, each with the options it is built with."""
    out: list[tuple[str, dict[str, object]]] = [(preset, {}), (preset, WITH_OPTIONS)]
    out += [(f"{preset}+{a}", {}) for a in ADDON_NAMES]
    out += [(f"{preset}+examples", WITH_OPTIONS)]
    if preset in PAIRED:
        out += [(f"{preset}+{a}+{b}", {}) for a in PAIRS for b in PAIRS if a != b]
    return out


def key(spelled: str, options: dict[str, object]) -> str:
    return spelled + ("?" + "&".join(f"{k}={v}" for k, v in options.items()) if options else "")


def built(spelled: str, options: dict[str, object]) -> Any:
    try:
        return settings(build_pipeline(spelled, **options))
    except SqlweaveError as err:
        return {"error": type(err).__name__, "code": err.code}


def dump(preset: str) -> dict[str, Any]:
    return {key(s, o): built(s, o) for s, o in spellings(preset)}


def without_removed(expected: Any) -> Any:
    """``expected`` (a dump) with the settings of :data:`REMOVED` taken out, each checked to hold its value."""
    if isinstance(expected, list):
        return [without_removed(v) for v in expected]
    if not isinstance(expected, dict):
        return expected
    gone = REMOVED.get(str(expected.get("class", "")).rsplit(".", 1)[-1], {})
    for name, value in gone.items():
        assert expected.get(name) == value, f"{expected.get('name')}: {name} was {expected.get(name)!r}"
    return {k: without_removed(v) for k, v in expected.items() if k not in gone}


FILES = sorted(FIXTURES.glob("*.json"))


def test_the_dumps_cover_every_preset() -> None:
    assert sorted(p.stem for p in FILES) == sorted(PRESETS)


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_a_preset_and_its_extensions_build_what_they_built(path: Path) -> None:
    expected = json.loads(path.read_text(encoding="utf-8"))
    now = dump(path.stem)
    assert sorted(now) == sorted(expected)
    for spelled, was in expected.items():
        assert now[spelled] == without_removed(was), spelled


if __name__ == "__main__":
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for name in sys.argv[1:] or PRESETS:
        rows = [f"{json.dumps(k)}: {json.dumps(v, sort_keys=True)}" for k, v in dump(name).items()]
        (FIXTURES / f"{name}.json").write_text("{\n" + ",\n".join(rows) + "\n}\n", encoding="utf-8")
