"""benchmarks/: scripts in one folder per area, one shared helper, every documented path real, a current index.

- Every ``benchmarks/...py`` or ``.sh`` path that a page, a test, the Makefile, the CI script or a script names
  exists, so a command copied from the docs finds its script.
- Every script sits in an area folder, begins with the one bootstrap and touches ``sys.path`` nowhere else; each
  answers ``--help`` run from another folder (no model is loaded).
- Two scripts that need no model run for real on kept checkpoints.
- ``benchmarks/checkpoints/INDEX.md`` is what ``benchmarks/tools/index_checkpoints.py`` writes today, one row per
  checkpoint folder.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.tools import index_checkpoints

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"
AREAS = ("accuracy", "speed", "votes", "safety", "schema", "tools")
BOOT = "sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bootstrap: benchmarks/README.md"
#: conformance.py checks an installed sqlweave when there is one: it appends the repository instead.
APPENDED = "sys.path.append(str(Path(__file__).resolve().parents[2]))"
SCRIPTS = sorted(p for p in BENCH.glob("*/*.py") if p.name != "__init__.py")
#: Where a benchmark path may be written: the pages (the changelog is history: it keeps the paths of its day).
NAMING = sorted({ROOT / "BENCHMARKS.md", ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "ARCHITECTURE.md",
                 *BENCH.rglob("*.md"), *(ROOT / "docs").rglob("*.md"), *(ROOT / "tests").rglob("*.py"),
                 *(ROOT / "scripts").glob("*"), *BENCH.rglob("*.py"), *BENCH.rglob("*.sh"),
                 *(p for p in (ROOT / "Makefile", ROOT / ".ci" / "run") if p.exists())})
PATH = re.compile(r"(?<![\w/.-])benchmarks/[\w./-]+?\.(?:py|sh)\b")


def named_paths() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for page in NAMING:
        if not page.is_file() or page == Path(__file__):
            continue
        for path in PATH.findall(page.read_text(encoding="utf-8", errors="replace")):
            found.setdefault(path, []).append(str(page.relative_to(ROOT)))
    return found


def test_every_benchmark_path_the_pages_name_exists() -> None:
    named = named_paths()
    assert len(named) > 40  # the pages do name the scripts
    missing = {path: pages[:3] for path, pages in named.items() if not (ROOT / path).is_file()}
    assert not missing


def test_the_path_check_finds_a_script_that_is_not_there() -> None:
    assert PATH.findall("run `python benchmarks/bench_defog.py --help`") == ["benchmarks/bench_defog.py"]
    assert not (ROOT / "benchmarks" / "bench_defog.py").exists()  # moved to accuracy/


def test_every_script_is_in_an_area_folder() -> None:
    assert sorted(p.name for p in BENCH.glob("*.py")) == ["__init__.py", "common.py"]
    assert not list(BENCH.glob("*.sh"))
    assert {p.parent.name for p in SCRIPTS} == set(AREAS)
    for area in AREAS:
        assert (BENCH / area / "__init__.py").is_file()


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_script_begins_with_the_bootstrap_and_touches_sys_path_nowhere_else(script: Path) -> None:
    lines = script.read_text(encoding="utf-8").splitlines()
    top = [line for line in lines if line.startswith("sys.path.")]
    assert top == [APPENDED if script.name == "conformance.py" else BOOT]
    # imports of other scripts go through the package, never through a sys.path entry of their own
    assert not [line for line in lines if re.match(r"\s*sys\.path\.(insert|append)\(.*(__file__|ROOT)", line)
                and line not in (BOOT, APPENDED)]


#: Runs each script given as ``__main__`` with ``--help``, in one process (the imports are shared), and prints
#: what each did as JSON: its exit status and the start of what it printed.
HELP_DRIVER = """
import contextlib, io, json, runpy, sys
done = {}
for script in sys.argv[1:]:
    sys.argv = [script, "--help"]
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            runpy.run_path(script, run_name="__main__")
        status = "returned"
    except SystemExit as stop:
        status = stop.code if isinstance(stop.code, int) or stop.code is None else str(stop.code)
    except BaseException as error:
        status = repr(error)
    done[script] = [status, out.getvalue()[:200], err.getvalue()[-500:]]
