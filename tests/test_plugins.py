"""A stage and a model backend installed from a package of their own, found through entry points: the test package
in ``tests/fixtures/plugin/`` (a module and its ``*.dist-info`` with ``entry_points.txt``) is put on ``sys.path``,
where ``importlib.metadata`` finds it as an installed distribution."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import sqlweave
from sqlweave.cli import app
from sqlweave.cli.output import EXIT_ERROR
from sqlweave.db.demo import demo_database_path
from sqlweave.errors import ConfigurationError, PluginError
from sqlweave.llm import BACKENDS, get_llm
from sqlweave.plugins import BACKENDS as BACKENDS_GROUP, STAGES as STAGES_GROUP, plugin, plugin_names
from sqlweave.presets import ADDONS, build_pipeline

PLUGIN = Path(__file__).resolve().parent / "fixtures" / "plugin"


@pytest.fixture
def installed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.syspath_prepend(str(PLUGIN))
    yield
    sys.modules.pop("sqlweave_shout", None)


def test_without_the_package_its_names_are_unknown() -> None:
    assert plugin(STAGES_GROUP, "shout") is None and "shout" not in plugin_names(STAGES_GROUP)
    with pytest.raises(ConfigurationError) as stage:
        build_pipeline("zero-shot+shout")
    with pytest.raises(ConfigurationError) as backend:
        get_llm("plugin:shop")
    assert type(stage.value) is ConfigurationError and type(backend.value) is ConfigurationError


def test_installed_names_are_offered_beside_the_built_in_ones(installed: None) -> None:
    assert {"shout", "shout-class", "broken"} <= set(plugin_names(STAGES_GROUP))
    assert {"plugin", "broken"} <= set(plugin_names(BACKENDS_GROUP))
    with pytest.raises(ConfigurationError) as err:
        build_pipeline("zero-shot+nothing")
    assert err.value.hint.endswith(", shout, shout-class.")  # the built-in addons, then the plugins'
    assert all(name in err.value.hint for name in ADDONS)


def test_a_plugin_stage_is_placed_by_its_addon_row_or_appended(installed: None) -> None:
    placed = build_pipeline("zero-shot+shout")
    assert [s.name for s in placed.stages] == ["check_question", "shout", "render_schema", "generate",
                                               "extract_sql", "execute"]
    assert [s.name for s in build_pipeline("default+shout-class").stages][-2:] == ["name_keys", "shout"]
    assert "shout" not in ADDONS  # found, not registered: a name is looked up each time it is not built in


def test_a_plugin_stage_and_backend_answer_a_question_end_to_end(installed: None) -> None:
    llm = get_llm("plugin:shop")
    assert type(llm).__module__ == "sqlweave_shout" and llm.model_id == "plugin:shop" and "plugin" not in BACKENDS
    engine = sqlweave.connect(demo_database_path(), llm=llm, pipeline="zero-shot+shout")
    answer = engine.ask("How many customers are there?")
    assert answer.error is None and answer.result.rows == ((60,),)
    shout = next(e for e in answer.trace if e.stage == "shout")
    assert shout.notes["shouted"] == "HOW MANY CUSTOMERS ARE THERE?"


def test_the_cli_door_uses_both(installed: None) -> None:
    r = CliRunner().invoke(app, ["ask", "--demo", "--model", "plugin:shop", "--no-cache", "-p", "default+shout",
                                 "--json", "How many products are there?"])
    assert r.exit_code == 0, r.output
    answer = json.loads(r.output)
    assert (answer["sql"], answer["rows"], answer["error"]) == ("SELECT COUNT(*) FROM products", [[40]], None)


@pytest.mark.parametrize("spec", ["broken:x", "notllm"])
def test_a_broken_backend_plugin_is_a_typed_error(installed: None, spec: str) -> None:
    with pytest.raises(PluginError) as err:
        get_llm(spec)
    assert err.value.code == "plugin" and err.value.hint


@pytest.mark.parametrize("addon", ["broken", "notstage"])
def test_a_broken_stage_plugin_is_a_typed_error(installed: None, addon: str) -> None:
    with pytest.raises(PluginError) as err:
        build_pipeline(f"zero-shot+{addon}")
    assert err.value.details.get("plugin", addon) == addon


def test_a_broken_plugin_reaches_the_cli_door_as_a_message(installed: None) -> None:
    for args in (["--model", "broken:x"], ["--model", "plugin:x", "-p", "zero-shot+broken"]):
        r = CliRunner().invoke(app, ["ask", "--demo", "--no-cache", *args, "How many products?"])
        assert r.exit_code == EXIT_ERROR and isinstance(r.exception, SystemExit), r.output
        assert "Traceback" not in r.output and "'broken'" in r.output and "Hint:" in r.output
