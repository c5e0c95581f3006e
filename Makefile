# The two commands of this project (see README.md): `make quickstart` and `make test`.
# Each creates .venv on first use and reinstalls when pyproject.toml changes.
PYTHON ?= python3
VENV   := .venv
# llama-cpp-python (the `local` extra) builds from source; keep the build portable across CPUs.
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF
BIN    := $(VENV)/bin

.PHONY: quickstart test lint typecheck pytest pytest-ipykernel73 bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.stamp-%: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[$*]'
	touch $@

quickstart: $(VENV)/.stamp-local
	$(BIN)/agentcell run notebooks/quickstart.ipynb

lint: $(VENV)/.stamp-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(VENV)/.stamp-dev
	$(BIN)/mypy

pytest: $(VENV)/.stamp-dev
	$(BIN)/pytest

# ipykernel 7.3 and 7.4 dispatch comm messages differently (shared/reference/kernel-mechanics.md §2):
# the kernel tests run again in a second environment pinned to 7.3.
IK73 := .venv-ipykernel73
$(IK73)/.stamp: pyproject.toml
	$(PYTHON) -m venv $(IK73)
	$(IK73)/bin/python -m pip install --quiet --upgrade pip
	$(IK73)/bin/python -m pip install --quiet -e '.[test]' 'ipykernel==7.3.0'
	touch $@

pytest-ipykernel73: $(IK73)/.stamp
	$(IK73)/bin/pytest tests/kernel -p no:cacheprovider

test: lint typecheck pytest pytest-ipykernel73

bench: $(VENV)/.stamp-dev
	$(BIN)/python bench/store.py

clean:
	rm -rf $(VENV) $(IK73) build dist .pytest_cache .mypy_cache .ruff_cache
