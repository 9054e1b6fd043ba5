# disc21spark: `make demo` and `make test` set everything up on a fresh machine (Java 17 needed).
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
GT      = data/disc21_dev_ground_truth.csv
# Spark's Python workers must be the virtualenv's interpreter; loopback keeps Spark off the network
export PYSPARK_PYTHON        = $(CURDIR)/$(BIN)/python
export PYSPARK_DRIVER_PYTHON = $(CURDIR)/$(BIN)/python
export SPARK_LOCAL_IP        = 127.0.0.1
# spark-submit reads disc21spark/conf/log4j2.properties (quiet logs) from here
export SPARK_CONF_DIR        = $(CURDIR)/disc21spark/conf
SUBMIT  = scripts/spark-submit

.PHONY: venv java demo test docs lint chromium airflow-venv test-airflow fuzz bench dist cluster-start cluster-stop clean

venv: $(VENV)/.installed

# a setup.cfg change reinstalls into the virtualenv if it works: `python3 -m venv` over a
# virtualenv another interpreter made (pyenv's python3, then Debian's) would break it
# without Java the virtualenv is still built: one local submission is scored in this
# process and needs no JVM; Spark's commands (pools, descriptors, --engine spark) do
$(VENV)/.installed: setup.cfg pyproject.toml
	@scripts/check_java.sh || echo "make venv: going on without Java: one local submission is scored in this process; pools, the descriptor track and --engine spark need Java 17 (make demo and make test check it)"
	@$(BIN)/python -m pip --version >/dev/null 2>&1 || { echo "$(PYTHON) -m venv --clear $(VENV)"; \
	    $(PYTHON) -m venv --clear $(VENV); }
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,docs,bench]'
	@touch $@

java:
	@scripts/check_java.sh

demo: venv java
	$(BIN)/python -m disc21spark.testing.synth --ground-truth $(GT) --output demo/predictions.csv --predictions 200000 --seed 21
	$(SUBMIT) jobs/evaluate.py --ground-truth $(GT) --predictions demo/predictions.csv --output demo/out --overwrite
	for s in 31 32 33 34 35; do $(BIN)/python -m disc21spark.testing.synth --ground-truth $(GT) \
	    --output demo/pool/team$$s.csv --predictions 100000 --seed $$s || exit 1; done
	head -n 50001 demo/pool/team31.csv > demo/pool/half31.csv  # a team that answered half the queries
	$(SUBMIT) jobs/evaluate.py --ground-truth $(GT) --predictions 'demo/pool/*.csv' --output demo/pool_out --overwrite
	$(BIN)/python -m disc21spark.testing.synth --ground-truth $(GT) --descriptors demo/descriptors --references 50000 --dim 64 --noise 1.2 --seed 21
	$(SUBMIT) jobs/evaluate.py --ground-truth $(GT) --query-descriptors demo/descriptors/queries.h5 \
	    --reference-descriptors demo/descriptors/references.h5 --output demo/out_descriptors --overwrite
	$(SUBMIT) jobs/make_library.py --output demo/library --size 300 --seed 1 --overwrite
	$(SUBMIT) jobs/make_queries.py --images demo/library --output demo/bench --overwrite \
	    --tests crop:90..10:20,jumble:4x4,lowcon:80,crop:50+lowcon:80 --queries-per-test 100 --distractors 0.2 --seed 7
	$(SUBMIT) jobs/rank_eval.py --bench demo/bench --methods colorhist,correlogram,tiny,pdq \
	    --output demo/report --subsets 3 --sizes 100,200,280 --overwrite

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# the documentation site in site/, from docs/ (mkdocs.yml): strict, so a warning, a broken
# link or a broken reference fails; the CLI and API references are generated as it builds,
# and the pictures (docs/img/generated/, git-ignored) are made fresh by the product's own
# commands (docs/_hooks/pictures_hook.py): they need Java and Chromium
docs: venv java chromium
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# the leaderboard page test renders in Debian's headless Chromium; where apt-get cannot
# install it (not root, no mirror) the test says so and is skipped
chromium:
	@test -x /usr/bin/chromium || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -qq chromium >/dev/null; } || echo "make chromium: could not install Debian's chromium; the page test will be skipped"

