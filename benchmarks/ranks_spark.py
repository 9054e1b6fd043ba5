"""The Spark side of the rank benchmark: session and one Python worker per core started,
and a 40-image job run first (JVM start and JIT warm-up excluded, as the baseline's
imports are), then the timed job. Prints JSON.

    python benchmarks/ranks_spark.py describe LIBRARY METHOD WARMUP_LIBRARY
    python benchmarks/ranks_spark.py rank BENCH METHODS WARMUP_LIBRARY
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from disc21spark.core.session import spark_session  # noqa: E402
from disc21spark.ranks.extract_job import ExtractJob  # noqa: E402
from disc21spark.ranks.extract_job import run as extract  # noqa: E402
from disc21spark.ranks.job import RankJob, run  # noqa: E402


def main() -> None:
    mode, source, names, warmup = sys.argv[1:5]
    spark = spark_session("images", "local[*]")
    tmp = Path(tempfile.mkdtemp(prefix="bench-ranks-"))
    extract(spark, ExtractJob(names.split(",")[0], str(tmp / "warm.h5"), images=[warmup]))
    start = time.perf_counter()
    if mode == "describe":
        doc = extract(spark, ExtractJob(names, str(tmp / "out.h5"), images=[source]))
        result = {"images": doc["images"]}
    else:
        doc = run(
            spark,
            RankJob(source, names.split(","), str(tmp / "report"), knn=10, keep_descriptors=False),
        )
        result = {
            "figures": {f"{r['method']} {r['test']}": r for r in doc["summary"]},
            "phases": doc["seconds"],
        }
    result["seconds"] = time.perf_counter() - start
    shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
