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
	@command -v valgrind >/dev/null 2>&1 || { echo "installing valgrind (capture backend)"; \
	  (apt-get update -qq && apt-get install -y -qq valgrind) >/dev/null 2>&1 || \
	  echo "warning: could not install valgrind; the valgrind capture backend will be unavailable"; }
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	@touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m simsched.demo --out $(OUT)

test: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 --dist loadfile

bench: $(STAMP)
	for b in benchmarks/bench_*.py; do $(BIN)/python $$b; done

lint: $(STAMP)
	$(BIN)/ruff check simsched tests benchmarks

clean:
	rm -rf $(VENV) $(OUT) .pytest_cache
