# alarmhub: `make run` starts a demo node, `make test` runs every check.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
DATA_DIR ?= var
LISTEN ?= 127.0.0.1:8080

.PHONY: run test lint unit bench clean

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

test: lint $(VENV)/.installed-test
	$(BIN)/pytest -q

bench: $(VENV)/.installed-test
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
