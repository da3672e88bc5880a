"""The generated reference pages are what their scripts write today: a command, an option or an endpoint changed
without running `make docs` fails here."""

import importlib.util
import sys
from pathlib import Path

import pytest

from .extras import need_extra

ROOT = Path(__file__).resolve().parents[1]


def _script(name: str):  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_the_cli_reference_is_the_commands_own_help() -> None:
    gen = _script("gen_cli_reference")
    page = (ROOT / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    assert page == gen.render(), "docs/reference/cli.md is not current: run python scripts/gen_cli_reference.py"


def test_the_cli_reference_names_every_command() -> None:
    import typer.main

    from sqlweave.cli import app

    page = (ROOT / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    root = typer.main.get_command(app)
    for name in root.list_commands(None):  # type: ignore[arg-type]
        assert f"## sqlweave {name}\n" in page, name


def test_the_http_reference_is_the_apps_openapi_schema() -> None:
    need_extra("server")
    gen = _script("gen_http_reference")
    page = (ROOT / "docs" / "reference" / "http.md").read_text(encoding="utf-8")
    assert gen.generated_block(page) == gen.render_block(), \
        "docs/reference/http.md is not current: run python scripts/gen_http_reference.py"


@pytest.mark.parametrize("script", ["gen_cli_reference", "gen_http_reference"])
def test_the_generators_check_mode_agrees(script: str) -> None:
    if script == "gen_http_reference":
        need_extra("server")
    assert _script(script).main(["--check"]) == 0


def test_every_environment_variable_is_in_the_configuration_reference() -> None:
    import re

    page = (ROOT / "docs" / "reference" / "configuration.md").read_text(encoding="utf-8")
    used = set()
    for path in [*(ROOT / "sqlweave").rglob("*.py"), *(ROOT / "scripts").glob("*.sh")]:
        used.update(re.findall(r"\bSQLWEAVE_[A-Z0-9_]*[A-Z0-9]\b", path.read_text(encoding="utf-8")))
    missing = sorted(v for v in used if f"`{v}`" not in page)
    assert not missing, f"docs/reference/configuration.md does not name {missing}"


def test_the_mcp_reference_names_each_tool_and_its_arguments() -> None:
    import inspect
    import re

    from sqlweave.mcp import SqlweaveTools

    page = (ROOT / "docs" / "reference" / "mcp.md").read_text(encoding="utf-8")
    documented = dict(re.findall(r"^## (\w+)\n(.*?)(?=^## |\Z)", page, re.M | re.S))
    tools = ("list_databases", "describe_schema", "ask", "run_sql")
    assert set(tools) <= set(documented)
    for tool in tools:
        params = [p for p in inspect.signature(getattr(SqlweaveTools, tool)).parameters if p != "self"]
        rows = set(re.findall(r"^\| `(\w+)` \|", documented[tool], re.M))
        assert set(params) == rows, (tool, params, rows)
