#!/usr/bin/env bash
# A real Spark standalone cluster on 127.0.0.1 (one master, $WORKERS workers, default 1),
# from the virtualenv's PySpark: scripts/standalone.sh start | stop | status
# The workers get no Python setting: a job brings its environment (make dist's archive
# with spark.pyspark.python=./env/bin/python) or names an interpreter every node has.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
STATE=${SPARK_STANDALONE_DIR:-$PWD/.spark-standalone}
PORT=${SPARK_MASTER_PORT:-7077}
CORES=${SPARK_WORKER_CORES:-2}
MEMORY=${SPARK_WORKER_MEMORY:-3g}
WORKERS=${WORKERS:-1}
SPARK_HOME=$("$VENV/bin/python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')
# the daemons log at Spark's default INFO level: start-up is detected from their logs
unset SPARK_CONF_DIR
export SPARK_HOME SPARK_LOCAL_IP=127.0.0.1
unset PYSPARK_PYTHON PYSPARK_DRIVER_PYTHON
mkdir -p "$STATE"

running() { [ -f "$STATE/$1.pid" ] && kill -0 "$(cat "$STATE/$1.pid")" 2>/dev/null; }

workers() { seq 1 "$WORKERS" | sed 's/^/worker/'; }

all_up() {
  running master || return 1
  for w in $(workers); do running "$w" || return 1; done
}

start() {
  if all_up; then echo "standalone cluster already up: spark://127.0.0.1:$PORT"; return; fi
  "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.master.Master \
      --host 127.0.0.1 --port "$PORT" --webui-port 0 >"$STATE/master.log" 2>&1 &
  echo $! >"$STATE/master.pid"
  for w in $(workers); do
    # each worker its own folder: its applications unpack their archives there
    "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.worker.Worker \
        --host 127.0.0.1 --cores "$CORES" --memory "$MEMORY" --webui-port 0 \
        --work-dir "$STATE/work/$w" "spark://127.0.0.1:$PORT" >"$STATE/$w.log" 2>&1 &
    echo $! >"$STATE/$w.pid"
  done
  for _ in $(seq 1 120); do
    registered=0
    for w in $(workers); do
      grep -q "Successfully registered with master" "$STATE/$w.log" 2>/dev/null && registered=$((registered + 1))
    done
    if [ "$registered" -eq "$WORKERS" ]; then
      echo "standalone cluster up: spark://127.0.0.1:$PORT ($WORKERS × $CORES cores, $MEMORY)"; return
    fi
    all_up || break
    sleep 0.5
  done
  echo "error: the standalone cluster did not start; see the logs in $STATE" >&2
  stop; exit 1
}

stop() {
  for pidfile in "$STATE"/worker*.pid "$STATE"/master.pid; do
    [ -f "$pidfile" ] || continue
    kill "$(cat "$pidfile")" 2>/dev/null || true
    rm -f "$pidfile"
  done
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) if all_up; then echo up; else echo down; exit 1; fi ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
