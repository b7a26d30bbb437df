# Two commands do all the set-up: `make serve` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
RUNTIME := $(VENV)/.runtime
DEV := $(VENV)/.dev

.PHONY: venv serve test lint check bench clean chromium screenshots

# Set-up output goes to stderr: `make serve` speaks MCP on stdout, even on its first run.
# `serve` installs the runtime dependencies only; `test` adds the dev tools.
$(RUNTIME): pyproject.toml
	@echo "creating $(VENV) from pyproject.toml (runtime dependencies)" >&2
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) >&2
	@$(BIN)/pip install --quiet --disable-pip-version-check -e . >&2
	@touch $(RUNTIME)

$(DEV): $(RUNTIME)
	@echo "adding the dev tools to $(VENV)" >&2
	@$(BIN)/pip install --quiet --disable-pip-version-check -e '.[dev]' >&2
	@touch $(DEV)

venv: $(DEV)

## Start memstore's MCP server over stdio on this repository's own memory/ store.
## Silent recipe: stdout is the MCP wire, so a client may run `make serve` as its command.
serve: $(RUNTIME)
	@exec $(BIN)/memstore --store memory serve

## The browser tests drive the system's headless Chromium: install it where apt-get runs as
## root; elsewhere those tests (only those) are skipped with a message saying why. CI=true makes
## a missing browser a test failure instead.
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	    echo "installing chromium for the browser tests (apt-get)" >&2; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >&2; \
	  else \
	    echo "no chromium and no apt-get as root: the browser tests will be skipped" >&2; \
	  fi; }

## Run the whole test suite: static checks, the project's own store, then pytest.
test: $(DEV) chromium
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/basedpyright
	$(BIN)/memstore --store memory lint
	$(BIN)/pytest -q -n 2

## Static checks: formatting, lint, types.
check: $(DEV)
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/basedpyright

## Benchmarks (scripts, not tests): LoCoMo retrieval quality, then latency at 1k and 10k memories.
bench: $(DEV)
	$(BIN)/python bench/locomo.py
	$(BIN)/python bench/latency.py

## The README's console screenshots (docs/console-*.png), taken by the browser test.
screenshots: $(DEV) chromium
	MEMSTORE_SCREENSHOTS=docs $(BIN)/pytest -q tests/test_console.py -k signs_in

clean:
	rm -rf $(VENV) .pytest_cache
