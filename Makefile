# The two commands of the README's quick start, and what they need.
# `make demo`: install everything and run the built-in comparison on every backend.
# `make test`: install everything and run the linter, the formatter check and the whole test suite.
# `make test-jit-matrix`: the tests of jitlab.jit (tests/jit, tests/capture) on Python 3.12 and 3.13,
#   beside the default 3.11 of `make test`. Each interpreter is $(PYTHON312) / $(PYTHON313) if set, else
#   the newest pyenv one under $(PYENV_ROOT)/versions; each gets its own .venv-3.12 / .venv-3.13 (made
#   once, reinstalled through constraints.txt when pyproject.toml or constraints.txt change). A missing
#   interpreter is skipped with a note, except under CI=true, where it fails.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Every install goes through the constraints file: an unpinned torch pulls several GB of CUDA packages.
PIP := $(BIN)/python -m pip install -q -c constraints.txt

.PHONY: demo test install install-test lint clean test-jit-matrix

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

PYENV_ROOT ?= $(HOME)/.pyenv
# the newest pyenv interpreter of a minor version, e.g. $(call pyenv_python,3.12)
pyenv_python = $(lastword $(sort $(wildcard $(PYENV_ROOT)/versions/$(1).*/bin/python$(1))))
PYTHON312 ?= $(call pyenv_python,3.12)
PYTHON313 ?= $(call pyenv_python,3.13)
JIT_MATRIX_VERSIONS := 3.12 3.13
JIT_MATRIX_TESTS ?= tests/jit tests/capture

test-jit-matrix: $(addprefix test-jit-py,$(JIT_MATRIX_VERSIONS))

test-jit-py%:
	@py="$(PYTHON$(subst .,,$*))"; venv=".venv-$*"; stamp="$$venv/.jitlab-installed"; \
	if [ -z "$$py" ] || [ ! -x "$$py" ]; then \
		if [ "$$CI" = "true" ]; then \
			echo "test-jit-matrix: no Python $* found: set PYTHON$(subst .,,$*)=/path/to/python$*" >&2; exit 2; \
		fi; \
		echo "test-jit-matrix: no Python $* found (set PYTHON$(subst .,,$*)=...): skipped"; exit 0; \
	fi; \
	set -e; \
	[ -x "$$venv/bin/python" ] || "$$py" -m venv "$$venv"; \
	if [ ! -f "$$stamp" ] || [ pyproject.toml -nt "$$stamp" ] || [ constraints.txt -nt "$$stamp" ]; then \
		"$$venv/bin/python" -m pip install -q -c constraints.txt -e ".[torch,test]"; touch "$$stamp"; \
	fi; \
	echo "test-jit-matrix: Python $* ($$py)"; \
	"$$venv/bin/python" -m pytest -q $(JIT_MATRIX_TESTS)

clean:
	rm -rf $(VENV) .venv-3.12 .venv-3.13 .jitlab