# two xdist workers on a 2-core machine: half of a serial run waits on JVMs starting and
# stopping. One worker runs the cluster tests, which share one standalone cluster
# (tests/conftest.py: ONE_WORKER). TEST_WORKERS=0 runs the suite in one process.
TEST_WORKERS ?= 2
PYTEST_ARGS  ?=

test: venv java lint chromium
	$(BIN)/python -m pytest $(if $(filter-out 0,$(TEST_WORKERS)),-n $(TEST_WORKERS)) $(PYTEST_ARGS)

# Airflow lives in a virtualenv of its own (its dependencies are not the project's): the
# versions below install together on Python 3.11 and run the DAGs of dags/. No bytecode
# at install (--no-compile): Airflow imports a part of its hundreds of packages, compiled
# on first import; compiling them all cost 20 s of CPU beside make test in CI
AIRFLOW_VENV ?= .venv-airflow
AIRFLOW_PINS  = apache-airflow==3.3.2 apache-airflow-providers-apache-spark==6.3.4

airflow-venv: $(AIRFLOW_VENV)/.installed

$(AIRFLOW_VENV)/.installed:
	$(PYTHON) -m venv $(AIRFLOW_VENV)
	$(AIRFLOW_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(AIRFLOW_VENV)/bin/python -m pip install --quiet --no-compile $(AIRFLOW_PINS)
	@touch $@

# the DAGs import cleanly and the pool DAG runs end to end (`airflow dags test`, a
# throwaway metadata database, local Spark): published, reused, rescored
test-airflow: venv airflow-venv
	DISC21SPARK_AIRFLOW_VENV=$(CURDIR)/$(AIRFLOW_VENV) $(BIN)/python -m pytest tests/test_airflow_dags.py $(PYTEST_ARGS)

# the long fuzz of every input format (tests/test_fuzz.py; make test runs a 30 s one), of
# the organiser's inputs (tests/test_fuzz_organiser.py: 2,000 reads of each file kind, 200
# freezes, 100 commands; make test runs 300, 40 and 24) and the long signal stress
# (tests/test_signals.py: 40 runs; make test runs 6)
fuzz: venv
	DISC21SPARK_FUZZ_SECONDS=600 DISC21SPARK_FUZZ_SPARK=20 DISC21SPARK_SIGNAL_RUNS=40 \
	DISC21SPARK_ORGANISER_READS=2000 DISC21SPARK_ORGANISER_FREEZES=200 DISC21SPARK_ORGANISER_RUNS=100 \
	    $(BIN)/python -m pytest -s tests/test_fuzz.py tests/test_fuzz_organiser.py tests/test_signals.py

# BENCH_LARGE=1 (on make's command line, so in every recipe's environment) makes the
# second matching run 50M rows and adds the soak; the first stays at the challenge's 500,000.
# The package is byte-compiled first, as `pip install` of a wheel leaves it and as the peers'
# packages (DuckDB, numpy, pyarrow) are: an editable install under PYTHONDONTWRITEBYTECODE=1
# (set on some machines) otherwise compiles every module of ours again in each run
bench: venv
	$(BIN)/python -m compileall -q disc21spark
	env -u BENCH_LARGE BENCH_ROWS=500000 $(BIN)/python benchmarks/bench_matching.py
	$(BIN)/python benchmarks/bench_matching.py
	$(BIN)/python benchmarks/bench_descriptors.py
	$(BIN)/python benchmarks/bench_pool.py
	$(BIN)/python benchmarks/bench_pool_local.py
	$(BIN)/python benchmarks/bench_pool_scale.py
	$(BIN)/python benchmarks/bench_queries.py
	$(BIN)/python benchmarks/bench_ranks.py
	$(BIN)/python benchmarks/bench_stats.py
	$(BIN)/python benchmarks/spark_fixed_costs.py
	@if [ -n "$(BENCH_LARGE)" ]; then $(BIN)/python benchmarks/bench_soak.py; fi

# the wheel and dist/disc21spark-env.tar.gz, the executors' Python environment (README: On a cluster)
dist: venv
	scripts/make_dist.sh

cluster-start: venv
	scripts/standalone.sh start

cluster-stop:
	scripts/standalone.sh stop

clean:
	rm -rf demo benchmarks/results .pytest_cache .hypothesis dist build site
