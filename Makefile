# The two commands of this project (see README.md): `make quickstart` and `make test`.
# Each creates .venv on first use and reinstalls when pyproject.toml changes.
PYTHON ?= python3
VENV   := .venv
# llama-cpp-python (the `local` extra) builds from source; keep the build portable across CPUs.
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF
BIN    := $(VENV)/bin

.PHONY: quickstart test lint typecheck acp-agents pytest pytest-ipykernel73 pytest-acp-sdk011 js js-test bench bench-render clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.stamp-%: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[$*]'
	touch $@

quickstart: $(VENV)/.stamp-local
	$(BIN)/agentcell run notebooks/quickstart.ipynb --model local:smollm2

lint: $(VENV)/.stamp-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(VENV)/.stamp-dev js
	$(BIN)/mypy
	cd widgets/js && npx tsc --noEmit

# The widget front end (widgets/js): npm packages from the lockfile, then the esbuild bundle that the
# Python package ships (pip install runs the same build through hatch-jupyter-builder).
JS := widgets/js
$(JS)/node_modules/.package-lock.json: $(JS)/package-lock.json
	cd $(JS) && npm ci --no-audit --no-fund

js: $(JS)/node_modules/.package-lock.json
	cd $(JS) && npm run build

js-test: js
	cd $(JS) && npx vitest run

# Third-party ACP agents from npm (tests/kernel/test_third_party_agents.py), from their lockfile.
AGENTS := tests/acp_agents
$(AGENTS)/node_modules/.package-lock.json: $(AGENTS)/package-lock.json
	cd $(AGENTS) && npm ci --no-audit --no-fund

acp-agents: $(AGENTS)/node_modules/.package-lock.json

# Two workers, each taking whole files (a module's Lab, servers and fixtures stay in one process): most
# tests wait on kernels, servers and browsers, so two run in about the time of one.
pytest: $(VENV)/.stamp-dev js acp-agents
	$(BIN)/pytest -n 2 --dist loadfile

# ipykernel 7.3 and 7.4 dispatch comm messages differently (shared/reference/kernel-mechanics.md §2):
# the kernel tests run again in a second environment pinned to 7.3.
IK73 := .venv-ipykernel73
$(IK73)/.stamp: pyproject.toml
	$(PYTHON) -m venv $(IK73)
	$(IK73)/bin/python -m pip install --quiet --upgrade pip
	$(IK73)/bin/python -m pip install --quiet -e '.[test]' 'ipykernel==7.3.0'
	touch $@

# With 7.3 also the widget's comm paths: its transport over ZMQ, and approvals/Stop in JupyterLab with
# comms over subshells on and off (the rest of the browser tests run once, on 7.4, in `make pytest`).
# The quickstart's local-model runs exercise llama.cpp, not comm dispatch: they run once, in `make pytest`.
pytest-ipykernel73: $(IK73)/.stamp js
	$(IK73)/bin/pytest -n 2 --dist loadfile tests/kernel tests/widgets/test_transport.py tests/browser/test_comms_matrix.py -p no:cacheprovider \
		--ignore=tests/kernel/test_quickstart.py

# jupyter-ai-acp-client pins agent-client-protocol<0.12: the ACP tests again with `agentcell acp` on the SDK
# 0.11.1 (first on the agent's path; the tests' client, an editor, keeps 0.12). One small package, no second
# environment.
ACP011 := .venv-acp-sdk011
$(ACP011)/.stamp: pyproject.toml | $(VENV)/.stamp-dev
	$(BIN)/python -m pip install --quiet --no-deps --target $(ACP011) 'agent-client-protocol==0.11.1'
	touch $@

pytest-acp-sdk011: $(ACP011)/.stamp
	AGENT_PYTHONPATH=$(CURDIR)/$(ACP011) $(BIN)/pytest tests/acp -p no:cacheprovider

test: lint typecheck js-test pytest pytest-ipykernel73

bench: $(VENV)/.stamp-dev
	$(BIN)/python bench/store.py

# A 20,000-delta turn in JupyterLab + Chromium (issue 6); figures go to bench/RESULTS.md by hand.
bench-render: $(VENV)/.stamp-dev js
	$(BIN)/python bench/render.py

clean:
	rm -rf $(VENV) $(IK73) $(ACP011) build dist .pytest_cache .mypy_cache .ruff_cache
