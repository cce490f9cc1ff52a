# The two commands of the README's quick start, and what they need.
# `make demo`: install everything and run the built-in comparison on every backend.
# `make test`: install everything and run the linter, the formatter check and the whole test suite,
#   then the Python matrix (`make test-matrix`).
# `make test-matrix`: OLDER_MATRIX_TESTS on each of MATRIX_PYTHONS but the last (newest), and
#   JIT_MATRIX_TESTS with NEWEST_MATRIX_TESTS on the newest, each Python in its own .venv-X.Y (pyenv's interpreters, or
#   $PYTHON312/$PYTHON313), reinstalled through constraints.txt when pyproject.toml or
#   constraints.txt change; a missing interpreter is skipped, or an error under CI=true.
# `make test-jit-matrix`: the tests of jitlab.jit (tests/jit, tests/capture) on every Python of the matrix.
# `make test-gpu`: on a machine with an NVIDIA GPU, the GPU-only tests and short GPU runs.
# `make test-extras`: tests/install with every extra (the wheel with each single extra in a fresh
#   venv; the suite tries the base and numba only) on $(PYTHON) and on each of EXTRAS_PYTHONS
#   (pyenv's 3.12 and 3.13 by default).

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Every install goes through the constraints file (an unpinned torch pulls several GB of CUDA
# packages), then compiles the installed bytecode on every core: see .ci/venv-install.
INSTALL := bash .ci/venv-install $(BIN)/python

# Python versions of the matrix, and the tests run on them (the whole suite runs on $(PYTHON)).
# jitlab.jit interprets each version's own bytecode, so its tests run on every version; the
# backend, engine and doctor tests are plain Python over the frameworks' wheels, and run on the
# newest only (what 3.12 removed, 3.13 lacks too): 234 s less of `make test` at 3.11's speed here.
MATRIX_PYTHONS ?= 3.12 3.13
JIT_MATRIX_TESTS ?= tests/jit tests/capture
# the older Pythons run the interpreter's own tests; the capture tests (corpora and the model zoo
# through the CLI, timm and torchvision on 3.12 and later) run on the newest: `make test` took 88 of
# CI's 90 minutes on this VM with both on 3.12 and 3.13 (3.12's part: 944 s of tests)
OLDER_MATRIX_TESTS ?= tests/jit
NEWEST_MATRIX_TESTS ?= tests/backends tests/engine tests/doctor
NEWEST_MATRIX_PYTHON := $(lastword $(MATRIX_PYTHONS))
OLDER_MATRIX_PYTHONS := $(filter-out $(NEWEST_MATRIX_PYTHON),$(MATRIX_PYTHONS))
EXTRAS_PYTHONS ?= $(lastword $(wildcard $(HOME)/.pyenv/versions/3.12.*/bin/python)) \
	$(lastword $(wildcard $(HOME)/.pyenv/versions/3.13.*/bin/python))
# where `make test-gpu` stores its runs
GPU_STORE ?= .jitlab/gpu-check.sqlite

.PHONY: demo test test-matrix test-jit-matrix test-extras test-gpu install install-test lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

install: $(BIN)/python
	$(INSTALL) all

install-test: $(BIN)/python
	$(INSTALL) all,test,zoo

demo: install
	$(BIN)/jitlab run pi

lint: install-test
	$(BIN)/ruff check jitlab tests corpus
	$(BIN)/ruff format --check jitlab tests corpus

test: install-test lint
	$(BIN)/pytest -q
	$(MAKE) test-matrix

# both parts run, and the target fails when either did
test-matrix:
	status=0; \
	bash .ci/python-matrix "$(OLDER_MATRIX_PYTHONS)" $(OLDER_MATRIX_TESTS) || status=1; \
	bash .ci/python-matrix "$(NEWEST_MATRIX_PYTHON)" $(JIT_MATRIX_TESTS) $(NEWEST_MATRIX_TESTS) || status=1; \
	exit $$status

test-jit-matrix:
	bash .ci/python-matrix "$(MATRIX_PYTHONS)" $(JIT_MATRIX_TESTS)

test-extras: install-test
	JITLAB_EXTRAS_TESTED=all $(BIN)/pytest -q tests/install
	@test -n "$(strip $(EXTRAS_PYTHONS))" || echo "test-extras: no Python 3.12/3.13 found (set EXTRAS_PYTHONS)"
	for python in $(EXTRAS_PYTHONS); do \
		JITLAB_EXTRAS_TESTED=all JITLAB_EXTRAS_PYTHON=$$python $(BIN)/pytest -q tests/install || exit 1; done

test-gpu: install-test
	@$(BIN)/python -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else \
		'make test-gpu: torch sees no CUDA GPU here (torch ' + torch.__version__ + ')')"
	$(BIN)/pytest -q -m gpu
	$(BIN)/jitlab machine --refresh
	$(BIN)/jitlab run pi --sizes 1e6,1e8 --backends numba-parallel,jax,torch,torch-compile,triton --store $(GPU_STORE)
	$(BIN)/jitlab run sampler --store $(GPU_STORE)
	$(BIN)/jitlab run fusion --sizes 1e7,1e8 --store $(GPU_STORE)
	$(BIN)/jitlab run async --store $(GPU_STORE)
	$(BIN)/jitlab capture --zoo transformers --generate --device cuda --backend inductor \
		--cases DistillGPT2,T5ForConditionalGeneration,Llama-3.2-1B

clean:
	rm -rf $(VENV) .venv-3.* .jitlab
