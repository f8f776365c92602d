# Reclaim — everything runs from the project's own virtual environment.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
PYTEST_ARGS ?=
# the suite on the machine's cores, four at most (pytest-xdist; tests/conftest.py keeps each module on one worker);
# PYTEST_ARGS=-n0 runs it in one process
XDIST   := -n auto --maxprocesses 4

.PHONY: install demo test test-fast test-deep bench lint clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	@$(BIN)/python -m reports.system
	$(BIN)/reclaim audit sample_traces/week --out out/demo
	@echo "report: $(CURDIR)/out/demo/report.pdf"

test: $(STAMP)
	@$(BIN)/python -m reports.system
	$(BIN)/python -m pytest -q $(XDIST) $(PYTEST_ARGS)

# skips the real-Slurm integration test (needs root and apt)
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slurm" $(XDIST) $(PYTEST_ARGS)

# every hypothesis property with random draws and thousands of examples each (tests/profiles.py);
# run before a change to the simulator or the readers lands
test-deep: $(STAMP)
	RECLAIM_HYPOTHESIS_PROFILE=deep $(BIN)/python -m pytest -q -m property $(PYTEST_ARGS)

bench: $(STAMP)
	$(BIN)/python -m bench

lint: $(STAMP)
	$(BIN)/ruff check audit simulator predictors reports tests bench

clean:
	rm -rf out build *.egg-info
