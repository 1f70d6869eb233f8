# Fresh-machine set-up lives here: `make test` and `make run` create .venv,
# install the package with its dev extras, then test or start the dashboard.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=
# One pytest worker per core (pytest-xdist); tests take turns by file chunks and steal
# when idle. `make test JOBS=0` runs in one process.
JOBS ?= auto
XDIST := $(if $(filter 0,$(JOBS)),,-n $(JOBS) --dist worksteal)
# `make run PORT=8600` (default: Streamlit's 8501)
PORT ?=
PORT_ARG := $(if $(PORT),--server.port=$(PORT))

.PHONY: test test-fast run serve lint bench clean setup

setup: $(STAMP)

$(STAMP): pyproject.toml requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip
	$(BIN)/pip install -e ".[dev]"
	touch $(STAMP)

test: $(STAMP)
	$(BIN)/lint-imports
	$(BIN)/python -m pytest $(XDIST) $(PYTEST_ARGS)

# The edit-test loop: everything but the tests marked slow, the browser (e2e) and the
# real-model (llm) tests; `make test` (CI) runs them all.
test-fast: $(STAMP)
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -m "not slow and not e2e and not llm" $(XDIST) $(PYTEST_ARGS)

# A personal server: listens on 127.0.0.1 only (python -m dashboard refuses another address).
run: $(STAMP)
	$(BIN)/python -m dashboard --server.showEmailPrompt=false --browser.gatherUsageStats=false $(PORT_ARG)

# Shared mode: the one way to serve a network (all interfaces; studies stay with their
# visitor; data paths, the LLM endpoint and benchmark runs are server configuration).
# docs/shared-server.md
serve: $(STAMP)
	DTPBO_SHARED_SERVER=1 $(BIN)/python -m dashboard --server.headless=true --server.showEmailPrompt=false --browser.gatherUsageStats=false $(PORT_ARG)

lint: $(STAMP)
	$(BIN)/lint-imports
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

bench: $(STAMP)
	$(BIN)/python -m pbo_core.bench --functions all --methods dt --seeds 5 --iters 200 --json -

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
