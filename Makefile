# The two commands of the README's quick start, and what they need.
# `make demo`: install everything and run the built-in comparison on every backend.
# `make test`: install everything and run the linter, the formatter check and the whole test suite.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Every install goes through the constraints file: an unpinned torch pulls several GB of CUDA packages.
PIP := $(BIN)/python -m pip install -q -c constraints.txt

.PHONY: demo test install install-test lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

install: $(BIN)/python
	$(PIP) -e ".[all]"

install-test: $(BIN)/python
	$(PIP) -e ".[all,test]"

demo: install
	$(BIN)/jitlab run pi

lint: install-test
	$(BIN)/ruff check jitlab tests corpus
	$(BIN)/ruff format --check jitlab tests corpus

test: install-test lint
	$(BIN)/pytest -q

clean:
	rm -rf $(VENV) .jitlab
