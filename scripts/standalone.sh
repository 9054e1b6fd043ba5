#!/usr/bin/env bash
# A real Spark standalone cluster on 127.0.0.1 (one master, one worker), from the
# virtualenv's PySpark: scripts/standalone.sh start | stop | status
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
STATE=${SPARK_STANDALONE_DIR:-$PWD/.spark-standalone}
PORT=${SPARK_MASTER_PORT:-7077}
CORES=${SPARK_WORKER_CORES:-2}
MEMORY=${SPARK_WORKER_MEMORY:-3g}
SPARK_HOME=$("$VENV/bin/python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')
# the daemons log at Spark's default INFO level: start-up is detected from their logs
unset SPARK_CONF_DIR
export SPARK_HOME SPARK_LOCAL_IP=127.0.0.1
export PYSPARK_PYTHON="$PWD/$VENV/bin/python"
mkdir -p "$STATE"

running() { [ -f "$STATE/$1.pid" ] && kill -0 "$(cat "$STATE/$1.pid")" 2>/dev/null; }

start() {
  if running master && running worker; then echo "standalone cluster already up: spark://127.0.0.1:$PORT"; return; fi
  "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.master.Master \
      --host 127.0.0.1 --port "$PORT" --webui-port 0 >"$STATE/master.log" 2>&1 &
  echo $! >"$STATE/master.pid"
  "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.worker.Worker \
      --host 127.0.0.1 --cores "$CORES" --memory "$MEMORY" --webui-port 0 \
      --work-dir "$STATE/work" "spark://127.0.0.1:$PORT" >"$STATE/worker.log" 2>&1 &
  echo $! >"$STATE/worker.pid"
  for _ in $(seq 1 120); do
    if grep -q "Successfully registered with master" "$STATE/worker.log" 2>/dev/null; then
      echo "standalone cluster up: spark://127.0.0.1:$PORT ($CORES cores, $MEMORY)"; return
    fi
    running master && running worker || break
    sleep 0.5
  done
  echo "error: the standalone cluster did not start; see $STATE/master.log and $STATE/worker.log" >&2
  stop; exit 1
}

stop() {
  for role in worker master; do
    if running "$role"; then kill "$(cat "$STATE/$role.pid")" 2>/dev/null || true; fi
    rm -f "$STATE/$role.pid"
  done
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) if running master && running worker; then echo up; else echo down; exit 1; fi ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
