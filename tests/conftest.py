"""Shared fixtures. Every test gets its own cache directory; the fixture database is copied per test.

The markers (pyproject.toml) are given here: ``live_db`` to every test that uses a fixture starting a database
server, ``browser`` to those that use headless Chromium, ``fuzz`` to Hypothesis tests, ``slow`` to the tests
that :data:`SLOW` names; a test that starts a server process of its own carries ``live_db`` in its file. A server
fixture set up for a test that is not marked ``live_db`` fails it, so ``-m "not live_db"`` starts no server.
A test session run in a git work tree fails when it leaves a file changed or added in the tree.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import re
import shutil
import sqlite3
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

import pytest

if TYPE_CHECKING:
    from sqlweave.resources import Store

TESTS = Path(__file__).resolve().parent
FIXTURES = TESTS / "fixtures"
ROOT = TESTS.parent
SHARED = Path(__file__).resolve().parents[2] / "shared"

#: The fixtures that start a database server process (scripts/postgres.sh, scripts/mariadb.sh).
SERVER_FIXTURES = frozenset({"pg_server", "mariadb_server", "pg_store_url"})
#: The fixtures that need a server. A test is marked ``live_db`` when it uses a server fixture (``item.fixturenames``
#: holds every fixture a test needs), or when its source or that of a fixture it uses asks for one of these through
#: ``request.getfixturevalue`` (which ``item.fixturenames`` cannot show).
LIVE_DB_FIXTURES = SERVER_FIXTURES | {"pg_url", "mariadb_url", "tenant_pg", "tenant_mysql", "defog_restaurants"}
_ASKED = re.compile(r"getfixturevalue\(\s*[\"'](\w+)[\"']")
#: A test using one of these is marked ``browser`` (headless Chromium, tests/server/test_web.py).
BROWSER_FIXTURES = frozenset({"browser", "chromium_path"})

#: The tests marked ``slow``, by file (under tests/) and function: the ones that took seconds in a run of the whole
#: suite (``pytest --durations=0 -m "not model"``: over about 5 s there, about a second on an idle 2-core machine),
#: and "*" for a corpus whose cases take minutes together. Hypothesis tests are ``fuzz`` instead.
SLOW: dict[str, set[str]] = {
    "agent/test_cli_tools.py": {"test_search_column_json"},
    "agent/test_loop.py": {"test_turn_limit_keeps_the_last_working_query"},
    "agent/test_tools.py": {"test_search_column_ranks_with_real_embeddings"},
    "db/test_datafiles.py": {
        "test_a_copy_without_keys_is_kept_apart_from_the_copy_with_them",
        "test_a_server_reads_files_changed_while_it_runs_once_they_hold_still",
        "test_the_demo_shop_as_csv_files_gets_back_the_keys_its_data_shows",
    },
    "db/test_duckdb.py": {"test_every_schema_of_a_file_is_read_main_first_and_its_tables_answer"},
    "eval/test_eval_cli.py": {"test_eval_vote_below_moves_the_floor_of_the_vote"},
    "eval/test_runner.py": {
        "test_gold_as_prediction_scores_100_on_all_available_dev_questions",
        "test_sigkill_halfway_then_resume",
    },
    "llm/test_backends.py": {"test_a_cache_file_that_is_broken_full_or_locked_costs_the_cache_never_the_answer"},
    "llm/test_recorded.py": {"test_a_best_run_replayed_from_its_traces_gives_the_same_answers_without_the_model"},
    "llm/test_tokens.py": {"test_loading_the_vocabulary_prints_nothing"},
    "retrieval/test_bundled_pool.py": {"test_a_vote_with_the_examples_view_and_no_pool_given_shows_bundled_pairs"},
    "retrieval/test_dense_pruning.py": {
        "test_dense_pruning_keeps_what_the_question_needs",
        "test_dense_table_keeps_whole_tables_and_join_keys",
        "test_hybrid_dense_is_a_superset_of_bm25",
        "test_prune_stage_with_dense_method",
        "test_wide_tables_are_shortened_before_table_scoring",
    },
    "retrieval/test_large_schema.py": {"test_default_on_300_tables_fits_the_budget_and_says_what_was_left_out"},
    "retrieval/test_simplified.py": {"test_simplified_wordings_join_the_dense_repository"},
    "security/test_bounded.py": {"test_a_full_scan_returns_the_capped_rows_fast_and_small"},
    "security/test_crash.py": {
        "test_conversation_writes_killed_keep_every_finished_turn",
        "test_pool_derivation_killed_keeps_what_it_derived",
        "test_value_index_build_killed_keeps_finished_tables",
        "test_weights_assembly_killed_is_never_taken_for_verified_weights",
    },
    "server/test_api.py": {
        "test_a_databases_schema_budget_limits_what_its_prompts_show",
        "test_presets_list_what_each_costs",
    },
    "sql/test_normalize.py": {"test_normalisation_is_stable_and_similarity_nearly_symmetric_on_spider"},
    "sql/test_quiet.py": {"test_nothing_reaches_stderr_without_logging_configured"},
    "stages/test_link_schema.py": {"test_real_embeddings_link_spider_syn_words"},
    "test_architecture.py": {
        "test_every_module_sits_in_a_layer_and_imports_only_downward",
        "test_the_checks_see_real_imports",
        "test_the_import_graph_has_no_cycle",
    },
    "test_cli.py": {
        "test_ask_with_a_schema_budget_shows_only_what_fits",
        "test_schemas_option_reads_the_schemas_named_and_refuses_them_on_sqlite",
    },
    "test_confidence.py": {"test_cli_says_it_is_not_sure_and_shows_both_readings"},
    "test_conversation.py": {
        "test_concurrent_appends_from_processes",
        "test_follow_up_set_gold_pairs_are_mostly_recognised",
    },
    "test_mcp.py": {
        "test_a_config_file_names_the_schemas_of_a_database",
        "test_ask_follows_the_databases_schema_budget",
        "test_describe_schema_names_the_tables_an_earlier_schema_hides",
        "test_four_read_only_tools_with_untrusted_data_warning",
        "test_importing_sqlweave_does_not_import_the_sdk",
    },
    "test_pipeline.py": {"test_no_warm_up_where_the_prompt_depends_on_the_question_or_the_model_keeps_nothing"},
    "test_resources.py": {"test_models_can_be_shared_between_resources_with_different_settings"},
    "security/test_hostile_corpus.py": {"*"},
}

#: The test being set up now (the server guard names it).
_RUNNING = pytest.StashKey["pytest.Item"]()


#: Models in memory, shared by every test's resources: each model loads once per test session.
_MODELS: "Store | None" = None


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # Model weights stay where they are (large, verified once); every other cached thing is per test, and so are
    # the shared resources (pools, value indexes, embedders), whose settings are read once.
    from sqlweave.llm.weights import model_dir
    from sqlweave.resources import Resources, Store, set_shared_resources

    global _MODELS
    monkeypatch.setenv("SQLWEAVE_MODEL_DIR", str(model_dir()))
    monkeypatch.setenv("SQLWEAVE_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    if _MODELS is None:
        _MODELS = Store()
    previous = set_shared_resources(Resources(models=_MODELS))
    yield
    set_shared_resources(previous)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "extra(name): needs the optional extra NAME (skipped, named, without it)")
    # a plugin, not a conftest hook: pytest asks a conftest's hooks only about nodes in its folder, and a
    # session-scoped fixture (a server) is set up on the session's node, at the root
    config.pluginmanager.register(ServerGuard(), "sqlweave-server-guard")


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        if used & SERVER_FIXTURES or _asks_for_a_server(item):
            item.add_marker(pytest.mark.live_db)
        if used & BROWSER_FIXTURES:
            item.add_marker(pytest.mark.browser)
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            item.add_marker(pytest.mark.fuzz)
        slow = SLOW.get(item.path.relative_to(TESTS).as_posix(), set())
        if "*" in slow or getattr(item, "originalname", item.name) in slow:
            item.add_marker(pytest.mark.slow)


def _asks_for_a_server(item: pytest.Item) -> bool:
    """Whether ``item`` or a fixture it uses asks by name for a fixture that needs a server (directly, or through
    the fixtures that one needs or asks for in turn)."""
    info = getattr(item, "_fixtureinfo", None)
    functions = [getattr(item, "obj", None)]
    if info is not None:
        functions += [d.func for defs in info.name2fixturedefs.values() for d in defs]
    names = [name for f in functions if f is not None for name in _asked(f)]
    seen: set[str] = set()
    while names:
        name = names.pop()
        if name in LIVE_DB_FIXTURES:
            return True
        if name in seen:
            continue
        seen.add(name)
        for d in item.session._fixturemanager.getfixturedefs(name, item) or ():
            names += [*d.argnames, *_asked(d.func)]
    return False


@functools.cache
def _asked(function: object) -> tuple[str, ...]:
    """The fixtures ``function``'s source asks for by name (``request.getfixturevalue("pg_url")``)."""
    try:
        return tuple(_ASKED.findall(inspect.getsource(function)))  # type: ignore[arg-type]
    except (OSError, TypeError):
        return ()


