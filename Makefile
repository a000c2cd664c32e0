# simsched: the two commands of the README, plus their set-up.
#   make demo   replay the bundled mergesort trace under WS and PDF, print a comparison, draw a figure
#   make test   check the style (ruff lint and format), the types (mypy) and the layering
#               (lint-imports, docs/architecture.md §3), run the tests (COVERAGE=1: and
#               measure their coverage of simsched)
# Both create .venv and install simsched with its dependencies from the package registries first
# (`make setup LOCKED=1` installs the exact versions of requirements.lock instead).  On Debian
# or Ubuntu, set-up first installs the capture backends' system packages with apt-get (it says
# which before it does; `NO_APT=1` skips that).

PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.simsched-installed
OUT     ?= demo-out
# non-empty when `make test COVERAGE=1` asks for coverage (any other value: none)
COV_ON  := $(filter 1,$(COVERAGE))

.PHONY: setup demo test bench lint clean

$(STAMP): pyproject.toml requirements.lock
	@missing=""; if [ -z "$(NO_APT)" ] && command -v dpkg >/dev/null; then \
	  for p in valgrind libzstd-dev binutils; do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; fi; \
	if [ -n "$$missing" ]; then \
	  echo "set-up: the capture backends need Debian packages:$$missing"; \
	  echo "set-up: running: apt-get update && apt-get install -y$$missing   (NO_APT=1 skips this)"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing) >/dev/null 2>&1 || \
	  echo "set-up: warning: could not install$$missing; capture backends that need them will say so"; fi
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(if $(LOCKED),$(BIN)/pip install -q -r requirements.lock && $(BIN)/pip install -q --no-deps -e .,$(BIN)/pip install -q -e '.[test]')
	@touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m simsched.demo --out $(OUT)

# The notebooks run their sweeps: run them on a copy so that nothing is written into the
# source tree (experiments/*/results stays the user's).  The whole run shares one cache
# (compiled kernels, baselines), private to it unless TEST_CACHE names a folder to keep
# between runs (`make test TEST_CACHE=~/.cache/simsched-test`: everything in it is keyed
# by the source that made it, so a kept cache is never stale).  `make test COVERAGE=1` also
# measures coverage of simsched and prints its total last; it is off by default because on
# Python 3.11 coverage's tracer makes the tests' own Python about 1.8x as costly, which
# took CI from about 16 to about 19.5 of its 20 minutes (docs/performance.md, "Test suite
# (CI)").  The notebooks go first, in the order given
# (--no-loadscope-reorder): they are the longest items, and pytest-xdist's default order
# (files with the most tests first) started them last, where one worker could be left to
# finish them alone.  A notebook whose Jupyter kernel died while starting is run again
# (twice at most, and for that error alone): the kernel manager picks free TCP ports and
# closes them before the kernel binds them, so a process starting at the same moment (the
# other worker's kernel, a test's Dask cluster) can take one first ("Address already in
# use"; CI failed so once).
test: $(STAMP)
	$(BIN)/ruff check simsched tests benchmarks experiments
	$(BIN)/ruff format --check simsched tests benchmarks experiments
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache
	@scratch=$$(mktemp -d) && trap 'rm -rf "$$scratch"' EXIT && \
	tar --exclude=results -cf - notebooks experiments traces/samples | tar -xf - -C "$$scratch" && \
	SIMSCHED_SMALL=1 SIMSCHED_CACHE_DIR="$(or $(TEST_CACHE),$$scratch/cache)" COVERAGE_FILE="$$scratch/.coverage" \
	  $(BIN)/python -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder -c pyproject.toml --rootdir . \
	  --reruns 2 --only-rerun 'Kernel died before replying to kernel_info' \
	  $(if $(COV_ON),--cov=simsched --cov-report=) "$$scratch/notebooks" tests --nbmake \
	$(if $(COV_ON),&& COVERAGE_FILE="$$scratch/.coverage" $(BIN)/coverage report --format=total | sed 's/^/coverage of simsched: /; s/$$/ % of lines/')

bench: $(STAMP)
	for b in benchmarks/bench_*.py; do $(BIN)/python $$b; done

lint: $(STAMP)
	$(BIN)/ruff check simsched tests benchmarks experiments
	$(BIN)/ruff format --check simsched tests benchmarks experiments

clean:
	rm -rf $(VENV) $(OUT) .pytest_cache
