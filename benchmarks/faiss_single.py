"""Single-process FAISS on the descriptor benchmark's data: the baseline of
bench_descriptors.py. kNN with faiss.knn; max-results with FAISS's own bounded search
(contrib.exhaustive_search.range_search_max_results, as the ISC2021 evaluation runs it),
then the best N by distance. Prints seconds of work (files read included) as JSON and
saves the pairs for the comparison.

    python benchmarks/faiss_single.py knn|max queries.h5 references.h5 K_or_N pairs.npz
"""

from __future__ import annotations

import json
import sys
import time

import faiss
import h5py
import numpy as np
from faiss.contrib.exhaustive_search import range_search_max_results


def read(path: str) -> tuple[np.ndarray, np.ndarray]:
    with h5py.File(path, "r") as f:
        return f["image_names"].asstr()[:], np.asarray(f["vectors"][:], dtype=np.float32)


def batches(x: np.ndarray):
    size, i = 32, 0
    while i < len(x):  # growing batches, so the radius tightens early
        yield x[i : i + size]
        i += size
        size = min(size * 2, 20_000)


def main() -> None:
    mode, queries, references, amount, out = sys.argv[1:6]
    amount = int(amount)
    start = time.perf_counter()
    qids, xq = read(queries)
    rids, xb = read(references)
    if mode == "knn":
        dist, idx = faiss.knn(xq, xb, amount)
        qi = np.repeat(np.arange(len(xq)), amount)
        ri, score = idx.ravel(), -dist.ravel()
    else:
        index = faiss.IndexFlatL2(xb.shape[1])
        index.add(xb)
        _, lims, dist, ids = range_search_max_results(
            index, batches(xq), 1e10, max_results=2 * amount, min_results=amount
        )
        qi = np.repeat(np.arange(len(xq)), np.diff(lims.astype(np.int64)))
        keep = np.argpartition(dist, amount - 1)[:amount] if len(dist) > amount else slice(None)
        qi, ri, score = qi[keep], ids[keep], -dist[keep]
    seconds = time.perf_counter() - start
    np.savez(out, query=qids[qi], reference=rids[ri], score=score)
    print(json.dumps({"seconds": seconds, "pairs": int(len(qi))}))


if __name__ == "__main__":
    main()
