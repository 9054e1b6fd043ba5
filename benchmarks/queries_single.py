"""The single-process baseline of the make_queries benchmark: the same library functions
in a plain loop, file after file (scan, choose, alter and write, manifests). Prints JSON.

    python benchmarks/queries_single.py LIBRARY OUTPUT TESTS PER_TEST SEED
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from disc21spark.core.spark_images import local_paths  # noqa: E402
from disc21spark.queries import bench_folder as benchset  # noqa: E402
from disc21spark.queries.spec import Settings, make_local  # noqa: E402
from disc21spark.queries.transforms import parse_tests  # noqa: E402


def main() -> None:
    library, output, tests, per_test, seed = sys.argv[1:6]
    settings = Settings(tuple(parse_tests(tests)), int(per_test), 0.0, int(seed))
    out = Path(output)
    out.mkdir(parents=True)
    start = time.perf_counter()
    paths = local_paths([library])
    selection, made = make_local(paths, settings, str(out / "queries"))
    benchset.write(out, settings, selection, made, [library])
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "files": len(paths), "queries": len(made)}))


if __name__ == "__main__":
    main()
