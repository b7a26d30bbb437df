# Two commands do all the set-up: `make serve` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
RUNTIME := $(VENV)/.runtime
DEV := $(VENV)/.dev

.PHONY: venv serve test lint check bench clean chromium screenshots

# Set-up output goes to stderr: `make serve` speaks MCP on stdout, even on its first run, and
# make itself says nothing there (no "Entering directory" under `make -C DIR serve`). A make
# older than 4.4.1 prints that line before reading this file: `make -s -C DIR serve` there.
MAKEFLAGS += --no-print-directory
OLD_MAKE := $(filter 3.% 4.0% 4.1% 4.2% 4.3% 4.4,$(MAKE_VERSION))
ifneq ($(and $(OLD_MAKE),$(filter serve,$(MAKECMDGOALS)),$(findstring w,$(firstword -$(MAKEFLAGS)))),)
$(shell echo 'make $(MAKE_VERSION) wrote "Entering directory" on stdout, the MCP wire: run `make -s -C DIR serve` (make 4.4.1+ does not)' >&2)
endif
# `serve` installs the runtime dependencies only; `test` adds the dev tools.
# Installs go through uv when it can be had (bootstrapped from the package registry into
# .venv/.uv: a fresh `make serve` answers in ~15 s instead of ~35 s with pip), else pip. The
# virtual environment is created without a pip of its own when the system's pip can install
# into it (`pip --python`, pip 22.3+): seeding a venv with pip costs ~10 s.
UV := $(VENV)/.uv/bin/uv
PIP = $(if $(wildcard $(BIN)/pip),$(BIN)/pip,$(PYTHON) -m pip --python $(BIN)/python)
PIP_FLAGS := --quiet --disable-pip-version-check
export PIP_22_3 := import pip, sys; sys.exit(tuple(map(int, pip.__version__.split(".")[:2])) < (22, 3))
define install
{ { test -x $(UV) || $(PYTHON) -m pip install $(PIP_FLAGS) --root-user-action=ignore --target $(VENV)/.uv uv; } \
  && $(UV) pip install --quiet --compile-bytecode --python $(BIN)/python $(1); } \
  || { echo "installing with pip instead of uv" >&2; $(PIP) install $(PIP_FLAGS) $(1); }
endef

$(RUNTIME): pyproject.toml
	@echo "creating $(VENV) from pyproject.toml (runtime dependencies)" >&2
	@test -x $(BIN)/python || { $(PYTHON) -c "$$PIP_22_3" 2>/dev/null \
	  && $(PYTHON) -m venv --without-pip $(VENV) || $(PYTHON) -m venv $(VENV); } >&2
	@$(call install,-e .) >&2
	@touch $(RUNTIME)

$(DEV): $(RUNTIME)
	@echo "adding the dev tools to $(VENV)" >&2
	@$(call install,-e '.[dev]') >&2
	@touch $(DEV)

venv: $(DEV)

## Start memstore's MCP server over stdio on this repository's own memory/ store.
## Silent recipe: stdout is the MCP wire, so a client may run `make serve` as its command.
serve: $(RUNTIME)
	@exec $(BIN)/memstore --store memory serve

## The browser tests drive the system's headless Chromium: install it where apt-get runs as
## root; elsewhere those tests (only those) are skipped with a message saying why. CI=true makes
## a missing browser a test failure instead. Quietly: apt-get's few hundred lines go to
## $(APT_LOG), shown (its end) only when the install fails; the packages it downloads stay in
## apt's own cache (/var/cache/apt/archives, shared by every clone), and the package lists are
## refreshed only when the install cannot go without.
APT_LOG := $(VENV)/chromium-install.log
APT_INSTALL := DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
  -o APT::Keep-Downloaded-Packages=true chromium
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	    mkdir -p $(VENV); \
	    echo "installing chromium for the browser tests (apt-get; its output: $(APT_LOG))" >&2; \
	    { $(APT_INSTALL) || { apt-get update -q && $(APT_INSTALL); }; } >$(APT_LOG) 2>&1 \
	      || { tail -n 15 $(APT_LOG) >&2; echo "installing chromium failed: see $(APT_LOG)" >&2; \
	           exit 1; }; \
	  else \
	    echo "no chromium and no apt-get as root: the browser tests will be skipped" >&2; \
	  fi; }

## Run the whole test suite: static checks, the project's own store, then pytest. The virtual
## environment and the browser are installed side by side (both wait on downloads mostly).
test:
	@$(MAKE) -s -j2 $(DEV) chromium
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
	MEMSTORE_SCREENSHOTS=docs $(BIN)/pytest -q tests/faces/test_console.py -k signs_in

clean:
	rm -rf $(VENV) .pytest_cache