class ServerGuard:
    """A server fixture set up for a test not marked ``live_db`` fails that test (and starts nothing)."""

    def pytest_fixture_setup(self, fixturedef: pytest.FixtureDef, request: pytest.FixtureRequest) -> None:
        item = request.config.stash.get(_RUNNING, None)
        if fixturedef.argname in SERVER_FIXTURES and item is not None and item.get_closest_marker("live_db") is None:
            pytest.fail(f"{item.nodeid} starts a database server (fixture {fixturedef.argname}) but is not marked "
                        "live_db: name the fixture in LIVE_DB_FIXTURES (tests/conftest.py)",
                        pytrace=False)


def _tree_state() -> dict[str, str] | None:
    """What ``git status`` shows of the tree (each changed or untracked file with its content's digest), or None
    outside a git work tree."""
    try:
        proc = subprocess.run(["git", "status", "--porcelain", "-z", "--untracked-files=all"], cwd=ROOT,
                              capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    state = {}
    for entry in proc.stdout.decode("utf-8", "surrogateescape").split("\0"):
        if len(entry) > 3:
            path = ROOT / entry[3:]
            state[entry] = file_digest(path) if path.is_file() else ""
    return state


@pytest.fixture(scope="session", autouse=True)
def _tree_untouched() -> Iterator[None]:
    """The tests write under temporary folders only: a file they change or add in the work tree fails the run."""
    before = _tree_state()
    yield
    after = _tree_state() if before is not None else None
    if before is not None and after is not None:
        left = sorted(entry for entry, digest in after.items() if before.get(entry) != digest)
        if left:
            pytest.fail("the tests changed or added files in the work tree (write under tmp_path instead):\n"
                        + "\n".join(left), pytrace=False)


@pytest.hookimpl(tryfirst=True)  # before the runner sets up the test's fixtures
def pytest_runtest_setup(item: pytest.Item) -> None:
    from .extras import need_extra

    item.config.stash[_RUNNING] = item
    for mark in item.iter_markers("extra"):
        need_extra(mark.args[0])
    if item.get_closest_marker("model") is not None:  # the embedded model
        need_extra("local")


@pytest.fixture
def singer_db(tmp_path: Path) -> Path:
    """A writable copy of Spider's concert_singer database."""
    dst = tmp_path / "concert_singer.sqlite"
    shutil.copy(FIXTURES / "concert_singer.sqlite", dst)
    return dst


def keyless_shop(path: Path) -> Path:
    """A SQLite file that declares no foreign key: customers and orders, whose keys the names and values show,
    notes, whose customer_id holds a value no customer has, and order_lines, keyed by two columns."""
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE customers (customer_id INTEGER, name TEXT, country TEXT);
        CREATE TABLE orders (id INTEGER, customer_id INTEGER, total REAL);
        CREATE TABLE notes (note TEXT, customer_id INTEGER);
        CREATE TABLE order_lines (order_id INTEGER, line_no INTEGER, qty INTEGER, PRIMARY KEY (order_id, line_no));
        INSERT INTO order_lines VALUES (10, 1, 2), (10, 2, 1), (12, 1, 5);
        INSERT INTO customers VALUES (1, 'Ann', 'FR'), (2, 'Bo', 'DE'), (3, 'Cy', 'FR');
        INSERT INTO orders VALUES (10, 1, 5.0), (11, 1, 7.5), (12, 3, 2.0), (13, NULL, 1.0);
        INSERT INTO notes VALUES ('lost', 9), ('fine', 2);
    """)
    conn.commit()
    conn.close()
    return path


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
