# The front door. `make demo` and `make test` each set up .venv themselves on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# TRAIN=1 also installs the [train] extra (torch 2.13.0 CPU, transformers, trl) for its tests;
# `make test-extras` installs the [train] and [ray] extras and runs only their tests.
TRAIN ?=

.PHONY: demo test test-extras lint format docs bench clean

# A venv ships the pip and setuptools of its Python (3.11's: setuptools 65, which rejects the
# `license = "MIT"` that [build-system]'s setuptools>=77 reads): both are upgraded at once, so
# the sdist test (a build without isolation) runs with the setuptools the project asks for.
$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip 'setuptools>=77'

$(VENV)/.installed-all: pyproject.toml setup.py src/hhrlhf/_jsonl.c | $(BIN)/python
	$(BIN)/pip install -q -e '.[all]'
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed-all
	$(BIN)/pip install -q --group dev
	touch $@

$(VENV)/.installed-train: $(VENV)/.installed-all
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[train]'
	touch $@

demo: $(VENV)/.installed-all
	$(BIN)/hh demo

test: $(VENV)/.installed-dev $(if $(TRAIN),$(VENV)/.installed-train)
	$(BIN)/python -m pytest -q

$(VENV)/.installed-ray: $(VENV)/.installed-all
	$(BIN)/pip install -q -e '.[ray]'
	touch $@

# The tests of the heavy extras only (the `train` and `ray` markers), with those extras installed.
test-extras: $(VENV)/.installed-dev $(VENV)/.installed-train $(VENV)/.installed-ray
	$(BIN)/python -m pytest -q -m "train or ray"

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: $(VENV)/.installed-dev
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

docs: $(VENV)/.installed-dev
	$(BIN)/python scripts/cli_reference.py

$(VENV)/.installed-bench: $(VENV)/.installed-all
	$(BIN)/pip install -q --group bench
	touch $@

# The load figures of bench/RESULTS-load.md. With HH_RLHF_REAL (the folder holding the real
# harmless-base/test.jsonl.gz) the corpus is resampled from real text; without it, synthetic.
bench: $(VENV)/.installed-bench
	$(BIN)/python bench/make_corpus.py --out bench/corpus \
		$(if $(HH_RLHF_REAL),--from $(HH_RLHF_REAL)/harmless-base/test.jsonl.gz)
	$(BIN)/python bench/bench_load.py --corpus bench/corpus

clean:
	rm -rf $(VENV) hh-demo-out .pytest_cache
