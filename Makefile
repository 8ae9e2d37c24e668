# `make demo` and `make test` set up everything they need: a .venv with Python 3.12 and the pinned packages.
VENV   := .venv
PY     := $(VENV)/bin/python
REQS   := requirements.txt requirements-dev.txt requirements-engine.txt pyproject.toml
STAMP  := $(VENV)/.installed-$(shell cat $(REQS) | cksum | cut -d' ' -f1)

.PHONY: venv test test-fast demo bench fuzz package dsl clean browser test-dify check
DEMO ?= all

venv: $(STAMP)

$(STAMP): $(REQS) scripts/find_python.sh
	@echo "==> set-up [1/4] Python 3.12 in $(VENV) (the requirements changed, or this is the first run)"
	@set -e; \
	if [ ! -x $(PY) ] || ! $(PY) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null; then \
		py312=$$(scripts/find_python.sh 3.12); \
		echo "    creating $(VENV) with $$py312"; \
		rm -rf $(VENV); $$py312 -m venv $(VENV); \
	else echo "    $(VENV) exists"; fi
	@echo "==> set-up [2/4] upgrading pip"
	@$(PY) -m pip install --disable-pip-version-check -q --upgrade pip
	@echo "==> set-up [3/4] installing the pinned packages (requirements-dev.txt; about 100 MB the first time)"
	@$(PY) -m pip install --disable-pip-version-check --progress-bar on -r requirements-dev.txt
	@echo "==> set-up [4/4] installing graphon, Dify's workflow engine, without its extras (requirements-engine.txt)"
	@$(PY) -m pip install --disable-pip-version-check -q --no-deps -r requirements-engine.txt
	@echo "==> set-up: the gcite command, editable from this clone (pip install -e .; pyproject.toml)"
	@$(PY) -m pip install --disable-pip-version-check -q --no-deps --no-build-isolation -e .
	@rm -f $(VENV)/.installed-*
	@touch $@
	@echo "==> set-up done"

# the browser tests get a process of their own (the rest imports dify_plugin, whose gevent patching a browser
# driver must not share); the rest runs in three processes over disjoint folders (scripts/test_fast.sh). Each run is
# bounded so that a hang fails instead of holding CI, and says what it runs and how far it is every 20 s
test: $(STAMP) browser
	TEST_MARKS="not browser" TEST_FAST_TIMEOUT=1800 PY=$(PY) scripts/test_fast.sh
	TEST_FAST_TIMEOUT=900 PY=$(PY) scripts/test_fast.sh browser

# the loop while working: everything but the browser tests and the fuzz corpus replay, in three pytest processes
test-fast: $(STAMP)
	PY=$(PY) scripts/test_fast.sh

# every shipped chatflow in Dify's OWN api server (../shared/dify): PostgreSQL, Redis, gunicorn, Celery, on 127.0.0.1
test-dify: $(STAMP)
	scripts/test_dify.sh

# the page's browser tests drive Debian's chromium (never a downloaded browser); CJK fonts render the Chinese text
browser:
	@dpkg -s chromium fonts-noto-cjk >/dev/null 2>&1 || { apt-get update && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium fonts-noto-cjk; }

# make demo [QUERY="…"] [ROLES="role1,role2"] [DSL=code|plugin|path/to/dsl.yml] [DEMO=cli] [DEMO_LANG=en|zh];
# ROLES=, is a user with no role. The terminal demo, then the chat page on 127.0.0.1 (Ctrl-C stops it) unless
# DEMO=cli. Its sample questions are in DEMO_LANG, else in your locale's language (LANG: zh_* Chinese, else
# English); `gcite demo` reads DEMO_LANG itself and says which it chose and how to switch.
demo: $(STAMP)
	@set -- ; \
	if [ -n "$$QUERY" ]; then set -- "$$@" --query "$$QUERY"; fi; \
	if [ -n "$$ROLES" ]; then set -- "$$@" --roles "$$ROLES"; fi; \
	if [ -n "$$DSL" ]; then set -- "$$@" --dsl "$$DSL"; fi; \
	$(PY) -m gcite demo "$$@"
ifneq ($(DEMO),cli)
	$(PY) -m gcite serve
endif

# the static gate: the formatter's check and the linter, rules in ruff.toml (`ruff format .` fixes the formatting)
check: $(STAMP)
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/ruff check .

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
