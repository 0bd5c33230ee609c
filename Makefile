# Two commands on a fresh machine (Python 3.11 and make):
#   make demo   install firedup and its runtime dependencies only in .venv, and run it on sample_logs/
#   make test   add the test and fleet extras (and Azurite) and run the whole test suite (what CI runs);
#               it needs no `make demo` first
#   make check  the fast loop while developing: lint, types, the tests not marked slow
#   make docs   rerun every example of README.md and docs/ and rewrite its output

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
# what is installed: firedup with its runtime dependencies (demo), then the extras the tests need
DEMO_STAMP := $(VENV)/.installed-demo
TEST_STAMP := $(VENV)/.installed-test
T0         := $(shell date +%s)

# The demo report's "Generated" time (SOURCE_DATE_EPOCH, the reproducible-builds convention):
# when sample_logs/ last changed, as the author time of its last commit (unlike the committer
# time, it survives a rebase or cherry-pick), or the mtime of its truth.json without git. So
# `make demo` rewrites reports/sample/ byte for byte. A SOURCE_DATE_EPOCH from the environment wins.
GIT_EPOCH   = $(shell git log -1 --format=%at -- sample_logs 2>/dev/null)
MTIME_EPOCH = $(shell $(PYTHON) -c 'import os; print(int(os.stat("sample_logs/truth.json").st_mtime))')
DEMO_EPOCH  = $(or $(SOURCE_DATE_EPOCH),$(GIT_EPOCH),$(MTIME_EPOCH))

.PHONY: demo test check docs lint samples clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# `make demo` needs polars, matplotlib, click, python-dateutil and what the package itself needs
# (pyproject's dependencies): no test tools, no Ray, no emulators. It says how long that took and
# how big .venv is, on the machine it runs on (the README quotes no such figure: it cannot hold everywhere).
$(DEMO_STAMP): pyproject.toml | $(BIN)/python
	@start=$$(date +%s); \
	$(BIN)/python -m pip install --quiet --upgrade pip && \
	$(BIN)/python -m pip install --quiet -e . && \
	echo "make: installed firedup and its runtime dependencies in $$(( $$(date +%s) - start )) s" \
	     "($(VENV): $$(du -sm $(VENV) | cut -f1) MB)"
	@touch $@ $(VENV)/.installed-now

$(TEST_STAMP): $(DEMO_STAMP)
	@start=$$(date +%s); \
	$(BIN)/python -m pip install --quiet -e '.[test,fleet,fleet-test]' && \
	echo "make: installed the test and fleet extras in $$(( $$(date +%s) - start )) s"
	@# Azurite, the Azure Blob emulator of the az:// tests (tests/_emulators.py), from npm
	@if command -v npm >/dev/null; then npm install --silent --no-audit --no-fund --prefix $(VENV)/node azurite@3.37.0; \
	else echo "make: no npm, so no Azurite: the az:// test will be skipped (and fail under CI)"; fi
	@echo "make: $(VENV) with the test and fleet extras: $$(du -sm $(VENV) | cut -f1) MB"
	@rm -f $(VENV)/.installed-now
	@touch $@

# At most 60 lines, the answer last: every command's first paragraph is its answer (`head`
# would hide a failure, so each output is kept and cut at its first blank line).
demo: $(DEMO_STAMP)
	@echo "== every run in sample_logs/ (firedup parse)"
	@$(BIN)/firedup parse sample_logs/
	@echo; echo "== the team report: charts, budget, crashes, every run phase by phase (firedup report)"
	@SOURCE_DATE_EPOCH=$(DEMO_EPOCH) $(BIN)/firedup report sample_logs/ --by disable_cuda_graph -o reports/sample/
	@echo "make demo: $$(( $$(date +%s) - $(T0) )) s in all$$(test -f $(VENV)/.installed-now && echo ', the install included') ($(VENV): $$(du -sm $(VENV) | cut -f1) MB)"; rm -f $(VENV)/.installed-now
	@echo; echo "== why was production slow? (firedup compare sample_logs/ --by disable_cuda_graph)"
	@out=$$($(BIN)/firedup compare sample_logs/ --by disable_cuda_graph) || exit $$?; printf '%s\n' "$$out" | sed '/^$$/q' | sed '$${/^$$/d}'
	@echo; echo "== and what timeout? (firedup budget sample_logs/ --by disable_cuda_graph)"
	@out=$$($(BIN)/firedup budget sample_logs/ --by disable_cuda_graph) || exit $$?; printf '%s\n' "$$out" | sed '/^$$/q' | sed '$${/^$$/d}'

test: $(TEST_STAMP)
	$(BIN)/ruff check src tests benchmarks docs
	$(BIN)/mypy
	$(BIN)/python -m pytest -q

check: $(TEST_STAMP)
	$(BIN)/ruff check src tests benchmarks docs
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -m "not slow"

docs: $(TEST_STAMP)
	$(BIN)/python docs/examples.py

samples: $(DEMO_STAMP)
	$(BIN)/firedup synth sample_logs/ --seed 7

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
