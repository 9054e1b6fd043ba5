"""make bench (baseline descriptors and rank evaluation), runs interleaved, medians:

1. descriptors per second for each method on the 2,000-image library: extract_descriptors
   on Spark beside a single-process decode-and-describe loop;
2. rank evaluation at Howe's scale, 1,000 queries against 6,000 references, four methods,
   end to end (describe, exact ranks, kNN pairs, μAP per test; Spark also writes the
   report), beside the same work in one process. Both must give the same figures.

    BENCH_REPEAT=3
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys

from bench_matching import RESULTS, ROOT, measure, report, spark_env

METHODS = ("colorhist", "correlogram", "tiny", "pdq")
TESTS = "crop:50,jumble:4x4,lowcon:80,crop:50+lowcon:80"


def make_library(path, size, seed, env, photos=True):
    if not (path / "library.json").exists():
        shutil.rmtree(path, ignore_errors=True)
        print(f"bench: writing a library of {size:,} images to {path}", flush=True)
        cmd = [
            sys.executable,
            str(ROOT / "jobs" / "make_library.py"),
            "--output",
            str(path),
            "--size",
            str(size),
            "--seed",
            str(seed),
            "--quiet",
        ]
        subprocess.run(cmd + ([] if photos else ["--no-photos"]), env=env, check=True)


def runs(results: list[dict]) -> str:
    return ", ".join(f"{r['seconds']:.1f}" for r in results)


def run_json(cmd, env):
    wall, peak, text = measure([sys.executable, *map(str, cmd)], env)
    return wall, peak, json.loads([ln for ln in text.splitlines() if ln.startswith("{")][-1])


def main() -> None:
    repeat = int(os.environ.get("BENCH_REPEAT", 3))
    env = spark_env()
    data = RESULTS / "data"
    lib2000, warm = data / "library_2000", data / "library_warmup"
    make_library(lib2000, 2000, 2000, env)
    make_library(warm, 40, 1, env, photos=False)
    lib6050, bench = data / "library_6050", data / "bench_6050"
    make_library(lib6050, 6050, 6000, env)
    if not (bench / "bench.json").exists():
        shutil.rmtree(bench, ignore_errors=True)
        subprocess.run(
            [
                sys.executable,
                str(ROOT / "jobs" / "make_queries.py"),
                "--images",
                str(lib6050),
                "--output",
                str(bench),
                "--tests",
                TESTS,
                "--queries-per-test",
                "250",
                "--distractors",
                "0.2",
                "--seed",
                "7",
                "--quiet",
            ],
            env=env,
            check=True,
        )
    single, spark = ROOT / "benchmarks" / "ranks_single.py", ROOT / "benchmarks" / "ranks_spark.py"
    lines = [
        f"Baseline descriptors, {os.cpu_count()} cores, median of {repeat} (Spark: JVM start and "
        "JIT warm-up excluded)",
        "",
        "| method | single-process images/s | Spark images/s | speed-up | runs single / Spark (s) |",
        "|---|---|---|---|---|",
    ]
    results: dict = {"describe": {}, "rank": {}}
    for m in METHODS:
        res = {"single": [], "spark": []}
        for _ in range(repeat):
            res["single"].append(run_json([single, "describe", lib2000, m], env)[2])
            res["spark"].append(run_json([spark, "describe", lib2000, m, warm], env)[2])
            print(
                f"bench: {m}: {res['single'][-1]['seconds']:.1f} s vs {res['spark'][-1]['seconds']:.1f} s",
                flush=True,
            )
        s1 = statistics.median(r["seconds"] for r in res["single"])
        s2 = statistics.median(r["seconds"] for r in res["spark"])
        n = res["single"][0]["images"]
        results["describe"][m] = {"single_s": s1, "spark_s": s2, "images": n, "runs": res}
        lines.append(
            f"| {m} | {n / s1:,.0f} | {n / s2:,.0f} | {s1 / s2:.2f}× | "
            f"{runs(res['single'])} / {runs(res['spark'])} |"
        )
    methods = ",".join(METHODS)
    res = {"single": [], "spark": []}
    for _ in range(repeat):
        wall, peak, doc = run_json([single, "rank", bench, methods], env)
        res["single"].append({**doc, "peak_mb": peak})
        wall, peak, doc = run_json([spark, "rank", bench, methods, warm], env)
        res["spark"].append({**doc, "peak_mb": peak})
        print(
            f"bench: rank_eval: {res['single'][-1]['seconds']:.1f} s vs {res['spark'][-1]['seconds']:.1f} s",
            flush=True,
        )
    s1 = statistics.median(r["seconds"] for r in res["single"])
    s2 = statistics.median(r["seconds"] for r in res["spark"])
    a, b = res["single"][-1]["figures"], res["spark"][-1]["figures"]
    same = all(
        a[k]["median_rank"] == b[k]["median_rank"]
        and a[k]["mean_rank"] == b[k]["mean_rank"]
        and a[k]["micro_ap"] == b[k]["micro_ap"]
        for k in a
    )
    results["rank"] = {"single_s": s1, "spark_s": s2, "same_figures": same, "runs": res}
    lines += [
        "",
        f"Rank evaluation, 1,000 queries (200 distractors) × 6,000 references, {methods}, "
        f"end to end, median of {repeat}",
        "",
        "| contender | s (median) | runs (s) | peak MB (median) |",
        "|---|---|---|---|",
        f"| single-process loop | {s1:.1f} | {runs(res['single'])} | "
        f"{statistics.median(r['peak_mb'] for r in res['single']):,.0f} |",
        f"| disc21spark rank_eval (Spark, local[*]) | {s2:.1f} | "
        f"{runs(res['spark'])} | "
        f"{statistics.median(r['peak_mb'] for r in res['spark']):,.0f} |",
        "",
        f"speed-up {s1 / s2:.2f}×; same ranks and μAP for every (method, test): {'yes' if same else 'NO'}",
    ]
    report("ranks", lines)
    (RESULTS / "ranks.json").write_text(json.dumps(results, indent=2, default=str) + "\n")


if __name__ == "__main__":
    main()
