"""Baseline: one bare pass of Spark's own CSV source over the predictions (issue 47).

    spark-submit benchmarks/bare_read.py PREDICTIONS

Reads the three columns with Spark's CSV source (its Parquet source for a path ending
in ``.parquet``) and writes them to the ``noop`` sink, the least a Spark plan over the
file can do. Prints the pass's seconds, timed in the
process after the session is up, as the phase lines of a disc21spark run are.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
import warnings
from collections.abc import Callable

BARE = "Spark's CSV source, one bare pass (noop write)"
BARE_GOAL = 2.0  # issue 47: the distributed plan's row phases at most this many passes
RESAMPLES_0 = "disc21spark --resamples 0"  # how the contender compared begins


def pass_seconds(out: str) -> float:
    """The seconds of the pass, from what ``main`` printed."""
    printed = [line for line in out.splitlines() if line.startswith("{")]
    if not printed:
        raise SystemExit(f"bench: the bare pass printed no result:\n{out[-2000:]}")
    return json.loads(printed[-1])["bare_read_seconds"]


def bare_read_lines(
    results: dict[str, dict], phases: tuple[str, ...], row_seconds: Callable[[dict], float]
) -> list[str]:
    """The distributed plan's row phases (``--resamples 0``; ``row_seconds`` of its
    result: the median of the runs' sums of ``phases``) against one bare pass over the
    same file, both timed inside their process; no line without the bare pass."""
    if BARE not in results:
        return []
    bare = statistics.median(results[BARE]["pass_seconds"])
    lines = [f"\n{BARE}: {bare:.2f} s (median of the passes, the session's start left out)"]
    for name in (n for n in results if n.startswith(RESAMPLES_0)):
        rows = row_seconds(results[name])
        verdict = "met" if rows / bare <= BARE_GOAL else "MISSED"
        lines.append(
            f"\ngoal: the row phases ({', '.join(phases)}) of {name}, {rows:.2f} s, "
            f"≤ {BARE_GOAL}× a bare pass: {rows / bare:.2f}× ({verdict})"
        )
    return lines


def main(path: str) -> None:
    from pyspark.sql import SparkSession

    warnings.filterwarnings("ignore")
    spark = SparkSession.builder.appName("bare-read").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    start = time.perf_counter()
    reader = spark.read.schema("query_id string, reference_id string, score double")
    frame = reader.parquet(path) if path.endswith(".parquet") else reader.csv(path)
    frame.write.format("noop").mode("overwrite").save()
    print(json.dumps({"bare_read_seconds": round(time.perf_counter() - start, 3)}))
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
