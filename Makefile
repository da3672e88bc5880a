# The two commands of the README. Both set up everything they need on a fresh machine.
.PHONY: demo test install unit serve

install:
	bash scripts/install.sh

demo: install
	.venv/bin/sqlweave demo

# The type checker first (zero errors on the package), then every test; then the suite again in an environment with
# only the core installed (.venv-core), where what needs an extra is skipped with the extra named.
test: install
	.venv/bin/python -m mypy sqlweave
	.venv/bin/python -m pytest
	bash scripts/core-env.sh
	.venv-core/bin/python -m pytest -q -p no:cacheprovider

# Unit tests only (no embedded model): seconds.
unit: install
	.venv/bin/python -m pytest -m "not model"

# The web page and HTTP API on the demo shop: http://127.0.0.1:8000/
serve: install
	.venv/bin/sqlweave serve --demo
