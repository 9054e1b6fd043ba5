"""make_queries on Spark for the benchmark: the session and one Python worker per core
are started before the clock (start-up excluded, as the baseline's imports are), then the
job runs from the library folder to the finished benchmark folder. Prints JSON.

    python benchmarks/queries_spark.py LIBRARY OUTPUT TESTS PER_TEST SEED
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from disc21spark.core.session import spark_session  # noqa: E402
from disc21spark.queries.job import QueryJob, run  # noqa: E402
from disc21spark.queries.spec import Settings  # noqa: E402
from disc21spark.queries.transforms import parse_tests  # noqa: E402


def _warm(batches):
    import PIL.Image  # noqa: F401

    yield from batches


def main() -> None:
    library, output, tests, per_test, seed = sys.argv[1:6]
    warmup = sys.argv[6] if len(sys.argv) > 6 else None
    settings = Settings(tuple(parse_tests(tests)), int(per_test), 0.0, int(seed))
    spark = spark_session("images", "local[*]")
    workers = spark.sparkContext.defaultParallelism
    spark.range(0, workers, 1, workers).mapInArrow(_warm, "id long").count()
    if warmup:
        # a small job first: the JVM compiles its hot code (binaryFile, Arrow, the join)
        # before the clock, as a long-running cluster would have done
        small = Settings(settings.tests, 10, 0.0, int(seed))
        run(spark, QueryJob([warmup], output + ".warmup", small, overwrite=True))
    start = time.perf_counter()
    document = run(spark, QueryJob([library], output, settings))
    seconds = time.perf_counter() - start
    print(
        json.dumps(
            {
                "seconds": seconds,
                "files": document["counts"]["library_files"],
                "queries": document["counts"]["queries"],
                "phases": document["seconds"],
            }
        )
    )


if __name__ == "__main__":
    main()
