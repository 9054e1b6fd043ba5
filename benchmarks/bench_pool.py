"""make bench (pools): one Spark job scoring a pool of submissions beside the numpy
specification run once per submission, interleaved, medians of N.

    BENCH_POOL=100 BENCH_POOL_ROWS=500000 BENCH_REPEAT=1 BENCH_POOL_DISTRIBUTED=1

The per-file plan runs twice: on the folder's local paths, and on the same files named
through Hadoop's viewfs:// mount table (a non-local scheme: the bytes are read through
Spark's binaryFile source), which must give the same leaderboard. BENCH_POOL_DISTRIBUTED=0
leaves the distributed plan out. Wall time includes start-up (the JVM for Spark); peak
memory is the whole process tree.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from pathlib import Path

from bench_matching import BIN, GT, RESULTS, ROOT, interleave, report, spark_env, write_predictions


def write_pool(n_subs: int, rows: int) -> Path:
    """``n_subs`` DISC21-shaped submissions of ``rows`` pairs (seeds 1000, 1001...), written
    once and kept: a larger pool reuses a smaller one's files."""
    folder = RESULTS / "data" / f"pool_{n_subs}x{rows}"
    env = spark_env()
    partial = folder / ".partial"
    partial.mkdir(parents=True, exist_ok=True)
    for i in range(n_subs):
        path = folder / f"team{i:04d}.csv"
        if not path.exists():
            write_predictions(partial / path.name, rows, 1000 + i, env, quiet=True)
            (partial / path.name).rename(path)  # an interrupted write is redone, not read
    return folder


def main() -> None:
    n_subs = int(os.environ.get("BENCH_POOL", 100))
    rows = int(os.environ.get("BENCH_POOL_ROWS", 500_000))
    repeat = int(os.environ.get("BENCH_REPEAT", 1))
    folder = write_pool(n_subs, rows)
    env = spark_env()
    total = sum(1 for _ in folder.glob("*.csv")) * rows
    plans = ["per-file", "viewfs"]
    if os.environ.get("BENCH_POOL_DISTRIBUTED", "1") != "0":
        plans.append("distributed")
    outs = {plan: RESULTS / f"pool_out_{plan}" for plan in plans}
    mount = f"spark.hadoop.fs.viewfs.mounttable.bench.link./pool={folder.as_uri()}"

    def pool_job(plan: str) -> list[str]:
        where, conf = (
            ("viewfs://bench/pool/*.csv", ["--conf", mount])
            if plan == "viewfs"
            else (str(folder / "*.csv"), [])
        )
        return [
            str(BIN / "spark-submit"),
            "--master",
            "local[*]",
            "--driver-memory",
            "2g",
            *conf,
            str(ROOT / "jobs" / "evaluate.py"),
            "--ground-truth",
            str(GT),
            "--predictions",
            where,
            "--output",
            str(outs[plan]),
            "--overwrite",
            "--quiet",
            "--pool-plan",
            "auto" if plan == "viewfs" else plan,
        ]

    names = {
        "per-file": "disc21spark pool, per-file plan (one Spark job)",
        "viewfs": "disc21spark pool, files named viewfs://, --pool-plan auto (one Spark job)",
        "distributed": "disc21spark pool, distributed plan (one Spark job)",
    }
    contenders = {
        **{names[plan]: pool_job(plan) for plan in plans},
        "numpy specification, once per submission": [
            sys.executable,
            str(ROOT / "benchmarks" / "numpy_pool.py"),
            str(GT),
            str(folder),
        ],
    }
    official = os.environ.get("ISC2021_REPO")
    if official:  # the organisers' way today: the official scorer once per file
        # and this checkout first: Spark's Python workers import the package from the
        # path, and must run the code the driver runs (not an installed copy)
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), official])
        contenders["official ISC2021, once per submission"] = [
            sys.executable,
            str(ROOT / "benchmarks" / "official_pool.py"),
            str(GT),
            str(folder),
        ]
    aps = {}

    def seen(name: str, stdout: str, result: dict) -> None:
        if "numpy" in name or "official" in name:
            aps[name.split()[0]] = json.loads(stdout.strip().splitlines()[-1])

    results = interleave(contenders, env, repeat, seen)
    for plan, out in outs.items():
        board = json.loads((out / "leaderboard.json").read_text())["submissions"]
        aps[plan] = {r["submission"]: r["micro_ap"] for r in board}
    same = all(aps[plan] == aps["numpy"] for plan in plans)
    # the same leaderboard whatever names the files: only the run block may differ
    boards = {plan: (outs[plan] / "leaderboard.csv").read_text() for plan in plans}
    same = same and boards["viewfs"] == boards["per-file"]
    phases = json.loads((outs["viewfs"] / "leaderboard.json").read_text())["run"]["phase_seconds"]
    per_file_plan = "sort" not in phases and "score" in phases
    # the official sum is numpy's pairwise one: the same μAP within a few ulps
    close = all(
        abs(aps[plan][k] - v) <= 1e-12 for plan in outs for k, v in aps.get("official", {}).items()
    )
    base = statistics.median(results["numpy specification, once per submission"]["seconds"])
    lines = [
        f"Pool of {n_subs} submissions × {rows:,} predictions ({total:,} rows) vs the DISC21 dev "
        f"ground truth, {os.cpu_count()} cores, median of {repeat} (start-up included)",
        "",
        "| scorer | wall s (median) | rows / s | peak MB (median) | time / numpy loop |",
        "|---|---|---|---|---|",
    ]
    for name, r in results.items():
        med = statistics.median(r["seconds"])
        lines.append(
            f"| {name} | {med:.1f} | {total / med:,.0f} | "
            f"{statistics.median(r['peak_mb']):,.0f} | {med / base:.2f}× |"
        )
    lines += [
        "",
        f"every submission's μAP identical to the numpy specification's, "
        f"leaderboard.csv identical through viewfs://: {'yes' if same else 'NO'}",
        f"viewfs:// pool on the per-file plan (no sort phase): "
        f"{'yes' if per_file_plan else 'NO'} (phases: {', '.join(phases)})",
    ]
    if "official" in aps:
        off = statistics.median(results["official ISC2021, once per submission"]["seconds"])
        lines.append(f"every μAP within 1e-12 of the official one: {'yes' if close else 'NO'}")
        for name in [n for n in results if n.startswith("disc21spark")]:
            spark_s = statistics.median(results[name]["seconds"])
            lines.append(f"{name}: {off / spark_s:.2f}× as fast as the official scorer per file")
    report(f"pool_{n_subs}x{rows}", lines, results)
    if not same or not close:
        raise SystemExit("bench: the pool and the per-file scores disagree")


if __name__ == "__main__":
    main()
