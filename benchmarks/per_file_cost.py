"""Where one more file's time goes on Spark's per-file plan, against in process (issue 46).

    python benchmarks/per_file_cost.py GT 'pool20/*.csv' 'pool40/*.csv'

One warm `local[*]` session; for each pool (a local glob, named by ``file://`` URIs as
a cluster's paths are), each of these is timed REPEAT
times (``BENCH_REPEAT``, default 3) after one warm-up, and the median printed:

- ``ship``: the files' bytes read by Spark's ``binaryFile`` source and handed to Python
  workers, which only take their length (the trip every task of the plan makes);
- ``spark``: ``per_file.score_files``, the per-file plan with default settings;
- ``in process``: ``pool.in_process.score_files``, the same files in worker processes.

Then one more file's cost in each: (the larger pool's time − the smaller's) ÷ (the
difference in files). The JVM's and the session's start are left out: the difference
between a whole run's time and these is the fixed cost (docs/benchmarks.md [N]). The
script checks that both engines give every file the same μAP and interval bits.
"""

from __future__ import annotations

import glob
import os
import statistics
import sys
import time

from disc21spark.core import config
from disc21spark.core.fs import files_of
from disc21spark.core.session import spark_session
from disc21spark.matching.ground_truth import load_ground_truth
from disc21spark.matching.model import Settings
from disc21spark.matching.spark import per_file
from disc21spark.matching.stats.model import Resampling
from disc21spark.pool import in_process
from disc21spark.resolve import resolve

REPEAT = int(os.environ.get("BENCH_REPEAT", "3"))


def timed(work, repeat: int = REPEAT) -> tuple[list[float], object]:
    """The seconds of ``repeat`` runs of ``work()`` after one warm-up, and its result."""
    result = work()
    seconds = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = work()
        seconds.append(time.perf_counter() - start)
    return seconds, result


def figures(outcomes) -> list[tuple]:
    """Each file's μAP and interval bounds, to compare the engines bit for bit."""
    return [
        (o.metrics.micro_ap, o.metrics.uncertainty.replicates["micro_ap"].tobytes())
        if o.metrics is not None
        else o.error
        for o in outcomes
    ]


def main(gt_path: str, pools: list[str]) -> None:
    spark = spark_session(master="local[*]")
    gt = load_ground_truth(files_of("local", None), resolve(gt_path))
    settings = Settings(
        config.value("evaluate", "max_results", int),
        config.value("evaluate", "curve_points", int),
        Resampling(),
    )
    rows = []
    for pattern in pools:
        # cluster-style paths, as Spark's listing names them; the workers read them alike
        paths = [f"file://{os.path.abspath(p)}" for p in sorted(glob.glob(pattern))]
        inputs = [resolve(p, submission=True) for p in paths]

        def ship(paths=paths):
            frame = spark.read.format("binaryFile").load(paths).select("content")
            return sum(frame.rdd.map(lambda r: len(r.content)).collect())

        ship_s, _ = timed(ship)
        spark_s, on_spark = timed(lambda i=inputs: per_file.score_files(spark, i, gt, settings))
        local_s, here = timed(lambda i=inputs: in_process.score_files(i, gt, settings))
        ship_s, spark_s, local_s = map(statistics.median, (ship_s, spark_s, local_s))
        if figures(on_spark) != figures(here):
            sys.exit(f"{pattern}: the engines' figures differ")
        rows.append((len(paths), ship_s, spark_s, local_s))
        print(
            f"{len(paths)} files: ship {ship_s:.2f} s, spark {spark_s:.2f} s, "
            f"in process {local_s:.2f} s (medians of {REPEAT})"
        )
    (n0, *first), (n1, *last) = rows[0], rows[-1]
    each = [(b - a) / (n1 - n0) for a, b in zip(first, last)]
    print(
        f"one more file: ship {each[0]:.3f} s, spark {each[1]:.3f} s, "
        f"in process {each[2]:.3f} s; spark ÷ in process {each[1] / each[2]:.2f}"
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
