"""Baseline: one bare pass of Spark's own CSV source over the predictions (issue 47).

    spark-submit benchmarks/bare_read.py PREDICTIONS

Parses the three columns with Spark's CSV source and writes them to the ``noop`` sink,
the least a Spark plan over the file can do. Prints the pass's seconds, timed in the
process after the session is up, as the phase lines of a disc21spark run are.
"""

from __future__ import annotations

import json
import sys
import time
import warnings

from pyspark.sql import SparkSession


def main(path: str) -> None:
    warnings.filterwarnings("ignore")
    spark = SparkSession.builder.appName("bare-read").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    start = time.perf_counter()
    frame = spark.read.schema("query_id string, reference_id string, score double").csv(path)
    frame.write.format("noop").mode("overwrite").save()
    print(json.dumps({"bare_read_seconds": round(time.perf_counter() - start, 3)}))
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
