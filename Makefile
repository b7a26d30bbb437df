# Two commands do all the set-up: `make serve` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: venv serve test lint check bench clean

# Set-up output goes to stderr: `make serve` speaks MCP on stdout, even on its first run.
$(STAMP): pyproject.toml
	@echo "creating $(VENV) from pyproject.toml" >&2
	@$(PYTHON) -m venv $(VENV) >&2
	@$(BIN)/pip install --quiet --upgrade pip >&2
	@$(BIN)/pip install --quiet -e '.[dev]' >&2
	@touch $(STAMP)

venv: $(STAMP)

## Start memstore's MCP server over stdio on this repository's own memory/ store.
## Silent recipe: stdout is the MCP wire, so a client may run `make serve` as its command.
serve: $(STAMP)
	@exec $(BIN)/memstore --store memory serve

## Run the whole test suite: static checks, the project's own store, then pytest.
test: $(STAMP)
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/pyright
	$(BIN)/memstore --store memory lint
	$(BIN)/pytest -q

## Static checks: formatting, lint, types.
check: $(STAMP)
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/pyright

## Benchmarks (scripts, not tests): LoCoMo retrieval quality, then latency at 1k and 10k memories.
bench: $(STAMP)
	$(BIN)/python bench/locomo.py
	$(BIN)/python bench/latency.py

clean:
	rm -rf $(VENV) .pytest_cache
