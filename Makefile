# `make demo` and `make test` set up everything they need: a .venv with Python 3.12 and the pinned packages.
VENV   := .venv
PY     := $(VENV)/bin/python
REQS   := requirements.txt requirements-dev.txt requirements-engine.txt
STAMP  := $(VENV)/.installed-$(shell cat $(REQS) | cksum | cut -d' ' -f1)

.PHONY: venv test demo bench fuzz package dsl clean

venv: $(STAMP)

$(STAMP): $(REQS) scripts/find_python.sh
	@set -e; \
	if [ ! -x $(PY) ] || ! $(PY) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null; then \
		py312=$$(scripts/find_python.sh 3.12); \
		echo "creating $(VENV) with $$py312"; \
		rm -rf $(VENV); $$py312 -m venv $(VENV); \
	fi
	$(PY) -m pip install --disable-pip-version-check -q --upgrade pip
	$(PY) -m pip install --disable-pip-version-check -q -r requirements-dev.txt
	$(PY) -m pip install --disable-pip-version-check -q --no-deps -r requirements-engine.txt
	rm -f $(VENV)/.installed-*
	touch $@

test: $(STAMP)
	$(PY) -m pytest -q tests

demo: $(STAMP)
	$(PY) -m gcite demo

package: $(STAMP)
	$(PY) -m gcite package

dsl: $(STAMP)
	$(PY) -m gcite build-dsl

bench: $(STAMP)
	$(PY) -m bench

FUZZ_SECONDS ?= 120
fuzz: $(STAMP)
	$(PY) -m fuzz --seconds $(FUZZ_SECONDS)

clean:
	rm -rf $(VENV) dist .pytest_cache .hypothesis
