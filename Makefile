# Two commands for a fresh machine: `make run` and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
PYTHON ?= python3

.PHONY: run test venv db migrate lint typecheck bench-scheduler bench-executor clean

$(VENV)/.installed: requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -r requirements-dev.txt
	touch $@

venv: $(VENV)/.installed

db: venv
	$(PY) manage.py ensure_database

migrate: db
	$(PY) manage.py migrate --noinput

## make run: install, create + migrate the database, start the API and every worker.
run: export DEBUG ?= 1
run: migrate
	$(PY) manage.py run_dev

## make test: install, then run the whole suite on the real MariaDB.
test: venv
	$(PY) -m pytest $(PYTEST_ARGS)

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: venv
	$(VENV)/bin/mypy jobsched_project tasks jobs history workers

clean:
	rm -rf $(VENV)
