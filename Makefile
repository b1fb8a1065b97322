# HomeHub's two set-up commands: `make run` (the hub) and `make test` (the whole suite).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
HOST   ?= 127.0.0.1
PORT   ?= 8000
PG_TEST_URL ?= postgres://postgres@127.0.0.1:5432/postgres
CONFORMANCE := tests/conformance

.PHONY: run demo test lint format system-deps messages

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.installed-run: requirements.txt | $(BIN)/python
	$(BIN)/pip install -q -r requirements.txt
	touch $@

$(VENV)/.installed-dev: requirements.txt requirements-dev.txt | $(BIN)/python
	$(BIN)/pip install -q -r requirements-dev.txt
	touch $@ $(VENV)/.installed-run

## run: install, migrate, seed the home, create the first login, serve on http://$(HOST):$(PORT)/
run: $(VENV)/.installed-run
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py seed_home
	$(BIN)/python manage.py ensure_admin --host $(HOST) --port $(PORT)
	$(BIN)/python manage.py serve --host $(HOST) --port $(PORT)

## demo: like run, with simulated ESP32 agents (WebSocket and MQTT), a living home climate and four
## automations (the sunset one at Guatemala City's location unless HOMEHUB_LOCATION says otherwise)
demo: $(VENV)/.installed-run
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py seed_home
	$(BIN)/python manage.py ensure_admin --host $(HOST) --port $(PORT)
	HOMEHUB_LOCATION="$${HOMEHUB_LOCATION:-14.63,-90.51}" $(BIN)/python manage.py serve --demo --host $(HOST) --port $(PORT)

## messages: gather the translatable texts into locale/es/LC_MESSAGES/django.po (translations kept;
## fill the new msgstr lines), then compile the .mo the hub reads (both committed; needs Debian gettext)
messages:
	$(BIN)/python manage.py makemessages -l es --ignore=.venv --ignore=tests --ignore=node_modules --ignore=bench --no-location --no-wrap
	$(BIN)/python manage.py compilemessages -l es

## system-deps: Debian packages the tests need (installed only when missing)
system-deps:
	bash .ci/system-deps.sh

## conformance: the official MCP conformance suite and Node 22, from npm (again when the lock changes)
$(CONFORMANCE)/node_modules/.installed: $(CONFORMANCE)/package.json $(CONFORMANCE)/package-lock.json
	cd $(CONFORMANCE) && npm ci --no-audit --no-fund
	touch $@

## test: lint, then the whole suite on SQLite and, side by side, on PostgreSQL all of it but the
## browser and conformance tests (what a browser or an MCP client sees is the same on either
## database; the tests of every door below them run on both). Both passes must pass; the
## PostgreSQL pass's report follows the SQLite one's. PYTEST_ARGS go to both (e.g. -k healthz).
## Each pass runs in a session of its own, its SIGINT restored (a shell leaves its background
## commands ignoring it), so that Ctrl-C (or a TERM to make) reaches each pass once, through the
## trap: both stop as after their own Ctrl-C, their test databases dropped and the brokers and
## hubs they started (each in the pass's process group) stopped.
test: $(VENV)/.installed-dev system-deps $(CONFORMANCE)/node_modules/.installed lint
	@mkdir -p artifacts
	@echo "PostgreSQL pass running beside this one; its report: artifacts/pytest-postgresql.log"
	@trap 'trap "" INT TERM; echo; echo "make test: interrupted, stopping both passes"; \
	      kill -INT -$$sqlite -$$postgres 2>/dev/null; wait; exit 130' INT TERM; \
	DATABASE_URL=$(PG_TEST_URL) setsid env --default-signal=INT $(BIN)/pytest -p no:cacheprovider \
	    -m "not browser and not conformance" $(PYTEST_ARGS) > artifacts/pytest-postgresql.log 2>&1 & \
	postgres=$$!; \
	setsid env --default-signal=INT $(BIN)/pytest $(PYTEST_ARGS) & \
	sqlite=$$!; \
	wait $$sqlite; sqlite_status=$$?; \
	wait $$postgres; pg=$$?; \
	echo; echo "=== PostgreSQL pass ($(PG_TEST_URL)) ==="; \
	if [ $$pg -eq 0 ]; then tail -n 3 artifacts/pytest-postgresql.log; else cat artifacts/pytest-postgresql.log; fi; \
	test $$sqlite_status -eq 0 && test $$pg -eq 0

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/mypy

format: $(VENV)/.installed-dev
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .
