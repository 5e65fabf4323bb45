# alarmhub: `make run` starts a demo node, `make test` runs every check.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
DATA_DIR ?= var
LISTEN ?= 127.0.0.1:8080
# the SIA DC-09 port (TCP and UDP) of `make run`, on loopback: docs/dc09.md sends a frame to it
DC09_LISTEN ?= 127.0.0.1:9999
# the PostgreSQL server of the suite's PostgreSQL tests (each gets a database of its own)
ALARMHUB_TEST_DATABASE_URL ?= postgresql://postgres@127.0.0.1:5432/postgres
export ALARMHUB_TEST_DATABASE_URL
# the suite starts many Python processes (nodes, writers, the CLI of the documentation's
# examples): let them keep the modules' compiled bytecode rather than compile every module again
unexport PYTHONDONTWRITEBYTECODE
# pytest-xdist workers: the tests mostly wait on servers and processes, so three times the cores
JOBS ?= 6
# each worker is handed a whole module at a time (the crash modules all at once, to run one after
# another), so that a module's servers (its module-scoped fixtures) start once, and in the
# suite's order, the long modules first (tests/conftest.py; xdist would put the modules with the
# most tests first). xdist's default, batches of consecutive tests, handed the first worker
# every long module, one after another
DIST := --dist loadscope --no-loadscope-reorder

.PHONY: run test lint unit coverage fuzz faults soak bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet --disable-pip-version-check -e .
	touch $@

# (--no-compile: the modules a run imports are compiled at their first import, and kept; pip
# would compile every module of every package first, 25 s of a fresh clone's install, most of
# them never imported)
$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet --disable-pip-version-check --no-compile -e '.[test]'
	touch $(VENV)/.installed $@

run: $(VENV)/.installed
	$(BIN)/alarmhub serve --demo --data-dir $(DATA_DIR) --listen $(LISTEN) --dc09-listen $(DC09_LISTEN)

lint: $(VENV)/.installed-test
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy

unit: $(VENV)/.installed-test
	$(BIN)/pytest -q tests/unit

# the whole suite in one run on $(JOBS) workers, but the database faults (`make faults`): unit,
# e2e and the browser on SQLite; store and crash tests on SQLite and on PostgreSQL
# (tests/conftest.py); PostgreSQL-only tests on it
# (the modules compiled once first: the workers' first processes then do not all compile them;
# the test modules collected once beside the checks, so that pytest's assertion rewriting, about
# 20 CPU-seconds, is done once and kept rather than by every worker at once)
test: $(VENV)/.installed-test
	$(BIN)/python -m compileall -q src tests
	@$(BIN)/pytest -q --collect-only -p no:cacheprovider > /dev/null & collecting=$$!; \
	$(MAKE) --no-print-directory lint; checked=$$?; wait $$collecting; exit $$checked
	$(BIN)/pytest -q -n $(JOBS) $(DIST) -m "not faults"

# line coverage of src/ by the whole suite, servers and commands included (htmlcov/index.html)
coverage: $(VENV)/.installed-test
	rm -f .coverage .coverage.*
	$(BIN)/coverage run -m pytest -q -n $(JOBS) $(DIST)
	$(BIN)/coverage combine -q
	$(BIN)/coverage report --skip-covered --sort=cover | tail -25
	$(BIN)/coverage html -q

# every wire parser, the API's JSON bodies and the CSV imports fuzzed in-process, 100,000 inputs
# each (ALARMHUB_FUZZ_EXAMPLES to change);
# not part of `make test` (it takes about an hour on two cores): tests/fuzz/README.md
fuzz: $(VENV)/.installed-test
	$(BIN)/pytest -q -s -p no:cacheprovider -o python_files='fuzz_*.py' tests/fuzz

# the database faults, with their figures (docs/reliability.md): a PostgreSQL primary and a
# synchronous standby of their own (tests/support/pg_cluster.py), about four minutes of one
# process; not part of `make test`, which they would take past its twelve minutes
faults: $(VENV)/.installed-test
	$(BIN)/pytest -q -s -m faults -p no:cacheprovider tests/e2e tests/crash

# the soak: two nodes on a primary and a synchronous standby under mixed load (HTTP, DC-09
# panels, a Sur-Gard receiver link) for DURATION seconds, a random fault every FAULT_SECONDS
# (connections cut, the standby stopped, the primary killed and its standby promoted (the old
# primary then made a standby again), a node's writer or a worker killed, a whole node killed
# and started again); acknowledged and missing per interface, and each process's memory at the
# start and the end. Not part of `make test` (tests/soak/soak_faults.py)
DURATION ?= 1800
FAULT_SECONDS ?= 60
soak: $(VENV)/.installed-test
	ALARMHUB_SOAK_SECONDS=$(DURATION) ALARMHUB_SOAK_FAULT_SECONDS=$(FAULT_SECONDS) \
	$(BIN)/pytest -q -s -p no:cacheprovider -o faulthandler_timeout=0 -o python_files='soak_*.py' tests/soak

bench: $(VENV)/.installed-test
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .coverage .coverage.* htmlcov
