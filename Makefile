# Fresh-machine set-up lives here: `make test` and `make run` create .venv,
# install the package with its dev extras, then test or start the dashboard.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: test test-fast run lint bench clean setup

setup: $(STAMP)

$(STAMP): pyproject.toml requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip
	$(BIN)/pip install -e ".[dev]"
	touch $(STAMP)

test: $(STAMP)
	$(BIN)/lint-imports
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# The edit-test loop: everything but the tests marked slow, the browser (e2e) and the
# real-model (llm) tests; `make test` (CI) runs them all.
test-fast: $(STAMP)
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -m "not slow and not e2e and not llm" $(PYTEST_ARGS)

run: $(STAMP)
	$(BIN)/python -m dashboard --server.showEmailPrompt=false --browser.gatherUsageStats=false

lint: $(STAMP)
	$(BIN)/lint-imports
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

bench: $(STAMP)
	$(BIN)/python -m pbo_core.bench --functions all --methods dt --seeds 5 --iters 200 --json -

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
