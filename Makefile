# The two commands of the README. Both set up everything they need on a fresh machine.
.PHONY: demo test install unit serve

install:
	bash scripts/install.sh

demo: install
	.venv/bin/sqlweave demo

# The type checker first (zero errors on the package), then every test.
test: install
	.venv/bin/python -m mypy sqlweave
	.venv/bin/python -m pytest

# Unit tests only (no embedded model): seconds.
unit: install
	.venv/bin/python -m pytest -m "not model"

# The web page and HTTP API on the demo shop: http://127.0.0.1:8000/
serve: install
	.venv/bin/sqlweave serve --demo
