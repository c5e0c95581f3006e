# The two commands of this project (see README.md): `make quickstart` and `make test`.
# Each creates .venv on first use and reinstalls when pyproject.toml changes.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: quickstart test lint typecheck pytest bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.stamp-%: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[$*]'
	touch $@

quickstart: $(VENV)/.stamp-local
	$(BIN)/agentcell demo

lint: $(VENV)/.stamp-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(VENV)/.stamp-dev
	$(BIN)/mypy

pytest: $(VENV)/.stamp-dev
	$(BIN)/pytest

test: lint typecheck pytest

bench: $(VENV)/.stamp-dev
	$(BIN)/python bench/store.py

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache
