"""The descriptor track's Spark search on the benchmark's data: starts a local session
and its Python workers (not timed: start-up is excluded, as the issue asks, just as the
FAISS baseline imports its modules before its clock), then times the search from the
files to the pairs in memory. Prints JSON and saves the pairs.

    python benchmarks/spark_search.py knn|max queries.h5 references.h5 K_or_N pairs.npz
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from disc21spark.core.phases import Phases  # noqa: E402
from disc21spark.core.session import spark_session  # noqa: E402
from disc21spark.descriptors.job import DescriptorJob, search_pairs  # noqa: E402


def _warm(batches):
    import faiss  # noqa: F401
    import h5py  # noqa: F401

    yield from batches


def main() -> None:
    mode, queries, references, amount, out = sys.argv[1:6]
    spark = spark_session("local", "local[*]", conf={"spark.driver.memory": "2g"})
    # the JVM and one Python worker per core are up before the clock starts
    workers = spark.sparkContext.defaultParallelism
    spark.range(0, workers, 1, workers).mapInArrow(_warm, "id long").count()
    job = DescriptorJob(
        ground_truth="",
        query_descriptors=[queries],
        reference_descriptors=[references],
        output=None,
        knn=int(amount) if mode == "knn" else None,
        max_results=int(amount),
    )
    phases = Phases()
    start = time.perf_counter()
    outcome = search_pairs(spark, job, phases)
    table = outcome.pairs.toArrow()
    seconds = time.perf_counter() - start
    np.savez(
        out,
        query=np.asarray(table.column("query_id").to_pylist()),
        reference=np.asarray(table.column("reference_id").to_pylist()),
        score=table.column("score").to_numpy(),
    )
    print(json.dumps({"seconds": seconds, "pairs": table.num_rows, "phases": phases.seconds}))


if __name__ == "__main__":
    main()
