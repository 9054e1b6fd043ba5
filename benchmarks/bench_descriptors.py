"""make bench (descriptor track): the Spark search beside single-process FAISS, same
machine, same data, runs interleaved, medians of N.

    BENCH_QUERIES=25000 BENCH_REFERENCES=200000 BENCH_DIM=256 BENCH_REPEAT=3

Seconds are measured inside each process from the start of the work (files read
included) to the pairs in memory; the Spark session and its Python workers are started
before the clock (start-up excluded, as the baseline's imports are). The wall time of
the whole process, start-up included, is reported beside it. Peak memory is the largest
resident set of the whole process tree (JVM and Python workers included).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from pathlib import Path

import numpy as np
from bench_matching import GT, RESULTS, ROOT, measure, report, spark_env

sys.path.insert(0, str(ROOT))

from disc21spark.testing.synth import read_ground_truth_csv, write_descriptor_set  # noqa: E402


def compare(a: Path, b: Path) -> dict:
    x, y = np.load(a, allow_pickle=True), np.load(b, allow_pickle=True)
    px = dict(zip(zip(x["query"].tolist(), x["reference"].tolist()), x["score"]))
    py = dict(zip(zip(y["query"].tolist(), y["reference"].tolist()), y["score"]))
    common = px.keys() & py.keys()
    diff = max((abs(float(px[k]) - float(py[k])) for k in common), default=0.0)
    return {
        "pairs": [len(px), len(py)],
        "only_in_one": len(px.keys() ^ py.keys()),
        "max_score_difference": diff,
    }


def main() -> None:
    nq = int(os.environ.get("BENCH_QUERIES", 25_000))
    nb = int(os.environ.get("BENCH_REFERENCES", 200_000))
    dim = int(os.environ.get("BENCH_DIM", 256))
    repeat = int(os.environ.get("BENCH_REPEAT", 3))
    folder = RESULTS / "data" / f"descriptors_{nq}x{nb}x{dim}"
    gt = read_ground_truth_csv(GT).iloc[:nq]
    if not (folder / "references.h5").exists():
        print(
            f"bench: writing {nq:,} query and {nb:,} reference descriptors to {folder}", flush=True
        )
        write_descriptor_set(gt, folder, nb, dim, noise=1.0, seed=2021)
    q, r = str(folder / "queries.h5"), str(folder / "references.h5")
    env = spark_env(OMP_NUM_THREADS=str(os.cpu_count()))
    cases = {"kNN 10": ("knn", "10"), "max-results 500,000": ("max", "500000")}
    contenders = {
        "single-process FAISS": ROOT / "benchmarks" / "faiss_single.py",
        "disc21spark (Spark, local[*])": ROOT / "benchmarks" / "spark_search.py",
    }
    results: dict = {}
    lines = [
        f"Descriptor track search, {nq:,} queries × {nb:,} references × {dim} dims, "
        f"{os.cpu_count()} cores, median of {repeat} (Spark: JVM and Python worker start excluded)",
        "",
        "| case | contender | work s (median) | runs (s) | time / FAISS | "
        "wall s with start-up (median) | peak MB (median) |",
        "|---|---|---|---|---|---|---|",
    ]
    for case, (mode, amount) in cases.items():
        res = {name: {"seconds": [], "peak_mb": []} for name in contenders}
        for i in range(repeat):
            for name, script in contenders.items():
                pairs = RESULTS / f"pairs_{mode}_{'spark' if 'Spark' in name else 'faiss'}.npz"
                cmd = [sys.executable, str(script), mode, q, r, amount, str(pairs)]
                wall, peak, out = measure(cmd, env)
                doc = json.loads([ln for ln in out.splitlines() if ln.startswith("{")][-1])
                res[name]["seconds"].append(round(doc["seconds"], 2))
                res[name]["peak_mb"].append(round(peak))
                res[name].setdefault("wall_seconds", []).append(round(wall, 2))
                res[name]["phases"] = doc.get("phases")
                print(
                    f"bench: {case} run {i + 1}/{repeat} {name}: {doc['seconds']:.1f} s, {peak:,.0f} MB",
                    flush=True,
                )
        base = statistics.median(res["single-process FAISS"]["seconds"])
        for name, v in res.items():
            med = statistics.median(v["seconds"])
            v["median_seconds"] = med
            v["median_peak_mb"] = statistics.median(v["peak_mb"])
            lines.append(
                f"| {case} | {name} | {med:.1f} | {', '.join(f'{s:.1f}' for s in v['seconds'])} | "
                f"{med / base:.2f}× | {statistics.median(v['wall_seconds']):.1f} | "
                f"{v['median_peak_mb']:,.0f} |"
            )
        res["agreement"] = compare(
            RESULTS / f"pairs_{mode}_faiss.npz", RESULTS / f"pairs_{mode}_spark.npz"
        )
        results[case] = res
    lines.append("")
    for case, res in results.items():
        a = res["agreement"]
        lines.append(
            f"{case}: {a['pairs'][0]:,} vs {a['pairs'][1]:,} pairs, {a['only_in_one']} in only one, "
            f"largest score difference on common pairs {a['max_score_difference']:.2e}"
        )
    report(f"descriptors_{nq}x{nb}x{dim}", lines, results)


if __name__ == "__main__":
    main()
