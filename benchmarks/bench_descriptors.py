"""make bench (descriptor track): disc21spark's `spark-submit jobs/evaluate.py` with
default settings beside the official track-2 pipeline (ISC2021's compute_metrics.py
--track2) and single-process FAISS, same machine, same data, runs interleaved, medians.

    BENCH_QUERIES=25000 BENCH_REFERENCES=1000000 BENCH_DIM=256 BENCH_REPEAT=1
    ISC2021_REPO=/tmp/isc2021 (the official contender is left out without it)

Every contender runs as its own process, files read included, and writes its pairs
(disc21spark and the official pipeline both with their write-predictions option). The
wall time includes start-up (the JVM for Spark, the imports for the others). Peak
memory of the whole process tree (JVM and Python workers included) is sampled every
0.2 s twice: as resident sets summed (a page mapped by N processes counted N times)
and as proportional sets (PSS: such a page counted once, 1/N per process), the figure
that shows whether a machine holds one copy of the index or one per worker.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import psutil
from bench_matching import BIN, GT, RESULTS, ROOT, report, spark_env

sys.path.insert(0, str(ROOT))

from disc21spark.testing.synth import read_ground_truth_csv, write_descriptor_set  # noqa: E402

PHASE = re.compile(r"disc21spark (\w[\w ]*?):\s+.*? in ([\d.]+) s")
CASES = {"kNN 10": ("knn", 10), "max-results 500,000": ("max", 500_000)}
OFFICIAL = "official track-2 pipeline"
FAISS = "single-process FAISS"
OURS = "disc21spark (spark-submit, defaults)"


def run_tree(cmd: list[str], env: dict) -> dict:
    """Wall seconds, peak RSS and PSS sums (MB) of the process tree, and its output."""
    start = time.perf_counter()
    proc = psutil.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    peak_rss = peak_pss = 0
    lines: list[str] = []
    reader = _drain(proc, lines)
    while proc.poll() is None:
        rss = pss = 0
        for p in [proc, *_children(proc)]:
            try:
                info = p.memory_full_info()
            except psutil.Error:
                continue
            rss, pss = rss + info.rss, pss + info.pss
        peak_rss, peak_pss = max(peak_rss, rss), max(peak_pss, pss)
        time.sleep(0.2)
    reader.join()
    seconds = time.perf_counter() - start
    out = "".join(lines)
    if proc.returncode != 0:
        raise SystemExit(f"bench: {' '.join(cmd[:3])} failed:\n{out[-3000:]}")
    return {"seconds": seconds, "rss_mb": peak_rss / 2**20, "pss_mb": peak_pss / 2**20, "out": out}


def _children(proc: psutil.Process) -> list[psutil.Process]:
    try:
        return proc.children(recursive=True)
    except psutil.Error:
        return []


def _drain(proc, lines: list[str]):
    """Read the output while the process runs (a full pipe would stall it)."""
    import threading

    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    reader.start()
    return reader


def commands(folder: Path, mode: str, amount: int, isc: str | None) -> dict[str, tuple]:
    """Per contender: the command and where its pairs land."""
    q, r, gt = folder / "queries.h5", folder / "references.h5", folder / "gt.csv"
    out = RESULTS / "descriptors" / mode
    out.mkdir(parents=True, exist_ok=True)
    search = ["--knn", str(amount)] if mode == "knn" else ["--max-results", str(amount)]
    runs = {
        FAISS: (
            [
                sys.executable,
                str(ROOT / "benchmarks" / "faiss_single.py"),
                mode,
                str(q),
                str(r),
                str(amount),
                str(out / "faiss.npz"),
            ],
            out / "faiss.npz",
        ),
        OURS: (
            [
                str(BIN / "spark-submit"),
                str(ROOT / "jobs" / "evaluate.py"),
                "--ground-truth",
                str(gt),
                "--query-descriptors",
                str(q),
                "--reference-descriptors",
                str(r),
                *search,
                "--output",
                str(out / "ours"),
                "--overwrite",
                "--write-predictions",
            ],
            out / "ours" / "predictions.csv",
        ),
    }
    if isc:
        official = ["--knn", str(amount)] if mode == "knn" else ["--max_results", str(amount)]
        runs[OFFICIAL] = (
            [
                sys.executable,
                str(Path(isc) / "scripts" / "compute_metrics.py"),
                "--track2",
                "--gt_filepath",
                str(gt),
                "--query_descs",
                str(q),
                "--db_descs",
                str(r),
                *official,
                "--write_predictions",
                str(out / "official.csv"),
            ],
            out / "official.csv",
        )
    return runs


def pairs_of(path: Path) -> dict:
    if path.suffix == ".npz":
        x = np.load(path, allow_pickle=True)
        keys, scores = zip(x["query"].tolist(), x["reference"].tolist()), x["score"]
    else:
        frame = pd.read_csv(path, dtype={"query_id": str, "reference_id": str})
        keys, scores = zip(frame["query_id"], frame["reference_id"]), frame["score"].to_numpy()
    return dict(zip(keys, scores.astype(np.float64)))


def agreement(ours: dict, other: dict) -> dict:
    common = ours.keys() & other.keys()
    diff = max((abs(ours[k] - other[k]) for k in common), default=0.0)
    return {
        "pairs": [len(ours), len(other)],
        "only_in_one": len(ours.keys() ^ other.keys()),
        "max_score_difference": diff,
    }


def micro_ap(name: str, out: str, pairs: Path) -> float | None:
    if name == OURS:
        return json.loads((pairs.parent / "metrics.json").read_text())["micro_ap"]
    found = re.search(r"Average Precision: ([\d.]+)", out)
    return float(found.group(1)) if found else None


def run_case(folder: Path, case: str, mode: str, amount: int, repeat: int, env, isc) -> dict:
    runs = commands(folder, mode, amount, isc)
    res: dict = {name: {"seconds": [], "rss_mb": [], "pss_mb": []} for name in runs}
    for i in range(repeat):
        for name, (cmd, pairs) in runs.items():
            got = run_tree(cmd, env)
            for key in ("seconds", "rss_mb", "pss_mb"):
                res[name][key].append(round(got[key], 1))
            res[name]["micro_ap"] = micro_ap(name, got["out"], pairs)
            if name == OURS:
                res[name]["phases"] = {k: float(v) for k, v in PHASE.findall(got["out"])}
            print(
                f"bench: {case} run {i + 1}/{repeat} {name}: {got['seconds']:.1f} s, "
                f"PSS {got['pss_mb']:,.0f} MB, RSS sum {got['rss_mb']:,.0f} MB",
                flush=True,
            )
    ours = pairs_of(runs[OURS][1])
    res["agreement"] = {n: agreement(ours, pairs_of(p)) for n, (_, p) in runs.items() if n != OURS}
    # each case as soon as it is done: a full-size run takes minutes per contender
    print(
        f"bench: {case}: "
        + json.dumps({n: v.get("micro_ap") for n, v in res.items()})
        + " "
        + json.dumps(res["agreement"]),
        flush=True,
    )
    return res


def table(results: dict, peer: str) -> list[str]:
    lines = [
        f"| case | contender | wall s (median) | runs (s) | time / {peer} | peak PSS MB | "
        "peak RSS sum MB | μAP |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for case, res in results.items():
        base = statistics.median(res[peer]["seconds"])
        for name, v in res.items():
            if name == "agreement":
                continue
            med = statistics.median(v["seconds"])
            ap = f"{v['micro_ap']:.6f}" if v.get("micro_ap") is not None else "—"
            lines.append(
                f"| {case} | {name} | {med:.1f} | {', '.join(f'{s:.1f}' for s in v['seconds'])} "
                f"| {med / base:.2f}× | {statistics.median(v['pss_mb']):,.0f} | "
                f"{statistics.median(v['rss_mb']):,.0f} | {ap} |"
            )
    return lines


def main() -> None:
    nq = int(os.environ.get("BENCH_QUERIES", 25_000))
    nb = int(os.environ.get("BENCH_REFERENCES", 1_000_000))
    dim = int(os.environ.get("BENCH_DIM", 256))
    repeat = int(os.environ.get("BENCH_REPEAT", 1))
    isc = os.environ.get("ISC2021_REPO")
    folder = RESULTS / "data" / f"descriptors_{nq}x{nb}x{dim}"
    gt = read_ground_truth_csv(GT).iloc[:nq]
    if not (folder / "references.h5").exists():
        print(f"bench: writing {nq:,} query and {nb:,} reference descriptors to {folder}")
        write_descriptor_set(gt, folder, nb, dim, noise=1.0, seed=2021)
    gt.to_csv(folder / "gt.csv", index=False)
    env = spark_env(PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), isc])))
    results = {
        case: run_case(folder, case, mode, amount, repeat, env, isc)
        for case, (mode, amount) in CASES.items()
    }
    peer = OFFICIAL if isc else FAISS
    lines = [
        f"Descriptor track, {nq:,} queries × {nb:,} references × {dim} dims, planted copies, "
        f"{os.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB, "
        f"median of {repeat}; disc21spark with default settings (no --driver-memory)",
        "",
        *table(results, peer),
        "",
    ]
    for case, res in results.items():
        phases = res[OURS].get("phases") or {}
        lines.append(
            f"{case}, disc21spark phases (last run): "
            + ", ".join(f"{k} {v:.1f} s" for k, v in phases.items())
        )
        for name, a in res["agreement"].items():
            lines.append(
                f"{case}, disc21spark vs {name}: {a['pairs'][0]:,} vs {a['pairs'][1]:,} pairs, "
                f"{a['only_in_one']} in only one, largest score difference on common pairs "
                f"{a['max_score_difference']:.2e}"
            )
    report(f"descriptors_{nq}x{nb}x{dim}", lines, results)


if __name__ == "__main__":
    main()
