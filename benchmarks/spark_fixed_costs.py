"""Spark's fixed costs of a tiny run (issue 47): a 400-pair ``ds.evaluate`` on a warm
``local[2]`` session, its Spark jobs, its py4j round trips and its median time.

    python benchmarks/spark_fixed_costs.py            # BENCH_REPEAT runs, default 15

The inputs and the session's settings are those of ``tests/test_spark_fixed_costs.py``
(60 queries, 400 pairs with true pairs and ties; 4 shuffle partitions), and the calls
are counted as it counts them (proxies released by a collection counted too). Three
warm-up runs come first; the figures are checked against the in-process engine's. To
compare two checkouts, run it with each one's ``PYTHONPATH``, in turn: the code is the
one ``PYTHONPATH`` names, and the script prints which.
"""

from __future__ import annotations

import gc
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.append(str(ROOT))  # PYTHONPATH first: the checkout compared

from per_file_cost import timed  # noqa: E402

import disc21spark as ds  # noqa: E402
from disc21spark.core.session import spark_session  # noqa: E402
from tests.helpers import py4j_calls, tiny_inputs  # noqa: E402

REPEAT = int(os.environ.get("BENCH_REPEAT", "15"))


def main() -> None:
    conf = {"spark.sql.shuffle.partitions": "4", "spark.default.parallelism": "2"}
    spark = spark_session(master="local[2]", conf=conf)
    gt, predictions = tiny_inputs(Path(tempfile.mkdtemp()))
    wanted = ds.evaluate(gt, predictions, engine="local").to_dict()
    for _ in range(3):
        assert ds.evaluate(gt, predictions, engine=spark).to_dict() == wanted
    tracker = spark.sparkContext.statusTracker()
    before = set(tracker.getJobIdsForGroup())
    with py4j_calls() as calls:
        ds.evaluate(gt, predictions, engine=spark)
        gc.collect()  # proxies in reference cycles released now, counted with the run
    jobs = len(set(tracker.getJobIdsForGroup()) - before)
    seconds, _ = timed(lambda: ds.evaluate(gt, predictions, engine=spark), REPEAT)
    print(
        f"{ds.__file__}: {jobs} Spark jobs, {calls[0]:,} py4j calls; "
        f"median {statistics.median(seconds):.3f} s of {REPEAT} "
        f"(min {min(seconds):.3f}, max {max(seconds):.3f})"
    )


if __name__ == "__main__":
    main()