print(json.dumps(done))
"""


def test_every_script_answers_help_from_any_folder(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-c", HELP_DRIVER, *map(str, SCRIPTS)], cwd=tmp_path, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    done = json.loads(out.stdout.splitlines()[-1])
    assert sorted(done) == sorted(map(str, SCRIPTS))
    failed = {Path(s).relative_to(BENCH).as_posix(): (status, err) for s, (status, text, err) in done.items()
              if status not in (0, None) or not text.startswith("usage: ")}
    assert not failed


def test_two_scripts_run_for_real_on_kept_checkpoints(tmp_path: Path) -> None:
    table = tmp_path / "runs.json"
    out = subprocess.run([sys.executable, str(BENCH / "tools" / "summarize_runs.py"),
                          str(BENCH / "checkpoints" / "default-200"), str(BENCH / "checkpoints" / "best-200"),
                          "--out", str(table)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    rows = json.loads(table.read_text())
    assert [r["run"] for r in rows] == ["default-200", "best-200"] and [r["n"] for r in rows] == [200, 200]
    index = subprocess.run([sys.executable, str(BENCH / "tools" / "index_checkpoints.py"), "--out",
                            str(tmp_path / "INDEX.md")], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert index.returncode == 0, index.stderr[-2000:]
    assert (tmp_path / "INDEX.md").read_text() == (BENCH / "checkpoints" / "INDEX.md").read_text()


def test_the_checkpoint_index_is_current_and_lists_every_folder() -> None:
    rows = index_checkpoints.index()
    folders = sorted(p.name for p in (BENCH / "checkpoints").iterdir() if p.is_dir())
    assert [r.name for r in rows] == folders
    assert (BENCH / "checkpoints" / "INDEX.md").read_text(encoding="utf-8") == index_checkpoints.render(rows)
    assert all(f"| `{name}` |" in index_checkpoints.render(rows) for name in folders)
    links = re.findall(r"\]\(([^)#]+)\)", index_checkpoints.render(rows))
    assert links and all((BENCH / "checkpoints" / link).resolve().is_file() for link in links)


def test_the_index_reads_each_layout_of_checkpoint(tmp_path: Path) -> None:
    run = tmp_path / "eval-run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"dataset": "spider-dev", "pipeline": "default", "model": "local:1.5b",
                                             "created": "2026-11-25 17:01:07"}))
    (run / "results.jsonl").write_text("".join(json.dumps({"id": i, "match": i != "q3"}) + "\n"
                                               for i in ("q1", "q2", "q3", "q4")))
    assert index_checkpoints.read_folder(run) == {"pipeline": "default", "model": "local:1.5b",
                                                  "dataset": "spider-dev", "questions": "4", "ex": "75.0",
                                                  "date": "2026-11-25"}
    defog = tmp_path / "defog-run"
    defog.mkdir()
    (defog / "run.json").write_text(json.dumps({"model": "local:1.5b", "created": "2026-11-26 01:00:00"}))
    (defog / "default__postgres.jsonl").write_text("".join(
        json.dumps({"id": i, "correct": i == "1", "model": "local:1.5b"}) + "\n" for i in ("1", "2")) + '{"id": "3"')
    got = index_checkpoints.read_folder(defog)
    assert (got["dataset"], got["questions"], got["ex"]) == ("defog", "2", "50.0")  # the torn line is not counted


def test_a_checkpoint_is_cited_by_its_own_name_only(tmp_path: Path) -> None:
    page = tmp_path / "BENCHMARKS.md"
    page.write_text("## Main table\n\nfrom `benchmarks/checkpoints/det-best-200` and best-2000\n\n"
                    "### Latency\n\nsee `best-200`.\n")
    other = tmp_path / "page.md"
    other.write_text("nothing here but det-best-200\n")
    found = index_checkpoints.citations(["best-200", "det-best-200", "never-200"], [page, other], root=tmp_path)
    assert found == {"best-200": ["BENCHMARKS.md § Latency"],
                     "det-best-200": ["BENCHMARKS.md § Main table", "page.md"], "never-200": []}
    assert "cited nowhere" in index_checkpoints.render([index_checkpoints.Checkpoint(
        "never-200", "default", "local:1.5b", "spider-dev", "200", "75.0", "2026-11-25", ())])
