"""The single-process baselines of the rank benchmark, with the same library functions.

    python benchmarks/ranks_single.py describe LIBRARY METHOD
        decode and describe every image of LIBRARY in a loop
    python benchmarks/ranks_single.py rank BENCH METHODS
        rank_eval's work in one process: describe the bench's references and queries (each
        image decoded once), exact ranks of the originals, kNN 10 pairs and μAP per test

Prints JSON with the seconds from the first file read to the last figure.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from disc21spark.core.spark_images import local_paths  # noqa: E402
from disc21spark.descriptors import spec as search  # noqa: E402
from disc21spark.matching.model import GroundTruth  # noqa: E402
from disc21spark.matching.oracle import spec as metrics  # noqa: E402
from disc21spark.queries import bench_folder as benchset  # noqa: E402
from disc21spark.queries import codec as images  # noqa: E402
from disc21spark.ranks import methods as features  # noqa: E402
from disc21spark.ranks import plan as rank_plan  # noqa: E402
from disc21spark.ranks.spec import layout, summary  # noqa: E402


def describe(library: str, name: str) -> dict:
    m = features.method(name)
    start = time.perf_counter()
    paths = local_paths([library])
    vectors = [m.describe(images.decode(Path(p).read_bytes())) for p in paths]
    return {"seconds": time.perf_counter() - start, "images": len(vectors)}


def rank(bench_dir: str, names: list[str]) -> dict:
    start = time.perf_counter()
    b = benchset.read(bench_dir)
    methods = [features.method(n) for n in names]
    paths = list(b.references.path) + [str(Path(bench_dir) / f) for f in b.queries.file]
    described = [[] for _ in methods]
    for p in paths:
        img = images.decode(Path(p).read_bytes())
        for out, m in zip(described, methods):
            out.append(m.describe(img))
    nb = len(b.references)
    refs = np.asarray(b.references.reference_id)
    ref = b.queries.reference_id.fillna("")
    index = {r: i for i, r in enumerate(refs)}
    original = np.array([index[r] if r else -1 for r in ref])
    lay = layout(nb, original, 1, (), 0)
    figures = {}
    for m, vecs in zip(methods, described):
        x = np.stack(vecs).astype(np.float32)
        xb, xq = x[:nb], x[nb:]
        s = rank_plan.searcher(xb, m.metric, search.reference_order(refs))
        pairs, r = rank_plan.search_block(s, xq, original, lay, 10)
        for test in dict.fromkeys(b.queries.test):
            rows = np.flatnonzero(b.queries.test.to_numpy() == test)
            keep = np.isin(pairs.query, rows)
            q = b.queries.iloc[rows]
            pos = q[q.reference_id.fillna("") != ""]
            gt = GroundTruth(
                "gt", q.query_id.to_numpy(), pos.query_id.to_numpy(), pos.reference_id.to_numpy()
            )
            mm = metrics.evaluate(
                b.queries.query_id.to_numpy()[pairs.query[keep]],
                refs[pairs.reference[keep]],
                pairs.score[keep],
                gt,
            )
            matched = rows[original[rows] >= 0]
            figures[f"{m.name} {test}"] = {**summary(r.rank[matched]), "micro_ap": mm.micro_ap}
    return {"seconds": time.perf_counter() - start, "figures": figures}


if __name__ == "__main__":
    mode = sys.argv[1]
    result = (
        describe(sys.argv[2], sys.argv[3])
        if mode == "describe"
        else rank(sys.argv[2], sys.argv[3].split(","))
    )
    print(json.dumps(result))
