#!/usr/bin/env bash
# make dist: the wheel, and a relocatable Python environment for a cluster's executors.
#   dist/disc21spark-<version>-py3-none-any.whl
#   dist/disc21spark-env.tar.gz   (spark-submit --archives dist/disc21spark-env.tar.gz#env
#                                  --conf spark.pyspark.python=./env/bin/python)
# The environment is a fresh virtualenv holding the wheel and its dependencies, packed by
# venv-pack. PySpark itself is left out (about 490 MB): every executor already runs the
# pyspark.zip of the cluster's own Spark, which must be the same 4.x release.
# venv-pack does not copy the interpreter: the nodes need CPython of the same minor
# version at the path the driver's has (env/bin/python links to it); otherwise use the
# container image of the README's Kubernetes section.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
BIN=${VENV:-.venv}/bin
OUT=dist
BUILD=build/dist-env
rm -rf "$OUT" "$BUILD"
mkdir -p "$OUT"
"$BIN/python" -m pip wheel --quiet --no-deps -w "$OUT" .
wheel=$(ls "$OUT"/disc21spark-*.whl)
"$PYTHON" -m venv "$BUILD"
"$BUILD/bin/python" -m pip install --quiet --upgrade pip
"$BUILD/bin/python" -m pip install --quiet "$wheel"
"$BUILD/bin/python" -m pip uninstall --quiet -y pyspark py4j
# the environment must import everything an executor runs, before it is packed
"$BUILD/bin/python" -c 'import disc21spark.ranks.methods, faiss, h5py, numpy, pyarrow, PIL, skimage, pdqhash'
"$BIN/venv-pack" --prefix "$BUILD" --output "$OUT/disc21spark-env.tar.gz" --compress-level 1 --quiet
rm -rf "$BUILD"
ls -l "$OUT"
