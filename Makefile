# alarmhub: `make run` starts a demo node, `make test` runs every check.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
DATA_DIR ?= var
LISTEN ?= 127.0.0.1:8080
# the PostgreSQL server of the second run of the suite (each test gets a database of its own)
ALARMHUB_TEST_DATABASE_URL ?= postgresql://postgres@127.0.0.1:5432/postgres

.PHONY: run test test-sqlite test-postgres lint unit fuzz bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet --disable-pip-version-check -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $(VENV)/.installed $@

run: $(VENV)/.installed
	$(BIN)/alarmhub serve --demo --data-dir $(DATA_DIR) --listen $(LISTEN)

lint: $(VENV)/.installed-test
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy

unit: $(VENV)/.installed-test
	$(BIN)/pytest -q -m "not slow"

test: lint test-sqlite test-postgres

test-sqlite: $(VENV)/.installed-test
	@echo "== the suite on SQLite"
	env -u ALARMHUB_TEST_DATABASE_URL $(BIN)/pytest -q

test-postgres: $(VENV)/.installed-test
	@if ALARMHUB_TEST_DATABASE_URL="$(ALARMHUB_TEST_DATABASE_URL)" $(BIN)/python -m tests.postgres_reachable; then \
	  echo "== the suite on PostgreSQL"; \
	  ALARMHUB_TEST_DATABASE_URL="$(ALARMHUB_TEST_DATABASE_URL)" $(BIN)/pytest -q; \
	else \
	  echo "== SKIPPED: the suite on PostgreSQL did not run (no server answered at ALARMHUB_TEST_DATABASE_URL);"; \
	  echo "   set ALARMHUB_TEST_DATABASE_URL to a PostgreSQL server to run it"; \
	fi

# every wire parser fuzzed in-process, 100,000 inputs each (ALARMHUB_FUZZ_EXAMPLES to change);
# not part of `make test` (it takes about half an hour on two cores): tests/fuzz/README.md
fuzz: $(VENV)/.installed-test
	$(BIN)/pytest -q -s -p no:cacheprovider -o python_files='fuzz_*.py' tests/fuzz

bench: $(VENV)/.installed-test
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
