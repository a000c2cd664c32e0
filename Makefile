# simsched: the two commands of the README, plus their set-up.
#   make demo   replay the bundled mergesort trace under WS and PDF, print a comparison, draw a figure
#   make test   run the test suite
# Both create .venv and install simsched with its dependencies from the package registries first.

PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.simsched-installed
OUT     ?= demo-out

.PHONY: setup demo test bench lint clean

$(STAMP): pyproject.toml
	@missing=""; for p in valgrind libzstd-dev binutils; do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "installing Debian packages:$$missing (capture backends)"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing) >/dev/null 2>&1 || \
	  echo "warning: could not install$$missing; capture backends that need them will say so"; fi
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	@touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m simsched.demo --out $(OUT)

test: $(STAMP)
	SIMSCHED_SMALL=1 $(BIN)/python -m pytest -q -n 2 --dist loadfile tests notebooks --nbmake

bench: $(STAMP)
	for b in benchmarks/bench_*.py; do $(BIN)/python $$b; done

lint: $(STAMP)
	$(BIN)/ruff check simsched tests benchmarks

clean:
	rm -rf $(VENV) $(OUT) .pytest_cache
